"""BFCL's official multi-turn checker, re-implemented on the safe executor.

Semantics (bfcl-eval 2026.3.23, ``multi_turn_checker.py``), turn by turn:

1. execute the model's decoded steps of the turn on the model instances, even when the turn's
   ground truth (GT) is empty, and add their results to the results of all turns so far;
2. execute the GT of the turn on separate GT instances;
3. a turn with a non-empty GT and no decoded model step fails (``empty_turn_model_response``);
4. turns with an empty GT are not checked;
5. every public attribute of every GT instance must equal the model's (``instance_state_mismatch``);
6. the GT results of the turn must be a sub-multiset of the model's results of *all* turns so far
   (``execution_response_mismatch``).

The official verdict stops at the first failure; the checker keeps going so that the per-turn
verdicts (and the progress reward built on them) are available too.
"""

from __future__ import annotations

from collections import Counter
from typing import Literal

from pydantic import BaseModel, Field

from envs.executor import Environment
from envs.task import Task
from envs.tools import tool_names

FailureKind = Literal[
    "multi_turn:inference_error",
    "multi_turn:force_terminated",
    "multi_turn:empty_turn_model_response",
    "multi_turn:instance_state_mismatch",
    "multi_turn:execution_response_mismatch",
]

Decoded = list[list[list[str]]]
"""A model trajectory: turns -> steps -> decoded call strings (steps that decoded to nothing dropped)."""


class TurnVerdict(BaseModel):
    turn: int
    scored: bool = Field(description="The GT of this turn is non-empty, so BFCL checks it.")
    passed: bool = Field(description="Scored and passed every check (False for unscored turns).")
    reason: FailureKind | None = None
    detail: str | None = None


class Score(BaseModel):
    """The checker's typed verdict for one entry."""

    passed: bool = Field(description="BFCL's official pass/fail.")
    progress: float = Field(description="Scored turns passed / scored turns (see envs.rewards).")
    turns: list[TurnVerdict] = Field(default_factory=list)
    failure: FailureKind | None = Field(default=None, description="First failure, as BFCL names it.")
    failure_turn: int | None = None
    detail: str | None = None


def _is_empty(steps: list[list[str]]) -> bool:
    """BFCL's ``is_empty_execute_response``."""
    return len(steps) == 0 or (len(steps) == 1 and len(steps[0]) == 0)


def _missing(expected: list[str], produced: list[str]) -> list[str]:
    """Items of ``expected`` not covered by ``produced``, as multisets."""
    return list((Counter(expected) - Counter(produced)).elements())


def check(task: Task, decoded: Decoded | None, inference_error: str | None = None,
          strict_tools: bool = False) -> Score:
    """Score one model trajectory against a task's ground truth.

    ``strict_tools`` refuses model calls to functions not offered at their turn, as the runner
    did when it produced the trajectory (BFCL's executor runs held-out functions too).
    """
    scored = task.scored_turns
    if decoded is None or inference_error is not None:
        return Score(
            passed=False, progress=0.0, failure="multi_turn:inference_error",
            detail=inference_error or "no trajectory",
            turns=[TurnVerdict(turn=t, scored=t in scored, passed=False) for t in range(len(task.ground_truth))],
        )

    model_env = Environment(task.involved_classes, task.initial_config, task.long_context)
    gt_env = Environment(task.involved_classes, task.initial_config, task.long_context)
    all_model_results: list[str] = []
    verdicts: list[TurnVerdict] = []
    first: TurnVerdict | None = None

    for t, gt_calls in enumerate(task.ground_truth):
        if t >= len(decoded):  # force-terminated: unreached turns fail
            verdicts.append(TurnVerdict(turn=t, scored=bool(gt_calls), passed=False,
                                        reason="multi_turn:force_terminated" if gt_calls else None))
            continue
        steps = decoded[t]
        allowed = set(tool_names(task, t)) if strict_tools else None
        for step in steps:
            all_model_results.extend(model_env.run(step, allowed))
        gt_results = gt_env.run(gt_calls)
        verdict = TurnVerdict(turn=t, scored=bool(gt_calls), passed=False)
        if gt_calls:
            if _is_empty(steps):
                verdict.reason = "multi_turn:empty_turn_model_response"
                verdict.detail = f"no tool call in turn {t}"
            elif diff := model_env.state_diff(gt_env):
                verdict.reason = "multi_turn:instance_state_mismatch"
                verdict.detail = "; ".join(f"{c}: {', '.join(a)}" for c, a in diff.items())
            elif missing := _missing(gt_results, all_model_results):
                verdict.reason = "multi_turn:execution_response_mismatch"
                verdict.detail = f"missing {len(missing)} result(s): " + "; ".join(m[:200] for m in missing)
            else:
                verdict.passed = True
            if not verdict.passed and first is None:
                first = verdict
        verdicts.append(verdict)

    n_passed = sum(v.passed for v in verdicts)
    terminated = len(decoded) != len(task.ground_truth)
    passed = first is None and not terminated
    score = Score(passed=passed, progress=n_passed / len(scored) if scored else float(passed), turns=verdicts)
    if terminated:
        score.failure = "multi_turn:force_terminated"
        score.failure_turn = len(decoded)
        score.detail = f"{len(decoded)} of {len(task.ground_truth)} turns reached"
    elif first is not None:
        score.failure, score.failure_turn, score.detail = first.reason, first.turn, first.detail
    return score
