#!/usr/bin/env bash
# One prepared GPU check: 3 GRPO steps of recipes/qwen3-4b-rods.yaml with vLLM colocate on a randomly
# initialised Qwen3-4B-architecture model built from its config (no weights, no network), reporting step time
# and rollout tokens/s.
#
#   bash scripts/gpu_check.sh            # needs a GPU box with the `gpu` extra installed (vllm), see Makefile
#
# The box is offline, so the Qwen3-4B config is written inline (36 layers, hidden 2560, 32/8 GQA heads of 128,
# intermediate 9728, rope theta 5e6, tied embeddings: Qwen3-4B-Instruct-2507's config.json) and the tokenizer is
# the local tiny one (trainer/tiny_model.py: TRL's qwen3_instruct_2507 template, Hermes tool calls); the
# vocabulary is cut to that tokenizer (2048 rows instead of 151936: ~3.6B instead of 4.0B parameters) so every
# sampled id decodes. Random weights emit no tool calls: the numbers measure the machinery, not the policy.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
OUT=${OUT:-runs/gpu-check}
MODEL_DIR=${MODEL_DIR:-.cache/qwen3-4b-random}
STEPS=${STEPS:-3}
export TRL_EXPERIMENTAL_SILENCE=1 TOKENIZERS_PARALLELISM=false VLLM_LOGGING_LEVEL=WARNING
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv | tee "$OUT/gpu.csv"

# 1. the random Qwen3-4B-architecture model, saved once
"$PY" - "$MODEL_DIR" <<'PYEOF'
import sys, time
from pathlib import Path
import torch
from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM
from trainer.tiny_model import ensure_tiny_model

out = Path(sys.argv[1])
if (out / "config.json").exists():
    print(f"model already at {out}"); raise SystemExit
t0 = time.perf_counter()
tok = AutoTokenizer.from_pretrained(ensure_tiny_model())
cfg = Qwen3Config(  # Qwen/Qwen3-4B-Instruct-2507 config.json, vocabulary cut to the local tokenizer
    vocab_size=len(tok), hidden_size=2560, intermediate_size=9728, num_hidden_layers=36, num_attention_heads=32,
    num_key_value_heads=8, head_dim=128, max_position_embeddings=262144, rope_theta=5_000_000.0,
    rms_norm_eps=1e-6, tie_word_embeddings=True, hidden_act="silu", attention_bias=False,
    bos_token_id=tok.convert_tokens_to_ids("<|im_start|>"), eos_token_id=tok.eos_token_id,
    pad_token_id=tok.pad_token_id, torch_dtype="bfloat16",
)
with torch.device("cuda"):
    model = Qwen3ForCausalLM(cfg).to(torch.bfloat16)
model.generation_config.eos_token_id = tok.eos_token_id
model.generation_config.pad_token_id = tok.pad_token_id
model.save_pretrained(out)
tok.save_pretrained(out)
print(f"built {sum(p.numel() for p in model.parameters())/1e9:.2f}B-parameter random model in {time.perf_counter()-t0:.0f} s")
PYEOF

# 2. three steps of the GPU recipe on one GPU: vLLM colocate, 2 prompts x K=16 per step, offline synthesis,
#    shorter episodes so three steps fit in a few minutes
rm -rf "$OUT/run"
START=$(date +%s)
"$PY" -c 'import sys; from pathlib import Path; from rods_cli.train import parse_recipe; from trainer.grpo import train
print(train(parse_recipe(Path(sys.argv[1]), sys.argv[2:])))' recipes/qwen3-4b-rods.yaml \
  --model_name_or_path "$MODEL_DIR" --output_dir "$OUT/run" \
  --max_steps "$STEPS" --per_device_train_batch_size 8 --gradient_accumulation_steps 4 \
  --max_completion_length 2048 --max_new_tokens_per_step 512 --max_steps_per_turn 2 \
  --vllm_max_model_length 16384 --vllm_gpu_memory_utilization 0.35 --beta 0.0 \
  --num_seed_tasks 8 --synthesis_backbone offline --save_strategy no --report_to none \
  2>&1 | tee "$OUT/train.log"
echo "wall_s=$(( $(date +%s) - START ))" | tee -a "$OUT/train.log"

# 3. step time and rollout tokens/s from the logged metrics (RUN/log_history.json, written by trainer.grpo.train)
"$PY" - "$OUT" <<'PYEOF'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
rows = [h for h in json.loads((out / "run" / "log_history.json").read_text()) if "step_time" in h]
keys = ["step_time", "rods/rollout_s", "rods/rollout_tokens_per_s", "rods/generate_calls", "completions/mean_length",
        "reward", "loss"]
print(f"{'step':>4} " + " ".join(f"{k:>26}" for k in keys))
for i, r in enumerate(rows, 1):
    print(f"{i:>4} " + " ".join(f"{float(r.get(k, float('nan'))):>26.3f}" for k in keys))
summary = {k: sum(float(r.get(k, 0.0)) for r in rows) / max(len(rows), 1) for k in keys}
summary["steps"] = len(rows)
(out / "gpu_check.json").write_text(json.dumps(summary, indent=1))
print(json.dumps(summary))
PYEOF
