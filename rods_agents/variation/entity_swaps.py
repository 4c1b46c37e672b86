"""Entities swapped for others the environment knows: a city pair, a stock, a route, a dictated text.

Each swap takes a value the environment's own tables hold (the distance table's city pairs, the TradingBot's stocks
and sector lists, the fare table's routes, ``prompts/bfcl/offline_dictated.json``), picked per sibling
(:meth:`~rods_agents.variation.draw.Draw.pick`), so the variant is another situation and not a made-up one.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from rods_agents.analysis import knowledge
from rods_agents.analysis.value_sources import WELL_KNOWN_AIRPORTS, household_tickers, ticker_companies, ticker_products
from rods_agents.variation.draw import Draw, fs_kinds
from rods_agents.variation.rederive import FROM_END
from rods_agents.variation.saying import word_in
from rods_agents.variation.seed_anchor import MIN_TEXT_LEN, Substitution
from rods_agents.variation.seed_anchor import scalar_strings as _scalar_strings
from rods_agents.variation.value_kinds import options

_DICTATED_PARAMS = {"content", "message", "comment_content", "description", "resolution", "tags", "hashtags", "mentions"}


def dictated_swap(d: Draw, bound: list[tuple[Any, dict[str, Any]]], renames: dict[str, str],
                   swaps: dict[str, str]) -> None:
    """A text the user dictates word for word (a tweet, a message) or a hashtag becomes another text of the
    same purpose and topic (``prompts/bfcl/offline_dictated.json``), one per sibling (:meth:`Draw.pick`):
    the variant posts or sends something of its own, so it is new beyond digits. Only where the text quotes
    it exactly, or the assistant reads it from the state and no turn says it (a file forwarded as a message), and
    no longer argument contains it (a search for a word of it). A value the plan changes inside it (a city in a
    tweet's story, the friend a message greets) must be in the new text too, and changes there the same way:
    'Setting forth ... from San Francisco to Stonebrook ...' had stayed the seed's sentence with the cities
    swapped (read 40). A file or folder of the state the new text names must be one the old names."""
    table = knowledge.dictated()
    pool = {**table.get("sentences", {}), **table.get("hashtags", {}), **table.get("handles", {})}
    text = " ".join(d.turn_text)
    arg_strings = {x for r in d.trace.calls for x in _scalar_strings(list(r.args.values()))}
    changed = {o: n for o, n in {**renames, **swaps}.items() if len(o) >= 3 and isinstance(n, str)}
    state = json.dumps(d.seed.initial_config).lower()
    fs_names = {n for n in fs_kinds(d.seed.initial_config.get("GorillaFileSystem", {}), {}) if len(n) >= 4}
    for rec, args in bound:
        for param, value in args.items():
            if param not in _DICTATED_PARAMS:
                continue
            for s in _scalar_strings(value):
                if s not in pool or s in renames or s in swaps:
                    continue
                src = d.sources.get((rec.turn, rec.index, param))
                # read from the state and never said ('Where is my notes? Forward it exactly to Bob', base_41: the file
                # the assistant reads holds the message)
                read = (src is not None and src.source in ("state", "call") and s.lower() in state
                        and s.lower() not in text.lower())
                if src is not None and src.source not in ("user", "state") and not read:
                    continue
                # a hashtag the text quotes bare ("add relevant hashtags 'TravelUpdate' and 'BusinessTrip'", base_151),
                # a sentence without its full stop ("'Hi Sam, my travel plans have changed. I'll update you soon'.", base_184),
                # written as it is, case and all: not words that describe it ('... solve this unexpected charge found on
                # the invoice' describes the message 'Unexpected charge found on the invoice.', base_190)
                # and a handle quoted bare ("mentioning Jerry", "His handle is 'huanzhimao01'": kept in all eight
                # samples of scenario 18)
                bare = next((x for x in (s[1:] if s.startswith(("#", "@")) else "", s[:-1] if s.endswith(".") else "")
                             if s not in text and len(x) >= 3 and word_in(x, text)), None)
                if s not in text and bare is None and not read:
                    continue
                if any(s != x and s in x for x in arg_strings):
                    continue
                new = _new_text(d, s, pool[s], changed, fs_names, arg_strings, text, state)
                if new is not None:
                    renames[s] = new
                    if bare is not None:
                        renames[bare] = new[1:] if s.startswith(("#", "@")) else new.rstrip(".")


def _new_text(d: Draw, old: str, texts: list[str], changed: dict[str, str], fs_names: set[str],
              arg_strings: set[str], text: str, state: str) -> str | None:
    """One of the pool's ``texts`` for ``old`` (per sibling), with the plan's changes inside it, or None."""
    held = {o: n for o, n in changed.items() if _says(o, old)}
    # a file or folder of the state the old text names, the new one names too ('Managed to archive ...' beside a
    # folder 'archive': '... tucked away in the archive now!'), and no other: it points where the old one did
    named = [n.lower() for n in fs_names if _says(n, old)]
    foreign = [n for n in fs_names if not _says(n, old)]
    # a shorter argument inside it is a search for it (grep 'update' finds '# update the system' in a file
    # the message is read from, base_33): the new text keeps that word, or the search finds it no more
    # (a file's name inside it is no search: 'notes' in 'Meeting notes and project details.', base_41)
    searched = [x.lower() for x in arg_strings
                if len(x) >= 3 and x != old and x.lower() in old.lower() and x not in fs_names]
    # never one the state already holds ('#Explore' where a tweet is tagged '#explore': its tags read
    # ['#explore', '#explore', '#travel'] after the rename, read of 2026-12-05)
    choices = [c for c in texts if c not in text and c.lower() not in state
               and old.lower() not in c.lower()  # never one holding the old text ('... system software')
               and all(x in c.lower() for x in searched)
               and all(_says(o, c) for o in held) and all(n in c.lower() for n in named)
               and not any(_says(n, c) for n in foreign)]
    return Substitution(held).text(d.pick(choices, f"dictated|{old}")) if choices else None


def _says(value: str, text: str) -> bool:
    """``text`` names ``value`` as a word of its own ('LA' in 'my trip to LA', not in 'LAX')."""
    return re.search(rf"(?<!\w){re.escape(value)}(?!\w)", text, re.I) is not None


@lru_cache(maxsize=1)
def _distance_pairs() -> tuple[tuple[str, str], ...]:
    """City pairs whose distance the vehicle environment knows (its tables, run, not parsed)."""
    from itertools import permutations

    from envs.bfcl_data import env_class

    api = env_class("VehicleControlAPI")()
    api._load_scenario({}, long_context=False)
    zips = knowledge.zip_codes()
    return tuple((a, b) for a, b in permutations(zips, 2)
                 if "distance" in api.estimate_distance(cityA=zips[a], cityB=zips[b]))


def city_pair_swap(d: Draw, bound: list[tuple[Any, dict[str, Any]]], swaps: dict[str, str]) -> None:
    """Two cities whose distance the task estimates become another pair the tables know."""
    cities = [args.get("city") for rec, args in bound if rec.name == "get_zipcode_based_on_city"]
    if not cities:
        _zip_pair_swap(d, bound, swaps)
        return
    if len(cities) != 2 or len(set(cities)) != 2 or not any(r.name == "estimate_distance" for r, _ in bound):
        return
    text = " ".join(d.turn_text)
    if any(c in swaps or d.feeds_composed(c) or not Substitution({c: "\0"}).found(text) for c in cities):
        return
    # another pair the tables know; a pair that keeps one city in its place counts too (SF -> Rivermist
    # becomes SF -> Stonebrook), so each sibling of a scenario can take its own (:meth:`Draw.pick`)
    pairs = [p for p in _distance_pairs() if p != tuple(cities)
             and all(x == c or (x not in cities and not Substitution({x: "\0"}).found(text))
                     for x, c in zip(p, cities, strict=True))]
    # a pair and its reverse make the same calls once the zip codes are masked (a sibling copy): one of them
    pairs = [p for p in pairs if (p[1], p[0]) not in pairs or p < (p[1], p[0])]
    if pairs:  # every draw: the siblings take other pairs by their slot, none keeps the seed's by chance
        # both cities new first: a pair keeping the seed's San Francisco keeps its trip (reads 59-61, eight pairs)
        new = d.pick(pairs, "city_pair", prefer=lambda p: not set(p) & set(cities))
        for old, x in zip(cities, new, strict=True):
            if old != x:
                swaps[old] = x


def _zip_pair_swap(d: Draw, bound: list[tuple[Any, dict[str, Any]]], swaps: dict[str, str]) -> None:
    """The user states the zip codes themselves ('from Rivermist (zip 83214) to Greenway (zip 74532)'): the codes
    and the city names beside them become another pair the tables know (scenario 92 had no other entity to change,
    and all eight samples were new only in digits)."""
    pairs = [(a.get("cityA"), a.get("cityB")) for r, a in bound if r.name == "estimate_distance"]
    if len(set(pairs)) != 1 or len(set(pairs[0])) != 2:
        return
    zips = knowledge.zip_codes()
    by_zip = {z: c for c, z in zips.items()}
    text = " ".join(d.turn_text)
    old = pairs[0]
    if any(z not in by_zip or z in swaps or d.feeds_composed(z) or not re.search(rf"\b{z}\b", text) for z in old):
        return
    if any(d.sources.get((r.turn, r.index, p)) is None or d.sources[(r.turn, r.index, p)].source != "user"
           for r, _a in bound if r.name == "estimate_distance" for p in ("cityA", "cityB")):
        return
    named = [by_zip[z] for z in old]
    candidates = [p for p in _distance_pairs() if p != tuple(named) and not any(
        x not in named and Substitution({x: "\0"}).found(text) for x in p)]
    candidates = [p for p in candidates if (p[1], p[0]) not in candidates or p < (p[1], p[0])]
    if candidates:
        new = d.pick(candidates, "city_pair", prefer=lambda p: not set(p) & set(named))
        for old_city, old_zip, city in zip(named, old, new, strict=True):
            if city != old_city:
                swaps[old_zip] = zips[city]
                said = _named_with(old_zip, text)
                if Substitution({old_city: "\0"}).found(text):
                    swaps[old_city] = city
                elif said and said not in zips:
                    swaps[said] = city  # the seed's own name for the place ('Greenway (zip 74532)')


def _named_with(code: str, text: str) -> str | None:
    """The place name the text writes beside a zip code ('Greenway (zip 74532)'), if any."""
    m = re.search(rf"\b([A-Z][a-z]+(?: [A-Z][a-z]+)?) \((?:zip(?: ?code)?:? )?{code}\)", text)
    return m.group(1) if m else None


_STOCK_PARAMS = {"symbol", "stock"}


@lru_cache(maxsize=1)
def sector_lists() -> dict[str, tuple[str, ...]]:
    """Sector -> the stocks its lookup lists, in order, from the trading environment's own tables (run, not parsed)."""
    from envs.bfcl_data import env_class

    api = env_class("TradingBot")()
    api._load_scenario({}, long_context=False)
    out: dict[str, tuple[str, ...]] = {}
    for sector in options("get_available_stocks", "sector"):
        listed = api.get_available_stocks(sector)
        out[sector] = tuple(listed.get("stock_list", []) if isinstance(listed, dict) else [])
    return out


@lru_cache(maxsize=1)
def sectors_of() -> dict[str, frozenset[str]]:
    """Symbol -> the sectors whose lookup lists it, in the trading environment's own tables."""
    out: dict[str, set[str]] = {}
    for sector, listed in sector_lists().items():
        for symbol in listed:
            out.setdefault(symbol, set()).add(sector)
    return {k: frozenset(v) for k, v in out.items()}


def _at_same_place(symbol: str, swaps: dict[str, str], text: str) -> str | None:
    """The stock at ``symbol``'s place in the list of the sector ``swaps`` takes its list to ('the third stock in the
    list': MSFT of Technology's, GM of Automobile's; 'the last one' counts from the end, read as
    :func:`~rods_agents.variation.rederive.rederive` reads it for the ground truth), or None."""
    lists = sector_lists()
    for old, new in swaps.items():
        if old in lists and new in lists and symbol in lists[old] and lists[new]:
            i = lists[old].index(symbol)
            j = i - len(lists[old]) if FROM_END.search(text) else i
            return lists[new][j] if -len(lists[new]) <= j < len(lists[new]) else None
    return None


_SECTOR_LOOKUPS = {"get_available_stocks", "filter_stocks_by_price"}


_OFF_LIST = frozenset({"remove_stock_from_watchlist"})

_MONEY = re.compile(r"\$\s?\d|\d[\d,.]*\s?(?:USD|dollars?|bucks)\b", re.I)
"""An amount of money the text states: a story that sums ('top up $4,000 to make sure I've got enough cash')."""


def _similar_price(stocks: dict[str, Any], old: str, new: str, spread: float = 3.0) -> bool:
    """``new`` trades within ``spread`` times ``old``'s price: the story's sums still fit (read 10: 50 Zeta Corp shares
    for $7,500 became 50 Alpha Tech shares for $66,022 beside 'top up $4,000 to make sure I've got enough cash').
    Asked only where the text states an amount of money (:data:`_MONEY`)."""
    a, b = ((stocks[k].get("price") if isinstance(stocks.get(k), dict) else None) for k in (old, new))
    if not isinstance(a, int | float) or not isinstance(b, int | float) or a <= 0 or b <= 0:
        return True  # no price to compare: nothing the story sums
    return 1 / spread <= b / a <= spread


def _inside_word(symbol: str, value: str) -> bool:
    """True when ``symbol`` occurs in ``value`` only inside a longer word ('ZETA_report'): that name is not the stock's.
    False for a dictated text naming the stock as a word ('canceled a buy order for $MSFT'): the swap carries into
    it, in the text and in the call alike."""
    if symbol not in value or value == symbol:
        return False
    return not re.search(rf"(?<![A-Za-z0-9_]){re.escape(symbol)}(?![A-Za-z0-9_])", value)


def _swapped_sectors(sectors: dict[str, frozenset[str]], symbol: str, swaps: dict[str, str]) -> frozenset[str]:
    """The sectors a stock taking ``symbol``'s place must be listed in: ``symbol``'s, with a sector the plan swaps
    (an option swap, 'Technology' -> 'Automobile') taken to its new one. A stock kept in the old sector was missing
    from the list the variant reads, so every plan swapping the sector failed (26 of 30 variants that look a sector up
    kept 'Technology')."""
    return frozenset(swaps.get(x, x) for x in sectors.get(symbol, frozenset()))


def stock_swap(d: Draw, bound: list[tuple[Any, dict[str, Any]]], swaps: dict[str, str]) -> None:
    """The stock a task trades becomes another stock the environment lists (its config's stock table and
    get_symbol_by_name's company table), its company's name with it ('Zeta Corp' -> 'Omega Industries'):
    another market situation, not a made-up ticker. Prices read from results follow (:func:`rederive`). Not
    a stock where the text names it in neither form, or where an argument holds it inside a longer word (a dictated
    text naming it as a word, 'a buy order for $MSFT', is carried with the swap). Next to a sector lookup
    the sector lists are the environment's and fixed: a stock one of them names becomes another stock of exactly
    the same sectors ('MSFT' -> 'NVDA' after the Technology list), so the list the assistant reads still holds it;
    next to a price filter, whose answer depends on every price, it stays. Never a stock the watchlist already holds:
    adding it would change nothing (read 18: AAPL -> NVDA where the list held NVDA), and a task reading the list
    would find it there before the task put it there. A made-up company the text names becomes another made-up one
    (:func:`~rods_agents.analysis.value_sources.household_tickers`): 'Quasar Ltd.' -> 'Microsoft' lets the assistant
    write MSFT without the lookup the seed needs (read of 2026-12-05)."""
    stocks = d.seed.initial_config.get("TradingBot", {}).get("stocks")
    if not isinstance(stocks, dict):
        return
    lookups = {r.name for r, _ in bound} & _SECTOR_LOOKUPS
    sectors = sectors_of() if lookups else {}
    fixed = frozenset(sectors) if "filter_stocks_by_price" in lookups else frozenset()
    from rods_agents.analysis.faithfulness import known_symbols

    known = known_symbols(d.seed.long_context)
    companies = ticker_companies()  # the old stock may be one only the seed's config lists ('AMZN'); the new one is known
    household, products = household_tickers(), ticker_products()
    # the watchlist counts only where the task touches it (adds to it, reads it, removes from it)
    on_list = set(d.seed.initial_config.get("TradingBot", {}).get("watch_list") or ())
    watched = on_list if any("watchlist" in r.name for r, _ in bound) else set()
    takers: dict[str, set[str]] = {}  # symbol -> the methods taking it, in the order the task first uses it
    for r, args in bound:
        for p, v in args.items():
            if p in _STOCK_PARAMS and isinstance(v, str):
                takers.setdefault(v, set()).add(r.name)
    used = list(takers)
    text = " ".join(d.turn_text)
    sums = _MONEY.search(text) is not None
    for symbol in used:
        # a stock the watchlist holds though the price table does not, which the task only takes off the list
        # ('take Zeta Corp out of my watchlist', scenario 116: kept in every sample): another stock takes its place
        listed_only = symbol in on_list and takers.get(symbol, set()) <= _OFF_LIST
        if (symbol in swaps or symbol in fixed or (symbol not in stocks and not listed_only) or symbol not in companies
                or not d.p(0.9)):
            continue
        # the stock picked by what its company makes ('one that's making GPUs', base_108): the words follow the stock
        by_product = symbol in products and Substitution({products[symbol]: "\0"}, derived_forms=False).found(text)
        forms = [symbol, companies[symbol]]
        if not by_product and not any(Substitution({f: "\0"}, derived_forms=False).found(text) for f in forms):
            continue
        if any(_inside_word(symbol, x) for _r, args in bound for x in _scalar_strings(list(args.values()))):
            continue  # part of a longer token of an argument ('ZETA_report'): that name is not the stock's
        # a made-up company the text names stays made up: the assistant must find its ticker, not know it
        named = Substitution({companies[symbol]: "\0"}, derived_forms=False).found(text)
        made_up = symbol not in household and named
        # and a household name stays a household name: 'Amazon' needs no lookup, 'Synex Solutions' does, and the
        # ground truth makes none (read 30, base_115)
        known_by_name = named and symbol in household
        picks = [r.turn for r, args in bound for p, v in args.items()
                 if v == symbol and (a := d.sources.get((r.turn, r.index, p))) is not None and a.source == "call"]
        if sectors and picks:
            # picked from a sector's list ('the third stock in the list', read 11): the list stays the environment's,
            # so the stock is the one at the same place of the swapped sector's list, or stays (scenario 131)
            follow = _at_same_place(symbol, swaps, " ".join(d.turn_text[: max(picks) + 1]))
            if follow is not None and follow not in used and not named:
                swaps[symbol] = follow
            continue
        choices = sorted(k for k in stocks if k in companies and k in known and k not in used and k not in swaps.values()
                         and k not in fixed and sectors.get(k, frozenset()) == _swapped_sectors(sectors, symbol, swaps)
                         and k not in watched and not (made_up and k in household) and not (known_by_name and k not in household)
                         and (not by_product or k in products)
                         and (not sums or _similar_price(stocks, symbol, k))
                         and not Substitution({k: "\0", companies[k]: "\0"}, derived_forms=False).found(text))
        if not choices:
            continue
        new = d.pick(choices, f"stock|{symbol}")
        swaps[symbol] = new
        swaps[companies[symbol]] = companies[new]
        if by_product:
            swaps[products[symbol]] = products[new]
        head_o, head_n = companies[symbol].split()[0], companies[new].split()[0]
        if head_o != companies[symbol] and re.search(rf"\b{re.escape(head_o)}\b", text):
            swaps.setdefault(head_o, head_n)  # 'Zeta' on its own


@lru_cache(maxsize=1)
def _routes() -> frozenset[tuple[str, str]]:
    """Airport pairs the travel environment prices (its fare table, run, not parsed)."""
    from envs.bfcl_data import env_class
    from rods_agents.analysis.value_sources import airport_cities

    api = env_class("TravelAPI")()
    api._load_scenario({}, long_context=False)
    out = set()
    for a in airport_cities():
        for b in airport_cities():
            if a == b:
                continue
            try:
                res = api.get_flight_cost(travel_from=a, travel_to=b, travel_date="2026-12-25", travel_class="economy")
            except Exception:  # noqa: BLE001 - an unpriced route raises in the environment's own code
                continue
            if isinstance(res, dict) and "travel_cost_list" in res:
                out.add((a, b))
    return frozenset(out)


_ROUTE_METHODS = {"get_flight_cost", "book_flight"}
# well-known airports of cities that have others a traveller knows (New York's LGA and EWR, Chicago's MDW, Tokyo's NRT):
# 'leaving New York' for JFK, with no lookup in the ground truth, read as a guess where the seed's 'Los Angeles' for
# LAX did not (read 51 #25, LLM trial 6 #4); a city the text names gets one only where the seed's city is such a city
_MULTI_AIRPORT_CITIES = frozenset({"JFK", "ORD", "HND", "PEK", "LHR", "CDG"})


def route_swap(d: Draw, bound: list[tuple[Any, dict[str, Any]]], swaps: dict[str, str]) -> None:
    """A flight the user states (airport codes or their cities) becomes another route the travel environment
    prices: the new endpoint replaces the old code and city name everywhere, the other endpoint stays where
    it is not stated (found by a lookup). Not where any flight of the task is to or from another airport,
    or where an airport is named only inside a dictated text. A well-known airport the text names by its city
    ('from Los Angeles', the ground truth writing LAX with no lookup) becomes another well-known one: 'from
    Autumnville' would leave the assistant a lookup the ground truth never makes (read 32: four such pairs); a
    made-up city's airport, which the assistant looks up, stays a made-up one (rods_agents.analysis.lookups writes
    that lookup in; 'from Los Angeles' would spare the assistant it)."""
    from rods_agents.analysis.value_sources import airport_cities

    flights = {(args.get("travel_from"), args.get("travel_to")) for r, args in bound if r.name in _ROUTE_METHODS}
    if len(flights) != 1:
        return
    (src, dst), = flights
    cities = airport_cities()
    if src not in cities or dst not in cities or src in swaps or dst in swaps:
        return
    text = " ".join(d.turn_text)

    def stated(code: str) -> bool:
        hits = [f for f in (code, cities[code], *aliases[code]) if Substitution({f: "\0"}, derived_forms=False).found(text)]
        # said as it is, or named by its city for the assistant to look up ('fly out of Rivermist'): the new city's
        # name goes where the old one was, and the lookup finds the new code; never a code read from a result
        stated_src = all(d.sources.get((r.turn, r.index, p), None) is None
                         or d.sources[(r.turn, r.index, p)].source in ("user", "state")
                         for r, args in bound for p, v in args.items() if v == code)
        return bool(hits) and stated_src

    from rods_agents.analysis.value_sources import CITY_ALIASES
    from rods_agents.variation.donor_fit import _AIRPORT_NAMES

    # an airport the text also calls by its own name ('John F. Kennedy') or a two-letter alias ('LA', too short to
    # substitute safely in free text) keeps it: the name would not follow the new code. A longer alias ('NYC',
    # 'New York City') follows it as the new city's name (scenarios 181 and 189 kept JFK in all eight samples)
    def _says_name(n: str) -> bool:
        return re.search(rf"(?<![A-Za-z0-9]){re.escape(n)}(?![A-Za-z0-9])", text) is not None

    for code in (src, dst):
        if any(_says_name(a) for a in CITY_ALIASES.get(cities[code], ()) if len(a) < MIN_TEXT_LEN):
            return
    aliases = {c: [a for a in CITY_ALIASES.get(cities[c], ()) if _says_name(a)] for c in cities}
    # an airport the text calls by its own name ('John F. Kennedy (JFK)', scenario 173: kept in every sample) goes
    # only to another airport with a name of its own ('O'Hare (ORD)'), the name following the code
    own_names = {c: [n for n in _AIRPORT_NAMES.get(c, ()) if _says_name(n)] for c in (src, dst)}
    movable = [c for c in (src, dst) if stated(c)]
    if not movable:
        return
    named = {c for c in cities if aliases[c] or Substitution({c: "\0", cities[c]: "\0"}, derived_forms=False).found(text)}
    # named by its city somewhere (base_153 says 'from Rivermist' two turns before 'from RMS'): the turn that names
    # the city needs the lookup, or not, whatever a later turn says
    by_city = {c for c in (src, dst)
               if aliases[c] or Substitution({cities[c]: "\0"}, derived_forms=False).found(text)}
    options_ = [(a, b) for a, b in _routes() if (a, b) != (src, dst) and (a == src or src in movable)
                and (b == dst or dst in movable) and not ({a, b} - {src, dst}) & named
                and all((new in WELL_KNOWN_AIRPORTS) == (old in WELL_KNOWN_AIRPORTS)
                        and (new not in _MULTI_AIRPORT_CITIES or old in _MULTI_AIRPORT_CITIES)
                        for old, new in ((src, a), (dst, b)) if old in by_city and new != old)
                and all(new == old or not own_names[old] or new in _AIRPORT_NAMES for old, new in ((src, a), (dst, b)))]
    if not options_:
        return
    a, b = d.pick(options_, "route", prefer=lambda r: not set(r) & {src, dst})
    for old, new in ((src, a), (dst, b)):
        if old != new:
            swaps[old] = new
            swaps[cities[old]] = cities[new]
            for alias in aliases[old]:
                swaps[alias] = cities[new]  # 'New York City' before 'New York': the longest form is replaced first
            for name in own_names[old]:
                swaps[name] = _AIRPORT_NAMES[new][0]  # 'John F. Kennedy' and 'Kennedy' -> "O'Hare"


__all__ = ["city_pair_swap", "dictated_swap", "route_swap", "sector_lists", "sectors_of", "stock_swap"]
