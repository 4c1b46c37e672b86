"""Zero-cost boundary detection: per-task reward statistics from the K rollouts GRPO already made.

The trainer hands :meth:`BoundaryDetector.record` the rewards it gathered for one generation batch
(``_calculate_rewards`` returns them gathered across processes, in ``RepeatSampler`` order, so K
consecutive rows share one task id). No extra inference is run: the detector only aggregates.

Statistics per task are kept per epoch (one :class:`EpochObservation` per epoch in which the task
was rolled out, several groups of one epoch pooled into one observation) in a bounded history.

Zones (RODS §3, thresholds from the paper as read by [CN]/[TW], see ``docs/rods-paper-notes.md``):

* **mastered**: mean > ``alpha_plus`` (0.85)
* **boundary**: ``alpha_minus`` <= mean <= ``alpha_plus`` (0.20 .. 0.85)
* **hard**: mean < ``alpha_minus`` (0.20)

A task's zone uses its **latest-epoch observation** only, not an average over epochs. The paper
computes r̄ from the K = 16 rollouts of the task's most recent epoch (each task is seen once per
epoch); the policy changes between epochs, so older epochs describe a policy that no longer
exists. The history is kept for the buffer's drift eviction (W consecutive evaluations) and for
plots. Mean and variance are population statistics (ddof = 0) over all rollouts of the epoch.

Every decision is a deterministic function of the gathered rewards, so every rank that records
the same batches reaches the same partition and seed selection.
"""

from __future__ import annotations

import heapq
import json
import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from envs.task import CATEGORIES, atomic_write_text, category_of
from trainer.reconcile import config_changes, format_changes, reconcile_config  # the first two: re-exported

log = logging.getLogger(__name__)
Zone = Literal["mastered", "boundary", "hard"]
SeedType = Literal["category", "classes"]
STATE_VERSION = 1
INFORMATIVE_ATOL = 1e-8
"""A group is informative when max - min of its K rewards exceeds this (TRL's ``frac_reward_zero_std``
uses ``isclose(std, 0)`` with the same absolute tolerance)."""

CategoryLookup = Mapping[str, str] | Callable[[str], str | None]
ClassesLookup = Mapping[str, Sequence[str]] | Callable[[str], Sequence[str] | None]


class GroupLayoutError(ValueError):
    """The rows handed to :meth:`BoundaryDetector.record` are not groups of K rows sharing one task id."""


# --------------------------------------------------------------------------- typed results
class DetectorConfig(BaseModel):
    """Thresholds of the detector; the defaults are RODS's (paper §3, via [CN]/[TW])."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    alpha_minus: float = Field(0.20, ge=0.0, le=1.0, description="Lower edge of the boundary zone (inclusive).")
    alpha_plus: float = Field(0.85, ge=0.0, le=1.0, description="Upper edge of the boundary zone (inclusive).")
    history_size: int = Field(8, ge=1, description="Epoch observations kept per task (bounds memory).")
    epoch_log_size: int = Field(64, ge=1, description="Per-epoch group counters kept (informative fraction).")

    @model_validator(mode="after")
    def _ordered(self) -> DetectorConfig:
        if self.alpha_minus > self.alpha_plus:
            raise ValueError(f"alpha_minus {self.alpha_minus} > alpha_plus {self.alpha_plus}")
        return self


class EpochObservation(BaseModel):
    """All rollouts of one task in one epoch, pooled."""

    epoch: int
    step: int = Field(description="Trainer step of the last group recorded in this epoch.")
    n: int = Field(description="Rollouts pooled (K per group).")
    mean: float
    var: float = Field(description="Population variance of the rollout rewards.")

    @property
    def phi(self) -> float:
        return phi(self.mean)


class TaskStats(BaseModel):
    """Per-task statistics, latest epoch last."""

    task_id: str
    category: str
    classes: list[str]
    groups: int = Field(description="Groups recorded over the whole run.")
    history: list[EpochObservation]

    @property
    def latest(self) -> EpochObservation:
        return self.history[-1]


class GroupStats(BaseModel):
    """One group of K rollouts of one task, as recorded."""

    task_id: str
    mean: float
    var: float
    informative: bool


class BatchRecord(BaseModel):
    """What one :meth:`BoundaryDetector.record` call saw, one entry per group (columns: cheap to build)."""

    step: int
    epoch: int
    k: int
    task_ids: list[str]
    means: list[float]
    variances: list[float] = Field(description="Population variance of each group's K rewards.")
    informative: list[bool] = Field(description="Groups with non-zero reward variance (they carry a GRPO signal).")

    @property
    def groups(self) -> list[GroupStats]:
        return [
            GroupStats(task_id=t, mean=m, var=v, informative=i)
            for t, m, v, i in zip(self.task_ids, self.means, self.variances, self.informative, strict=True)
        ]

    @property
    def informative_fraction(self) -> float:
        return sum(self.informative) / len(self.informative) if self.informative else 0.0


class Partition(BaseModel):
    """Mastered / boundary / hard / unseen task ids (each sorted), from each task's latest epoch."""

    epoch: int | None = Field(description="Latest epoch recorded by the detector.")
    alpha_minus: float
    alpha_plus: float
    mastered: list[str]
    boundary: list[str]
    hard: list[str]
    unseen: list[str] = Field(description="Tasks asked about that have no observation yet.")
    boundary_by_type: dict[str, int] = Field(description="Boundary tasks per category.")
    groups: int = Field(description="Groups recorded in the latest epoch.")
    informative_groups: int = Field(description="Of those, groups with non-zero reward variance.")

    @property
    def counts(self) -> dict[str, int]:
        return {
            "mastered": len(self.mastered),
            "boundary": len(self.boundary),
            "hard": len(self.hard),
            "unseen": len(self.unseen),
        }

    @property
    def informative_fraction(self) -> float:
        return self.informative_groups / self.groups if self.groups else 0.0

    def metrics(self, prefix: str = "rods/") -> dict[str, float]:
        out: dict[str, float] = {f"{prefix}{zone}": float(n) for zone, n in self.counts.items()}
        out[f"{prefix}informative_frac"] = self.informative_fraction
        return out


class Seed(BaseModel):
    task_id: str
    type: str = Field(description="Quota bucket (category, or the sorted involved classes joined by '+').")
    group: str | None = Field(None, description="Involved-class group inside the category when classes are "
                                                "balanced (``balance_classes=True``), else None.")
    mean: float
    var: float
    phi: float = Field(description="4 m (1 - m): the Bernoulli-variance bound RODS ranks by.")


class SeedSelection(BaseModel):
    """Seeds chosen for synthesis at one epoch boundary; empty with a ``reason`` when none qualify."""

    epoch: int | None
    n: int
    by: SeedType
    balance_classes: bool = False
    quotas: dict[str, int]
    redistribute: bool
    cooldown: int
    seeds: list[Seed]
    per_type: dict[str, int] = Field(description="Seeds chosen per quota bucket.")
    boundary: int = Field(description="Boundary tasks among the candidates.")
    cooling: int = Field(description="Boundary tasks skipped because of the cooldown.")
    reason: str | None = Field(None, description="Why fewer than n seeds were chosen (None if n were).")

    @property
    def task_ids(self) -> list[str]:
        return [s.task_id for s in self.seeds]

    def metrics(self, prefix: str = "rods/") -> dict[str, float]:
        out = {f"{prefix}seeds": float(len(self.seeds)), f"{prefix}seeds_cooling": float(self.cooling)}
        out.update({f"{prefix}seeds/{t}": float(c) for t, c in self.per_type.items()})
        return out


class TaskView(BaseModel):
    """What the buffer reads about one task at a boundary (:class:`DetectorSnapshot`)."""

    model_config = ConfigDict(frozen=True)

    means: tuple[float, ...] = Field((), description="Epoch means held, oldest first (at most history_size).")
    var: float | None = Field(None, description="Reward variance of the latest epoch (None: never observed).")
    unscorable: int = Field(0, description="Groups rolled out but never scorable (prompt over the context).")

    @property
    def evaluations(self) -> int:
        return len(self.means)


_UNSEEN = TaskView()


class DetectorSnapshot(BaseModel):
    """The detector's statistics of a set of tasks, frozen at one epoch boundary.

    Why: the buffer decides injection, burn-in, drift and pruning from these numbers alone, so the
    boundary hands it one value instead of the live detector (which it could query at any time, or
    mutate). A task not in the snapshot reads as never observed. Forgetting retired tasks is the
    caller's step (:meth:`BoundaryDetector.forget` with the report's retired ids).
    """

    model_config = ConfigDict(frozen=True)

    epoch: int | None = Field(description="Latest epoch the detector recorded.")
    history_size: int
    tasks: dict[str, TaskView] = Field(default_factory=dict)

    def view(self, task_id: str) -> TaskView:
        return self.tasks.get(task_id, _UNSEEN)

    def evaluations(self, task_id: str) -> int:
        return self.view(task_id).evaluations

    def latest_means(self, task_id: str, w: int) -> list[float]:
        """Means of the last ``w`` evaluations, oldest first (fewer if fewer exist)."""
        means = self.view(task_id).means
        return list(means[max(0, len(means) - w):])

    def latest_mean(self, task_id: str) -> float | None:
        means = self.view(task_id).means
        return means[-1] if means else None

    def latest_var(self, task_id: str) -> float | None:
        return self.view(task_id).var

    def unscorable(self, task_id: str) -> int:
        return self.view(task_id).unscorable


# --------------------------------------------------------------------------- helpers
def phi(mean: float) -> float:
    """4 m (1 - m): the variance of a Bernoulli reward with mean m, scaled to [0, 1]; peaks at m = 0.5."""
    return 4.0 * mean * (1.0 - mean)


def scorable_groups(task_ids: Sequence[str], rewards: Sequence[float], k: int) -> tuple[list[str], list[float], list[str]]:
    """Drop every group of ``k`` rows holding a NaN reward (an unscorable rollout, e.g. an over-long prompt).

    Returns ``(task_ids, rewards, dropped_task_ids)``. Such a group was never attempted, so it is no
    observation: recorded as 0 it would rank the task "hard" and feed burn-in, drift and pruning a
    score it never earned. Groups are whole tasks (all K copies share the prompt), so nothing else is lost.
    """
    ids, rs, dropped = [], [], []
    for g in range(0, len(rewards), k):
        group = [float(r) for r in rewards[g:g + k]]
        if any(math.isnan(r) for r in group):
            dropped.append(task_ids[g])
            continue
        ids.extend(task_ids[g:g + k])
        rs.extend(group)
    return ids, rs, dropped


def even_quotas(n: int, types: Sequence[str] = CATEGORIES) -> dict[str, int]:
    """Split ``n`` seeds over ``types`` as evenly as possible, the remainder to the first types."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if not types:
        return {}
    q, r = divmod(n, len(types))
    return {t: q + (1 if i < r else 0) for i, t in enumerate(types)}


class _Track:
    """Internal per-task record (plain slots: the detector may hold 10^6 of them)."""

    __slots__ = ("category", "classes", "groups", "hist")

    def __init__(self, category: str, classes: tuple[str, ...]):
        self.category = category
        self.classes = classes
        self.groups = 0
        # entries: [epoch, step, n, mean, m2]  (m2 = sum of squared deviations, Chan et al. merge);
        # a plain list trimmed to history_size (a deque costs ~600 bytes per task even when empty)
        self.hist: list[list] = []


# --------------------------------------------------------------------------- detector
class BoundaryDetector:
    """Aggregates gathered GRPO rewards per task and partitions tasks into zones.

    Args:
        category: task id -> category (a mapping or a callable). Default: parse it from the id
            (``multi_turn_<category>_<scenario>...``), which synthesized ids keep by convention.
        classes: task id -> involved classes, only needed for ``select_seeds(by="classes")``.
        config: thresholds and history sizes.
    """

    def __init__(
        self,
        category: CategoryLookup | None = None,
        classes: ClassesLookup | None = None,
        config: DetectorConfig | None = None,
    ):
        self.config = config or DetectorConfig()
        category = category if category is not None else category_of
        self._category: Callable[[str], Any] = category.get if isinstance(category, Mapping) else category
        self._classes: Callable[[str], Any] | None = classes.get if isinstance(classes, Mapping) else classes
        self._tracks: dict[str, _Track] = {}
        self._last_emitted: dict[str, int] = {}
        self._unscorable: dict[str, int] = {}  # task id -> groups that could not be scored (see record_unscorable)
        self.retired_history: dict[str, list[list]] = {}  # reward history of tasks forgotten since (export only)
        self._epoch_groups: dict[int, list[int]] = {}  # epoch -> [groups, informative]
        self.latest_epoch: int | None = None
        self.last_batch: BatchRecord | None = None

    # ------------------------------------------------------------------ recording
    def _lookup_category(self, task_id: str) -> str:
        c = self._category(task_id)
        return str(c) if c else "unknown"

    def _lookup_classes(self, task_id: str) -> tuple[str, ...]:
        if self._classes is None:
            return ()
        return tuple(sorted(self._classes(task_id) or ()))

    def record(self, step: int, epoch: int, task_ids: Sequence[str], rewards: Sequence[float], k: int) -> BatchRecord:
        """Record one gathered generation batch: rows come in groups of ``k`` sharing one task id.

        ``epoch`` is the integer epoch index the batch belongs to (epochs never go back); ``step``
        the trainer step, kept for plots. ``rewards`` may be a list or a 1-D tensor. O(len(rewards)). Several groups of one task in one epoch are pooled into one observation.
        Raises :class:`GroupLayoutError` if the layout is wrong (nothing is recorded then).
        """
        if k < 1:
            raise GroupLayoutError(f"k must be >= 1, got {k}")
        if hasattr(rewards, "tolist"):  # a tensor or array: one conversion, not one per element
            rewards = rewards.tolist()
        task_ids = list(task_ids)
        if len(task_ids) != len(rewards):
            raise GroupLayoutError(f"{len(task_ids)} task ids but {len(rewards)} rewards")
        if len(rewards) % k:
            raise GroupLayoutError(f"{len(rewards)} rows is not a multiple of k={k}")
        if self.latest_epoch is not None and epoch < self.latest_epoch:
            raise ValueError(f"epoch {epoch} recorded after epoch {self.latest_epoch}")
        n_groups = len(rewards) // k
        gids: list[str] = []
        means: list[float] = []
        m2s: list[float] = []
        informative: list[bool] = []
        for g in range(0, len(rewards), k):
            tid = task_ids[g]
            if k > 1 and task_ids[g : g + k].count(tid) != k:
                j = next(j for j in range(g, g + k) if task_ids[j] != tid)
                raise GroupLayoutError(
                    f"rows {g}..{g + k - 1} should share one task id (a group of k={k}), "
                    f"but row {g} is {tid!r} and row {j} is {task_ids[j]!r}"
                )
            rs = [float(r) for r in rewards[g : g + k]]
            total = math.fsum(rs)
            if not math.isfinite(total):
                raise ValueError(f"non-finite reward for task {tid!r}: {rs}")
            mean = total / k
            gids.append(tid)
            means.append(mean)
            m2s.append(math.fsum([(r - mean) ** 2 for r in rs]))
            informative.append(max(rs) - min(rs) > INFORMATIVE_ATOL)
        # validated: apply
        counters = self._epoch_groups.setdefault(epoch, [0, 0])
        counters[0] += n_groups
        counters[1] += sum(informative)
        for tid, mean, m2 in zip(gids, means, m2s, strict=True):
            self._merge(tid, step, epoch, k, mean, m2)
        while len(self._epoch_groups) > self.config.epoch_log_size:
            del self._epoch_groups[min(self._epoch_groups)]
        self.latest_epoch = epoch
        self.last_batch = BatchRecord.model_construct(
            step=step, epoch=epoch, k=k, task_ids=gids, means=means, variances=[m2 / k for m2 in m2s],
            informative=informative,
        )
        return self.last_batch

    def _merge(self, tid: str, step: int, epoch: int, n: int, mean: float, m2: float) -> None:
        tr = self._tracks.get(tid)
        if tr is None:
            tr = self._tracks[tid] = _Track(self._lookup_category(tid), self._lookup_classes(tid))
        tr.groups += 1
        if tr.hist and tr.hist[-1][0] == epoch:
            e = tr.hist[-1]
            na, ma, m2a = e[2], e[3], e[4]
            tot = na + n
            delta = mean - ma
            e[1] = max(e[1], step)
            e[2] = tot
            e[3] = ma + delta * n / tot
            e[4] = m2a + m2 + delta * delta * na * n / tot
        else:
            tr.hist.append([epoch, step, n, mean, m2])
            if len(tr.hist) > self.config.history_size:
                del tr.hist[0]

    # ------------------------------------------------------------------ queries
    def __contains__(self, task_id: str) -> bool:
        """Whether ``task_id`` has statistics (recorded and not forgotten)."""
        return task_id in self._tracks

    def __len__(self) -> int:
        """Tasks with statistics."""
        return len(self._tracks)

    def latest(self, task_id: str) -> EpochObservation | None:
        """The latest epoch observation of ``task_id`` (None if never observed)."""
        tr = self._tracks.get(task_id)
        if tr is None or not tr.hist:
            return None
        return _obs(tr.hist[-1])

    def latest_mean(self, task_id: str) -> float | None:
        """Mean of the latest epoch observation (None if never observed)."""
        tr = self._tracks.get(task_id)
        return tr.hist[-1][3] if tr is not None and tr.hist else None

    def latest_means(self, task_id: str, w: int) -> list[float]:
        """Means of the last ``w`` epoch observations (oldest first; fewer if fewer exist)."""
        tr = self._tracks.get(task_id)
        if tr is None:
            return []
        h = tr.hist
        return [h[i][3] for i in range(max(0, len(h) - w), len(h))]

    def evaluations(self, task_id: str) -> int:
        """Epoch observations held for ``task_id`` (at most ``history_size``)."""
        tr = self._tracks.get(task_id)
        return len(tr.hist) if tr else 0

    def record_unscorable(self, task_ids: Iterable[str]) -> None:
        """Count groups that could not be scored (:func:`scorable_groups` left them out), one per id.

        No statistics change; the buffer evicts a generated item that was rolled out but never scored
        (its prompt does not fit the context), which otherwise would hold a P_max slot forever.
        """
        for tid in task_ids:
            self._unscorable[tid] = self._unscorable.get(tid, 0) + 1

    def unscorable(self, task_id: str) -> int:
        """Groups of ``task_id`` that could not be scored."""
        return self._unscorable.get(task_id, 0)

    def snapshot(self, task_ids: Iterable[str]) -> DetectorSnapshot:
        """The statistics of ``task_ids`` as one frozen value (what the buffer reads at a boundary). O(len(task_ids))."""
        views: dict[str, TaskView] = {}
        for tid in task_ids:
            tr = self._tracks.get(tid)
            bad = self._unscorable.get(tid, 0)
            if (tr is None or not tr.hist) and not bad:
                continue
            hist = tr.hist if tr is not None else []
            views[tid] = TaskView.model_construct(means=tuple(e[3] for e in hist),
                                                  var=hist[-1][4] / hist[-1][2] if hist else None, unscorable=bad)
        return DetectorSnapshot.model_construct(epoch=self.latest_epoch, history_size=self.config.history_size,
                                                tasks=views)

    def stats(self, task_id: str) -> TaskStats | None:
        """All statistics of ``task_id`` as a model (None if never observed)."""
        tr = self._tracks.get(task_id)
        if tr is None:
            return None
        return TaskStats(
            task_id=task_id, category=tr.category, classes=list(tr.classes), groups=tr.groups,
            history=[_obs(e) for e in tr.hist],
        )

    def zone(self, mean: float) -> Zone:
        """The zone of a mean under the current thresholds (boundary edges inclusive)."""
        if mean > self.config.alpha_plus:
            return "mastered"
        if mean < self.config.alpha_minus:
            return "hard"
        return "boundary"

    def forget(self, task_ids: Iterable[str]) -> None:
        """Drop the statistics of tasks that left the pool (keeps memory bounded by the pool); their reward history
        (at most ``history_size`` rows each) stays in :attr:`retired_history` for ``rods export RUN``."""
        for tid in task_ids:
            track = self._tracks.pop(tid, None)
            if track is not None and track.hist:
                self.retired_history[tid] = [list(e) for e in track.hist]
            self._last_emitted.pop(tid, None)
            self._unscorable.pop(tid, None)

    # ------------------------------------------------------------------ partition / seeds
    def partition(self, task_ids: Iterable[str] | None = None) -> Partition:
        """Zones of ``task_ids`` (default: every tracked task) from each task's latest epoch. O(pool log pool)."""
        lo, hi = self.config.alpha_minus, self.config.alpha_plus
        mastered: list[str] = []
        boundary: list[str] = []
        hard: list[str] = []
        unseen: list[str] = []
        by_type: dict[str, int] = {}
        tracks = self._tracks
        ids = tracks.keys() if task_ids is None else task_ids
        for tid in ids:
            tr = tracks.get(tid)
            if tr is None or not tr.hist:
                unseen.append(tid)
                continue
            m = tr.hist[-1][3]
            if m > hi:
                mastered.append(tid)
            elif m < lo:
                hard.append(tid)
            else:
                boundary.append(tid)
                by_type[tr.category] = by_type.get(tr.category, 0) + 1
        groups, informative = self._epoch_groups.get(self.latest_epoch, (0, 0)) if self.latest_epoch is not None else (0, 0)
        for lst in (mastered, boundary, hard, unseen):
            lst.sort()
        return Partition.model_construct(
            epoch=self.latest_epoch, alpha_minus=lo, alpha_plus=hi, mastered=mastered, boundary=boundary,
            hard=hard, unseen=unseen, boundary_by_type=dict(sorted(by_type.items())), groups=groups,
            informative_groups=informative,
        )

    def select_seeds(
        self,
        n: int | None = None,
        quotas: Mapping[str, int] | None = None,
        *,
        by: SeedType = "category",
        balance_classes: bool = False,
        cooldown: int = 0,
        redistribute: bool = False,
        task_ids: Iterable[str] | None = None,
        epoch: int | None = None,
    ) -> SeedSelection:
        """Choose boundary tasks as synthesis seeds: nearest 0.5 first, per-type quotas, optional cooldown.

        Ranking inside a type: ``|mean - 0.5|`` ascending (= φ descending), then variance descending,
        then task id. Quotas are per type (``by="category"``: base / miss_func / miss_param /
        long_context; ``by="classes"``: the sorted involved classes joined by ``+``). A type gets
        exactly ``min(quota, its eligible boundary tasks)`` seeds; a type missing from ``quotas``
        gets none. With ``redistribute=True`` the slots left empty (up to ``n``) are filled from the
        remaining eligible tasks in global rank order (RODS's [TW] reading does not redistribute).

        ``n`` defaults to ``sum(quotas)``; ``quotas`` default to :func:`even_quotas` over the four
        categories (or, for ``by="classes"``, over the class sets present among boundary tasks).
        ``sum(quotas) > n`` is an error. A task chosen at epoch ``e`` is not chosen again before
        epoch ``e + cooldown + 1``. Chosen seeds are remembered (the cooldown is part of the state).
        Never raises for lack of boundary tasks: returns an empty selection with a ``reason``.

        ``balance_classes=True`` (only with ``by="category"``) spreads each category's quota over the
        involved-class groups of its eligible tasks: rounds of one task per group (each group's best
        remaining), a round's picks taken in rank order until the quota is filled. So within a
        category, no class group gets more than one seed over another group unless that other group
        ran out of eligible tasks. Both ``by="classes"`` and ``balance_classes`` need the ``classes``
        lookup given at construction (a ``ValueError`` otherwise: every task would be "unknown").
        """
        if cooldown < 0:
            raise ValueError(f"cooldown must be >= 0, got {cooldown}")
        if by not in ("category", "classes"):
            raise ValueError(f"by must be 'category' or 'classes', got {by!r}")
        if balance_classes and by != "category":
            raise ValueError("balance_classes spreads category quotas over classes: use it with by='category'")
        if (by == "classes" or balance_classes) and self._classes is None:
            raise ValueError("seed selection by involved classes needs the detector's `classes` lookup")
        if n is None and quotas is None:
            raise ValueError("give n, quotas, or both")
        if n is not None and n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        if quotas is not None and any(v < 0 for v in quotas.values()):
            raise ValueError(f"quotas must be >= 0: {dict(quotas)}")
        epoch = self.latest_epoch if epoch is None else epoch
        now = epoch if epoch is not None else 0
        lo, hi = self.config.alpha_minus, self.config.alpha_plus

        # candidates: boundary tasks, bucketed by type; key = (|m - 0.5|, -var, id)
        buckets: dict[str, list[tuple[float, float, str, float, float]]] = {}
        n_boundary = cooling = 0
        tracks = self._tracks
        ids = tracks.keys() if task_ids is None else task_ids
        for tid in ids:
            tr = tracks.get(tid)
            if tr is None or not tr.hist:
                continue
            e = tr.hist[-1]
            m = e[3]
            if m < lo or m > hi:
                continue
            n_boundary += 1
            last = self._last_emitted.get(tid)
            if cooldown and last is not None and now <= last + cooldown:
                cooling += 1
                continue
            var = e[4] / e[2]
            typ = tr.category if by == "category" else _class_group(tr)
            buckets.setdefault(typ, []).append((abs(m - 0.5), -var, tid, m, var))

        if quotas is None:
            types = list(CATEGORIES) if by == "category" else sorted(buckets)
            quotas = even_quotas(n or 0, types)
        quotas = dict(quotas)
        if n is None:
            n = sum(quotas.values())
        if sum(quotas.values()) > n:
            raise ValueError(f"quotas sum to {sum(quotas.values())} > n={n}: {quotas}")

        chosen: list[tuple[float, float, str, float, float, str]] = []
        leftovers: list[tuple[float, float, str, float, float, str]] = []
        per_type: dict[str, int] = {}
        for typ in sorted(buckets):
            cand = buckets[typ]
            q = quotas.get(typ, 0)
            if balance_classes:
                take, rest = _spread_over_classes(cand, q, self._tracks)
                if redistribute:
                    leftovers.extend((*c, typ) for c in rest)
            elif redistribute:
                cand.sort()
                take, rest = cand[:q], cand[q:]
                leftovers.extend((*c, typ) for c in rest)
            else:
                take = heapq.nsmallest(q, cand) if q else []
            chosen.extend((*c, typ) for c in take)
            per_type[typ] = len(take)
        if redistribute and len(chosen) < n:
            extra = heapq.nsmallest(n - len(chosen), leftovers)
            chosen.extend(extra)
            for c in extra:
                per_type[c[5]] = per_type.get(c[5], 0) + 1
        chosen.sort()

        seeds = [Seed.model_construct(task_id=c[2], type=c[5], mean=c[3], var=c[4], phi=phi(c[3]),
                                      group=_class_group(self._tracks[c[2]]) if balance_classes else None)
                 for c in chosen]
        for s in seeds:
            self._last_emitted[s.task_id] = now
        reason = None
        if len(seeds) < n:
            if n_boundary == 0:
                reason = f"no boundary tasks (alpha in [{lo}, {hi}]) among {len(self._tracks) if task_ids is None else 'the given'} tasks"
            elif n_boundary == cooling:
                reason = f"all {n_boundary} boundary tasks are in cooldown ({cooldown} epochs)"
            else:
                short = {t: q for t, q in quotas.items() if per_type.get(t, 0) < q}
                reason = f"too few eligible boundary tasks for quotas {short} ({cooling} in cooldown)"
        return SeedSelection.model_construct(
            epoch=epoch, n=n, by=by, balance_classes=balance_classes, quotas=quotas, redistribute=redistribute,
            cooldown=cooldown, seeds=seeds,
            per_type={t: c for t, c in sorted(per_type.items()) if c}, boundary=n_boundary, cooling=cooling,
            reason=reason,
        )

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """JSON-serializable state; ``load_state_dict`` restores it exactly (floats round-trip through JSON)."""
        return {
            "version": STATE_VERSION,
            "config": self.config.model_dump(),
            "latest_epoch": self.latest_epoch,
            "tracks": {
                tid: {"category": tr.category, "classes": list(tr.classes), "groups": tr.groups,
                      "history": [list(e) for e in tr.hist]}
                for tid, tr in self._tracks.items()
            },
            "last_emitted": dict(self._last_emitted),
            "retired_history": {k: [list(e) for e in v] for k, v in self.retired_history.items()},
            "unscorable": dict(self._unscorable),
            "epoch_groups": {str(e): list(c) for e, c in self._epoch_groups.items()},
        }

    def load_state_dict(self, state: Mapping[str, Any], *, restore_config: bool = False) -> dict[str, tuple[Any, Any]]:
        """Restore a :meth:`state_dict`: statistics, cooldowns and epoch counters exactly.

        Thresholds and sizes: by default the detector's *current* config wins (a resumed run uses
        the settings it was started with, e.g. ``rods train --resume --alpha_minus 0.3``), applied
        after loading: histories and the epoch log are trimmed to the current sizes. Each value that
        differs from the saved config is logged as a warning and returned as
        ``{name: (saved, current)}``. ``restore_config=True`` adopts the saved config instead (an
        exact clone). The lookups given at construction are kept.
        """
        self.config, changes = reconcile_config(state, self.config, STATE_VERSION, "detector", restore_config)
        self.latest_epoch = state["latest_epoch"]
        self._tracks = {}
        for tid, d in state["tracks"].items():
            tr = _Track(d["category"], tuple(d["classes"]))
            tr.groups = d["groups"]
            tr.hist = [[int(e[0]), int(e[1]), int(e[2]), float(e[3]), float(e[4])] for e in d["history"]]
            del tr.hist[: max(0, len(tr.hist) - self.config.history_size)]
            self._tracks[tid] = tr
        self._last_emitted = {k: int(v) for k, v in state["last_emitted"].items()}
        self.retired_history = {k: [list(e) for e in v] for k, v in state.get("retired_history", {}).items()}
        self._unscorable = {k: int(v) for k, v in state.get("unscorable", {}).items()}  # absent in older states
        self._epoch_groups = {int(e): list(c) for e, c in state["epoch_groups"].items()}
        while len(self._epoch_groups) > self.config.epoch_log_size:
            del self._epoch_groups[min(self._epoch_groups)]
        self.last_batch = None
        return changes

    def save(self, path: str | Path) -> None:
        """Write :meth:`state_dict` to ``path`` as JSON, atomically."""
        atomic_write_text(path, json.dumps(self.state_dict()))

    def load(self, path: str | Path, *, restore_config: bool = False) -> dict[str, tuple[Any, Any]]:
        """Restore :meth:`save`'s file (see :meth:`load_state_dict`)."""
        return self.load_state_dict(json.loads(Path(path).read_text(encoding="utf-8")), restore_config=restore_config)


def _class_group(tr: _Track) -> str:
    return "+".join(tr.classes) or "unknown"


def _spread_over_classes(cand: list[tuple], q: int, tracks: Mapping[str, _Track]) -> tuple[list[tuple], list[tuple]]:
    """Take ``q`` of ``cand`` (rank keys) spread over involved-class groups; returns (taken, rest).

    Round r takes the r-th best task of every group that still has one, in rank order, until ``q``
    are taken; so taken counts of two groups differ by at most one unless a group ran out.
    """
    groups: dict[str, list[tuple]] = {}
    for c in sorted(cand):
        groups.setdefault(_class_group(tracks[c[2]]), []).append(c)
    take: list[tuple] = []
    r = 0
    while len(take) < q:
        layer = sorted(g[r] for g in groups.values() if r < len(g))
        if not layer:
            break
        take.extend(layer[: q - len(take)])
        r += 1
    taken = {c[2] for c in take}
    return take, [c for c in sorted(cand) if c[2] not in taken]


def _obs(e: list) -> EpochObservation:
    return EpochObservation.model_construct(epoch=e[0], step=e[1], n=e[2], mean=e[3], var=e[4] / e[2])


__all__ = [
    "BatchRecord",
    "BoundaryDetector",
    "DetectorConfig",
    "DetectorSnapshot",
    "EpochObservation",
    "GroupLayoutError",
    "GroupStats",
    "Partition",
    "Seed",
    "SeedSelection",
    "TaskStats",
    "TaskView",
    "Zone",
    "config_changes",
    "even_quotas",
    "format_changes",
    "phi",
]
