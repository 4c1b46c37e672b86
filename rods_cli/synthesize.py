"""`rods synthesize`: grow verified variants of seed tasks (registered by rods_cli/main.py).

Samples run through the one sample driver (:mod:`graphs.driver`): each (seed, variant) on its own
checkpointer thread in ``OUT/checkpoints.sqlite`` with synchronous durability; a finished sample's
result and node-by-node updates go to that file's ``rods_samples`` table and its checkpoints are
pruned (``--keep_checkpoints`` keeps them), so the file stays small and ``rods trace OUT SAMPLE``
can step through any sample. Samples run (and are de-duplicated) in issue order: seed index, then
variant. Outputs are rewritten atomically after every finished sample; an accepted sample once
written to ``accepted.jsonl`` stays there (a later near-duplicate is rejected instead).

``OUT/manifest.json`` records the run's settings. Running the same command again continues the
run (with or without ``--resume``: finished samples are read back, none is lost or re-paid);
``--resume`` with other settings, or a fresh run into a folder holding another run, is refused
unless ``--overwrite`` is given. Ctrl-C stops after the node in flight, says how many samples are
saved and the command that continues, and exits 130.

With ``--backbone llm`` every endpoint is checked first (``GET {base_url}/models``, short timeout):
an unreachable one is one error line naming the URL and exit code 2, before any work. A run in
which most samples end on an ``llm_*`` reason (the endpoint answered 500s or prose) exits 1 with
one line naming the reason counts.

:func:`run_samples` takes ``interrupt_after`` / ``on_interrupt`` (passed to the driver): the graph
pauses after that node (its checkpoint written) and calls ``on_interrupt(n)`` at the n-th pause. The
command never sets them; tests do, to kill a run at a deterministic point and resume it.
"""

from __future__ import annotations

import difflib
import json
import logging
import random
import shlex
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from envs.task import InputError, Task, atomic_write_text, read_tasks

log = logging.getLogger("rods.synthesize")


HELD_OUT = ("test",)


def _split_list(values: list[str] | None) -> list[str]:
    """``['a,b', 'c']`` -> ``['a', 'b', 'c']`` (a repeated option or a comma-separated list)."""
    return [v.strip() for item in values or [] for v in str(item).split(",") if v.strip()]


def select_seeds(spec: str, num_seeds: int | None, seed: int = 0, categories: list[str] | None = None,
                 ids: list[str] | None = None) -> list[Task]:
    """``train`` (the train split) or a JSONL file, filtered by ``categories`` and ``ids``; then N seeds
    dealt round-robin over categories (``ids`` given: those seeds, in that order, ``num_seeds`` ignored)."""
    if spec in HELD_OUT:
        raise InputError(f"--seeds {spec}: the test split is held out for evaluation (rods eval --split test); "
                         "synthesize from 'train' or a JSONL file of seed tasks")
    if spec == "train":
        from envs.dataset import load_split

        tasks = load_split("train")
    else:
        tasks = read_tasks(spec)
    if num_seeds is not None and num_seeds < 1:
        raise InputError(f"--num_seeds must be >= 1 (got {num_seeds})")
    if not tasks:
        raise InputError(f"--seeds {spec}: no seed tasks")
    cats = _split_list(categories)
    if cats:
        known = sorted({t.category for t in tasks})
        unknown = [c for c in cats if c not in known]
        if unknown:
            raise InputError(f"--categories: {', '.join(unknown)} not among the seeds' categories ({', '.join(known)})")
        tasks = [t for t in tasks if t.category in cats]
    wanted = list(dict.fromkeys(_split_list(ids)))
    if wanted:
        by_id = {t.id: t for t in tasks}
        for i in wanted:
            if i not in by_id:
                match = difflib.get_close_matches(i, list(by_id), n=1, cutoff=0.6)
                where = f"--seeds {spec}" + (f" (categories {', '.join(cats)})" if cats else "")
                raise InputError(f"--id {i}: no such seed in {where}" + (f"; did you mean {match[0]}?" if match else ""))
        return [by_id[i] for i in wanted]
    if num_seeds is None or num_seeds >= len(tasks):
        return tasks
    by_cat: dict[str, list[Task]] = {}
    for t in tasks:
        by_cat.setdefault(t.category, []).append(t)
    rng = random.Random(seed)
    for lst in by_cat.values():
        rng.shuffle(lst)
    picked: list[Task] = []
    cats_in = sorted(by_cat)
    while len(picked) < num_seeds:
        for c in cats_in:
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


@dataclass
class OutDirPlan:
    """What a run does with its ``--out``: continue the run there (``resuming``) or start fresh."""

    resuming: bool
    finished: int = 0  # samples already finished there


def _finished_count(out: Path) -> int:
    db = out / "checkpoints.sqlite"
    if not db.exists():
        return 0
    import sqlite3

    from graphs.driver import SAMPLES_TABLE

    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return int(conn.execute(f"SELECT COUNT(*) FROM {SAMPLES_TABLE}").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def prepare_out_dir(out: Path, manifest: dict, resume: bool, overwrite: bool = False,
                    check_only: bool = False) -> OutDirPlan:
    """Check ``out`` against ``manifest`` (InputError on a mismatch), clear it for a fresh run, write the manifest.

    The same settings continue the run there, ``--resume`` or not (nothing finished is thrown away);
    other settings are refused unless ``overwrite``. ``check_only`` raises the same errors and touches nothing."""
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: is a file, not a folder; name a folder for the run's outputs")
    old_path = out / MANIFEST
    old = None
    if old_path.exists():
        try:
            old = json.loads(old_path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise InputError(f"{old_path}: unreadable run manifest ({exc}); use another --out or --overwrite") from None
    has_run = any((out / name).exists() for name in RUN_FILES)
    if not overwrite:
        if resume and old is None and has_run:
            raise InputError(f"--resume: {out} holds a run without {MANIFEST}; cannot check its settings "
                             "(use another --out, or --overwrite to start over)")
        if old is not None and old != manifest:
            diff = sorted(k for k in set(old) | set(manifest) if old.get(k) != manifest.get(k))
            if resume:
                raise InputError(f"--resume: {out} was started with other settings: "
                                 + "; ".join(f"{k}: {_describe(old, k)} there, {_describe(manifest, k)} now" for k in diff)
                                 + " (resume with the same flags, or use another --out)")
            raise InputError(f"{out} holds another run ({', '.join(diff)} differ); use --resume with its settings, "
                             "another --out, or --overwrite")
        if old is None and has_run:
            raise InputError(f"{out} holds files of a run without a manifest; use another --out, or --overwrite")
    plan = OutDirPlan(resuming=not overwrite and old is not None, finished=0)
    if plan.resuming:
        plan.finished = _finished_count(out)
    if check_only:
        return plan
    if overwrite:
        for name in RUN_FILES:  # --overwrite: start over
            (out / name).unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(old_path, json.dumps(manifest, indent=2) + "\n")
    return plan


def run_samples(seeds: list[Task], ctx: Any, out: Path, resume: bool = False,
                on_event: Callable[[dict], None] | None = None, overwrite: bool = False,
                keep_checkpoints: bool = False, progress: Callable[[int, int], None] | None = None,
                interrupt_after: str | None = None, on_interrupt: Callable[[int], None] | None = None,
                stop: threading.Event | None = None) -> Any:
    """Run every (seed, variant) sample through :func:`graphs.driver.synthesize_resumable` into ``out``.

    Outputs are rewritten after every finished sample; on resume the published ``accepted.jsonl``
    is pre-loaded into the de-duplicator, so it only ever grows. ``progress(finished, total)`` is
    called after each sample (the Ctrl-C message reads it). ``stop`` (a :class:`threading.Event`): set, the samples
    in flight stop after their node and :class:`graphs.driver.SamplesStopped` is raised.
    """
    from graphs.driver import synthesize_resumable
    from graphs.results import Deduper
    from rods_agents.run.outputs import write_outputs

    plan = prepare_out_dir(out, run_manifest(seeds, ctx), resume, overwrite)
    dedupe = Deduper()
    if plan.resuming and (out / "accepted.jsonl").exists():
        for task in read_tasks(out / "accepted.jsonl"):  # published samples stay published
            dedupe.keep(task)
    total = len(seeds) * ctx.variants_per_seed
    run_info = {"seeds": len(seeds), "variants_per_seed": ctx.variants_per_seed, "seed": ctx.seed,
                "backbone": ctx.backbone, "models": list(ctx.models), "total": total}

    def flush(result: Any) -> None:
        report = result.report.dump() | {"run": run_info | {"finished": result.report.samples}}
        write_outputs(out, result.accepted, result.rejected, report)
        if progress:
            progress(result.report.samples, total)

    result = synthesize_resumable(seeds, ctx, out / "checkpoints.sqlite", dedupe=dedupe, on_result=flush,
                                  on_event=on_event, keep_checkpoints=keep_checkpoints,
                                  interrupt_after=interrupt_after, on_interrupt=on_interrupt, stop=stop)
    flush(result)
    result.report = result.report.model_copy(update={"run": run_info | {"finished": result.report.samples}})
    return result


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
    max_llm_calls: Annotated[int, typer.Option("--max_llm_calls", "--max-llm-calls", help="Hard bound on LLM calls per "
                                               "sample, retries included; a sample that reaches it ends rejected "
                                               "with its reasons.")] = 12,
    request_timeout: Annotated[float, typer.Option("--request_timeout", "--request-timeout",
                                                   help="Per-request timeout of the OpenAI client, seconds.")] = 120.0,
    max_retries: Annotated[int, typer.Option("--max_retries", "--max-retries",
                                             help="Transport retries of the OpenAI client itself.")] = 2,
    extra_body: Annotated[str | None, typer.Option("--extra_body", "--extra-body", help="JSON merged into every request "
                                                   "body, e.g. '{\"chat_template_kwargs\": {\"enable_thinking\": false}}' "
                                                   "for Qwen3 thinking models.")] = None,
    out: Annotated[Path, typer.Option("--out", help="Output folder (accepted.jsonl, rejected.jsonl, report.json, "
                                      "manifest.json, checkpoints.sqlite).")] = Path("runs/synthesis"),
    resume: Annotated[bool, typer.Option("--resume", help="Continue the run in --out (same settings, else refused); "
                                         "rerunning the same command continues it too.")] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Discard the run already in --out and start over.")] = False,
    seed: Annotated[int, typer.Option("--seed", help="Master seed (offline runs are deterministic given it).")] = 0,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Samples in flight, one per scenario (a scenario's samples run in order; "
                                             "offline is CPU-bound: keep 1; raise it for an LLM endpoint).")] = 1,
    categories: Annotated[list[str] | None, typer.Option("--categories", help="Only seeds of these categories "
                                                         "(comma-separated or repeated), e.g. base,miss_func.")] = None,
    ids: Annotated[list[str] | None, typer.Option("--id", help="Only these seed ids (repeat or comma-separate); "
                                                  "--num_seeds is then ignored.")] = None,
    keep_checkpoints: Annotated[bool, typer.Option("--keep_checkpoints", "--keep-checkpoints",
                                                   help="Keep every LangGraph checkpoint of finished samples (by "
                                                   "default a finished sample keeps only its result and node "
                                                   "updates, which rods trace shows).")] = False,
) -> None:
    """Synthesize skill-aligned, execution-verified variants of seed tasks.

    Each variant keeps its seed's profile and information structure, is re-executed and checked by
    the verdict, and (with --backbone llm and the judge stage) scored by an LLM judge with one refine
    round. Exit code 2 on bad input or an unreachable endpoint, with one error line; 1 when most
    samples failed on the LLM; 130 on Ctrl-C (the same command continues the run).
    """
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from rods_agents.run.context import LLM_STAGES, ContextError, SynthesisContext
    from rods_cli.common import err_console, user_errors

    with user_errors():
        if backbone not in ("offline", "llm"):
            raise InputError(f"--backbone must be 'offline' or 'llm' (got {backbone!r})")
        if backbone == "llm" and not model:
            raise InputError("--backbone llm needs at least one --model")
        stages = [s.strip() for s in llm_stages.split(",") if s.strip()]
        if set(stages) - set(LLM_STAGES):
            raise InputError(f"--llm_stages: unknown stage(s) {sorted(set(stages) - set(LLM_STAGES))}; "
                             f"choose from {','.join(LLM_STAGES)}")
        for flag, value in (("--variants_per_seed", variants_per_seed), ("--concurrency", concurrency),
                            ("--max_llm_calls", max_llm_calls)):
            if value < 1:
                raise InputError(f"{flag} must be >= 1 (got {value})")
        try:
            body = json.loads(extra_body) if extra_body else None
        except json.JSONDecodeError as exc:
            raise InputError(f"--extra_body: not JSON ({exc.msg})") from None
        if body is not None and not isinstance(body, dict):
            raise InputError("--extra_body must be a JSON object")
        if out.exists() and not out.is_dir():
            raise InputError(f"--out {out}: is a file, not a folder; name a folder for the run's outputs")
        console = Console(stderr=True)
        seed_tasks = select_seeds(seeds, num_seeds, seed, categories, ids)
        try:
            ctx = SynthesisContext(seed=seed, variants_per_seed=variants_per_seed, backbone=backbone,
                                   models=list(model or []), base_url=base_url, concurrency=concurrency,
                                   llm_stages=stages, max_tokens=max_tokens, max_llm_calls_per_sample=max_llm_calls,
                                   request_timeout_s=request_timeout,
                                   client_max_retries=max_retries, extra_body=body)
        except ContextError as exc:
            raise InputError(str(exc)) from None
        plan = prepare_out_dir(out, run_manifest(seed_tasks, ctx), resume, overwrite, check_only=True)  # refuse first
        preflight_endpoints(ctx)  # an unreachable endpoint: one line naming the URL, exit 2, nothing written
        total = len(seed_tasks) * variants_per_seed
        if plan.resuming and plan.finished:
            err_console.print(f"continuing the run in {out}: {plan.finished} of {total} samples already finished "
                              "(--overwrite starts over)", highlight=False, soft_wrap=True)
        done = [plan.finished if plan.resuming else 0]
        from graphs.driver import SamplesStopped

        stop = threading.Event()
        try:
            with ctrl_c_stops(stop), Progress(TextColumn("[bold]synthesize"), BarColumn(), MofNCompleteColumn(),
                          TextColumn("{task.description}"), TimeElapsedColumn(), console=console,
                          transient=False) as progress:
                bar = progress.add_task("", total=total)

                def on_event(event: dict) -> None:
                    if event.get("stage") == "done":
                        progress.advance(bar)
                    progress.update(bar, description=f"{event.get('sample_id', '')} "
                                                     f"{event.get('stage')}:{event.get('status')}")

                def on_progress(finished: int, _total: int) -> None:
                    done[0] = finished

                result = run_samples(seed_tasks, ctx, out, resume=resume, on_event=on_event, overwrite=overwrite,
                                     keep_checkpoints=keep_checkpoints, progress=on_progress, stop=stop)
        except (KeyboardInterrupt, SamplesStopped):
            again = resume_command(run_flags(seeds, num_seeds, variants_per_seed, backbone, model, base_url,
                                             llm_stages, seed, categories, ids, out))
            saved = max(done[0], _finished_count(out))  # a sample may finish between the last flush and Ctrl-C
            err_console.print(f"interrupted: {saved} of {total} samples finished and saved in {out}; "
                              f"continue with:\n  {again}", highlight=False, soft_wrap=True)
            raise typer.Exit(130) from None
    print_report(result.report, out)
    if result.report.mostly_llm_failures():
        counts = result.report.llm_failure_counts()
        err_console.print(f"error: {sum(counts.values())} of {result.report.samples} samples failed on the LLM ("
                          + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
                          + f"); see {out / 'rejected.jsonl'}", highlight=False, soft_wrap=True)
        raise typer.Exit(1)


@contextmanager
def ctrl_c_stops(stop: threading.Event) -> Iterator[None]:
    """While the run lasts, the first Ctrl-C sets ``stop`` (the samples in flight stop after their node, their
    checkpoint written) instead of raising KeyboardInterrupt wherever the main thread happens to be: raised inside
    LangGraph's executor it could leave the stream waiting on a future that never resolves, and the run hung after
    Ctrl-C (seen under load in CI). A second Ctrl-C raises KeyboardInterrupt at once. Off the main thread (an
    embedding caller) the handler is left alone."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_sigint(signum: int, frame: Any) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def run_flags(seeds: str, num_seeds: int, variants_per_seed: int, backbone: str, model: list[str] | None,
                      base_url: str | None, llm_stages: str, seed: int, categories: list[str] | None,
                      ids: list[str] | None, out: Path) -> list[str]:
    """The flags that define a run (its manifest), in the order a user types them."""
    args = ["--seeds", seeds, "--num_seeds", str(num_seeds), "--variants_per_seed", str(variants_per_seed)]
    if categories:
        args += ["--categories", ",".join(_split_list(categories))]
    if ids:
        args += ["--id", ",".join(_split_list(ids))]
    if seed:
        args += ["--seed", str(seed)]
    if backbone != "offline":
        args += ["--backbone", backbone, *[a for m in model or [] for a in ("--model", m)]]
        if base_url:
            args += ["--base_url", base_url]
        args += ["--llm_stages", llm_stages]
    return [*args, "--out", str(out)]


def resume_command(args: list[str]) -> str:
    """``rods synthesize ARGS --resume``, quoted for a shell."""
    return shlex.join(["rods", "synthesize", *args, "--resume"])


def _share(value: float) -> str:
    return "<0.01" if 0 < value < 0.005 else f"{value:.2f}"


def print_report(rep: Any, out: Path) -> None:
    """The run's table on stdout."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"rods synthesize -> {out}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key in ("samples", "accepted", "rejected", "acceptance_rate", "patch_share", "distinct_seeds_accepted",
                "llm_calls_per_accepted", "wall_s"):
        table.add_row(key, str(rep.get(key)))
    for reason, n in rep.rejections_by_reason.items():
        table.add_row(f"rejected: {reason}", str(n))
    if rep.llm.total.calls:
        total = rep.llm.total
        table.add_row("llm calls / prompt tokens / completion tokens",
                      f"{total.calls} / {total.prompt_tokens} / {total.completion_tokens}")
        table.add_row("llm unreachable / invalid output",
                      f"{rep.llm_failures.get('llm_unreachable', 0)} / {rep.llm_failures.get('llm_invalid_output', 0)}")
    vs = rep.value_sources
    for src in ("user", "call", "state", "composed"):  # all profiled seeds, so a run with 0 accepted still shows them
        table.add_row(f"values from {src} (seeds / accepted variants)",
                      f"{_share(vs.all_seeds.get(src, 0.0))} ({vs.all_seed_counts.get(src, 0)}) / "
                      f"{_share(vs.variants.get(src, 0.0))} ({vs.variant_counts.get(src, 0)})")
    Console().print(table)


def main() -> None:  # pragma: no cover - `python -m rods_cli.synthesize`
    typer.run(synthesize)


if __name__ == "__main__":  # pragma: no cover
    logging.basicConfig(level=logging.WARNING)
    main()
