"""State types and run settings of the synthesis graph.

- :class:`SynthesisContext`: run settings (JSON-typed knobs Studio renders as a form) plus live
  slots (``chat_models``) the CLI or trainer fill in.
- :class:`SynthesisInput` / :class:`SynthesisState`: the fan-out graph over (seed, variant).
- :class:`SynthesizeSample`: the per-``Send`` payload, named after the node it is sent to.
- :class:`SampleState`: one sample's journey profile -> plan -> rewrite -> execute -> patch -> verdict.
- LLM output schemas (pydantic) live here too; their docstrings double as tool descriptions.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

from pydantic import BaseModel, Field


@dataclass(kw_only=True)
class SynthesisContext:
    """Run settings of one synthesis run.

    Attributes:
        seed: Master seed; every random draw is derived from (seed, seed task id, variant, attempt).
        variants_per_seed: Variants drawn per seed task.
        max_plan_attempts: Plans sampled per variant before it is rejected (resampling is bounded).
        max_patch_attempts: Config patch rounds per plan (the paper's K_max = 3).
        concurrency: Samples in flight at once (LangGraph ``max_concurrency``).
        backbone: ``offline`` (templates and rule tables, no network) or ``llm``.
        llm_stages: Stages the LLM backbone takes over (any of ``plan``, ``rewrite``, ``patch``); others
            stay offline.
        models: Chat model names; several are used round-robin per sample.
        stage_models: Optional stage -> model name (one of ``models``) pinning a stage to a model.
        base_url: OpenAI-compatible endpoint (vLLM, OpenAI); the key comes from ``OPENAI_API_KEY``.
        max_llm_calls_per_sample: Hard bound on LLM calls for one sample (retries included).
        llm_retries: Extra attempts after an LLM output fails validation.
        temperature: Sampling temperature of the LLM backbone (the paper uses 1.0).
        chat_models: Live slot: LangChain chat models to use instead of building ``ChatOpenAI``.
    """

    seed: int = 0
    variants_per_seed: int = 2
    max_plan_attempts: int = 3
    max_patch_attempts: int = 3
    concurrency: int = 1
    backbone: str = "offline"
    llm_stages: list[str] = field(default_factory=lambda: ["rewrite"])
    models: list[str] = field(default_factory=list)
    stage_models: dict[str, str] = field(default_factory=dict)
    base_url: str | None = None
    max_llm_calls_per_sample: int = 6
    llm_retries: int = 2
    temperature: float = 1.0
    chat_models: Any = None


class SynthesisInput(TypedDict, total=False):
    """Input of the fan-out graph: seed tasks (BFCL entries) or seed ids from the train split."""

    seeds: list[dict]
    seed_ids: list[str]
    variants_per_seed: int


class SynthesisState(SynthesisInput, total=False):
    results: Annotated[list[dict], operator.add]
    accepted: list[dict]
    rejected: list[dict]
    report: dict


class SynthesizeSample(TypedDict):
    """Payload sent to the ``synthesize_sample`` node: one (seed, variant) pair."""

    sample_id: str
    seed: dict
    variant: int


class SampleState(TypedDict, total=False):
    sample_id: str
    seed: dict
    variant: int
    profile: dict
    seed_trace: dict
    plan: dict
    plan_attempt: int
    task: dict
    trace: dict
    errors: list[dict]
    patches: list[dict]
    patch_attempts: int
    patch_failed: bool
    llm_error: dict
    verdict: dict
    timings: dict[str, float]
    llm_calls: int
    results: Annotated[list[dict], operator.add]


class SampleOutput(TypedDict):
    results: Annotated[list[dict], operator.add]


class RewrittenTurns(BaseModel):
    """User turns rewritten by the LLM: one natural request per turn, anchored to one goal."""

    narrative: str = Field(description="One or two sentences: the user's overall goal.")
    turns: list[str] = Field(description="One user message per listed turn, in order.")


class ConfigPatchProposal(BaseModel):
    """A minimal edit of the task's initial_config that removes an execution error."""

    cls: str = Field(description="Environment class whose config is edited, e.g. 'MessageAPI'.")
    path: str = Field(description="Dot-path of the field inside that class's config, e.g. 'current_user'.")
    value: str | int | float | bool | None = Field(description="New value of the field (a JSON scalar).")
    reason: str = Field(default="", description="One sentence: why this fixes the error.")


class PlannedCall(BaseModel):
    """One call of a planned turn: a function of the involved classes and its arguments (JSON values)."""

    name: str = Field(description="Function name from the catalog, e.g. 'cd'.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Argument name -> JSON value.")


class PlanProposal(BaseModel):
    """A new ground-truth plan with the seed's shape: the calls of every turn and the entity renames."""

    turns: list[list[PlannedCall]] = Field(description="Per turn, the calls in order (an empty list for an empty turn).")
    renames: dict[str, str] = Field(default_factory=dict,
                                    description="Entity in the seed's initial_config -> its new name in the variant.")
    new_values: dict[str, Any] = Field(default_factory=dict,
                                       description="Other changed literal values, old (as text) -> new value.")
