"""Stage 5, config patch: repair the candidate's initial_config for its first execution error
(rule table in :mod:`rods_agents.variation.config_rules`, LLM for errors no rule covers).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from envs.task import Task
from rods_agents.llm.accounting import charge
from rods_agents.llm.backbone import LLMStageError, LLMUnreachableError, backbone_for
from rods_agents.run.outcome import Verdict
from rods_agents.run.runtime import emit, stage_timer
from rods_agents.stages.state import SampleState, count, items, plan_of, task_of, trace_of
from rods_agents.variation.config_rules import ConfigPatch, PatchFallback, propose_patch

if TYPE_CHECKING:
    from langgraph.runtime import Runtime

    from rods_agents.run.context import SynthesisContext


def patch_config(state: SampleState, runtime: Runtime[SynthesisContext] | None = None,
                 fallback: PatchFallback | None = None) -> dict:
    """Graph node: patch the candidate's initial_config for its first execution error.

    The rule table goes first; ``fallback`` (the LLM patch stage, passed in by
    :mod:`rods_agents.stages.plan_sampling`) is asked only for an error no rule covers."""
    with stage_timer(state, "patch") as timings:
        task = task_of(state)
        trace = trace_of(state)
        error = items(state, "errors")[0]
        config = copy.deepcopy(task.initial_config)
        patch = propose_patch(config, error, trace)
        extra: dict[str, Any] = {}
        if patch is None and fallback is not None:
            patch, config, extra = fallback(task, error, state)
        attempts = count(state, "patch_attempts") + 1
        out: dict[str, Any] = {"patch_attempts": attempts, "timings": timings, **extra}
        if patch is None:
            out["patch_failed"] = True
        else:
            task.initial_config = config
            out["task"] = task.model_dump()
            out["patches"] = [*items(state, "patches"), patch.model_dump()]
            plan = plan_of(state)
            plan.initial_config = config
            out["plan"] = plan.model_dump()
    emit(runtime, state, "patch", "ok" if patch else "no_rule", attempt=attempts)
    return out


def patch_node(state: SampleState, runtime: Runtime[SynthesisContext] | None = None) -> dict:
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
