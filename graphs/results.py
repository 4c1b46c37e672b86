"""What a synthesis run ends with: samples' results de-duplicated in issue order, and a typed report.

Every sample ends as one :class:`rods_agents.run.outcome.SampleResult` (a dict in graph state).
:class:`Deduper` admits accepted ones in issue order (seed index, then variant): the first of two
near-duplicates wins, an accepted sample once kept is never evicted. :func:`build_report` turns
the judged results into a :class:`SynthesisReport` (written as ``report.json``).
:class:`SynthesisResult` is what ``synthesize``, the sample driver and the trainer hand back.

No graph import: the CLI, the trainer and the run graph's ``collect_results`` node share this.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from envs.task import Task
from rods_agents.analysis.contamination import duplicate_reason, fingerprint
from rods_agents.analysis.value_sources import SOURCES
from rods_agents.run.context import LLM_STAGES
from rods_agents.run.outcome import LLM_INVALID_OUTPUT, LLM_UNREACHABLE
from rods_agents.stages.state import sample_id

STAGES = ("profile", "plan", "rewrite", "execute", "patch", "verdict", "judge")
LLM_REASON_PREFIX = "llm_"
REJECTION_FIELDS = ("sample_id", "seed_id", "variant", "reasons", "detail", "plan_attempts", "patches", "llm_calls",
                    "llm_usage", "refine_rounds", "timings")


# ----------------------------------------------------------------------------- the typed report
class LLMStageUsage(BaseModel):
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class LLMAccounting(BaseModel):
    """LLM calls and tokens per stage, in total and per accepted variant."""

    per_stage: dict[str, LLMStageUsage] = Field(default_factory=dict)
    total: LLMStageUsage = Field(default_factory=LLMStageUsage)
    per_accepted: dict[str, float] = Field(default_factory=dict)


class JudgeSummary(BaseModel):
    judged: int = 0
    refined: int = 0
    rejected_by_judge: int = 0


class ValueSources(BaseModel):
    """Where argument values come from (user text, an earlier call, the state, composed).

    ``seeds``/``variants``: shares over the accepted (seed, variant) pairs, so the two compare the
    same samples; ``all_seeds``: shares over every distinct seed profiled in the run (defined even
    when nothing was accepted)."""

    seeds: dict[str, float] = Field(default_factory=dict)
    variants: dict[str, float] = Field(default_factory=dict)
    all_seeds: dict[str, float] = Field(default_factory=dict)
    seed_counts: dict[str, int] = Field(default_factory=dict)
    variant_counts: dict[str, int] = Field(default_factory=dict)
    all_seed_counts: dict[str, int] = Field(default_factory=dict)


class StatedFallbacks(BaseModel):
    values: int = 0
    samples: int = 0


class SynthesisReport(BaseModel):
    """``report.json``: counts, rejection reasons, time per stage, LLM accounting, value sources.

    Reads like the dict it is written as (``report["accepted"]``, ``report.get(...)``) so callers
    that index the JSON keep working; extra keys (``run``, set by the CLI) are kept."""

    model_config = ConfigDict(extra="allow")

    samples: int = 0
    accepted: int = 0
    rejected: int = 0
    acceptance_rate: float = 0.0
    patch_share: float = 0.0
    rejections_by_reason: dict[str, int] = Field(default_factory=dict, description="Primary (first) reason per "
                                                 "rejected sample, kind before ':'.")
    rejection_reasons_all: dict[str, int] = Field(default_factory=dict)
    time_per_stage_s: dict[str, float] = Field(default_factory=dict)
    llm_calls: int = 0
    llm_calls_per_accepted: float = 0.0
    llm: LLMAccounting = Field(default_factory=LLMAccounting)
    llm_failures: dict[str, int] = Field(default_factory=dict, description="Transport failures (the endpoint) apart "
                                         "from answers that arrived but were invalid.")
    judge: JudgeSummary = Field(default_factory=JudgeSummary)
    value_sources: ValueSources = Field(default_factory=ValueSources)
    categories: dict[str, int] = Field(default_factory=dict)
    stated_fallbacks: StatedFallbacks = Field(default_factory=StatedFallbacks,
                                              description="State values stated because the variant's state offers no "
                                              "unique hint (see rods_agents.stages.verdict).")
    distinct_seeds_accepted: int = 0
    wall_s: float | None = None

    def llm_failure_counts(self) -> dict[str, int]:
        """Rejections whose primary reason is an ``llm_*`` kind (the endpoint failed or answered garbage)."""
        return {k: v for k, v in self.rejections_by_reason.items() if k.startswith(LLM_REASON_PREFIX) and v}

    def mostly_llm_failures(self) -> bool:
        """True when more than half the samples ended on an ``llm_*`` reason: the run did not really run."""
        return self.samples > 0 and sum(self.llm_failure_counts().values()) * 2 > self.samples

    def dump(self) -> dict[str, Any]:
        """The JSON dict written as ``report.json`` (``wall_s`` left out when unknown)."""
        out = self.model_dump()
        if out.get("wall_s") is None:
            out.pop("wall_s", None)
        return out

    # dict-style reads: report.json's keys are the public contract
    def __getitem__(self, key: str) -> Any:
        out = self.dump()
        return out[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.dump().get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self.dump()


@dataclass
class SynthesisResult:
    """Accepted tasks (de-duplicated, issue order), rejection rows and the report of one run."""

    accepted: list[Task]
    rejected: list[dict]
    report: SynthesisReport = field(default_factory=SynthesisReport)


# ----------------------------------------------------------------------------- issue order and dedupe
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


def rejection_row(r: dict) -> dict:
    """The ``rejected.jsonl`` row of a sample result."""
    return {k: r.get(k) for k in REJECTION_FIELDS}


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
        self._preloaded: list[Task] = []

    def keep(self, task: Task) -> None:
        """Record ``task`` as kept (its fingerprint joins the set later samples are compared with)."""
        if task.id not in self._ids:
            prov = task.provenance or {}
            sid = sample_id(prov["seed_id"], int(prov.get("variant", 0))) if prov.get("seed_id") else None
            self._ids[task.id] = sid
            self._kept.append((fingerprint(task), task.initial_config))
            self._preloaded.append(task)

    def preloaded_tasks(self) -> list[Task]:
        """The tasks pre-loaded with :meth:`keep` (published before): the first siblings of a run's samples."""
        return list(self._preloaded)

    def admit(self, result: dict) -> tuple[Task | None, dict]:
        """(kept task, result): the task when ``result`` is accepted and new, else None and the result
        rewritten as a rejection when it duplicates a kept sample. Already-kept ids are re-admitted."""
        if not result.get("accepted"):
            return None, result
        task = Task.from_bfcl(result["task"])
        if task.id in self._ids and self._ids[task.id] in (None, result.get("sample_id")):
            return task, result  # published before (resume): stays published
        fp = fingerprint(task)
        dup, why = (task.id, "same id") if task.id in self._ids else (None, None)
        if dup is None:
            dup, why = next(((k.task_id, reason) for k, cfg in self._kept
                             if (reason := duplicate_reason(fp, k, cfg == task.initial_config))), (None, None))
        if dup is not None:
            return None, {**result, "accepted": False, "reasons": ["near_duplicate_accepted"],
                          "detail": {**result.get("detail", {}), "duplicate_of": dup, "duplicate_why": why}}
        self._ids[task.id] = result.get("sample_id")
        self._kept.append((fp, task.initial_config))
        return task, result


class RunTally:
    """Results admitted one by one (issue order) through a :class:`Deduper`: accepted, rejected, judged."""

    def __init__(self, dedupe: Deduper | None = None) -> None:
        self.dedupe = dedupe or Deduper()
        self.accepted: list[Task] = []
        self.rejected: list[dict] = []
        self.judged: list[dict] = []

    def admit(self, result: dict) -> dict:
        task, result = self.dedupe.admit(result)
        self.judged.append(result)
        if task is not None:
            self.accepted.append(task)
        else:
            self.rejected.append(rejection_row(result))
        return result

    def result(self, wall_s: float | None = None) -> SynthesisResult:
        return SynthesisResult(accepted=list(self.accepted), rejected=list(self.rejected),
                               report=build_report(self.judged, self.accepted, self.rejected, wall_s))


def dedupe_results(results: Iterable[dict], seed_index: dict[str, int] | None = None
                   ) -> tuple[list[Task], list[dict], list[dict]]:
    """Run ``results`` through a fresh :class:`Deduper` in issue order:
    (accepted tasks, rejection rows, results as judged after dedupe)."""
    tally = RunTally()
    for r in sorted(results, key=lambda r: issue_key(r, seed_index)):
        tally.admit(r)
    return tally.accepted, tally.rejected, tally.judged


# ----------------------------------------------------------------------------- the report
def _shares(counter: Counter) -> dict[str, float]:
    total = sum(counter.values()) or 1
    return {s: round(counter.get(s, 0) / total, 4) for s in SOURCES}


def llm_accounting(results: list[dict], accepted: list[Task]) -> LLMAccounting:
    """LLM calls and tokens per stage, in total and per accepted variant (synthesis compute is judged by them)."""
    per_stage = {s: LLMStageUsage() for s in LLM_STAGES}
    for r in results:
        for stage, u in (r.get("llm_usage") or {}).items():
            row = per_stage.setdefault(stage, LLMStageUsage())
            for k in ("calls", "prompt_tokens", "completion_tokens"):
                setattr(row, k, getattr(row, k) + int(u.get(k, 0) or 0))
    total = LLMStageUsage(**{k: sum(getattr(row, k) for row in per_stage.values())
                             for k in ("calls", "prompt_tokens", "completion_tokens")})
    n = len(accepted)
    return LLMAccounting(per_stage=per_stage, total=total,
                         per_accepted={k: round(v / n, 4) if n else 0.0 for k, v in total.model_dump().items()})


def build_report(results: list[dict], accepted: list[Task], rejected: list[dict],
                 wall_s: float | None = None) -> SynthesisReport:
    """The run report from every sample's result and the de-duplicated accepted/rejected split."""
    n = len(results)
    by_reason = Counter(reason.split(":")[0] for r in rejected for reason in (r["reasons"][:1] or ["unknown"]))
    stage_time: Counter = Counter()
    for r in results:
        stage_time.update(r.get("timings") or {})
    seed_src, var_src, all_seed_src = Counter(), Counter(), Counter()
    acc_ids = {t.id for t in accepted}
    profiled: set[str] = set()
    for r in results:
        if r.get("seed_id") not in profiled and r.get("seed_sources"):
            profiled.add(r.get("seed_id"))
            all_seed_src.update(r["seed_sources"])
        if r.get("accepted") and r.get("task") and r["task"]["id"] in acc_ids:
            seed_src.update(r.get("seed_sources") or {})
            var_src.update(r.get("variant_sources") or {})
    llm_calls = sum(r.get("llm_calls", 0) for r in results)
    primary = Counter((r.get("reasons") or [""])[0].split(":")[0] for r in results if not r.get("accepted"))
    return SynthesisReport(
        samples=n, accepted=len(accepted), rejected=len(rejected),
        acceptance_rate=round(len(accepted) / n, 4) if n else 0.0,
        patch_share=round(sum(1 for t in accepted if (t.provenance or {}).get("patches")) / len(accepted), 4)
        if accepted else 0.0,
        rejections_by_reason=dict(sorted(by_reason.items())),
        rejection_reasons_all=dict(sorted(Counter(x.split(":")[0] for r in rejected for x in r["reasons"]).items())),
        time_per_stage_s={s: round(stage_time.get(s, 0.0), 4) for s in STAGES},
        llm_calls=llm_calls,
        llm_calls_per_accepted=round(llm_calls / len(accepted), 4) if accepted else 0.0,
        llm=llm_accounting(results, accepted),
        llm_failures={LLM_UNREACHABLE: primary.get(LLM_UNREACHABLE, 0),
                      LLM_INVALID_OUTPUT: primary.get(LLM_INVALID_OUTPUT, 0)},
        judge=JudgeSummary(judged=sum(1 for r in results if r.get("judge")),
                           refined=sum(1 for r in results if r.get("refine_rounds")),
                           rejected_by_judge=primary.get("judge_rejected", 0)),
        value_sources=ValueSources(seeds=_shares(seed_src), variants=_shares(var_src), all_seeds=_shares(all_seed_src),
                                   seed_counts=dict(seed_src), variant_counts=dict(var_src),
                                   all_seed_counts=dict(all_seed_src)),
        categories=dict(Counter(t.category for t in accepted)),
        stated_fallbacks=StatedFallbacks(
            values=sum(len((t.provenance or {}).get("stated_fallbacks", [])) for t in accepted),
            samples=sum(1 for t in accepted if (t.provenance or {}).get("stated_fallbacks"))),
        distinct_seeds_accepted=len({(t.provenance or {}).get("seed_id") for t in accepted}),
        wall_s=round(wall_s, 3) if wall_s is not None else None,
    )


def finalize_results(results: list[dict], wall_s: float | None = None,
                     seed_index: dict[str, int] | None = None) -> SynthesisResult:
    """De-duplicate accepted samples in issue order (first one wins) and build the report."""
    accepted, rejected, judged = dedupe_results(results, seed_index)
    return SynthesisResult(accepted=accepted, rejected=rejected, report=build_report(judged, accepted, rejected, wall_s))


__all__ = ["REJECTION_FIELDS", "STAGES", "Deduper", "RunTally", "SynthesisReport", "SynthesisResult", "build_report",
           "dedupe_results", "finalize_results", "issue_key", "llm_accounting", "rejection_row"]
