"""`rods synthesize`: grow verified variants of seed tasks (registered by rods_cli/main.py).

Each (seed, variant) sample runs the per-sample graph on its own checkpointer thread in
``OUT/checkpoints.sqlite`` with synchronous durability, so ``--resume`` picks a killed run up
where it stopped: finished samples are read back, unfinished ones continue, none run twice.
Outputs are rewritten atomically after every finished sample.
"""

from __future__ import annotations

import logging
import random
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Annotated, Any

import typer

from envs.task import Task, read_tasks

log = logging.getLogger("rods.synthesize")


def select_seeds(spec: str, num_seeds: int | None, seed: int = 0) -> list[Task]:
    """``train`` (the train split) or a JSONL file; N seeds dealt round-robin over categories."""
    if spec == "train":
        from envs.dataset import load_split

        tasks = load_split("train")
    else:
        tasks = read_tasks(spec)
    if not num_seeds or num_seeds >= len(tasks):
        return tasks
    by_cat: dict[str, list[Task]] = {}
    for t in tasks:
        by_cat.setdefault(t.category, []).append(t)
    rng = random.Random(seed)
    for lst in by_cat.values():
        rng.shuffle(lst)
    picked: list[Task] = []
    cats = sorted(by_cat)
    while len(picked) < num_seeds:
        for c in cats:
            if by_cat[c] and len(picked) < num_seeds:
                picked.append(by_cat[c].pop())
    return picked


def run_samples(seeds: list[Task], ctx: Any, out: Path, resume: bool = False,
                on_event: Callable[[dict], None] | None = None) -> Any:
    """Run every (seed, variant) sample with a SQLite checkpointer; write outputs as samples finish."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    from graphs.synthesis import build_sample_graph, finalize_results, sample_id, warm_caches
    from rods_agents.outputs import write_outputs

    out.mkdir(parents=True, exist_ok=True)
    db = out / "checkpoints.sqlite"
    if not resume:
        for name in ("checkpoints.sqlite", "checkpoints.sqlite-wal", "checkpoints.sqlite-shm",
                     "accepted.jsonl", "rejected.jsonl", "report.json"):
            (out / name).unlink(missing_ok=True)
    warm_caches()
    conn = sqlite3.connect(str(db), check_same_thread=False)
    saver = SqliteSaver(conn)
    graph = build_sample_graph().compile(checkpointer=saver)
    samples = [(sample_id(s.id, v), s, v) for s in seeds for v in range(ctx.variants_per_seed)]
    results: dict[str, dict] = {}
    start = time.perf_counter()

    def flush() -> None:
        res = finalize_results(list(results.values()), time.perf_counter() - start)
        res.report["run"] = {"seeds": len(seeds), "variants_per_seed": ctx.variants_per_seed, "seed": ctx.seed,
                             "backbone": ctx.backbone, "models": list(ctx.models), "finished": len(results),
                             "total": len(samples)}
        write_outputs(out, res.accepted, res.rejected, res.report)
        return res

    def one(item: tuple[str, Task, int]) -> dict:
        sid, seed_task, variant = item
        config = {"configurable": {"thread_id": sid}, "recursion_limit": 200}
        snapshot = graph.get_state(config)
        if snapshot.values.get("results") and not snapshot.next:
            if on_event:
                on_event({"sample_id": sid, "stage": "done", "status": "resumed"})
            return snapshot.values["results"][-1]
        payload = None if snapshot.next else {"sample_id": sid, "seed": seed_task.model_dump(), "variant": variant}
        for event in graph.stream(payload, config, context=ctx, stream_mode="custom", durability="sync"):
            if on_event:
                on_event(event)
        return graph.get_state(config).values["results"][-1]

    try:
        if ctx.concurrency <= 1:
            for item in samples:
                r = one(item)
                results[r["sample_id"]] = r
                flush()
        else:
            with ThreadPoolExecutor(ctx.concurrency) as pool:
                for r in pool.map(one, samples):
                    results[r["sample_id"]] = r
                    flush()
        return flush()
    finally:
        conn.close()


def synthesize(
    seeds: Annotated[str, typer.Option("--seeds", help="'train' (train split) or a JSONL file of seed tasks.")] = "train",
    num_seeds: Annotated[int, typer.Option("--num-seeds", help="Seeds to use (dealt round-robin over categories).")] = 20,
    variants_per_seed: Annotated[int, typer.Option("--variants-per-seed", help="Variants drawn per seed.")] = 2,
    backbone: Annotated[str, typer.Option("--backbone", help="offline (no network) or llm.")] = "offline",
    model: Annotated[list[str] | None, typer.Option("--model", help="Chat model(s) for --backbone llm (round-robin).")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="OpenAI-compatible endpoint (key: OPENAI_API_KEY).")] = None,
    llm_stages: Annotated[str, typer.Option("--llm-stages", help="Comma-separated stages the LLM takes over: plan, rewrite, patch.")] = "rewrite",
    out: Annotated[Path, typer.Option("--out", help="Output folder.")] = Path("runs/synthesis"),
    resume: Annotated[bool, typer.Option("--resume", help="Continue a killed run in --out.")] = False,
    seed: Annotated[int, typer.Option("--seed", help="Master seed (runs are deterministic given it).")] = 0,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Samples in flight (offline is CPU-bound: keep 1).")] = 1,
) -> None:
    """Synthesize skill-aligned, execution-verified variants of seed tasks."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from graphs.state import SynthesisContext

    if backbone not in ("offline", "llm"):
        raise typer.BadParameter("--backbone must be 'offline' or 'llm'")
    if backbone == "llm" and not model:
        raise typer.BadParameter("--backbone llm needs at least one --model")
    stages = [s.strip() for s in llm_stages.split(",") if s.strip()]
    if set(stages) - {"plan", "rewrite", "patch"}:
        raise typer.BadParameter(f"--llm-stages: unknown stage(s) {sorted(set(stages) - {'plan', 'rewrite', 'patch'})}")
    console = Console(stderr=True)
    seed_tasks = select_seeds(seeds, num_seeds, seed)
    ctx = SynthesisContext(seed=seed, variants_per_seed=variants_per_seed, backbone=backbone, models=list(model or []),
                           base_url=base_url, concurrency=concurrency,
                           llm_stages=stages)
    total = len(seed_tasks) * variants_per_seed
    with Progress(TextColumn("[bold]synthesize"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                  TimeElapsedColumn(), console=console, transient=False) as progress:
        bar = progress.add_task("", total=total)

        def on_event(event: dict) -> None:
            if event.get("stage") == "done":
                progress.advance(bar)
            progress.update(bar, description=f"{event.get('sample_id', '')} {event.get('stage')}:{event.get('status')}")

        result = run_samples(seed_tasks, ctx, out, resume=resume, on_event=on_event)
    rep = result.report
    table = Table(title=f"rods synthesize -> {out}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key in ("samples", "accepted", "rejected", "acceptance_rate", "patch_share", "distinct_seeds_accepted",
                "llm_calls_per_accepted", "wall_s"):
        table.add_row(key, str(rep.get(key)))
    for reason, n in rep.get("rejections_by_reason", {}).items():
        table.add_row(f"rejected: {reason}", str(n))
    for src in ("user", "call", "state", "composed"):
        table.add_row(f"values from {src} (seeds / variants)",
                      f"{rep['value_sources']['seeds'][src]:.2f} / {rep['value_sources']['variants'][src]:.2f}")
    Console().print(table)


def main() -> None:  # pragma: no cover - `python -m rods_cli.synthesize`
    typer.run(synthesize)


if __name__ == "__main__":  # pragma: no cover
    logging.basicConfig(level=logging.WARNING)
    main()
