"""Boundary detection: grouping, per-epoch statistics, zones, seed selection under quotas."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainer.detection import (
    BoundaryDetector,
    DetectorConfig,
    GroupLayoutError,
    even_quotas,
    phi,
)

CATS = ("base", "miss_func", "miss_param", "long_context")
REWARD = st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0, 0.1, 0.9, 0.2, 0.85])  # includes both thresholds


def tid(cat: str, i: int) -> str:
    return f"multi_turn_{cat}_{i}"


def record_means(det: BoundaryDetector, means: dict[str, float], epoch: int = 0, step: int = 1, k: int = 4) -> None:
    """Record one group per task whose K rewards average to the given mean (two values around it)."""
    ids, rewards = [], []
    for t, m in means.items():
        ids += [t] * k
        rewards += [m] * k
    det.record(step, epoch, ids, rewards, k)


# --------------------------------------------------------------------------- recording
def test_record_groups_of_k_stats_and_informative_fraction():
    det = BoundaryDetector()
    a, b = tid("base", 1), tid("miss_func", 2)
    batch = det.record(3, 0, [a] * 4 + [b] * 4, [1, 0, 1, 0, 0, 0, 0, 0], k=4)
    # a: mean (1+0+1+0)/4 = 0.5, population var = 0.25; b: all zero -> var 0, not informative
    assert [(g.task_id, g.mean, g.var, g.informative) for g in batch.groups] == [(a, 0.5, 0.25, True), (b, 0.0, 0.0, False)]
    assert batch.informative_fraction == 0.5
    assert det.stats(a).category == "base" and det.stats(b).category == "miss_func"
    part = det.partition()
    assert (part.groups, part.informative_groups, part.informative_fraction) == (2, 1, 0.5)


@pytest.mark.parametrize(
    "ids, rewards, k, match",
    [
        (["a", "a", "b", "a"], [0, 1, 0, 1], 2, "row 2 is 'b' and row 3 is 'a'"),  # second group mixes ids
        (["a", "a", "a"], [0, 1, 0], 2, "not a multiple of k=2"),
        (["a", "a"], [0, 1, 0], 1, "2 task ids but 3 rewards"),
        (["a"], [0], 0, "k must be >= 1"),
    ],
)
def test_record_rejects_bad_layout_and_records_nothing(ids, rewards, k, match):
    det = BoundaryDetector()
    with pytest.raises(GroupLayoutError, match=match):
        det.record(1, 0, ids, rewards, k)
    assert len(det) == 0 and det.latest_epoch is None


def test_non_finite_reward_is_an_error():
    with pytest.raises(ValueError, match="non-finite"):
        BoundaryDetector().record(1, 0, ["a", "a"], [0.0, math.nan], 2)


@given(st.lists(st.lists(REWARD, min_size=3, max_size=3), min_size=1, max_size=5))
def test_groups_of_one_epoch_pool_like_all_rollouts_together(groups):
    det = BoundaryDetector()
    for step, g in enumerate(groups):  # one task, several groups (steps) in one epoch
        det.record(step, 0, ["t"] * 3, g, 3)
    flat = [r for g in groups for r in g]
    mean = sum(flat) / len(flat)
    obs = det.latest("t")
    assert obs.n == len(flat) and obs.step == len(groups) - 1
    assert obs.mean == pytest.approx(mean, abs=1e-12)
    assert obs.var == pytest.approx(sum((r - mean) ** 2 for r in flat) / len(flat), abs=1e-12)
    assert len(det.stats("t").history) == 1


def test_latest_epoch_decides_the_zone_and_history_is_bounded():
    det = BoundaryDetector(config=DetectorConfig(history_size=3))
    t = tid("base", 0)
    for epoch, m in enumerate([0.0, 0.5, 1.0, 1.0, 0.5]):
        record_means(det, {t: m}, epoch=epoch)
    # latest epoch (4) has mean 0.5 -> boundary, although epochs 2 and 3 were mastered
    assert det.partition().boundary == [t]
    assert [o.epoch for o in det.stats(t).history] == [2, 3, 4]  # only the last 3 epochs kept
    assert det.latest_means(t, 2) == [1.0, 0.5]


# --------------------------------------------------------------------------- partition
@given(st.dictionaries(st.integers(0, 50), st.lists(REWARD, min_size=2, max_size=2), max_size=30),
       st.sets(st.integers(0, 60), max_size=10))
def test_partition_is_consistent_with_thresholds(per_task, extra):
    det = BoundaryDetector()
    ids = [tid("base", i) for i in per_task]
    if ids:
        det.record(1, 0, [t for t in ids for _ in range(2)], [r for rs in per_task.values() for r in rs], 2)
    asked = ids + [tid("base", 1000 + i) for i in extra]  # never recorded -> unseen
    part = det.partition(asked)
    zones = {"mastered": part.mastered, "boundary": part.boundary, "hard": part.hard, "unseen": part.unseen}
    assert sorted(sum(zones.values(), [])) == sorted(asked)  # a partition: every id once
    for t in part.mastered:
        assert det.latest(t).mean > 0.85
    for t in part.boundary:
        assert 0.20 <= det.latest(t).mean <= 0.85
    for t in part.hard:
        assert det.latest(t).mean < 0.20
    assert set(part.unseen) == {tid("base", 1000 + i) for i in extra}
    assert sum(part.boundary_by_type.values()) == len(part.boundary)


@pytest.mark.parametrize(
    "mean, zone",
    [(0.0, "hard"), (0.19, "hard"), (0.20, "boundary"), (0.5, "boundary"), (0.85, "boundary"), (0.86, "mastered")],
)
def test_zone_edges_are_inclusive_for_boundary(mean, zone):
    det = BoundaryDetector()
    record_means(det, {"t": mean})
    assert getattr(det.partition(), zone) == ["t"]


# --------------------------------------------------------------------------- seeds
def test_seed_ranking_nearest_half_then_variance_then_id():
    det = BoundaryDetector()
    a, b, c, d, e = (tid("base", i) for i in range(5))
    det.record(1, 0, [a] * 4 + [b] * 4 + [c] * 4 + [d] * 4 + [e] * 4, [
        0.5, 0.5, 0.5, 0.5,      # a: mean 0.5, var 0         |m-.5| = 0
        0, 1, 0, 1,              # b: mean 0.5, var 0.25      |m-.5| = 0, higher variance -> before a
        0.4, 0.4, 0.4, 0.4,      # c: mean 0.4                |m-.5| = 0.1
        0.6, 0.6, 0.6, 0.6,      # d: mean 0.6                |m-.5| = 0.1, same var as c -> id order: c < d
        0.9, 0.9, 0.9, 0.9,      # e: mastered, never a seed
    ], 4)
    sel = det.select_seeds(4, {"base": 4})
    assert sel.task_ids == [b, a, c, d]
    assert sel.seeds[0].phi == phi(0.5) == 1.0
    assert sel.reason is None and sel.per_type == {"base": 4} and sel.boundary == 4


def test_even_quotas_split_and_no_redistribution_by_default():
    assert even_quotas(6) == {"base": 2, "miss_func": 2, "miss_param": 1, "long_context": 1}
    det = BoundaryDetector()
    record_means(det, {tid("base", i): 0.5 for i in range(5)} | {tid("miss_param", 1): 0.3})
    sel = det.select_seeds(6)  # quotas 2/2/1/1: base gives 2, miss_func none, miss_param 1
    assert sel.per_type == {"base": 2, "miss_param": 1} and len(sel.seeds) == 3
    assert "miss_func" in sel.reason
    sel = det.select_seeds(6, redistribute=True, epoch=1)  # empty slots filled from other base tasks
    assert sel.per_type == {"base": 5, "miss_param": 1} and len(sel.seeds) == 6 and sel.reason is None


def test_quotas_larger_than_n_is_an_error():
    with pytest.raises(ValueError, match="quotas sum to 3 > n=2"):
        BoundaryDetector().select_seeds(2, {"base": 3})


@settings(max_examples=60)
@given(
    means=st.dictionaries(st.tuples(st.sampled_from(CATS), st.integers(0, 40)),
                          st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.5, 0.55, 0.7, 0.85, 0.9, 1.0]), max_size=40),
    quotas=st.dictionaries(st.sampled_from(CATS), st.integers(0, 6)),
    slack=st.integers(0, 5),
    redistribute=st.booleans(),
)
def test_quotas_hold(means, quotas, slack, redistribute):
    det = BoundaryDetector()
    if means:
        record_means(det, {tid(c, i): m for (c, i), m in means.items()})
    n = sum(quotas.values()) + slack
    sel = det.select_seeds(n, quotas, redistribute=redistribute)
    avail = {c: sum(1 for (cc, _), m in means.items() if cc == c and 0.2 <= m <= 0.85) for c in CATS}
    got = {c: sum(1 for s in sel.seeds if s.type == c) for c in CATS}
    assert len(set(sel.task_ids)) == len(sel.seeds) <= n
    for s in sel.seeds:
        assert 0.2 <= s.mean <= 0.85  # only boundary tasks
    for c in CATS:
        if redistribute:
            assert got[c] >= min(quotas.get(c, 0), avail[c])
        else:
            assert got[c] == min(quotas.get(c, 0), avail[c])  # exactly the quota, or all there is
    if redistribute:
        assert len(sel.seeds) == min(n, sum(avail.values()))
    # within a type, every chosen task ranks no worse than every task left out
    for c in CATS:
        chosen = [abs(s.mean - 0.5) for s in sel.seeds if s.type == c]
        left = [abs(m - 0.5) for (cc, i), m in means.items()
                if cc == c and 0.2 <= m <= 0.85 and tid(cc, i) not in sel.task_ids]
        if chosen and left and not redistribute:
            assert max(chosen) <= min(left)
    assert (sel.reason is None) == (len(sel.seeds) == n)


def test_cooldown_skips_recent_seeds_and_is_saved():
    det = BoundaryDetector()
    ids = [tid("base", i) for i in range(3)]
    record_means(det, dict.fromkeys(ids, 0.5), epoch=0)
    first = det.select_seeds(2, {"base": 2}, cooldown=1, epoch=0).task_ids
    assert first == ids[:2]
    second = det.select_seeds(2, {"base": 2}, cooldown=1, epoch=1)  # ids 0, 1 cool down for one epoch
    assert second.task_ids == ids[2:] and second.cooling == 2 and "too few" in second.reason
    restored = BoundaryDetector()
    restored.load_state_dict(json.loads(json.dumps(det.state_dict())))
    third = restored.select_seeds(2, {"base": 2}, cooldown=1, epoch=2)  # 0, 1 eligible again, 2 cooling
    assert third.task_ids == ids[:2] and third.cooling == 1


def test_all_cooling_gives_empty_selection_with_reason():
    det = BoundaryDetector()
    record_means(det, {tid("base", 0): 0.5})
    det.select_seeds(1, {"base": 1}, cooldown=3, epoch=0)
    sel = det.select_seeds(1, {"base": 1}, cooldown=3, epoch=2)
    assert sel.seeds == [] and "cooldown" in sel.reason


@pytest.mark.parametrize("means", [{}, {tid("base", 0): 0.0, tid("base", 1): 1.0}])
def test_no_boundary_tasks_is_an_empty_selection_not_a_crash(means):
    det = BoundaryDetector()
    if means:
        record_means(det, means)
    sel = det.select_seeds(8)
    assert sel.seeds == [] and sel.reason.startswith("no boundary tasks")
    part = det.partition()
    assert part.boundary == [] and part.metrics()["rods/boundary"] == 0.0
    json.dumps(sel.model_dump())  # loggable


def test_select_by_involved_classes():
    classes = {"a": ["TwitterAPI", "GorillaFileSystem"], "b": ["GorillaFileSystem", "TwitterAPI"], "c": ["MathAPI"]}
    det = BoundaryDetector(category=lambda _: "base", classes=classes)
    record_means(det, {"a": 0.5, "b": 0.4, "c": 0.6})
    sel = det.select_seeds(2, {"GorillaFileSystem+TwitterAPI": 1, "MathAPI": 1}, by="classes")
    assert sorted(sel.task_ids) == ["a", "c"]  # a beats b (|0.5-.5| < |0.4-.5|); class sets are order-free
    sel = det.select_seeds(4, by="classes", epoch=1)  # default quotas: even over the class sets present
    assert sel.quotas == {"GorillaFileSystem+TwitterAPI": 2, "MathAPI": 2}


def test_category_mapping_and_unknown():
    det = BoundaryDetector(category={"x": "miss_param"})
    record_means(det, {"x": 0.5, "y": 0.5})
    assert det.stats("x").category == "miss_param" and det.stats("y").category == "unknown"


# --------------------------------------------------------------------------- state
@given(st.lists(st.tuples(st.integers(0, 5), st.lists(REWARD, min_size=2, max_size=2)), min_size=1, max_size=20))
def test_state_round_trips_exactly(rows):
    det = BoundaryDetector(config=DetectorConfig(history_size=2))
    for epoch, (i, rs) in enumerate(sorted(rows, key=lambda r: r[0])):
        det.record(epoch, epoch // 3, [tid("base", i)] * 2, rs, 2)
    det.select_seeds(2, cooldown=1)
    state = det.state_dict()
    other = BoundaryDetector()
    other.load_state_dict(json.loads(json.dumps(state)), restore_config=True)  # an exact clone
    assert other.state_dict() == state and other.config.history_size == 2
    assert other.partition() == det.partition()
    assert other.select_seeds(4, cooldown=1) == det.select_seeds(4, cooldown=1)


def test_save_load_file(tmp_path):
    det = BoundaryDetector()
    record_means(det, {tid("base", 0): 0.5})
    det.save(tmp_path / "det.json")
    other = BoundaryDetector()
    other.load(tmp_path / "det.json")
    assert other.state_dict() == det.state_dict()


def test_forget_drops_statistics():
    det = BoundaryDetector()
    record_means(det, {"a": 0.5, "b": 0.5})
    det.forget(["a"])
    assert "a" not in det and det.partition().boundary == ["b"]


def test_epochs_only_move_forward():
    det = BoundaryDetector()
    record_means(det, {"a": 0.5}, epoch=2)
    with pytest.raises(ValueError, match="epoch 1 recorded after epoch 2"):
        record_means(det, {"a": 0.5}, epoch=1)


def test_batch_record_columns_for_logging():
    batch = BoundaryDetector().record(7, 0, ["a", "a", "b", "b"], [0.0, 1.0, 1.0, 1.0], 2)
    assert (batch.task_ids, batch.means, batch.variances, batch.informative) == (
        ["a", "b"], [0.5, 1.0], [0.25, 0.0], [True, False])
    json.dumps(batch.model_dump())


# --------------------------------------------------------------------------- classes inside category quotas
def test_balance_classes_spreads_a_category_quota_over_class_groups():
    fs, tw, math_ = ["GorillaFileSystem"], ["TwitterAPI"], ["MathAPI"]
    classes = {tid("base", i): fs for i in range(4)} | {tid("base", 10): tw, tid("base", 11): tw,
                                                        tid("base", 20): math_, tid("miss_func", 0): fs}
    det = BoundaryDetector(classes=classes)
    record_means(det, {tid("base", 0): 0.5, tid("base", 1): 0.5, tid("base", 2): 0.5, tid("base", 3): 0.45,
                       tid("base", 10): 0.3, tid("base", 11): 0.25, tid("base", 20): 0.8, tid("miss_func", 0): 0.5})
    plain = det.select_seeds(4, {"base": 4}, epoch=0)  # rank only: the file-system tasks crowd out the rest
    assert plain.task_ids == [tid("base", i) for i in range(4)]
    sel = det.select_seeds(5, {"base": 4, "miss_func": 1}, balance_classes=True, epoch=1)
    base = [s for s in sel.seeds if s.type == "base"]
    # round 1: best of each group (fs 0, tw 10, math 20); round 2: the best remaining of fs and tw -> fs 1
    assert sorted(s.task_id for s in base) == sorted([tid("base", 0), tid("base", 1), tid("base", 10), tid("base", 20)])
    assert {s.group for s in base} == {"GorillaFileSystem", "TwitterAPI", "MathAPI"}
    assert sel.per_type == {"base": 4, "miss_func": 1} and sel.balance_classes and sel.reason is None


def test_class_selection_needs_a_classes_lookup():
    det = BoundaryDetector()
    record_means(det, {tid("base", 0): 0.5})
    for kwargs in ({"by": "classes"}, {"balance_classes": True}):
        with pytest.raises(ValueError, match="classes"):
            det.select_seeds(1, **kwargs)
    with pytest.raises(ValueError, match="by='category'"):
        BoundaryDetector(classes={}).select_seeds(1, by="classes", balance_classes=True)


@settings(max_examples=60)
@given(
    tasks=st.dictionaries(st.tuples(st.sampled_from(CATS), st.integers(0, 30)),
                          st.tuples(st.sampled_from(["A", "B", "C", "A+B"]),
                                    st.sampled_from([0.0, 0.2, 0.3, 0.5, 0.6, 0.85, 1.0])), max_size=40),
    quotas=st.dictionaries(st.sampled_from(CATS), st.integers(0, 6)),
)
def test_balanced_quotas_hold_and_groups_stay_even(tasks, quotas):
    classes = {tid(c, i): g.split("+") for (c, i), (g, _) in tasks.items()}
    det = BoundaryDetector(classes=classes)
    if tasks:
        record_means(det, {tid(c, i): m for (c, i), (_, m) in tasks.items()})
    sel = det.select_seeds(sum(quotas.values()), quotas, balance_classes=True)
    for c in CATS:
        eligible = {(g, i) for (cc, i), (g, m) in tasks.items() if cc == c and 0.2 <= m <= 0.85}
        chosen = [s for s in sel.seeds if s.type == c]
        assert len(chosen) == min(quotas.get(c, 0), len(eligible))  # the category quota, or all there is
        got = {g: sum(1 for s in chosen if s.group == g) for g, _ in eligible}
        avail = {g: sum(1 for gg, _ in eligible if gg == g) for g, _ in eligible}
        for g in got:  # two groups differ by more than one only if the smaller one ran out
            for h in got:
                assert got[g] <= got[h] + 1 or got[h] == avail[h]


# --------------------------------------------------------------------------- resume settings
def test_load_keeps_current_thresholds_and_warns(caplog):
    det = BoundaryDetector(config=DetectorConfig(alpha_minus=0.2, history_size=4))
    for epoch in range(4):
        record_means(det, {"a": 0.3, "b": 0.1}, epoch=epoch)
    state = json.loads(json.dumps(det.state_dict()))
    other = BoundaryDetector(config=DetectorConfig(alpha_minus=0.35, history_size=2))
    with caplog.at_level("WARNING", logger="trainer.detection"):
        changes = other.load_state_dict(state)
    assert changes == {"alpha_minus": (0.2, 0.35), "history_size": (4, 2)}
    assert "alpha_minus 0.2 -> 0.35" in caplog.text
    assert other.config.alpha_minus == 0.35 and other.partition().hard == ["a", "b"]  # 0.3 < 0.35 now
    assert other.latest_means("a", 8) == [0.3, 0.3]  # histories trimmed to the current size
    clone = BoundaryDetector()
    assert clone.load_state_dict(state, restore_config=True) == {} and clone.state_dict() == state
