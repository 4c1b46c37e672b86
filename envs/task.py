"""The :class:`Task` model: one BFCL multi-turn entry plus its ground truth.

A task reads and writes BFCL's own entry format (JSON Lines), so tasks synthesized by RODS and
BFCL's shipped files are interchangeable: ``rods eval --tasks``, the trainer and BFCL's checker
all take the same lines. The same format holds tasks on a user's own environment classes
(``involved_classes`` entries such as ``"my_pkg.crm:CrmAPI"``, see ``docs/environments.md``); outside
BFCL's id scheme, ``category`` defaults to ``base`` (``miss_func`` when ``missed_function`` is given) and
``scenario`` is optional. BFCL's 800 shipped tasks are loaded here too (:func:`bfcl_task`), so that a file
row naming one by id resolves without a module above this one.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from envs.bfcl_data import CATEGORIES, raw_answers, raw_entries
from envs.classes import EnvironmentClassError, class_name, resolve

Category = Literal["base", "miss_func", "miss_param", "long_context"]
_ID_RE = re.compile(r"^multi_turn_(base|miss_func|miss_param|long_context)_(\d+)")

REVEAL_MESSAGE = "I have updated some more functions you can choose from. What about now?"
"""BFCL's fixed user message for a miss_func reveal turn (FC mode)."""


class Message(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str
    content: str


class Task(BaseModel):
    """One multi-turn task.

    ``turns[t]`` holds the user messages of turn ``t`` (BFCL's ``question``); a miss_func reveal
    turn is an empty list. ``ground_truth[t]`` holds the call strings of turn ``t``; it is executed,
    never compared as text. ``missed_function`` maps a reveal turn to the functions held out
    until that turn.
    """

    model_config = ConfigDict(extra="ignore")

    id: str
    category: Category = "base"
    scenario: int | None = Field(None, description="BFCL scenario index; the four categories share it. Optional "
                                                   "outside BFCL (a split by scenario keeps its tasks together).")
    turns: list[list[Message]]
    initial_config: dict[str, Any] = Field(default_factory=dict)
    involved_classes: list[str]
    missed_function: dict[int, list[str]] = Field(default_factory=dict)
    ground_truth: list[list[str]]
    provenance: dict[str, Any] | None = None

    @field_validator("involved_classes")
    @classmethod
    def _known_classes(cls, v: list[str]) -> list[str]:
        """Each entry is a BFCL class name or ``package.module:ClassName`` that imports and follows the contract."""
        if not v:
            raise ValueError("involved_classes is empty")
        if len(set(v)) != len(v):
            raise ValueError(f"involved_classes repeats a class: {v}")
        for spec in v:
            try:
                resolve(spec)
            except EnvironmentClassError as exc:
                raise ValueError(str(exc)) from None
        return v

    @model_validator(mode="after")
    def _aligned(self) -> Task:
        if len(self.turns) != len(self.ground_truth):
            raise ValueError(
                f"{len(self.turns)} question turns but {len(self.ground_truth)} ground-truth turns"
            )
        for turn in self.missed_function:
            if not 0 <= turn < len(self.turns):
                raise ValueError(f"missed_function turn {turn} is out of range")
        methods = {m for c in self.involved_classes for m in resolve(c).methods}
        unknown = sorted({f for fs in self.missed_function.values() for f in fs} - methods)
        if unknown:
            raise ValueError(f"missed_function names {unknown}, which no involved class defines")
        by_path = [k for k in self.initial_config if ":" in k and k in self.involved_classes]
        if by_path:
            raise ValueError(f"initial_config is keyed by class name, not import path: use "
                             f"{[class_name(k) for k in by_path]} instead of {by_path}")
        return self

    @property
    def long_context(self) -> bool:
        return self.category == "long_context"

    @property
    def scored_turns(self) -> list[int]:
        """Turns with a non-empty ground truth: the only ones BFCL checks."""
        return [t for t, gt in enumerate(self.ground_truth) if gt]

    def user_messages(self, turn: int) -> list[dict]:
        """The user messages BFCL sends at ``turn`` (the fixed reveal message on a reveal turn)."""
        if turn in self.missed_function:
            return [{"role": "user", "content": REVEAL_MESSAGE}]
        return [m.model_dump() for m in self.turns[turn]]

    # ------------------------------------------------------------------ BFCL entry format
    @classmethod
    def from_bfcl(cls, entry: dict, ground_truth: list[list[str]] | None = None) -> Task:
        """Build a task from a BFCL prompt entry (and its answer, unless the entry carries one)."""
        data = dict(entry)
        match = _ID_RE.match(str(data.get("id", "")))
        if match:
            data.setdefault("category", match.group(1))
            data.setdefault("scenario", int(match.group(2)))
        elif data.get("category") is None:
            data["category"] = "miss_func" if data.get("missed_function") else "base"
        data["turns"] = data.pop("question", data.get("turns"))
        if ground_truth is not None:
            data["ground_truth"] = ground_truth
        data["missed_function"] = {int(k): v for k, v in (data.get("missed_function") or {}).items()}
        task = cls.model_validate(data)
        _remember(task)
        return task

    def to_bfcl(self) -> dict:
        """The BFCL entry (prompt keys plus ``ground_truth`` and ``provenance``)."""
        out: dict[str, Any] = {
            "id": self.id,
            "question": [[m.model_dump() for m in turn] for turn in self.turns],
            "initial_config": self.initial_config,
            "involved_classes": self.involved_classes,
        }
        if self.missed_function:
            out["missed_function"] = {str(k): v for k, v in self.missed_function.items()}
        out["ground_truth"] = self.ground_truth
        if not _ID_RE.match(self.id):
            out["category"] = self.category
            if self.scenario is not None:
                out["scenario"] = self.scenario
        if self.provenance is not None:
            out["provenance"] = self.provenance
        return out


class InputError(ValueError):
    """Bad input from the user (a file, an id, a flag): reported as one clear line, never a traceback."""


class TaskFileError(InputError):
    """A task file could not be read; the message names the file and line."""


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, object)``; a malformed line raises :class:`TaskFileError`."""
    path = Path(path)
    if not path.exists():
        raise TaskFileError(f"{path}: no such file")
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TaskFileError(f"{path}:{lineno}: malformed JSON ({exc.msg})") from None
            if not isinstance(obj, dict):
                raise TaskFileError(f"{path}:{lineno}: expected a JSON object")
            yield lineno, obj


_HUMAN: dict[str, dict[str, Task]] = {}  # user class -> id -> task: human-written tasks read in this process


def human_tasks(spec: str) -> tuple[Task, ...]:
    """Tasks on a user class that this process loaded from BFCL entries (a seed file, a graph's input) and that no
    synthesis wrote (no provenance), in the order first loaded.

    Why: a user's seeds are the only human wording of their environment, and the offline synthesis re-words a
    variant's turns from other seeds' turns (BFCL's train split plays that part for BFCL's classes). Seeds are
    loaded before any of their samples runs, so a run and its resume see the same set.
    """
    return tuple(_HUMAN.get(spec, {}).values())


def forget_human_tasks() -> None:
    """Forget the remembered user-class tasks (see :func:`human_tasks`)."""
    _HUMAN.clear()


def _remember(task: Task) -> None:
    if task.provenance is None:
        for spec in task.involved_classes:
            if ":" in spec:
                _HUMAN.setdefault(spec, {}).setdefault(task.id, task)


def read_tasks(path: str | Path) -> list[Task]:
    """Read tasks from a JSONL file: BFCL entries with ``ground_truth`` (RODS's own files, BFCL's with answers), or
    rows that only name a BFCL task by ``id`` (``rods tasks --format jsonl``), which resolve to the shipped task."""
    tasks = []
    for lineno, obj in iter_jsonl(path):
        if "ground_truth" not in obj:
            tasks.append(_listed_task(path, lineno, obj))
            continue
        try:
            tasks.append(Task.from_bfcl(obj))
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"])  # empty for a whole-model check: no dangling ": "
            msg = first["msg"].removeprefix("Value error, ")
            where = f"{loc}: " if loc else ""
            raise TaskFileError(f"{path}:{lineno}: invalid task {obj.get('id')!r}: {where}{msg}") from None
    return tasks


def _listed_task(path: str | Path, lineno: int, obj: dict) -> Task:
    """A row without ground truth: a reference to a shipped BFCL task by id (a listing line), else an error."""
    task_id = obj.get("id")
    is_listing = isinstance(task_id, str) and "question" not in obj and not isinstance(obj.get("turns"), list)
    if not is_listing:
        raise TaskFileError(f"{path}:{lineno}: entry {task_id!r} has no ground_truth")
    task = bfcl_task(task_id)
    if task is None:
        raise TaskFileError(f"{path}:{lineno}: entry {task_id!r} has no ground_truth and is not a BFCL task id")
    return task


@cache
def category_tasks(category: str) -> tuple[Task, ...]:
    """BFCL's shipped tasks of one category, in file order (shared: copy before mutating)."""
    entries, answers = raw_entries(category), raw_answers(category)
    tasks = []
    for entry, answer in zip(entries, answers, strict=True):
        if entry["id"] != answer["id"]:
            raise TaskFileError(f"BFCL data out of order: {entry['id']} vs {answer['id']}")
        tasks.append(Task.from_bfcl(entry, answer["ground_truth"]))
    return tuple(tasks)


@cache
def _bfcl_by_id() -> dict[str, Task]:
    return {t.id: t for c in CATEGORIES for t in category_tasks(c)}


def bfcl_task(task_id: str) -> Task | None:
    """The shipped BFCL task with this id (a copy), or None."""
    task = _bfcl_by_id().get(task_id) if _ID_RE.match(task_id) else None
    return task.model_copy(deep=True) if task is not None else None


def dedupe_tasks(tasks: Iterable[Task], source: str = "tasks") -> list[Task]:
    """Drop repeated ids (first kept, one warning naming them); the same id with different content is an error.

    Why: a repeated id would be run and scored twice, silently weighting it double in every aggregate.
    """
    seen: dict[str, Task] = {}
    repeated: list[str] = []
    for task in tasks:
        first = seen.get(task.id)
        if first is None:
            seen[task.id] = task
        elif first == task:
            repeated.append(task.id)
        else:
            raise InputError(f"{source}: task id {task.id!r} appears twice with different content")
    if repeated:
        logging.getLogger("envs.task").warning("%s: %d repeated task id(s) ignored (kept the first): %s", source,
                                               len(repeated), ", ".join(sorted(set(repeated))[:5]))
    return list(seen.values())


def new_file_mode(base: int = 0o666) -> int:
    """``base`` minus the process umask (``0o666``: what ``open()`` gives a file; ``0o777`` for a folder), read
    without changing the umask where ``/proc`` allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return base & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # no /proc: the classic read-and-restore (brief, single call)
    os.umask(mask)
    return base & ~mask


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write a file atomically (temp file in the same folder, fsync, rename).

    The file gets the mode a plain ``open()`` would give (``0o666`` minus the umask), or keeps the mode of the file
    it replaces: ``mkstemp`` alone would leave every output ``0600``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o7777
    except OSError:
        mode = new_file_mode()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_tasks(path: str | Path, tasks: Iterable[Task]) -> None:
    """Write tasks as BFCL JSONL, atomically."""
    atomic_write_text(path, "".join(json.dumps(t.to_bfcl()) + "\n" for t in tasks))


def category_of(task_id: str) -> str | None:
    match = _ID_RE.match(task_id)
    return match.group(1) if match else None


__all__ = [
    "CATEGORIES",
    "Category",
    "InputError",
    "Message",
    "REVEAL_MESSAGE",
    "Task",
    "TaskFileError",
    "atomic_write_text",
    "bfcl_task",
    "category_of",
    "category_tasks",
    "dedupe_tasks",
    "forget_human_tasks",
    "human_tasks",
    "iter_jsonl",
    "new_file_mode",
    "read_tasks",
    "write_tasks",
]
