"""Curriculum overhead: boundary detection + replay-buffer updates, against a tiny-cpu training step.

What the trainer does, per size N of the active pool (half human seeds, half generated, P_max = N/2):

* per generation batch: ``detector.record`` of G groups x K rollouts (gathered rewards);
* per epoch boundary: ``partition``, ``select_seeds`` (quotas, cooldown), ``enqueue`` of the
  synthesized variants (beta * N of them, so injection is at its cap), ``on_epoch_boundary``
  (injection, burn-in, drift, pruning back to P_max), ``active_tasks``;
* per checkpoint: ``state_dict`` + JSON encoding (stand-in tasks: real tasks add their own size).

Tasks are lightweight stand-ins (a pydantic model with only an ``id``): the buffer never looks
inside a task, and 10^6 full BFCL tasks would measure task construction, not the curriculum.

The step time is the mean step of a real run with ``--run-dir`` (``rods train`` writes it), or
``--step-seconds``; otherwise it is measured in this run as the forward +
backward of a tiny Qwen2 (hidden 64, 2 layers, vocab 522: the tiny-cpu model) on 8 x 256 tokens. A
real GRPO step also generates the rollouts, so that is a lower bound on a step and the fractions
here are upper bounds. ``per step`` amortizes the boundary over the epoch's steps (N / G).

    .venv/bin/python benchmarks/curriculum_overhead.py [--sizes 1000 10000 100000 1000000] [--step-seconds S]
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import time
import zlib
from pathlib import Path

from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trainer.buffer import BufferConfig, ReplayBuffer  # noqa: E402
from trainer.detection import BoundaryDetector  # noqa: E402

CATS = ("base", "miss_func", "miss_param", "long_context")


class StubTask(BaseModel):
    id: str


def tiny_step_seconds(reps: int = 7) -> float:
    """Fastest forward+backward time of the tiny-cpu Qwen2 on a batch of 8 x 256 tokens."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    cfg = Qwen2Config(vocab_size=522, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
                      tie_word_embeddings=True)
    model = Qwen2ForCausalLM(cfg)
    ids = torch.randint(0, cfg.vocab_size, (8, 256))
    times = []
    for i in range(reps + 1):
        t0 = time.perf_counter()
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        model.zero_grad(set_to_none=True)
        if i:  # the first call warms up
            times.append(time.perf_counter() - t0)
    return min(times)  # the least-disturbed run: a shorter step makes the fractions conservative


def bench_size(n: int, k: int, groups: int, n_seeds_out: int, rng: random.Random) -> dict:
    half = n // 2
    seeds = [StubTask(id=f"multi_turn_{CATS[i % 4]}_{i}") for i in range(half)]
    buf = ReplayBuffer(seeds, BufferConfig(beta=1.0, p_max=n - half, max_queue=n), task_model=StubTask)
    det = BoundaryDetector()
    buf.enqueue([StubTask(id=f"multi_turn_{CATS[i % 4]}_{i}__rods_g{i}") for i in range(n - half)])
    buf.on_epoch_boundary(0, det)  # setup: fill the generated half at once
    buf.config = BufferConfig(beta=0.2, p_max=n - half, max_queue=n)  # RODS defaults from here on
    assert len(buf) == n

    # gathered rewards: every task once per epoch, G groups of K per generation batch (same pattern each epoch)
    patterns = [[float(rng.random() < p) for _ in range(k)] for p in (0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0) for _ in range(8)]
    ids = buf.active_ids()
    batches = []
    for b in range(0, n, groups):
        chunk = ids[b : b + groups]
        rows = [t for t in chunk for _ in range(k)]
        rewards = [r for t in chunk for r in patterns[zlib.crc32(t.encode()) % len(patterns)]]
        batches.append((rows, rewards))
    for step, (rows, rewards) in enumerate(batches):  # epoch 1: first sight of every task (untimed)
        det.record(step, 1, rows, rewards, k)
    gc.collect()
    t0 = time.perf_counter()
    for step, (rows, rewards) in enumerate(batches, start=len(batches)):  # epoch 2: steady state
        det.record(step, 2, rows, rewards, k)
    record_epoch = time.perf_counter() - t0
    record_batch = record_epoch / len(batches)

    variants = [StubTask(id=f"multi_turn_{CATS[i % 4]}_{i}__rods_h{i}") for i in range(int(0.2 * n))]
    timings = {}
    gc.collect()
    t0 = time.perf_counter()
    part = det.partition(buf.active_ids())
    timings["partition"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    sel = det.select_seeds(n_seeds_out, cooldown=1, task_ids=buf.active_ids())
    timings["select_seeds"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    buf.enqueue(variants, epoch=2)
    timings["enqueue"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    report = buf.on_epoch_boundary(3, det)
    timings["on_epoch_boundary"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    pool = buf.active_tasks()
    timings["active_tasks"] = time.perf_counter() - t0
    boundary = sum(timings.values())
    gc.collect()
    t0 = time.perf_counter()
    blob = json.dumps({"buffer": buf.state_dict(), "detector": det.state_dict()})
    checkpoint = time.perf_counter() - t0
    assert len(pool) <= n and buf.n_generated <= n - half
    return {
        "pool": n, "k": k, "groups_per_batch": groups, "record_batch_s": record_batch, "record_epoch_s": record_epoch,
        **{f"{k_}_s": v for k_, v in timings.items()}, "boundary_s": boundary, "checkpoint_s": checkpoint,
        "checkpoint_mb": len(blob) / 1e6, "steps_per_epoch": len(batches),
        "boundary_zone": part.counts["boundary"], "seeds": len(sel.seeds), "injected": len(report.injected),
        "retired": len(report.retired),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10**3, 10**4, 10**5, 10**6])
    ap.add_argument("--k", type=int, default=16, help="rollouts per task (GRPO num_generations)")
    ap.add_argument("--groups_per_batch", "--groups-per-batch", type=int, default=32, help="tasks per generation batch (paper: 32)")
    ap.add_argument("--seeds", type=int, default=64, help="seeds selected per boundary")
    ap.add_argument("--step_seconds", "--step-seconds", type=float, default=None, help="training step time; measured if omitted")
    ap.add_argument("--run_dir", "--run-dir", type=Path, default=None,
                    help="a `rods train` output_dir: use its measured mean step time (rods_summary.json)")
    args = ap.parse_args()
    console = Console(width=180)

    if args.run_dir is not None:
        summary = json.loads((args.run_dir / "rods_summary.json").read_text())
        args.step_seconds = float(summary["step_seconds_mean"])
        step_src = f"mean GRPO step of {args.run_dir} (rods_summary.json: rollouts + update)"
    if args.step_seconds is None:
        step_s, step_src = tiny_step_seconds(), "measured in this run: tiny Qwen2 (hidden 64, 2 layers) fwd+bwd, 8 x 256 tokens, fastest of 7"
    else:
        step_s = args.step_seconds
        step_src = step_src if args.run_dir is not None else "given by --step-seconds"
    console.print(f"step time {step_s * 1e3:.1f} ms ({step_src})")

    rng = random.Random(0)
    rows = []
    for n in args.sizes:
        r = bench_size(n, args.k, args.groups_per_batch, args.seeds, rng)
        r["boundary_over_step"] = r["boundary_s"] / step_s
        r["record_over_step"] = r["record_batch_s"] / step_s
        r["per_step_over_step"] = (r["record_batch_s"] + r["boundary_s"] / r["steps_per_epoch"]) / step_s
        rows.append(r)

    table = Table(title=f"curriculum overhead (K={args.k}, {args.groups_per_batch} groups/batch, step {step_s * 1e3:.1f} ms)")
    for col in ("pool", "record/batch", "partition", "select", "enqueue", "boundary upd.", "boundary total",
                "checkpoint", "record / step", "boundary / step", "per step (amortized)"):
        table.add_column(col, justify="right")
    ms = lambda s: f"{s * 1e3:.2f} ms"  # noqa: E731
    pct = lambda x: f"{100 * x:.2f}%"  # noqa: E731
    for r in rows:
        table.add_row(f"{r['pool']:,}", ms(r["record_batch_s"]), ms(r["partition_s"]), ms(r["select_seeds_s"]),
                      ms(r["enqueue_s"]), ms(r["on_epoch_boundary_s"]), ms(r["boundary_s"]),
                      f"{ms(r['checkpoint_s'])} ({r['checkpoint_mb']:.1f} MB)", pct(r["record_over_step"]),
                      pct(r["boundary_over_step"]), pct(r["per_step_over_step"]))
    console.print(table)
    console.print("boundary / step: the whole epoch-boundary update as a fraction of one step (paid once per epoch);"
                  " per step: record of one batch + the boundary spread over the epoch's N/G steps.")
    print(json.dumps({"benchmark": "curriculum_overhead", "step_seconds": step_s, "step_source": step_src,
                      "k": args.k, "groups_per_batch": args.groups_per_batch, "results": rows}))


if __name__ == "__main__":
    main()
