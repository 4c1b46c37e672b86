"""State types of the synthesis graph (run settings and LLM schemas are re-exported from rods_agents).

- :class:`SynthesisContext` (``rods_agents.run.context``): run settings, validated on construction;
  JSON-typed knobs Studio renders as a form, plus the live ``chat_models`` slot (not in the form).
- :class:`SynthesisInput` / :class:`SynthesisState`: the fan-out graph over (seed, variant).
- :class:`SynthesizeSample`: the per-``Send`` payload, named after the node it is sent to.
- :class:`SampleState`: one sample's journey profile -> plan -> rewrite -> execute -> patch ->
  verdict -> judge (-> refine).

``typing_extensions.TypedDict`` (not ``typing``'s): pydantic, and so ``langgraph dev``, can only
build JSON schemas from it on Python < 3.12.
"""

from __future__ import annotations

import operator
from typing import Annotated

from typing_extensions import TypedDict

from rods_agents.llm.schemas import (
    Argument,
    ConfigPatchProposal,
    JudgeVerdict,
    NewValue,
    PlannedCall,
    PlanProposal,
    Rename,
    RewrittenTurns,
)
from rods_agents.run.context import LLM_STAGES, SynthesisContext
from rods_agents.run.outcome import SampleResult, Verdict


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
    """One sample's state; ``verdict`` holds a :class:`Verdict` dump, ``results`` the final :class:`SampleResult`."""

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
    llm_error: dict | None
    verdict: dict | None
    rejections: list[dict]  # earlier attempts' verdicts (reasons, detail): shown to the LLM planner
    judge: list[dict]  # LLM judge verdicts in order
    refine_rounds: int
    refine_pending: bool
    timings: dict[str, float]
    llm_calls: int
    llm_usage: dict[str, dict[str, int]]  # stage -> {calls, prompt_tokens, completion_tokens}
    results: Annotated[list[dict], operator.add]


class SampleOutput(TypedDict):
    results: Annotated[list[dict], operator.add]


__all__ = ["LLM_STAGES", "Argument", "ConfigPatchProposal", "JudgeVerdict", "NewValue", "PlanProposal", "PlannedCall",
           "Rename", "RewrittenTurns", "SampleOutput", "SampleResult", "SampleState", "SynthesisContext",
           "SynthesisInput", "SynthesisState", "SynthesizeSample", "Verdict"]
