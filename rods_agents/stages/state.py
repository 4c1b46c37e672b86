"""State types of the synthesis graph (run settings and LLM schemas are re-exported from rods_agents).

- :class:`SynthesisContext` (``rods_agents.run.context``): run settings, validated on construction;
  JSON-typed knobs Studio renders as a form, plus the live ``chat_models`` slot (not in the form).
- :class:`SynthesisInput` / :class:`SynthesisState`: the fan-out graph over (seed, variant).
- :class:`SynthesizeSample`: the per-``Send`` payload, named after the node it is sent to.
- :class:`SampleState`: one sample's journey profile -> plan -> rewrite -> execute -> patch ->
  verdict -> judge (-> refine).

``typing_extensions.TypedDict`` (not ``typing``'s): pydantic, and so ``langgraph dev``, can only
build JSON schemas from it on Python < 3.12.

**Reading a sample's state: use the accessors, never re-validate by hand.** The state holds plain
JSON (what checkpoints and Studio store); a node reads it through the typed accessors below, so a
missing counter is 0 (no ``or 0``), a missing list is ``[]``, and a model is validated in one place:

==========================  ============================================================
``seed_of(state)``          the seed :class:`envs.task.Task`
``siblings_of(state)``      the scenario's variants accepted before this sample (``Task`` list)
``task_of(state)``          the candidate variant :class:`~envs.task.Task` (after rewrite)
``profile_of(state)``       the seed's :class:`rods_agents.analysis.profile.Profile` (Φ)
``seed_trace_of(state)``    the seed's execution :class:`rods_agents.analysis.tracing.Trace`
``trace_of(state)``         the candidate's execution ``Trace``
``plan_of(state)``          the candidate's :class:`rods_agents.variation.plan.Plan`
``verdict_of(state)``       the recorded :class:`rods_agents.run.outcome.Verdict`, or None
``count(state, key)``       an int counter (``plan_attempt``, ``patch_attempts``, ``refine_rounds``,
                            ``llm_calls``, ``variant``), 0 when absent
``items(state, key)``       a list field (``errors``, ``patches``, ``rejections``, ``judge``), a copy
==========================  ============================================================

A node is ``verb_noun(state: SampleState, runtime: Runtime[SynthesisContext]) -> dict`` returning
a partial update; ``rods_agents.run.context.context_of(runtime)`` gives the run settings.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from typing_extensions import TypedDict

from envs.task import Task
from rods_agents.analysis.profile import Profile
from rods_agents.analysis.tracing import Trace
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
from rods_agents.variation.plan import Plan


class SynthesisInput(TypedDict, total=False):
    """Input of the fan-out graph: seed tasks (BFCL entries) or seed ids from the train split."""

    seeds: list[dict]
    seed_ids: list[str]
    variants_per_seed: int


class SynthesisState(SynthesisInput, total=False):
    wave: int  # lanes' samples run one wave per superstep (graphs.lanes)
    results: Annotated[list[dict], operator.add]
    accepted: list[dict]
    rejected: list[dict]
    report: dict


class SynthesizeSample(TypedDict):
    """Payload sent to the ``synthesize_sample`` node: one (seed, variant) pair."""

    sample_id: str
    seed: dict
    variant: int
    siblings: list[dict]


class SampleState(TypedDict, total=False):
    """One sample's state; ``verdict`` holds a :class:`Verdict` dump, ``results`` the final :class:`SampleResult`."""

    sample_id: str
    seed: dict
    variant: int
    siblings: list[dict]  # variants of the scenario accepted before this sample (graphs.lanes.sibling_entry)
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


# ----------------------------------------------------------------------------- typed accessors
CounterKey = Literal["plan_attempt", "patch_attempts", "refine_rounds", "llm_calls", "variant"]
ListField = Literal["errors", "patches", "rejections", "judge"]


def sample_id(seed_id: str, variant: int) -> str:
    """The id (and checkpoint thread id) of one (seed, variant) sample: ``'<seed id>#v<variant>'``."""
    return f"{seed_id}#v{variant}"


def _model(state: Mapping[str, Any], key: str, model: Any) -> Any:
    raw = state.get(key)
    if raw is None:
        raise KeyError(f"sample state has no {key!r} yet (node order?)")
    return raw if isinstance(raw, model) else model.model_validate(raw)


def siblings_of(state: Mapping[str, Any]) -> list[Task]:
    """The variants of this sample's scenario accepted before it (the verdict refuses a near-copy of one)."""
    return [Task.model_validate(t) for t in state.get("siblings") or []]


def seed_of(state: Mapping[str, Any]) -> Task:
    """The seed task of this sample."""
    return _model(state, "seed", Task)


def task_of(state: Mapping[str, Any]) -> Task:
    """The candidate variant (written by the rewrite, replaced by a config patch)."""
    return _model(state, "task", Task)


def profile_of(state: Mapping[str, Any]) -> Profile:
    """The seed's profile Φ (written by ``extract_profile``)."""
    return _model(state, "profile", Profile)


def seed_trace_of(state: Mapping[str, Any]) -> Trace:
    """The seed's execution trace (written by ``extract_profile``)."""
    return _model(state, "seed_trace", Trace)


def trace_of(state: Mapping[str, Any]) -> Trace:
    """The candidate's execution trace (written by ``execute_plan``)."""
    return _model(state, "trace", Trace)


def plan_of(state: Mapping[str, Any]) -> Plan:
    """The candidate's plan (written by ``sample_plan``, its config by ``patch_config``)."""
    return _model(state, "plan", Plan)


def verdict_of(state: Mapping[str, Any]) -> Verdict | None:
    """The verdict a stage recorded, or None when there is none (yet, or after a re-plan)."""
    return Verdict.of(dict(state))


def count(state: Mapping[str, Any], key: CounterKey) -> int:
    """An integer counter of the sample; 0 when it was never written (or written as None)."""
    return int(state.get(key) or 0)


def items(state: Mapping[str, Any], key: ListField) -> list[dict]:
    """A copy of a list field of the sample; ``[]`` when absent."""
    return list(state.get(key) or [])


def timings_of(state: Mapping[str, Any]) -> dict[str, float]:
    """Seconds per stage so far (a copy)."""
    return dict(state.get("timings") or {})


__all__ = ["CounterKey", "ListField", "count", "items", "plan_of", "profile_of", "sample_id", "seed_of", "seed_trace_of",
           "siblings_of", "task_of", "timings_of", "trace_of", "verdict_of",
           "LLM_STAGES", "Argument", "ConfigPatchProposal", "JudgeVerdict", "NewValue", "PlanProposal", "PlannedCall",
           "Rename", "RewrittenTurns", "SampleResult", "SampleState", "SynthesisContext",
           "SynthesisInput", "SynthesisState", "SynthesizeSample", "Verdict"]
