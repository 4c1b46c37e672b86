"""The critique stage: an LLM quality judge after the verdict's rule checks, with one refine round.

With the LLM backbone (``judge`` in ``llm_stages``) a candidate the rule checks accepted is scored
for faithfulness (its text determines its ground truth), coherence, naturalness and whether it is
easier than its seed (:class:`rods_agents.llm.schemas.JudgeVerdict`). A ``query_fixable``
rejection gets one refine round (the rewrite again, with the judge's critique; then the rule
checks and the judge run again); any other rejection, or a second one, is a ``judge_rejected``
verdict the graph may re-plan, with the critique shown to the planner. Offline there is no judge:
the rule checks (the information-structure comparison in :mod:`rods_agents.stages.verdict`) stand in.
Every judge verdict goes into the sample's ``judge`` log (``rejected.jsonl`` detail, provenance).
"""

from __future__ import annotations

from typing import Any

from envs.task import Task
from rods_agents.analysis.profile import Profile
from rods_agents.analysis.tracing import Trace
from rods_agents.llm.accounting import charge, gave_up
from rods_agents.llm.backbone import LLMStageError, backbone_for
from rods_agents.run.context import context_of
from rods_agents.run.outcome import Verdict
from rods_agents.run.runtime import emit, stage_timer

JUDGE_REJECTED = "judge_rejected"


def judge_candidate(state: dict, runtime: Any = None) -> dict:
    """Graph node ``judge_candidate``: the LLM judge's decision on a rule-accepted candidate."""
    backbone = backbone_for(runtime, "judge")
    if backbone is None:  # offline: the rule checks already decided
        return {}
    ctx = context_of(runtime)
    rounds = int(state.get("refine_rounds", 0) or 0)
    with stage_timer(state, "judge") as timings:
        try:
            out, usage = backbone.judge(Task.model_validate(state["seed"]), Profile.model_validate(state["profile"]),
                                        Trace.model_validate(state["seed_trace"]), Task.model_validate(state["task"]),
                                        Trace.model_validate(state["trace"]), state)
        except LLMStageError as exc:
            return gave_up(state, runtime, "judge", exc, timings)
    entry = {**out.model_dump(), "refine_round": rounds, "plan_attempt": int(state.get("plan_attempt", 0) or 0)}
    log = [*(state.get("judge") or []), entry]
    update: dict[str, Any] = {"judge": log, "timings": timings, **charge(state, "judge", usage)}
    if out.decision == "accept":
        emit(runtime, state, "judge", "accepted", round=rounds)
        return update
    refine = out.fault == "query_fixable" and rounds < ctx.max_refine_rounds
    emit(runtime, state, "judge", "refine" if refine else "rejected", round=rounds, fault=out.fault)
    rules = Verdict.of(state)
    detail = {**(rules.detail if rules else {}), "judge": entry}
    verdict = Verdict.reject(f"{JUDGE_REJECTED}:{out.fault}", detail)
    return {**update, "verdict": verdict.dump(), "refine_pending": refine,
            "plan_attempt": int(state.get("plan_attempt", 0) or 0) + (0 if refine else 1)}
