"""Faithfulness checks of a variant against its seed: the unfaithful classes found in accepted variants.

Each check returns located verdict reasons (``unfaithful:<kind> turn=T call=... value=...``) and holds a
variant only to what its seed already does (a flaw the seed has itself is not held against it). The
classes (issue 13):

- ``old_choice_words``: a choice swapped (``wc`` mode ``'l'`` -> ``'w'``, travel class first -> economy)
  while the text still says the seed's option ("the number of lines") from the call's turn on;
- ``fill_not_full``: a turn asks to fill the tank completely / top it off, and the fuel after the call is
  not the tank's capacity;
- ``knife_edge_balance``: a balance the variant changed sits within ``KNIFE_EDGE`` dollars above an order
  or fare the ground truth pays (a state made to just fit, visible to the agent);
- ``unknown_symbol``: a ticker the environment does not know (not in its default market, its sector lists
  or the seed's state);
- ``old_digits_left``: an id renamed with its old digits left in the state ('card_4455' -> 'card_7781' with
  the card number still ending in 4455);
- ``stale_fare``: the text quotes the seed's fare for a flight whose route, date or class the plan changed;
- ``fare_over_cap``: the text caps a booking ('costing no more than $2500') that the seed books under its cap, and the
  plan's route, date or class prices the variant's booking over it: the ground truth books what the user ruled out;
- ``round_made_odd``: a round number the user states in the seed ('$10,000', 'last 20 lines') replaced by
  an odd one ('$9,267');
- ``dictated_cut``: a text the seed's user dictates word for word (a message, a tweet) that the variant's words
  give only in part ('... order.' without 'Current balance in my account is $10000.'): the value source reads
  most of the words as said, but the assistant could not send what the ground truth sends;
- ``option_unsaid``: a choice the seed's words say ('comprehensive travel insurance', 'in first class') that the
  variant's words never say up to the call's turn: the choice is left open;
- ``recency_dropped``: the seed's turn picks a value from the state or a result by when it came ('an order I
  submitted not too long ago', 'the latest booking') and the variant's same turn, picking it the same way, says no
  such word: with two orders in the history, 'my placed order' no longer says which (read 53 #18, base_134).

- ``unseen_number``: a list of numbers a call takes (the numbers to average) holds one that no earlier result and no
  user turn gives: miss_func_15's seed averages [3, 16, 62] where wc counts 60 characters, and its variants copied the
  62 (read 61 #7). The one class held against a variant even where its seed has it: a careful person cannot reach
  that ground truth at all.

Words per choice are data: ``prompts/bfcl/choice_words.json``.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from envs.executor import Environment, to_call_string
from envs.task import Task
from rods_agents.analysis import knowledge
from rods_agents.analysis.information_structure import asking_text
from rods_agents.analysis.tracing import Trace, stated_limits
from rods_agents.analysis.value_sources import ArgSource, _numbers, said_in, user_text_upto
from rods_agents.analysis.variant_quality import _bound, parsed_ground_truth

KNIFE_EDGE = 5.0
"""Dollars above a cost that make a balance 'just enough': the doc found 68 balances patched to $1-2 above
the order cost; a person's balance is rarely within $5 of the one order they are about to place."""
TANK_CAPACITY = 50.0  # VehicleControlAPI MAX_FUEL_LEVEL (its fillFuelTank docstring: "up to 50 gallons")
_FILL_FULL = re.compile(r"\b(fill\w*|top\w*)\b[^.?!]{0,40}\b(completely|full|up to the (max|brim|top)|to capacity|max(imum)?)\b"
                        r"|\btop (it |the tank |her )?off\b|\b(full|complete) tank\b|\btank (is |gets )?full\b"
                        r"|\bfill (it |her |the tank )?up\b", re.I)
_DIGITS = re.compile(r"\d{4,}")


def _text(task: Task, turn: int) -> str:
    return "\n".join(m.content for m in task.turns[turn]) if 0 <= turn < len(task.turns) else ""


def _calls(task: Task) -> list[tuple[int, int, str, str, dict[str, Any]]]:
    out = []
    for t, turn in enumerate(task.ground_truth):
        for i, call in enumerate(turn):
            b = _bound(call)
            if b is not None:
                out.append((t, i, call, b[0], b[1]))
    return out


# ----------------------------------------------------------------------------- choices
@lru_cache(maxsize=1)
def choice_words() -> dict[str, dict[str, list[re.Pattern]]]:
    data = knowledge.table("choice_words")
    return {slot: {opt: [re.compile(p, re.I) for p in pats] for opt, pats in opts.items()}
            for slot, opts in data.items() if not slot.startswith("_")}


def says(patterns: list[re.Pattern], text: str) -> re.Match | None:
    return next((m for p in patterns if (m := p.search(text))), None)


def old_choice_words(task: Task, seed: Task) -> list[str]:
    out: list[str] = []
    seed_calls = {(t, i): (name, args) for t, i, _, name, args in _calls(seed)}
    v_calls = _calls(task)
    for t, i, call, name, args in v_calls:
        for param, value in args.items():
            words = choice_words().get(f"{name}.{param}")
            old = seed_calls.get((t, i))
            if not words or old is None or old[0] != name or param not in old[1]:
                continue
            s_val, v_val = str(old[1][param]), str(value)
            if s_val == v_val or s_val not in words or v_val not in words:
                continue
            if any(n == name and str(a.get(param)) == s_val for _, _, _, n, a in v_calls):
                continue  # another call still makes the seed's choice: its words may stay
            for later in range(t, len(task.turns)):
                m = says(words[s_val], _text(task, later))
                if m and not says(words[v_val], _text(task, later)):
                    out.append(f"unfaithful:old_choice_words turn={later} call={call[:80]} value={v_val!r} "
                               f"seed_value={s_val!r} text={m.group(0)!r}")
                    break
    return out


# ----------------------------------------------------------------------------- fuel
def _fill_gaps(task: Task) -> list[tuple[int, str, float]]:
    """(turn, call, level after) for each fillFuelTank a 'fill it completely' turn asks for."""
    level = float((task.initial_config.get("VehicleControlAPI") or {}).get("fuelLevel", 0.0) or 0.0)
    out = []
    for t, _, call, name, args in _calls(task):
        if name != "fillFuelTank":
            continue
        try:
            level += float(args.get("fuelAmount", 0))
        except (TypeError, ValueError):
            continue
        if _FILL_FULL.search(_text(task, t)) or (t > 0 and not task.ground_truth[t - 1] and _FILL_FULL.search(_text(task, t - 1))):
            out.append((t, call, level))
    return out


def fill_not_full(task: Task, seed: Task) -> list[str]:
    seed_short = any(abs(lv - TANK_CAPACITY) > 1e-6 for _, _, lv in _fill_gaps(seed))
    if seed_short:
        return []
    return [f"unfaithful:fill_not_full turn={t} call={call[:80]} value={level:g} capacity={TANK_CAPACITY:g}"
            for t, call, level in _fill_gaps(task) if abs(level - TANK_CAPACITY) > 1e-6]


# ----------------------------------------------------------------------------- balances
def _leaves(obj: Any, path: tuple = ()) -> dict[tuple, Any]:
    out: dict[tuple, Any] = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(_leaves(v, (*path, str(k))))
    elif isinstance(obj, list):
        for k, v in enumerate(obj):
            out.update(_leaves(v, (*path, k)))
    else:
        out[path] = obj
    return out


def _costs(task: Task, trace: Trace) -> list[tuple[int, str, float]]:
    """(turn, call, amount) the ground truth pays: orders (price x amount) and flights (their fare)."""
    out = []
    for rec in trace.calls:
        a = rec.args
        try:
            if rec.name == "place_order" and str(a.get("order_type", "")).lower() == "buy":
                out.append((rec.turn, rec.call, float(a["price"]) * float(a["amount"])))
            elif rec.name == "get_flight_cost":
                out += [(rec.turn, rec.call, n) for n in _numbers(rec.result) if n >= 50]
        except (KeyError, TypeError, ValueError):
            continue
    return out


def knife_edge_balance(task: Task, seed: Task, trace: Trace, seed_trace: Trace | None = None) -> list[str]:
    v_leaves, s_leaves = _leaves(task.initial_config), _leaves(seed.initial_config)
    seed_numbers = {float(v) for v in s_leaves.values() if isinstance(v, int | float) and not isinstance(v, bool)}
    # a balance the plan set: not one of the seed's numbers (a renamed card keeps its balance under a new key)
    changed = {p: float(v) for p, v in v_leaves.items() if isinstance(v, int | float) and not isinstance(v, bool)
               and "balance" in " ".join(str(x).lower() for x in p) and float(v) not in seed_numbers}
    if not changed:
        return []
    out = []
    for path, bal in changed.items():
        for t, call, cost in _costs(task, trace):
            if cost >= 50 and 0 <= bal - cost <= KNIFE_EDGE:
                out.append(f"unfaithful:knife_edge_balance turn={t} call={call[:80]} value={bal:g} cost={cost:g} "
                           f"state={'.'.join(str(x) for x in path)}")
                break
    return out


def _fares(task: Task) -> list[tuple[int, str, float]]:
    """(turn, call, fare) of each flight the ground truth books: the environment's price for its route, date and
    class (``get_flight_cost`` on the task's initial state, which it only reads), which the text may quote ('at a
    cost of 4700 dollars')."""
    out: list[tuple[int, str, float]] = []
    env: Environment | None = None
    for t, calls in enumerate(parsed_ground_truth(task)):
        for method, raw in calls:
            if method != "book_flight":
                continue
            args = {k: v for k, v in json.loads(raw or "{}").items()
                    if k in ("travel_from", "travel_to", "travel_date", "travel_class")}
            try:
                env = env or Environment(["TravelAPI"], {"TravelAPI": task.initial_config.get("TravelAPI", {})},
                                         task.long_context)
                fares = [n for n in _numbers(env.execute(to_call_string("get_flight_cost", args))) if n >= 50]
            except Exception:  # noqa: BLE001 - a route the table lacks has no fare to quote
                continue
            out += [(t, f"book_flight({raw})", fare) for fare in fares[:1]]
    return out


def stale_fare(task: Task, seed: Task) -> list[str]:
    """The text quotes its seed's fare ('book ... first class, at a cost of 4700 dollars') for a flight whose route,
    date or class the plan changed, so the variant's fare differs: a user who asks to 'double check the cost' of a
    flight that costs 4000 reads a mismatch the seed never had (read 14). Fares are priced only for a number both
    texts say (most verdicts price none)."""
    said = (_numbers(" ".join(_text(task, t) for t in range(len(task.turns))))
            & _numbers(" ".join(_text(seed, t) for t in range(len(seed.turns)))))
    if not said:
        return []
    said &= {fare for _, _, fare in _fares(seed)}
    if not said:
        return []
    out = []
    for t, call, fare in _fares(task):
        out += [f"unfaithful:stale_fare turn={t} call={call[:80]} value={old:g} fare={fare:g}" for old in sorted(said - {fare})]
    return out[:3]


def quoted_fares(task: Task, seed: Task) -> list[tuple[float, float]]:
    """(the seed's fare, the variant's) for each booked flight whose fare the seed's words quote ('at a cost of 4700
    dollars') and whose route, date or class the plan changed: the plan carries the pair like a re-derived value, so
    the variant's words quote its own fare and never the seed's (:func:`stale_fare`; scenario 193 lost its variants to
    it)."""
    said = _numbers(" ".join(_text(seed, t) for t in range(len(seed.turns))))
    if not said:
        return []
    theirs = [fare for _, _, fare in _fares(seed)]
    if not set(theirs) & said:
        return []
    return [(old, new) for old, (_, _, new) in zip(theirs, _fares(task), strict=False) if old in said and old != new]


def fare_over_cap(task: Task, seed: Task) -> list[str]:
    """A booking the user caps ('I'll take care of booking your flight ... costing no more that $2500') whose fare the
    plan's route or class put over the cap, where the seed's booking stays under its own: the seed's ground truth books
    without pricing the flight, so no result number shows the flip (:func:`rods_agents.analysis.tracing.limit_flips`),
    and the variant books a $6000 first-class seat after 'I can't go above $2500 on it' (read of 2026-12-05,
    miss_param_160). The caps said up to the booking's turn pair up with the seed's by the turn that says them: a
    variant turn read as stating a limit where its seed's does not ('My budget limit should be worth 22000 RMB') had
    shifted a pairing by position, and a $3500 first-class fare passed 'It shouldn't cost more than $2500' (read 65,
    miss_func_160)."""
    if not stated_limits([_text(task, i) for i in range(len(task.turns))]):
        return []  # no cap said: nothing to price (most verdicts)
    mine, theirs = _fares(task), _fares(seed)
    out: list[str] = []
    for (t, call, fare), (st, _, seed_fare) in zip(mine, theirs, strict=False):
        caps = stated_limits([_text(task, i) for i in range(t + 1)])
        seed_caps = stated_limits([_text(seed, i) for i in range(st + 1)])
        kept = {turn for turn, cap in seed_caps if seed_fare <= cap}  # the turns whose caps the seed's booking keeps
        out += [f"unfaithful:fare_over_cap turn={t} call={call[:80]} fare={fare:g} cap={cap:g}"
                for turn, cap in caps if turn in kept and fare > cap]
    return out[:3]


# ----------------------------------------------------------------------------- tickers
@lru_cache(maxsize=2)
def known_symbols(long_context: bool) -> frozenset[str]:
    """Tickers the TradingBot knows with an empty config: its market, sector lists and name table."""
    env = Environment(["TradingBot"], {}, long_context)
    bot = env.instances["TradingBot"]
    names: set[str] = set(getattr(bot, "stocks", {}) or {})
    for sector in ("Technology", "Automobile"):
        names |= set(bot.get_available_stocks(sector).get("stock_list", []))
    return frozenset(names)


def unknown_symbols(task: Task, seed: Task) -> list[str]:
    if "TradingBot" not in task.involved_classes:
        return []
    known = set(known_symbols(task.long_context)) | set((seed.initial_config.get("TradingBot") or {}).get("stocks", {}) or {})
    for *_, args in _calls(seed):
        for param in ("symbol", "stock", "stocks"):
            vals = args.get(param)
            known |= {v for v in (vals if isinstance(vals, list) else [vals]) if isinstance(v, str)}
    out = []
    for t, _, call, _name, args in _calls(task):
        for param in ("symbol", "stock", "stocks"):
            vals = args.get(param)
            for v in vals if isinstance(vals, list) else [vals]:
                if isinstance(v, str) and v and v not in known:
                    out.append(f"unfaithful:unknown_symbol turn={t} call={call[:80]} value={v!r}")
    return out[:3]


# ----------------------------------------------------------------------------- renamed ids
def _holds_digits(s: str, digits: str) -> bool:
    """``s`` carries ``digits`` as a whole run of an id ('card 4455', 'acct_4455') or as the tail of a long number
    (a card number '...4455'), not inside another number or a code glued to letters (flight 'LA1234')."""
    if re.search(rf"(?<![A-Za-z0-9]){re.escape(digits)}(?!\d)", s):
        return True
    flat = re.sub(r"\D", "", s)
    return len(flat) >= 12 and flat.endswith(digits)


def _tied_digits(value: str) -> list[str]:
    """The digit runs of ``value`` another state value may repeat: for a long number written in digits and
    separators (a card number) only its last four digits (the tail a card id takes), for an id (a uuid, a
    'card_3456') every run of four or more."""
    flat = re.sub(r"\D", "", value)
    if len(flat) >= 12 and re.fullmatch(r"[\d\s\-*]+", value):
        return [flat[-4:]]
    return _DIGITS.findall(value)


def old_digits_left(task: Task, renames: dict[str, str]) -> list[str]:
    strings = [s for s in _leaves(task.initial_config).values() if isinstance(s, str)]
    strings += [k for p in _leaves(task.initial_config) for k in p if isinstance(k, str)]
    out = []
    for old, new in renames.items():
        if not isinstance(old, str) or not isinstance(new, str):
            continue
        old_d, new_d = _tied_digits(old), _DIGITS.findall(new) + _tied_digits(new)
        for d in old_d:
            if d in new_d:
                continue
            hit = next((s for s in strings if old not in s and _holds_digits(s, d)), None)
            if hit is not None:
                out.append(f"unfaithful:old_digits_left value={new!r} old={old!r} state_value={hit[:40]!r}")
                break
    return out


# ----------------------------------------------------------------------------- round numbers
def is_round(x: float) -> bool:
    """A number people say: 10,000, 2,500, 150, 45, 20, 7 (not 9,267, 2,537 or 45.99)."""
    if x != int(x) or x == 0:
        return False
    n = abs(int(x))
    digits = len(str(n))
    if digits <= 1:
        return True
    if digits == 2:
        return n % 5 == 0
    return n % (5 * 10 ** (digits - 3)) == 0


def round_made_odd(task: Task, seed: Task, sources: list[ArgSource], seed_sources: list[ArgSource]) -> list[str]:
    seed_vals = {(a.turn, a.index, a.param): a for a in seed_sources if a.source == "user"}
    out = []
    for a in sources:
        s = seed_vals.get((a.turn, a.index, a.param))
        if a.source != "user" or s is None:
            continue
        try:
            sv, vv = float(s.value), float(a.value)
        except ValueError:
            continue
        if sv != vv and abs(sv) >= 10 and is_round(sv) and not is_round(vv):
            out.append(f"unfaithful:round_made_odd turn={a.turn} call={a.method} param={a.param} value={a.value} "
                       f"seed_value={s.value}")
    return out[:3]


DICTATED_WORDS = 4  # a value of this many words or more is a text the user dictates, not a name


def dictated_cut(task: Task, seed: Task) -> list[str]:
    """Texts the seed's user says word for word (a string argument of :data:`DICTATED_WORDS` words or more, said as
    it is up to its turn) whose variant value, at the same call and parameter, the variant's words do not say whole."""
    variant_calls = {(t, i, name): args for t, i, _c, name, args in _calls(task)}
    out = []
    for t, i, _call, name, args in _calls(seed):
        mine = variant_calls.get((t, i, name), {})
        for param, value in args.items():
            new = mine.get(param)
            if (isinstance(value, str) and len(value.split()) >= DICTATED_WORDS and said_in(value, user_text_upto(seed, t))
                    and isinstance(new, str) and not said_in(new, user_text_upto(task, t))):
                out.append(f"unfaithful:dictated_cut turn={t} call={name} param={param} value={new[:60]!r}")
    return out[:3]


def option_unsaid(task: Task, seed: Task) -> list[str]:
    """A choice the seed's user says in words (``prompts/bfcl/choice_words.json``: 'comprehensive travel insurance',
    'in first class', 'the number of lines') that the variant's words, up to the call's turn, never say: the choice
    is left open (read 23: a donor sentence without the insurance type stood for a turn that stated it). Options a
    verb implies ('start the engine' for ignition mode START) have no words in the table and are not held to it."""
    variant_calls = {(t, i, name): args for t, i, _c, name, args in _calls(task)}
    out = []
    for t, i, _call, name, args in _calls(seed):
        mine = variant_calls.get((t, i, name), {})
        for param, value in args.items():
            words = choice_words().get(f"{name}.{param}", {})
            new = mine.get(param)
            if (str(value) in words and str(new) in words and says(words[str(value)], user_text_upto(seed, t))
                    and not says(words[str(new)], user_text_upto(task, t))):
                out.append(f"unfaithful:option_unsaid turn={t} call={name} param={param} value={new!r}")
    return out[:3]


_RECENCY = re.compile(r"\b(?:recent(?:ly)?|latest|last|newest|not (?:too |so |that )?long ago|just (?:now|placed|made|"
                      r"put|booked|submitted|posted|sent|created|bought|acquired|entered|reserved)|earlier|"
                      r"a (?:moment|minute|while) ago|the one I (?:just )?(?:placed|made|put in))\b", re.I)


def recency_drops(task: Task, seed: Task, sources: list[ArgSource], seed_sources: list[ArgSource]) -> list[ArgSource]:
    """The seed's arguments it picks from the starting state by when they came (an order, booking, ticket or tweet id;
    'an order I submitted not too long ago') whose turn in ``task``, still picking the id, says no word of recency:
    with two orders in the history, 'my placed order' no longer says which (read 53 #18, base_134). Words inside
    quotes (a message's 'Latest Quarter Performance') are no pick. One per (turn, method, param)."""
    picked = {(a.turn, a.method, a.param) for a in sources if a.source in ("state", "call")}
    out: dict[tuple[int, str, str], ArgSource] = {}
    for a in seed_sources:
        if (a.source == "state" and re.fullmatch(r"(?:order|booking|ticket|tweet)_id|id", a.param)
                and (a.turn, a.method, a.param) in picked and says_recency(asking_text(seed, a.turn))
                and not says_recency(asking_text(task, a.turn))):
            out.setdefault((a.turn, a.method, a.param), a)
    return list(out.values())


def recency_dropped(task: Task, seed: Task, sources: list[ArgSource], seed_sources: list[ArgSource]) -> list[str]:
    """The located ``unfaithful:recency_dropped`` reasons of :func:`recency_drops` (at most three)."""
    return [f"unfaithful:recency_dropped turn={a.turn} call={a.method} param={a.param}"
            for a in recency_drops(task, seed, sources, seed_sources)][:3]


def says_recency(text: str) -> bool:
    """``text``, outside its quotes, picks something by when it came ('the latest order', 'not too long ago')."""
    return _RECENCY.search(_unquoted(text)) is not None


def _unquoted(text: str) -> str:
    return re.sub(r"(?<!\w)'[^'\n]*'(?!\w)|\"[^\"\n]*\"", " ", text)


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def unseen_numbers(task: Task, trace: Trace) -> list[str]:
    """``unfaithful:unseen_number`` reasons: a number inside a list argument that neither an earlier result nor the user's
    words up to the call's turn give."""
    out: list[str] = []
    for i, rec in enumerate(trace.calls):
        for param, value in rec.args.items():
            if not (isinstance(value, list) and value
                    and all(isinstance(x, int | float) and not isinstance(x, bool) for x in value)):
                continue
            seen = {float(x) for r in trace.calls[:i] for x in _NUMBER.findall(r.result or "")}
            seen |= {float(x) for x in _NUMBER.findall(user_text_upto(task, rec.turn))}
            out += [f"unfaithful:unseen_number turn={rec.turn} call={rec.name}.{param} value={x}"
                    for x in value if float(x) not in seen]
    return out


def faithfulness_problems(task: Task, seed: Task, trace: Trace, sources: list[ArgSource],
                          seed_sources: list[ArgSource], renames: dict[str, str] | None = None) -> list[str]:
    """Every located ``unfaithful:<kind>`` reason of ``task`` against ``seed`` (see the module docstring)."""
    return (old_choice_words(task, seed) + fill_not_full(task, seed) + knife_edge_balance(task, seed, trace)
            + stale_fare(task, seed) + fare_over_cap(task, seed)
            + unknown_symbols(task, seed) + old_digits_left(task, renames or {})
            + round_made_odd(task, seed, sources, seed_sources) + dictated_cut(task, seed) + option_unsaid(task, seed)
            + recency_dropped(task, seed, sources, seed_sources) + unseen_numbers(task, trace))


__all__ = ["DICTATED_WORDS", "KNIFE_EDGE", "choice_words", "dictated_cut", "faithfulness_problems", "fill_not_full", "is_round", "knife_edge_balance",
           "fare_over_cap", "known_symbols", "old_choice_words", "old_digits_left", "option_unsaid", "quoted_fares", "recency_drops", "recency_dropped", "round_made_odd", "says", "says_recency", "stale_fare",
           "unknown_symbols", "unseen_numbers"]
