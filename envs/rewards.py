"""Rewards computed from a checker :class:`~envs.checker.Score`.

**Progress reward** (RODS's R_P) = scored turns passed / scored turns, where a scored turn has a
non-empty ground truth. Choices and pitfalls:

* Empty-GT turns (miss_func before the reveal, the withheld turn of miss_param, infeasible
  requests) are left out of the denominator. Counting them as automatic passes would pay a
  do-nothing policy; calls made in them are still executed because they shape later state.
* The denominator is every scored turn of the task, reached or not: a force-terminated or
  truncated episode cannot raise its reward by stopping early.
* State is cumulative, so one wrong mutation usually fails every later turn and the reward
  behaves close to "prefix until the first failure". That is the intended partial credit.
* ``progress == 1`` exactly when BFCL's official verdict passes (for a full-length trajectory).
* An inference error scores 0.

The binary reward (official pass/fail) is kept for the paper's "binary accuracy" ablation.
"""

from __future__ import annotations

from collections.abc import Callable

from envs.checker import Score


def progress_reward(score: Score) -> float:
    return score.progress


def binary_reward(score: Score) -> float:
    return 1.0 if score.passed else 0.0


REWARDS: dict[str, Callable[[Score], float]] = {"progress": progress_reward, "binary": binary_reward}
