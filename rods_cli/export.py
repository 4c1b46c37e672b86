"""``rods export RUN --format trl|verl|bfcl --out DIR``: a run's tasks as a typed Hugging Face dataset or BFCL files.

RUN is a synthesis run folder (its ``accepted.jsonl``), any task JSONL file (BFCL entries, or ``rods tasks --format
jsonl`` rows), or a split name (``train``, ``test``, ``all``: the shipped BFCL tasks). The columns are described in
:mod:`rods_agents.run.outputs`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from envs.task import InputError, Task, dedupe_tasks
from rods_agents.run.outputs import FORMATS, TOOLS_IN_SYSTEM, export
from rods_cli.common import console, user_errors

SPLITS = ("train", "test", "all")


def resolve_run(run: str) -> list[Task]:
    """The tasks RUN names (module docstring)."""
    from envs.dataset import load_split
    from envs.task import read_tasks

    if run in SPLITS and not Path(run).exists():
        return load_split(run)  # type: ignore[arg-type]
    path = Path(run)
    if path.is_dir():
        if not (path / "accepted.jsonl").exists():
            raise InputError(f"{path}: no accepted.jsonl (expected a `rods synthesize` run folder, a task JSONL file "
                             f"or one of {', '.join(SPLITS)})")
        path = path / "accepted.jsonl"
    elif not path.exists():
        raise InputError(f"{run}: no such run folder or file (or split: {', '.join(SPLITS)})")
    return dedupe_tasks(read_tasks(path), str(path))


def export_command(
    run: Annotated[str, typer.Argument(help="Run folder (accepted.jsonl), task JSONL file, or train/test/all.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder (created; must be empty unless --overwrite).")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="trl (HF dataset), verl (HF dataset + train.parquet) "
                                                            "or bfcl (BFCL JSONL + possible_answer).")] = "trl",
    system_prompt: Annotated[str | None, typer.Option("--system_prompt", "--system-prompt",
                                                      help="System message to put first in every prompt "
                                                           "(the trainer's system_prompt).")] = None,
    completion: Annotated[str, typer.Option("--completion", help="none, or oracle: add a `completion` column (the "
                                                                 "ground truth played to the end) for SFT.")] = "none",
    tools_in_system: Annotated[str, typer.Option("--tools_in_system", "--tools-in-system",
                                                 help="none, or hermes: also write turn 0's tools into the system "
                                                      "message as Qwen/Hermes templates do (for TRL's GRPOTrainer, "
                                                      "which ignores a per-row tools column).")] = "none",
    parquet: Annotated[bool, typer.Option("--parquet", help="Also write data.parquet.")] = False,
    jsonl: Annotated[bool, typer.Option("--jsonl", help="Also write data.jsonl.")] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace a non-empty --out folder.")] = False,
) -> None:
    """Export tasks for training elsewhere: TRL/verl datasets (prompt, tools, turns, ground truth) or BFCL files."""
    if fmt not in FORMATS:
        raise typer.BadParameter(f"choose from {', '.join(FORMATS)}", param_hint="--format")
    if completion not in ("none", "oracle") or (completion == "oracle" and fmt == "bfcl"):
        raise typer.BadParameter("none or oracle (trl/verl only)", param_hint="--completion")
    if tools_in_system not in TOOLS_IN_SYSTEM:
        raise typer.BadParameter(f"choose from {', '.join(TOOLS_IN_SYSTEM)}", param_hint="--tools_in_system")
    with user_errors():
        tasks = resolve_run(run)
        if not tasks:
            raise InputError(f"{run}: no tasks to export")
        try:
            summary = export(tasks, out, fmt, system_prompt=system_prompt, completion=completion == "oracle",
                             tools_in_system=tools_in_system, parquet=parquet, jsonl=jsonl, overwrite=overwrite)
        except FileExistsError as exc:
            raise InputError(str(exc)) from None
    console.print(f"exported {summary['rows']} tasks as {fmt} to {summary['out']}", highlight=False)
