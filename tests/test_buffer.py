"""Replay buffer: staged injection, three retirement layers, human seeds as anchor, exact resume."""

from __future__ import annotations

import json
import random
import tempfile
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envs.dataset import load_bfcl_tasks
from envs.task import Task
from trainer.buffer import RETIRE_REASONS, BufferConfig, Injected, Queued, ReplayBuffer, Retired
from trainer.detection import BoundaryDetector, phi

K = 4


@lru_cache(maxsize=1)
def _template() -> Task:
    return load_bfcl_tasks(["base"])[0]


def seeds(n: int) -> list[Task]:
    t = _template()
    return [t.model_copy(update={"id": f"multi_turn_base_{i}"}) for i in range(n)]


def variants(prefix: str, n: int) -> list[Task]:
    t = _template()
    return [t.model_copy(update={"id": f"multi_turn_base_0__rods_{prefix}{i}"}) for i in range(n)]


def roll(det: BoundaryDetector, epoch: int, means: dict[str, float]) -> None:
    """Record one group of K identical rewards per task (mean = the reward)."""
    ids = [t for t in means for _ in range(K)]
    det.record(epoch, epoch, ids, [means[t] for t in ids], K)


# --------------------------------------------------------------------------- examples
def test_staged_injection_respects_beta_and_fifo():
    buf, det = ReplayBuffer(seeds(10)), BoundaryDetector()
    vs = variants("a", 5)
    events = buf.enqueue(vs, epoch=0)
    assert all(isinstance(e, Queued) for e in events)
    assert buf.active_ids() == [t.id for t in seeds(10)] and buf.queued_ids() == [v.id for v in vs]
    # beta 0.2 * pool 10 = 2 per boundary; pool 12 -> floor(2.4) = 2; then the last one
    injected = [buf.on_epoch_boundary(e, det).injected for e in (1, 2, 3)]
    assert injected == [[vs[0].id, vs[1].id], [vs[2].id, vs[3].id], [vs[4].id]]
    assert buf.active_ids()[-5:] == [v.id for v in vs]  # seeds first, then injection order
    assert buf.queued_ids() == []


def test_enqueue_rejects_known_ids_and_drops_oldest_when_full():
    buf, det = ReplayBuffer(seeds(5), BufferConfig(max_queue=2, beta=0.2)), BoundaryDetector()
    a, b, c = variants("x", 3)
    reasons = [getattr(e, "reason", e.kind) for e in buf.enqueue([seeds(1)[0], a, a])]
    assert reasons == ["duplicate_active", "queued", "duplicate_queued"]
    events = buf.enqueue([b, c])  # queue holds 2: a (oldest) is dropped
    assert [e.kind for e in events] == ["queued", "queued", "dropped"] and events[-1].task_id == a.id
    assert buf.queued_ids() == [b.id, c.id]
    buf.on_epoch_boundary(1, det)  # floor(0.2 * 5) = 1: b enters
    roll(det, 1, {b.id: 0.0})
    buf.on_epoch_boundary(2, det)  # b fails burn-in (0.0 < 0.20)
    assert buf.enqueue([b])[0].reason == "previously_retired"


@pytest.mark.parametrize(
    "first_mean, retired",
    [(0.10, True),   # 0.10 < 0.20 burn-in threshold -> retired
     (0.20, False),  # not below the threshold
     (1.00, False)],  # burn-in only filters the too hard; mastered needs W evaluations
)
def test_burn_in_filter(first_mean, retired):
    buf, det = ReplayBuffer(seeds(5)), BoundaryDetector()
    (v,) = variants("b", 1)
    buf.enqueue([v])
    buf.on_epoch_boundary(1, det)
    roll(det, 1, {v.id: first_mean})
    report = buf.on_epoch_boundary(2, det)
    assert [r.reason for r in report.retired] == (["burn_in"] if retired else [])
    assert (v.id in buf) is not retired


@pytest.mark.parametrize(
    "means, reason",
    [([0.5, 0.97, 0.99], "mastered"),  # last W=2 both > 0.95
     ([0.5, 0.97, 0.90], None),        # 0.90 is not > 0.95
     ([0.5, 0.99, 0.5], None),         # only one of the last two
     ([0.5, 0.10, 0.15], "hard"),      # last W=2 both < 0.20 (burn-in passed at 0.5)
     ([0.5, 0.10, 0.20], None)],       # 0.20 is not < 0.20
)
def test_boundary_drift_eviction_needs_w_consecutive_evaluations(means, reason):
    buf, det = ReplayBuffer(seeds(5)), BoundaryDetector()
    (v,) = variants("d", 1)
    buf.enqueue([v])
    buf.on_epoch_boundary(0, det)
    got = []
    for epoch, m in enumerate(means, start=1):
        roll(det, epoch, {v.id: m})
        got += [(r.reason, r.evaluations) for r in buf.on_epoch_boundary(epoch, det).retired]
    assert got == ([] if reason is None else [(reason, 2 + 1)])  # retired at the 3rd evaluation
    assert v.id not in det if reason else v.id in det  # retired statistics are forgotten


def test_variance_prioritised_pruning():
    cfg = BufferConfig(p_max=2, beta=1.0)
    buf, det = ReplayBuffer(seeds(3), cfg), BoundaryDetector()
    a, b, c, d = variants("p", 4)
    buf.enqueue([a, b])
    buf.on_epoch_boundary(0, det)
    roll(det, 1, {a.id: 0.5, b.id: 0.3})  # phi(a) = 1.0, phi(b) = 4*0.3*0.7 = 0.84
    buf.enqueue([c, d])
    report = buf.on_epoch_boundary(1, det)
    # c, d injected (unevaluated: never pruned) -> 4 generated > P_max 2 -> prune the 2 lowest phi: b, then a
    assert report.injected == [c.id, d.id]
    assert [(r.task_id, r.reason, r.phi) for r in report.retired] == [(b.id, "pruned", phi(0.3)), (a.id, "pruned", 1.0)]
    assert buf.n_generated == 2 and len(buf) == 3 + 2


def test_injection_never_exceeds_p_max_unevaluated():
    buf, det = ReplayBuffer(seeds(10), BufferConfig(p_max=3, beta=1.0)), BoundaryDetector()
    buf.enqueue(variants("u", 6))
    assert len(buf.on_epoch_boundary(1, det).injected) == 3  # room = P_max 3 - 0 unevaluated
    assert buf.on_epoch_boundary(2, det).injected == []  # the 3 have not been evaluated yet


def test_human_seeds_are_the_anchor():
    s = seeds(4)
    for retire_seeds in (False, True):
        buf, det = ReplayBuffer(s, BufferConfig(retire_seeds=retire_seeds)), BoundaryDetector()
        for epoch in (1, 2):  # seed 0 mastered twice, seed 1 hard twice, seed 2 at 0.0 (no burn-in for seeds)
            roll(det, epoch, {s[0].id: 1.0, s[1].id: 0.0, s[2].id: 0.0, s[3].id: 0.5})
            report = buf.on_epoch_boundary(epoch, det)
        kept = {t.id for t in buf.active_tasks()}
        if retire_seeds:  # only mastered seeds may retire; hard seeds stay (they may come into reach)
            assert kept == {s[1].id, s[2].id, s[3].id}
            assert [(r.task_id, r.reason, r.seed) for r in report.retired] == [(s[0].id, "mastered", True)]
        else:
            assert kept == {t.id for t in s}


def test_no_retirement_mode_keeps_everything_and_stops_at_p_max():
    buf, det = ReplayBuffer(seeds(10), BufferConfig(no_retirement=True, p_max=3, beta=1.0)), BoundaryDetector()
    vs = variants("n", 5)
    buf.enqueue(vs)
    buf.on_epoch_boundary(1, det)
    for epoch in (2, 3):
        roll(det, epoch, {v.id: 0.0 for v in vs[:3]})  # would fail burn-in / be evicted as hard
        report = buf.on_epoch_boundary(epoch, det)
        assert report.retired == [] and report.injected == []
    assert buf.n_generated == 3 and buf.queued_ids() == [v.id for v in vs[3:]]


def test_report_metrics_names():
    buf, det = ReplayBuffer(seeds(5)), BoundaryDetector()
    m = buf.on_epoch_boundary(1, det).metrics()
    assert set(m) == {"rods/injected", "rods/pool_size", "rods/pool_seeds", "rods/pool_generated", "rods/queue",
                      "rods/kept_by_floor"} | {f"rods/retired/{r}" for r in RETIRE_REASONS}
    assert m["rods/pool_size"] == 5


@pytest.mark.parametrize("n_seeds, beta, expected", [(1, 0.2, 1), (4, 0.2, 1), (4, 0.5, 2), (10, 0.2, 2), (4, 0.0, 0)])
def test_small_pools_still_inject_at_least_one(n_seeds, beta, expected):
    buf, det = ReplayBuffer(seeds(n_seeds), BufferConfig(beta=beta)), BoundaryDetector()
    buf.enqueue(variants("s", 3))
    assert len(buf.on_epoch_boundary(1, det).injected) == expected  # max(1, floor(beta * pool)); beta 0 = off


def test_retirement_never_empties_the_pool_and_keeps_the_best_phi():
    s = seeds(2)
    buf, det = ReplayBuffer(s, BufferConfig(retire_seeds=True, retire_mastered=0.9)), BoundaryDetector()
    for epoch in (1, 2):  # both seeds mastered twice: both due to retire; the pool keeps one
        roll(det, epoch, {s[0].id: 1.0, s[1].id: 0.95})
        report = buf.on_epoch_boundary(epoch, det)
    assert [(r.task_id, r.reason) for r in report.retired] == [(s[0].id, "mastered")]  # phi(1.0) = 0 goes first
    assert report.kept == [s[1].id] and buf.active_ids() == [s[1].id]
    roll(det, 3, {s[1].id: 1.0})
    assert buf.on_epoch_boundary(3, det).kept == [s[1].id] and len(buf) == 1  # still the last one: kept again


def test_min_pool_size_spares_burn_in_candidates():
    buf, det = ReplayBuffer(seeds(1), BufferConfig(beta=1.0, min_pool_size=3)), BoundaryDetector()
    vs = variants("f", 3)
    buf.enqueue(vs)
    buf.on_epoch_boundary(1, det)  # pool 1 -> 1 injected (beta 1.0 * 1)
    buf.on_epoch_boundary(2, det)  # pool 2 -> 2 injected: pool 4
    roll(det, 3, {vs[0].id: 0.0, vs[1].id: 0.1, vs[2].id: 0.15})  # all three fail burn-in
    report = buf.on_epoch_boundary(3, det)
    assert [r.task_id for r in report.retired] == [vs[0].id]  # 4 -> 3: only one may leave, the lowest phi
    assert sorted(report.kept) == sorted([vs[1].id, vs[2].id]) and len(buf) == 3


def test_pruning_never_removes_the_last_task():
    buf, det = ReplayBuffer([], BufferConfig(p_max=1)), BoundaryDetector()
    (v,) = variants("z", 1)
    buf.enqueue([v])
    assert buf.on_epoch_boundary(1, det).injected == [v.id]  # an empty pool still takes one
    roll(det, 1, {v.id: 0.5})
    small = ReplayBuffer([], BufferConfig(p_max=0))  # resumed with a smaller P_max: the cap wins, but not to zero
    small.load_state_dict(buf.state_dict())
    assert small.on_epoch_boundary(2, det).retired == [] and small.active_ids() == [v.id]


def test_load_keeps_the_current_config_and_warns(caplog):
    buf, det = ReplayBuffer(seeds(5), BufferConfig(p_max=8, beta=0.5)), BoundaryDetector()
    buf.enqueue(variants("c", 4))
    buf.on_epoch_boundary(1, det)
    state = json.loads(json.dumps(buf.state_dict()))
    other = ReplayBuffer([], BufferConfig(p_max=3, beta=0.2))
    with caplog.at_level("WARNING", logger="trainer.buffer"):
        changes = other.load_state_dict(state)
    assert changes == {"beta": (0.5, 0.2), "p_max": (8, 3)}
    assert "beta 0.5 -> 0.2" in caplog.text and "p_max 8 -> 3" in caplog.text
    assert other.config == BufferConfig(p_max=3, beta=0.2)  # the current run's settings win
    assert {k: v for k, v in other.state_dict().items() if k != "config"} == {
        k: v for k, v in buf.state_dict().items() if k != "config"}  # state restored exactly
    clone = ReplayBuffer([])
    assert clone.load_state_dict(state, restore_config=True) == {} and clone.state_dict() == buf.state_dict()


def test_drift_window_must_fit_detector_history():
    from trainer.detection import DetectorConfig

    with pytest.raises(ValueError, match="history_size"):
        ReplayBuffer(seeds(1), BufferConfig(drift_window=3)).on_epoch_boundary(
            1, BoundaryDetector(config=DetectorConfig(history_size=2)))


# --------------------------------------------------------------------------- properties
SCRIPT = st.lists(
    st.tuples(st.integers(0, 6), st.integers(0, 2**32 - 1)),  # (new variants this epoch, reward seed)
    min_size=1, max_size=6,
)
CONFIG = st.builds(
    BufferConfig,
    beta=st.sampled_from([0.0, 0.2, 0.5, 1.0]),
    p_max=st.integers(0, 6),
    drift_window=st.integers(1, 3),
    retire_seeds=st.booleans(),
    no_retirement=st.booleans(),
    max_queue=st.integers(0, 20),
    min_pool_size=st.integers(1, 7),
)


class Run:
    """Replays one script: each epoch rolls out the pool, queues new variants, then hits a boundary."""

    def __init__(self, cfg: BufferConfig, n_seeds: int = 5, reward_choices: tuple[float, ...] = (
            0.0, 0.1, 0.3, 0.5, 0.8, 0.9, 1.0)):
        self.buf, self.det = ReplayBuffer(seeds(n_seeds), cfg), BoundaryDetector()
        self.n_seeds = n_seeds
        self.counter = 0
        self.reward_choices = reward_choices

    def epoch(self, epoch: int, n_new: int, reward_seed: int):
        rng = random.Random(reward_seed)
        pool_ids = self.buf.active_ids()
        means = {t: rng.choice(self.reward_choices) for t in pool_ids}
        ids = [t for t in pool_ids for _ in range(K)]
        self.det.record(epoch, epoch, ids, [means[t] for t in ids], K)
        new = variants(f"e{epoch}_", n_new)
        before = self.buf.active_ids()
        self.buf.enqueue(new, epoch=epoch)
        assert self.buf.active_ids() == before  # queued items never train before a boundary
        assert not {t.id for t in new} & set(self.buf.active_ids())
        return self.buf.on_epoch_boundary(epoch + 1, self.det)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cfg=CONFIG, script=SCRIPT)
def test_invariants_over_random_runs(cfg, script):
    run = Run(cfg)
    seen_injected = set()
    for epoch, (n_new, rs) in enumerate(script):
        queued_before = set(run.buf.queued_ids())
        pool_before = len(run.buf)
        report = run.epoch(epoch, n_new, rs)
        # the pool never exceeds seeds + P_max after pruning
        assert run.buf.n_generated <= cfg.p_max and len(run.buf) <= run.n_seeds + cfg.p_max
        # injection: only from the queue, at most beta of the pool trained on (at least one if beta > 0)
        assert len(report.injected) <= (max(1, int(cfg.beta * pool_before)) if cfg.beta > 0 else 0)
        new_ids = {f"multi_turn_base_0__rods_e{epoch}_{i}" for i in range(n_new)}
        assert set(report.injected) <= queued_before | new_ids
        seen_injected |= set(report.injected)
        # every retirement has a reason; seeds only retire as mastered and only if allowed
        for r in report.retired:
            assert isinstance(r, Retired) and r.reason in RETIRE_REASONS
            if r.seed:
                assert cfg.retire_seeds and r.reason == "mastered"
            assert r.task_id not in run.buf
        if cfg.no_retirement:
            assert report.retired == []
    retired_events = [e for e in run.buf.events if e.kind == "retired"]
    assert all(e.reason in RETIRE_REASONS for e in retired_events)
    assert {e.task_id for e in run.buf.events if isinstance(e, Injected)} == seen_injected
    assert run.buf.active_ids()[: len(run.buf.active_ids()) - run.buf.n_generated] == [
        t for t in (s.id for s in seeds(5)) if t in run.buf]  # deterministic order: seeds first


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cfg=CONFIG, script=SCRIPT, cut=st.integers(0, 5))
def test_save_load_round_trips_and_continues_identically(cfg, script, cut):
    cut = min(cut, len(script) - 1)
    run = Run(cfg)
    for epoch, (n, rs) in enumerate(script[:cut]):
        run.epoch(epoch, n, rs)
    resumed = Run(cfg)
    resumed.buf, resumed.det = ReplayBuffer([], cfg), BoundaryDetector()
    with tempfile.TemporaryDirectory() as folder:  # one per example, removed at once
        path = Path(folder) / "curriculum.json"
        run.buf.save(path, detector=run.det)
        resumed.buf.load(path, detector=resumed.det)
    assert resumed.buf.state_dict() == run.buf.state_dict()
    assert resumed.det.state_dict() == run.det.state_dict()
    assert [t.model_dump() for t in resumed.buf.active_tasks()] == [t.model_dump() for t in run.buf.active_tasks()]

    for epoch, (n, rs) in enumerate(script[cut:], start=cut):  # identical future behaviour
        a, b = run.epoch(epoch, n, rs), resumed.epoch(epoch, n, rs)
        assert a == b
    assert resumed.buf.state_dict() == run.buf.state_dict()
    assert resumed.det.state_dict() == run.det.state_dict()


def test_state_dict_is_json_and_restores_tasks(tmp_path):
    buf, det = ReplayBuffer(seeds(3)), BoundaryDetector()
    buf.enqueue(variants("j", 2))
    buf.on_epoch_boundary(1, det)
    state = json.loads(json.dumps(buf.state_dict()))
    other = ReplayBuffer([])
    other.load_state_dict(state)
    assert all(isinstance(t, Task) for t in other.active_tasks() + list(other._queue.values()))
    assert other.active_tasks() == buf.active_tasks() and other.queued_ids() == buf.queued_ids()
    with pytest.raises(ValueError, match="no detector state"):
        buf.save(tmp_path / "b.json")
        other.load(tmp_path / "b.json", detector=BoundaryDetector())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cfg=CONFIG, script=SCRIPT, n_seeds=st.integers(1, 6),
       rewards=st.sampled_from([(0.0, 1.0), (1.0,), (0.0,), (0.0, 0.1, 0.5, 0.99, 1.0)]))
def test_pool_never_empties_and_small_pools_inject(cfg, script, n_seeds, rewards):
    """Even when every task is due to retire every epoch (retire_seeds, all mastered or all hard)."""
    run = Run(cfg, n_seeds=n_seeds, reward_choices=rewards)
    for epoch, (n_new, rs) in enumerate(script):
        before = len(run.buf)
        pool_ids = run.buf.active_ids()
        rng = random.Random(rs)
        means = {t: rng.choice(rewards) for t in pool_ids}
        ids = [t for t in pool_ids for _ in range(K)]
        run.det.record(epoch, epoch, ids, [means[t] for t in ids], K)
        run.buf.enqueue(variants(f"e{epoch}_", n_new), epoch=epoch)
        queue = len(run.buf.queued_ids())
        unevaluated = sum(1 for g in run.buf._gen if run.det.evaluations(g) == 0)
        room = cfg.p_max - (run.buf.n_generated if cfg.no_retirement else unevaluated)
        report = run.buf.on_epoch_boundary(epoch + 1, run.det)
        assert len(run.buf) >= 1 and report.pool_size == len(run.buf)  # the active pool never empties
        if cfg.beta > 0 and queue and room > 0:  # injection >= 1 when the queue is non-empty and P_max has room
            assert len(report.injected) >= 1
        pruned = sum(r.reason == "pruned" for r in report.retired)
        # burn-in and drift never take the pool below min_pool_size (only the P_max cap may)
        assert len(run.buf) + pruned >= min(cfg.min_pool_size, before + len(report.injected))
        assert not set(report.kept) & {r.task_id for r in report.retired} and set(report.kept) <= set(run.buf.active_ids())


# --------------------------------------------------------------------------- pruning order (observed variance)
def _pruned_after(groups: dict[str, list[float]], p_max: int, prune_by: str = "variance") -> list[str]:
    """Inject the variants, record one group of K rewards each, then prune down to ``p_max``."""
    vs = [_template().model_copy(update={"id": tid}) for tid in groups]
    cfg = BufferConfig(p_max=len(vs), beta=1.0, burn_in_threshold=0.0, prune_by=prune_by)
    buf, det = ReplayBuffer(seeds(10), cfg), BoundaryDetector()
    buf.enqueue(vs)
    assert buf.on_epoch_boundary(0, det).injected == list(groups)
    ids = [t for t in groups for _ in range(K)]
    det.record(1, 1, ids, [r for t in groups for r in groups[t]], K)
    buf.config = cfg.model_copy(update={"p_max": p_max})  # a smaller P_max (as on resume): prune now
    return [r.task_id for r in buf.on_epoch_boundary(1, det).retired if r.reason == "pruned"]


def test_pruning_ranks_by_observed_variance_not_the_mean():
    flat = "multi_turn_base_0__rods_flat"  # all K rollouts 0.5: phi = 1 (the top by the mean) but zero variance
    mixed = "multi_turn_base_0__rods_mixed"  # 0/1 rollouts: phi = 1 and the largest variance
    skewed = "multi_turn_base_0__rods_skewed"  # mean 0.25: phi 0.75, variance 0.1875
    groups = {flat: [0.5] * K, mixed: [0.0, 1.0, 0.0, 1.0], skewed: [0.0, 0.0, 0.0, 1.0]}
    assert _pruned_after(groups, 1) == [flat, skewed]  # the no-gradient task goes first
    assert _pruned_after(groups, 1, prune_by="phi") == [skewed, flat]  # the paper's phi order: variance breaks the tie


REWARD = st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups=st.lists(st.lists(REWARD, min_size=K, max_size=K), min_size=2, max_size=8), data=st.data())
def test_pruning_keeps_the_highest_observed_variance(groups, data):
    import statistics

    by_id = {f"multi_turn_base_0__rods_v{i}": g for i, g in enumerate(groups)}
    p_max = data.draw(st.integers(0, len(groups) - 1))
    pruned = _pruned_after(by_id, p_max)
    assert len(pruned) == len(groups) - p_max
    kept = set(by_id) - set(pruned)

    def key(tid):
        g = by_id[tid]
        return statistics.pvariance(g), phi(statistics.fmean(g))

    for out in pruned:  # nothing pruned ranks above anything kept: (variance, then phi)
        for stay in kept:
            assert key(out) <= tuple(x + 1e-12 for x in key(stay))


# --------------------------------------------------------------------------- the boundary reads one snapshot
def test_boundary_decides_from_the_snapshot_alone_and_the_caller_forgets():
    """A snapshot is a value: what the detector records after it cannot change the boundary's decisions,
    and with a snapshot the buffer leaves the detector alone (the caller forgets the retired ids)."""
    buf, det = ReplayBuffer(seeds(3), BufferConfig(beta=1.0, burn_in_threshold=0.5)), BoundaryDetector()
    low, high = variants("s", 2)
    buf.enqueue([low, high], epoch=0)
    buf.on_epoch_boundary(0, det.snapshot(buf.active_ids()))
    roll(det, 1, {low.id: 0.0, high.id: 0.9})
    snap = det.snapshot(buf.active_ids())
    roll(det, 2, {low.id: 1.0, high.id: 0.0})  # after the snapshot: must not matter
    rep = buf.on_epoch_boundary(1, snap)
    assert [r.task_id for r in rep.retired] == [low.id] and rep.retired[0].reason == "burn_in"
    assert rep.retired[0].mean == 0.0 and rep.retired[0].evaluations == 1
    assert low.id in det  # the buffer did not touch the detector
    det.forget(r.task_id for r in rep.retired)
    assert low.id not in det and high.id in buf


def test_snapshot_holds_history_variance_and_unscorable_counts():
    det = BoundaryDetector()
    det.record(0, 0, ["a"] * 4, [0.0, 1.0, 0.0, 1.0], 4)
    det.record(1, 1, ["a"] * 4, [1.0] * 4, 4)
    det.record_unscorable(["b"])
    snap = det.snapshot(["a", "b", "never"])
    assert snap.latest_means("a", 5) == [0.5, 1.0] and snap.latest_var("a") == 0.0 and snap.evaluations("a") == 2
    assert snap.unscorable("b") == 1 and snap.evaluations("b") == 0 and snap.latest_mean("b") is None
    assert snap.evaluations("never") == 0 and "never" not in snap.tasks
    assert snap.history_size == det.config.history_size and snap.epoch == 1
