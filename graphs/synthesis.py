"""Wiring of the skill-aligned synthesis pipeline: nodes, edges, routers (nodes live in ``rods_agents.stages``).

Per sample: profile -> plan -> rewrite -> execute -> (patch -> execute)* -> verdict -> judge
(-> refine -> verdict -> judge, once), with a bounded loop back to plan when the verdict or the judge
rejects. Routers read the typed :class:`rods_agents.run.outcome.Verdict` (its ``terminal`` flag)
through the accessors of :mod:`rods_agents.stages.state` and return ``Literal[...]`` so Studio draws
the branches. The run graph fans out with ``Send`` and a concurrency cap, one wave at a time: each scenario's
samples form a lane that runs in issue order, so a sample knows its accepted siblings (:mod:`graphs.lanes`);
then it de-duplicates accepted samples and builds the report (:mod:`graphs.results`).

``graph`` (compiled without a checkpointer) is what ``langgraph.json`` exports for Studio; the CLI
and the trainer run :func:`build_sample_graph` with a SQLite checkpointer, one thread per sample,
through the one sample driver :mod:`graphs.driver`.

The per-sample graph has no narrowed output schema on purpose: LangGraph's ``updates`` stream only
shows writes to output channels, so with ``output_schema=SampleOutput`` every inner node's update
streamed as ``null`` (Studio, the SDK). The run graph keeps only ``results`` of a finished sample
(the one key the two states share).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send

from envs.task import Task
from graphs.lanes import Siblings, lanes
from graphs.results import SynthesisReport, SynthesisResult, finalize_results, issue_key
from rods_agents.run.outcome import PIPELINE_EXCEPTION, Verdict
from rods_agents.run.runtime import context_of, emit
from rods_agents.stages.coherence_rewrite import refine_node, rewrite_node
from rods_agents.stages.config_patch import patch_node
from rods_agents.stages.execution_orchestrator import execute_plan
from rods_agents.stages.finalize import finalize_sample
from rods_agents.stages.judge import judge_candidate
from rods_agents.stages.profile_extraction import extract_profile
from rods_agents.stages.replan import start_plan_round, wants_text_fix
from rods_agents.stages.state import (
    SampleState,
    SynthesisContext,
    SynthesisInput,
    SynthesisState,
    SynthesizeSample,
    count,
    items,
    sample_id,
    verdict_of,
)
from rods_agents.stages.verdict import judge_variant

log = logging.getLogger("rods.synthesis")


# ----------------------------------------------------------------------------- guard and routers
def guarded(stage: str, node: Callable[..., dict]) -> Callable[..., dict]:
    """Last line of defence: a node that raises (bad seed data, garbage LLM output, a bug) ends its
    sample with the rejection ``pipeline_exception:<type>`` instead of killing the whole run."""

    @functools.wraps(node)
    def run(state: SampleState, runtime: Runtime[SynthesisContext]) -> dict:
        try:
            return node(state, runtime)
        except Exception as exc:  # noqa: BLE001 - recorded as a machine-readable rejection
            log.warning("sample %s: %s raised %s", state.get("sample_id"), stage, exc, exc_info=True)
            emit(runtime, state, stage, PIPELINE_EXCEPTION, error=type(exc).__name__)
            verdict = Verdict.reject(f"{PIPELINE_EXCEPTION}:{type(exc).__name__}",
                                     {"stage": stage, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}, terminal=True)
            return {"verdict": verdict.dump()}
    return run


def _ends_sample(state: SampleState) -> bool:
    """True when a stage recorded a terminal rejection (the verdict's ``terminal`` flag)."""
    verdict = verdict_of(state)
    return verdict is not None and verdict.terminal


def route_after_profile(state: SampleState) -> Literal["sample_plan", "finalize_sample"]:
    return "finalize_sample" if verdict_of(state) is not None else "sample_plan"


def route_after_plan(state: SampleState) -> Literal["rewrite_turns", "finalize_sample"]:
    return "finalize_sample" if _ends_sample(state) else "rewrite_turns"


def route_after_rewrite(state: SampleState) -> Literal["execute_plan", "finalize_sample"]:
    return "finalize_sample" if _ends_sample(state) else "execute_plan"


def route_after_execute(state: SampleState, runtime: Runtime[SynthesisContext]
                        ) -> Literal["patch_config", "judge_variant", "finalize_sample"]:
    if _ends_sample(state):
        return "finalize_sample"
    if items(state, "errors") and not state.get("patch_failed") \
            and count(state, "patch_attempts") < context_of(runtime).max_patch_attempts:
        return "patch_config"
    return "judge_variant"


def route_after_patch(state: SampleState) -> Literal["execute_plan", "judge_variant", "finalize_sample"]:
    if _ends_sample(state):
        return "finalize_sample"
    return "judge_variant" if state.get("patch_failed") else "execute_plan"


def _replan_or_finish(state: SampleState, runtime: Runtime[SynthesisContext]) -> Literal["sample_plan", "finalize_sample"]:
    if _ends_sample(state) or count(state, "plan_attempt") >= context_of(runtime).max_plan_attempts:
        return "finalize_sample"
    return "sample_plan"


def route_after_verdict(state: SampleState, runtime: Runtime[SynthesisContext]
                        ) -> Literal["judge_candidate", "refine_turns", "sample_plan", "finalize_sample"]:
    """Accepted: the judge (LLM) or done. Rejected for the words alone (a text fault): back to the LLM
    rewrite with the reasons, keeping the plan (once per plan). Any plan fault: re-plan (bounded)."""
    verdict = verdict_of(state)
    ctx = context_of(runtime)
    if verdict is not None and verdict.accepted:
        return "judge_candidate" if ctx.uses_llm("judge") else "finalize_sample"
    if wants_text_fix(state, ctx.uses_llm("rewrite")):
        return "refine_turns"
    return _replan_or_finish(state, runtime)


def route_after_judge(state: SampleState, runtime: Runtime[SynthesisContext]
                      ) -> Literal["refine_turns", "sample_plan", "finalize_sample"]:
    verdict = verdict_of(state)
    if verdict is not None and verdict.accepted:
        return "finalize_sample"
    if state.get("refine_pending") and not _ends_sample(state):
        return "refine_turns"
    return _replan_or_finish(state, runtime)


def route_after_refine(state: SampleState) -> Literal["judge_variant", "finalize_sample"]:
    return "finalize_sample" if _ends_sample(state) else "judge_variant"


def build_sample_graph() -> StateGraph:
    """The per-sample pipeline (compile with a checkpointer for resumable runs: :mod:`graphs.driver`)."""
    g = StateGraph(SampleState, context_schema=SynthesisContext)
    g.add_node("extract_profile", guarded("profile", extract_profile))
    g.add_node("sample_plan", guarded("plan", start_plan_round))
    g.add_node("rewrite_turns", guarded("rewrite", rewrite_node))
    g.add_node("execute_plan", guarded("execute", execute_plan))
    g.add_node("patch_config", guarded("patch", patch_node))
    g.add_node("judge_variant", guarded("verdict", judge_variant))
    g.add_node("judge_candidate", guarded("judge", judge_candidate))
    g.add_node("refine_turns", guarded("refine", refine_node))
    g.add_node("finalize_sample", finalize_sample)
    g.add_edge(START, "extract_profile")
    g.add_conditional_edges("extract_profile", route_after_profile)  # a seed that errors (or raises) is dropped
    g.add_conditional_edges("sample_plan", route_after_plan)  # invalid LLM plan ends the sample
    g.add_conditional_edges("rewrite_turns", route_after_rewrite)  # invalid LLM output ends the sample
    g.add_conditional_edges("execute_plan", route_after_execute)  # errors go to the patch agent (bounded)
    g.add_conditional_edges("patch_config", route_after_patch)  # re-execute the patched config
    g.add_conditional_edges("judge_variant", route_after_verdict)  # accepted: LLM judge; text fault: rewrite; else re-plan
    g.add_conditional_edges("judge_candidate", route_after_judge)  # fixable: one refine round; else re-plan
    g.add_conditional_edges("refine_turns", route_after_refine)  # the refined text goes through the rules again
    g.add_edge("finalize_sample", END)
    return g


# ----------------------------------------------------------------------------- run-level nodes
def load_seeds(state: SynthesisState, runtime: Runtime[SynthesisContext]) -> dict:
    """Resolve ``seed_ids`` against the train split when no seed tasks were passed."""
    warm_caches()
    if state.get("seeds"):
        return {"wave": 0}  # a run again on the same thread (Studio) starts from the first wave
    from envs.dataset import load_tasks

    ids = state.get("seed_ids") or []
    return {"wave": 0, "seeds": [t.to_bfcl() for t in load_tasks("train", ids=ids)] if ids else []}


def fan_out(state: SynthesisState, runtime: Runtime[SynthesisContext]) -> list[Send]:
    """One ``Send`` per lane (:mod:`graphs.lanes`): the lane's sample of this wave, with its siblings (the lane's
    samples accepted in earlier waves). ``[]`` once every lane is done."""
    wave = int(state.get("wave") or 0)
    n = int(state.get("variants_per_seed") or context_of(runtime).variants_per_seed)
    seeds = [Task.from_bfcl(e) for e in state.get("seeds", [])]  # parsed once per wave
    by_id = {task.id: task for task in seeds}
    index = {task.id: i for i, task in enumerate(seeds)}
    siblings = Siblings()
    for r in sorted(state.get("results") or [], key=lambda r: issue_key(r, index)):
        if r.get("seed_id") in by_id:
            siblings.add(by_id[r["seed_id"]], r)
    samples = [(task, v) for task in seeds for v in range(n)]
    return [Send("synthesize_sample", SynthesizeSample(sample_id=sample_id(task.id, v), seed=task.model_dump(),
                                                       variant=v, siblings=siblings.before(task)))
            for lane in lanes(samples, lambda sample: sample[0]) if wave < len(lane) for task, v in [lane[wave]]]


def next_wave(state: SynthesisState) -> dict:
    """The wave of samples just finished: the next one starts knowing their verdicts."""
    return {"wave": int(state.get("wave") or 0) + 1}


def route_after_wave(state: SynthesisState, runtime: Runtime[SynthesisContext]) -> list[Send] | str:
    """The next wave's samples, or ``collect_results`` when no lane has one left."""
    return fan_out(state, runtime) or "collect_results"


def _seed_index(seeds: list[dict]) -> dict[str, int]:
    return {Task.from_bfcl(e).id: i for i, e in enumerate(seeds)}


def collect_results(state: SynthesisState, runtime: Runtime[SynthesisContext]) -> dict:
    """De-duplicate accepted samples (issue order) and build the report."""
    result = finalize_results(state.get("results", []), seed_index=_seed_index(state.get("seeds", [])))
    return {"accepted": [t.to_bfcl() for t in result.accepted], "rejected": result.rejected,
            "report": result.report.dump()}


def build_synthesis_graph() -> StateGraph:
    """The run graph: load seeds, fan out over the lanes one wave at a time (each lane's next sample), collect and
    report."""
    g = StateGraph(SynthesisState, input_schema=SynthesisInput, context_schema=SynthesisContext)
    g.add_node("load_seeds", load_seeds)
    g.add_node("synthesize_sample", build_sample_graph().compile())
    g.add_node("next_wave", next_wave)
    g.add_node("collect_results", collect_results)
    g.add_edge(START, "load_seeds")
    g.add_conditional_edges("load_seeds", route_after_wave, ["synthesize_sample", "collect_results"])  # Send per lane
    g.add_edge("synthesize_sample", "next_wave")
    g.add_conditional_edges("next_wave", route_after_wave, ["synthesize_sample", "collect_results"])  # lanes' next
    g.add_edge("collect_results", END)
    return g


graph = build_synthesis_graph().compile()


# ----------------------------------------------------------------------------- in-process entry points
def warm_caches() -> None:
    """Build the shared, cached indexes once, before samples run concurrently."""
    from rods_agents.analysis.catalog import build_catalog
    from rods_agents.analysis.contamination import contamination_threshold

    build_catalog()
    contamination_threshold()


def as_context(config: SynthesisContext | dict | None) -> SynthesisContext:
    """A :class:`SynthesisContext` from None (defaults), a dict of its fields, or itself."""
    if config is None:
        return SynthesisContext()
    if isinstance(config, SynthesisContext):
        return config
    return SynthesisContext(**config)


def _result_of(out: dict, wall_s: float) -> SynthesisResult:
    """The run graph's own de-duplicated outcome (``collect_results``), not recomputed."""
    if "report" not in out:
        return finalize_results(out.get("results", []), wall_s, _seed_index(out.get("seeds", [])))
    return SynthesisResult(accepted=[Task.from_bfcl(e) for e in out.get("accepted", [])],
                           rejected=list(out.get("rejected", [])),
                           report=SynthesisReport.model_validate({**out["report"], "wall_s": round(wall_s, 3)}))


def synthesize(seeds: list[Task], config: SynthesisContext | dict | None = None) -> SynthesisResult:
    """Grow verified variants of ``seeds`` in process, without checkpoints (see :mod:`graphs.driver` for
    the resumable, checkpointed run the CLI and the trainer use)."""
    ctx = as_context(config)
    start = time.perf_counter()
    out = graph.invoke({"seeds": [s.to_bfcl() for s in seeds], "variants_per_seed": ctx.variants_per_seed},
                       context=ctx, config={"max_concurrency": ctx.concurrency, "recursion_limit": 10_000})
    return _result_of(out, time.perf_counter() - start)


async def asynthesize(seeds: list[Task], config: SynthesisContext | dict | None = None) -> SynthesisResult:
    """Async variant of :func:`synthesize` (runs the graph with ``ainvoke``)."""
    ctx = as_context(config)
    start = time.perf_counter()
    out = await graph.ainvoke({"seeds": [s.to_bfcl() for s in seeds], "variants_per_seed": ctx.variants_per_seed},
                              context=ctx, config={"max_concurrency": ctx.concurrency, "recursion_limit": 10_000})
    return _result_of(out, time.perf_counter() - start)


__all__ = ["SynthesisContext", "SynthesisReport", "SynthesisResult", "as_context", "asynthesize", "build_sample_graph",
           "build_synthesis_graph", "collect_results", "fan_out", "finalize_results", "finalize_sample", "graph", "guarded",
           "load_seeds", "next_wave", "route_after_wave", "sample_id", "start_plan_round", "synthesize", "warm_caches"]
