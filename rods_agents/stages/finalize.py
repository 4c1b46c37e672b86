"""Last node of a sample, ``finalize_sample``: package its outcome as one :class:`SampleResult`.

An accepted task first gets the lookups its text leaves to the assistant written into its ground truth
(:mod:`rods_agents.analysis.lookups`: 'the alphabetically first file' gains the ``ls()`` a person makes), after
every check has passed on the task as planned; ``provenance['lookups']`` says what was written where.

The accepted task carries its provenance (seed, run settings, plan changes, patches, judge log,
costs) so an exported row can be traced back to the run and seed that made it; a rejection keeps
its reasons, the judge's log and earlier attempts' reasons (``rejected.jsonl``).
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import TYPE_CHECKING, Any

from rods_agents.analysis.lookups import write_lookups
from rods_agents.run.context import context_of
from rods_agents.run.outcome import PIPELINE_EXCEPTION, SampleResult, Verdict
from rods_agents.run.runtime import emit
from rods_agents.stages.state import SampleState, count, items, seed_of, task_of, timings_of, verdict_of

if TYPE_CHECKING:
    from langgraph.runtime import Runtime

    from rods_agents.run.context import SynthesisContext

log = logging.getLogger("rods.synthesis")


def finalize_sample(state: SampleState, runtime: Runtime[SynthesisContext] | None = None) -> dict:
    """Package the sample's outcome: the accepted task (with provenance) or the rejection.

    Never raises: if packaging fails, the sample is a ``pipeline_exception:<type>`` rejection."""
    try:
        return _package_sample(state, runtime)
    except Exception as exc:  # noqa: BLE001 - recorded as a machine-readable rejection
        log.warning("sample %s: finalize raised %s", state.get("sample_id"), exc, exc_info=True)
        seed = state.get("seed") or {}
        result = SampleResult(
            sample_id=state.get("sample_id"), seed_id=seed.get("id") if isinstance(seed, dict) else None,
            variant=count(state, "variant"), reasons=[f"{PIPELINE_EXCEPTION}:{type(exc).__name__}"],
            detail={"stage": "finalize", "error": f"{type(exc).__name__}: {str(exc)[:300]}"},
            timings=timings_of(state), llm_calls=count(state, "llm_calls"),
            llm_usage=dict(state.get("llm_usage") or {}), plan_attempts=count(state, "plan_attempt"))
        emit(runtime, state, "done", "rejected")
        return {"results": [result.model_dump()]}


def _provenance(state: SampleState, runtime: Any, result: dict, detail: dict, variant_profile: dict | None) -> dict:
    ctx = context_of(runtime)
    plan = state.get("plan") or {}
    return {
        "seed_id": seed_of(state).id, "variant": count(state, "variant"), "run_seed": ctx.seed,
        "backbone": ctx.backbone, "models": list(ctx.models),
        "llm_stages": list(ctx.llm_stages) if ctx.backbone == "llm" else [],
        "profile": {k: v for k, v in (variant_profile or {}).items() if k not in ("nodes",)},
        "renames": plan.get("renames", {}), "numbers": plan.get("numbers", {}),
        "substitutions": plan.get("substitutions", []), "swaps": plan.get("swaps", {}),
        "derived": plan.get("derived", []), "state_changes": plan.get("state_changes", {}),
        "patches": items(state, "patches"),
        "plan_attempts": result["plan_attempts"], "timings": timings_of(state),
        "stated_fallbacks": detail.get("stated_fallbacks", []),
        "llm_calls": result["llm_calls"], "llm_usage": result["llm_usage"],
        "judge": items(state, "judge"), "refine_rounds": result["refine_rounds"],
        "earlier_attempts": detail.get("earlier_attempts", []),
        "similarity": {k: detail.get(k) for k in ("seed_similarity", "test_similarity", "nearest_test")},
    }


def _package_sample(state: SampleState, runtime: Any) -> dict:
    verdict = verdict_of(state) or Verdict.reject("no_verdict")
    seed = seed_of(state)
    detail = dict(verdict.detail)
    variant_profile = detail.pop("profile", None)
    profile = state.get("profile") or {}
    judge_log = items(state, "judge")
    if judge_log and not verdict.accepted:
        detail.setdefault("judge_log", judge_log)
    if state.get("rejections"):
        detail.setdefault("earlier_attempts", [{"reasons": r.get("reasons", [])} for r in items(state, "rejections")])
    result = SampleResult(
        sample_id=state["sample_id"], seed_id=seed.id, variant=count(state, "variant"),
        accepted=verdict.accepted, reasons=list(verdict.reasons), detail=detail,
        timings=timings_of(state), llm_calls=count(state, "llm_calls"),
        llm_usage=dict(state.get("llm_usage") or {}), patches=items(state, "patches"),
        plan_attempts=count(state, "plan_attempt") + (1 if verdict.accepted else 0),
        refine_rounds=count(state, "refine_rounds"), judge=judge_log,
        seed_sources=dict(Counter(a["source"] for a in profile.get("arg_sources", []))),
        variant_sources=dict(Counter(a["source"] for a in (variant_profile or {}).get("arg_sources", []))),
    ).model_dump()
    if result["accepted"]:
        task, lookups = write_lookups(task_of(state))
        task.provenance = _provenance(state, runtime, result, detail, variant_profile)
        task.provenance["lookups"] = [w.model_dump() for w in lookups]
        result["task"] = task.to_bfcl()
    emit(runtime, state, "done", "accepted" if result["accepted"] else "rejected")
    return {"results": [result]}


__all__ = ["finalize_sample"]
