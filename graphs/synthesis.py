"""Wiring of the skill-aligned synthesis pipeline (stages live in ``rods_agents``).

Per sample: profile -> plan -> rewrite -> execute -> (patch -> execute)* -> verdict -> judge
(-> refine -> verdict -> judge, once), with a bounded loop back to plan when the verdict or the judge
rejects. Routers read the typed :class:`rods_agents.run.outcome.Verdict` and its ``terminal`` flag. The run graph fans out over (seed, variant) with
``Send`` and a concurrency cap, then de-duplicates accepted samples and writes the report.

``graph`` (compiled without a checkpointer) is what ``langgraph.json`` exports for Studio; the CLI
compiles :func:`build_sample_graph` with a SQLite checkpointer, one thread per sample.
"""

from __future__ import annotations

import functools
import logging
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send

from envs.task import Task
from rods_agents.analysis.contamination import fingerprint, same_substance
from rods_agents.analysis.value_sources import SOURCES
from rods_agents.run.context import LLM_STAGES
from rods_agents.run.outcome import LLM_INVALID_OUTPUT, LLM_UNREACHABLE, PIPELINE_EXCEPTION, SampleResult, Verdict
from rods_agents.run.runtime import context_of, emit
from rods_agents.stages.coherence_rewrite import refine_node, rewrite_node
from rods_agents.stages.config_patch import patch_node
from rods_agents.stages.execution_orchestrator import execute_plan
from rods_agents.stages.judge import judge_candidate
from rods_agents.stages.plan_sampling import plan_node
from rods_agents.stages.profile_extraction import extract_profile
from rods_agents.stages.state import (
    SampleOutput,
    SampleState,
    SynthesisContext,
    SynthesisInput,
    SynthesisState,
    SynthesizeSample,
)
from rods_agents.stages.verdict import judge_variant

log = logging.getLogger("rods.synthesis")

STAGES = ("profile", "plan", "rewrite", "execute", "patch", "verdict", "judge")


def sample_id(seed_id: str, variant: int) -> str:
    return f"{seed_id}#v{variant}"


# ----------------------------------------------------------------------------- per-sample nodes
def finalize_sample(state: SampleState, runtime: Runtime[SynthesisContext]) -> dict:
    """Package the sample's outcome: the accepted task (with provenance) or the rejection.

    Never raises: if packaging fails, the sample is a ``pipeline_exception:<type>`` rejection."""
    try:
        return _package_sample(state, runtime)
    except Exception as exc:  # noqa: BLE001 - recorded as a machine-readable rejection
        log.warning("sample %s: finalize raised %s", state.get("sample_id"), exc, exc_info=True)
        seed = state.get("seed") or {}
        result = SampleResult(
            sample_id=state.get("sample_id"), seed_id=seed.get("id") if isinstance(seed, dict) else None,
            variant=int(state.get("variant", 0) or 0), reasons=[f"{PIPELINE_EXCEPTION}:{type(exc).__name__}"],
            detail={"stage": "finalize", "error": f"{type(exc).__name__}: {str(exc)[:300]}"},
            timings=dict(state.get("timings") or {}), llm_calls=int(state.get("llm_calls", 0) or 0),
            llm_usage=dict(state.get("llm_usage") or {}), plan_attempts=int(state.get("plan_attempt", 0) or 0))
        emit(runtime, state, "done", "rejected")
        return {"results": [result.model_dump()]}


def _package_sample(state: SampleState, runtime: Runtime[SynthesisContext]) -> dict:
    ctx = context_of(runtime)
    verdict = Verdict.of(state) or Verdict.reject("no_verdict")
    seed = state["seed"]
    detail = dict(verdict.detail)
    variant_profile = detail.pop("profile", None)
    profile = state.get("profile") or {}
    judge_log = list(state.get("judge") or [])
    if judge_log and not verdict.accepted:
        detail.setdefault("judge_log", judge_log)
    if state.get("rejections"):
        detail.setdefault("earlier_attempts", [{"reasons": r.get("reasons", [])} for r in state["rejections"]])
    result = SampleResult(
        sample_id=state["sample_id"], seed_id=seed["id"], variant=int(state.get("variant", 0) or 0),
        accepted=verdict.accepted, reasons=list(verdict.reasons), detail=detail,
        timings=dict(state.get("timings") or {}), llm_calls=int(state.get("llm_calls", 0) or 0),
        llm_usage=dict(state.get("llm_usage") or {}), patches=list(state.get("patches") or []),
        plan_attempts=int(state.get("plan_attempt", 0) or 0) + (1 if verdict.accepted else 0),
        refine_rounds=int(state.get("refine_rounds", 0) or 0), judge=judge_log,
        seed_sources=dict(Counter(a["source"] for a in profile.get("arg_sources", []))),
        variant_sources=dict(Counter(a["source"] for a in (variant_profile or {}).get("arg_sources", []))),
    ).model_dump()
    if result["accepted"]:
        task = Task.model_validate(state["task"])
        plan = state.get("plan") or {}
        task.provenance = {
            "seed_id": seed["id"], "variant": state.get("variant", 0), "run_seed": ctx.seed,
            "backbone": ctx.backbone, "models": list(ctx.models), "llm_stages": list(ctx.llm_stages) if ctx.backbone == "llm" else [],
            "profile": {k: v for k, v in (variant_profile or {}).items() if k not in ("nodes",)},
            "renames": plan.get("renames", {}), "numbers": plan.get("numbers", {}),
            "substitutions": plan.get("substitutions", []), "swaps": plan.get("swaps", {}),
            "derived": plan.get("derived", []), "state_changes": plan.get("state_changes", {}),
            "patches": state.get("patches", []),
            "plan_attempts": result["plan_attempts"], "timings": state.get("timings", {}),
            "stated_fallbacks": detail.get("stated_fallbacks", []),
            "llm_calls": result["llm_calls"], "llm_usage": result["llm_usage"],
            "judge": judge_log, "refine_rounds": result["refine_rounds"],
            "earlier_attempts": detail.get("earlier_attempts", []), "similarity": {k: detail.get(k) for k in ("seed_similarity", "test_similarity", "nearest_test")},
        }
        result["task"] = task.to_bfcl()
    emit(runtime, state, "done", "accepted" if result["accepted"] else "rejected")
    return {"results": [result]}


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
    verdict = Verdict.of(state)
    return verdict is not None and verdict.terminal


def route_after_profile(state: SampleState) -> Literal["sample_plan", "finalize_sample"]:
    return "finalize_sample" if state.get("verdict") else "sample_plan"


def route_after_plan(state: SampleState) -> Literal["rewrite_turns", "finalize_sample"]:
    return "finalize_sample" if _ends_sample(state) else "rewrite_turns"


def route_after_rewrite(state: SampleState) -> Literal["execute_plan", "finalize_sample"]:
    return "finalize_sample" if _ends_sample(state) else "execute_plan"


def route_after_execute(state: SampleState, runtime: Runtime[SynthesisContext]
                        ) -> Literal["patch_config", "judge_variant", "finalize_sample"]:
    ctx = context_of(runtime)
    if _ends_sample(state):
        return "finalize_sample"
    if state.get("errors") and not state.get("patch_failed") and int(state.get("patch_attempts", 0)) < ctx.max_patch_attempts:
        return "patch_config"
    return "judge_variant"


def route_after_patch(state: SampleState) -> Literal["execute_plan", "judge_variant", "finalize_sample"]:
    if _ends_sample(state):
        return "finalize_sample"
    return "judge_variant" if state.get("patch_failed") else "execute_plan"


def _replan_or_finish(state: SampleState, runtime: Runtime[SynthesisContext]) -> Literal["sample_plan", "finalize_sample"]:
    if _ends_sample(state) or int(state.get("plan_attempt", 0)) >= context_of(runtime).max_plan_attempts:
        return "finalize_sample"
    return "sample_plan"


def route_after_verdict(state: SampleState, runtime: Runtime[SynthesisContext]
                        ) -> Literal["judge_candidate", "sample_plan", "finalize_sample"]:
    verdict = Verdict.of(state)
    if verdict is not None and verdict.accepted:
        return "judge_candidate" if context_of(runtime).uses_llm("judge") else "finalize_sample"
    return _replan_or_finish(state, runtime)


def route_after_judge(state: SampleState, runtime: Runtime[SynthesisContext]
                      ) -> Literal["refine_turns", "sample_plan", "finalize_sample"]:
    verdict = Verdict.of(state)
    if verdict is not None and verdict.accepted:
        return "finalize_sample"
    if state.get("refine_pending") and not _ends_sample(state):
        return "refine_turns"
    return _replan_or_finish(state, runtime)


def route_after_refine(state: SampleState) -> Literal["judge_variant", "finalize_sample"]:
    return "finalize_sample" if _ends_sample(state) else "judge_variant"


def _rejection_record(verdict: Verdict, attempt: int) -> dict:
    """What the next plan prompt is told about a rejected attempt (no bulky profile)."""
    detail = {k: v for k, v in verdict.detail.items() if k not in ("profile", "judge_log")}
    if isinstance(detail.get("judge"), dict):
        detail["judge"] = {k: detail["judge"].get(k) for k in ("decision", "fault", "critique", "easier_than_seed")}
    return {"attempt": attempt, "reasons": list(verdict.reasons), "detail": detail}


def start_plan_round(state: SampleState, runtime: Runtime[SynthesisContext]) -> dict:
    """Node ``sample_plan``: start a (re)plan round — remember why the previous candidate was rejected
    (the LLM planner is told), forget its verdict and patch state, then plan anew."""
    rejections = list(state.get("rejections") or [])
    previous = Verdict.of(state)
    if previous is not None and not previous.accepted:
        rejections.append(_rejection_record(previous, len(rejections)))
    fresh = {"verdict": None, "patch_failed": False, "errors": [], "patch_attempts": 0, "llm_error": None,
             "rejections": rejections, "refine_rounds": 0, "refine_pending": False}
    return fresh | plan_node({**state, **fresh}, runtime)


def build_sample_graph() -> StateGraph:
    """The per-sample pipeline (compile with a checkpointer for resumable runs)."""
    g = StateGraph(SampleState, context_schema=SynthesisContext, output_schema=SampleOutput)
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
    g.add_conditional_edges("judge_variant", route_after_verdict)  # accepted: LLM judge; rejected: re-plan (bounded)
    g.add_conditional_edges("judge_candidate", route_after_judge)  # fixable: one refine round; else re-plan
    g.add_conditional_edges("refine_turns", route_after_refine)  # the refined text goes through the rules again
    g.add_edge("finalize_sample", END)
    return g


# ----------------------------------------------------------------------------- run-level nodes
def load_seeds(state: SynthesisState, runtime: Runtime[SynthesisContext]) -> dict:
    """Resolve ``seed_ids`` against the train split when no seed tasks were passed."""
    warm_caches()
    if state.get("seeds"):
        return {}
    from envs.dataset import load_tasks

    ids = state.get("seed_ids") or []
    return {"seeds": [t.to_bfcl() for t in load_tasks("train", ids=ids)]} if ids else {"seeds": []}


def fan_out(state: SynthesisState, runtime: Runtime[SynthesisContext]) -> list[Send]:
    """One ``Send`` per (seed, variant), in a stable order."""
    ctx = context_of(runtime)
    n = int(state.get("variants_per_seed") or ctx.variants_per_seed)
    sends = []
    for entry in state.get("seeds", []):
        task = Task.from_bfcl(entry)
        for v in range(n):
            sends.append(Send("synthesize_sample", SynthesizeSample(sample_id=sample_id(task.id, v),
                                                                     seed=task.model_dump(), variant=v)))
    return sends


def collect_results(state: SynthesisState, runtime: Runtime[SynthesisContext]) -> dict:
    """De-duplicate accepted samples (issue order) and build the report."""
    seed_index = {Task.from_bfcl(e).id: i for i, e in enumerate(state.get("seeds", []))}
    result = finalize_results(state.get("results", []), seed_index=seed_index)
    return {"accepted": [t.to_bfcl() for t in result.accepted], "rejected": result.rejected, "report": result.report}


def build_synthesis_graph() -> StateGraph:
    """The run graph: load seeds, fan out over (seed, variant), collect and report."""
    g = StateGraph(SynthesisState, input_schema=SynthesisInput, context_schema=SynthesisContext)
    g.add_node("load_seeds", load_seeds)
    g.add_node("synthesize_sample", build_sample_graph().compile())
    g.add_node("collect_results", collect_results)
    g.add_edge(START, "load_seeds")
    g.add_conditional_edges("load_seeds", fan_out, ["synthesize_sample"])  # Send per (seed, variant)
    g.add_edge("synthesize_sample", "collect_results")
    g.add_edge("collect_results", END)
    return g


graph = build_synthesis_graph().compile()


# ----------------------------------------------------------------------------- results and report
@dataclass
class SynthesisResult:
    accepted: list[Task]
    rejected: list[dict]
    report: dict = field(default_factory=dict)


def _shares(counter: Counter) -> dict[str, float]:
    total = sum(counter.values()) or 1
    return {s: round(counter.get(s, 0) / total, 4) for s in SOURCES}


_VARIANT = re.compile(r"^(?P<seed>.*)#v(?P<variant>\d+)$")


def issue_key(result: dict, seed_index: dict[str, int] | None = None) -> tuple:
    """The stable issue order of a sample: (seed index, variant as an int).

    ``seed_index`` maps seed ids to their position in the run's seed list; without it, seeds are
    ordered by id with numbers compared as numbers (``base_9`` before ``base_10``). Samples are
    processed *and* de-duplicated in this order, so the first accepted of two near-duplicates wins
    no matter how ``sample_id`` strings sort (``#v10`` would sort before ``#v2``).
    """
    m = _VARIANT.match(str(result.get("sample_id", "")))
    seed_id = str(result.get("seed_id") or (m.group("seed") if m else ""))
    variant = int(result.get("variant", m.group("variant") if m else 0) or 0)
    natural = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", seed_id) if p)
    pos = seed_index.get(seed_id, len(seed_index)) if seed_index is not None else 0
    return (pos, natural, variant)


def _rejection_row(r: dict) -> dict:
    return {k: r.get(k) for k in REJECTION_FIELDS}


REJECTION_FIELDS = ("sample_id", "seed_id", "variant", "reasons", "detail", "plan_attempts", "patches", "llm_calls",
                    "llm_usage", "refine_rounds", "timings")


def llm_accounting(results: list[dict], accepted: list[Task]) -> dict[str, Any]:
    """LLM calls and tokens per stage, in total and per accepted variant (synthesis compute is judged by them)."""
    per_stage = {s: {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0} for s in LLM_STAGES}
    for r in results:
        for stage, u in (r.get("llm_usage") or {}).items():
            row = per_stage.setdefault(stage, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
            for k in row:
                row[k] += int(u.get(k, 0) or 0)
    total = {k: sum(row[k] for row in per_stage.values()) for k in ("calls", "prompt_tokens", "completion_tokens")}
    n = len(accepted)
    return {"per_stage": per_stage, "total": total,
            "per_accepted": {k: round(v / n, 4) if n else 0.0 for k, v in total.items()}}


class Deduper:
    """Incremental near-duplicate filter over accepted samples, fed in issue order.

    An accepted sample once kept is never evicted: a later sample that is a near-duplicate of a kept
    one (or has the same id) is turned into a ``near_duplicate_accepted`` rejection. Only the
    fingerprints of kept samples are stored, so each admission costs O(kept), not a re-dedupe of the
    whole run. :meth:`keep` pre-loads samples already published (``accepted.jsonl`` on ``--resume``).
    """

    def __init__(self) -> None:
        self._kept: list[tuple[Any, dict]] = []
        self._ids: dict[str, str | None] = {}  # kept task id -> the sample that produced it

    def keep(self, task: Task) -> None:
        """Record ``task`` as kept (its fingerprint joins the set later samples are compared with)."""
        if task.id not in self._ids:
            prov = task.provenance or {}
            sid = sample_id(prov["seed_id"], int(prov.get("variant", 0))) if prov.get("seed_id") else None
            self._ids[task.id] = sid
            self._kept.append((fingerprint(task), task.initial_config))

    def admit(self, result: dict) -> tuple[Task | None, dict]:
        """(kept task, result): the task when ``result`` is accepted and new, else None and the result
        rewritten as a rejection when it duplicates a kept sample. Already-kept ids are re-admitted."""
        if not result.get("accepted"):
            return None, result
        task = Task.from_bfcl(result["task"])
        if task.id in self._ids and self._ids[task.id] in (None, result.get("sample_id")):
            return task, result  # published before (resume): stays published
        fp = fingerprint(task)
        dup = task.id if task.id in self._ids else None
        if dup is None:
            dup = next((k.task_id for k, cfg in self._kept if same_substance(fp, k, cfg == task.initial_config)), None)
        if dup is not None:
            return None, {**result, "accepted": False, "reasons": ["near_duplicate_accepted"],
                          "detail": {**result.get("detail", {}), "duplicate_of": dup}}
        self._ids[task.id] = result.get("sample_id")
        self._kept.append((fp, task.initial_config))
        return task, result


def dedupe_results(results: Iterable[dict], seed_index: dict[str, int] | None = None
                   ) -> tuple[list[Task], list[dict], list[dict]]:
    """Run ``results`` through a fresh :class:`Deduper` in issue order:
    (accepted tasks, rejection rows, results as judged after dedupe)."""
    dedupe = Deduper()
    accepted: list[Task] = []
    rejected: list[dict] = []
    judged: list[dict] = []
    for r in sorted(results, key=lambda r: issue_key(r, seed_index)):
        task, r = dedupe.admit(r)
        judged.append(r)
        if task is not None:
            accepted.append(task)
        else:
            rejected.append(_rejection_row(r))
    return accepted, rejected, judged


def build_report(results: list[dict], accepted: list[Task], rejected: list[dict], wall_s: float | None = None) -> dict:
    """The run report from every sample's result and the de-duplicated accepted/rejected split."""
    n = len(results)
    by_reason = Counter(reason.split(":")[0] for r in rejected for reason in (r["reasons"][:1] or ["unknown"]))
    stage_time: Counter = Counter()
    for r in results:
        stage_time.update(r.get("timings") or {})
    seed_src, var_src = Counter(), Counter()
    acc_ids = {t.id for t in accepted}
    for r in results:
        if r.get("accepted") and r.get("task") and r["task"]["id"] in acc_ids:
            seed_src.update(r.get("seed_sources") or {})
            var_src.update(r.get("variant_sources") or {})
    llm_calls = sum(r.get("llm_calls", 0) for r in results)
    primary = Counter((r.get("reasons") or [""])[0].split(":")[0] for r in results if not r.get("accepted"))
    report = {
        "samples": n, "accepted": len(accepted), "rejected": len(rejected),
        "acceptance_rate": round(len(accepted) / n, 4) if n else 0.0,
        "patch_share": round(sum(1 for t in accepted if (t.provenance or {}).get("patches")) / len(accepted), 4) if accepted else 0.0,
        "rejections_by_reason": dict(sorted(by_reason.items())),  # primary (first) reason per rejected sample
        "rejection_reasons_all": dict(sorted(Counter(x.split(":")[0] for r in rejected for x in r["reasons"]).items())),
        "time_per_stage_s": {s: round(stage_time.get(s, 0.0), 4) for s in STAGES},
        "llm_calls": llm_calls,
        "llm_calls_per_accepted": round(llm_calls / len(accepted), 4) if accepted else 0.0,
        "llm": llm_accounting(results, accepted),
        # transport failures (the endpoint) apart from answers that arrived but were invalid
        "llm_failures": {LLM_UNREACHABLE: primary.get(LLM_UNREACHABLE, 0), LLM_INVALID_OUTPUT: primary.get(LLM_INVALID_OUTPUT, 0)},
        "judge": {"judged": sum(1 for r in results if r.get("judge")),
                  "refined": sum(1 for r in results if r.get("refine_rounds")),
                  "rejected_by_judge": primary.get("judge_rejected", 0)},
        "value_sources": {"seeds": _shares(seed_src), "variants": _shares(var_src),
                          "seed_counts": dict(seed_src), "variant_counts": dict(var_src)},
        "categories": dict(Counter(t.category for t in accepted)),
        # state values stated because the variant's state offers no unique hint (see verdict.py)
        "stated_fallbacks": {"values": sum(len((t.provenance or {}).get("stated_fallbacks", [])) for t in accepted),
                             "samples": sum(1 for t in accepted if (t.provenance or {}).get("stated_fallbacks"))},
        "distinct_seeds_accepted": len({(t.provenance or {}).get("seed_id") for t in accepted}),
    }
    if wall_s is not None:
        report["wall_s"] = round(wall_s, 3)
    return report


def finalize_results(results: list[dict], wall_s: float | None = None,
                     seed_index: dict[str, int] | None = None) -> SynthesisResult:
    """De-duplicate accepted samples in issue order (first one wins) and build the report."""
    accepted, rejected, judged = dedupe_results(results, seed_index)
    return SynthesisResult(accepted=accepted, rejected=rejected, report=build_report(judged, accepted, rejected, wall_s))


def warm_caches() -> None:
    """Build the shared, cached indexes once, before samples run concurrently."""
    from rods_agents.analysis.catalog import build_catalog
    from rods_agents.analysis.contamination import contamination_threshold

    build_catalog()
    contamination_threshold()


def _context(config: SynthesisContext | dict | None) -> SynthesisContext:
    if config is None:
        return SynthesisContext()
    if isinstance(config, SynthesisContext):
        return config
    return SynthesisContext(**config)


def _result_of(out: dict, wall_s: float) -> SynthesisResult:
    """The run graph's own de-duplicated outcome (``collect_results``), not recomputed."""
    if "report" not in out:
        seed_index = {Task.from_bfcl(e).id: i for i, e in enumerate(out.get("seeds", []))}
        return finalize_results(out.get("results", []), wall_s, seed_index)
    return SynthesisResult(accepted=[Task.from_bfcl(e) for e in out.get("accepted", [])],
                           rejected=list(out.get("rejected", [])), report={**out["report"], "wall_s": round(wall_s, 3)})


def synthesize(seeds: list[Task], config: SynthesisContext | dict | None = None) -> SynthesisResult:
    """Grow verified variants of ``seeds`` in process (the trainer's entry point)."""
    ctx = _context(config)
    start = time.perf_counter()
    out = graph.invoke({"seeds": [s.to_bfcl() for s in seeds], "variants_per_seed": ctx.variants_per_seed},
                       context=ctx, config={"max_concurrency": ctx.concurrency, "recursion_limit": 10_000})
    return _result_of(out, time.perf_counter() - start)


async def asynthesize(seeds: list[Task], config: SynthesisContext | dict | None = None) -> SynthesisResult:
    """Async variant of :func:`synthesize` (runs the graph with ``ainvoke``)."""
    ctx = _context(config)
    start = time.perf_counter()
    out = await graph.ainvoke({"seeds": [s.to_bfcl() for s in seeds], "variants_per_seed": ctx.variants_per_seed},
                              context=ctx, config={"max_concurrency": ctx.concurrency, "recursion_limit": 10_000})
    return _result_of(out, time.perf_counter() - start)


__all__ = ["Deduper", "SynthesisContext", "SynthesisResult", "asynthesize", "build_report", "build_sample_graph",
           "build_synthesis_graph", "dedupe_results", "finalize_results", "graph", "issue_key", "synthesize"]
