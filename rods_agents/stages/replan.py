"""Node ``sample_plan``: start a (re)plan round, then plan (:mod:`rods_agents.stages.plan_sampling`).

A rejected candidate's verdict is remembered (the LLM planner is told why earlier attempts failed),
and its verdict, patch and refine state are cleared so the new candidate starts clean.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rods_agents.run.outcome import Verdict
from rods_agents.stages.plan_sampling import plan_node
from rods_agents.stages.state import SampleState, items, verdict_of

if TYPE_CHECKING:
    from langgraph.runtime import Runtime

    from rods_agents.run.context import SynthesisContext


def rejection_record(verdict: Verdict, attempt: int) -> dict:
    """What the next plan prompt is told about a rejected attempt (no bulky profile)."""
    detail = {k: v for k, v in verdict.detail.items() if k not in ("profile", "judge_log")}
    if isinstance(detail.get("judge"), dict):
        detail["judge"] = {k: detail["judge"].get(k) for k in ("decision", "fault", "critique", "easier_than_seed")}
    return {"attempt": attempt, "reasons": list(verdict.reasons), "detail": detail}


def start_plan_round(state: SampleState, runtime: Runtime[SynthesisContext] | None = None) -> dict[str, Any]:
    """Remember why the previous candidate was rejected, forget its verdict and patch state, plan anew."""
    rejections = items(state, "rejections")
    previous = verdict_of(state)
    if previous is not None and not previous.accepted:
        rejections.append(rejection_record(previous, len(rejections)))
    fresh = {"verdict": None, "patch_failed": False, "errors": [], "patch_attempts": 0, "llm_error": None,
             "rejections": rejections, "refine_rounds": 0, "refine_pending": False}
    return fresh | plan_node({**state, **fresh}, runtime)


__all__ = ["rejection_record", "start_plan_round"]
