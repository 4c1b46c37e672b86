"""`rods synthesize`: grow verified variants of seed tasks (registered by rods_cli/main.py).

Each (seed, variant) sample runs the per-sample graph on its own checkpointer thread in
``OUT/checkpoints.sqlite`` with synchronous durability, so ``--resume`` picks a killed run up
where it stopped: finished samples are read back, unfinished ones continue, none run twice.
Samples run (and are de-duplicated) in issue order: seed index, then variant. Outputs are rewritten
atomically after every finished sample; an accepted sample once written to ``accepted.jsonl`` stays
there (a later near-duplicate is rejected instead).

``OUT/manifest.json`` records the run's settings. ``--resume`` refuses an out dir whose manifest
differs from the given flags; without ``--resume`` a run with the *same* settings starts over (its
files are replaced), a folder holding another run is refused unless ``--overwrite`` is given.

With ``--backbone llm`` every endpoint is checked first (``GET {base_url}/models``, short timeout):
an unreachable one is one error line naming the URL and exit code 2, before any work.

:func:`run_samples` takes ``interrupt_after`` / ``on_interrupt``: the graph pauses after that node
(its checkpoint written) and calls ``on_interrupt(n)`` at the n-th pause. The command never sets
them; tests do, to kill a run at a deterministic point and resume it.
"""

from __future__ import annotations

import json
import logging
import random
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Annotated, Any

import typer

from envs.task import InputError, Task, atomic_write_text, read_tasks

log = logging.getLogger("rods.synthesize")


def select_seeds(spec: str, num_seeds: int | None, seed: int = 0) -> list[Task]:
    """``train`` (the train split) or a JSONL file; N seeds dealt round-robin over categories."""
    if spec == "train":
        from envs.dataset import load_split

        tasks = load_split("train")
    else:
        tasks = read_tasks(spec)
    if num_seeds is not None and num_seeds < 1:
        raise InputError(f"--num_seeds must be >= 1 (got {num_seeds})")
    if not tasks:
        raise InputError(f"--seeds {spec}: no seed tasks")
    if num_seeds is None or num_seeds >= len(tasks):
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


MANIFEST = "manifest.json"
RUN_FILES = ("checkpoints.sqlite", "checkpoints.sqlite-wal", "checkpoints.sqlite-shm", "accepted.jsonl",
             "rejected.jsonl", "report.json", MANIFEST)


def run_manifest(seeds: list[Task], ctx: Any) -> dict:
    """The settings that define a run's samples (what ``--resume`` must match)."""
    return {"seed_ids": [s.id for s in seeds], "variants_per_seed": ctx.variants_per_seed, "seed": ctx.seed,
            "backbone": ctx.backbone, "models": list(ctx.models),
            "llm_stages": sorted(ctx.llm_stages) if ctx.backbone == "llm" else [],
            "max_plan_attempts": ctx.max_plan_attempts, "max_patch_attempts": ctx.max_patch_attempts}


def _describe(manifest: dict, key: str) -> str:
    value = manifest.get(key)
    if key == "seed_ids" and isinstance(value, list):
        return f"{len(value)} seeds ({', '.join(value[:3])}{', ...' if len(value) > 3 else ''})"
    return json.dumps(value)


def prepare_out_dir(out: Path, manifest: dict, resume: bool, overwrite: bool = False, check_only: bool = False) -> None:
    """Check ``out`` against ``manifest`` (InputError on a mismatch), clear it for a fresh run, write the manifest.

    ``check_only`` raises the same errors and touches nothing."""
    old_path = out / MANIFEST
    old = None
    if old_path.exists():
        try:
            old = json.loads(old_path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise InputError(f"{old_path}: unreadable run manifest ({exc}); use another --out or --overwrite") from None
    has_run = any((out / name).exists() for name in RUN_FILES)
    if resume and not overwrite:
        if old is None and has_run:
            raise InputError(f"--resume: {out} holds a run without {MANIFEST}; cannot check its settings "
                             "(use another --out, or --overwrite to start over)")
        if old is not None and old != manifest:
            diff = sorted(k for k in set(old) | set(manifest) if old.get(k) != manifest.get(k))
            raise InputError(f"--resume: {out} was started with other settings: "
                             + "; ".join(f"{k}: {_describe(old, k)} there, {_describe(manifest, k)} now" for k in diff)
                             + " (resume with the same flags, or use another --out)")
    else:
        if has_run and not overwrite and old != manifest:
            what = "another run" if old is not None else "files of a run without a manifest"
            raise InputError(f"{out} holds {what}; use --resume with its settings, another --out, or --overwrite")
    if check_only:
        return
    if not (resume and not overwrite):
        for name in RUN_FILES:  # a fresh run: same settings (or --overwrite) start over
            (out / name).unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(old_path, json.dumps(manifest, indent=2) + "\n")


def run_samples(seeds: list[Task], ctx: Any, out: Path, resume: bool = False,
                on_event: Callable[[dict], None] | None = None, overwrite: bool = False,
                interrupt_after: str | None = None, on_interrupt: Callable[[int], None] | None = None) -> Any:
    """Run every (seed, variant) sample with a SQLite checkpointer; write outputs as samples finish.

    Samples are processed in issue order (seed index, variant) and fed to one incremental
    :class:`graphs.synthesis.Deduper`; ``accepted.jsonl`` only ever grows. ``interrupt_after`` (a
    node name) pauses the graph after that node and calls ``on_interrupt(n)`` at the n-th pause
    (for tests), then continues.
    """
    from langgraph.checkpoint.sqlite import SqliteSaver

    from graphs.synthesis import (
        REJECTION_FIELDS,
        Deduper,
        SynthesisResult,
        build_report,
        build_sample_graph,
        sample_id,
        warm_caches,
    )
    from rods_agents.run.outputs import write_outputs

    prepare_out_dir(out, run_manifest(seeds, ctx), resume, overwrite)
    db = out / "checkpoints.sqlite"
    dedupe = Deduper()
    if resume and (out / "accepted.jsonl").exists():
        for task in read_tasks(out / "accepted.jsonl"):  # published samples stay published
            dedupe.keep(task)
    warm_caches()
    conn = sqlite3.connect(str(db), check_same_thread=False)
    saver = SqliteSaver(conn)
    graph = build_sample_graph().compile(checkpointer=saver,
                                         interrupt_after=[interrupt_after] if interrupt_after else None)
    samples = [(sample_id(s.id, v), s, v) for s in seeds for v in range(ctx.variants_per_seed)]
    judged: list[dict] = []
    accepted: list[Task] = []
    rejected: list[dict] = []
    start = time.perf_counter()
    paused = [0]

    def flush() -> Any:
        report = build_report(judged, accepted, rejected, time.perf_counter() - start)
        report["run"] = {"seeds": len(seeds), "variants_per_seed": ctx.variants_per_seed, "seed": ctx.seed,
                         "backbone": ctx.backbone, "models": list(ctx.models), "finished": len(judged),
                         "total": len(samples)}
        write_outputs(out, accepted, rejected, report)
        return SynthesisResult(accepted=list(accepted), rejected=list(rejected), report=report)

    def admit(r: dict) -> None:
        task, r = dedupe.admit(r)
        judged.append(r)
        if task is not None:
            accepted.append(task)
        else:
            rejected.append({k: r.get(k) for k in REJECTION_FIELDS})

    def one(item: tuple[str, Task, int]) -> dict:
        sid, seed_task, variant = item
        config = {"configurable": {"thread_id": sid}, "recursion_limit": 200}
        snapshot = graph.get_state(config)
        if snapshot.values.get("results") and not snapshot.next:
            if on_event:
                on_event({"sample_id": sid, "stage": "done", "status": "resumed"})
            return snapshot.values["results"][-1]
        payload = None if snapshot.next else {"sample_id": sid, "seed": seed_task.model_dump(), "variant": variant}
        while True:
            for event in graph.stream(payload, config, context=ctx, stream_mode="custom", durability="sync"):
                if on_event:
                    on_event(event)
            state = graph.get_state(config)
            if not state.next:
                return state.values["results"][-1]
            paused[0] += 1  # only interrupt_after pauses: stopped after its node, checkpoint written
            if on_interrupt is not None:
                on_interrupt(paused[0])
            payload = None

    try:
        if ctx.concurrency <= 1:
            for item in samples:
                admit(one(item))
                flush()
        else:
            with ThreadPoolExecutor(ctx.concurrency) as pool:
                for r in pool.map(one, samples):  # results come back in issue order
                    admit(r)
                    flush()
        return flush()
    finally:
        conn.close()


def preflight_endpoints(ctx: Any, timeout: float = 5.0) -> None:
    """Check the run's endpoint before any work (EndpointUnreachable names the URL); no-op offline or with live models."""
    if ctx.backbone != "llm" or ctx.chat_models:
        return
    from rods_agents.llm.client import preflight

    preflight(ctx.base_url, None, timeout)


STAGES_HELP = "Comma-separated stages the LLM takes over: plan, rewrite, patch, judge (default: all four)."


def synthesize(
    seeds: Annotated[str, typer.Option("--seeds", help="'train' (the train split) or a JSONL file of seed tasks "
                                       "(BFCL entries with ground_truth).")] = "train",
    num_seeds: Annotated[int, typer.Option("--num_seeds", "--num-seeds", help="Seeds to use, >= 1, dealt round-robin "
                                           "over categories (more than the file holds = all of them).")] = 20,
    variants_per_seed: Annotated[int, typer.Option("--variants_per_seed", "--variants-per-seed",
                                                   help="Variants drawn per seed, >= 1.")] = 2,
    backbone: Annotated[str, typer.Option("--backbone", help="offline (templates and rule tables; no network) or llm "
                                          "(LangChain ChatOpenAI against --base_url).")] = "offline",
    model: Annotated[list[str] | None, typer.Option("--model", help="Chat model for --backbone llm; repeat for "
                                                    "several (used round-robin per sample).")] = None,
    base_url: Annotated[str | None, typer.Option("--base_url", "--base-url", help="OpenAI-compatible endpoint, e.g. "
                                                 "http://127.0.0.1:8001/v1 (key: OPENAI_API_KEY); checked before "
                                                 "the run starts.")] = None,
    llm_stages: Annotated[str, typer.Option("--llm_stages", "--llm-stages", help=STAGES_HELP)] = "plan,rewrite,patch,judge",
    max_tokens: Annotated[int, typer.Option("--max_tokens", "--max-tokens", help="Completion token cap per LLM call.")] = 4096,
    request_timeout: Annotated[float, typer.Option("--request_timeout", "--request-timeout",
                                                   help="Per-request timeout of the OpenAI client, seconds.")] = 120.0,
    max_retries: Annotated[int, typer.Option("--max_retries", "--max-retries",
                                             help="Transport retries of the OpenAI client itself.")] = 2,
    extra_body: Annotated[str | None, typer.Option("--extra_body", "--extra-body", help="JSON merged into every request "
                                                   "body, e.g. '{\"chat_template_kwargs\": {\"enable_thinking\": false}}' "
                                                   "for Qwen3 thinking models.")] = None,
    out: Annotated[Path, typer.Option("--out", help="Output folder (accepted.jsonl, rejected.jsonl, report.json, "
                                      "manifest.json, checkpoints.sqlite).")] = Path("runs/synthesis"),
    resume: Annotated[bool, typer.Option("--resume", help="Continue a killed run in --out (same settings, else refused).")] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Discard a run with other settings already in --out.")] = False,
    seed: Annotated[int, typer.Option("--seed", help="Master seed (offline runs are deterministic given it).")] = 0,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Samples in flight (offline is CPU-bound: keep 1; "
                                             "raise it for an LLM endpoint).")] = 1,
) -> None:
    """Synthesize skill-aligned, execution-verified variants of seed tasks.

    Each variant keeps its seed's profile and information structure, is re-executed and checked by
    the verdict, and (with --backbone llm and the judge stage) scored by an LLM judge with one refine
    round. Exit code 2 on bad input or an unreachable endpoint, with one error line.
    """
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from rods_agents.run.context import LLM_STAGES, ContextError, SynthesisContext
    from rods_cli.common import user_errors

    with user_errors():
        if backbone not in ("offline", "llm"):
            raise InputError(f"--backbone must be 'offline' or 'llm' (got {backbone!r})")
        if backbone == "llm" and not model:
            raise InputError("--backbone llm needs at least one --model")
        stages = [s.strip() for s in llm_stages.split(",") if s.strip()]
        if set(stages) - set(LLM_STAGES):
            raise InputError(f"--llm_stages: unknown stage(s) {sorted(set(stages) - set(LLM_STAGES))}; "
                             f"choose from {','.join(LLM_STAGES)}")
        for flag, value in (("--variants_per_seed", variants_per_seed), ("--concurrency", concurrency)):
            if value < 1:
                raise InputError(f"{flag} must be >= 1 (got {value})")
        try:
            body = json.loads(extra_body) if extra_body else None
        except json.JSONDecodeError as exc:
            raise InputError(f"--extra_body: not JSON ({exc.msg})") from None
        if body is not None and not isinstance(body, dict):
            raise InputError("--extra_body must be a JSON object")
        console = Console(stderr=True)
        seed_tasks = select_seeds(seeds, num_seeds, seed)
        try:
            ctx = SynthesisContext(seed=seed, variants_per_seed=variants_per_seed, backbone=backbone,
                                   models=list(model or []), base_url=base_url, concurrency=concurrency,
                                   llm_stages=stages, max_tokens=max_tokens, request_timeout_s=request_timeout,
                                   client_max_retries=max_retries, extra_body=body)
        except ContextError as exc:
            raise InputError(str(exc)) from None
        prepare_out_dir(out, run_manifest(seed_tasks, ctx), resume, overwrite, check_only=True)  # refuse before any work
        preflight_endpoints(ctx)  # an unreachable endpoint: one line naming the URL, exit 2, nothing written
        total = len(seed_tasks) * variants_per_seed
        with Progress(TextColumn("[bold]synthesize"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                      TimeElapsedColumn(), console=console, transient=False) as progress:
            bar = progress.add_task("", total=total)

            def on_event(event: dict) -> None:
                if event.get("stage") == "done":
                    progress.advance(bar)
                progress.update(bar, description=f"{event.get('sample_id', '')} {event.get('stage')}:{event.get('status')}")

            result = run_samples(seed_tasks, ctx, out, resume=resume, on_event=on_event, overwrite=overwrite)
    rep = result.report
    table = Table(title=f"rods synthesize -> {out}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key in ("samples", "accepted", "rejected", "acceptance_rate", "patch_share", "distinct_seeds_accepted",
                "llm_calls_per_accepted", "wall_s"):
        table.add_row(key, str(rep.get(key)))
    for reason, n in rep.get("rejections_by_reason", {}).items():
        table.add_row(f"rejected: {reason}", str(n))
    if rep.get("llm", {}).get("total", {}).get("calls"):
        total = rep["llm"]["total"]
        table.add_row("llm calls / prompt tokens / completion tokens",
                      f"{total['calls']} / {total['prompt_tokens']} / {total['completion_tokens']}")
        table.add_row("llm unreachable / invalid output",
                      f"{rep['llm_failures']['llm_unreachable']} / {rep['llm_failures']['llm_invalid_output']}")
    for src in ("user", "call", "state", "composed"):
        table.add_row(f"values from {src} (seeds / variants)",
                      f"{rep['value_sources']['seeds'][src]:.2f} / {rep['value_sources']['variants'][src]:.2f}")
    Console().print(table)


def main() -> None:  # pragma: no cover - `python -m rods_cli.synthesize`
    typer.run(synthesize)


if __name__ == "__main__":  # pragma: no cover
    logging.basicConfig(level=logging.WARNING)
    main()
