"""Rollout throughput of the tiny model: transformers ``generate`` vs vLLM (colocate-style, in process), one run.

The prompts are what a GRPO generation batch of the tiny CPU recipe sends: its first seed tasks (base,
GorillaFileSystem), rendered with the chat template and the turn's tools (~3.7k tokens each), K copies per task. Each
backend generates one batched step per measurement, sampled at temperature 1.0 with a cap of ``--new-tokens``:

* ``hf``: :class:`trainer.rollout.HFGenerator`, the CPU rollout path of ``rods train`` (equal-length prompts batched
  without padding);
* ``vllm``: an in-process ``vllm.LLM`` on the same model folder, as TRL's colocate mode builds it, after
  :func:`trainer.vllm_cpu.prepare_vllm_cpu` (1 GiB KV cache, eager, oneDNN linear off); prompts go in as token ids.

tokens/s = generated tokens (up to the first EOS, as the rollout keeps them) / wall seconds of the batched call,
prefill included; the median of ``--reps`` measurements after one warm-up call per backend. vLLM's prefix cache is
emptied before every measured call, so only the K copies inside the batch share their prompt, as in a GRPO batch of
fresh tasks (later turns of a real episode also reuse the cached prefix; that gain is not counted here). The ratio is measured in
this run. vLLM writes compile caches and socket files: TMPDIR and its caches point into a scratch folder that is
removed at exit. Run it from the vLLM tier:

    .venv-vllm/bin/python benchmarks/rollout_throughput.py [--tasks 2] [--k 4] [--new-tokens 32 128] [--reps 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def scratch_env() -> Path:
    """Point TMPDIR and vLLM/torch caches into a folder removed at exit (set before torch/vLLM load)."""
    scratch = Path(tempfile.mkdtemp(prefix="rods-rollout-bench-"))
    for sub in ("tmp", "cache"):
        (scratch / sub).mkdir()
    os.environ.update({"TMPDIR": str(scratch / "tmp"), "VLLM_CACHE_ROOT": str(scratch / "cache" / "vllm"),
                       "TORCHINDUCTOR_CACHE_DIR": str(scratch / "cache" / "inductor"),
                       "TRITON_CACHE_DIR": str(scratch / "cache" / "triton"), "HF_HUB_OFFLINE": "1",
                       "TRANSFORMERS_OFFLINE": "1", "VLLM_LOGGING_LEVEL": "ERROR"})
    tempfile.tempdir = None  # re-read TMPDIR
    return scratch


def batch_prompts(n_tasks: int, k: int) -> tuple[list[list[int]], str]:
    """K copies of the first user turn of the tiny recipe's first seed tasks, as token ids."""
    from transformers import AutoTokenizer

    from envs.dataset import load_tasks
    from envs.tools import tools_for_turn
    from trainer.config import RODSConfig
    from trainer.grpo import chat_tokenizer
    from trainer.tiny_model import ensure_tiny_model

    path = str(ensure_tiny_model())
    tok = AutoTokenizer.from_pretrained(path, padding_side="left")
    args = RODSConfig(output_dir=tempfile.mkdtemp(), use_cpu=True, bf16=False, report_to="none")
    chat = chat_tokenizer(tok, args)
    tasks = [t for t in load_tasks("train", ["base"]) if t.involved_classes == ["GorillaFileSystem"]][:n_tasks]
    prompts = [chat.prompt_ids(t.user_messages(0), tools_for_turn(t, 0)) for t in tasks]
    return [p for p in prompts for _ in range(k)], path


def measure(fn, reps: int, before=None) -> tuple[float, int]:
    fn()  # warm-up
    runs = []
    for _ in range(reps):
        if before is not None:
            before()
        t0 = time.perf_counter()
        tokens = fn()
        runs.append((time.perf_counter() - t0, tokens))
    seconds = statistics.median(s for s, _ in runs)
    tokens = int(statistics.median(n for _, n in runs))
    return seconds, tokens


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, default=2, help="seed tasks per batch (the recipe's per-step tasks)")
    ap.add_argument("--k", type=int, default=4, help="rollouts per task (num_generations)")
    ap.add_argument("--new_tokens", "--new-tokens", type=int, nargs="+", default=[32, 128], help="token cap per rollout step")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    scratch = scratch_env()
    try:
        run(args)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run(args: argparse.Namespace) -> None:
    import torch
    from rich.console import Console
    from rich.table import Table

    from trainer.rollout import HFGenerator
    from trainer.vllm_cpu import prepare_vllm_cpu

    torch.manual_seed(0)
    prompts, path = batch_prompts(args.tasks, args.k)
    prompt_tokens = sum(map(len, prompts))

    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    t0 = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    hf_load = time.perf_counter() - t0
    hf = HFGenerator(model, tok, temperature=1.0)

    prepare_vllm_cpu()
    from vllm import LLM, SamplingParams

    t0 = time.perf_counter()
    llm = LLM(model=path, max_model_len=8192, seed=0, max_num_batched_tokens=4096, gpu_memory_utilization=0.3)
    vllm_load = time.perf_counter() - t0
    eos = tok.eos_token_id

    def hf_step(cap: int):
        return lambda: sum(len(g.ids) for g in hf.generate(prompts, [cap] * len(prompts)))

    def vllm_step(cap: int):
        params = SamplingParams(temperature=1.0, max_tokens=cap)

        def step() -> int:
            outs = llm.generate([{"prompt_token_ids": p} for p in prompts], params, use_tqdm=False)
            total = 0
            for o in outs:
                ids = list(o.outputs[0].token_ids)
                total += ids.index(eos) + 1 if eos in ids else len(ids)
            return total

        return step

    rows = []
    for cap in args.new_tokens:
        for backend, fn, before in (("hf", hf_step(cap), None), ("vllm", vllm_step(cap), llm.reset_prefix_cache)):
            seconds, tokens = measure(fn, args.reps, before)
            rows.append({"backend": backend, "new_tokens_cap": cap, "seconds": round(seconds, 4), "tokens": tokens,
                         "tokens_per_s": round(tokens / seconds, 1)})

    table = Table(title=f"Rollout step of {len(prompts)} prompts ({args.tasks} tasks x K={args.k}, "
                        f"{prompt_tokens // len(prompts)} prompt tokens each), median of {args.reps}")
    for col in ("backend", "cap", "generated tokens", "seconds", "tokens/s", "vllm / hf"):
        table.add_column(col, justify="left" if col == "backend" else "right")
    ratios = {}
    for cap in args.new_tokens:
        hf_row, v_row = (next(r for r in rows if r["backend"] == b and r["new_tokens_cap"] == cap) for b in ("hf", "vllm"))
        ratios[str(cap)] = round(v_row["tokens_per_s"] / hf_row["tokens_per_s"], 2)
        for r in (hf_row, v_row):
            table.add_row(r["backend"], str(cap), str(r["tokens"]), f"{r['seconds']:.3f}", f"{r['tokens_per_s']:.1f}",
                          f"{ratios[str(cap)]:.2f}x" if r is v_row else "", end_section=r is v_row)
    console = Console()
    console.print(table)
    console.print(f"load: transformers {hf_load:.1f} s, vllm.LLM {vllm_load:.1f} s (eager, 1 GiB KV cache); "
                  f"threads: torch {torch.get_num_threads()}")
    print(json.dumps({"benchmark": "rollout_throughput", "prompts": len(prompts), "prompt_tokens": prompt_tokens,
                      "reps": args.reps, "rows": rows, "vllm_over_hf": ratios,
                      "load_s": {"hf": round(hf_load, 2), "vllm": round(vllm_load, 2)}}))


if __name__ == "__main__":
    main()
