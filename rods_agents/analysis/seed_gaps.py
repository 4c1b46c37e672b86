"""The values a task's own text gives no way to find, and the gaps a seed leaves that a variant may fill.

:func:`obtainability_problems` lists a candidate's arguments that its text and state give no hint or recipe for
(:mod:`rods_agents.analysis.obtainability`), and the stated fallbacks (a state value stated where the state holds no
hint). :func:`seed_unobtainable` is the same for a seed: a variant keeping the seed's wording is not held to more than
its seed there. :func:`seed_gaps` is that less what a lookup finds, the values no careful reader could find at all
(the ticket miss_func_173 closes, the login base_188 uses): a variant that states one fills its seed's gap
(:func:`gap_fallbacks`, :mod:`rods_agents.variation.unsaid_ids`), and the LLM rewrite is asked to state it too.
Used by the verdict (:mod:`rods_agents.stages.verdict`) and the LLM prompts (:mod:`rods_agents.llm.prompting`).
"""

from __future__ import annotations

import re
from functools import lru_cache

from envs.task import Task
from rods_agents.analysis.information_structure import InformationStructure
from rods_agents.analysis.lookups import write_lookups
from rods_agents.analysis.obtainability import public_state, recomposable, state_hints, state_obtainable
from rods_agents.analysis.profile import Profile, profile_task
from rods_agents.analysis.tracing import Trace, trace_task
from rods_agents.analysis.value_sources import state_values, user_text_upto


def _picked_slots(info: InformationStructure | None) -> set[tuple[int, str, str]]:
    """(turn, method, param) the text itself picks out: a reference with its cue, a transformation with its cue."""
    if info is None:
        return set()
    return ({(r.turn, r.method, r.param) for t in info.turns for r in t.references}
            | {(x.turn, x.method, x.param) for t in info.turns for x in t.transformations if x.cue})


def obtainability_problems(task: Task, trace: Trace, profile: Profile, seed_profile: Profile
                           ) -> tuple[list[str], list[str]]:
    """(unobtainable arguments, stated fallbacks) of a candidate; see :mod:`rods_agents.analysis.obtainability`.

    A value the obtainability rules find no hint or recipe for still counts as obtainable where both the
    variant's text and its seed's pick it out the same way: a reference by position, property or filter
    ("the last order I made") or a transformation with its cue ("in 'number.pdf' format"), as found by
    :mod:`rods_agents.analysis.information_structure` (the seed's human wording, kept by a seed-anchored rewrite)."""
    picked = _picked_slots(profile.information) & _picked_slots(seed_profile.information)
    seed_src = {(a.turn, a.index, a.param): a.source for a in seed_profile.arg_sources}
    pos_of = {(r.turn, r.index): p for p, r in enumerate(trace.calls)}
    strings = state_values(task)[0]
    states: dict[str | None, dict] = {}
    problems: list[str] = []
    fallbacks: list[str] = []
    for a in profile.arg_sources:
        pos = pos_of.get((a.turn, a.index))
        if pos is None:
            continue
        rec = trace.calls[pos]
        value = rec.args.get(a.param)
        if rec.cls not in states:
            states[rec.cls] = public_state(task, rec.cls)
        key = f"turn {a.turn} {a.method}.{a.param}={a.value[:60]}"
        if (a.turn, a.method, a.param) in picked:
            continue
        text = user_text_upto(task, a.turn)
        if a.source == "user" and seed_src.get((a.turn, a.index, a.param)) == "state":
            items = value if isinstance(value, list) else [value]
            if not all(state_hints(v, rec, states[rec.cls], "value") for v in items):
                fallbacks.append(key)  # no unique hint exists in this state: stating it is the documented fallback
        elif a.source == "state" and not state_obtainable(value, rec, states[rec.cls], text):
            problems.append(key + " (no unique hint in the text)")
        elif a.source == "composed" and not recomposable(value, text, [c.result for c in trace.calls[:pos]],
                                                         states[rec.cls], rec.name, strings):
            problems.append(key + " (no recipe from obtainable pieces)")
    return problems, fallbacks


def slot(problem: str) -> str:
    """The argument slot of an obtainability problem: 'turn 1 get_order_details.order_id=12446 (...)' ->
    'turn 1 get_order_details.order_id'."""
    return problem.split("=", 1)[0]


@lru_cache(maxsize=2048)
def _seed_unobtainable(seed_json: str) -> frozenset[str]:
    seed = Task.model_validate_json(seed_json)
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    return frozenset(slot(p) for p in obtainability_problems(seed, trace, profile, profile)[0])


def seed_unobtainable(seed: Task) -> frozenset[str]:
    """Slots the seed's own human wording leaves to the reader with no hint or recipe the rules recognise
    ("one with a substantial order value", "so that my tank is full"): a variant that keeps the seed's
    wording is not held to more than its seed there (like :func:`seed_fails_strict`)."""
    return _seed_unobtainable(seed.model_dump_json())


def gap_fallbacks(seed: Task, profile: Profile) -> list[str]:
    """Stated-fallback keys ('turn T method.param=value') for the values a variant states where its seed reads them
    from the state with no hint its text carries and no call showing them (:func:`seed_unobtainable`): the ticket
    miss_func_173 closes, the login base_188 uses. Stating them fills the seed's gap, so a careful reader can solve
    the variant; it eases no step the seed's text leaves to the assistant, as no step leads there
    (:mod:`rods_agents.variation.unsaid_ids`)."""
    gaps = seed_gaps(seed)
    return [f"turn {a.turn} {a.method}.{a.param}={a.value[:60]}" for a in profile.arg_sources
            if a.source == "user" and f"turn {a.turn} {a.method}.{a.param}" in gaps]


_ID_OR_LOGIN = re.compile(r"(?:_id|^username|^password)$")


@lru_cache(maxsize=2048)
def _seed_gaps(seed_json: str) -> frozenset[str]:
    """:func:`seed_unobtainable` less the slots a lookup finds (base_5's folder 'project', which ``ls()`` shows:
    a variant that states it hands the assistant the lookup), and only ids and logins. The rules find no recipe for
    much a reader works out ('fill 10 liters, 2 decimals of the gallon amount', 'the 15th of next month', a message
    the user describes): stating those would be easier, and LLM trial 8's rewrite was told it must (long_context_81)."""
    seed = Task.model_validate_json(seed_json)
    found = {(w.turn, w.for_call.split("(", 1)[0]) for w in write_lookups(seed)[1]}
    return frozenset(g for g in _seed_unobtainable(seed_json)
                     if (int(g.split(" ", 2)[1]), g.split(" ", 2)[2].split(".", 1)[0]) not in found
                     and _ID_OR_LOGIN.search(g.rsplit(".", 1)[1]))


def seed_gaps(seed: Task) -> frozenset[str]:
    """'turn T method.param' slots of ``seed`` no text, hint, recipe or lookup gives (:func:`_seed_gaps`)."""
    return _seed_gaps(seed.model_dump_json())


__all__ = ["gap_fallbacks", "obtainability_problems", "seed_gaps", "seed_unobtainable", "slot"]
