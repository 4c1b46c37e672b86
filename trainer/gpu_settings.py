"""GPU-run settings checked before a run starts, and the per-GPU memory arithmetic behind the recipes.

:func:`check_gpu_settings` refuses combinations that would hang, crash or quietly learn little on
GPUs, with one clear error at config time (``RODSConfig.__post_init__``):

* **Sequence-level importance sampling** (TRL's default ``sequence_mask``): the log-ratio sums over
  every model token of a multi-turn episode, so its spread grows with episode length and long
  episodes get masked or shrunk. RODS uses token-level truncated IS (``token_truncate``, TIS):
  each token's ratio ``pi_train / pi_vllm`` is clipped to at most ``vllm_importance_sampling_clip_max``.
* **Sharded weights with transformers generation on several ranks** (FSDP, the README's launch, or
  ZeRO-3): every generated token's forward all-gathers the sharded parameters, and ranks generate
  different numbers of tokens (their episodes differ), so one rank waits forever in a gather. Use vLLM
  (colocate), which generates from its own whole copy of the weights.

:func:`rollout_sizing` compares the KV cache vLLM will have on each rank (its memory share, less its
own bf16 weights and working memory) with what the recipe's lock-step episodes need (the episodes of
one generate call, their first prompts, one turn's new tokens each), and :func:`warn_rollout_sizing`
says at start what to change when it falls short (vLLM would preempt and recompute requests: no error,
much slower rollouts).

:func:`estimate_memory` is the arithmetic the GPU recipe's comments show: weights, gradients and
AdamW states per GPU under each ZeRO stage, the reference model (``beta > 0``), vLLM's share, and
checkpointed activations of the longest training sequence.
"""

from __future__ import annotations

import json
import logging
import math
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

log = logging.getLogger(__name__)
TOKEN_IS_MODES = ("token_truncate", "token_mask")
FIRST_PROMPT_TOKENS = 9000
"""Longest first prompt of a BFCL multi-turn episode in Qwen3 tokens (system + tool schemas + first user turn:
6-9k, measured for issue 15); the sizing check assumes it unless given measured lengths."""
VLLM_WORKING_GIB = 2.0
"""vLLM's own activations, sampler and CUDA graphs inside its share, beside weights and KV cache."""
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
    if not getattr(args, "use_vllm", False) and world > 1:
        if zero_stage(args, env) == 3:
            raise ValueError(
                "ZeRO-3 with use_vllm=false on several processes would hang: transformers generation gathers the "
                "sharded parameters once per lock-step round and ranks run different numbers of rounds. Use "
                "use_vllm=true (vLLM colocate, the README's launch).")
        if fsdp_enabled(args, env) and not getattr(args, "use_cpu", False):
            raise ValueError(
                "FSDP with use_vllm=false on several GPUs would hang: every generated token all-gathers the sharded "
                "parameters and ranks generate different numbers of tokens. Use use_vllm=true (vLLM colocate, "
                "recipes/qwen3-4b-rods.yaml).")
    if getattr(args, "use_vllm", False) and not getattr(args, "use_cpu", False):
        warn_rollout_sizing(args, world_size=world, fsdp=fsdp_enabled(args, env))


def fsdp_enabled(args: Any, env: dict[str, str] | None = None) -> bool:
    """FSDP is on: the recipe's ``fsdp`` field or what ``accelerate launch`` exported (``ACCELERATE_USE_FSDP``)."""
    env = os.environ if env is None else env
    return bool(getattr(args, "fsdp", None)) or str(env.get("ACCELERATE_USE_FSDP", "")).lower() in ("1", "true", "yes")


# ---------------------------------------------------------------------------------------------- memory
class MemoryEstimate(BaseModel):
    """Peak GPU memory of one training rank, in GiB, by component (see :func:`estimate_memory`)."""

    params: float = Field(description="Policy weights as the step sees them (bf16; fp32 without DeepSpeed).")
    grads: float
    optimizer: float = Field(description="AdamW states + fp32 master weights (0 when offloaded to CPU).")
    reference: float = Field(description="The frozen KL reference model (beta > 0).")
    vllm: float = Field(description="vLLM colocate share: weights + KV cache (gpu_memory_utilization x card).")
    activations: float = Field(description="Checkpointed hidden states + one layer's recompute, longest micro-batch "
                                           "(+ autocast's bf16 weight cache for fp32 weights without FSDP/DeepSpeed).")
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
                    lm_head_chunk_gib: float = 1.0, overhead_gib: float = 5.0, fsdp2: bool = False) -> MemoryEstimate:
    """Peak memory of one rank for full fine-tuning with AdamW and gradient checkpointing.

    ``zero=None``: plain DDP/one GPU with fp32 master weights (the model is loaded in float32, bf16
    autocast): 4 + 4 + 8 bytes per parameter. With DeepSpeed bf16: bf16 weights (2 bytes), fp32
    gradient partitions (4), fp32 master + Adam m, v (12); ZeRO-2 partitions gradients and optimizer
    over ``world_size``, ZeRO-3 the weights too. TRL runs the reference model un-sharded below ZeRO-3.
    ``fsdp2`` (the README's launch): fp32 weights, gradients, Adam m, v and the fp32 reference model all
    sharded over ``world_size`` (TRL wraps the reference model with FSDP too), plus two layers gathered
    in bf16 at a time (compute in bf16: bf16 hidden states between layers).
    """
    p = n_params(cfg)
    n = max(1, world_size)
    if fsdp2:
        layer = 2 * 2 * (p - cfg["vocab_size"] * cfg["hidden_size"]) / max(1, cfg["num_hidden_layers"])
        params, grads, opt = 4 * p / n + layer, 4 * p / n, 0 if offload_optimizer else 8 * p / n
        ref = 4 * p / n if beta > 0 else 0
    elif zero is None:
        params, grads, opt, ref = 4 * p, 4 * p, 8 * p, (4 * p if beta > 0 else 0)
    else:
        params = 2 * p / (n if zero >= 3 else 1)
        grads = 4 * p / (n if zero >= 2 else 1)
        opt = 0 if offload_optimizer else 12 * p / (n if zero >= 1 else 1)
        ref = (2 * p / (n if zero >= 3 else 1)) if beta > 0 else 0
    autocast = zero is None and not fsdp2  # fp32 weights under bf16 autocast
    residual = 4 if autocast else 2  # ... keep an fp32 residual stream
    # ... and autocast caches the bf16 cast of every weight until the forward's autocast region ends (2 bytes per
    # parameter, alive at the peak: the end of the forward, gradients of the earlier micro-batches held). Measured
    # on the H200 (scripts/gpu_check.sh, 36 layers, 4,065 tokens): 8.8 GiB above weights, gradients and AdamW
    # where checkpoints + recompute alone predict 2.3. FSDP2 and DeepSpeed compute on bf16 copies they own.
    cache = 2 * p if autocast else 0
    act = per_device_batch * seq_len * activation_bytes_per_token(cfg, residual) + cache + lm_head_chunk_gib * GIB
    return MemoryEstimate(
        params=params / GIB, grads=grads / GIB, optimizer=opt / GIB, reference=ref / GIB,
        vllm=vllm_share * gpu_gib, activations=act / GIB, overhead=overhead_gib,
    )


def recipe_memory(args: Any, cfg: dict, *, world_size: int, zero: int | None = None, gpu_gib: float = CARD_80GB_GIB,
                  offload_optimizer: bool = False, fsdp2: bool = False, vllm_share: float | None = None
                  ) -> MemoryEstimate:
    """:func:`estimate_memory` for a recipe: the longest training sequence is the episode's context limit."""
    seq = args.vllm_max_model_length if args.use_vllm and args.vllm_max_model_length else \
        min(cfg.get("max_position_embeddings", 1 << 30), 8192 + args.max_completion_length)
    return estimate_memory(
        cfg, per_device_batch=args.per_device_train_batch_size, seq_len=seq, world_size=world_size, zero=zero,
        beta=args.beta, gpu_gib=gpu_gib, offload_optimizer=offload_optimizer, fsdp2=fsdp2,
        vllm_share=(args.vllm_gpu_memory_utilization if vllm_share is None else vllm_share) if args.use_vllm else 0.0,
    )


# ---------------------------------------------------------------------------------------------- rollout sizing
def kv_bytes_per_token(cfg: dict, dtype_bytes: int = 2) -> int:
    """K and V of every layer for one token (bf16 KV cache): 144 KiB for Qwen3-4B."""
    hd = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    return 2 * cfg["num_hidden_layers"] * cfg["num_key_value_heads"] * hd * dtype_bytes


class RolloutSizing(BaseModel):
    """vLLM's KV cache on one rank against what one generate call's lock-step episodes need (module docstring)."""

    vllm_share: float
    kv_tokens: int = Field(description="KV cache tokens vLLM will have on this rank at vllm_share.")
    episodes: int = Field(description="Lock-step episodes per generate call on this rank (TRL's max_num_seqs).")
    prompts: int = Field(description="Distinct first prompts among them (K copies share one: vLLM prefix caching).")
    prompt_tokens: int
    first_turn_tokens: int = Field(description="KV the first turn needs: prompts x prompt + episodes x one turn.")
    full_tokens: int = Field(description="KV if every episode reached vllm_max_model_length at once.")
    fit_share: float | None = Field(None, description="Largest share the memory estimate allows on this card.")
    fit_kv_tokens: int | None = None
    fit_episodes: int | None = Field(None, description="Episodes per call whose first turn fits at fit_share.")
    fit_steps_per_generation: int | None = Field(None, description="steps_per_generation giving fit_episodes.")

    @property
    def fits(self) -> bool:
        return self.first_turn_tokens <= self.kv_tokens

    def advice(self) -> str:
        head = (f"vLLM KV cache {self.kv_tokens:,} tokens per rank at vllm_gpu_memory_utilization {self.vllm_share:g}; "
                f"the first turn of {self.episodes} lock-step episodes needs {self.first_turn_tokens:,} "
                f"({self.prompts} distinct {self.prompt_tokens:,}-token prompts + {self.episodes} turns), all of them at "
                f"full length {self.full_tokens:,}")
        if self.fits:
            return head + ": the first turn fits; later turns grow and vLLM preempts the longest (recomputed later)"
        fix = []
        if self.fit_share is not None and self.fit_share > self.vllm_share:
            fix.append(f"vllm_gpu_memory_utilization {self.fit_share:g} ({self.fit_kv_tokens:,} tokens: the most the "
                       "memory estimate leaves on this card)")
        if self.fit_episodes:
            fix.append(f"steps_per_generation {self.fit_steps_per_generation} ({self.fit_episodes} episodes per "
                       "generate call; gradient_accumulation_steps unchanged: the same trajectories per optimizer "
                       "step, generated in several calls)")
        return head + ": short by {:.1f}x; vLLM would preempt and recompute requests (slow rollouts). Change: {}".format(
            self.first_turn_tokens / max(1, self.kv_tokens), " and ".join(fix) or "a larger card or a shorter budget")


def _kv_tokens(args: Any, cfg: dict, share: float, gpu_gib: float) -> int:
    free = share * gpu_gib - 2 * n_params(cfg) / GIB - VLLM_WORKING_GIB
    return max(0, int(free * GIB // kv_bytes_per_token(cfg)))


def _first_turn(args: Any, episodes: int, prompt: int) -> tuple[int, int]:
    k = max(1, int(args.num_generations))
    prompts = max(1, math.ceil(episodes / k))
    return prompts, prompts * prompt + episodes * int(args.max_new_tokens_per_step)


def rollout_sizing(args: Any, cfg: dict, *, world_size: int = 8, gpu_gib: float = CARD_80GB_GIB, fsdp2: bool = True,
                   zero: int | None = None, prompt_tokens: int = FIRST_PROMPT_TOKENS) -> RolloutSizing:
    """:class:`RolloutSizing` of a vLLM recipe on ``world_size`` cards of ``gpu_gib`` (module docstring)."""
    share = float(args.vllm_gpu_memory_utilization)
    episodes = int(args.per_device_train_batch_size) * int(args.steps_per_generation or args.gradient_accumulation_steps)
    prompts, first = _first_turn(args, episodes, prompt_tokens)
    full = prompts * prompt_tokens + episodes * max(0, int(args.vllm_max_model_length) - prompt_tokens)
    no_vllm = recipe_memory(args, cfg, world_size=world_size, zero=zero, gpu_gib=gpu_gib, fsdp2=fsdp2, vllm_share=0.0)
    fit_share = math.floor(max(0.0, (gpu_gib - 1.0 - no_vllm.total) / gpu_gib) * 20) / 20  # 1 GiB margin, 0.05 steps
    fit_kv = _kv_tokens(args, cfg, fit_share, gpu_gib) if fit_share > 0 else 0
    k = max(1, int(args.num_generations))
    per_dev = max(1, int(args.per_device_train_batch_size))
    fit_episodes = next((e for e in range(episodes, 0, -k)  # whole micro-batches that split the call evenly
                         if episodes % e == 0 and e % per_dev == 0
                         and _first_turn(args, e, prompt_tokens)[1] <= max(fit_kv, _kv_tokens(args, cfg, share, gpu_gib))),
                        None)
    return RolloutSizing(vllm_share=share, kv_tokens=_kv_tokens(args, cfg, share, gpu_gib), episodes=episodes,
                         prompts=prompts, prompt_tokens=prompt_tokens, first_turn_tokens=first, full_tokens=full,
                         fit_share=fit_share or None, fit_kv_tokens=fit_kv or None,
                         fit_episodes=fit_episodes if fit_episodes and fit_episodes < episodes else None,
                         fit_steps_per_generation=fit_episodes // per_dev if fit_episodes and fit_episodes < episodes
                         else None)


def warn_rollout_sizing(args: Any, *, world_size: int, fsdp: bool, cfg: dict | None = None) -> RolloutSizing | None:
    """Log the sizing at start (a warning when the first turn does not fit); Qwen3-4B's shape unless ``cfg``."""
    try:
        sizing = rollout_sizing(args, cfg or QWEN3_4B, world_size=max(1, world_size), fsdp2=fsdp)
    except (AttributeError, TypeError, ValueError):  # a config without the vLLM fields: nothing to size
        return None
    (log.info if sizing.fits else log.warning)("rollout sizing: %s", sizing.advice())
    return sizing
