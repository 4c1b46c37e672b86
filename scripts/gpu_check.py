"""The prepared GPU check (run by scripts/gpu_check.sh): a few GRPO steps of recipes/qwen3-4b-rods.yaml on one GPU.

It builds a random-weight model of Qwen3-4B's architecture from its config (no download; the vocabulary is cut
to the local tiny tokenizer so every sampled id decodes), then trains it with the GPU recipe's settings (fp32
master weights + bf16, gradient checkpointing, token-level IS) on one base and one miss_func task through an
epoch boundary with offline synthesis (``synthetic_boundary`` reward shaping makes both tasks boundary tasks,
since random weights score 0). Generation is vLLM colocate when vLLM imports, else transformers ``generate``.

Prints a table and ONE JSON line: step time, rollout tokens/s, peak GPU memory, KV/activation headroom (what the
card has left after the peak, as KV-cache tokens of this model, and the activations measured against the
estimate), the share and relative size of the weight change, IS ratio stats (vLLM only), the recipe's rollout
sizing on 80 GB cards with the measured first-prompt lengths, and whether every miss_func episode showed the
evaluator's tools at every turn. ``--cpu`` runs the same code on a tiny model (the CPU rehearsal).

Only ``gpu_check.json`` is written to ``--out`` (the folder whose files come back); the model, the run and its
synthesis checkpoints go to ``--work`` (/tmp by default).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TASKS = ["multi_turn_base_38", "multi_turn_miss_func_38"]  # GorillaFileSystem; the miss_func one reveals rmdir at turn 1
KEYS = ["step_time", "rods/rollout_s", "rods/rollout_tokens_per_s", "rods/generate_calls", "completions/mean_length",
        "reward", "loss", "sampling/importance_sampling_ratio/min", "sampling/importance_sampling_ratio/mean",
        "sampling/importance_sampling_ratio/max"]


def build_model(out: Path, layers: int, tiny: bool, device: str) -> float:
    """Save a random Qwen3 model (Qwen3-4B's shape, or a tiny one) with the tiny tokenizer; returns seconds."""
    import torch
    from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

    from trainer.gpu_settings import QWEN3_4B
    from trainer.tiny_model import ensure_tiny_model

    t0 = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(ensure_tiny_model())
    shape = dict(QWEN3_4B, num_hidden_layers=layers)
    if tiny:
        shape.update(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                     num_hidden_layers=2)
    shape.update(vocab_size=len(tok), max_position_embeddings=40960)
    cfg = Qwen3Config(**shape, hidden_act="silu", attention_bias=False, bos_token_id=tok.convert_tokens_to_ids(
        "<|im_start|>"), eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, dtype="bfloat16")
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen3ForCausalLM(cfg).to(torch.bfloat16)  # saved in bf16 (as the hub checkpoint); trained in fp32
    model.generation_config.eos_token_id = [tok.eos_token_id, tok.convert_tokens_to_ids("<|endoftext|>")]
    model.generation_config.pad_token_id = tok.pad_token_id
    model.save_pretrained(out)
    tok.save_pretrained(out)
    del model
    return time.perf_counter() - t0


def _visible_tools(text: str) -> list[str]:
    return [line for block in re.findall(r"<tools>\n(.*?)\n</tools>", text, flags=re.S)
            for line in block.splitlines() if line.strip()]


def check_miss_func(rollouts: list, tok) -> dict:
    """miss_func episodes: the revealed tools are absent from the prompt, injected (masked) at the reveal, and the
    tools shown by the end equal what the evaluator offers from the reveal turn on (``tools_for_turn``)."""
    from envs.tools import tools_for_turn

    episodes = revealed = ok = 0
    for tasks, result in rollouts:
        for task, trace in zip(tasks, result.traces, strict=True):
            if not task.missed_function:
                continue
            episodes += 1
            reveal = min(task.missed_function)
            offered = sorted(json.dumps(t, ensure_ascii=False) for t in tools_for_turn(task, reveal))
            prompt = _visible_tools(tok.decode(trace.prompt_ids, skip_special_tokens=False))
            injected = tok.decode([t for t, m in zip(trace.completion_ids, trace.env_mask, strict=True) if m == 0],
                                  skip_special_tokens=False)
            shown = _visible_tools(tok.decode(trace.prompt_ids + trace.completion_ids, skip_special_tokens=False))
            names = task.missed_function[reveal]
            if all(f'"name": "{n}"' in injected for n in names):
                revealed += 1
                ok += sorted(shown) == offered and not any(f'"name": "{n}"' in line for n in names for line in prompt)
    return {"miss_func_episodes": episodes, "miss_func_revealed": revealed, "miss_func_tools_match": ok}


def headroom(trainer, rollouts: list, static_gib: float | None, peaks: dict) -> dict:
    """What the card has left after the peak (as KV-cache tokens of this model) and the activations measured
    against ``trainer.gpu_settings``' estimate for the longest trained sequence."""
    import torch

    from trainer.gpu_settings import GIB, activation_bytes_per_token, kv_bytes_per_token

    cfg = trainer.model.config.to_dict()
    free, total = torch.cuda.mem_get_info()
    peak_res = max(torch.cuda.max_memory_reserved(), peaks.get("reserved_peak_gib", 0.0) * GIB)
    backward = peaks.get("backward_peak_gib", 0.0) * GIB  # rollout + forward/backward, where activations live
    peak_alloc = max(backward, peaks.get("optimizer_peak_gib", 0.0) * GIB, peaks.get("after_last_step_peak_gib", 0.0) * GIB)
    head = total - peak_res
    longest = max((len(t.prompt_ids) + len(t.completion_ids) for _, r in rollouts for t in r.traces), default=0)
    residual = 4 if next(trainer.model.parameters()).dtype == torch.float32 else 2
    states = sum(p.numel() for p in trainer.model.parameters()) * (4 + 8)  # fp32 grads + AdamW m, v
    return {
        "gpu_total_gib": total / GIB, "peak_reserved_gib": peak_res / GIB, "headroom_gib": head / GIB,
        "headroom_kv_tokens": int(head // kv_bytes_per_token(cfg)),
        "kv_bytes_per_token": kv_bytes_per_token(cfg), "longest_sequence": longest,
        "peak_allocated_gib": peak_alloc / GIB, **peaks,
        "activations_measured_gib": max(0.0, backward / GIB - (static_gib or 0.0) - states / GIB),
        "optimizer_step_extra_gib": max(0.0, peaks.get("optimizer_peak_gib", 0.0) - (static_gib or 0.0) - states / GIB),
        "activations_estimated_gib": longest * activation_bytes_per_token(cfg, residual) / GIB,
    }


def phase_peaks(trainer) -> dict:
    """Split the peak by phase with the Trainer's optimizer hooks: rollout + forward/backward (up to the optimizer
    step) vs the optimizer step itself (AdamW's foreach temporaries), so the activation estimate is compared with the
    phase that holds activations."""
    import torch
    from transformers import TrainerCallback

    peaks = {"backward_peak_gib": 0.0, "optimizer_peak_gib": 0.0, "reserved_peak_gib": 0.0}

    def read(phase: str) -> None:
        peaks[phase] = max(peaks[phase], torch.cuda.max_memory_allocated() / 1024**3)
        peaks["reserved_peak_gib"] = max(peaks["reserved_peak_gib"], torch.cuda.max_memory_reserved() / 1024**3)
        torch.cuda.reset_peak_memory_stats()  # resets the reserved peak too: hence its own running max

    class PhasePeaks(TrainerCallback):
        def on_pre_optimizer_step(self, args, state, control, **kw):
            read("backward_peak_gib")

        def on_optimizer_step(self, args, state, control, **kw):
            read("optimizer_peak_gib")

    trainer.add_callback(PhasePeaks())
    return peaks


def recipe_sizing(prompt_tokens: int) -> dict:
    """The GPU recipe's rollout sizing on 8 x 80 GB under FSDP2 (``trainer.gpu_settings.rollout_sizing``); the
    measured first-prompt length when known (this tokenizer, not Qwen's), else the documented 9k."""
    from rods_cli.train import parse_recipe
    from trainer.gpu_settings import FIRST_PROMPT_TOKENS, QWEN3_4B, rollout_sizing

    args = parse_recipe(ROOT / "recipes" / "qwen3-4b-rods.yaml", ["--use_cpu", "true", "--bf16", "false",
                                                                  "--output_dir", "/tmp/rods-sizing"])
    s = rollout_sizing(args, QWEN3_4B, prompt_tokens=max(prompt_tokens, FIRST_PROMPT_TOKENS))
    return {**s.model_dump(), "fits": s.fits, "advice": s.advice()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="runs/gpu-check", help="Where gpu_check.json goes (small files only).")
    ap.add_argument("--work", default="/tmp/rods-gpu-check", help="Model, run folder and checkpoints (large).")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--layers", type=int, default=36, help="Decoder layers (36 = Qwen3-4B; fewer if time demands).")
    ap.add_argument("--cpu", action="store_true", help="Rehearsal on CPU with a tiny model of the same code path.")
    ap.add_argument("--max_completion_length", type=int, default=1024)
    ap.add_argument("--max_new_tokens_per_step", type=int, default=64)
    opt = ap.parse_args()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import importlib.util

    import torch

    from rods_cli.train import parse_recipe
    from trainer.grpo import build_trainer

    out, work = Path(opt.out), Path(opt.work)
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    cuda = torch.cuda.is_available() and not opt.cpu
    use_vllm = cuda and importlib.util.find_spec("vllm") is not None
    model_dir = work / ("model-cpu" if opt.cpu else f"model-{opt.layers}l")
    build_s = 0.0 if (model_dir / "config.json").exists() else build_model(model_dir, opt.layers, opt.cpu,
                                                                             "cuda" if cuda else "cpu")
    overrides = [
        "--model_name_or_path", str(model_dir), "--output_dir", str(work / "run"), "--task_split", "all",
        "--task_ids", *TASKS, "--num_generations", "4", "--per_device_train_batch_size", "1",
        "--gradient_accumulation_steps", "8", "--steps_per_generation", "8", "--max_steps", str(opt.steps), "--num_train_epochs", "3",
        "--max_completion_length", str(opt.max_completion_length), "--max_new_tokens_per_step",
        str(opt.max_new_tokens_per_step), "--max_steps_per_turn", "1", "--beta", "0.0",
        "--reward_shaping", "synthetic_boundary", "--seeds_per_epoch", "2", "--seed_quotas",
        '{"base": 1, "miss_func": 1}', "--variants_per_seed", "1", "--p_max", "8", "--synthesis_backbone", "offline",
        "--save_strategy", "no", "--report_to", "none", "--logging_steps", "1",
        "--use_vllm", str(use_vllm).lower(), "--vllm_max_model_length", "16384", "--vllm_gpu_memory_utilization", "0.3",
    ]
    from trainer.config import RODSConfig

    if "synthesis_wait_s" in RODSConfig.__dataclass_fields__:
        overrides += ["--synthesis_wait_s", "-1"]  # wait for the round at the boundary: the check is deterministic
    if opt.cpu:
        overrides += ["--use_cpu", "true", "--bf16", "false", "--gradient_checkpointing", "false"]
    args = parse_recipe(ROOT / "recipes" / "qwen3-4b-rods.yaml", overrides)
    trainer, curriculum, _ = build_trainer(args)

    rollouts: list = []
    inner = trainer.rollout_func

    def spy(prompts, tr):
        res = inner(prompts, tr)
        rollouts.append(([curriculum.task(r["task_id"]) for r in tr._rollout_rows], tr._last_rollout))
        return res

    trainer.rollout_func = spy
    params = dict(trainer.model.named_parameters())
    watched = [n for n in params if n.endswith(("embed_tokens.weight", "layers.0.self_attn.q_proj.weight",
                                                "layers.0.mlp.down_proj.weight", "norm.weight"))]
    before = {n: params[n].detach().float().cpu().clone() for n in watched}
    peaks: dict = {}
    if cuda:
        torch.cuda.synchronize()
        static_gib = torch.cuda.memory_allocated() / 1024**3  # weights (+ reference model) before any step
        torch.cuda.reset_peak_memory_stats()
        peaks = phase_peaks(trainer)
    t0 = time.perf_counter()
    trainer.train()
    train_s = time.perf_counter() - t0
    changed = sum(int((params[n].detach().float().cpu() != before[n]).sum()) for n in watched)
    total = sum(before[n].numel() for n in watched)
    delta = sum(float((params[n].detach().float().cpu() - before[n]).norm() ** 2) for n in watched) ** 0.5
    norm0 = sum(float(before[n].norm() ** 2) for n in watched) ** 0.5
    if cuda:  # the whole run's peak: the phases' peaks (the hooks reset the counter) and whatever came after
        peaks["after_last_step_peak_gib"] = torch.cuda.max_memory_allocated() / 1024**3
    memory = headroom(trainer, rollouts, static_gib if cuda else None, peaks) if cuda else {}
    prompt_lens = [len(t.prompt_ids) for _, r in rollouts for t in r.traces]

    rows = [h for h in trainer.state.log_history if "step_time" in h or "loss" in h]
    print(f"{'step':>4} " + " ".join(f"{k.split('/')[-1][:14]:>14}" for k in KEYS))
    for i, r in enumerate(rows, 1):
        print(f"{i:>4} " + " ".join(f"{float(r.get(k, float('nan'))):>14.4g}" for k in KEYS))

    def mean(k):
        vals = [float(r[k]) for r in rows if k in r]
        return sum(vals) / len(vals) if vals else None

    summary = {
        "device": torch.cuda.get_device_name(0) if cuda else "cpu", "generation": "vllm" if use_vllm else "transformers",
        "layers": opt.layers if not opt.cpu else 2, "params_b": sum(p.numel() for p in params.values()) / 1e9,
        "steps": trainer.state.global_step, "epoch_boundaries": len(curriculum.reports),
        "synthesized": sum(len(r.synthesized) for r in curriculum.reports),
        "injected": sum(len(r.injected) for r in curriculum.reports),
        "build_model_s": round(build_s, 1), "train_s": round(train_s, 1),
        "step_time_s": mean("step_time"), "rollout_s": mean("rods/rollout_s"),
        "rollout_tokens_per_s": mean("rods/rollout_tokens_per_s"), "completion_mean_length": mean("completions/mean_length"),
        "is_ratio_min": mean("sampling/importance_sampling_ratio/min"),
        "is_ratio_mean": mean("sampling/importance_sampling_ratio/mean"),
        "is_ratio_max": mean("sampling/importance_sampling_ratio/max"),
        **memory,
        "weights_changed_share": changed / max(total, 1), "weights_relative_change": delta / max(norm0, 1e-12),
        "first_prompt_tokens_max": max(prompt_lens, default=0),
        "recipe_rollout_sizing": recipe_sizing(max(prompt_lens, default=0)),
        **check_miss_func(rollouts, trainer.processing_class),
    }
    (out / "gpu_check.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
