"""Dynamic replay buffer: the active training pool, a candidate queue, staged injection, retirement.

RODS §5 ("dual-control lifecycle with staged injection and multi-layer retirement"); numbers from
the paper as read by [CN]/[TW] (see ``docs/rods-paper-notes.md`` §5 and §8):

* **Staged injection.** :meth:`ReplayBuffer.enqueue` only queues; variants enter the pool at
  :meth:`ReplayBuffer.on_epoch_boundary`, at most ``beta`` (20%) of the pool trained on in the
  epoch that just ended, first in first out, but at least one while the queue holds any and
  P_max leaves room (``floor(0.2 * pool)`` is 0 for pools under 5; ``beta = 0`` turns injection
  off). Leftovers wait for later boundaries.
* **P_max** (400) caps the *generated* part of the pool. Injection never lets the not-yet-evaluated
  generated items exceed P_max, so pruning can always restore the cap; in ``no_retirement`` mode
  injection stops at P_max (nothing ever leaves).
* **Retirement**, in this order, each recorded as a :class:`Retired` event with its reason:

  1. ``burn_in``: a generated item whose first evaluation mean is below ``burn_in_threshold``
     (0.20; one observation, ToolWeave's reading: the paper's window was not retrieved), or one that was
     rolled out but never scorable (``detector.unscorable``: its prompt alone exceeds the context, so it
     can never train; left unevaluated it would hold a P_max slot forever).
  2. ``mastered`` / ``hard`` (boundary drift): the last ``drift_window`` (W = 2) epoch means are all
     above ``retire_mastered`` (0.95, the paper's separate retirement threshold) or all below
     ``retire_hard`` (0.20). W is our choice: the paper names drift eviction but no window.
  3. ``pruned``: while the generated pool exceeds P_max, the evaluated item with the lowest
     *observed* reward variance of its latest epoch (the K rollouts the detector pooled) goes first,
     ties by the lower φ = 4 m (1 - m), then older injection, then id (``prune_by="variance"``, the
     default). A task whose K rollouts all scored the same partial value (φ high, variance 0) gives
     GRPO no gradient, so it goes before a task whose rollouts disagree. ``prune_by="phi"`` ranks by
     φ of the latest mean first (the paper's wording, the Bernoulli-variance bound), variance as
     the tie-breaker. Items not evaluated yet are never pruned: they have had no burn-in.

* **The pool never empties.** Burn-in and drift never take the active pool below
  ``min_pool_size`` (at least 1): when they would, the candidates with the highest φ stay (the
  most informative), are reported as ``kept`` and logged, and are checked again at the next
  boundary. P_max pruning is a hard cap and wins over ``min_pool_size``, but never removes the
  last task of the pool.
* **Human seeds are the anchor.** They are never burned in, pruned or evicted as hard, so every
  skill of the original data stays in the curriculum and a hard seed can come back into reach as
  the policy improves. ``retire_seeds=True`` lets *mastered* seeds retire by drift as well (the
  paper's Fig. 3 speaks of "evicting mastered tasks"; whether human seeds are included is not
  said). Retired ids are remembered, so a retired task is never queued again.

The buffer is deterministic (no random numbers): every rank that sees the same gathered rewards
makes the same decisions. ``state_dict()``/``save()`` capture pool, queue, per-item lifecycle,
retired ids and the event log exactly; ``save(path, detector=...)`` writes both in one atomic file.
On load the buffer's *current* config wins (thresholds, capacities), with a logged warning for
every value that differs from the saved one; ``restore_config=True`` adopts the saved config.
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict, deque
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from envs.task import Task, atomic_write_text
from trainer.detection import BoundaryDetector, DetectorSnapshot, phi
from trainer.reconcile import reconcile_config

log = logging.getLogger(__name__)

STATE_VERSION = 1
RetireReason = Literal["burn_in", "mastered", "hard", "pruned"]
RETIRE_REASONS: tuple[RetireReason, ...] = ("burn_in", "mastered", "hard", "pruned")


class BufferConfig(BaseModel):
    """Replay-buffer knobs; defaults are RODS's where the paper gives them (sources in the module doc)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    beta: float = Field(0.20, ge=0.0, le=1.0, description="Injection cap per boundary, fraction of the active pool.")
    p_max: int = Field(400, ge=0, description="Capacity for generated (non-seed) items in the active pool.")
    burn_in_threshold: float = Field(0.20, ge=0.0, le=1.0, description="Retire a variant whose first mean is below.")
    retire_mastered: float = Field(0.95, ge=0.0, le=1.0, description="Drift: all of the last W means above -> mastered.")
    retire_hard: float = Field(0.20, ge=0.0, le=1.0, description="Drift: all of the last W means below -> hard.")
    drift_window: int = Field(2, ge=1, description="W: consecutive epoch evaluations needed for drift eviction.")
    retire_seeds: bool = Field(False, description="Let mastered human seeds retire by drift too.")
    no_retirement: bool = Field(False, description="Ablation: nothing ever leaves; injection stops at P_max.")
    min_pool_size: int = Field(1, ge=1, description="Burn-in and drift never shrink the active pool below this.")
    max_queue: int = Field(4000, ge=0, description="Queue capacity; the oldest candidates are dropped beyond it.")
    event_log_size: int = Field(100_000, ge=0, description="Events kept in the log (oldest dropped).")
    prune_by: Literal["variance", "phi"] = Field(
        "variance", description="P_max pruning order: lowest observed group variance first (phi breaks ties), "
                                "or lowest phi = 4m(1-m) first (variance breaks ties).")


# --------------------------------------------------------------------------- events
class _Event(BaseModel):
    model_config = ConfigDict(frozen=True)
    task_id: str
    epoch: int | None = Field(description="Boundary epoch (None for events outside a boundary).")


class Queued(_Event):
    kind: Literal["queued"] = "queued"


class Rejected(_Event):
    """A candidate refused at :meth:`ReplayBuffer.enqueue` (its id is already known)."""

    kind: Literal["rejected"] = "rejected"
    reason: Literal["duplicate_active", "duplicate_queued", "previously_retired"]


class Dropped(_Event):
    """A queued candidate dropped because the queue was full (the oldest go first)."""

    kind: Literal["dropped"] = "dropped"
    reason: Literal["queue_full"] = "queue_full"


class Injected(_Event):
    kind: Literal["injected"] = "injected"


class Retired(_Event):
    kind: Literal["retired"] = "retired"
    reason: RetireReason
    seed: bool = Field(description="A human seed (only with retire_seeds=True).")
    mean: float | None = Field(description="Latest epoch mean when retired.")
    phi: float | None
    evaluations: int


BufferEvent = Annotated[Queued | Rejected | Dropped | Injected | Retired, Field(discriminator="kind")]
_EVENTS = TypeAdapter(list[BufferEvent])


class BoundaryReport(BaseModel):
    """What one :meth:`ReplayBuffer.on_epoch_boundary` did; ``metrics()`` feeds ``report_to``."""

    epoch: int
    pool_before: int
    injected: list[str]
    retired: list[Retired]
    kept: list[str] = Field(default_factory=list,
                            description="Due to retire (burn-in/drift) but kept so the pool stays >= min_pool_size.")
    pool_size: int
    seeds: int
    generated: int
    queue: int

    def retired_by_reason(self) -> dict[str, int]:
        out = dict.fromkeys(RETIRE_REASONS, 0)
        for r in self.retired:
            out[r.reason] += 1
        return out

    def metrics(self, prefix: str = "rods/") -> dict[str, float]:
        out = {
            f"{prefix}injected": float(len(self.injected)),
            f"{prefix}pool_size": float(self.pool_size),
            f"{prefix}pool_seeds": float(self.seeds),
            f"{prefix}pool_generated": float(self.generated),
            f"{prefix}queue": float(self.queue),
            f"{prefix}kept_by_floor": float(len(self.kept)),
        }
        out.update({f"{prefix}retired/{k}": float(v) for k, v in self.retired_by_reason().items()})
        return out


class _Item:
    """Lifecycle of one generated item in the pool (plain slots: pools may be large)."""

    __slots__ = ("order", "epoch", "burned_in")

    def __init__(self, order: int, epoch: int, burned_in: bool = False):
        self.order = order  # injection counter: older first
        self.epoch = epoch  # boundary epoch it was injected at
        self.burned_in = burned_in


# --------------------------------------------------------------------------- buffer
class ReplayBuffer:
    """Active pool (human seeds + injected variants, keyed by id) and the candidate queue.

    Args:
        seeds: the human seed tasks; they anchor the curriculum (see the module doc).
        config: buffer knobs.
        task_model: the pydantic model stored items are restored as by :meth:`load_state_dict`
            (``Task``; a lighter model with an ``id`` field works for benchmarks).
    """

    def __init__(self, seeds: Iterable[Task], config: BufferConfig | None = None, *, task_model: type[BaseModel] = Task):
        self.config = config or BufferConfig()
        self.task_model = task_model
        self._pool: dict[str, BaseModel] = {}
        self._seed_ids: set[str] = set()
        for t in seeds:
            if t.id in self._pool:
                raise ValueError(f"duplicate seed id {t.id!r}")
            self._pool[t.id] = t
            self._seed_ids.add(t.id)
        self._gen: dict[str, _Item] = {}  # generated ids in the pool, injection order
        self._queue: OrderedDict[str, BaseModel] = OrderedDict()  # FIFO; O(1) pops from the front
        self._retired: set[str] = set()
        self._counter = 0
        self._events: deque = deque(maxlen=self.config.event_log_size)
        self.last_epoch: int | None = None

    # ------------------------------------------------------------------ views
    def active_tasks(self) -> list[BaseModel]:
        """The training pool: human seeds in their given order, then generated items oldest first."""
        return list(self._pool.values())

    def active_ids(self) -> list[str]:
        """Ids of the training pool, in :meth:`active_tasks` order (a copy)."""
        return list(self._pool)

    def queued_ids(self) -> list[str]:
        """Ids waiting in the candidate queue, oldest (next to inject) first (a copy)."""
        return list(self._queue)

    @property
    def seed_ids(self) -> frozenset[str]:
        """Human seeds still in the pool (a seed leaves only by mastered drift with ``retire_seeds``)."""
        return frozenset(self._seed_ids)

    @property
    def retired_ids(self) -> frozenset[str]:
        """Every id ever retired; :meth:`enqueue` refuses them (``previously_retired``)."""
        return frozenset(self._retired)

    @property
    def events(self) -> list[Queued | Rejected | Dropped | Injected | Retired]:
        """The event log, oldest first (bounded by ``event_log_size``)."""
        return list(self._events)

    def __len__(self) -> int:
        """Size of the active pool (seeds + generated)."""
        return len(self._pool)

    def __contains__(self, task_id: str) -> bool:
        """Whether ``task_id`` is in the active pool (queued items are not)."""
        return task_id in self._pool

    @property
    def n_generated(self) -> int:
        """Generated (non-seed) items in the active pool; P_max caps this number."""
        return len(self._gen)

    # ------------------------------------------------------------------ queue
    def enqueue(self, tasks: Iterable[BaseModel], epoch: int | None = None) -> list[Queued | Rejected | Dropped]:
        """Queue candidates for the next boundary; the active pool never changes here."""
        out: list[Queued | Rejected | Dropped] = []
        for t in tasks:
            tid = t.id
            if tid in self._pool:
                ev: Queued | Rejected | Dropped = Rejected(task_id=tid, epoch=epoch, reason="duplicate_active")
            elif tid in self._queue:
                ev = Rejected(task_id=tid, epoch=epoch, reason="duplicate_queued")
            elif tid in self._retired:
                ev = Rejected(task_id=tid, epoch=epoch, reason="previously_retired")
            else:
                self._queue[tid] = t
                ev = Queued.model_construct(task_id=tid, epoch=epoch, kind="queued")
            out.append(ev)
        while len(self._queue) > self.config.max_queue:
            old, _ = self._queue.popitem(last=False)
            out.append(Dropped(task_id=old, epoch=epoch))
        self._events.extend(out)
        return out

    # ------------------------------------------------------------------ boundary
    def on_epoch_boundary(self, epoch: int, stats: DetectorSnapshot | BoundaryDetector) -> BoundaryReport:
        """Inject from the queue, then retire (burn-in, drift, pruning), from one detector snapshot.

        Call it once per boundary, after the epoch's rewards were recorded and before the next
        epoch's pool is built, with ``detector.snapshot(buffer.active_ids())``; then drop the
        report's retired ids from the detector (:meth:`BoundaryDetector.forget`) so its memory stays
        bounded by the pool. Given the live detector instead, the buffer takes that snapshot and
        forgets the retired ids itself.
        """
        detector = stats if isinstance(stats, BoundaryDetector) else None
        snap = detector.snapshot(self.active_ids()) if detector is not None else stats
        if self.config.drift_window > snap.history_size:
            raise ValueError(f"drift_window {self.config.drift_window} exceeds the detector's history_size "
                             f"{snap.history_size}")
        pool_before = len(self._pool)
        injected = self._inject(epoch, snap, pool_before)
        retired: list[Retired] = []
        kept: list[str] = []
        if not self.config.no_retirement:
            retired += self._retire(self._above_floor(self._burn_in(epoch, snap), kept))
            retired += self._retire(self._above_floor(self._drift(epoch, snap), kept))
            retired += self._retire(self._over_capacity(epoch, snap))
        kept = [t for t in kept if t in self._pool]  # spared by the floor, then pruned by the P_max cap: not kept
        self._events.extend(retired)
        if detector is not None:
            detector.forget(r.task_id for r in retired)
        self.last_epoch = epoch
        if kept:
            log.warning("epoch %d: kept %d task(s) due to retire so the pool stays >= %d (min_pool_size): %s",
                        epoch, len(kept), max(1, self.config.min_pool_size), kept)
        return BoundaryReport(
            epoch=epoch, pool_before=pool_before, injected=injected, retired=retired, kept=kept,
            pool_size=len(self._pool),
            seeds=len(self._pool) - len(self._gen), generated=len(self._gen), queue=len(self._queue),
        )

    def _inject(self, epoch: int, snap: DetectorSnapshot, pool_before: int) -> list[str]:
        """Phase 1, staged injection: beta of the pool trained on, FIFO, at least one if beta > 0
        (``floor(0.2 * pool)`` is 0 for pools under 5, which would starve small pools); unevaluated
        generated items never exceed P_max (so pruning can always restore the cap)."""
        cfg = self.config
        if cfg.no_retirement:
            room = cfg.p_max - len(self._gen)
        else:
            room = cfg.p_max - sum(1 for g in self._gen if snap.evaluations(g) == 0)
        cap = max(1, int(cfg.beta * pool_before)) if cfg.beta > 0 else 0
        injected: list[str] = []
        for _ in range(max(0, min(len(self._queue), cap, room))):
            tid, task = self._queue.popitem(last=False)
            self._pool[tid] = task
            self._counter += 1
            self._gen[tid] = _Item(self._counter, epoch)
            injected.append(tid)
            self._events.append(Injected.model_construct(task_id=tid, epoch=epoch, kind="injected"))
        return injected

    def _burn_in(self, epoch: int, snap: DetectorSnapshot) -> list[Retired]:
        """Phase 2, burn-in: a generated item's first evaluation below the threshold, or rolled out and never scorable."""
        due: list[Retired] = []
        for tid, item in self._gen.items():
            if item.burned_in:
                continue
            if snap.evaluations(tid) == 0:
                if snap.unscorable(tid):  # rolled out, never scorable (prompt over the context): can't train
                    due.append(self._retired_event(tid, "burn_in", epoch, snap))
                continue
            if snap.latest_means(tid, snap.history_size)[0] < self.config.burn_in_threshold:
                due.append(self._retired_event(tid, "burn_in", epoch, snap))
            else:
                item.burned_in = True
        return due

    def _drift(self, epoch: int, snap: DetectorSnapshot) -> list[Retired]:
        """Phase 3, boundary drift: the last W means all mastered, or (never for seeds) all hard."""
        cfg = self.config
        due: list[Retired] = []
        for tid in self._pool:
            is_seed = tid in self._seed_ids
            if is_seed and not cfg.retire_seeds:
                continue
            means = snap.latest_means(tid, cfg.drift_window)
            if len(means) < cfg.drift_window:
                continue
            if all(m > cfg.retire_mastered for m in means):
                due.append(self._retired_event(tid, "mastered", epoch, snap))
            elif not is_seed and all(m < cfg.retire_hard for m in means):
                due.append(self._retired_event(tid, "hard", epoch, snap))
        return due

    def _over_capacity(self, epoch: int, snap: DetectorSnapshot) -> list[Retired]:
        """Phase 4, pruning: evaluated generated items beyond P_max, in :meth:`_prune_order` (never the last task)."""
        excess = min(len(self._gen) - self.config.p_max, len(self._pool) - 1)  # P_max 0 after a resume: keep one
        if excess <= 0:
            return []
        return [self._retired_event(tid, "pruned", epoch, snap) for tid in self._prune_order(snap)[:excess]]

    def _retire(self, due: list[Retired]) -> list[Retired]:
        self._remove(r.task_id for r in due)
        return due

    def _prune_order(self, snap: DetectorSnapshot) -> list[str]:
        """Evaluated generated ids, first to prune first (``prune_by``; see the module doc)."""
        ranked = []
        for tid, item in self._gen.items():
            mean, var = snap.latest_mean(tid), snap.latest_var(tid)
            if mean is None or var is None:
                continue
            key = (var, phi(mean)) if self.config.prune_by == "variance" else (phi(mean), var)
            ranked.append((*key, item.order, tid))
        ranked.sort()
        return [r[-1] for r in ranked]

    def _above_floor(self, due: list[Retired], kept: list[str]) -> list[Retired]:
        """The part of ``due`` that can leave without the pool dropping below ``min_pool_size``.

        When not all can, the lowest-φ ones leave (ties by id) and the rest stay, appended to ``kept``.
        """
        allowed = max(0, len(self._pool) - max(1, self.config.min_pool_size))
        if len(due) <= allowed:
            return due
        ranked = sorted(due, key=lambda r: (r.phi if r.phi is not None else 0.0, r.task_id))
        kept.extend(r.task_id for r in ranked[allowed:])
        leave = {r.task_id for r in ranked[:allowed]}
        return [r for r in due if r.task_id in leave]

    def _retired_event(self, tid: str, reason: RetireReason, epoch: int, snap: DetectorSnapshot) -> Retired:
        m = snap.latest_mean(tid)
        return Retired.model_construct(
            task_id=tid, epoch=epoch, kind="retired", reason=reason, seed=tid in self._seed_ids,
            mean=m, phi=None if m is None else phi(m), evaluations=snap.evaluations(tid),
        )

    def _remove(self, ids: Iterable[str]) -> None:
        for tid in list(ids):
            del self._pool[tid]
            self._gen.pop(tid, None)
            self._seed_ids.discard(tid)
            self._retired.add(tid)

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """JSON-serializable state: config, pool (in order), seeds, lifecycle, queue, retired ids, events."""
        return {
            "version": STATE_VERSION,
            "config": self.config.model_dump(),
            "last_epoch": self.last_epoch,
            "counter": self._counter,
            "pool": [t.model_dump(mode="json") for t in self._pool.values()],
            "seed_ids": [tid for tid in self._pool if tid in self._seed_ids],
            "generated": {tid: [it.order, it.epoch, it.burned_in] for tid, it in self._gen.items()},
            "queue": [t.model_dump(mode="json") for t in self._queue.values()],
            "retired": sorted(self._retired),
            "events": _EVENTS.dump_python(list(self._events), mode="json"),
        }

    def load_state_dict(self, state: Mapping[str, Any], *, restore_config: bool = False) -> dict[str, tuple[Any, Any]]:
        """Restore a :meth:`state_dict`: pool, seeds, lifecycle, queue, retired ids and events exactly.

        The buffer's *current* config wins (a resumed run keeps the ``--p_max``, ``--injection_cap``
        ... it was started with); each value that differs from the saved config is logged as a
        warning and returned as ``{name: (saved, current)}``. New capacities take effect at the
        next boundary (P_max pruning) or enqueue (``max_queue``); ``event_log_size`` at once.
        ``restore_config=True`` adopts the saved config instead (an exact clone).
        """
        self.config, changes = reconcile_config(state, self.config, STATE_VERSION, "buffer", restore_config)
        self.last_epoch = state["last_epoch"]
        self._counter = state["counter"]
        model = self.task_model
        self._pool = {}
        for d in state["pool"]:
            t = model.model_validate(d)
            self._pool[t.id] = t
        self._seed_ids = set(state["seed_ids"])
        self._gen = {tid: _Item(o, e, b) for tid, (o, e, b) in state["generated"].items()}
        if set(self._pool) != self._seed_ids | set(self._gen):
            raise ValueError("buffer state is inconsistent: pool != seeds + generated")
        self._queue = OrderedDict()
        for d in state["queue"]:
            t = model.model_validate(d)
            self._queue[t.id] = t
        self._retired = set(state["retired"])
        self._events = deque(_EVENTS.validate_python(state["events"]), maxlen=self.config.event_log_size)
        return changes

    def save(self, path: str | Path, detector: BoundaryDetector | None = None) -> None:
        """Write the state (and the detector's, if given) to one JSON file, atomically."""
        state: dict[str, Any] = {"buffer": self.state_dict()}
        if detector is not None:
            state["detector"] = detector.state_dict()
        atomic_write_text(path, json.dumps(state))

    def load(self, path: str | Path, detector: BoundaryDetector | None = None, *, restore_config: bool = False) -> None:
        """Restore :meth:`save`'s file; restores ``detector`` too when given (it must have been saved).

        ``restore_config`` as in :meth:`load_state_dict` (default: the current configs win).
        """
        state = json.loads(Path(path).read_text(encoding="utf-8"))
        if detector is not None:
            if "detector" not in state:
                raise ValueError(f"{path} holds no detector state")
            detector.load_state_dict(state["detector"], restore_config=restore_config)
        self.load_state_dict(state["buffer"], restore_config=restore_config)


__all__ = [
    "RETIRE_REASONS",
    "BoundaryReport",
    "BufferConfig",
    "BufferEvent",
    "Dropped",
    "Injected",
    "Queued",
    "Rejected",
    "ReplayBuffer",
    "RetireReason",
    "Retired",
]
