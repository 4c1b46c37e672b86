"""The closed loop at epoch granularity: detector + replay buffer + synthesis, and its state.

:class:`Curriculum` is what the trainer talks to. It records the gathered rewards of every
generation batch (:meth:`record`), serves the task pool of the current epoch
(:meth:`epoch_rows`), and at each epoch boundary (:meth:`end_epoch`):

1. partitions the active pool into mastered / boundary / hard from the epoch's rollouts;
2. picks synthesis seeds: boundary tasks nearest 0.5 under per-category quotas (``rods``,
   ``no-retirement``; with ``quota_by_class`` each category's quota is spread over the involved-class
   groups of its boundary tasks), uniformly at random among the pool (``random-seeds``), or none
   (``static``). No boundary task is not an error: the round is skipped, logged, and training carries on;
3. runs the synthesis graph in process on those seeds and queues the accepted variants;
4. lets the buffer inject queued variants (at most beta of the pool) and retire (burn-in,
   drift, P_max pruning; never in ``no-retirement``). Queued variants therefore first train in
   the next epoch, as in the paper (variants produced during epoch n are eligible from n+1);
5. writes one line to ``curriculum.jsonl`` and returns the ``rods/`` metrics for ``report_to``.

Every decision is a deterministic function of the gathered rewards and the seed, so all ranks
keep identical pools (each rank runs its own copy; only rank 0 writes files).

**Resume.** :meth:`Curriculum.load_state_dict` restores pool, queue, statistics and the stream
position exactly, but the run's *current* settings (``rods train --resume --p_max ...``) win over
the checkpoint's: every changed value is logged as a warning and kept in ``resume_changes``, and the
epoch reports written after the resume show the settings actually used.
"""

from __future__ import annotations

import json
import logging
import math
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from envs.task import Task, atomic_write_text, category_of
from trainer.buffer import BoundaryReport, BufferConfig, ReplayBuffer
from trainer.detection import BoundaryDetector, DetectorConfig, format_changes
from trainer.dispatch import dispatches_in_epoch, step_seeds
from trainer.protocols import SynthesisRound, Synthesizer, as_synthesizer
from trainer.synthesis_bridge import SynthesisOutcome, SynthesisUnavailable

log = logging.getLogger(__name__)
STATE_FILE = "rods_curriculum.json"
SETTINGS = ("mode", "seeds_per_epoch", "seed_quotas", "quota_by_class", "variants_per_seed", "seed",
            "synthesis_backbone")
"""Curriculum settings outside the detector and buffer configs, compared on resume (the current ones win)."""
LOG_FILE = "curriculum.jsonl"


class EpochReport(BaseModel):
    """One epoch boundary, as written to ``curriculum.jsonl`` (one JSON object per line)."""

    epoch: int = Field(description="The epoch that just ended (0-based).")
    step: int
    mode: str
    alpha_minus: float | None = None
    alpha_plus: float | None = None
    pool_before: int
    pool_size: int
    pool_seeds: int
    pool_generated: int
    queue: int
    mastered: int
    boundary: int
    hard: int
    unseen: int
    groups: int
    informative_frac: float
    seeds: list[str]
    seed_reason: str | None = None
    synthesized: list[str] = Field(default_factory=list, description="Accepted variant ids queued this boundary.")
    synthesis_attempted: int = 0
    synthesis_acceptance: float = 0.0
    synthesis_seconds: float = 0.0
    synthesis_error: str | None = None
    synthesis_rounds: int = Field(0, description="Synthesis rounds handed over at this boundary (any epoch's seeds).")
    synthesis_errors: int = Field(0, description="Of those, failed rounds (exception or unreachable server).")
    synthesis_pending: list[str] = Field(default_factory=list, description="Seeds still being synthesized.")
    synthesis_wait_seconds: float = Field(0.0, description="Seconds this boundary waited for synthesis.")
    injected: list[str]
    retired: dict[str, list[str]] = Field(description="Retired ids by reason.")
    kept: list[str] = Field(default_factory=list, description="Due to retire, kept to hold min_pool_size.")
    group_means: list[float] = Field(description="Mean reward of every group of the epoch (for plots).")
    rewards: list[float] = Field(description="Every rollout reward of the epoch (for plots).")
    boundary_seconds: float = 0.0

    def metrics(self) -> dict[str, float]:
        out = {
            "rods/pool_size": self.pool_size, "rods/pool_seeds": self.pool_seeds,
            "rods/pool_generated": self.pool_generated, "rods/queue": self.queue,
            "rods/mastered": self.mastered, "rods/boundary": self.boundary, "rods/hard": self.hard,
            "rods/informative_frac": self.informative_frac, "rods/seeds": len(self.seeds),
            "rods/injected": len(self.injected), "rods/synthesized": len(self.synthesized),
            "rods/synthesis_acceptance": self.synthesis_acceptance, "rods/synthesis_s": self.synthesis_seconds,
            "rods/boundary_s": self.boundary_seconds, "rods/epoch": self.epoch,
            "rods/kept_by_floor": len(self.kept), "rods/synthesis_errors": self.synthesis_errors,
            "rods/synthesis_pending": len(self.synthesis_pending), "rods/synthesis_wait_s": self.synthesis_wait_seconds,
        }
        out.update({f"rods/retired/{k}": len(v) for k, v in self.retired.items()})
        return {k: float(v) for k, v in out.items()}


class Curriculum:
    """Detector, buffer and synthesizer behind one small interface (see the module docstring)."""

    def __init__(self, seeds: Sequence[Task], args: Any, synthesizer: Synthesizer | SynthesisRound | None = None,
                 run_dir: str | Path | None = None):
        if not seeds:
            raise ValueError("no seed tasks: the curriculum needs at least one task")
        self.args = args
        self.mode = args.mode
        self.synthesizer: Synthesizer | None = as_synthesizer(synthesizer)
        self.run_dir = Path(run_dir) if run_dir else None
        self._known: dict[str, Task] = {t.id: t for t in seeds}
        self._retired: dict[str, Task] = {}  # injected variants retired since: kept for the export, never trained again
        # classes come from the live task table (seeds, queued and injected variants), read at record time
        self.detector = BoundaryDetector(category=self._category_of, classes=self._classes_of, config=DetectorConfig(
            alpha_minus=args.alpha_minus, alpha_plus=args.alpha_plus, history_size=max(8, args.drift_window),
        ))
        self.buffer = ReplayBuffer(seeds, BufferConfig(
            beta=args.injection_cap, p_max=args.p_max, burn_in_threshold=args.burn_in_threshold,
            retire_mastered=args.retire_mastered, retire_hard=args.retire_hard, drift_window=args.drift_window,
            retire_seeds=args.retire_seeds, no_retirement=args.mode == "no-retirement",
            min_pool_size=max(1, getattr(args, "min_pool_size", 1)), prune_by=getattr(args, "prune_by", "variance"),
        ))
        self.resume_changes: dict[str, tuple[Any, Any]] = {}
        """Settings that differ from the loaded checkpoint's: ``{name: (saved, current)}`` (current wins)."""
        self.epoch = 0
        self.generations_in_epoch = 0
        self.epoch_generations = 0
        """Generation batches in the current epoch's stream (set when the stream starts)."""
        self.resume_skip_rows = 0
        self.reports: list[EpochReport] = []
        self._epoch_rewards: list[float] = []
        self._epoch_group_means: list[float] = []
        self.synthesis_state: dict[str, Any] | None = None
        self.dispatched: list[str] = []
        """Seeds submitted during the current epoch (``synthesis_dispatch: step``; trainer/dispatch.py)."""
        self.stop_error: SynthesisUnavailable | None = None
        """Set by a boundary whose synthesis gave up (``synthesis_on_failure: stop``): the boundary is finished,
        its checkpoint is written, then training stops with this error (trainer/progress.py)."""

    # ------------------------------------------------------------------ views
    def task(self, task_id: str) -> Task:
        """A task of the pool or the queue by id (the rollout function's lookup)."""
        return self._known[task_id]

    def _category_of(self, task_id: str) -> str | None:
        """A task's category from the task table (any id scheme), else parsed from a BFCL-style id."""
        t = self._known.get(task_id)
        return t.category if t is not None else category_of(task_id)

    def _classes_of(self, task_id: str) -> list[str] | None:
        t = self._known.get(task_id)
        return None if t is None else list(t.involved_classes)

    def active_tasks(self) -> list[Task]:
        """The active pool (seeds first, then injected variants oldest first)."""
        return list(self.buffer.active_tasks())  # type: ignore[arg-type]

    def epoch_rows(self, unique_per_batch: int) -> list[dict]:
        """This epoch's rows: the active pool shuffled by (seed, epoch), wrapped to whole generation batches.

        Wrapping (repeating the first tasks of the shuffled pool) keeps every generation batch full,
        so groups of K never straddle a partial batch and all ranks step together.
        """
        tasks = self.active_tasks()
        rng = random.Random(f"{self.args.seed}:{self.epoch}")
        order = list(range(len(tasks)))
        rng.shuffle(order)
        n = math.ceil(len(order) / unique_per_batch) * unique_per_batch
        order = [order[i % len(order)] for i in range(n)]
        return [{"prompt": tasks[i].user_messages(0), "task_id": tasks[i].id} for i in order]

    # ------------------------------------------------------------------ recording
    def record(self, step: int, task_ids: Sequence[str], rewards: Sequence[float], k: int) -> None:
        """Gathered rewards of one generation batch (groups of ``k`` rows share a task id)."""
        batch = self.detector.record(step, self.epoch, list(task_ids), list(rewards), k)
        self._epoch_rewards.extend(float(r) for r in rewards)
        self._epoch_group_means.extend(g.mean for g in batch.groups)
        seeds = step_seeds(self, list(task_ids))  # boundary seeds of this batch, submitted now (step dispatch)
        if seeds:
            self.dispatched.extend(seeds)
            self.synthesizer.submit([self._known[i] for i in seeds], self.epoch)  # type: ignore[union-attr]

    # ------------------------------------------------------------------ boundary
    def end_epoch(self, step: int, last: bool = False) -> EpochReport:
        """Run the boundary (detect, seeds, synthesis, inject, retire); see the module docstring.

        ``last``: the run ends after this boundary, so no seeds are sent (a variant could never train).
        """
        start = time.perf_counter()
        args = self.args
        active = self.buffer.active_ids()
        part = self.detector.partition(active)
        seed_ids, reason = ([], "last boundary: no epoch left to train a variant") if last \
            else self._pick_seeds(active, part.boundary)
        outcome = SynthesisOutcome(seeds=seed_ids, rounds=0)
        synth = self.synthesizer
        # a collecting (background) synthesizer is called at every boundary but the last: earlier rounds may have
        # landed. The last boundary neither waits nor queues: a variant handed over there could never train.
        if synth is not None and not last and (seed_ids or synth.collects):
            try:
                outcome = synth([self._known[i] for i in seed_ids if i not in self.dispatched], self.epoch)
            except SynthesisUnavailable as exc:  # finish the boundary, checkpoint it, then stop (progress.py)
                self.stop_error = exc
                outcome = exc.outcome or SynthesisOutcome(seeds=seed_ids, rounds=0, error=str(exc))
        elif synth is not None and last and synth.collects:
            outcome = SynthesisOutcome(seeds=[], rounds=0, pending=list(getattr(synth, "pending_seeds", [])))
        queued: list[str] = []
        if outcome.accepted:
            for t in outcome.accepted:
                self._known.setdefault(t.id, t)
            events = self.buffer.enqueue(outcome.accepted, epoch=self.epoch)
            queued = [e.task_id for e in events if e.kind == "queued"]
        rep: BoundaryReport = self.buffer.on_epoch_boundary(self.epoch, self.detector)
        retired: dict[str, list[str]] = {}
        for r in rep.retired:
            retired.setdefault(r.reason, []).append(r.task_id)
        live = set(self.buffer.active_ids()) | set(self.buffer.queued_ids())
        injected = {i for r in self.reports for i in r.injected} | set(rep.injected)
        for k, v in self._known.items():  # a retired variant the run trained on stays exportable (rods export RUN)
            if k not in live and k in injected:
                self._retired[k] = v
        self._known = {k: v for k, v in self._known.items() if k in live}
        report = EpochReport(
            epoch=self.epoch, step=step, mode=self.mode, alpha_minus=args.alpha_minus, alpha_plus=args.alpha_plus,
            pool_before=rep.pool_before, pool_size=rep.pool_size,
            pool_seeds=rep.seeds, pool_generated=rep.generated, queue=rep.queue,
            mastered=len(part.mastered), boundary=len(part.boundary), hard=len(part.hard), unseen=len(part.unseen),
            groups=part.groups, informative_frac=part.informative_fraction, seeds=seed_ids, seed_reason=reason,
            synthesized=queued, synthesis_attempted=outcome.attempted, synthesis_acceptance=outcome.acceptance,
            synthesis_seconds=outcome.seconds, synthesis_error=outcome.error, injected=rep.injected,
            synthesis_rounds=outcome.rounds, synthesis_errors=outcome.failed_rounds, synthesis_pending=outcome.pending,
            synthesis_wait_seconds=outcome.waited_s,
            kept=rep.kept, retired={k: retired.get(k, []) for k in ("burn_in", "mastered", "hard", "pruned")},
            group_means=self._epoch_group_means, rewards=self._epoch_rewards,
            boundary_seconds=time.perf_counter() - start,
        )
        self.reports.append(report)
        self.epoch += 1
        self.generations_in_epoch = 0
        self._epoch_rewards, self._epoch_group_means = [], []
        self.dispatched = []
        return report

    def _pick_seeds(self, active: list[str], boundary: list[str]) -> tuple[list[str], str | None]:
        args = self.args
        n = args.seeds_per_epoch
        if dispatches_in_epoch(self):  # chosen and submitted during the epoch already
            return list(self.dispatched), None if self.dispatched else "no boundary task during the epoch"
        if self.mode == "static" or n <= 0:
            return [], "static pool (mode=static)" if self.mode == "static" else "seeds_per_epoch is 0"
        if self.mode == "random-seeds":
            evaluated = [t for t in active if self.detector.evaluations(t)]
            rng = random.Random(f"{args.seed}:seeds:{self.epoch}")
            chosen = sorted(rng.sample(evaluated, min(n, len(evaluated))))
            return chosen, None if chosen else "no evaluated tasks"
        quotas = args.seed_quotas
        if quotas is not None:
            quotas = {k: int(v) for k, v in quotas.items()}
        sel = self.detector.select_seeds(
            n=max(n, sum(quotas.values())) if quotas else n, quotas=quotas, by="category",
            balance_classes=bool(args.quota_by_class), task_ids=active, epoch=self.epoch,
        )
        return sel.task_ids, sel.reason

    # ------------------------------------------------------------------ state
    def _settings(self) -> dict[str, Any]:
        return {k: getattr(self.args, k, None) for k in SETTINGS}

    def state_dict(self) -> dict[str, Any]:
        """JSON-serializable state: buffer, detector, task table, reports, stream position, settings."""
        return {
            "version": 1,
            "settings": self._settings(),
            "epoch": self.epoch,
            "generations_in_epoch": self.generations_in_epoch,
            "buffer": self.buffer.state_dict(),
            "detector": self.detector.state_dict(),
            "known": [t.model_dump(mode="json") for t in self._known.values()],
            "retired": [t.model_dump(mode="json") for t in self._retired.values()],
            "reports": [r.model_dump(mode="json") for r in self.reports],
            "epoch_rewards": self._epoch_rewards,
            "epoch_group_means": self._epoch_group_means,
            # background synthesis: rounds in flight (resubmitted on resume) and results not handed over yet
            "synthesis": self.synthesizer.state_dict() if self.synthesizer is not None else None,
            "dispatched": list(self.dispatched),
        }

    def load_state_dict(self, state: dict[str, Any], unique_per_batch: int) -> None:
        """Restore a saved state; the next epoch stream skips the rows already generated on.

        State is restored exactly; settings (thresholds, capacities, quotas, mode) stay the current
        run's, and each one that differs from the checkpoint's is logged (module docstring).
        """
        if state.get("version") != 1:
            raise ValueError(f"unsupported curriculum state version {state.get('version')!r}")
        changes = dict(self.buffer.load_state_dict(state["buffer"]))
        changes.update({f"detector.{k}": v for k, v in self.detector.load_state_dict(state["detector"]).items()})
        saved = state.get("settings") or {}
        changes.update({k: (saved[k], v) for k, v in self._settings().items() if k in saved and saved[k] != v})
        self.resume_changes = changes
        if changes:
            log.warning("resume: the run's current settings win over the checkpoint's: %s", format_changes(changes))
        self._known = {d["id"]: Task.model_validate(d) for d in state["known"]}
        self._retired = {d["id"]: Task.model_validate(d) for d in state.get("retired", [])}
        for t in self.buffer.active_tasks():
            self._known.setdefault(t.id, t)  # type: ignore[arg-type]
        self.epoch = state["epoch"]
        self.generations_in_epoch = state["generations_in_epoch"]
        self.resume_skip_rows = self.generations_in_epoch * unique_per_batch
        self.reports = [EpochReport.model_validate(r) for r in state["reports"]]
        self._epoch_rewards = list(state["epoch_rewards"])
        self._epoch_group_means = list(state["epoch_group_means"])
        self.synthesis_state = state.get("synthesis")
        self.dispatched = list(state.get("dispatched", []))
        """Saved background-synthesis rounds; the trainer hands them to its synthesizer (``load_state_dict``)."""

    def save(self, path: str | Path) -> None:
        """Write :meth:`state_dict` to ``path`` as JSON, atomically (the checkpoint's ``rods_curriculum.json``)."""
        atomic_write_text(path, json.dumps(self.state_dict()))

    def load(self, path: str | Path, unique_per_batch: int) -> None:
        """Restore :meth:`save`'s file (see :meth:`load_state_dict`)."""
        self.load_state_dict(json.loads(Path(path).read_text(encoding="utf-8")), unique_per_batch)

    def append_log(self, report: EpochReport) -> None:
        """Append one line to ``RUN_DIR/curriculum.jsonl`` (rewrites the file atomically)."""
        if self.run_dir is None:
            return
        path = self.run_dir / LOG_FILE
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        lines = [ln for ln in lines if ln.strip() and json.loads(ln).get("epoch") != report.epoch]
        lines.append(report.model_dump_json())
        atomic_write_text(path, "\n".join(lines) + "\n")

