"""The skill-level profile of a task: what a variant must keep to stay at its seed's difficulty.

API (stable; the planner, the rewrite, the LLM prompts and the verdict use it):

- ``skill_class(env, method) -> str``: the method's skill class, ``'GorillaFileSystem/relocate'`` for
  ``('GorillaFileSystem', 'mv')``; ``env`` may be ``None`` (looked up in the catalog). Classes are data:
  ``prompts/bfcl/skill_classes.json``; a method the file does not list is a class of its own.
- ``same_skill(a, b) -> bool``: two method names exercise the same skill (``same_skill('cp', 'mv')``).
- ``skill_mates(method) -> list[str]``: the other methods of its class (what a plan may swap it for).
- ``call_kind(method) -> str``: ``navigation`` / ``precondition`` / ``authentication`` / ``lookup`` /
  ``action`` (what the call does for the task when the user leaves it implicit).
- ``skill_profile(task, trace=None, profile=None) -> SkillProfile``: the profile (executes the ground
  truth unless a trace is given; pass a :class:`rods_agents.analysis.profile.Profile` to reuse its value
  sources and information structure).
- ``compare_skill_profiles(seed, variant, stated_fallbacks=()) -> list[str]``: every way ``variant``
  breaks ``seed``'s profile, one reason per finding, each naming the turn, the call and the value:
  ``information_structure:implicit_made_explicit turn=2 call=cd(folder='tmp')``. The kind (before the
  first space) is what a counter groups by: :func:`reason_kind`.
- ``SkillProfile.summary() -> list[dict]``: per turn, in words a prompt can show.

What the profile holds, per turn: each call's skill class and kind, and whether the text asks for it
(explicit) or leaves it to the assistant (implicit); the data flow (an argument printed by an earlier
call, within the turn or across turns, as (turn, index) -> (turn, index) edges); how many argument
values the assistant must find in the explorable state; conditions, references (by kind),
transformations (by kind); the category's mechanics (the withheld value and the turn that supplies it,
the held-out function's class and its reveal turn, empty turns, long context). Function identity is not
part of it: a plan may swap ``cp`` for ``mv`` or ``mean`` for ``standard_deviation``, rename every
entity and change the state, as long as this profile holds and the ground truth executes. Which values
the user states is not compared count for count (a line count needs a file name, a disk usage does
not); a value the seed leaves to discover in the state and the variant states is (it makes the task
easier), with the verdict's stated-fallback exception (:mod:`rods_agents.analysis.obtainability`).
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import Any

import networkx as nx
from pydantic import BaseModel, Field

from envs.task import Task
from rods_agents.analysis import knowledge
from rods_agents.analysis.catalog import build_catalog
from rods_agents.analysis.information_structure import InformationStructure, call_shift, information_structure
from rods_agents.analysis.tracing import Trace, trace_task
from rods_agents.analysis.value_sources import ArgSource, classify_arguments

SKILL_DATA = "bfcl/skill_classes.json"
KINDS = ("navigation", "precondition", "authentication", "lookup", "action")
# a call the lexicon stops seeing asked for is as often a paraphrase the lexicon lacks as a step the text no
# longer asks for (held-out precision on implicit calls 0.53 before tuning, docs/information-structure.md):
# recorded, never a rejection
# a call named in the seed and asked for by its goal in the variant is harder, not easier: recorded too
ADVISORY = frozenset({"information_structure:explicit_made_implicit", "information_structure:named_made_goal"})


# ----------------------------------------------------------------------------- skill classes (data)
@lru_cache(maxsize=1)
def _tables() -> tuple[dict[str, str], dict[str, str], dict[str, list[str]]]:
    """(method -> class id, method -> kind, class id -> methods) from prompts/bfcl/skill_classes.json."""
    data = knowledge.skill_classes()
    of: dict[str, str] = {}
    members: dict[str, list[str]] = {}
    for env, classes in data["classes"].items():
        for name, methods in classes.items():
            cid = f"{env}/{name}"
            members[cid] = list(methods)
            for m in methods:
                of[m] = cid
    kinds = {m: kind for kind, methods in data["kinds"].items() for m in methods}
    return of, kinds, members


def skill_class(env: str | None, method: str) -> str:
    """The skill class of ``method`` (``'<env>/<class>'``); a method not in the data is a class of its own."""
    of = _tables()[0]
    if method in of and (env is None or of[method].split("/", 1)[0] == env):
        return of[method]
    if env is None:
        spec = build_catalog().methods.get(method)
        env = spec.cls if spec else "?"
    return f"{env}/{method}"


def same_skill(a: str, b: str) -> bool:
    """``a`` and ``b`` (method names) exercise the same skill."""
    return a == b or skill_class(None, a) == skill_class(None, b)


def skill_mates(method: str) -> list[str]:
    """The other methods of ``method``'s skill class (what a plan may swap it for)."""
    return [m for m in _tables()[2].get(skill_class(None, method), []) if m != method]


def call_kind(method: str) -> str:
    """What the call does for the task: navigation, precondition, authentication, lookup or action."""
    return _tables()[1].get(method, "action")


def reason_kind(reason: str) -> str:
    """``'information_structure:implicit_made_explicit turn=2 call=cd(...)'`` -> its kind (before the first space)."""
    return reason.split(" ", 1)[0]


# ----------------------------------------------------------------------------- the profile
class SkillCall(BaseModel):
    turn: int
    index: int
    call: str = Field(description="The ground-truth call as written (named in reasons; not compared).")
    method: str = Field(description="Not compared: only its skill class is.")
    skill: str
    kind: str
    explicit: bool
    cue: str | None = None
    by_goal: bool = Field(default=False, description="Asked for only by what it is for, no words naming it.")
    named: bool = Field(default=False, description="Words naming the call ask for it.")


class FlowEdge(BaseModel):
    """A value printed by the call at ``source`` and used as an argument of the call at ``target``
    (positions as (turn, index))."""

    source: tuple[int, int]
    target: tuple[int, int]
    param: str = Field(default="", description="The consuming argument (named in reasons; not compared).")
    value: str = Field(default="", description="The value that flows (named in reasons; not compared).")

    @property
    def key(self) -> tuple[tuple[int, int], tuple[int, int]]:
        return (self.source, self.target)


class TurnSkills(BaseModel):
    turn: int
    calls: list[SkillCall] = Field(default_factory=list)
    discovered: list[str] = Field(default_factory=list, description="'method.param=value' the assistant must find "
                                  "in the explorable state (value source 'state').")
    stated: list[str] = Field(default_factory=list, description="'method.param=value' the user states (not "
                              "compared count for count: named when a discovered value becomes stated).")
    conditions: list[str] = Field(default_factory=list, description="Condition cues.")
    references: list[str] = Field(default_factory=list, description="'kind|method.param|cue' per reference.")
    transformations: list[str] = Field(default_factory=list, description="'kind|method.param|cue' per transformation.")
    unresolved_picks: int = 0
    withheld: str | None = Field(default=None, description="'skill|method.param' the turn withholds (miss_param).")
    withheld_supplied_at: int | None = None
    withheld_stated_before: bool = False
    held_out: list[str] = Field(default_factory=list, description="Skill classes of the functions revealed next turn.")

    def implicit_by_kind(self) -> dict[str, int]:
        return dict(Counter(c.kind for c in self.calls if not c.explicit))

    def asked_by_kind(self) -> dict[str, int]:
        return dict(Counter(c.kind for c in self.calls if c.explicit))


class SkillProfile(BaseModel):
    """What a variant keeps (see the module docstring)."""

    category: str
    long_context: bool = False
    classes: list[str] = Field(default_factory=list)
    empty_turns: list[int] = Field(default_factory=list)
    reveal_turns: list[int] = Field(default_factory=list, description="miss_func: turns that reveal a function.")
    turns: list[TurnSkills] = Field(default_factory=list)
    data_edges: list[FlowEdge] = Field(default_factory=list)
    depth: int = Field(default=0, description="Longest chain of calls linked by data flow (calls).")

    def summary(self) -> list[dict[str, Any]]:
        """Per turn, what must hold, in plain fields (for prompts and reports)."""
        out = []
        for t in self.turns:
            inflow = [e for e in self.data_edges if e.target[0] == t.turn]
            out.append({"turn": t.turn, "skills": [c.skill.split("/", 1)[1] for c in t.calls],
                        "asked_for": t.asked_by_kind(), "implicit": t.implicit_by_kind(),
                        "asked_by_goal_only": [c.skill.split("/", 1)[1] for c in t.calls if c.by_goal],
                        "data_flow_within_turn": sum(e.source[0] == t.turn for e in inflow),
                        "data_flow_from_earlier_turns": sum(e.source[0] < t.turn for e in inflow),
                        "values_found_in_state": len(t.discovered), "conditions": len(t.conditions),
                        "references": sorted(r.split("|", 1)[0] for r in t.references),
                        "transformations": sorted(x.split("|", 1)[0] for x in t.transformations),
                        "withheld": t.withheld, "held_out": t.held_out})
        return out


def _depth(n_calls: int, edges: list[FlowEdge], pos_of: dict[tuple[int, int], int]) -> int:
    if not n_calls:
        return 0
    g = nx.DiGraph()
    g.add_nodes_from(range(n_calls))
    g.add_edges_from((pos_of[e.source], pos_of[e.target]) for e in edges if e.source in pos_of and e.target in pos_of)
    return nx.dag_longest_path_length(g) + 1 if nx.is_directed_acyclic_graph(g) else n_calls


def skill_profile(task: Task, trace: Trace | None = None, profile: Any = None) -> SkillProfile:
    """The skill-level profile of ``task``; ``profile`` (a :class:`~rods_agents.analysis.profile.Profile`
    of the same task and trace) saves recomputing value sources and the information structure."""
    trace = trace if trace is not None else trace_task(task)
    arg_sources: list[ArgSource] = (profile.arg_sources if profile is not None and profile.arg_sources
                                    else classify_arguments(task, trace))
    info: InformationStructure = (profile.information if profile is not None and profile.information is not None
                                  else information_structure(task, trace, arg_sources))
    explicit = {(c.turn, c.index): c for t in info.turns for c in t.calls}
    turns = [TurnSkills(turn=t) for t in range(len(task.ground_truth))]
    pos_of: dict[tuple[int, int], int] = {}
    for pos, rec in enumerate(trace.calls):
        pos_of[(rec.turn, rec.index)] = pos
        ci = explicit.get((rec.turn, rec.index))
        if rec.turn < len(turns):
            turns[rec.turn].calls.append(SkillCall(
                turn=rec.turn, index=rec.index, call=rec.call, method=rec.name, skill=skill_class(rec.cls, rec.name),
                kind=call_kind(rec.name), explicit=bool(ci and ci.explicit), cue=ci.cue if ci else None,
                by_goal=bool(ci and ci.by_goal), named=bool(ci and ci.named)))
    edges: list[FlowEdge] = []
    seen: set = set()
    for a in arg_sources:
        if a.turn >= len(turns):
            continue
        if a.source == "call" and a.producer is not None and a.producer < len(trace.calls):
            p = trace.calls[a.producer]
            e = FlowEdge(source=(p.turn, p.index), target=(a.turn, a.index), param=a.param, value=a.value[:60])
            if e.key not in seen:
                seen.add(e.key)
                edges.append(e)
        elif a.source == "state":
            turns[a.turn].discovered.append(f"{a.method}.{a.param}={a.value[:60]}")
        elif a.source == "user":
            turns[a.turn].stated.append(f"{a.method}.{a.param}={a.value[:60]}")
    for ts in info.turns:
        if ts.turn >= len(turns):
            continue
        out = turns[ts.turn]
        out.conditions = [c.cue for c in ts.conditions]
        out.references = [f"{r.kind}|{r.method}.{r.param}|{r.cue}" for r in ts.references]
        out.transformations = [f"{x.kind}|{x.method}.{x.param}|{x.cue}" for x in ts.transformations]
        out.unresolved_picks = ts.unresolved_picks
        if ts.withheld is not None:
            w = ts.withheld
            out.withheld = f"{skill_class(None, w.method)}|{w.method}.{w.param}"
            out.withheld_supplied_at, out.withheld_stated_before = w.supplied_at, w.stated_before
        if ts.held_out_function:
            out.held_out = sorted({skill_class(None, m) for m in ts.held_out_function.split(",")})
    return SkillProfile(category=task.category, long_context=task.long_context, classes=sorted(task.involved_classes),
                        empty_turns=[t for t, gt in enumerate(task.ground_truth) if not gt],
                        reveal_turns=sorted(task.missed_function), turns=turns, data_edges=edges,
                        depth=_depth(len(trace.calls), edges, pos_of))


# ----------------------------------------------------------------------------- comparison
def _short(call: str, limit: int = 80) -> str:
    call = " ".join(call.split())
    return call if len(call) <= limit else call[:limit - 3] + "..."


def _reason(what: str, turn: int | None = None, call: str | None = None, /, **more: Any) -> str:
    parts = [what]
    if turn is not None:
        parts.append(f"turn={turn}")
    if call:
        parts.append(f"call={_short(call)}")
    parts += [f"{k}={_short(str(v), 60)!r}" if isinstance(v, str) else f"{k}={v}" for k, v in more.items()]
    return " ".join(parts)


def _call_at(p: SkillProfile, pos: tuple[int, int]) -> str:
    t, i = pos
    if t < len(p.turns):
        for c in p.turns[t].calls:
            if c.index == i:
                return c.call
    return f"<turn {t} call {i}>"


def _mechanics(seed: SkillProfile, variant: SkillProfile) -> list[str]:
    out = []
    if seed.category != variant.category:
        out.append(_reason("skill_profile:category", seed=seed.category, variant=variant.category))
    if seed.long_context != variant.long_context:
        out.append(_reason("skill_profile:long_context", seed=seed.long_context, variant=variant.long_context))
    if seed.classes != variant.classes:
        out.append(_reason("skill_profile:classes", seed=",".join(seed.classes), variant=",".join(variant.classes)))
    if len(seed.turns) != len(variant.turns):
        out.append(_reason("skill_profile:turn_count", seed=len(seed.turns), variant=len(variant.turns)))
    for t in sorted(set(seed.empty_turns) ^ set(variant.empty_turns)):
        out.append(_reason("skill_profile:empty_turn", t, seed_empty=t in seed.empty_turns,
                           variant_empty=t in variant.empty_turns))
    if seed.reveal_turns != variant.reveal_turns:
        out.append(_reason("skill_profile:reveal_turn", seed=seed.reveal_turns, variant=variant.reveal_turns))
    return out


def _calls(t: int, s: TurnSkills, v: TurnSkills) -> list[str]:
    out = []
    if len(s.calls) != len(v.calls):
        out.append(_reason("skill_profile:call_count", t, seed=len(s.calls), variant=len(v.calls),
                           seed_calls=", ".join(_short(c.call, 40) for c in s.calls)))
    for sc, vc in zip(s.calls, v.calls, strict=False):
        if sc.skill != vc.skill:
            out.append(_reason("skill_profile:skill_changed", t, vc.call, seed_call=sc.call,
                               seed_skill=sc.skill, skill=vc.skill))
        elif (shift := call_shift(sc, vc)) is not None:
            fields = ({"kind": vc.kind, "cue": vc.cue or ""} if shift == "implicit_made_explicit" else
                      {"kind": vc.kind} if shift == "explicit_made_implicit" else
                      {"seed_cue": sc.cue or "", "cue": vc.cue or ""})
            out.append(_reason(f"information_structure:{shift}", t, vc.call, **fields))
    return out


def _flow(seed: SkillProfile, variant: SkillProfile) -> list[str]:
    out = []
    s_edges = {e.key: e for e in seed.data_edges}
    v_edges = {e.key: e for e in variant.data_edges}
    for key in sorted(set(s_edges) - set(v_edges)):
        e = s_edges[key]
        out.append(_reason("skill_profile:data_flow_dropped", e.target[0], _call_at(variant, e.target),
                           param=e.param, from_turn=e.source[0], from_call=_call_at(variant, e.source),
                           seed_value=e.value))
    for key in sorted(set(v_edges) - set(s_edges)):
        e = v_edges[key]
        out.append(_reason("skill_profile:data_flow_added", e.target[0], _call_at(variant, e.target),
                           param=e.param, from_turn=e.source[0], from_call=_call_at(variant, e.source), value=e.value))
    return out


def _discovered(t: int, s: TurnSkills, v: TurnSkills, fallbacks: int) -> list[str]:
    have = len(v.discovered) + fallbacks
    if have < len(s.discovered):
        # the variant's stated values at this turn that its seed left to find: the slots the seed discovered
        s_slots = {d.split("=", 1)[0] for d in s.discovered}
        v_slots = {d.split("=", 1)[0] for d in v.discovered}
        now = [x for x in v.stated if x.split("=", 1)[0] in s_slots - v_slots] or v.stated[:1]
        call, _, value = (now[0] if now else "=").partition("=")
        return [_reason("information_structure:state_value_stated", t, call or None, value=value,
                        seed_found_in_state=", ".join(s.discovered))]
    if len(v.discovered) > len(s.discovered):
        extra = [d for d in v.discovered if d.split("=", 1)[0] not in {x.split("=", 1)[0] for x in s.discovered}]
        call, _, value = (extra or v.discovered[len(s.discovered):])[0].partition("=")
        return [_reason("information_structure:state_value_added", t, call, value=value)]
    return []


def _parts(entry: str) -> tuple[str, str, str]:
    kind, slot, cue = (entry.split("|", 2) + ["", ""])[:3]
    return kind, slot, cue


def _info(t: int, s: TurnSkills, v: TurnSkills, fallback_slots: set[str]) -> list[str]:
    fallback = bool(fallback_slots)
    out = []
    if len(v.conditions) < len(s.conditions):
        out.append(_reason("information_structure:condition_dropped", t, seed_cue=s.conditions[len(v.conditions)]))
    s_kinds = Counter(_parts(r)[0] for r in s.references)
    v_kinds = Counter(_parts(r)[0] for r in v.references)
    if len(v.references) < len(s.references):
        if not fallback:
            kind, slot, cue = _parts(s.references[len(v.references)])
            out.append(_reason("information_structure:reference_dropped", t, slot, kind=kind, seed_cue=cue))
    elif s_kinds != v_kinds and len(v.references) == len(s.references):
        out.append(_reason("information_structure:reference_kind_changed", t,
                           seed=",".join(sorted(s_kinds.elements())), variant=",".join(sorted(v_kinds.elements()))))
    if v.unresolved_picks > s.unresolved_picks and len(v.references) <= len(s.references):
        out.append(_reason("information_structure:reference_unresolved", t,
                           picks_without_cue=v.unresolved_picks - s.unresolved_picks))
    s_cued = [x for x in s.transformations if _parts(x)[2]]
    v_cued = [x for x in v.transformations if _parts(x)[2]]
    if len(v.transformations) < len(s.transformations) or len(v_cued) < len(s_cued):
        lost = (s.transformations[len(v.transformations)] if len(v.transformations) < len(s.transformations)
                else s_cued[len(v_cued)])
        kind, slot, cue = _parts(lost)
        if cue or slot not in fallback_slots:  # a value built with no cue that the variant states: a stated fallback
            out.append(_reason("information_structure:transformation_dropped", t, slot, kind=kind,
                               seed_cue=cue or "no cue"))
    if s.withheld is not None:
        s_skill, s_slot = s.withheld.split("|", 1)
        if v.withheld is None:
            out.append(_reason("information_structure:withheld_dropped", t, s_slot))
        else:
            v_skill, v_slot = v.withheld.split("|", 1)
            s_m, s_p = s_slot.split(".", 1)
            v_m, v_p = v_slot.split(".", 1)
            if v_skill != s_skill or (s_m == v_m and s_p != v_p):
                out.append(_reason("information_structure:withheld_other_param", t, v_slot, seed=s_slot))
            elif v.withheld_supplied_at is None:
                out.append(_reason("information_structure:withheld_not_supplied", t, v_slot))
            if v.withheld_stated_before and not s.withheld_stated_before:
                out.append(_reason("information_structure:withheld_stated", t, v_slot))
    if s.held_out != v.held_out:
        out.append(_reason("information_structure:held_out_changed", t, seed=",".join(s.held_out) or "none",
                           variant=",".join(v.held_out) or "none"))
    return out


def compare_skill_profiles(seed: SkillProfile, variant: SkillProfile, stated_fallbacks: list[str] | tuple = ()
                           ) -> list[str]:
    """Every way ``variant`` breaks ``seed``'s skill profile, one located reason per finding (``[]`` when it
    holds); reasons in :data:`ADVISORY` are findings, not rejections. ``stated_fallbacks`` ('turn T
    method.param=value' keys from the verdict) are state values the variant states because its state has
    no hint that singles them out: each counts as discovered, and a reference dropped on its turn is no
    finding."""
    out = _mechanics(seed, variant)
    fb = Counter(int(k.split(" ", 2)[1]) for k in stated_fallbacks)
    fb_slots: dict[int, set[str]] = {}
    for k in stated_fallbacks:
        _, turn, rest = k.split(" ", 2)
        fb_slots.setdefault(int(turn), set()).add(rest.split("=", 1)[0])
    for t, s in enumerate(seed.turns):
        v = variant.turns[t] if t < len(variant.turns) else TurnSkills(turn=t)
        out += _calls(t, s, v)
        out += _discovered(t, s, v, fb[t])
        out += _info(t, s, v, fb_slots.get(t, set()))
    out += _flow(seed, variant)
    return out


def rejecting(reasons: list[str]) -> list[str]:
    """The reasons that reject (advisory findings dropped)."""
    return [r for r in reasons if reason_kind(r) not in ADVISORY]


__all__ = ["ADVISORY", "KINDS", "FlowEdge", "SkillCall", "SkillProfile", "TurnSkills", "call_kind",
           "compare_skill_profiles", "reason_kind", "rejecting", "same_skill", "skill_class", "skill_mates",
           "skill_profile"]
