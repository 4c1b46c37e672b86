"""Run settings of one synthesis run: the one validated source for backbone, stages and counts.

A leaf module (no graph import): the stages read it, ``rods_agents.stages.state`` re-exports it, the CLI and the
trainer build it. JSON-typed knobs render as Studio's context form; the live slot ``chat_models``
(LangChain chat models filled in by tests or a caller) is left out of the form's JSON schema.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

BACKBONES = ("offline", "llm")
LLM_STAGES = ("plan", "rewrite", "patch", "judge")
Backbone = Literal["offline", "llm"]


class ContextError(ValueError):
    """A run setting is invalid; the message names the setting and the allowed values."""


def parse_stages(value: str | list[str] | tuple[str, ...] | None) -> list[str]:
    """``'plan,rewrite'`` or a list -> validated, de-duplicated stage names (ContextError on unknown ones)."""
    items = value.split(",") if isinstance(value, str) else list(value or [])
    stages = list(dict.fromkeys(s.strip() for item in items for s in str(item).split(",") if s.strip()))
    unknown = sorted(set(stages) - set(LLM_STAGES))
    if unknown:
        raise ContextError(f"llm_stages: unknown stage(s) {unknown}; choose from {list(LLM_STAGES)}")
    return stages


@dataclass(kw_only=True)
class SynthesisContext:
    """Run settings of one synthesis run (validated on construction: a bad value is a ContextError)."""

    seed: Annotated[int, Field(description="Master seed; every draw derives from (seed, seed id, variant, attempt).")] = 0
    variants_per_seed: Annotated[int, Field(description="Variants drawn per seed task (>= 1).")] = 2
    max_plan_attempts: Annotated[int, Field(description="Plans per variant before it is rejected (>= 1).")] = 3
    max_patch_attempts: Annotated[int, Field(description="Config patch rounds per plan (the paper's K_max = 3).")] = 3
    max_refine_rounds: Annotated[int, Field(description="Rewrites after a fixable judge rejection (the paper: 1).")] = 1
    concurrency: Annotated[int, Field(description="Samples in flight at once (LangGraph max_concurrency), one per scenario: the samples of one scenario run one after another (graphs.lanes).")] = 1
    backbone: Annotated[Backbone, Field(description="'offline' (templates and rule tables, no network) or 'llm'.")] = "offline"
    llm_stages: Annotated[list[str], Field(description="Stages the LLM backbone takes over: plan, rewrite, patch, "
                                           "judge (default all four); the others stay offline.")] = field(
        default_factory=lambda: list(LLM_STAGES))
    models: Annotated[list[str], Field(description="Chat model names, used round-robin per sample.")] = field(
        default_factory=list)
    stage_models: Annotated[dict[str, str], Field(description="Optional stage -> model (one of models).")] = field(
        default_factory=dict)
    base_url: Annotated[str | None, Field(description="OpenAI-compatible endpoint; key from OPENAI_API_KEY.")] = None
    max_llm_calls_per_sample: Annotated[int, Field(description="Hard bound on LLM calls per sample, retries "
                                                   "included.")] = 12
    llm_retries: Annotated[int, Field(description="Extra attempts after an answer fails validation.")] = 2
    temperature: Annotated[float, Field(description="Sampling temperature (the paper: 1.0).")] = 1.0
    top_p: Annotated[float, Field(description="Nucleus sampling (the paper: 0.7).")] = 0.7
    max_tokens: Annotated[int, Field(description="Completion token cap per LLM call.")] = 4096
    request_timeout_s: Annotated[float, Field(description="Per-request timeout of the OpenAI client, seconds.")] = 120.0
    client_max_retries: Annotated[int, Field(description="Transport retries of the OpenAI client itself.")] = 2
    extra_body: Annotated[dict[str, Any] | None, Field(description="Extra request body, e.g. {'chat_template_kwargs': "
                                                       "{'enable_thinking': false}} for Qwen3.")] = None
    chat_models: SkipJsonSchema[Any] = None  # live slot: LangChain chat models instead of building ChatOpenAI

    def __post_init__(self) -> None:
        if self.backbone not in BACKBONES:
            raise ContextError(f"backbone must be one of {list(BACKBONES)} (got {self.backbone!r})")
        self.llm_stages = parse_stages(self.llm_stages)
        for name in ("variants_per_seed", "max_plan_attempts", "concurrency", "max_tokens"):
            if int(getattr(self, name)) < 1:
                raise ContextError(f"{name} must be >= 1 (got {getattr(self, name)})")
        for name in ("max_patch_attempts", "max_refine_rounds", "max_llm_calls_per_sample", "llm_retries",
                     "client_max_retries"):
            if int(getattr(self, name)) < 0:
                raise ContextError(f"{name} must be >= 0 (got {getattr(self, name)})")
        if self.backbone == "llm":
            if not self.llm_stages:
                raise ContextError("backbone 'llm' needs at least one of llm_stages " + str(list(LLM_STAGES)))
            if not self.models and not self.chat_models:
                raise ContextError("backbone 'llm' needs at least one model (--model) or chat_models")
        bad_pins = {s: m for s, m in self.stage_models.items() if s not in LLM_STAGES or (self.models and m not in self.models)}
        if bad_pins:
            raise ContextError(f"stage_models: {bad_pins} (stages: {list(LLM_STAGES)}; models: {self.models})")

    def uses_llm(self, stage: str) -> bool:
        """True when the LLM backbone takes over ``stage`` in this run."""
        return self.backbone == "llm" and stage in self.llm_stages


def context_of(runtime: Any) -> SynthesisContext:
    """The run's context from a LangGraph runtime (defaults when run outside a graph)."""
    ctx = getattr(runtime, "context", None) if runtime is not None else None
    if ctx is None:
        return SynthesisContext()
    return ctx if isinstance(ctx, SynthesisContext) else SynthesisContext(**dict(ctx))
