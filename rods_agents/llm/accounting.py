"""LLM accounting shared by the stage nodes: calls and tokens per stage, and the terminal verdict of a stage
whose LLM gave up (``llm_invalid_output`` or ``llm_unreachable``).
"""

from __future__ import annotations

from typing import Any

from rods_agents.llm.backbone import LLMStageError
from rods_agents.run.outcome import LLMUsage, Verdict, merge_usage
from rods_agents.run.runtime import emit


def charge(state: dict, stage: str, usage: LLMUsage) -> dict[str, Any]:
    """State updates that add ``usage`` to the sample's call count and per-stage token accounting."""
    return {"llm_calls": int(state.get("llm_calls", 0) or 0) + usage.calls,
            "llm_usage": merge_usage(state.get("llm_usage"), stage, usage)}


def gave_up(state: dict, runtime: Any, stage: str, exc: LLMStageError, timings: dict) -> dict[str, Any]:
    """The terminal rejection of a stage whose LLM gave up (invalid answers or an unreachable endpoint)."""
    emit(runtime, state, stage, exc.reason)
    return {"timings": timings, **charge(state, stage, exc.usage),
            "verdict": Verdict.reject(exc.reason, exc.detail(stage), terminal=True).dump()}


