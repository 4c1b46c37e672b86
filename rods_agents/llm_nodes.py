"""Graph nodes that run an offline stage and, where the run's LLM backbone takes it over, the LLM on top.

The offline stages (:mod:`plan_sampling`, :mod:`coherence_rewrite`, :mod:`config_patch`) know nothing
of the LLM; this module composes them with :class:`rods_agents.llm_backbone.LLMBackbone`, so imports
go one way (offline stages <- llm_backbone <- llm_nodes <- graphs). A stage whose LLM gives up ends
its sample with a *terminal* verdict: ``llm_invalid_output`` or ``llm_unreachable``.
"""

from __future__ import annotations

from typing import Any

from envs.task import Task
from rods_agents.coherence_rewrite import rewrite_turns
from rods_agents.config_patch import ConfigPatch, patch_config
from rods_agents.llm_backbone import LLMStageError, LLMUnreachableError, backbone_for
from rods_agents.outcome import LLMUsage, Verdict, merge_usage
from rods_agents.plan_sampling import Plan, sample_plan
from rods_agents.profile_extraction import Profile
from rods_agents.runtime_utils import emit, stage_timer
from rods_agents.tracing import Trace


def charge(state: dict, stage: str, usage: LLMUsage) -> dict[str, Any]:
    """State updates that add ``usage`` to the sample's call count and per-stage token accounting."""
    return {"llm_calls": int(state.get("llm_calls", 0) or 0) + usage.calls,
            "llm_usage": merge_usage(state.get("llm_usage"), stage, usage)}


def gave_up(state: dict, runtime: Any, stage: str, exc: LLMStageError, timings: dict) -> dict[str, Any]:
    """The terminal rejection of a stage whose LLM gave up (invalid answers or an unreachable endpoint)."""
    emit(runtime, state, stage, exc.reason)
    return {"timings": timings, **charge(state, stage, exc.usage),
            "verdict": Verdict.reject(exc.reason, exc.detail(stage), terminal=True).dump()}


def plan_node(state: dict, runtime: Any = None) -> dict:
    """Node ``sample_plan`` body: the offline draft, then (LLM plan stage) a plan the LLM makes from it.

    The LLM sees the reasons earlier attempts of this sample were rejected (``state['rejections']``)."""
    out = sample_plan(state, runtime)
    backbone = backbone_for(runtime, "plan")
    if backbone is None or "plan" not in out:
        return out
    with stage_timer({"timings": out.get("timings", {})}, "plan") as timings:
        seed = Task.model_validate(state["seed"])
        try:
            plan, usage = backbone.refine_plan(seed, Profile.model_validate(state["profile"]),
                                               Trace.model_validate(state["seed_trace"]),
                                               Plan.model_validate(out["plan"]), state, state.get("rejections") or [])
        except LLMStageError as exc:
            return gave_up(state, runtime, "plan", exc, timings)
    return {**out, "plan": plan.model_dump(), "timings": timings, **charge(state, "plan", usage)}


def _rewrite_with_llm(state: dict, runtime: Any, task: Task, timings_state: dict, feedback: str = "") -> dict:
    backbone = backbone_for(runtime, "rewrite")
    assert backbone is not None
    with stage_timer(timings_state, "rewrite") as timings:
        try:
            turns, usage = backbone.rewrite_turns(Task.model_validate(state["seed"]),
                                                  Profile.model_validate(state["profile"]),
                                                  Trace.model_validate(state["seed_trace"]), task.ground_truth,
                                                  task.turns, state, feedback=feedback)
        except LLMStageError as exc:
            return gave_up(state, runtime, "rewrite", exc, timings)
        task.turns = turns
    return {"task": task.model_dump(), "timings": timings, **charge(state, "rewrite", usage)}


def rewrite_node(state: dict, runtime: Any = None) -> dict:
    """Node ``rewrite_turns`` body: the seed-anchored offline turns, then (LLM rewrite stage) the LLM's."""
    out = rewrite_turns(state, runtime)
    if backbone_for(runtime, "rewrite") is None or "task" not in out:
        return out
    return {**out, **_rewrite_with_llm(state, runtime, Task.model_validate(out["task"]),
                                       {"timings": out.get("timings", {})})}


def refine_node(state: dict, runtime: Any = None) -> dict:
    """Node ``refine_turns``: the one refine round, a rewrite of the candidate's text with the judge's critique."""
    last = (state.get("judge") or [{}])[-1]
    feedback = str(last.get("critique") or last.get("reasoning") or "")
    rounds = int(state.get("refine_rounds", 0) or 0) + 1
    emit(runtime, state, "refine", "start", round=rounds)
    out = _rewrite_with_llm(state, runtime, Task.model_validate(state["task"]), state, feedback=feedback)
    return {**out, "refine_rounds": rounds, "refine_pending": False} | ({} if "verdict" in out else {"verdict": None})


def patch_node(state: dict, runtime: Any = None) -> dict:
    """Node ``patch_config`` body: the rule table, then (LLM patch stage) the LLM for errors no rule covers."""
    backbone = backbone_for(runtime, "patch")
    if backbone is None:
        return patch_config(state, runtime)

    def ask_llm(task: Task, error: dict, st: dict) -> tuple[ConfigPatch | None, dict, dict[str, Any]]:
        try:
            patch, config, usage = backbone.propose_patch(task, error, st)
        except LLMUnreachableError as exc:
            return None, task.initial_config, {**charge(st, "patch", exc.usage), "llm_error": exc.detail("patch"),
                                               "verdict": Verdict.reject(exc.reason, exc.detail("patch"),
                                                                         terminal=True).dump()}
        except LLMStageError as exc:  # every answer refused: the reasons go to the rejection detail
            return None, task.initial_config, {**charge(st, "patch", exc.usage), "llm_error": exc.detail("patch")}
        return patch, config, charge(st, "patch", usage)

    return patch_config(state, runtime, fallback=ask_llm)
