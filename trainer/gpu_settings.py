"""GPU-run settings checked before a run starts, and the per-GPU memory arithmetic behind the recipes.

:func:`check_gpu_settings` refuses combinations that would hang, crash or quietly learn little on
GPUs, with one clear error at config time (``RODSConfig.__post_init__``):

* **Sequence-level importance sampling** (TRL's default ``sequence_mask``): the log-ratio sums over
  every model token of a multi-turn episode, so its spread grows with episode length and long
  episodes get masked or shrunk. RODS uses token-level truncated IS (``token_truncate``, TIS):
  each token's ratio ``pi_train / pi_vllm`` is clipped to at most ``vllm_importance_sampling_clip_max``.
* **ZeRO-3 with transformers generation on several ranks**: generation gathers the sharded
  parameters once per lock-step round, and ranks run different numbers of rounds (their episodes
  differ), so one rank waits forever in a gather. Use vLLM (colocate) or ZeRO-2.

:func:`estimate_memory` is the arithmetic the GPU recipe's comments show: weights, gradients and
AdamW states per GPU under each ZeRO stage, the reference model (``beta > 0``), vLLM's share, and
checkpointed activations of the longest training sequence.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

TOKEN_IS_MODES = ("token_truncate", "token_mask")
GIB = 1024**3
CARD_80GB_GIB = 81559 / 1024  # what an H100/A100 "80 GB" reports: 81,559 MiB

QWEN3_4B = {  # Qwen/Qwen3-4B-Instruct-2507 config.json (no download needed)
    "vocab_size": 151936, "hidden_size": 2560, "intermediate_size": 9728, "num_hidden_layers": 36,
    "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "tie_word_embeddings": True,
    "max_position_embeddings": 262144, "rope_theta": 5_000_000.0, "rms_norm_eps": 1e-6,
}


# ---------------------------------------------------------------------------------------------- checks
def zero_stage(args: Any, env: dict[str, str] | None = None) -> int | None:
    """The DeepSpeed ZeRO stage this process runs under: ``args.deepspeed`` (a dict or a JSON file), else
    what ``accelerate launch`` exported (``ACCELERATE_DEEPSPEED_ZERO_STAGE`` or its config file); None
    without DeepSpeed."""
    env = os.environ if env is None else env
    ds = getattr(args, "deepspeed", None)
    if not ds and str(env.get("ACCELERATE_USE_DEEPSPEED", "")).lower() in ("1", "true", "yes"):
        if env.get("ACCELERATE_DEEPSPEED_ZERO_STAGE"):
            return int(env["ACCELERATE_DEEPSPEED_ZERO_STAGE"])
        ds = env.get("ACCELERATE_DEEPSPEED_CONFIG_FILE")
    if not ds:
        return None
    if isinstance(ds, str):
        path = Path(ds)
        ds = json.loads(path.read_text(encoding="utf-8")) if path.exists() else json.loads(ds)
    stage = (ds.get("zero_optimization") or {}).get("stage", 0)
    return int(stage) if str(stage).isdigit() else None


def check_gpu_settings(args: Any, env: dict[str, str] | None = None) -> None:
    """Raise ``ValueError`` for a setting the module docstring explains; silent otherwise."""
    env = os.environ if env is None else env
    if getattr(args, "use_vllm", False) and getattr(args, "vllm_importance_sampling_correction", False):
        mode = args.vllm_importance_sampling_mode
        if mode not in TOKEN_IS_MODES:
            raise ValueError(
                f"vllm_importance_sampling_mode={mode!r} is sequence-level: over a multi-turn episode the log-ratio "
                f"sums every model token, so long episodes are shrunk or masked. Use one of {TOKEN_IS_MODES} "
                "(the recipes use token_truncate with vllm_importance_sampling_clip_max), or turn the correction "
                "off with vllm_importance_sampling_correction=false.")
        cmax = args.vllm_importance_sampling_clip_max
        if cmax is None or not math.isfinite(cmax) or cmax <= 0:
            raise ValueError(f"vllm_importance_sampling_clip_max must be a finite positive bound for {mode} "
                             f"(got {cmax!r}): an unbounded token ratio lets one token dominate the update")
    world = int(env.get("WORLD_SIZE", "1") or 1)
    if not getattr(args, "use_vllm", False) and world > 1 and zero_stage(args, env) == 3:
        raise ValueError(
            "ZeRO-3 with use_vllm=false on several processes would hang: transformers generation gathers the "
            "sharded parameters once per lock-step round and ranks run different numbers of rounds. Use "
            "use_vllm=true (vLLM colocate) or ZeRO-2 (recipes/accelerate/zero2.yaml).")


# ---------------------------------------------------------------------------------------------- memory
class MemoryEstimate(BaseModel):
    """Peak GPU memory of one training rank, in GiB, by component (see :func:`estimate_memory`)."""

    params: float = Field(description="Policy weights as the step sees them (bf16; fp32 without DeepSpeed).")
    grads: float
    optimizer: float = Field(description="AdamW states + fp32 master weights (0 when offloaded to CPU).")
    reference: float = Field(description="The frozen KL reference model (beta > 0).")
    vllm: float = Field(description="vLLM colocate share: weights + KV cache (gpu_memory_utilization x card).")
    activations: float = Field(description="Checkpointed hidden states + one layer's recompute, longest micro-batch.")
    overhead: float = Field(description="CUDA context, NCCL and ZeRO buffers, allocator fragmentation.")

    @property
    def total(self) -> float:
        return self.params + self.grads + self.optimizer + self.reference + self.vllm + self.activations + self.overhead


def n_params(cfg: dict) -> int:
    """Parameters of a Qwen3/Llama-style decoder from its config."""
    h, inter, layers = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    hd = cfg.get("head_dim") or h // cfg["num_attention_heads"]
    q, kv = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd
    per_layer = h * q + 2 * h * kv + q * h + 3 * h * inter + 2 * h + 2 * hd  # attention, MLP, norms (+ q/k norm)
    emb = cfg["vocab_size"] * h * (1 if cfg.get("tie_word_embeddings") else 2)
    return layers * per_layer + emb + h


def activation_bytes_per_token(cfg: dict, residual_bytes: int = 2) -> int:
    """Bytes per training token with gradient checkpointing and a fused (chunked) LM head.

    Checkpoints: one hidden state per layer (``layers x hidden x residual_bytes``: 2 with bf16 weights
    (DeepSpeed bf16); 4 under bf16 autocast of fp32 weights, where the residual stream between layers stays
    fp32). Recompute: one layer's bf16 forward tensors and their gradients (q/k/v/o, gate/up/act/product,
    norms and residuals: ``x 2 x 2``).
    """
    h, inter, layers = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    hd = cfg.get("head_dim") or h // cfg["num_attention_heads"]
    q, kv = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd
    checkpoints = layers * h * residual_bytes
    layer = (2 * q + 2 * kv + 4 * inter + 4 * h) * 2 * 2
    return checkpoints + layer


def estimate_memory(cfg: dict, *, per_device_batch: int, seq_len: int, world_size: int, zero: int | None,
                    beta: float, vllm_share: float, gpu_gib: float, offload_optimizer: bool = False,
                    lm_head_chunk_gib: float = 1.0, overhead_gib: float = 5.0) -> MemoryEstimate:
    """Peak memory of one rank for full fine-tuning with AdamW and gradient checkpointing.

    ``zero=None``: plain DDP/one GPU with fp32 master weights (the model is loaded in float32, bf16
    autocast): 4 + 4 + 8 bytes per parameter. With DeepSpeed bf16: bf16 weights (2 bytes), fp32
    gradient partitions (4), fp32 master + Adam m, v (12); ZeRO-2 partitions gradients and optimizer
    over ``world_size``, ZeRO-3 the weights too. TRL runs the reference model un-sharded below ZeRO-3.
    """
    p = n_params(cfg)
    n = max(1, world_size)
    if zero is None:
        params, grads, opt, ref = 4 * p, 4 * p, 8 * p, (4 * p if beta > 0 else 0)
    else:
        params = 2 * p / (n if zero >= 3 else 1)
        grads = 4 * p / (n if zero >= 2 else 1)
        opt = 0 if offload_optimizer else 12 * p / (n if zero >= 1 else 1)
        ref = (2 * p / (n if zero >= 3 else 1)) if beta > 0 else 0
    residual = 4 if zero is None else 2  # fp32 weights under autocast keep an fp32 residual stream
    act = per_device_batch * seq_len * activation_bytes_per_token(cfg, residual) + lm_head_chunk_gib * GIB
    return MemoryEstimate(
        params=params / GIB, grads=grads / GIB, optimizer=opt / GIB, reference=ref / GIB,
        vllm=vllm_share * gpu_gib, activations=act / GIB, overhead=overhead_gib,
    )


def recipe_memory(args: Any, cfg: dict, *, world_size: int, zero: int | None, gpu_gib: float = CARD_80GB_GIB,
                  offload_optimizer: bool = False) -> MemoryEstimate:
    """:func:`estimate_memory` for a recipe: the longest training sequence is the episode's context limit."""
    seq = args.vllm_max_model_length if args.use_vllm and args.vllm_max_model_length else \
        min(cfg.get("max_position_embeddings", 1 << 30), 8192 + args.max_completion_length)
    return estimate_memory(
        cfg, per_device_batch=args.per_device_train_batch_size, seq_len=seq, world_size=world_size, zero=zero,
        beta=args.beta, vllm_share=args.vllm_gpu_memory_utilization if args.use_vllm else 0.0, gpu_gib=gpu_gib,
        offload_optimizer=offload_optimizer,
    )
