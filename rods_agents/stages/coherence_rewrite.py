"""Stage 3: write the user turns of a plan from the seed's own turns.

:func:`rewrite_plan` first carries the plan's renames, new numbers, swapped options and method phrases
into the seed's wording (:func:`carry_plan`, :mod:`rods_agents.variation.seed_anchor`), one message per
seed message (a miss_func reveal turn stays empty), then re-words every turn it can with a human turn of
another train scenario that asks for the same calls the same way (:mod:`rods_agents.variation.transplant`):
the seed's implicit steps, conditions, references, transformations and withheld value are kept, and
the words are not the seed's. The LLM rewrite stage (:mod:`rods_agents.llm.backbone`) starts from these
turns. Turns are never written from the calls (one phrase per call names every step and makes a task
easier).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from langgraph.runtime import Runtime

from envs.task import Message, Task
from rods_agents.analysis.information_structure import information_structure
from rods_agents.analysis.novelty import user_text
from rods_agents.analysis.profile import Profile
from rods_agents.llm.accounting import charge, gave_up
from rods_agents.llm.backbone import LLMStageError, backbone_for
from rods_agents.run.runtime import emit, rng_for, stage_timer
from rods_agents.stages.state import (
    SampleState,
    SynthesisContext,
    count,
    items,
    plan_of,
    profile_of,
    seed_of,
    seed_trace_of,
    siblings_of,
    task_of,
)
from rods_agents.variation.free_text import apply_adoptions
from rods_agents.variation.plan import Plan


def carry_plan(seed: Task, plan: Plan) -> list[list[Message]]:
    """The seed's own turns with the plan's renames, new numbers, swapped options and method phrases carried
    in (:mod:`rods_agents.variation.seed_anchor`): the base the donor turns replace, and what a turn keeps
    where no donor fits."""
    from rods_agents.variation.anchored_plan import carry_turn

    return [[Message(role=m.role, content=carry_turn(m.content, t, plan)) for m in turn]
            for t, turn in enumerate(seed.turns)]


def rewrite_plan(seed: Task, profile: Profile, plan: Plan, rng: Any, slot: int | None = None, adopt: bool = True
                 ) -> tuple[list[list[Message]], list[dict]]:
    """User turns for ``plan`` and where their wording came from.

    First the seed's own turns with the plan's renames, new numbers, swapped options and method phrases
    carried in (one message per seed message; a miss_func reveal turn stays empty), which keeps the
    seed's implicit steps, conditions, references, transformations and withheld values; then every turn
    that can be is replaced by a human turn of another train scenario asking for the same calls the same
    way, re-instantiated on the variant's values (:mod:`rods_agents.variation.transplant`), so the variant
    is new wording and not the seed's sentences. Returns the turns and the donors used
    ({'turn', 'donor', 'donor_turn'})."""
    from rods_agents.variation.plan_checks import repaired_config
    from rods_agents.variation.transplant import transplant_turns

    carried = carry_plan(seed, plan)
    draft = seed.model_copy(update={"turns": carried, "ground_truth": plan.ground_truth,
                                    "initial_config": plan.initial_config})
    # the words are measured on the state the task will run in: a plan whose order the balance cannot cover yet
    # (the patch stage tops it up after execution) would otherwise read its order id as a value of the state, not
    # of the order's result, and no donor asks for that (long_context_124: 'annul the latest order I put in')
    repaired = repaired_config(draft)
    if repaired is not None and repaired != draft.initial_config:
        draft = draft.model_copy(update={"initial_config": repaired})
    seed_info = profile.information if profile.information is not None else information_structure(seed)
    return transplant_turns(seed, seed_info, draft, rng, slot, adopt)


def variant_id(seed: Task, variant: int, run_seed: int, attempt: int) -> str:
    """The seed's id (its own seed's, when the seed is a variant) plus ``__rods_<hash>``: any id scheme keeps its
    variants traceable (for BFCL's ids this is ``multi_turn_<category>_<n>__rods_<hash>``, as before)."""
    digest = hashlib.sha256(f"{seed.id}|{variant}|{run_seed}|{attempt}".encode()).hexdigest()[:8]
    return f"{seed.id.split('__rods_', 1)[0]}__rods_{digest}"


_ABBREVIATION_THEN_STOP = re.compile(r"\b(Ltd|Inc|Corp|Co|Jr|Sr|St)\.\.(?=\s|$)")
_NOUN_THEN_ITS_ID = re.compile(r"\b(card|token) ((?:card|token)_[A-Za-z0-9]+)\b", re.I)
_STRAY_LEADING_STOP = re.compile(r"^[.,;:]+\s+(?=\S)")


def _tidy(text: str) -> str:
    """A name ending in its own full stop at the end of a sentence ('the stock info for Quasar Ltd..') keeps one; an
    id that starts with its own noun is not read 'card card_0901' (read 24) but 'card ID card_0901'. A stop a seed's
    turn opens on ('. I'm contemplating acquiring 100 shares', miss_param_110) is the seed's typo and is dropped, as
    the words after it were re-worded anyway."""
    if _STRAY_LEADING_STOP.match(text):
        text = _STRAY_LEADING_STOP.sub("", text)
        text = text[:1].upper() + text[1:]
    text = _ABBREVIATION_THEN_STOP.sub(r"\1.", text)
    return _NOUN_THEN_ITS_ID.sub(lambda m: f"{m.group(1)} ID {m.group(2)}"
                                 if m.group(2).lower().startswith(m.group(1).lower()) else m.group(0), text)


def _tidied(turns: list[list[Message]]) -> list[list[Message]]:
    return [[m.model_copy(update={"content": _tidy(m.content)}) if m.role == "user" else m for m in turn]
            for turn in turns]


def build_variant(seed: Task, turns: list[list[Message]], plan: Plan, variant: int, run_seed: int) -> Task:
    return Task(id=variant_id(seed, variant, run_seed, plan.attempt), category=seed.category, scenario=seed.scenario,
                turns=_tidied(turns), initial_config=plan.initial_config, involved_classes=list(seed.involved_classes),
                missed_function=dict(seed.missed_function), ground_truth=plan.ground_truth)


def rewrite_turns(state: SampleState, runtime: Runtime[SynthesisContext] | None = None) -> dict:
    """Graph node: write the user turns and assemble the candidate task (offline; the LLM rewrite stage
    rewrites them in :mod:`rods_agents.stages.plan_sampling`)."""
    with stage_timer(state, "rewrite") as timings:
        seed, profile, plan = seed_of(state), profile_of(state), plan_of(state)
        variant = count(state, "variant")
        run_seed = getattr(getattr(runtime, "context", None), "seed", 0) if runtime is not None else 0
        rng = rng_for(run_seed, seed.id, variant, plan.attempt, "rewrite")
        from rods_agents.variation.anchored_plan import sibling_slot
        from rods_agents.variation.donor_search import avoiding_siblings

        with avoiding_siblings(user_text(t) for t in siblings_of(state)):
            turns, donors = rewrite_plan(seed, profile, plan, rng, sibling_slot(seed.category, variant, plan.attempt),
                                         adopt=backbone_for(runtime, "plan") is None)  # an LLM's texts stay its own
        # a donor turn that describes its own free text (a concern for customer support) brought that text along
        plan = plan.model_copy(update={"ground_truth": apply_adoptions(plan.ground_truth, donors)})
        task = build_variant(seed, turns, plan, variant, run_seed)
    emit(runtime, state, "rewrite", "ok", donors=len(donors))
    return {"task": task.model_dump(), "timings": timings,
            "plan": {**state["plan"], "donors": donors, "ground_truth": plan.ground_truth}}


def _rewrite_with_llm(state: dict, runtime: Any, task: Task, timings_state: dict, feedback: str = "") -> dict:
    backbone = backbone_for(runtime, "rewrite")
    assert backbone is not None
    with stage_timer(timings_state, "rewrite") as timings:
        try:
            turns, usage = backbone.rewrite_turns(seed_of(state), profile_of(state), seed_trace_of(state),
                                                  task.ground_truth,
                                                  task.turns, state, feedback=feedback,
                                                  initial_config=task.initial_config)
        except LLMStageError as exc:
            return gave_up(state, runtime, "rewrite", exc, timings)
        task.turns = turns
    return {"task": task.model_dump(), "timings": timings, **charge(state, "rewrite", usage)}


def _last_text_feedback(state: dict) -> str:
    """The text faults of the last rejection (a re-plan after a mixed rejection): the new rewrite is told
    what was wrong with the previous words too (before, a rewrite after a re-plan got no feedback)."""
    from rods_agents.stages.replan import text_feedback

    last = (state.get("rejections") or [None])[-1]
    if not isinstance(last, dict):
        return ""
    return text_feedback(list(last.get("reasons") or []), last.get("detail") or {})


def rewrite_node(state: SampleState, runtime: Runtime[SynthesisContext] | None = None) -> dict:
    """Node ``rewrite_turns`` body: the seed-anchored offline turns, then (LLM rewrite stage) the LLM's."""
    out = rewrite_turns(state, runtime)
    if backbone_for(runtime, "rewrite") is None or "task" not in out:
        return out
    return {**out, **_rewrite_with_llm(state, runtime, Task.model_validate(out["task"]),
                                       {"timings": out.get("timings", {})}, feedback=_last_text_feedback(state))}


def _text_fault_refine(state: dict, runtime: Any) -> dict:
    """A rule rejection of the words alone: the rewrite again with the reasons, the plan kept. The rejection
    is recorded (``text_fault``) for the planner and to bound these rounds; the verdict's ``plan_attempt``
    increment is undone, since the plan did not fail."""
    from rods_agents.run.outcome import Verdict
    from rods_agents.stages.replan import rejection_record, text_feedback

    verdict = Verdict.of(dict(state))
    assert verdict is not None
    attempt = int((state.get("plan") or {}).get("attempt", 0) or 0)
    earlier = items(state, "rejections")
    rejections = [*earlier, rejection_record(verdict, len(earlier), text_fault=True, plan_attempt=attempt)]
    emit(runtime, state, "refine", "start", source="verdict", reasons=list(verdict.reasons))
    out = _rewrite_with_llm(state, runtime, task_of(state), state,
                            feedback=text_feedback(list(verdict.reasons), verdict.detail))
    return {**out, "rejections": rejections, "plan_attempt": attempt} | ({} if "verdict" in out else {"verdict": None})


def refine_node(state: SampleState, runtime: Runtime[SynthesisContext] | None = None) -> dict:
    """Node ``refine_turns``: a rewrite of the candidate's text with the judge's critique (the one refine
    round), or with the rule checks' reasons when they rejected the words alone (the plan is kept)."""
    verdict = state.get("verdict") or {}
    if verdict and not verdict.get("accepted") and not any(str(r).startswith("judge_rejected")
                                                            for r in verdict.get("reasons") or []):
        return _text_fault_refine(state, runtime)
    last = (items(state, "judge") or [{}])[-1]
    feedback = str(last.get("critique") or last.get("reasoning") or "")
    rounds = count(state, "refine_rounds") + 1
    emit(runtime, state, "refine", "start", round=rounds)
    out = _rewrite_with_llm(state, runtime, task_of(state), state, feedback=feedback)
    return {**out, "refine_rounds": rounds, "refine_pending": False} | ({} if "verdict" in out else {"verdict": None})
