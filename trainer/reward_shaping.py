"""Demo reward shaping: a hook that reshapes the checker's reward, for tests and the loop rehearsal.

An untrained model scores 0 on every task, so no task reaches the boundary zone and the closed loop
never runs. :func:`synthetic_boundary` (``--reward_shaping synthetic_boundary``) makes a third of
the tasks boundary tasks and a third mastered by a hash of the task id, driving detection,
synthesis, injection and retirement through the production code path. Its rewards are
**synthetic**: the trainer logs the checker's own reward next to it (``rods/raw_reward``), and the
plots and the summary of ``rods train`` say which one they show. Never use it in a real run.
"""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Callable

from envs.runner import Episode
from envs.task import Task

RewardShaper = Callable[[Task, int, float, Episode], float]
"""``f(task, rollout_index_in_group, reward, episode) -> reward``."""


def _bucket(task_id: str, n: int) -> int:
    return int(hashlib.sha256(task_id.encode()).hexdigest(), 16) % n


def synthetic_boundary(task: Task, k: int, reward: float, episode: Episode) -> float:
    """Test hook: make a third of the tasks boundary (rewards 0/1 alternating over the group), a
    third mastered (1.0), and leave the rest as scored, by a hash of the task id.

    With an untrained model every reward is 0, so no task would ever sit on the boundary; this
    lets the end-to-end test drive detection, synthesis, injection and retirement through the
    production code path. Variants get their own hash, so some are retired and some stay.
    """
    bucket = _bucket(task.id, 3)
    if bucket == 0:
        return float(k % 2)
    if bucket == 1:
        return 1.0
    return reward


REWARD_SHAPERS: dict[str, RewardShaper] = {"synthetic_boundary": synthetic_boundary}


def resolve_shaper(name: str | None) -> RewardShaper | None:
    """A registered shaper name, or ``module:function``; None disables shaping."""
    if not name:
        return None
    if name in REWARD_SHAPERS:
        return REWARD_SHAPERS[name]
    if ":" in name:
        module, attr = name.split(":", 1)
        return getattr(importlib.import_module(module), attr)
    raise ValueError(f"unknown reward_shaping {name!r}; registered: {sorted(REWARD_SHAPERS)} (or module:function)")
