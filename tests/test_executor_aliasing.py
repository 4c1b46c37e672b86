"""Two environments built for the same task never share mutable state (no leak between episodes)."""

from __future__ import annotations

import pytest

from envs.dataset import load_bfcl_tasks
from envs.executor import Environment


def _mutable_ids(obj, seen: set[int], depth: int = 0) -> None:
    if isinstance(obj, str | int | float | bool | bytes | type(None)) or id(obj) in seen or depth > 60:
        return
    seen.add(id(obj))
    children = (
        obj.values() if isinstance(obj, dict)
        else obj if isinstance(obj, list | tuple | set | frozenset)
        else vars(obj).values() if hasattr(obj, "__dict__") else ()
    )
    for child in children:
        _mutable_ids(child, seen, depth + 1)


@pytest.mark.parametrize("category", ["base", "long_context"])
def test_fresh_environments_share_no_mutable_object(category):
    for task in load_bfcl_tasks([category]):
        a = Environment(task.involved_classes, task.initial_config, task.long_context)
        b = Environment(task.involved_classes, task.initial_config, task.long_context)
        for cls in task.involved_classes:
            ids_a: set[int] = set()
            ids_b: set[int] = set()
            _mutable_ids(vars(a.instances[cls]), ids_a)
            _mutable_ids(vars(b.instances[cls]), ids_b)
            assert not ids_a & ids_b, f"{task.id}: {cls} instances share mutable state"
