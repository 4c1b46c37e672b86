"""The scenario-level train/test split: sizes, disjointness, persistence, stratification."""

from __future__ import annotations

import json
from collections import Counter
from functools import lru_cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envs.bfcl_data import CATEGORIES
from envs.dataset import MANIFEST, load_bfcl_tasks, load_split, load_tasks, make_split, split_manifest, split_scenarios
from envs.task import InputError


@pytest.fixture(scope="module")
def sides():
    return {s: load_split(s) for s in ("train", "test")}


def test_400_per_side_100_per_category(sides):
    for tasks in sides.values():
        assert len(tasks) == 400
        assert Counter(t.category for t in tasks) == {c: 100 for c in CATEGORIES}
        assert len({t.id for t in tasks}) == 400


def test_no_scenario_on_both_sides(sides):
    train = {t.scenario for t in sides["train"]}
    test = {t.scenario for t in sides["test"]}
    assert not train & test
    assert train | test == set(range(200)) and len(train) == len(test) == 100
    assert split_scenarios("train") == train and split_scenarios("test") == test
    assert split_scenarios("all") == set(range(200))
    for side in sides.values():  # every category of a scenario travels together
        by_scenario = Counter(t.scenario for t in side)
        assert set(by_scenario.values()) == {4}


def test_all_is_the_800_tasks(sides):
    everything = load_split("all")
    assert len(everything) == 800
    assert {t.id for t in everything} == {t.id for s in sides.values() for t in s}


def test_manifest_is_what_make_split_produces():
    """The persisted split is regenerated from its own seed: it cannot drift silently."""
    manifest = json.loads(MANIFEST.read_text())
    assert manifest == split_manifest()
    assert make_split(seed=manifest["seed"]) == manifest


def test_make_split_is_deterministic_and_seeded():
    assert make_split(1) == make_split(1)
    assert make_split(1)["train"] != make_split(2)["train"]


@lru_cache(maxsize=1)
def _base_tasks():
    return load_bfcl_tasks(["base"])


def _imbalance(split: dict) -> tuple[Counter, Counter]:
    """Train-minus-test counts per involved-class set and per class (one base task per scenario)."""
    train = set(split["train"])
    by_set, by_class = Counter(), Counter()
    for t in _base_tasks():
        sign = 1 if t.scenario in train else -1
        by_set[tuple(sorted(t.involved_classes))] += sign
        for c in t.involved_classes:
            by_class[c] += sign
    return by_set, by_class


def test_split_is_stratified_by_involved_classes():
    by_set, by_class = _imbalance(split_manifest())
    assert max(abs(v) for v in by_set.values()) <= 1, sorted(by_set.items(), key=lambda kv: -abs(kv[1]))[:5]
    assert max(abs(v) for v in by_class.values()) <= 4, dict(by_class)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_any_seed_gives_a_balanced_disjoint_split(seed):
    split = make_split(seed)
    assert len(split["train"]) == len(split["test"]) == 100
    assert set(split["train"]).isdisjoint(split["test"])
    by_set, by_class = _imbalance(split)
    assert max(abs(v) for v in by_set.values()) <= 1
    assert max(abs(v) for v in by_class.values()) <= 4


def test_load_tasks_filters_and_reports_bad_input():
    assert {t.category for t in load_tasks("test", ["miss_param"])} == {"miss_param"}
    ids = ["multi_turn_base_3", "multi_turn_long_context_0"]
    assert [t.id for t in load_tasks("all", ids=ids)] == ids
    with pytest.raises(InputError, match="unknown categories"):
        load_tasks("all", ["nope"])
    with pytest.raises(InputError, match="multi_turn_base_999"):
        load_tasks("all", ids=["multi_turn_base_999"])
