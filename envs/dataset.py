"""The 800 BFCL v3 multi-turn tasks and the scenario-level train/test split.

The four categories share scenarios by index (``multi_turn_base_7`` and
``multi_turn_miss_func_7`` are one scenario), so the split is over the 200 scenario indices and
every category of an index lands on the same side. The split is persisted in
``envs/split_manifest.json`` so it never changes silently; :func:`make_split` regenerates it.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Literal

from envs.bfcl_data import CATEGORIES
from envs.task import InputError, Task, category_tasks, dedupe_tasks, read_tasks

MANIFEST = Path(__file__).with_name("split_manifest.json")
Split = Literal["train", "test", "all"]


def load_bfcl_tasks(categories: Iterable[str] = CATEGORIES) -> list[Task]:
    """All BFCL multi-turn tasks of the given categories (copies; safe to mutate)."""
    return [t.model_copy(deep=True) for c in categories for t in category_tasks(c)]


def make_split(seed: int = 0, n_train: int = 100) -> dict:
    """Split the 200 scenario indices in two, stratified by involved-class set.

    Scenarios are grouped by their (sorted) involved classes; each group is shuffled and dealt
    alternately, then the sides are balanced to exactly ``n_train`` / the rest.
    """
    base = category_tasks("base")
    groups: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for t in base:
        groups[tuple(sorted(t.involved_classes))].append(t.scenario)
    rng = random.Random(seed)
    train: list[int] = []
    test: list[int] = []
    offset = 0  # odd-sized groups alternate which side gets their extra scenario
    for key in sorted(groups):
        idx = sorted(groups[key])
        rng.shuffle(idx)
        for i, s in enumerate(idx):
            (train if (i + offset) % 2 == 0 else test).append(s)
        offset += len(idx)
    while len(train) > n_train:
        test.append(train.pop())
    while len(train) < n_train:
        train.append(test.pop())
    return {"seed": seed, "stratified_by": "involved_classes", "train": sorted(train), "test": sorted(test)}


@lru_cache(maxsize=1)
def split_manifest() -> dict:
    return json.loads(MANIFEST.read_text())


def split_scenarios(split: Split) -> set[int]:
    manifest = split_manifest()
    if split == "all":
        return set(manifest["train"]) | set(manifest["test"])
    return set(manifest[split])


def load_split(split: Split = "all", categories: Iterable[str] = CATEGORIES) -> list[Task]:
    keep = split_scenarios(split)
    return [t for t in load_bfcl_tasks(categories) if t.scenario in keep]


def load_tasks(split: Split = "all", categories: Iterable[str] | None = None, tasks_file: str | None = None,
               ids: Iterable[str] | None = None) -> list[Task]:
    """Tasks from a JSONL file, or from the BFCL split, optionally filtered by category and id."""
    cats = tuple(categories) if categories else CATEGORIES
    bad = [c for c in cats if c not in CATEGORIES]
    if bad:
        raise InputError(f"unknown categories {bad}; choose from {list(CATEGORIES)}")
    tasks = dedupe_tasks(read_tasks(tasks_file), str(tasks_file)) if tasks_file else load_split(split, cats)
    if tasks_file:
        tasks = [t for t in tasks if t.category in cats]
    if ids is not None:
        wanted = list(dict.fromkeys(ids))  # --id X --id X runs X once
        by_id = {t.id: t for t in tasks}
        unknown = [i for i in wanted if i not in by_id]
        if unknown:
            raise InputError(f"unknown task id(s): {', '.join(unknown[:5])}")
        tasks = [by_id[i] for i in wanted]
    return tasks
