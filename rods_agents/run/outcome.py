"""Typed per-sample outcomes: the verdict a stage records and the result a sample ends with.

A stage that ends its sample (invalid LLM output, an unreachable endpoint, a pipeline exception, a
seed that does not execute) records a *terminal* verdict; the graph routes on that flag, never on
reason prefixes. A non-terminal rejection (the rule checks, the judge) may be re-planned.
Graph state holds ``Verdict.model_dump()`` (plain JSON for checkpoints and Studio).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

LLM_INVALID_OUTPUT = "llm_invalid_output"
LLM_UNREACHABLE = "llm_unreachable"
PIPELINE_EXCEPTION = "pipeline_exception"


class Verdict(BaseModel):
    """Accepted or rejected with machine-readable reasons (first word before ':' is the kind)."""

    accepted: bool = False
    reasons: list[str] = Field(default_factory=list)
    detail: dict[str, Any] = Field(default_factory=dict)
    terminal: bool = Field(default=False, description="True: the sample ends here (no re-plan).")

    @classmethod
    def reject(cls, reason: str, detail: dict[str, Any] | None = None, *, terminal: bool = False) -> Verdict:
        return cls(accepted=False, reasons=[reason], detail=dict(detail or {}), terminal=terminal)

    @classmethod
    def of(cls, state: dict) -> Verdict | None:
        """The verdict stored in a graph state, or None when there is none yet."""
        raw = state.get("verdict")
        if raw is None:
            return None
        return raw if isinstance(raw, Verdict) else cls.model_validate(raw)

    def dump(self) -> dict[str, Any]:
        return self.model_dump()


class LLMUsage(BaseModel):
    """LLM calls and tokens (LangChain ``usage_metadata``) of one stage."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, other: LLMUsage) -> LLMUsage:
        return LLMUsage(calls=self.calls + other.calls, prompt_tokens=self.prompt_tokens + other.prompt_tokens,
                        completion_tokens=self.completion_tokens + other.completion_tokens)


def merge_usage(current: dict[str, Any] | None, stage: str, usage: LLMUsage) -> dict[str, dict[str, int]]:
    """``state['llm_usage']`` with ``usage`` added to ``stage`` (a new dict; state updates replace it)."""
    out = {k: dict(v) for k, v in (current or {}).items()}
    total = LLMUsage.model_validate(out.get(stage, {})).add(usage)
    out[stage] = total.model_dump()
    return out


class SampleResult(BaseModel):
    """What one (seed, variant) sample ends with: the accepted task or the rejection, and its costs."""

    sample_id: str | None
    seed_id: str | None
    variant: int = 0
    accepted: bool = False
    reasons: list[str] = Field(default_factory=list)
    detail: dict[str, Any] = Field(default_factory=dict)
    timings: dict[str, float] = Field(default_factory=dict)
    llm_calls: int = 0
    llm_usage: dict[str, dict[str, int]] = Field(default_factory=dict)
    patches: list[dict[str, Any]] = Field(default_factory=list)
    plan_attempts: int = 0
    refine_rounds: int = 0
    judge: list[dict[str, Any]] = Field(default_factory=list, description="LLM judge verdicts, in order.")
    seed_sources: dict[str, int] = Field(default_factory=dict)
    variant_sources: dict[str, int] = Field(default_factory=dict)
    task: dict[str, Any] | None = None
