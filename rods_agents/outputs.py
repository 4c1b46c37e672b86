"""Run outputs: ``accepted.jsonl`` (BFCL entries + provenance), ``rejected.jsonl``, ``report.json``.

All writes are atomic (temp file + rename), so a killed run never leaves a half-written file.
:func:`load_dataset` turns ``accepted.jsonl`` into a Hugging Face ``datasets.Dataset``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from envs.task import Task, atomic_write_text, write_tasks


def write_outputs(out_dir: str | Path, accepted: list[Task], rejected: list[dict], report: dict) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_tasks(out / "accepted.jsonl", accepted)
    atomic_write_text(out / "rejected.jsonl", "".join(json.dumps(r, default=str) + "\n" for r in rejected))
    atomic_write_text(out / "report.json", json.dumps(report, indent=2, default=str) + "\n")


_NESTED = ("question", "initial_config", "ground_truth", "provenance", "missed_function")


def load_dataset(path: str | Path) -> Any:
    """``accepted.jsonl`` (or a run folder) as a ``datasets.Dataset``; nested fields are JSON strings
    (their shapes vary per task), with ``category`` and ``seed_id`` columns for filtering."""
    import datasets

    path = Path(path)
    if path.is_dir():
        path = path / "accepted.jsonl"
    rows = []
    for task in _read(path):
        entry = task.to_bfcl()
        row = {"id": entry["id"], "category": task.category, "scenario": task.scenario,
               "involved_classes": task.involved_classes,
               "seed_id": (task.provenance or {}).get("seed_id", "")}
        for key in _NESTED:
            row[key] = json.dumps(entry.get(key, {} if key != "ground_truth" else []))
        rows.append(row)
    if not rows:
        return datasets.Dataset.from_dict({k: [] for k in ("id", "category", "scenario", "involved_classes", "seed_id", *_NESTED)})
    return datasets.Dataset.from_list(rows)


def _read(path: Path) -> list[Task]:
    from envs.task import read_tasks

    return read_tasks(path)
