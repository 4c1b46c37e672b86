"""The changes of one draw (renames, new numbers, swaps, method swaps) and their application to the seed.

:func:`draw_changes` decides, value by value, what a variant may change: entities the task controls get new values of
the same kind (:mod:`~rods_agents.variation.value_kinds`), numbers the user states are perturbed, and the swaps of
:mod:`~rods_agents.variation.entity_swaps` and :mod:`~rods_agents.variation.method_swap` are drawn;
:func:`apply_changes` writes them into the ground truth and the config.
"""

from __future__ import annotations

import copy
import re
from functools import lru_cache
from typing import Any

from envs.executor import to_call_string
from envs.task import Task
from rods_agents.analysis import knowledge
from rods_agents.analysis.catalog import build_catalog
from rods_agents.analysis.profile import Profile
from rods_agents.analysis.tracing import Trace
from rods_agents.analysis.value_sources import state_values, ticker_companies
from rods_agents.variation.draw import PROTECTED, Draw, fs_kinds, hardcoded, perturb, scalar_numbers
from rods_agents.variation.entity_swaps import city_pair_swap, dictated_swap, route_swap, sector_lists, stock_swap
from rods_agents.variation.method_swap import maybe_swap, skill_method_swaps
from rods_agents.variation.search_terms import search_term_renames
from rods_agents.variation.seed_anchor import (
    ISO_DATE,
    Substitution,
    _strings,
    has_number,
    number_for,
    number_matches,
    substitute_numbers,
    unit_after,
    word_number_matches,
)
from rods_agents.variation.seed_anchor import scalar_strings as _scalar_strings
from rods_agents.variation.state_resample import fills_to_capacity
from rods_agents.variation.stated_limits import limit_numbers
from rods_agents.variation.value_kinds import first_names, fresh, kind_of, options, pools, tied_password

_SYMBOL_LOOKUPS = knowledge.symbol_lookups()


# amounts that may grow past what the state allows (the patch agent then repairs the state)
_GROWABLE = {("place_order", "amount"), ("fillFuelTank", "fuelAmount"), ("transfer_funds", "amount")}
# numbered choices the text states as a number, with the range the environment accepts: a new one a step away, so the
# story's urgency holds ('priority 5, so it's handled promptly' -> 4, never 1); kept in all 48 of 48 before
_RANGED = {("create_ticket", "priority"): (1, 5)}


_HOLIDAY = re.compile(r"\b(christmas|xmas|new year|halloween|valentine|thanksgiving|independence day|(4th|fourth) of july|"
                      r"easter|hanukkah|diwali|eid)\b", re.I)
"""Days a text may name by their holiday: such a date is not moved, or 'on Christmas' would be another day."""


def _replace(value: Any, exact: dict[str, str], sub: Substitution, numbers: dict[str, Any]) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):  # a number quoted inside a text ('a buy order for 100 shares') changes with it, in
        # a new dictated text too, as in the turn that quotes it (names first, then numbers: anchored_plan.carry_turn)
        return substitute_numbers(exact[value] if value in exact else sub.text(value), numbers)
    if isinstance(value, int | float):
        return number_for(numbers, value)
    if isinstance(value, list):
        return [_replace(v, exact, sub, numbers) for v in value]
    if isinstance(value, tuple):
        return tuple(_replace(v, exact, sub, numbers) for v in value)
    if isinstance(value, dict):
        return {k: _replace(v, exact, sub, numbers) for k, v in value.items()}
    return value


def _unverifiable(seed: Task, profile: Profile, trace: Trace) -> set[str]:
    """State values the seed points at in words the checks cannot read ('the temporary directory' for
    'tmp'): renaming one could leave the pointer pointing nowhere, so they keep their names."""
    from rods_agents.analysis.obtainability import public_state, state_obtainable
    from rods_agents.analysis.value_sources import user_text_upto

    pos_of = {(r.turn, r.index): p for p, r in enumerate(trace.calls)}
    states: dict[str | None, dict] = {}
    out: set[str] = set()
    for a in profile.arg_sources:
        if a.source != "state" or (a.turn, a.index) not in pos_of:
            continue
        rec = trace.calls[pos_of[(a.turn, a.index)]]
        if rec.cls not in states:
            states[rec.cls] = public_state(seed, rec.cls)
        value = rec.args.get(a.param)
        if not state_obtainable(value, rec, states[rec.cls], user_text_upto(seed, a.turn)):
            out |= set(_scalar_strings(value))
    return out


def _rename_named_users(d: Draw, renames: dict[str, str], taken: set[str], text: str) -> None:
    """People the text names and the messaging state's user map knows, though no call takes the name ('update my
    friend Michael', whose id the assistant looks up in the map): another first name of the same gender, in the text,
    the map and any dictated text alike, so the lookup of the id the seed leaves to the assistant stays. Before,
    they kept the seed's names in every sample (read 29: 'every entity is still the seed's, Kelly, Michael')."""
    users = d.seed.initial_config.get("MessageAPI", {}).get("user_map") or default_users(d.seed)
    for name in sorted(users if isinstance(users, dict) else {}):
        if (name in renames or not re.fullmatch(r"[A-Z][a-z]{2,}", name)
                or not re.search(rf"\b{re.escape(name)}\b", text) or name in PROTECTED
                or any(name in o or o in name for o in renames)):
            continue
        known = pools().get("seed_name_genders", {})
        gender = next((g for g in ("he", "she") if name in known.get(g, ()) or name in first_names(g)), None)
        if gender is None:
            continue  # a name whose gender the text's pronouns may need: kept
        new = fresh(name, "first_name", d.rng, taken, pronoun=gender)
        if new:
            renames[name] = new
            taken.add(new)


_SAID_ADDRESS = re.compile(r"'(\d+ [^'\n]{3,60}?, [^'\n]{3,60}?)'")


def _rename_said_addresses(text: str, used: set[str], renames: dict[str, str], taken: set[str], rng: Any) -> None:
    """A street address the text quotes and no call or state holds: another street of the same town. base_66 says 'If it
    is reachable, set navigation to '1914 7th St, Apt B, Berkeley, CA 94710'' and the car cannot reach it, so no call
    takes it, and it stayed in every sample (read 63)."""
    for said in dict.fromkeys(_SAID_ADDRESS.findall(text)):
        if said in renames or any(said in x or x in said for x in used if len(x) >= 6):
            continue
        new = fresh(said, "street", rng, taken)
        if new and new != said:
            renames[said] = new
            taken.add(new)


def _rename_said_folders(d: Draw, fs: dict[str, str], text: str, args: set[str], renames: dict[str, str],
                         taken: set[str]) -> None:
    """A folder of the state the text quotes and no call takes (the one the user works in: "In my existing folder
    called 'Lectures'", miss_func_42, kept in every sample; read 63): another folder name, in the state and the text
    alike."""
    for name, kind in fs.items():
        if (kind != "directory" or name in renames or len(name) < 4 or f"'{name}'" not in text
                or any(name in x for x in args) or hardcoded(name, d.seed.involved_classes, d.seed.long_context)):
            continue
        new = fresh(name, "folder", d.rng, taken)
        if new and new != name:
            renames[name] = new
            taken.add(new)


def _person_parts(renames: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for old, new in renames.items():
        if re.fullmatch(r"[A-Z][a-z]+ [A-Z][a-z]+", old) and re.fullmatch(r"[A-Z][a-z]+ [A-Z][a-z]+", new):
            (of, ol), (nf, nl) = old.split(), new.split()
            out.setdefault(of, nf)
            out.setdefault(ol, nl)
            # handles made from the name ('cmartinez', 'carlosmartinez') follow the person
            out.setdefault((of[0] + ol).lower(), (nf[0] + nl).lower())
            out.setdefault((of + ol).lower(), (nf + nl).lower())
    return out


def draw_changes(d: Draw, bound: list[tuple[Any, dict[str, Any]]]) -> dict[str, Any]:
    """Renames, numbers, swaps and method swaps for one draw (not yet applied)."""
    seed, catalog = d.seed, build_catalog()
    config_strings = set(_strings(seed.initial_config, []))
    state_strings, _ = state_values(seed)
    fs = fs_kinds(seed.initial_config.get("GorillaFileSystem", {}), {})
    stocks = seed.initial_config.get("TradingBot", {}).get("stocks")
    uses_lookup = any(r.name in _SYMBOL_LOOKUPS for r in d.trace.calls)
    own_symbols = set(stocks) if isinstance(stocks, dict) and not uses_lookup else set()
    own_symbols |= set(default_users(seed))  # the environment's default users, written into the new state
    # their ids too ('USR002'): the code writes them only in its default state, which a renamed one replaces with the
    # variant's own (read 37: 'USR001/USR002' kept in 75 of 91 variants that message someone)
    default_ids = _message_default_ids() if "MessageAPI" in seed.involved_classes else frozenset()
    arg_strings = {x for r in d.trace.calls for x in _scalar_strings(list(r.args.values())) if len(x) >= 3}
    all_text = " ".join(d.turn_text)
    unverifiable = _unverifiable(seed, d.profile, d.trace)
    taken = set(config_strings) | state_strings | set(re.findall(r"[A-Za-z0-9_.\-]+", all_text)) | default_ids
    renames: dict[str, str] = {}
    swaps: dict[str, str] = {}
    numbers: dict[str, Any] = {}
    phrases: list[dict[str, Any]] = []
    first_names: dict[str, str] = {}
    last_names: dict[str, str] = {}
    # people first: one person, one new name, everywhere
    for rec, args in bound:
        for param, value in args.items():
            for s in _scalar_strings(value):
                if kind_of(s, rec.name, param) == "person" and s not in renames and not hardcoded(s, seed.involved_classes, seed.long_context):
                    new = fresh(s, "person", d.rng, taken, pronoun=_pronoun(all_text))
                    if new:
                        renames[s] = new
                        taken.add(new)
    # a first and a last name given together (verify_traveler_information) are one person too
    for _rec, args in bound:
        first = next((args[p] for p in ("first_name", "user_first_name") if isinstance(args.get(p), str)), None)
        last = next((args[p] for p in ("last_name", "user_last_name") if isinstance(args.get(p), str)), None)
        full = f"{first} {last}" if first and last else None
        if (full and re.fullmatch(r"[A-Z][a-z]+ [A-Z][a-z]+", full) and full not in renames
                and first not in {o.split()[0] for o in renames if " " in o}
                and not hardcoded(first, seed.involved_classes, seed.long_context)
                and not hardcoded(last, seed.involved_classes, seed.long_context)):
            new = fresh(full, "person", d.rng, taken, pronoun=_pronoun(all_text))
            if new:
                renames[full] = new
                taken.add(new)
    _rename_named_users(d, renames, taken, all_text)
    _rename_said_addresses(all_text, arg_strings | config_strings, renames, taken, d.rng)
    _rename_said_folders(d, fs, all_text, arg_strings, renames, taken)
    search_term_renames(d, bound, renames, taken)  # 'budget analysis' in the report and the text alike
    parts = _person_parts(renames)
    first_names.update({k: v for k, v in parts.items() if k in {o.split()[0] for o in renames if " " in o}})
    last_names.update({k: v for k, v in parts.items() if k not in first_names})
    for rec, args in bound:
        spec = catalog.methods.get(rec.name)
        for param, value in args.items():
            src = d.sources.get((rec.turn, rec.index, param))
            enum = next((p.enum for p in spec.params if p.name == param), None) if spec else None
            for s in _scalar_strings(value):
                if s in renames or s in swaps or s in PROTECTED or (s in unverifiable and not _kind_pointer(s, fs, all_text)):
                    continue
                opts = options(rec.name, param)
                if s in opts or (enum and s in enum):
                    maybe_swap(d, rec, param, s, swaps, phrases)
                    continue
                in_config = s in config_strings or s in own_symbols
                stated = src is not None and src.source == "user"
                # a person's name is renamed everywhere, inside file contents and composed texts too
                is_name = kind_of(s, rec.name, param) in _NAME_KINDS
                if not in_config:
                    if not stated or (s in state_strings and s not in default_ids):
                        continue  # a default user's id the user states ('my user id is USR001') is the state's
                        # only by default: renamed, it is written into the user map (apply_changes); it was kept in
                        # all 8 samples of scenarios 14, 17, 51 and 62
                    if any(s in c for c in config_strings if len(c) > len(s)) and not is_name:
                        continue  # a phrase inside file contents (grep pattern): keep it findable (a person's name
                        # is renamed in the contents too: 'Kelly Total Score: 96' in Kelly's report, base_17)
                if d.feeds_composed(s) and not (is_name and d.names_in_composed(s)):
                    continue  # a piece of a value the assistant composes: the composition must still hold (a name
                    # inside it is renamed there too: 'Kelly Total Score: 96' was kept in all 8 samples of scenario 17)
                if any(o != s and o in s for o in arg_strings) and param != "password":
                    continue  # (a password holding its username, 'john1234', follows the username: tied_password)
                if (hardcoded(s, seed.involved_classes, seed.long_context) and s not in own_symbols
                        and s not in default_ids and seed.initial_config.get(rec.cls, {}).get(param) != s):
                    continue  # the code's own value; unless it is only a default the seed's state sets (a username)
                if s in own_symbols and not _ticker_renamable(s, all_text):
                    continue
                if s.isdigit() and not param.lower().endswith("id") and any(_keys_with(seed.initial_config, s)):
                    continue  # a password '12345' renamed would re-key the record whose id is 12345
                kind = kind_of(s, rec.name, param, fs.get(s))
                if kind in (None, "title") and knowledge.is_user_class(rec.cls):
                    kind = knowledge.derived_kind(s) or kind  # no pools for this class: a handle or a name by its shape
                if kind == "handle" and s in parts:  # a handle made of a renamed person's name follows the person
                    renames[s] = parts[s]
                    continue
                if kind == "first_name" and s in first_names:
                    renames[s] = first_names[s]
                    continue
                if kind == "last_name" and s in last_names:
                    renames[s] = last_names[s]
                    continue
                if kind == "address" and not _renamable_in_context(s, kind, all_text, config_strings | arg_strings):
                    kind = "street"  # the text names its city on its own: another street of that city
                if kind is None or not _renamable_in_context(s, kind, all_text, config_strings | arg_strings):
                    continue
                if kind == "date" and _HOLIDAY.search(all_text):
                    continue  # 'a first-class ticket on Christmas': the day is the holiday's
                if stated and not Substitution({s: "\0"}).found(d.text_upto(rec.turn)):
                    continue  # the text says it in a form the rewrite cannot carry
                if kind == "title" and any(s.lower() in x.lower() and x != s for x in arg_strings):
                    continue  # its words inside a dictated text: 'Issue with a recent trading platform error ...'
                if kind == "sentence" or (kind == "title" and not (d.force or d.p(0.6))):
                    # dictated free text stays (a pool sentence would be off-topic); a title changes its head noun, in
                    # most first draws too ('Billing Concern' was kept in 49 of the 56 variants that file a ticket)
                    continue
                new = (knowledge.derived_value(s, kind, d.rng, taken, rec.cls) if kind in knowledge.DERIVED_KINDS
                       else (kind == "password" and tied_password(s, renames, d.rng))
                       or fresh(s, kind, d.rng, taken, rec.cls, pronoun=_pronoun(all_text)))
                if new is not None and not Substitution({s: "\0"}).found(new):
                    # never a new value holding the old one ('update the system' -> 'update the system software',
                    # 'report1.txt' -> 'sales_report1.txt'): the old words would survive inside it
                    renames[s] = new
                    taken.add(new)
            if rec.name == "fillFuelTank" and fills_to_capacity(
                    "VehicleControlAPI", seed.initial_config.get("VehicleControlAPI", {}).get("fuelLevel", 0) or 0, d.trace):
                continue  # "fill it up": the amount is what the tank lacks
            # stated numbers get new values on every attempt: drawn only on the first (or a forced draw), a sample the
            # verdict sent back (a sibling copy, a kept sentence) came back with the seed's amounts ('50 shares',
            # '$5,000' in base_142's accepted variant, read 56): 68 of the 74 accepted on a later attempt kept them
            if (src is not None and src.source == "user"
                    and isinstance(value, int | float) and not isinstance(value, bool) and abs(value) > 1
                    and not d.feeds_composed_number(value)
                    and (key := _fresh_key(d, bound, numbers, rec.turn, value)) is not None and d.p(0.9)):
                numbers[key] = perturb(value, d.rng, grow=(rec.name, param) in _GROWABLE)
            elif _stated_numbers(d, rec, value, src):  # a list the user dictates ('average 45.99, 78.25 and 102.5')
                for x in value:
                    if (key := _fresh_key(d, bound, numbers, rec.turn, x)) is not None:
                        numbers[key] = perturb(x, d.rng)
            elif (rec.name, param) in _RANGED and isinstance(value, int) \
                    and (key := _fresh_key(d, bound, numbers, rec.turn, value)) is not None and d.p(0.9):
                low, high = _RANGED[(rec.name, param)]
                numbers[key] = d.pick([n for n in (value - 1, value + 1) if low <= n <= high], f"{param}|{value}")
    numbers.update(limit_numbers(d, bound, numbers))  # 'if it's below 40': the user's own threshold changes too
    # first or last names stated on their own, of a person renamed above
    for name, new in {**first_names, **last_names}.items():
        renames.setdefault(name, new)
    # distractor entries of the file system (never referenced by the plan or the text)
    if d.attempt < 2 and not d.composed and "GorillaFileSystem" in seed.initial_config:
        for name, kind in fs.items():
            if name in renames or name.lower() in all_text.lower() or hardcoded(name, ["GorillaFileSystem"], seed.long_context):
                continue
            if any(name in s for s in arg_strings) or d.rng.random() < 0.5:
                continue
            k = kind_of(name, None, None, kind)
            new = fresh(name, k, d.rng, taken) if k else None
            if new is not None:
                renames[name] = new
                taken.add(new)
    _digit_companions(renames, config_strings)
    _untangle(renames, d.rng, taken, fs)
    if re.search(r"\balphabetic", all_text, re.I):
        _keep_order(renames, fs)
    option_swaps = sorted(swaps)  # documented options (a sector, a class): dropped before the entities are
    # entity swaps on every attempt: a later attempt that kept the seed's entities would be new only in
    # digits (the verdict's novelty:digits_only), so it draws other entities instead (another sibling slot)
    city_pair_swap(d, bound, swaps)
    stock_swap(d, bound, swaps)
    route_swap(d, bound, swaps)
    dictated_swap(d, bound, renames, swaps)
    for old in [o for o in renames if o in swaps]:
        del renames[old]  # a stock swapped for another the environment lists is not also renamed (read 10: the plan
        # held AAPL -> ZETA beside AAPL -> NEPT)
    substitutions = skill_method_swaps(d, bound)
    phrases += [{"turn": m["turn"], "phrases": m["phrases"]} for m in substitutions]
    return {"renames": renames, "swaps": swaps, "numbers": numbers, "substitutions": substitutions, "phrases": phrases,
            "option_swaps": option_swaps}


_NAME_KINDS = frozenset({"person", "first_name", "last_name"})


def _fresh_key(d: Draw, bound: list[tuple[Any, dict[str, Any]]], numbers: dict[str, Any], turn: int, value: float
               ) -> str | None:
    """The plan's key for a new ``value`` (:func:`_number_key`) where the text states it by ``turn`` and no change drawn
    so far takes it; None otherwise. One test for a stated amount, an item of a dictated list and a numbered choice."""
    if any(k.partition("|")[0] == repr(value) for k in numbers) or not has_number(d.text_upto(turn), value):
        return None
    return _number_key(d, bound, value)


def _stated_numbers(d: Draw, rec: Any, value: Any, src: Any) -> bool:
    """``value`` is a list of numbers the user states (scenario 161 averaged the seed's own five prices in every
    variant), none of them a piece of a composed value, in a first draw."""
    return (src is not None and src.source == "user" and isinstance(value, list)
            and len(value) > 1 and all(isinstance(x, int | float) and not isinstance(x, bool) for x in value)
            and not any(d.feeds_composed_number(x) for x in value) and d.p(0.9))


def _keys_with(obj: Any, key: str) -> list[str]:
    """The dict keys equal to ``key`` anywhere in ``obj`` (record ids: an order 12345, a ticket '7')."""
    if isinstance(obj, dict):
        return [k for k in obj if k == key] + [x for v in obj.values() for x in _keys_with(v, key)]
    if isinstance(obj, list | tuple):
        return [x for v in obj for x in _keys_with(v, key)]
    return []


def _digit_companions(renames: dict[str, str], config_strings: set[str]) -> None:
    """An id renamed with new digits ('card_6789' -> 'card_2623') takes its digit runs of four or more along
    wherever the config writes them on their own (the card number ending '-6789'): a renamed card whose
    number still ends in the old digits is two cards at once."""
    for old, new in list(renames.items()):
        if re.sub(r"\d", "#", old) != re.sub(r"\d", "#", new) or old.isdigit() or ISO_DATE.match(old):
            continue  # (a date's year is no id's digits: other dates of the state share it)
        for o_run, n_run in zip(re.findall(r"\d+", old), re.findall(r"\d+", new), strict=False):
            if len(o_run) < 4 or o_run in renames or o_run == n_run:
                continue
            for c in config_strings:  # a card number written without separators ends with the run
                if c != old and c not in renames and re.fullmatch(r"[\d\s\-*]+", c) and c.endswith(o_run):
                    renames[c] = c[: -len(o_run)] + n_run
            # the run as a group of a longer value ('1234-5678-9012-6789'), not a value of its own (a transaction
            # id '12345' is another record's id, not a companion of the token '12345-67890')
            if any(c != old and c != o_run and re.search(rf"(?<![A-Za-z0-9]){o_run}(?![A-Za-z0-9])", c)
                   for c in config_strings):
                renames[o_run] = n_run


def _pronoun(text: str) -> str | None:
    """'he' or 'she' when the text refers to someone only that way ('add him to the group'), else None."""
    he = bool(re.search(r"\b(?:he|him|his|himself)\b", text, re.I))
    she = bool(re.search(r"\b(?:she|her|hers|herself)\b", text, re.I))
    return "he" if he and not she else "she" if she and not he else None


def _renamable_in_context(value: str, kind: str, text: str, strings: set[str]) -> bool:
    """An address whose city the text names on its own ('a spot in Berkeley') gets only another street (kind
    ``street``: the new address and the old city would disagree), and one whose street the text names keeps its
    value; a name that is an everyday word ('archive', 'notes') keeps it when
    free text uses the word too ('Managed to archive ...'), or the rename would rewrite that sentence."""
    if kind in ("address", "street"):
        rest = text.replace(value, " ")  # what the text says besides the address itself
        parts = [x.strip() for x in value.split(",")]
        return not any(len(p) >= 4 and re.search(rf"\b{re.escape(p)}\b", rest, re.I)
                       for p in (parts if kind == "address" else parts[:1]))
    if kind == "file" and _described(value, text):
        return False
    if value.isalpha() and value.islower():
        if len(value) > 4 and value.endswith("s") and re.search(rf"\b{re.escape(value[:-1])}\b", text, re.I):
            return False  # 'the Archived directory in document folder' for 'documents': the rename would miss it
        return not any(x != value and re.search(rf"\b{re.escape(value)}\b", x, re.I) for x in strings)
    return True


def _kind_pointer(value: str, fs: dict[str, str], text: str) -> bool:
    """A file the text points at only by its kind ('Copy all the text files of the 'Quarter1_Reports' directory',
    base_18) and never by a word of its name: renamed, it keeps its extension (:func:`value_kinds.fresh`), so the
    pointer still takes it in. 'History101.txt' and 'History202.txt' had stayed in all eight samples of scenario 18."""
    stem, dot, _ = value.rpartition(".")
    if fs.get(value) != "file" or not dot:
        return False
    rest = re.sub("|".join(re.escape(n) for n in sorted(fs, key=len, reverse=True)), " ", text)  # names are no words
    return not any(re.search(rf"\b{re.escape(w)}", rest, re.I) for w in re.findall(r"[A-Za-z]{4,}", stem))


def _described(file_name: str, text: str) -> bool:
    """The text also names the file in words, a word of its stem (its first five letters) before its last one: 'According
    to the whole financial report, ...' beside 'finance_report.txt'. Renamed 'travel_report.txt', the words named
    another file (read 51 #13), and renaming them too broke the sentence's reworded forms; the name stays. Words that
    spell the stem exactly ('the final report' for 'final_report.pdf') are not such a description: the rename's own
    forms (:func:`~rods_agents.variation.seed_anchor.string_forms`) carry them, and the name had stayed in all eight
    samples of base_0's scenario."""
    stem = file_name.rsplit(".", 1)[0]
    words = [w.lower() for w in re.findall(r"[A-Z]?[a-z]+", stem)]
    rest = text.replace(file_name, " ")
    rest = re.sub(rf"(?<![A-Za-z0-9]){re.escape(' '.join(re.split(r'[_-]+', stem)))}(?![A-Za-z0-9])", " ", rest,
                  flags=re.I)
    return len(words) >= 2 and any(
        len(w) >= 5 and re.search(rf"\b{re.escape(w[:5])}\w*\s+{re.escape(words[-1])}\b", rest, re.I)
        for w in words[:-1])


def _keep_order(renames: dict[str, str], fs: dict[str, str]) -> None:
    """The new names of renamed files keep the old names' alphabetical order among themselves: 'the alphabetically
    first file' (base_13) still points at the file the plan reads. Only the new names are permuted."""
    groups: dict[tuple[str, str], list[str]] = {}
    for o in renames:  # among names of one kind and extension: a text file stays a text file ('all the text files')
        if fs.get(o) in ("file", "directory"):
            groups.setdefault((fs[o], o.rpartition(".")[2] if "." in o else ""), []).append(o)
    for olds in groups.values():
        old = sorted(olds)
        new = sorted(renames[o] for o in old)
        renames.update(zip(old, new, strict=True))


def _ticker_renamable(symbol: str, text: str) -> bool:
    """Only a ticker the text spells out, and whose company it does not name: 'the one making GPUs' or 'Apple,
    with symbol AAPL' would point at nothing (or at two stocks) after a new ticker."""
    company = ticker_companies().get(symbol)
    named = company is not None and re.search(rf"\b{re.escape(company.split()[0])}", text, re.I)  # 'Alphabet' too
    return bool(re.search(rf"\b{re.escape(symbol)}\b", text)) and not named


def _number_key(d: Draw, bound: list[tuple[Any, dict[str, Any]]], value: float) -> str | None:
    """The plan's key for a new ``value``: ``repr(value)`` where every turn saying it has a call taking it
    (:func:`_number_only_for_arguments`); ``repr(value)|unit`` where the turns taking it say it with one unit and
    the others say it only with other units (base_84 fills '30 gallons' and checks for 'less than 30.0 psi': the
    fill may change, the threshold stays); None otherwise."""
    if _number_only_for_arguments(d, bound, value):
        return repr(value)

    def units(turn: int) -> set[str]:
        return {unit_after(d.turn_text[turn], m.end()) for m in number_matches(d.turn_text[turn], value)}

    taking = {rec.turn for rec, args in bound if any(value in scalar_numbers(v) for v in args.values())}
    said = [t for t, text in enumerate(d.turn_text) if has_number(text, value)]
    own = set().union(*(units(t) for t in said if t in taking)) if taking else set()
    if len(own) != 1 or "" in own or any(_said_with(x, value, own) for _r, args in bound
                                          for x in _scalar_strings(list(args.values()))):
        return None  # a text argument saying it with the same unit, or none, would take the new number too; one
        # saying it with another unit keeps it ('top it up with 30 gallons' beside a tweet's 'Rear Left Tire: 30 PSI',
        # base_75, whose 30 gallons were kept in every sample)
    if all(t in taking or not units(t) & own and "" not in units(t) for t in said):
        return f"{repr(value)}|{own.pop()}"
    return None


def _said_with(text: str, value: float, units: set[str]) -> bool:
    """``text`` says ``value`` (in digits or words) followed by one of ``units`` or by no unit word."""
    found = [*number_matches(text, value), *word_number_matches(text, value)]
    return any(unit_after(text, m.end()) in units | {""} for m in found)


def _number_only_for_arguments(d: Draw, bound: list[tuple[Any, dict[str, Any]]], value: float) -> bool:
    """A number may change only where every turn that says it has a call (in that turn or, for a withheld
    value, the next) taking it as an argument: 'show the last 10 lines' over ``tail(file)`` (10 is its
    default) must keep its 10, or the text no longer determines the ground truth. A number inside a text
    argument ('Rear Left Tire: 30 PSI', built from a result) stays too: the result would not follow."""
    def carried(turn: int) -> bool:
        return any(rec.turn in (turn, turn + 1) and any(value in scalar_numbers(v) or _dictated_with(d, rec, p, v, value)
                                                        for p, v in args.items())
                   for rec, args in bound)
    inside_text = any(has_number(x, value) and not _dictated_with(d, rec, p, x, value)
                      for rec, args in bound for p, v in args.items() for x in _scalar_strings(v))
    return not inside_text and all(carried(t) for t, text in enumerate(d.turn_text) if has_number(text, value))


def _dictated_with(d: Draw, rec: Any, param: str, value: Any, number: float) -> bool:
    """``value`` is a text the user dictates word for word (quoted in a turn) holding ``number``: 'a canceled buy
    order for 100 shares of AAPL' in a ticket's description (base_110). The number changes in the quote and in the
    argument alike, so it may change; 100 shares were kept in all 8 samples of scenario 110."""
    src = d.sources.get((rec.turn, rec.index, param))
    return (isinstance(value, str) and src is not None and src.source == "user" and has_number(value, number)
            and any(value in text for text in d.turn_text))


def _untangle(renames: dict[str, str], rng: Any, taken: set[str], fs: dict[str, str]) -> None:
    """A new name must not contain another renamed old name ('release_notes.txt' while 'notes' is
    renamed): redraw it, or keep the old value when no other name is found."""
    for old in list(renames):
        others = Substitution({o: "\0" for o in renames if o != old and len(o) >= 3})
        tries = 0
        while others.found(renames[old]) and tries < 6:
            kind = kind_of(old, None, None, fs.get(old)) or "folder"
            new = fresh(old, kind, rng, taken) if kind not in ("first_name", "last_name") else None
            tries += 1
            if new is None:
                break
            renames[old] = new
            taken.add(new)
        if others.found(renames[old]):
            del renames[old]


def apply_changes(seed: Task, bound: list[tuple[Any, dict[str, Any]]], changes: dict[str, Any]
                  ) -> tuple[list[list[str]], dict]:
    renames, swaps, numbers = changes["renames"], changes["swaps"], changes["numbers"]
    sub = Substitution(renames)
    sub_gt = Substitution({**renames, **swaps})  # a swapped city inside a dictated tweet changes as in the text
    sub_of = {(s["turn"], s["index"]): s["to"] for s in changes["substitutions"]}
    exact = {**renames, **swaps}
    gt: list[list[str]] = [[] for _ in seed.ground_truth]
    for rec, args in bound:
        name = sub_of.get((rec.turn, rec.index), rec.name)
        new_args = {k: _replace(v, exact, sub_gt, numbers) for k, v in args.items()}
        gt[rec.turn].append(to_call_string(name, new_args))
    config = sub.obj(with_default_users(seed, copy.deepcopy(seed.initial_config), renames))
    _renumber_ids(config, numbers)
    trading = config.get("TradingBot")
    _list_swapped_sectors(trading, swaps)
    if isinstance(trading, dict) and isinstance(trading.get("watch_list"), list):
        # a swapped stock keeps its place on the watchlist: 'one that's making GPUs' among the stocks I watch is the
        # new stock only where the list holds it (base_108); the stock tables stay the environment's
        listed = trading["watch_list"]  # never a stock listed twice: one already there stays as it is (read of 2026-12-05)
        trading["watch_list"] = [swaps[x] if isinstance(x, str) and x in swaps and swaps[x] not in listed else x
                                 for x in listed]
    return gt, config


def _list_swapped_sectors(trading: Any, swaps: dict[str, str]) -> None:
    """A swapped sector's stocks in the state's price table (in place): TradingBot lists F and GM under 'Automobile'
    but prices neither, so a variant reading 'the third stock in the list' of the new sector could not look it up, and
    every plan swapping 'Technology' failed (14 of 19 variants that look a sector up kept it; reads 62 and 63). Rows
    from ``listed_stock_rows`` in ``prompts/bfcl/offline_value_kinds.json``, only for stocks the table lacks."""
    stocks = trading.get("stocks") if isinstance(trading, dict) else None
    lists = sector_lists()
    new_sectors = {new for old, new in swaps.items() if old in lists and new in lists}
    if not isinstance(stocks, dict) or not new_sectors:
        return
    rows = {k: v for k, v in pools().get("listed_stock_rows", {}).items() if not k.startswith("_")}
    for symbol in (x for sector in new_sectors for x in lists[sector]):
        if symbol not in stocks and symbol in rows:
            stocks[symbol] = copy.deepcopy(rows[symbol])


def with_default_users(seed: Task, config: dict, renames: dict[str, str]) -> dict:
    """``config`` (in place, and returned) holding MessageAPI's default user map, and its default inbox, where
    ``renames`` renames a default user or id: the new state names its users itself, so the renames reach them (the
    offline plan and an LLM plan that departs from it alike: a renamed 'USR001' left the login nobody to log in)."""
    users = default_users(seed)
    if any(u in renames or i in renames for u, i in users.items()):
        config.setdefault("MessageAPI", {})["user_map"] = dict(users)
    if "MessageAPI" in seed.involved_classes and any(i in renames for i in _message_default_ids()):
        config.setdefault("MessageAPI", {}).setdefault("inbox", _message_default_inbox())  # the default messages'
        # senders, renamed with them
    return config


def _renumber_ids(obj: Any, numbers: dict[str, Any]) -> None:
    """A record id the plan renumbers is renumbered in the state too (in place): base_160 closes ticket 83912, and a
    plan taking it to 95245 closed a ticket the queue did not hold, so every level of the plan with numbers failed
    and the task's other numbers (the 20,000 RMB, the $2500 cap) stayed the seed's in all 8 samples."""
    if isinstance(obj, list):
        for v in obj:
            _renumber_ids(v, numbers)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(v, int) and not isinstance(v, bool) and (k == "id" or k.endswith("_id")):
                new = numbers.get(repr(v))
                obj[k] = int(new) if isinstance(new, int | float) and float(new).is_integer() else v
            else:
                _renumber_ids(v, numbers)


def default_users(seed: Task) -> dict[str, str]:
    """MessageAPI's default users (name -> id) when the seed's state leaves its user map to the environment's
    default: renaming one ('Bob' -> 'Rosa') writes the whole map into the variant's state, so another person
    is known to the environment, consistently, instead of a name the environment hard-codes."""
    if "MessageAPI" not in seed.involved_classes or "user_map" in seed.initial_config.get("MessageAPI", {}):
        return {}
    return dict(_message_default_users())


@lru_cache(maxsize=1)
def _message_default_users() -> tuple[tuple[str, str], ...]:
    return tuple(sorted(_message_defaults().user_map.items()))


@lru_cache(maxsize=1)
def _message_default_ids() -> frozenset[str]:
    return frozenset(i for _name, i in _message_default_users())


def _message_default_inbox() -> list[dict[str, str]]:
    return copy.deepcopy(_message_defaults().inbox)


@lru_cache(maxsize=1)
def _message_defaults() -> Any:
    from envs.bfcl_data import env_class

    api = env_class("MessageAPI")()
    api._load_scenario({}, long_context=False)
    return api


__all__ = ["apply_changes", "default_users", "draw_changes", "with_default_users"]
