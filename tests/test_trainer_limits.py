"""GPU-run settings: token-level importance sampling, the FSDP2 launch, the gpu extra, memory and rollout sizing.

Nothing here needs a GPU: the checks run at config time and the memory estimate is arithmetic
(trainer/gpu_settings.py), pinned to the numbers the GPU recipe's comments show.
"""

from __future__ import annotations

import math
import re
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from rods_cli.train import parse_recipe
from trainer.gpu_settings import (
    CARD_80GB_GIB,
    QWEN3_4B,
    TOKEN_IS_MODES,
    check_gpu_settings,
    estimate_memory,
    fsdp_enabled,
    n_params,
    recipe_memory,
    rollout_sizing,
)

ROOT = Path(__file__).resolve().parents[1]
RECIPES = ROOT / "recipes"
CPU = ["--use_cpu", "true", "--bf16", "false"]
GPU_RECIPE = RECIPES / "qwen3-4b-rods.yaml"


def _launch_config() -> Path:
    """The accelerate config the GPU recipe's header tells 8-GPU users to launch with."""
    m = re.search(r"accelerate launch --config_file (\S+)", GPU_RECIPE.read_text())
    assert m, "the GPU recipe names its multi-GPU launch"
    return ROOT / m.group(1)


def _accelerate_env(path: Path, world: int = 8) -> dict[str, str]:
    """What `accelerate launch --config_file path` exports to each rank (accelerate/utils/launch.py)."""
    cfg = yaml.safe_load(path.read_text())
    if cfg["distributed_type"] == "FSDP":
        return {"ACCELERATE_USE_FSDP": "true", "FSDP_VERSION": str(cfg["fsdp_config"]["fsdp_version"]),
                "WORLD_SIZE": str(world)}
    ds = cfg["deepspeed_config"]
    return {"ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_DEEPSPEED_ZERO_STAGE": str(ds["zero_stage"]),
            "WORLD_SIZE": str(world)}


ZERO3_ENV = {"ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_DEEPSPEED_ZERO_STAGE": "3", "WORLD_SIZE": "8"}


# ---------------------------------------------------------------------------------------------- importance sampling
@pytest.mark.parametrize("recipe", ["qwen3-4b-rods.yaml", "tiny-cpu-vllm.yaml"])
def test_vllm_recipes_use_bounded_token_level_importance_sampling(recipe, tmp_path):
    args = parse_recipe(RECIPES / recipe, [*CPU, "--output_dir", str(tmp_path)])
    assert args.use_vllm and args.vllm_importance_sampling_correction
    assert args.vllm_importance_sampling_mode in TOKEN_IS_MODES  # one ratio per token, not per episode
    assert args.vllm_importance_sampling_clip_max is not None and math.isfinite(args.vllm_importance_sampling_clip_max)


def test_sequence_level_or_unbounded_importance_sampling_is_refused(tmp_path):
    with pytest.raises(Exception, match="sequence-level"):
        parse_recipe(GPU_RECIPE, [*CPU, "--output_dir", str(tmp_path), "--vllm_importance_sampling_mode", "sequence_mask"])
    base = dict(use_vllm=True, vllm_importance_sampling_correction=True, vllm_importance_sampling_mode="token_truncate")
    with pytest.raises(ValueError, match="finite positive bound"):
        check_gpu_settings(SimpleNamespace(**base, vllm_importance_sampling_clip_max=math.inf), env={})
    check_gpu_settings(SimpleNamespace(**base, vllm_importance_sampling_clip_max=2.0), env={})  # accepted
    off = dict(base, vllm_importance_sampling_correction=False, vllm_importance_sampling_mode="sequence_mask")
    check_gpu_settings(SimpleNamespace(**off, vllm_importance_sampling_clip_max=None), env={})  # no IS: nothing to check


# ---------------------------------------------------------------------------------------------- the launch
def test_readme_recipe_and_launch_config_tell_one_fsdp2_story():
    launch = _launch_config()
    cfg = yaml.safe_load(launch.read_text())
    assert launch.name == "fsdp2.yaml" and cfg["distributed_type"] == "FSDP" and cfg["fsdp_config"]["fsdp_version"] == 2
    assert fsdp_enabled(SimpleNamespace(fsdp=None), _accelerate_env(launch))
    readme = (ROOT / "README.md").read_text()
    assert f"accelerate launch --config_file recipes/accelerate/{launch.name}" in readme
    assert sorted(p.name for p in (RECIPES / "accelerate").glob("*.yaml")) == ["fsdp2.yaml"]  # one launch config
    # the synthesis server's place is stated once, the same way: its own host, named by --synthesis_base_url
    for text in (readme, GPU_RECIPE.read_text()):
        assert "--synthesis_base_url http://SYNTH_HOST:8001/v1" in text and "--tensor-parallel-size 8" in text
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["gpu"]
    assert any(r.startswith("vllm==0.31") for r in extra)  # the newest vLLM TRL 1.16 supports (0.22-0.31)


def test_sharded_weights_with_transformers_generation_on_several_ranks_are_refused():
    fsdp = _accelerate_env(_launch_config(), world=8)
    hf = SimpleNamespace(use_vllm=False, deepspeed=None, use_cpu=False)
    with pytest.raises(ValueError, match="FSDP with use_vllm=false on several GPUs would hang"):
        check_gpu_settings(hf, env=fsdp)
    check_gpu_settings(hf, env={**fsdp, "WORLD_SIZE": "1"})  # one rank: nobody to wait for
    check_gpu_settings(SimpleNamespace(use_vllm=False, deepspeed=None, use_cpu=True), env=fsdp)  # CPU: DDP (CI)
    with pytest.raises(ValueError, match="would hang"):
        check_gpu_settings(hf, env=ZERO3_ENV)
    with pytest.raises(ValueError, match="would hang"):  # a DeepSpeed dict in the config says stage 3 as well
        check_gpu_settings(SimpleNamespace(use_vllm=False, deepspeed={"zero_optimization": {"stage": 3}}),
                           env={"WORLD_SIZE": "2"})
    vllm = SimpleNamespace(use_vllm=True, deepspeed=None, vllm_importance_sampling_correction=False, use_cpu=True)
    check_gpu_settings(vllm, env=fsdp)  # vLLM generates from its own whole copy of the weights


# ---------------------------------------------------------------------------------------------- memory
def test_qwen3_4b_parameter_count():
    assert abs(n_params(QWEN3_4B) / 1e9 - 4.02) < 0.01  # Qwen3-4B: 4.0 B parameters, tied embeddings


def test_gpu_recipe_fits_an_80gb_card_per_gpu(tmp_path):
    args = parse_recipe(GPU_RECIPE, [*CPU, "--output_dir", str(tmp_path)])
    assert fsdp_enabled(args, _accelerate_env(_launch_config()))
    est = recipe_memory(args, QWEN3_4B, world_size=8, fsdp2=True)
    assert args.gradient_checkpointing and args.per_device_train_batch_size <= 2
    assert est.total < CARD_80GB_GIB, est
    # the same effective batch per optimizer step as the paper: 512 trajectories = 32 prompts x K = 16
    assert 8 * args.per_device_train_batch_size * args.gradient_accumulation_steps == 512 == 32 * args.num_generations
    # the estimate can fail: the old per-device batch of 8 needs about twice the card
    old = recipe_memory(SimpleNamespace(**{**vars(args), "per_device_train_batch_size": 8}), QWEN3_4B,
                        world_size=8, fsdp2=True)
    assert old.total > 1.5 * CARD_80GB_GIB


def test_memory_estimate_components():
    est = estimate_memory(QWEN3_4B, per_device_batch=1, seq_len=32768, world_size=8, zero=2, beta=0.01,
                          vllm_share=0.35, gpu_gib=CARD_80GB_GIB)
    p = n_params(QWEN3_4B) / 1024**3
    assert math.isclose(est.params, 2 * p) and math.isclose(est.optimizer, 12 * p / 8) and math.isclose(est.reference, 2 * p)
    z3 = estimate_memory(QWEN3_4B, per_device_batch=1, seq_len=32768, world_size=8, zero=3, beta=0.01,
                         vllm_share=0.35, gpu_gib=CARD_80GB_GIB)
    assert z3.params < est.params and z3.reference < est.reference  # ZeRO-3 shards the weights too
    one = estimate_memory(QWEN3_4B, per_device_batch=1, seq_len=32768, world_size=1, zero=None, beta=0.01,
                          vllm_share=0.35, gpu_gib=CARD_80GB_GIB)
    assert one.total > CARD_80GB_GIB  # one 80 GB card cannot hold fp32 master weights + AdamW + vLLM (README says so)


def test_the_single_gpu_estimate_covers_what_the_h200_measured():
    """scripts/gpu_check.sh on the lent H200 (2026-12-04): Qwen3-4B's 36 layers with the tiny tokenizer's 2,048-token
    vocabulary, fp32 weights under bf16 autocast, AdamW, longest trained sequence 4,065 tokens: 63.12 GiB allocated
    at the peak (the end of a forward, before the optimizer step), 66.46 GiB reserved. Without autocast's bf16 weight
    cache the estimate said 57.5 GiB allocated, under the card's own reading."""
    cfg = {**QWEN3_4B, "vocab_size": 2048}
    assert n_params(cfg) == 3_638_754_816  # the check's params_b
    est = estimate_memory(cfg, per_device_batch=1, seq_len=4065, world_size=1, zero=None, beta=0.0, vllm_share=0.0,
                          gpu_gib=139.8)
    assert est.total - est.overhead >= 63.12  # what the allocator held at the peak
    assert est.total >= 66.46  # what it had reserved from the card
    assert est.total - 66.46 < est.overhead  # and not by more than the overhead the estimate already adds


def test_fp32_weights_under_autocast_checkpoint_an_fp32_residual_stream():
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from trainer.gpu_settings import activation_bytes_per_token

    # what the estimate assumes, measured: a float32 model under bf16 autocast carries fp32 hidden states between
    # layers (the tensors gradient checkpointing keeps), a bf16 model (DeepSpeed bf16) bf16 ones
    cfg = Qwen3Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                      num_key_value_heads=1, head_dim=16)
    ids = torch.randint(0, 64, (1, 8))
    for dtype, want in ((torch.float32, torch.float32), (torch.bfloat16, torch.bfloat16)):
        model = Qwen3ForCausalLM(cfg).to(dtype)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            hidden = model(input_ids=ids, output_hidden_states=True).hidden_states
        assert all(h.dtype == want for h in hidden[:-1]), (dtype, [h.dtype for h in hidden])
    layers, h = QWEN3_4B["num_hidden_layers"], QWEN3_4B["hidden_size"]
    assert activation_bytes_per_token(QWEN3_4B, 4) - activation_bytes_per_token(QWEN3_4B, 2) == 2 * layers * h
    one = estimate_memory(QWEN3_4B, per_device_batch=1, seq_len=32768, world_size=1, zero=None, beta=0.0,
                          vllm_share=0.0, gpu_gib=CARD_80GB_GIB)
    ds = estimate_memory(QWEN3_4B, per_device_batch=1, seq_len=32768, world_size=1, zero=2, beta=0.0,
                         vllm_share=0.0, gpu_gib=CARD_80GB_GIB)
    cache = 2 * n_params(QWEN3_4B)  # autocast's bf16 copies of the fp32 weights (the H200 test above)
    assert math.isclose(one.activations - ds.activations, (32768 * 2 * layers * h + cache) / 1024**3)


def test_gpu_recipe_rollouts_fit_vllms_kv_cache_and_the_check_says_what_to_change(tmp_path):
    """The first turn of one generate call's lock-step episodes fits the KV cache vLLM has per rank; the old
    settings (ZeRO-2's 0.35 share, 64 episodes per call) did not, and the check names a share and a
    steps_per_generation that fit."""
    args = parse_recipe(GPU_RECIPE, [*CPU, "--output_dir", str(tmp_path)])
    sizing = rollout_sizing(args, QWEN3_4B, world_size=8)
    assert sizing.fits, sizing.advice()
    assert 250_000 < sizing.kv_tokens < 300_000 and sizing.prompts == 2 and sizing.episodes == 32
    old = SimpleNamespace(**{**vars(args), "vllm_gpu_memory_utilization": 0.35, "steps_per_generation": 64})
    short = rollout_sizing(old, QWEN3_4B, world_size=8)
    assert not short.fits and 120_000 < short.kv_tokens < 140_000 and short.first_turn_tokens > 2 * short.kv_tokens
    advice = short.advice()
    assert "vllm_gpu_memory_utilization 0.6" in advice and "steps_per_generation 32" in advice
    fixed = SimpleNamespace(**{**vars(old), "vllm_gpu_memory_utilization": short.fit_share,
                               "steps_per_generation": short.fit_steps_per_generation})
    assert rollout_sizing(fixed, QWEN3_4B, world_size=8).fits  # following the advice makes it fit
    # and the settings it advises fit the card
    assert recipe_memory(fixed, QWEN3_4B, world_size=8, fsdp2=True).total < CARD_80GB_GIB
