"""Synthesis overlapped with training vs synchronous, on the tiny closed loop (real GRPO steps on CPU).

Three runs of ``recipes/tiny-cpu.yaml`` (``synthetic_boundary`` shaping on the README's four seeds,
so boundary tasks exist) that differ only in how synthesis meets training:

* ``no-latency``: the offline graph, answered at once (the cost of the loop without an LLM's wait);
* ``synchronous``: every round first waits ``--latency`` seconds (a synthesis server's answer time),
  seeds chosen at the boundary, the boundary waits for the round (``synthesis_wait_s: -1``): the
  old behaviour, GPUs idle for the whole round;
* ``overlapped``: the same latency, seeds submitted after the generation batch that found them
  (``synthesis_dispatch: step``), the boundary waits at most ``--wait`` seconds.

The latency is injected in front of the offline graph (a sleep per round), which stands in for a
server's per-round latency without an LLM that can answer the four structured stages. Reported:
training wall time per epoch (``train_seconds / epochs``) and steps, and the ratios to
``no-latency``; ``steps`` differ when a late round changes the pool.

    .venv/bin/python benchmarks/synthesis_overlap.py [--latency 8] [--wait 2] [--epochs 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rods_cli.train import parse_recipe  # noqa: E402
from trainer.grpo import train  # noqa: E402
from trainer.synthesis_bridge import _graph_synthesizer  # noqa: E402

SEEDS = ["multi_turn_base_29", "multi_turn_base_38", "multi_turn_base_1", "multi_turn_base_3"]


def run(name: str, out: Path, latency: float, overrides: list[str], epochs: int) -> dict:
    args = parse_recipe(ROOT / "recipes" / "tiny-cpu.yaml", [
        "--output_dir", str(out / name), "--reward_shaping", "synthetic_boundary", "--task_ids", *SEEDS,
        "--num_train_epochs", str(epochs), "--save_strategy", "no", "--disable_tqdm", "true", *overrides])
    graph = _graph_synthesizer(args)

    def slow(seeds, epoch):
        time.sleep(latency)
        return graph(seeds, epoch)

    summary = train(args, synthesizer=slow)
    reports = [json.loads(ln) for ln in (out / name / "curriculum.jsonl").read_text().splitlines() if ln.strip()]
    return {"name": name, "epochs": summary["epochs"], "steps": summary["global_step"],
            "train_s": summary["train_seconds"], "epoch_s": summary["train_seconds"] / max(1, summary["epochs"]),
            "boundary_wait_s": sum(r.get("synthesis_wait_seconds", 0.0) for r in reports),
            "injected": sum(len(r["injected"]) for r in reports)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=8.0, help="seconds per synthesis round (the server's answer)")
    ap.add_argument("--wait", type=float, default=2.0, help="synthesis_wait_s of the overlapped run")
    ap.add_argument("--epochs", type=int, default=3)
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="rods-overlap-") as tmp:
        out = Path(tmp)
        rows = [
            run("no-latency", out, 0.0, ["--synthesis_dispatch", "boundary", "--synthesis_wait_s", "-1"], opts.epochs),
            run("synchronous", out, opts.latency, ["--synthesis_dispatch", "boundary", "--synthesis_wait_s", "-1"],
                opts.epochs),
            run("overlapped", out, opts.latency, ["--synthesis_dispatch", "step", "--synthesis_wait_s",
                                                  str(opts.wait)], opts.epochs),
        ]
    base = rows[0]["epoch_s"]
    table = Table(title=f"tiny closed loop, {opts.epochs} epochs, {opts.latency:g} s synthesis latency per round")
    for col in ("run", "steps", "injected", "boundary wait s", "s per epoch", "vs no-latency"):
        table.add_column(col, justify="right")
    for r in rows:
        r["ratio"] = r["epoch_s"] / base
        table.add_row(r["name"], str(r["steps"]), str(r["injected"]), f"{r['boundary_wait_s']:.1f}",
                      f"{r['epoch_s']:.1f}", f"{r['ratio']:.2f}x")
    Console().print(table)
    print(json.dumps({"benchmark": "synthesis_overlap", "latency_s": opts.latency, "wait_s": opts.wait,
                      "epochs": opts.epochs, "runs": rows}))


if __name__ == "__main__":
    main()
