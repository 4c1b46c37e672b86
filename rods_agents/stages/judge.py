"""The critique stage: an LLM quality judge after the verdict's rule checks, with one refine round.

With the LLM backbone (``judge`` in ``llm_stages``) a candidate the rule checks accepted is scored
for faithfulness (its text determines its ground truth), coherence, naturalness and whether it is
easier than its seed (:class:`rods_agents.llm.schemas.JudgeVerdict`). A ``query_fixable``
rejection gets one refine round (the rewrite again, with the judge's critique; then the rule
checks and the judge run again); any other rejection, or a second one, is a ``judge_rejected``
verdict the graph may re-plan, with the critique shown to the planner. Offline there is no judge:
the rule checks (the information-structure comparison in :mod:`rods_agents.stages.verdict`) stand in.
Every judge verdict goes into the sample's ``judge`` log (``rejected.jsonl`` detail, provenance).

Before the LLM is asked, a measured copy is rejected without a call (:func:`copy_verdict`): a text
identical to the seed's, new only in digits, or whose word 5-grams are mostly the seed's
(:data:`COPY_CONTAINMENT`). The LLM judge sees the seed, both states, both ground truths with their
results and the same measurements, and rejects the copies the numbers cannot see (a sentence-by-sentence
paraphrase, renames alone) with a critique.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from envs.task import Task
from rods_agents.llm.accounting import charge, gave_up
from rods_agents.llm.backbone import LLMStageError, backbone_for
from rods_agents.llm.prompting import novelty_facts
from rods_agents.llm.schemas import JudgeVerdict
from rods_agents.run.context import context_of
from rods_agents.run.outcome import Verdict
from rods_agents.run.runtime import emit, stage_timer
from rods_agents.stages.state import (
    SampleState,
    SynthesisContext,
    count,
    items,
    profile_of,
    seed_of,
    seed_trace_of,
    task_of,
    trace_of,
)

JUDGE_REJECTED = "judge_rejected"
COPY_CONTAINMENT = 0.8  # word 5-gram containment of the candidate's text in the seed's above which it is a copy


def copy_verdict(seed: Task, candidate: Task) -> dict[str, Any] | None:
    """A judge entry rejecting ``candidate`` as a measured copy of ``seed`` (None when it is not one).

    The fault is ``query_fixable`` (a rewrite in new words fixes it) unless the calls too are the seed's
    once digits are masked: then only a new plan makes a new task (``gt_unfixable``)."""
    facts = novelty_facts(seed, candidate)
    share = facts["text_5gram_containment_in_seed"]
    if not (facts["text_identical"] or facts["text_differs_only_in_digits"] or share > COPY_CONTAINMENT):
        return None
    turns = [f"turn {i + 1}: {c:.0%} of its 5-word sequences are the seed's"
             for i, c in enumerate(facts["per_turn_containment"]) if c > 0.5]
    plan_copy = facts["ground_truth_same_once_digits_masked"]
    critique = ("The text is the seed's text" + (" with only digits changed" if facts["text_differs_only_in_digits"]
                                                  else f" with values swapped ({share:.0%} of its 5-word sequences "
                                                  "are the seed's)")
                + ". Write every turn anew, in your own words and with a situation of your own that fits the new "
                  "entities; keep the values to state and the structure." + (" " + "; ".join(turns) if turns else "")
                + (" The calls differ from the seed's only in digits: plan other entities, state or functions."
                   if plan_copy else ""))
    return {"reasoning": f"measured copy of the seed: {facts}", "faithfulness": 5, "coherence": 5, "naturalness": 3,
            "easier_than_seed": False, "substantively_new": False, "decision": "reject",
            "fault": "gt_unfixable" if plan_copy else "query_fixable", "critique": critique, "source": "rule"}


def judge_candidate(state: SampleState, runtime: Runtime[SynthesisContext] | None = None) -> dict:
    """Graph node ``judge_candidate``: the LLM judge's decision on a rule-accepted candidate."""
    backbone = backbone_for(runtime, "judge")
    if backbone is None:  # offline: the rule checks already decided
        return {}
    ctx = context_of(runtime)
    rounds = count(state, "refine_rounds")
    seed, candidate = seed_of(state), task_of(state)
    copy = copy_verdict(seed, candidate)
    if copy is not None:  # a measured copy: rejected without spending a call
        return _decided(state, runtime, ctx, rounds, JudgeVerdict.model_validate(
            {k: v for k, v in copy.items() if k != "source"}), {"source": "rule"}, {})
    with stage_timer(state, "judge") as timings:
        try:
            out, usage = backbone.judge(seed, profile_of(state), seed_trace_of(state), candidate, trace_of(state),
                                        state)
        except LLMStageError as exc:
            return gave_up(state, runtime, "judge", exc, timings)
    return _decided(state, runtime, ctx, rounds, out, {"source": "llm"},
                    {"timings": timings, **charge(state, "judge", usage)})


def _decided(state: dict, runtime: Any, ctx: Any, rounds: int, out: JudgeVerdict, extra: dict[str, Any],
             update: dict[str, Any]) -> dict:
    """Log a judge verdict and route it: accept, one refine round for a fixable rejection, else re-plan."""
    entry = {**out.model_dump(), **extra, "refine_round": rounds,
             "plan_attempt": count(state, "plan_attempt")}
    log = [*items(state, "judge"), entry]
    update = {"judge": log, **update}
    if out.decision == "accept":
        emit(runtime, state, "judge", "accepted", round=rounds)
        return update
    # a refine round is a rewrite by the LLM: without the LLM rewrite stage a fixable rejection re-plans
    refine = out.fault == "query_fixable" and rounds < ctx.max_refine_rounds and ctx.uses_llm("rewrite")
    emit(runtime, state, "judge", "refine" if refine else "rejected", round=rounds, fault=out.fault)
    rules = Verdict.of(state)
    detail = {**(rules.detail if rules else {}), "judge": entry}
    verdict = Verdict.reject(f"{JUDGE_REJECTED}:{out.fault}", detail)
    return {**update, "verdict": verdict.dump(), "refine_pending": refine,
            "plan_attempt": count(state, "plan_attempt") + (0 if refine else 1)}
