"""Stage 4, execution orchestrator: run the candidate's ground truth turn by turn on fresh instances and classify errors."""

from __future__ import annotations

from typing import Any

from envs.task import Task
from rods_agents.analysis.execution import error_report, flag_outcome_flips
from rods_agents.analysis.tracing import Trace, trace_task
from rods_agents.run.runtime import emit, stage_timer


def _turn_texts(task: Task) -> list[str]:
    return [" ".join(m.content for m in turn) for turn in task.turns]


def execute_plan(state: dict, runtime: Any = None) -> dict:
    """Graph node: execute the candidate task; record every result and the classified errors."""
    with stage_timer(state, "execute") as timings:
        task = Task.model_validate(state["task"])
        trace = trace_task(task)
        errors = [error_report(r) for r in trace.errors]
        if not errors and state.get("seed_trace"):
            seed = Task.model_validate(state["seed"]) if state.get("seed") else None
            errors = flag_outcome_flips(trace, Trace.model_validate(state["seed_trace"]),
                                        _turn_texts(seed) if seed else None, _turn_texts(task))
    emit(runtime, state, "execute", "error" if errors else "ok", errors=len(errors))
    return {"trace": trace.model_dump(), "errors": errors, "timings": timings}
