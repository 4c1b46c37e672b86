"""Human phrasings of the train seeds, indexed by what a turn asks for: the offline backbone's source of
new wording.

Why a bank of human turns rather than templates or the seed's own sentences: a template names every call
(the assistant's implicit steps become explicit, the task gets easier), and the seed's sentences with
values swapped are the seed again (the model has seen them). The ~1,600 human-written turns of the *train*
seeds (:func:`envs.dataset.load_split` ``"train"``; never the test split) already say things the way
BFCL's users say them, and each comes with its ground truth and its information structure
(:mod:`rods_agents.analysis.information_structure`). A turn of *another* scenario that asks for the same
calls, with the same values stated, the same calls left implicit and the same kinds of references and
transformations, re-instantiated on the variant's values (:mod:`rods_agents.variation.transplant`), keeps
the seed turn's difficulty and is new wording.

Each :class:`Donor` is one text turn: the calls it asks for (its own ground truth, or for the turn
before a miss_func reveal, the revealed turn's), per argument its value and where it comes from
(stated, read from a result, from the state, composed), the turn's structure signature, and the
donor task's own entity strings (so a re-instantiated turn never keeps a name of another world).
Values the text states for calls it leaves implicit are *hidden* slots (:func:`explicit_calls`). Runs of
a multi-call turn's own pieces (sentences, or clauses handed over with 'and then', :func:`piece_bounds`)
are donors too. A miss_param withholding turn is banked under its own signature (the withheld
``method.param``, :func:`withholding_calls`), so it words only a turn withholding the same value; the
supplying turn is not banked (the withheld value's placement is the category's mechanics).
"""

from __future__ import annotations

import bisect
import hashlib
import json
import re
from collections import defaultdict
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from envs.classes import resolve
from envs.task import Task
from prompts import load_prompt_json
from rods_agents.analysis import knowledge
from rods_agents.analysis.information_structure import (
    InformationStructure,
    among_candidates,
    information_structure,
    lexicon,
    state_of,
)
from rods_agents.analysis.skills import call_kind
from rods_agents.analysis.tracing import Trace, trace_task
from rods_agents.analysis.value_sources import ArgSource, classify_arguments, is_flag
from rods_agents.run.disk_cache import cached, code_fingerprint


@dataclass(frozen=True)
class Slot:
    """One argument of an asked call: its value (JSON), its source, whether it is a choice said in words."""

    index: int
    param: str
    value: str
    source: str
    flag: bool
    producer: str = ""
    """For a value read from a result: the method whose result singles it out (:func:`singled_producer`), so a
    sentence may point at it as that call's outcome ('the order I just placed'); "" otherwise."""
    recipe: str = ""
    """For a composed value: the named way it is built (:func:`recipe_of`), which a sentence may ask for in its own
    words ('Fill the tank all the way up.'); "" otherwise."""
    sole: bool = False
    """For a value read from the state: the state holds no other of its kind (the one ticket in the queue), so a
    sentence needs no words to pick it ('Show me the ticket.'); set by :func:`mark_sole`."""


@dataclass(frozen=True)
class Donor:
    task_id: str
    scenario: int | str  # BFCL's scenario index, or a user task's own id (knowledge.donor_key)
    turn: int
    text: str
    methods: tuple[str, ...]
    slots: tuple[Slot, ...]
    signature: str
    entities: frozenset[str]
    cues: str = ""


def portable_signature(info: InformationStructure, turn: int) -> str:
    """What a donor turn must share with the turn it replaces besides the calls it asks for: the number of
    conditions, the kinds of references and transformations (the category's withheld value and held-out
    function are placed by the seed, not by the donor; the implicit calls are matched by leaving them out of
    the key, :func:`explicit_calls`)."""
    s = info.signature()[turn]
    return json.dumps({k: s[k] for k in ("conditions", "references", "transformations")}, sort_keys=True)


def explicit_calls(info: InformationStructure, turn: int, methods: tuple[str, ...], slots: tuple[Slot, ...]
                   ) -> tuple[tuple[str, ...], tuple[Slot, ...]]:
    """The calls a turn's text asks for (implicit ones left out: a donor that never names the ``cd`` or the
    brake pedal leaves them to the assistant as the seed did), with their slots re-indexed in that order.

    The values the text states for a call it leaves implicit ('the distance between Rivermist and Greenway'
    for the implicit zip-code lookups, 'in the research directory' for an implicit ``cd``) are kept too, as
    *hidden* slots (negative index, parameter ``method.param``, numbered over the implicit calls): a donor
    that states such values is re-instantiated on the variant's at the same implicit call, and only a donor
    with the same hidden slots words such a turn."""
    return split_calls({c.index for c in info.turns[turn].calls if not c.explicit}, methods, slots)


def split_calls(implicit: set[int], methods: tuple[str, ...], slots: tuple[Slot, ...]
                ) -> tuple[tuple[str, ...], tuple[Slot, ...]]:
    """:func:`explicit_calls` given the indices of the implicit calls. A hidden slot of an implicit call made after
    the turn's first explicit one is named ``method.param@after``: 'What I need is inside the exports folder'
    states the folder of a cd that comes first, and would send the assistant there before a move out of another
    folder (read 7); a donor carries such a value only where its own implicit call comes late too."""
    keep = [i for i in range(len(methods)) if i not in implicit]
    pos = {old: new for new, old in enumerate(keep)}
    hidden = {old: -(k + 1) for k, old in enumerate(i for i in range(len(methods)) if i in implicit)}
    first = keep[0] if keep else len(methods)
    out = [replace(x, index=pos[x.index]) for x in slots if x.index in pos]
    out += [Slot(hidden[x.index], f"{methods[x.index]}.{x.param}{'@after' if x.index > first else ''}", x.value,
                 x.source, x.flag) for x in slots if x.index in hidden and x.source == "user" and not x.flag]
    return tuple(methods[i] for i in keep), tuple(out)


def cue_key(info: InformationStructure, turn: int) -> str:
    """The wording that decides a turn's delicate parts: its references' and transformations' cues (kind and
    words) and its conditions' cues. A donor replaces a turn that has any only where these are the same
    words: "the first" and "the last" are both references by position, and pick different values."""
    s = info.turns[turn]
    return json.dumps({"references": sorted((r.kind, r.cue.lower().strip()) for r in s.references),
                       "transformations": sorted((x.kind, x.cue.lower().strip()) for x in s.transformations),
                       "conditions": sorted(c.cue.lower().strip() for c in s.conditions)}, sort_keys=True)


def segment_signature() -> str:
    """The portable signature of a segment of a turn with no condition, reference or transformation (what a
    donor of that segment alone must match)."""
    return json.dumps({"conditions": 0, "references": [], "transformations": []}, sort_keys=True)


def withholding_signature(method: str, param: str) -> str:
    """The portable signature of a miss_param withholding turn: only a turn withholding the same parameter of
    the same method words it (the category's mechanics stay the seed's)."""
    return json.dumps({"withheld": f"{method}.{param}"}, sort_keys=True)


def withholding_calls(task: Task, trace: Trace, sources: list[ArgSource], info: InformationStructure, turn: int
                      ) -> tuple[tuple[str, ...], tuple[Slot, ...], str] | None:
    """For a miss_param turn that asks for the next turn's calls but leaves one value out (supplied by the
    next turn): the calls its text asks for (explicit by its own words), their slots with the withheld one's
    source ``'withheld'`` (never carried, never stated), and its signature; None for any other turn."""
    w = info.turns[turn].withheld if turn < len(info.turns) else None
    g = turn + 1
    if (w is None or w.supplied_at != g or w.stated_before or g >= len(task.ground_truth) or not task.ground_truth[g]
            or task.ground_truth[turn] or not _user_text(task, turn)):
        return None
    methods, slots = turn_slots(trace, sources, g)
    slots = tuple(replace(x, source="withheld") if (methods[x.index], x.param) == (w.method, w.param)
                  and w.index in (None, x.index) else x for x in slots)
    # the same value under the same name in another call of the turn is as missing ('buy 100 shares of a company'
    # leaves out the symbol of the implicit price lookup and of the order alike, miss_param_124)
    held_values = {x.value for x in slots if x.source == "withheld"}
    slots = tuple(replace(x, source="withheld") if x.param == w.param and x.value in held_values
                  and x.source == "user" else x for x in slots)
    if not any(x.source == "withheld" for x in slots):
        return None
    from rods_agents.analysis.information_structure import _classify_calls

    implicit = {c.index for c in _classify_calls(trace, g, _user_text(task, turn)) if not c.explicit}
    explicit, kept = split_calls(implicit, methods, _fed_by_withheld(trace, g, implicit, slots))
    if not explicit or not any(x.source == "withheld" and x.index >= 0 for x in kept):
        return None
    return explicit, kept, withholding_signature(w.method, w.param)


def _fed_by_withheld(trace: Trace, g: int, implicit: set[int], slots: tuple[Slot, ...]) -> tuple[Slot, ...]:
    """``slots`` with an explicit call's argument marked withheld where an implicit lookup of the withheld value
    produced it: 'my departure point is San Francisco. Could you determine the distance?' leaves out the destination
    city, so the distance's ``cityB`` (the zip code the lookup of that city returns) is as missing as the city is, and
    a sentence for the distance from San Francisco alone asks for the same call (miss_param_56, 85, 96)."""
    held = {x.index for x in slots if x.source == "withheld" and x.index in implicit}
    values = {x.value for x in slots if x.source == "withheld"}
    if not held or any(x.value in values for x in slots if x.index not in implicit):
        return slots  # an explicit call takes the withheld value itself (the stock of a price lookup and an order)
    records = {r.index: r for r in trace.calls if r.turn == g}
    fed = {json.dumps(v, sort_keys=True) for i in held if i in records
           for found in _keyed_result(records[i].result).values() for kind, v in found if kind == "scalar"}
    return tuple(replace(x, source="withheld") if x.index not in implicit and x.source == "call" and x.value in fed
                 else x for x in slots)


def asked_turn(task: Task, turn: int) -> int | None:
    """The ground-truth turn whose calls the text of ``turn`` asks for (None: not a bankable turn)."""
    if not any(m.content.strip() for m in task.turns[turn] if m.role == "user"):
        return None
    if task.category == "miss_param" and (not task.ground_truth[turn] or
                                          (turn > 0 and not task.ground_truth[turn - 1])):
        return None
    if task.ground_truth[turn]:
        return turn
    if turn + 1 in task.missed_function and turn + 1 < len(task.ground_truth) and task.ground_truth[turn + 1]:
        return turn + 1
    return None


def turn_slots(trace: Trace, sources: list[ArgSource], turn: int) -> tuple[tuple[str, ...], tuple[Slot, ...]]:
    """The methods a ground-truth turn calls, in order, and every argument of them as a :class:`Slot`."""
    src = {(a.index, a.param): a for a in sources if a.turn == turn}
    recs = [r for r in trace.calls if r.turn == turn]
    slots = []
    position = {id(r): p for p, r in enumerate(trace.calls)}
    for r in recs:
        for param, value in r.args.items():
            flag = isinstance(value, bool) or is_flag(r.name, param, value)
            a = src.get((r.index, param))
            producer = singled_producer(trace, a.producer, value, position[id(r)]) if a is not None and a.source == "call" \
                else ""
            if not producer and a is not None and a.source == "call" and isinstance(value, list):
                producer = gathered_producer(trace, value, position[id(r)])
            recipe = recipe_of(r.name, param, r.result, value) if a is not None and a.source == "composed" else ""
            slots.append(Slot(r.index, param, json.dumps(value, sort_keys=True), a.source if a else "flag", flag,
                              producer, recipe))
    return tuple(r.name for r in recs), tuple(slots)


def mark_sole(task: Task, trace: Trace, turn: int, slots: tuple[Slot, ...]) -> tuple[Slot, ...]:
    """``slots`` of ground-truth ``turn`` with :attr:`Slot.sole` set on the values read from the state that are not
    one of several candidates there (the test the information structure counts a pick by): 'the most recent ticket
    I opened' picks nothing from a queue of one ticket, so 'Show me the ticket.' asks for the same call. The
    re-measure (:func:`rods_agents.variation.transplant._worded`) still checks the new words single the value out."""
    recs = {r.index: r for r in trace.calls if r.turn == turn}
    states: dict[str | None, Any] = {}
    out = []
    for x in slots:
        rec = recs.get(x.index)
        if x.source == "state" and rec is not None and rec.cls:
            state = state_of(task, rec.cls, states)  # {} where the config cannot load: nothing is known to be sole
            value = json.loads(x.value)
            items = value if isinstance(value, list) else [value]
            if state and items and not any(among_candidates(v, state) for v in items):
                x = replace(x, sole=True)
        out.append(x)
    return tuple(out)


def recipe_of(method: str, param: str, result: str, value: Any = None) -> str:
    """The named recipe (``prompts/bfcl/value_recipes.json``) a composed argument was built by, told by its call's
    result: a fill whose tank then holds its capacity filled it up, whatever the amount ('fill it completely', 'top
    it up to end with 50 gallons'); or by the ``value`` itself: a grep for 'def' looks for the functions a script
    defines ('find out the name of the function of the script'); "" when none is named or the result shows none."""
    recipes = knowledge.value_recipes().get(f"{method}.{param}") or {}
    if not recipes:
        return ""
    by_value = next((name for name, rule in sorted(recipes.items()) if "value" in rule and rule["value"] == value), "")
    if by_value:
        return by_value
    try:
        data = json.loads(result)
    except (TypeError, ValueError):
        return ""
    if not isinstance(data, dict):
        return ""
    return next((name for name, rule in sorted(recipes.items())
                 if rule.get("result") and all(data.get(k) == v for k, v in rule["result"].items())), "")


def _keyed(obj: Any, out: dict[str, list[Any]], in_list: bool = False) -> None:
    """Every scalar of a result under the key that holds it (a list's items under the list's key)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(v, dict):
                _keyed(v, out)
            elif isinstance(v, list):
                out.setdefault(str(k), []).extend(("list", x) for x in v if not isinstance(x, dict | list))
                for x in v:
                    _keyed(x, out, True)
            else:
                out.setdefault(str(k), []).append(("list" if in_list else "scalar", v))


@lru_cache(maxsize=4096)
def _keyed_result(result: str) -> dict[str, tuple[Any, ...]]:
    """:func:`_keyed` of a result string, parsed once (every consuming call re-reads the results before it)."""
    try:
        data = json.loads(result)
    except (TypeError, ValueError):
        data = None
    out: dict[str, list[Any]] = {}
    _keyed(data, out)
    return {k: tuple(v) for k, v in out.items()}


def singled_producer(trace: Trace, producer: int | None, value: Any, consumer: int) -> str:
    """The method of the call at trace position ``producer`` when its result singles ``value`` out for the call
    at position ``consumer``: the value stands on its own under a key (not an item of a list of several), and no result
    before the consumer holds another value under that key. 'Cancel the booking I just made' then points at one
    booking, whatever the state holds; after two bookings, or a booking history, it would not ("" then: the
    seed's words must say which). Only results of the producer's environment count: an order id the trading bot
    returned is no other ticket."""
    if producer is None or not 0 <= producer < consumer or isinstance(value, dict | list | bool) or value is None:
        return ""
    keys = [k for k, found in _keyed_result(trace.calls[producer].result).items()
            if ("scalar", value) in found or found == (("list", value),)]  # a list of one ('travel_cost_list': [2400.0])
    if not keys and _only_path_holds(trace.calls[producer].result, value):
        return trace.calls[producer].name
    if len(keys) != 1:
        return ""
    def same(v: Any) -> str:  # 10 and 10.0 are one fuel level ('gallon_to_liter(gallon=10)' of '{"fuelLevel": 10.0}')
        if isinstance(v, int | float) and not isinstance(v, bool):
            v = float(v)
        return json.dumps(v, sort_keys=True)

    seen: set[str] = set()
    for r in trace.calls[:consumer]:
        if r.cls != trace.calls[producer].cls:
            continue  # an order's 'id' is no second ticket: 'the ticket' points past the trading calls
        seen.update(same(v) for _, v in _keyed_result(r.result).get(keys[0], ()))
    return trace.calls[producer].name if seen == {same(value)} else ""


def _only_path_holds(result: str, value: Any) -> bool:
    """The result lists one path and ``value`` is a part of it: find's one match './data/analysis_report.txt' singles
    out the folder 'data' and the file 'analysis_report.txt' ('Go into the folder where that file turned up'; base_28
    kept its seed's 'Naviagte to that first analysis' in every sample)."""
    if not isinstance(value, str) or not value:
        return False
    items = [v for found in _keyed_result(result).values() for kind, v in found if kind == "list"]
    return len(items) == 1 and isinstance(items[0], str) and "/" in items[0] and value in items[0].strip("./").split("/")


def gathered_producer(trace: Trace, value: list, consumer: int) -> str:
    """The method whose results, in the consumer's turn so far or the turn before it that made calls, hold every
    number of a list ``value``: 'the average of the three numbers obtained' after three ``wc`` counts, 'the highest
    tire pressure' after one ``check_tire_pressure``. A sentence pointing at 'those numbers' then points at them
    (phrasebook ``"from": {"numbers": ["*"]}``); "" where an item is no such result's or two methods gave them (the
    seed's words must say which)."""
    if len(value) < 2 or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        return ""
    turn = trace.calls[consumer].turn
    earlier = [r.turn for r in trace.calls[:consumer] if r.turn < turn]
    recent = [r for r in trace.calls[:consumer] if r.turn == turn or (earlier and r.turn == max(earlier))]
    found = [{v for vals in _keyed_result(r.result).values() for kind, v in vals
              if isinstance(v, int | float) and not isinstance(v, bool)} for r in recent]
    methods = set()
    for item in value:
        by = {r.name for r, nums in zip(recent, found, strict=True) if item in nums}
        if not by:
            return ""
        methods |= by
    return next(iter(methods)) if len(methods) == 1 else ""


def world_strings(task: Task, trace: Trace | None = None) -> set[str]:
    """Every string of a task's world, lower case: its config (keys and leaves), its ground-truth arguments."""
    out: set[str] = set()

    def walk(obj: Any) -> None:
        if isinstance(obj, str):
            out.add(obj.lower())
        elif isinstance(obj, dict):
            for k, v in obj.items():
                if isinstance(k, str):
                    out.add(k.lower())
                walk(v)
        elif isinstance(obj, list | tuple):
            for v in obj:
                walk(v)

    walk(task.initial_config)
    if trace is not None:
        for r in trace.calls:
            walk(list(r.args.values()))
    return {s for s in out if 3 <= len(s) <= 80}


SENTENCE_END = re.compile(r"(?<=[.?!])\s+(?=\S)")
# where a sentence hands over to its next step: 'check the pressure, and then find a shop', '...; then ...'
_CLAUSE_END = re.compile(r"(?:,\s*and then|,\s*then|;\s*(?:and\s+)?(?:then\s+)?|\s+and then)\s+(?=[a-z])")
_LEAD = re.compile(r"^(?:and then|then|and|also)\s+", re.I)
_TRAIL = re.compile(r"[\s,;]*(?:\b(?:and then|then|and))?[\s,;]*$", re.I)


def piece_bounds(text: str) -> list[int]:
    """Where the pieces of a turn start: its sentences, and the clauses a sentence hands over with 'and then',
    ', then' or ';' (never inside a quoted value: a tweet or a message is one value)."""
    from rods_agents.analysis.information_structure import _QUOTED

    quoted = [m.span() for m in _QUOTED.finditer(text)]
    ends = [m.end() for m in SENTENCE_END.finditer(text)]
    ends += [m.end() for m in _CLAUSE_END.finditer(text) if not any(a <= m.start() < b for a, b in quoted)]
    return [0] + sorted(set(ends))


def piece_of(bounds: list[int], position: int) -> int:
    """The index of the piece (:func:`piece_bounds`) that holds character ``position``."""
    return bisect.bisect_right(bounds, position) - 1


def clean_piece(piece: str) -> str:
    """A piece cut at a clause as a sentence of its own: no hand-over words at its ends, a capital first letter."""
    piece = _TRAIL.sub("", _LEAD.sub("", piece.strip()))
    return piece[:1].upper() + piece[1:]


def call_positions(text: str, info: InformationStructure, g: int, slots: tuple[Slot, ...], n: int,
                   ordered: bool = True) -> list[int] | None:
    """Where the text asks for each of the ``n`` explicit calls (the lexicon cue, else a stated value), in
    order; None when a call cannot be placed or the order is not the calls' order. ``ordered=False`` places each
    call wherever it sits (a turn asking for its calls in another order), only where every mention of its words is
    in one piece ('fill' in 'an unfilled tank so round it and fill that in' is one sentence). It cannot tell which
    sentence a condition governs: callers use it only for turns without one (:func:`rods_agents.variation.assembly._units`)."""
    explicit = [c for c in info.turns[g].calls if c.explicit]
    lower, out, start = text.lower(), [], 0
    bounds = piece_bounds(text)
    for i in range(n):
        words = [explicit[i].cue] if i < len(explicit) and explicit[i].cue else []
        words += [str(json.loads(x.value)) for x in slots if x.index == i and x.source == "user"
                  and isinstance(json.loads(x.value), str | int | float)]
        found = [p for w in words if w and (p := lower.find(w.lower(), start)) >= 0]
        if not found:
            return None
        if not ordered:
            every = [m.start() for w in words if w for m in re.finditer(re.escape(w.lower()), lower)]
            if len({piece_of(bounds, p) for p in every}) > 1:
                return None
        elif out:
            # a sentence may name its second call first ('fill the tank with 40 additional liters': the liters are
            # converted, then the tank filled): the call sits in the previous call's piece where its words occur there,
            # not at the next mention ('Round the fill amount ...', the sentence after)
            piece = piece_of(bounds, out[-1])
            lo, hi = bounds[piece], bounds[piece + 1] if piece + 1 < len(bounds) else len(text)
            if any(w and lower.find(w.lower(), lo, hi) >= 0 for w in words):
                found = [out[-1]]
        out.append(min(found))
        start = out[-1] + 1 if ordered else 0
    return out


def partial_donors(task: Task, t: int, text: str, methods: tuple[str, ...], slots: tuple[Slot, ...],
                   info: InformationStructure, g: int, entities: frozenset[str]) -> list[Donor]:
    """Runs of consecutive calls of a multi-call turn with their own sentences: a sentence belongs to the call
    asked for in it, the sentences after it up to the next call's continue it, the sentences before the first
    call introduce it. A run whose first or last sentence also asks for a call outside it is not split off.
    Only turns with no condition, reference or transformation (whose cue could sit in any sentence)."""
    sig = json.loads(portable_signature(info, g))
    if len(methods) < 2 or sig["conditions"] or sig["references"] or sig["transformations"]:
        return []
    positions = call_positions(text, info, g, slots, len(methods))
    if positions is None:
        return []
    bounds = piece_bounds(text)
    sentence_of = [piece_of(bounds, p) for p in positions]
    out = []
    for a in range(len(methods)):
        for b in range(a + 1, len(methods) + 1):
            if (a, b) == (0, len(methods)):
                continue
            if (a > 0 and sentence_of[a - 1] == sentence_of[a]) or (b < len(methods) and sentence_of[b] == sentence_of[b - 1]):
                continue
            lo = 0 if a == 0 else bounds[sentence_of[a]]
            hi = bounds[sentence_of[b]] if b < len(methods) else len(text)
            part = clean_piece(text[lo:hi])
            if asks_other_work(part, methods, methods[a:b]):
                continue  # 'Could you get its present stock performance ... and proceed with purchasing 40 shares'
            run = tuple(replace(x, index=x.index - a) for x in slots if 0 <= a <= x.index < b)
            out.append(Donor(task.id, knowledge.donor_key(task), t, part, methods[a:b], run, segment_signature(), entities,
                             cue_key(info, g)))
    return out


def _states_implicit_values(info: InformationStructure, turn: int, slots: tuple[Slot, ...]) -> bool:
    """The turn's text states a value of a call it leaves implicit ("In research directory, ..." for an
    implicit ``cd('research')``): re-instantiated elsewhere, that value would point at the donor's world."""
    implicit = {c.index for c in info.turns[turn].calls if not c.explicit}
    return any(x.index in implicit and x.source == "user" and not x.flag for x in slots)


def asks_other_work(text: str, all_methods: tuple[str, ...], explicit: tuple[str, ...]) -> bool:
    """The words ask for a call of ``all_methods`` outside ``explicit`` (a navigation or a login aside): a piece of a
    turn cut for one call that asks for another too ('Could you get its present stock performance for me and proceed
    with purchasing 40 shares', cut for the order alone). Re-used for a turn that only places the order, the words
    ask for a lookup its ground truth never makes (read 18, base_142). A folder or a login the words name is a
    hidden value a donor carries as such (:func:`explicit_calls`)."""
    lex = lexicon().methods
    return any(call_kind(m) not in ("navigation", "authentication") and any(p.search(text) for p in lex.get(m, ([], True))[0])
               for m in set(all_methods) - set(explicit))  # a method also inside the piece is its own call's words


def _user_text(task: Task, turn: int) -> str:
    """A donor's words: its user messages, with ``prompts/bfcl/donor_edits.json``'s slips mended."""
    text = "\n".join(m.content for m in task.turns[turn] if m.role == "user").strip()
    for old, new in _donor_edits().items():
        text = text.replace(old, new)
    return text


@lru_cache(maxsize=1)
def _donor_edits() -> dict[str, str]:
    return dict(load_prompt_json("bfcl/donor_edits.json").get("edits", {}))


def turn_bank() -> dict[tuple[str, ...], tuple[Donor, ...]]:
    """The bank of the donors in use: BFCL's train split and the seeds of user classes (knowledge.donor_tasks)."""
    return _turn_bank(knowledge.donor_ids())


@lru_cache(maxsize=2)
def _turn_bank(donor_ids: tuple[str, ...]) -> dict[tuple[str, ...], tuple[Donor, ...]]:
    """Explicit method sequence -> the train turns that ask for exactly those calls: built once (about ten
    seconds), then loaded from the disk cache by later processes (:mod:`rods_agents.run.disk_cache`; keyed by the
    code, the prompts' data, the donor ids and a user class's tasks and source)."""
    tasks = knowledge.donor_tasks()
    users = [t for t in tasks if knowledge.involves_user_class(t)]
    extra = [resolve(c).cls for t in users for c in t.involved_classes if knowledge.is_user_class(c)]
    key = hashlib.sha256("|".join([code_fingerprint(dict.fromkeys(extra)), *donor_ids,
                                   *(t.model_dump_json() for t in users)]).encode()).hexdigest()
    return cached("turn-bank", key, lambda: _build_turn_bank(tasks))


def _build_turn_bank(tasks: tuple[Task, ...]) -> dict[tuple[str, ...], tuple[Donor, ...]]:
    bank: dict[tuple[str, ...], list[Donor]] = defaultdict(list)
    for task in tasks:  # BFCL's train split, then a user class's seeds
        trace = trace_task(task)
        if trace.errors:
            continue
        sources = classify_arguments(task, trace)
        info = information_structure(task, trace, sources)
        entities = frozenset(world_strings(task, trace))
        for t in range(len(task.turns)):
            held = withholding_calls(task, trace, sources, info, t) if task.category == "miss_param" else None
            if held is not None:
                bank[held[0]].append(Donor(task.id, knowledge.donor_key(task), t, _user_text(task, t), held[0], held[1],
                                           held[2], entities, ""))
            g = asked_turn(task, t)
            if g is None:
                continue
            all_methods, all_slots = turn_slots(trace, sources, g)
            methods, slots = explicit_calls(info, g, all_methods, all_slots)
            if not methods:
                continue
            text = _user_text(task, t)
            bank[methods].append(Donor(task.id, knowledge.donor_key(task), t, text, methods, slots,
                                       portable_signature(info, g), entities, cue_key(info, g)))
            if _states_implicit_values(info, g, all_slots):
                continue  # its sentences name values of implicit calls: only the whole turn carries them all
            for part in partial_donors(task, t, text, methods, slots, info, g, entities):
                bank[part.methods].append(part)
    return {k: tuple(v) for k, v in bank.items()}


_NARRATOR = re.compile(r"\b(?:you(?:'re| are| were)\s+(?:driven|eager|keen|curious|interested|resolved)|you've\s+resolved|"
                       r"you'd\s+prefer|your\s+(?:\w+\s+)?(?:account|booking|financial|portfolio|watchlist|itinerary|"
                       r"trading|travel|bakery)\b)", re.I)
"""A few BFCL seeds tell the user's story in the second person ('Post cancellation, you're driven to survey your
financial standing'): their own variants keep that voice, but as a donor for a first-person task such a sentence
reads as a narrator speaking (read 24)."""

_AFTERMATH = re.compile(r"\bwhat(?:'s| is)\s+(?:left|remaining)\b|\bwhat remains\b", re.I)
"""'What's left in the current directory including the hidden files?' asks after a removal in its donor's story; as the
first words of another task it presupposes work nobody did (read 24)."""


def donors_for(methods: tuple[str, ...], signature: str, exclude_scenario: int | str, cues: str | None = None) -> list[Donor]:
    """Bank turns of other scenarios asking for ``methods`` with the same portable signature (and, when
    given, the same cue words); one per distinct text (the four categories of a scenario repeat their turns), none
    told in the second person (:data:`_NARRATOR`) or asking after work of its own story (:data:`_AFTERMATH`)."""
    seen: set[str] = set()
    out = []
    for d in turn_bank().get(methods, ()):
        if d.scenario == exclude_scenario or d.signature != signature or d.text in seen or (
                cues is not None and d.cues != cues) or _NARRATOR.search(d.text) or _AFTERMATH.search(d.text):
            continue
        seen.add(d.text)
        out.append(d)
    return out


__all__ = ["SENTENCE_END", "clean_piece", "piece_bounds", "Donor", "Slot", "asked_turn", "call_positions", "cue_key", "explicit_calls", "segment_signature", "split_calls", "withholding_calls", "withholding_signature", "donors_for", "portable_signature", "turn_bank", "turn_slots",
           "world_strings"]
