"""Write into a ground truth the lookups its text leaves to the assistant.

Some BFCL ground truths use a value the assistant can only know by looking, and never look:
'the alphabetically first file in that directory' -> ``tail(file_name='digest.txt')`` with no
``ls``; 'the most recent ticket' -> ``get_ticket(ticket_id=1)`` with no listing; 'message Soren'
-> ``send_message(receiver_id='USR002')`` with no ``get_user_id``; 'fill the tank up' ->
``fillFuelTank(fuelAmount=45.0)`` with no fuel reading. A variant keeps its seed's information
structure, so it keeps these gaps too, and a careful reader then finds its ground truth making a
call nobody could make from the text alone (read 32: five of eleven borderline pairs).

A careful person makes the lookup; :func:`write_lookups` writes it in, just before the call that
needs it: the read-only call of an involved class that, run at that point, prints the value
(``ls()``, ``get_user_id(user='Soren')``, ``get_nearest_airport_by_city(location='Rivermist')``,
``displayCarStatus(option='fuel')`` for the level a 'fill it up' amount is worked out from).
BFCL's checker then requires that lookup's result, as it does wherever BFCL's own ground truths
list one. What a model knows without looking is left alone: a well-known airport named by its city
(Los Angeles for LAX) and a household company's ticker (Tesla for TSLA). The text, the final state
and every other call are unchanged, which the function checks before it returns a new task.
"""

from __future__ import annotations

import ast
import copy
import json
from typing import Any

from pydantic import BaseModel

from envs.executor import Environment, parse_call, serialize_result, to_call_string
from envs.task import Task
from rods_agents.analysis.catalog import build_catalog
from rods_agents.analysis.obtainability import camel_words, public_states, recipe_pieces, state_hints
from rods_agents.analysis.skills import call_kind
from rods_agents.analysis.tracing import Trace, error_of, trace_task
from rods_agents.analysis.value_sources import (
    WELL_KNOWN_AIRPORTS,
    airport_cities,
    classify_arguments,
    enum_values,
    household_tickers,
    ticker_companies,
    user_text_upto,
)

MAX_LOOKUPS = 8


class WrittenLookup(BaseModel):
    """One lookup written into a ground truth: where, which call, and the value it reveals to which call."""

    turn: int
    index: int
    call: str
    reveals: str
    for_call: str

    def describe(self) -> str:
        return f"turn {self.turn}: {self.call} reveals {self.reveals} for {self.for_call}"


def known_without_looking(value: Any) -> bool:
    """A value a model knows before it looks: a well-known airport's code, a household company's ticker."""
    return isinstance(value, str) and (value in WELL_KNOWN_AIRPORTS or value in household_tickers())


def _keyed_leaves(obj: Any, key: str = "") -> list[tuple[str, Any]]:
    if isinstance(obj, dict):
        return [(key, k) for k in obj] + [x for k, v in obj.items() for x in _keyed_leaves(v, str(k))]
    if isinstance(obj, list | tuple):
        return [x for v in obj for x in _keyed_leaves(v, key)]
    return [(key, obj)]


def prints(result: str, value: Any, key: str = "") -> bool:
    """True when a call's serialized result holds ``value`` as one whole leaf (not inside a longer string);
    with ``key`` ('fuel level'), only a leaf stored under that name counts (a number is not the fuel level
    because a temperature happens to equal it)."""
    try:
        leaves = _keyed_leaves(json.loads(result))
    except (json.JSONDecodeError, TypeError):
        try:  # a list result is serialized as Python's repr (TicketAPI.get_user_tickets)
            leaves = _keyed_leaves(ast.literal_eval(result))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return False
    if isinstance(value, bool):
        return False
    leaves = [x for k, x in leaves if not key or camel_words(k) == key]
    if isinstance(value, int | float):
        return any(isinstance(x, int | float) and not isinstance(x, bool) and float(x) == float(value) for x in leaves)
    return any(isinstance(x, str) and x == value for x in leaves) or any(str(x) == value for x in leaves
                                                                         if isinstance(x, int))


def _names(value: Any, text: str, hint_phrases: list[str]) -> list[str]:
    """What the text calls ``value`` by, for a lookup that takes a name: the city, the company, the user map's key."""
    out = []
    if isinstance(value, str):
        out += [n for n in (airport_cities().get(value), ticker_companies().get(value)) if n]
    out += hint_phrases
    low = text.lower()
    return [n for n in dict.fromkeys(out) if n.lower() in low]


def _candidates(task: Task, turn: int, names: list[str]) -> tuple[list[str], list[str]]:
    """Read-only calls the assistant could make at ``turn``, most specific first: those taking a name the
    text says, then those taking no argument (or one chosen from a short list of options)."""
    held = {f for k, fs in task.missed_function.items() if k > turn for f in fs}
    named, plain = [], []
    for spec in build_catalog().methods.values():
        if spec.cls not in task.involved_classes or spec.name in held:
            continue
        if spec.role not in ("read", "compute") or (spec.role == "compute" and call_kind(spec.name) != "lookup"):
            continue
        required = [p for p in spec.params if p.required]
        if not required:
            plain.append(to_call_string(spec.name, {}))
        elif len(required) == 1 and enum_values(spec.name, required[0].name):
            plain += [to_call_string(spec.name, {required[0].name: e}) for e in enum_values(spec.name, required[0].name)]
        elif len(required) == 1 and required[0].type in ("string", "str"):
            named += [to_call_string(spec.name, {required[0].name: n}) for n in names]
    return named, plain


def _find_lookup(env: Environment, task: Task, turn: int, value: Any, key: str, names: list[str]) -> str | None:
    """A candidate that, run on a copy of ``env``, succeeds without changing it and prints ``value``: the first
    lookup by a name the text says (the one a person makes), else the one printing the least."""
    named, plain = _candidates(task, turn, names)
    for call in named:
        if _reveals(env, call, value, key) is not None:
            return call
    found = [(len(r), k, call) for k, call in enumerate(plain) if (r := _reveals(env, call, value, key)) is not None]
    return min(found)[2] if found else None


def _reveals(env: Environment, call: str, value: Any, key: str) -> str | None:
    """The result of ``call`` run on a copy of ``env`` when it prints ``value`` and changes nothing, else None."""
    trial = copy.deepcopy(env)
    before = trial.state()
    try:
        result = serialize_result(trial.call(parse_call(call)))
    except Exception:  # noqa: BLE001 - a candidate that fails is simply not the lookup
        return None
    if error_of(result) or not prints(result, value, key) or trial.state() != before:
        return None
    return result


def _env_before(task: Task, turn: int, index: int) -> Environment:
    env = Environment(task.involved_classes, task.initial_config, task.long_context)
    for t, calls in enumerate(task.ground_truth[: turn + 1]):
        for i, call in enumerate(calls):
            if (t, i) == (turn, index):
                return env
            env.execute(call)
    return env


def _needs(task: Task, trace: Trace) -> list[tuple[int, int, Any, str]]:
    """(turn, index, value, key) of every value an argument needs that the assistant must look up and no earlier
    call printed; ``key`` is, for a number read off the state, the state field it is ('fuel level')."""
    states = public_states(task)
    out = []
    pos = {(r.turn, r.index): k for k, r in enumerate(trace.calls)}
    for a in classify_arguments(task, trace):
        rec = trace.calls[pos[(a.turn, a.index)]]
        earlier = [r.result for r in trace.calls[: pos[(a.turn, a.index)]]]
        value = rec.args.get(a.param)
        wanted: list[tuple[Any, str]] = []
        if a.source == "state" or (a.source == "call" and _coincidental_id(a.param, value, trace.calls[a.producer].result)):
            wanted = [(v, "") for v in (value if isinstance(value, list) else [value]) if not known_without_looking(v)]
        elif a.source == "composed" and isinstance(value, int | float) and not isinstance(value, bool):
            pieces = recipe_pieces(value, user_text_upto(task, a.turn), earlier, states.get(rec.cls or "", {}), rec.name)
            wanted = [(n, where.removeprefix("the current ")) for n, where in pieces or []
                      if where.startswith("the current ")]
        out += [(a.turn, a.index, v, key) for v, key in wanted if not any(prints(r, v, key) for r in earlier)]
    return out


def _coincidental_id(param: str, value: Any, result: str) -> bool:
    """An id read as printed by an earlier call only because its digits appear there under another name: ticket 1
    is no 'amount': 1 of an order's details (long_context_125's 'the most recent ticket', which then got no lookup)."""
    if not (param == "id" or param.endswith("_id")) or isinstance(value, bool) or not isinstance(value, int | str):
        return False
    try:
        leaves = _keyed_leaves(json.loads(result))
    except (json.JSONDecodeError, TypeError):
        return False
    return not any(str(x) == str(value) and "id" in camel_words(k).split() for k, x in leaves)


def write_lookups(task: Task) -> tuple[Task, list[WrittenLookup]]:
    """``task`` with the lookups its text needs written into its ground truth (see the module docstring),
    and what was written; the task itself when nothing is needed or the result would not hold."""
    trace = trace_task(task)
    if trace.errors:
        return task, []
    done: set[tuple[int, int, str]] = set()
    out = task.model_copy(deep=True)
    written: list[WrittenLookup] = []
    while len(written) < MAX_LOOKUPS:
        need = next((n for n in _needs(out, trace) if (n[0], n[1], repr(n[2])) not in done), None)
        if need is None:
            break
        turn, index, value, key = need
        done.add((turn, index, repr(value)))
        rec = next(r for r in trace.calls if (r.turn, r.index) == (turn, index))
        states = public_states(out)
        phrases = [h.phrase for h in state_hints(value, rec, states.get(rec.cls or "", {}), "value")
                   if h.kind in ("lookup", "key")]
        call = _find_lookup(_env_before(out, turn, index), out, turn, value, key,
                            _names(value, user_text_upto(out, turn), phrases))
        if call is None:
            continue
        out.ground_truth[turn].insert(index, call)
        written.append(WrittenLookup(turn=turn, index=index, call=call, reveals=repr(value), for_call=rec.call[:80]))
        done = {(t, i + 1 if (t == turn and i >= index) else i, v) for t, i, v in done}
        trace = trace_task(out)
    if not written or trace.errors or not _same_end_state(task, out):
        return task, []
    return out, written


def without_lookups(task: Task) -> Task:
    """``task`` as it was judged: the lookups ``provenance['lookups']`` lists taken out again, last written first."""
    written = [WrittenLookup.model_validate(w) for w in (task.provenance or {}).get("lookups") or []]
    if not written:
        return task
    out = task.model_copy(deep=True)
    for w in reversed(written):
        if out.ground_truth[w.turn][w.index] != w.call:
            raise ValueError(f"{task.id}: provenance lookup {w.describe()} is not at turn {w.turn} index {w.index}")
        del out.ground_truth[w.turn][w.index]
    return out


def _same_end_state(task: Task, completed: Task) -> bool:
    """The completed ground truth ends in the same state as the original."""
    a = Environment(task.involved_classes, task.initial_config, task.long_context)
    b = Environment(completed.involved_classes, completed.initial_config, completed.long_context)
    for calls in task.ground_truth:
        a.run(calls)
    for calls in completed.ground_truth:
        b.run(calls)
    return not b.state_diff(a)


__all__ = ["WrittenLookup", "known_without_looking", "prints", "without_lookups", "write_lookups"]
