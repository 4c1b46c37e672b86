"""Stage 2: sample a new ground-truth plan and initial_config with the seed's profile.

The offline sampler is :func:`sample_variant_plan`, anchored on the seed's own words
(:mod:`rods_agents.variation.anchored_plan`: only changes the seed's text can carry, values of the same kind,
options swapped for documented options, values read from results re-derived by the seed's path,
state drawn to miss a precondition the config patch agent then repairs). This module holds the
:class:`Plan` model, the graph node and the config helpers the LLM plan stage shares.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from envs.task import Task
from prompts import PROMPTS_DIR as PROMPTS  # noqa: F401 - the one prompts/ loader; PROMPTS re-exported
from rods_agents.analysis.profile import Profile
from rods_agents.analysis.tracing import Trace
from rods_agents.llm.accounting import charge, gave_up
from rods_agents.llm.backbone import LLMStageError, backbone_for
from rods_agents.run.runtime import emit, rng_for, stage_timer
from rods_agents.stages.state import (
    SampleState,
    SynthesisContext,
    count,
    items,
    profile_of,
    seed_of,
    seed_trace_of,
)
from rods_agents.variation.plan import Plan


def sample_variant_plan(seed: Task, profile: Profile, trace: Trace, rng: Any, attempt: int = 0,
                        slot: int | None = None) -> Plan:
    """Draw one candidate plan anchored on the seed (see :mod:`rods_agents.variation.anchored_plan`);
    deterministic given ``rng``'s state. ``slot`` (:func:`rods_agents.variation.anchored_plan.sibling_slot`)
    coordinates choices among a scenario's samples so that siblings differ."""
    from rods_agents.variation.anchored_plan import anchored_plan

    return Plan(**anchored_plan(seed, profile, trace, rng, attempt, slot=slot))


def sample_plan(state: SampleState, runtime: Runtime[SynthesisContext] | None = None) -> dict:
    """Graph node: draw a candidate plan for this (seed, variant, attempt) (offline; the LLM plan stage
    refines it in :mod:`rods_agents.stages.plan_sampling`)."""
    with stage_timer(state, "plan") as timings:
        seed, profile, trace = seed_of(state), profile_of(state), seed_trace_of(state)
        attempt, variant = count(state, "plan_attempt"), count(state, "variant")
        ctx_seed = getattr(getattr(runtime, "context", None), "seed", 0) if runtime is not None else 0
        rng = rng_for(ctx_seed, seed.id, variant, attempt)
        from rods_agents.variation.anchored_plan import sibling_slot

        plan = sample_variant_plan(seed, profile, trace, rng, attempt,
                                   slot=sibling_slot(seed.category, variant, attempt))
    emit(runtime, state, "plan", "ok", attempt=attempt)
    return {"plan": plan.model_dump(), "timings": timings, "patches": [], "patch_attempts": 0}


def plan_node(state: SampleState, runtime: Runtime[SynthesisContext] | None = None) -> dict:
    """Node ``sample_plan`` body: the offline draft, then (LLM plan stage) a plan the LLM makes from it.

    The LLM sees the reasons earlier attempts of this sample were rejected (``state['rejections']``)."""
    out = sample_plan(state, runtime)
    backbone = backbone_for(runtime, "plan")
    if backbone is None or "plan" not in out:
        return out
    with stage_timer({"timings": out.get("timings", {})}, "plan") as timings:
        try:
            plan, usage = backbone.refine_plan(seed_of(state), profile_of(state), seed_trace_of(state),
                                               Plan.model_validate(out["plan"]), state, items(state, "rejections"))
        except LLMStageError as exc:
            return gave_up(state, runtime, "plan", exc, timings)
    return {**out, "plan": plan.model_dump(), "timings": timings, **charge(state, "plan", usage)}
