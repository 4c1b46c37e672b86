"""Stage 4, execution orchestrator: run the candidate's ground truth turn by turn on fresh instances and classify errors."""

from __future__ import annotations

from typing import TYPE_CHECKING

from envs.task import Task
from rods_agents.analysis.execution import error_report, flag_outcome_flips
from rods_agents.analysis.tracing import trace_task
from rods_agents.run.runtime import emit, stage_timer
from rods_agents.stages.state import SampleState, seed_of, seed_trace_of, task_of

if TYPE_CHECKING:
    from langgraph.runtime import Runtime

    from rods_agents.run.context import SynthesisContext


def _turn_texts(task: Task) -> list[str]:
    return [" ".join(m.content for m in turn) for turn in task.turns]


def execute_plan(state: SampleState, runtime: Runtime[SynthesisContext] | None = None) -> dict:
    """Graph node: execute the candidate task; record every result and the classified errors.

    Without a call error, a call whose outcome flipped against the seed's (a check that now fails,
    a stated limit now decided the other way) is an error too: the patch agent repairs the state."""
    with stage_timer(state, "execute") as timings:
        task = task_of(state)
        trace = trace_task(task)
        errors = [error_report(r) for r in trace.errors]
        if not errors and state.get("seed_trace"):
            seed = seed_of(state) if state.get("seed") else None
            errors = flag_outcome_flips(trace, seed_trace_of(state),
                                        _turn_texts(seed) if seed else None, _turn_texts(task))
    emit(runtime, state, "execute", "error" if errors else "ok", errors=len(errors))
    return {"trace": trace.model_dump(), "errors": errors, "timings": timings}
