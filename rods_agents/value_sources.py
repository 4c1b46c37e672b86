"""Where each ground-truth argument value comes from: the task's information structure.

Sources, in the order they are tried:

- ``user``: stated in the user turns up to and including the call's turn;
- ``call``: printed in the result of an earlier call (same turn included);
- ``state``: present in the initial environment state the agent can explore (keys and leaves);
- ``composed``: none of those; the value is a transformation of them (a diff pasted into a post, a
  list joined into a string, an amount computed from a balance).

Booleans and ``None`` are flags, not information, and are not classified.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel

from envs.executor import Environment
from envs.task import Task
from rods_agents.tracing import Trace

Source = Literal["user", "call", "state", "composed"]
SOURCES: tuple[str, ...] = ("user", "call", "state", "composed")
_NUM = re.compile(r"-?\d+(?:\.\d+)?")
_MIN_SUBSTRING = 4


class ArgSource(BaseModel):
    turn: int
    index: int
    method: str
    param: str
    value: str
    source: Source
    producer: int | None = None  # position in the trace of the call whose result held the value


def _walk(obj: Any, strings: set[str], numbers: set[float], depth: int = 0) -> None:
    if depth > 40:
        return
    if isinstance(obj, bool) or obj is None:
        return
    if isinstance(obj, str):
        strings.add(obj)
    elif isinstance(obj, int | float):
        numbers.add(float(obj))
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _walk(k, strings, numbers, depth + 1)
            _walk(v, strings, numbers, depth + 1)
    elif isinstance(obj, list | tuple | set | frozenset):
        for v in obj:
            _walk(v, strings, numbers, depth + 1)
    elif hasattr(obj, "__dict__"):
        for k, v in vars(obj).items():
            if k != "parent" and not k.startswith("_"):
                _walk(v, strings, numbers, depth + 1)


def state_values(task: Task) -> tuple[set[str], set[float]]:
    """String and numeric leaves (dict keys included) of the task's initial public state."""
    env = Environment(task.involved_classes, task.initial_config, task.long_context)
    strings: set[str] = set()
    numbers: set[float] = set()
    for inst in env.instances.values():
        _walk({k: v for k, v in vars(inst).items() if not k.startswith("_")}, strings, numbers)
    return strings, numbers


_TOKEN = re.compile(r"[a-z0-9]+")


def _paraphrased(value: str, text: str) -> bool:
    """Free text (a message, a post) the user dictated with small changes: most of its words are there."""
    words = [w for w in _TOKEN.findall(value.lower()) if len(w) > 2]
    if len(words) < 4:
        return False
    have = set(_TOKEN.findall(text.lower()))
    return sum(w in have for w in words) / len(words) >= 0.7


def _numbers(text: str) -> set[float]:
    return {float(x) for x in _NUM.findall(text)}


def _scalars(value: Any) -> list[Any] | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, list | tuple):
        out = []
        for v in value:
            s = _scalars(v)
            if s:
                out.extend(s)
        return out
    if isinstance(value, dict):
        return _scalars(list(value.values()))
    return [value]


def user_text_upto(task: Task, turn: int) -> str:
    return "\n".join(m.content for t in task.turns[: turn + 1] for m in t)


def classify_scalar(value: Any, text: str, text_nums: set[float], results: list[str], result_nums: list[set[float]],
                    strings: set[str], numbers: set[float], long_strings: list[str]) -> tuple[str, int | None]:
    if isinstance(value, str):
        v = value.strip()
        if v and v.lower() in text.lower():
            return "user", None
        if _paraphrased(v, text):
            return "user", None
        if len(v) >= 2:
            for i in range(len(results) - 1, -1, -1):
                if v in results[i]:
                    return "call", i
        if v in strings or (len(v) >= _MIN_SUBSTRING and any(v in s for s in long_strings)):
            return "state", None
        return "composed", None
    num = float(value)
    if num in text_nums:
        return "user", None
    for i in range(len(results) - 1, -1, -1):
        if num in result_nums[i]:
            return "call", i
    if num in numbers:
        return "state", None
    return "composed", None


_RANK = {"user": 0, "call": 1, "state": 2, "composed": 3}


def classify_arguments(task: Task, trace: Trace) -> list[ArgSource]:
    """Classify every non-flag argument of every traced call (see module docstring)."""
    strings, numbers = state_values(task)
    long_strings = [s for s in strings if len(s) >= 8]
    out: list[ArgSource] = []
    results: list[str] = []
    result_nums: list[set[float]] = []
    texts: dict[int, tuple[str, set[float]]] = {}
    for rec in trace.calls:
        if rec.turn not in texts:
            text = user_text_upto(task, rec.turn)
            texts[rec.turn] = (text, _numbers(text))
        text, text_nums = texts[rec.turn]
        for param, value in rec.args.items():
            scalars = _scalars(value)
            if not scalars:
                continue
            labels = [classify_scalar(s, text, text_nums, results, result_nums, strings, numbers, long_strings)
                      for s in scalars]
            worst = max(labels, key=lambda lp: _RANK[lp[0]])
            source = worst[0] if len({lb for lb, _ in labels}) == 1 else ("composed" if worst[0] == "composed" else worst[0])
            producer = next((p for lb, p in labels if p is not None), None)
            out.append(ArgSource(turn=rec.turn, index=rec.index, method=rec.name, param=param,
                                 value=repr(value)[:200], source=source, producer=producer))
        results.append(rec.result)
        result_nums.append(_numbers(rec.result) if len(rec.result) < 50_000 else set())
    return out


def source_shares(arg_sources: list[ArgSource]) -> dict[str, float]:
    counts = Counter(a.source for a in arg_sources)
    total = sum(counts.values()) or 1
    return {s: round(counts.get(s, 0) / total, 4) for s in SOURCES}
