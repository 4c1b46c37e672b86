"""Synthesis overlapped with training vs synchronous vs no synthesis latency, on the tiny closed loop (CPU).

Three runs of ``recipes/tiny-cpu.yaml`` (``synthetic_boundary`` shaping on the README's four seeds, so
boundary tasks exist; the same seeds, variants, pool and steps in all three) that differ only in how
synthesis meets training:

* ``overlapped``: every LLM stage call of the graph (plan, rewrite, patch, judge, refine nodes) first
  waits ``--latency`` seconds; seeds are submitted after the generation batch that found them
  (``synthesis_dispatch: step``), rounds run side by side under ``synthesis_concurrency``, and the
  boundary waits at most ``--wait`` seconds (the GPU recipe's 60 by default) for what is still running;
* ``synchronous``: every LLM stage call of the graph (plan, rewrite, patch, judge, refine nodes) first
  waits ``--latency`` seconds, seeds are chosen at the boundary and the boundary waits for the round
  (``synthesis_dispatch: boundary``, ``synthesis_wait_s: -1``): training idles for the whole round;
* ``no-synthesis``: the same variants handed over instantly at the same boundaries (replayed from the
  two runs above), no graph and no server: the epoch time without synthesis, same pool and steps (the
  reference the ratios are taken against).

The latency is a sleep in front of each LLM-stage node call (``graphs.synthesis.guarded``), inside the
graph's own per-sample concurrency, i.e. where a server's answer time would be spent; the number of
simulated calls is reported (0 would mean the patch missed the graph: the run then stops). Reported:
training wall time per epoch and its ratio to ``no-synthesis``, steps, variants injected, the boundary
waits, and the most synthesis rounds in flight at once.

    .venv/bin/python benchmarks/synthesis_overlap.py [--latency 2] [--wait 60] [--epochs 2] [--task_ids ...]

Takes ~5 minutes on 2 idle CPU cores (three tiny training runs); run nothing else beside it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import graphs.driver as driver  # noqa: E402
import graphs.synthesis as gs  # noqa: E402
import trainer.synthesis_bridge as bridge  # noqa: E402
from rods_cli.train import parse_recipe  # noqa: E402
from trainer.grpo import train  # noqa: E402
from trainer.synthesis_bridge import SynthesisOutcome  # noqa: E402

SEEDS = ["multi_turn_base_29", "multi_turn_base_38", "multi_turn_base_1", "multi_turn_base_3"]
ALL_GFS = [*SEEDS, "multi_turn_base_9", "multi_turn_base_16", "multi_turn_base_26"]  # synthetic_boundary: 29, 38
LLM_STAGES = {"plan", "rewrite", "patch", "judge", "refine"}


class CallLatency:
    """Wraps the graph's node guard so every LLM-stage node call first sleeps ``latency`` seconds."""

    def __init__(self):
        self.latency = 0.0
        self.calls = 0
        self._lock = threading.Lock()
        self._guarded = gs.guarded

    def install(self) -> None:
        real = self._guarded

        def guarded(stage, node):
            inner = real(stage, node)
            if stage not in LLM_STAGES:
                return inner

            def slow(state, runtime):  # LangGraph passes runtime by the signature it sees
                if self.latency > 0:
                    with self._lock:
                        self.calls += 1
                    time.sleep(self.latency)
                return inner(state, runtime)

            return slow

        gs.guarded = guarded


class PeakRounds:
    """Records the background synthesizers the trainer builds (for ``peak_in_flight``)."""

    def __init__(self):
        self.made: list = []
        real = bridge.background_synthesizer

        def make(*a, **kw):
            bg = real(*a, **kw)
            self.made.append(bg)
            return bg

        bridge.background_synthesizer = make


class Replay:
    """Records each seed's accepted variants per epoch from the graph runs; replays them instantly."""

    def __init__(self):
        self.variants: dict[tuple[str, int], list] = {}
        real = driver.synthesize_resumable

        def record(seeds, ctx, db_path, **kw):
            res = real(seeds, ctx, db_path, **kw)
            epoch = int(Path(db_path).name.split("-")[1][1:])  # round-e<epoch>-<key>.sqlite
            for s in seeds:
                self.variants.setdefault((s.id, epoch), [t for t in res.accepted if t.id.startswith(f"{s.id}__")])
            return res

        driver.synthesize_resumable = record

    def __call__(self, seeds, epoch):
        missing = [s.id for s in seeds if (s.id, epoch) not in self.variants]
        if missing:
            raise SystemExit(f"no-synthesis: seeds {missing} of epoch {epoch} were not synthesized by the other runs")
        return SynthesisOutcome(seeds=[s.id for s in seeds], accepted=[t for s in seeds for t in
                                self.variants[(s.id, epoch)]], attempted=len(seeds))


def run(name: str, out: Path, latency: float, overrides: list[str], epochs: int, hook: CallLatency,
        peaks: PeakRounds, synthesizer=None, seeds: list[str] = SEEDS) -> dict:
    args = parse_recipe(ROOT / "recipes" / "tiny-cpu.yaml", [
        "--output_dir", str(out / name), "--reward_shaping", "synthetic_boundary", "--task_ids", *seeds,
        "--num_seed_tasks", "0",
        "--num_train_epochs", str(epochs), "--save_strategy", "no", "--disable_tqdm", "true", *overrides])
    hook.latency, hook.calls = latency, 0
    peaks.made.clear()
    summary = train(args, synthesizer=synthesizer)
    if latency > 0 and hook.calls == 0:
        raise SystemExit(f"{name}: no LLM-stage call was delayed (the latency hook missed the graph)")
    reports = [json.loads(ln) for ln in (out / name / "curriculum.jsonl").read_text().splitlines() if ln.strip()]
    return {"name": name, "epochs": summary["epochs"], "steps": summary["global_step"],
            "train_s": round(summary["train_seconds"], 2),
            "epoch_s": round(summary["train_seconds"] / max(1, summary["epochs"]), 2),
            "boundary_wait_s": round(sum(r.get("synthesis_wait_seconds", 0.0) for r in reports), 2),
            "injected": sum(len(r["injected"]) for r in reports),
            "llm_calls": hook.calls, "rounds_in_flight_max": max((b.peak_in_flight for b in peaks.made), default=0)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=2.0, help="seconds per simulated LLM call (a server's answer)")
    ap.add_argument("--wait", type=float, default=60.0, help="synthesis_wait_s of the overlapped run")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--task_ids", nargs="+", default=ALL_GFS,
                    help="Seed tasks (default: all 7 GorillaFileSystem train tasks: 4 generation batches per epoch, "
                    "so a round dispatched early in the epoch has the rest of it to finish)")
    opts = ap.parse_args()
    hook, peaks, replay = CallLatency(), PeakRounds(), Replay()
    hook.install()
    from trainer.tiny_model import ensure_tiny_model

    ensure_tiny_model()  # one-time costs outside the timed runs (the first run would pay them alone)
    gs.warm_caches()
    with tempfile.TemporaryDirectory(prefix="rods-overlap-") as tmp:
        out = Path(tmp)
        sync = ["--synthesis_dispatch", "boundary", "--synthesis_wait_s", "-1"]
        synchronous = run("synchronous", out, opts.latency, sync, opts.epochs, hook, peaks, seeds=opts.task_ids)
        overlapped = run("overlapped", out, opts.latency, ["--synthesis_dispatch", "step", "--synthesis_wait_s",
                                                           str(opts.wait)], opts.epochs, hook, peaks, seeds=opts.task_ids)
        rows = [overlapped, synchronous,
                run("no-synthesis", out, 0.0, sync, opts.epochs, hook, peaks, synthesizer=replay, seeds=opts.task_ids)]
    base = rows[2]["epoch_s"]
    table = Table(title=f"tiny closed loop, {opts.epochs} epochs, {opts.latency:g} s per simulated LLM call")
    for col in ("run", "steps", "injected", "LLM calls", "rounds in flight", "boundary wait s", "s per epoch",
                "vs no-synthesis"):
        table.add_column(col, justify="right")
    for r in rows:
        r["ratio"] = round(r["epoch_s"] / base, 3)
        table.add_row(r["name"], str(r["steps"]), str(r["injected"]), str(r["llm_calls"]),
                      str(r["rounds_in_flight_max"]), f"{r['boundary_wait_s']:.1f}", f"{r['epoch_s']:.1f}",
                      f"{r['ratio']:.2f}x")
    Console().print(table)
    print(json.dumps({"benchmark": "synthesis_overlap", "latency_per_call_s": opts.latency, "wait_s": opts.wait,
                      "epochs": opts.epochs, "overlapped_vs_no_synthesis": rows[0]["ratio"],
                      "synchronous_vs_no_synthesis": rows[1]["ratio"], "runs": rows}))


if __name__ == "__main__":
    main()
