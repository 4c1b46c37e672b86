"""``rods export RUN --format trl|verl|bfcl --out DIR``: a run's tasks as a typed Hugging Face dataset or BFCL files.

RUN is a synthesis run folder (its ``accepted.jsonl``), a ``rods train`` output folder (its final pool and every variant
it injected, with each task's reward history: :func:`training_tasks`), any task JSONL file (BFCL entries, or ``rods
tasks --format jsonl`` rows), or a split name (``train``, ``test``, ``all``: the shipped BFCL tasks). The columns are
described in :mod:`rods_agents.run.outputs`.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Annotated, Any

import typer

from envs.task import InputError, Task, dedupe_tasks
from rods_agents.run.outputs import FORMATS, TOOLS_IN_SYSTEM, TrainingInfo, export
from rods_cli.common import console, user_errors

log = logging.getLogger(__name__)
SPLITS = ("train", "test", "all")
STATE_FILE = "rods_curriculum.json"  # trainer.curriculum.STATE_FILE, read here as plain JSON


def curriculum_state_file(folder: Path) -> Path | None:
    """A training folder's curriculum state: the final one ``rods train`` writes, else the latest checkpoint's."""
    if (folder / STATE_FILE).is_file():
        return folder / STATE_FILE
    ckpts = sorted((p for p in folder.glob(f"checkpoint-*/{STATE_FILE}") if p.parent.name[11:].isdigit()),
                   key=lambda p: int(p.parent.name[11:]))
    return ckpts[-1] if ckpts else None


def training_tasks(state_file: Path) -> tuple[list[Task], dict[str, TrainingInfo]]:
    """The final pool and every variant the run injected that the checkpoint still holds, each with its history.

    Injected ids come from every boundary report (the event log is bounded); a variant retired since is exported from
    the state's ``retired`` table (a state written before it existed only names such variants in a warning). Each
    detector observation ``[epoch, step, n, mean, m2]`` (Welford sums, one per epoch the task was rolled out, the last
    ``history_size`` kept) becomes ``{epoch, step, rollouts, mean_reward, reward_std}``."""
    state = json.loads(state_file.read_text(encoding="utf-8"))
    buffer, tracks = state["buffer"], state["detector"]["tracks"]
    retired_history = state["detector"].get("retired_history", {})
    content = {d["id"]: d for d in [*state.get("retired", []), *state.get("known", []), *buffer.get("queue", []),
                                    *buffer["pool"]]}
    pool = [d["id"] for d in buffer["pool"]]
    seeds = set(buffer["seed_ids"])
    injected: dict[str, int | None] = {}
    for report in state.get("reports", []):
        for tid in report.get("injected", []):
            injected.setdefault(tid, report.get("epoch"))
    for event in buffer.get("events", []):
        if event.get("kind") == "injected":
            injected.setdefault(event["task_id"], event.get("epoch"))
    order = pool + [tid for tid in injected if tid not in set(pool)]
    lost = [tid for tid in order if tid not in content]
    if lost:
        log.warning("%d injected variant(s) were retired and %s no longer holds their content: %s", len(lost),
                    state_file, ", ".join(lost))
    tasks, info = [], {}
    for tid in (t for t in order if t in content):
        tasks.append(Task.model_validate(content[tid]))
        history = [{"epoch": int(e), "step": int(s), "rollouts": int(n), "mean_reward": float(m),
                    "reward_std": math.sqrt(max(float(m2), 0.0) / n) if n else 0.0}
                   for e, s, n, m, m2 in (tracks.get(tid) or {}).get("history") or retired_history.get(tid, [])]
        info[tid] = TrainingInfo(origin="seed" if tid in seeds and tid not in injected else "injected",
                                 injected_epoch=injected.get(tid), in_final_pool=tid in set(pool),
                                 reward_history=history)
    return tasks, info


def resolve_run(run: str) -> tuple[list[Task], dict[str, TrainingInfo] | None]:
    """The tasks RUN names (module docstring), and a training run's per-task information (else None)."""
    from envs.dataset import load_split
    from envs.task import read_tasks

    if run in SPLITS and not Path(run).exists():
        return load_split(run), None  # type: ignore[arg-type]
    path = Path(run)
    if path.is_dir():
        if not (path / "accepted.jsonl").exists():
            state = curriculum_state_file(path)
            if state is not None:
                return training_tasks(state)
            raise InputError(f"{path}: no accepted.jsonl and no {STATE_FILE} (expected a `rods synthesize` run "
                             f"folder, a `rods train` output folder, a task JSONL file or one of {', '.join(SPLITS)})")
        path = path / "accepted.jsonl"
    elif not path.exists():
        raise InputError(f"{run}: no such run folder or file (or split: {', '.join(SPLITS)})")
    return dedupe_tasks(read_tasks(path), str(path)), None


def export_command(
    run: Annotated[str, typer.Argument(help="Synthesis run folder (accepted.jsonl), training output folder (its pool "
                                            "and injected variants), task JSONL file, or train/test/all.")],
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
        if out.exists() and not out.is_dir():
            raise InputError(f"--out {out} is a file, not a folder (choose another --out)")
        tasks, training = resolve_run(run)
        if not tasks:
            raise InputError(f"{run}: no tasks to export")
        try:
            summary = export(tasks, out, fmt, system_prompt=system_prompt, completion=completion == "oracle",
                             tools_in_system=tools_in_system, parquet=parquet, jsonl=jsonl, overwrite=overwrite,
                             training=training if fmt != "bfcl" else None, source=str(run))
        except FileExistsError as exc:
            raise InputError(str(exc)) from None
    what = _training_summary(training) if training else ""
    console.print(f"exported {summary['rows']} tasks{what} as {fmt} to {summary['out']}", highlight=False)


def _training_summary(training: dict[str, Any]) -> str:
    injected = sum(1 for i in training.values() if i.origin == "injected")
    pool = sum(1 for i in training.values() if i.in_final_pool)
    return f" (final pool {pool}, {injected} injected variant{'' if injected == 1 else 's'})"
