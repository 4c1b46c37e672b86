"""Stage 1, profile extraction: execute the seed and compute its profile Φ (:mod:`rods_agents.analysis.profile`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rods_agents.analysis.profile import profile_task
from rods_agents.analysis.tracing import CONFIG_ERROR, trace_task
from rods_agents.run.runtime import emit, stage_timer
from rods_agents.stages.state import SampleState, seed_of

if TYPE_CHECKING:
    from langgraph.runtime import Runtime

    from rods_agents.run.context import SynthesisContext


def extract_profile(state: SampleState, runtime: Runtime[SynthesisContext] | None = None) -> dict:
    """Graph node: execute the seed's ground truth and compute its profile Φ.

    A seed that does not execute ends its sample (a verdict, read by ``route_after_profile``)."""
    with stage_timer(state, "profile") as timings:
        seed = seed_of(state)
        trace = trace_task(seed)
        if trace.errors:
            emit(runtime, state, "profile", "seed_error")
            bad_config = (trace.errors[0].error or "").startswith(CONFIG_ERROR)
            return {"timings": timings, "seed_trace": trace.model_dump(),
                    "verdict": {"accepted": False,
                                "reasons": ["seed_invalid_config" if bad_config else "seed_execution_error"],
                                "detail": {"error": trace.errors[0].error, "call": trace.errors[0].call}}}
        profile = profile_task(seed, trace)
    emit(runtime, state, "profile", "ok")
    return {"profile": profile.model_dump(), "seed_trace": trace.model_dump(), "timings": timings}
