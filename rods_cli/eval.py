"""``rods eval`` and ``rods tasks``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from envs.bfcl_data import CATEGORIES
from envs.dataset import load_tasks
from envs.evaluate import Report, broken_ground_truth, evaluate_async
from envs.policies import check_script_covers, make_policy
from envs.task import InputError, atomic_write_text
from rods_cli.common import console, err_console, user_errors

SPLITS = ["train", "test", "all"]


def _report_table(report: Report, bench: str = "BFCL multi-turn") -> Table:
    std = report.repeats > 1
    table = Table(title=f"{bench} - {report.policy}" + (f" ({report.repeats} repeats)" if std else ""))
    for col in ("category", "passed", "total", "accuracy", "progress"):
        table.add_column(col, justify="left" if col == "category" else "right")
    rows = list(report.categories.items()) + [("overall", report.overall)]
    for name, agg in rows:
        acc = f"{agg.accuracy:.3f}" + (f" ± {agg.accuracy_std:.3f}" if std else "")
        prog = f"{agg.progress:.3f}" + (f" ± {agg.progress_std:.3f}" if std else "")
        table.add_row(name, f"{agg.passed:g}", str(agg.total), acc, prog, end_section=name == rows[-2][0])
    return table


def eval_command(
    policy: str = typer.Option("oracle", help="oracle | replay:PATH (JSONL of {id, turns}) | openai | hf:PATH"),
    split: str = typer.Option("test", help="Scenario split: train, test or all (ignored with --tasks)."),
    categories: list[str] = typer.Option(None, "--categories", "-c", help=f"Any of {', '.join(CATEGORIES)}."),
    tasks_file: Path = typer.Option(None, "--tasks", help="Tasks in BFCL JSONL format (e.g. synthesized ones)."),
    ids: list[str] = typer.Option(None, "--id", help="Only these task ids."),
    limit: int = typer.Option(0, help="Evaluate only the first N tasks (0 = all)."),
    repeats: int = typer.Option(1, min=1, help="Run each task N times; report mean ± std."),
    model: str = typer.Option(None, help="Model name for --policy openai."),
    base_url: str = typer.Option(None, "--base_url", "--base-url", envvar="OPENAI_BASE_URL", help="OpenAI-compatible endpoint, e.g. a vLLM server."),
    concurrency: int = typer.Option(8, min=1, help="Episodes in flight at once."),
    timeout: float = typer.Option(120.0, help="Seconds per model request."),
    strict_tools: bool = typer.Option(False, "--strict_tools/--no_strict_tools", "--strict-tools/--no-strict-tools", help="Refuse calls to tools not offered at the turn (stricter than BFCL)."),
    out: Path = typer.Option(None, help="Write the JSON report here."),
) -> None:
    """Evaluate a policy on multi-turn tasks (BFCL's, or --tasks on your own environment classes): per-category
    table and a JSON report."""
    if split not in SPLITS:
        raise typer.BadParameter(f"choose from {SPLITS}", param_hint="--split")
    with user_errors():
        tasks = load_tasks(split, categories or None, str(tasks_file) if tasks_file else None, ids or None)
        if limit:
            tasks = tasks[:limit]
        if not tasks:
            raise InputError("no tasks selected")
        pol = make_policy(policy, model=model, base_url=base_url, concurrency=concurrency, timeout=timeout)
        check_script_covers(pol, tasks)
        if policy == "oracle":
            _warn_broken_ground_truth(tasks)
        report = asyncio.run(_run(tasks, pol, policy, repeats, concurrency, strict_tools))
    own = any(":" in c for t in tasks for c in t.involved_classes)  # a user's own classes: not BFCL's benchmark
    console.print(_report_table(report, "multi-turn" if own else "BFCL multi-turn"))
    if report.malformed_calls:
        console.print(f"malformed tool calls: {report.malformed_calls}")
    if out:
        atomic_write_text(out, report.model_dump_json(indent=1))
        console.print(f"report written to {out}")


def _warn_broken_ground_truth(tasks) -> None:
    """The oracle replays the ground truth, errors included: name the calls that can only be typos."""
    for task in tasks:
        for problem in broken_ground_truth(task):
            err_console.print(f"warning: {task.id}: ground truth {problem}", soft_wrap=True, highlight=False,
                              markup=False)


async def _run(tasks, pol, name: str, repeats: int, concurrency: int, strict_tools: bool) -> Report:
    if hasattr(pol, "preflight"):
        await pol.preflight()
    columns = (TextColumn("[bold]eval"), BarColumn(), MofNCompleteColumn(), TextColumn("passed {task.fields[ok]}"),
               TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        bar = progress.add_task("eval", total=len(tasks) * repeats, ok=0)
        passed = 0

        def on_result(r) -> None:
            nonlocal passed
            passed += r.passed
            progress.update(bar, advance=1, ok=passed)

        return await evaluate_async(tasks, pol, repeats=repeats, concurrency=concurrency, strict_tools=strict_tools,
                                    on_result=on_result, policy_name=name)


def tasks_command(
    split: str = typer.Option("all", help="train, test or all."),
    categories: list[str] = typer.Option(None, "--categories", "-c", help=f"Any of {', '.join(CATEGORIES)}."),
    tasks_file: Path = typer.Option(None, "--tasks", help="List tasks from a BFCL JSONL file instead."),
    fmt: str = typer.Option("table", "--format", help="table or jsonl."),
) -> None:
    """List tasks (id, category, scenario, classes, turns)."""
    if split not in SPLITS:
        raise typer.BadParameter(f"choose from {SPLITS}", param_hint="--split")
    if fmt not in ("table", "jsonl"):
        raise typer.BadParameter("choose table or jsonl", param_hint="--format")
    with user_errors():
        tasks = load_tasks(split, categories or None, str(tasks_file) if tasks_file else None)
    rows = [{"id": t.id, "category": t.category, "scenario": t.scenario, "involved_classes": t.involved_classes,
             "turns": len(t.turns), "calls": sum(map(len, t.ground_truth))} for t in tasks]
    if fmt == "jsonl":
        for row in rows:
            typer.echo(json.dumps(row))
        return
    table = Table(title=f"{len(rows)} tasks ({split})")
    # ids are never cut: variants of one seed differ only in their suffix ("...__rods_<hash>")
    table.add_column("id", no_wrap=True, min_width=max((len(r["id"]) for r in rows), default=2))
    for col in ("category", "scenario", "involved_classes", "turns", "calls"):
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(row["id"], row["category"], "-" if row["scenario"] is None else str(row["scenario"]),
                      ", ".join(row["involved_classes"]),
                      str(row["turns"]), str(row["calls"]))
    console.print(table)
