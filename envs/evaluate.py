"""Evaluate a policy on tasks: run episodes concurrently, score them, aggregate per category."""

from __future__ import annotations

import asyncio
import concurrent.futures
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence

from pydantic import BaseModel, Field

from envs.checker import check
from envs.executor import ERROR_PREFIX, Environment
from envs.runner import Episode, Policy, run_episode
from envs.task import Task


class EntryResult(BaseModel):
    id: str
    category: str
    repeat: int = 0
    passed: bool
    progress: float
    failure: str | None = None
    failure_turn: int | None = None
    detail: str | None = None
    steps: int = 0
    tool_calls: int = 0
    malformed_calls: int = 0


class Aggregate(BaseModel):
    passed: float = Field(description="Passed entries (mean over repeats).")
    total: int
    accuracy: float
    progress: float
    accuracy_std: float = 0.0
    progress_std: float = 0.0


class Report(BaseModel):
    policy: str
    repeats: int = 1
    overall: Aggregate
    bfcl_overall: float = Field(description="Unweighted mean of category accuracies, as BFCL reports it.")
    categories: dict[str, Aggregate]
    entries: list[EntryResult]
    malformed_calls: int = 0


def score_episode(task: Task, episode: Episode, repeat: int = 0, strict_tools: bool = False) -> EntryResult:
    score = check(task, episode.decoded, inference_error=episode.error, strict_tools=strict_tools)
    return EntryResult(
        id=task.id, category=task.category, repeat=repeat, passed=score.passed, progress=score.progress,
        failure=score.failure, failure_turn=score.failure_turn, detail=score.detail, steps=episode.steps,
        tool_calls=episode.tool_calls, malformed_calls=episode.malformed_calls,
    )


async def evaluate_async(tasks: Sequence[Task], policy: Policy, *, repeats: int = 1, concurrency: int = 8,
                         strict_tools: bool = False, on_result: Callable[[EntryResult], None] | None = None,
                         policy_name: str = "policy") -> Report:
    semaphore = asyncio.Semaphore(max(1, concurrency))

    async def one(task: Task, repeat: int) -> EntryResult:
        async with semaphore:
            episode = await run_episode(task, policy, strict_tools=strict_tools)
        result = score_episode(task, episode, repeat, strict_tools)
        if on_result:
            on_result(result)
        return result

    results = await asyncio.gather(*(one(t, r) for r in range(repeats) for t in tasks))
    return aggregate(list(results), repeats, policy_name)


def evaluate(tasks: Sequence[Task], policy: Policy, **kwargs) -> Report:
    """Synchronous :func:`evaluate_async`; also works where a loop already runs (Jupyter)."""
    coro = evaluate_async(tasks, policy, **kwargs)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


def _aggregate(entries: list[EntryResult], repeats: int) -> Aggregate:
    per_repeat = defaultdict(list)
    for e in entries:
        per_repeat[e.repeat].append(e)
    accs = [sum(e.passed for e in rs) / len(rs) for rs in per_repeat.values()]
    progs = [sum(e.progress for e in rs) / len(rs) for rs in per_repeat.values()]
    total = len(entries) // max(1, repeats)
    return Aggregate(
        passed=sum(e.passed for e in entries) / max(1, repeats), total=total,
        accuracy=statistics.fmean(accs), progress=statistics.fmean(progs),
        accuracy_std=statistics.pstdev(accs) if len(accs) > 1 else 0.0,
        progress_std=statistics.pstdev(progs) if len(progs) > 1 else 0.0,
    )


def aggregate(entries: list[EntryResult], repeats: int = 1, policy_name: str = "policy") -> Report:
    if not entries:
        raise ValueError("no entries to aggregate")
    by_cat: dict[str, list[EntryResult]] = defaultdict(list)
    for e in entries:
        by_cat[e.category].append(e)
    categories = {c: _aggregate(es, repeats) for c, es in sorted(by_cat.items())}
    return Report(
        policy=policy_name, repeats=repeats, overall=_aggregate(entries, repeats),
        bfcl_overall=statistics.fmean(a.accuracy for a in categories.values()),
        categories=categories, entries=sorted(entries, key=lambda e: (e.repeat, e.id)),
        malformed_calls=sum(e.malformed_calls for e in entries),
    )


# A ground-truth call that names no tool or does not parse: an oracle run reproduces the error and still
# "passes", so a typo in a seed would go unnoticed (environment errors such as a refused login can be intended).
_BROKEN = ("is not defined", "unparsable", "invalid syntax", "not a call")


def broken_ground_truth(task: Task) -> list[str]:
    """The ground-truth calls of ``task`` that name no tool of its classes or do not parse, as ``turn T: call``."""
    env = Environment(task.involved_classes, task.initial_config, long_context=task.category == "long_context")
    out = []
    for turn, calls in enumerate(task.ground_truth):
        for call, result in zip(calls, env.run(calls), strict=True):
            if result.startswith(ERROR_PREFIX) and any(b in result for b in _BROKEN):
                out.append(f"turn {turn}: {call} ({result.removeprefix(ERROR_PREFIX)})")
    return out
