"""The GPU recipe's dtype settings let a learning rate of 1e-6 move the weights.

With weights loaded in bfloat16 and no fp32 master copy, an AdamW update of ~lr = 1e-6 is far below
half a bf16 ulp of a typical weight (~0.02 -> ulp 1.2e-4), so almost every update rounds away.
The recipe loads float32 weights and computes in bf16 (autocast, or DeepSpeed bf16 with an fp32
optimizer copy), as TRL and accelerate expect. Measured on the tiny model at the recipe's numbers.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

RECIPE = Path(__file__).resolve().parents[1] / "recipes" / "qwen3-4b-rods.yaml"


def _changed_share(dtype_name: str, lr: float, bf16_autocast: bool, steps: int = 3) -> float:
    import torch
    from transformers import AutoModelForCausalLM

    from trainer.tiny_model import ensure_tiny_model

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(ensure_tiny_model(), dtype=getattr(torch, dtype_name))
    model.train()
    before = [p.detach().clone() for p in model.parameters()]
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)  # TRL/Trainer default optimizer
    ids = torch.randint(0, model.config.vocab_size, (2, 64))
    for _ in range(steps):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16_autocast):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
    changed = sum(int((p.detach() != b).sum()) for p, b in zip(model.parameters(), before, strict=True))
    return changed / sum(b.numel() for b in before)


@pytest.fixture(scope="module")
def recipe() -> dict:
    return yaml.safe_load(RECIPE.read_text())


def test_recipe_loads_fp32_master_weights_with_bf16_compute(recipe):
    assert recipe["torch_dtype"] == "float32" and recipe["bf16"] is True


def test_weights_move_at_the_recipes_learning_rate_and_dtype(recipe):
    share = _changed_share(recipe["torch_dtype"], float(recipe["learning_rate"]), bool(recipe["bf16"]))
    assert share > 0.9, f"only {share:.1%} of the weights changed in 3 AdamW steps"


def test_pure_bf16_weights_would_barely_move(recipe):
    # the failure the recipe avoids, measured the same way: the test above can fail
    assert _changed_share("bfloat16", float(recipe["learning_rate"]), True) < 0.2
