"""The TRL subclass's own steps: length-aware micro-batches and rollout metrics reduced across ranks."""

from __future__ import annotations

from collections import defaultdict
from types import SimpleNamespace

import pytest
import torch

from trainer.trl_trainer import (
    CurriculumGRPOTrainer,
    length_aware_split,
    padded_fraction,
    reduce_rollout_stats,
    rollout_stats,
)

LENGTHS = [3, 12, 2, 11, 4, 1, 10, 5]  # completion lengths of 8 rows (2 groups of K=4), widest 12


def _batch(lengths=LENGTHS, prompt=6):
    n, width = len(lengths), max(lengths)
    mask = torch.zeros(n, width, dtype=torch.long)
    ids = torch.zeros(n, width, dtype=torch.long)
    for i, n_tok in enumerate(lengths):
        mask[i, :n_tok] = 1
        ids[i, :n_tok] = 100 + i  # every token of row i carries its row number
    return {
        "prompt_ids": torch.arange(n * prompt).reshape(n, prompt), "prompt_mask": torch.ones(n, prompt, dtype=torch.long),
        "completion_ids": ids, "completion_mask": mask, "tool_mask": mask.clone(),
        "old_per_token_logps": mask.float() * -1.0, "advantages": torch.arange(n, dtype=torch.float),
        "num_items_in_batch": torch.tensor(sum(lengths)),
    }


def test_micro_batches_are_cut_to_their_own_widest_row_and_keep_every_token():
    batch = _batch()
    chunks = length_aware_split(batch, 4)
    assert [c["completion_ids"].shape[1] for c in chunks] == [12, 10, 4, 2]  # TRL's split: 12 every time
    rows = [int(r) for c in chunks for r in c["advantages"].tolist()]
    assert sorted(rows) == list(range(8))
    for c in chunks:  # each row keeps all its tokens, its mask and its per-row values, in its own row
        for j, row in enumerate(c["advantages"].tolist()):
            i = int(row)
            assert c["completion_mask"][j].sum() == LENGTHS[i]
            assert (c["completion_ids"][j, :LENGTHS[i]] == 100 + i).all()
            assert c["tool_mask"].shape == c["completion_mask"].shape == c["old_per_token_logps"].shape
            assert torch.equal(c["prompt_ids"][j], batch["prompt_ids"][i])  # left-padded prompts untouched
        assert c["num_items_in_batch"] == sum(LENGTHS)  # scalars travel as they are
    assert padded_fraction(chunks) < padded_fraction([dict(batch)])
    assert round(padded_fraction([dict(batch)]), 3) == round(1 - 48 / 96, 3)


def test_rows_of_equal_length_follow_the_tie_order():
    batch = _batch([4, 4, 4, 4, 9, 9])
    rows = [c["advantages"].tolist() for c in length_aware_split(batch, 3, tie_order=[5, 3, 4, 0, 2, 1])]
    assert rows == [[5.0, 4.0], [3.0, 0.0], [2.0, 1.0]]
    assert [c["advantages"].tolist() for c in length_aware_split(batch, 3)] == [[4.0, 5.0], [0.0, 1.0], [2.0, 3.0]]


def test_widths_respect_pad_to_multiple_of_and_refuse_an_uneven_split():
    assert [c["completion_ids"].shape[1] for c in length_aware_split(_batch(), 4, pad_to_multiple_of=4)] == [12, 12, 4, 4]
    with pytest.raises(ValueError, match="do not split"):
        length_aware_split(_batch(), 3)


def test_trainer_buffers_length_aware_micro_batches(monkeypatch):
    """``_prepare_inputs`` generates once per generation batch and serves the length-aware chunks in turn."""
    trainer = object.__new__(CurriculumGRPOTrainer)
    trainer.model = SimpleNamespace(training=True)
    trainer.args = SimpleNamespace(steps_per_generation=2)
    trainer.num_iterations = 1
    trainer.pad_to_multiple_of = None
    trainer._buffered_inputs = None
    trainer._metrics = {"train": defaultdict(list)}
    calls = []
    monkeypatch.setattr(CurriculumGRPOTrainer, "_generate_and_score_completions",
                        lambda self, rows: calls.append(rows) or _batch())
    widths = []
    for step in range(4):
        trainer._step = step
        widths.append(trainer._prepare_inputs(["rows"])["completion_ids"].shape[1])
    assert len(calls) == 2 and widths == [12, 4, 12, 4]
    assert trainer._metrics["train"]["rods/pad_frac"] == [pytest.approx(1 - 48 / 64)] * 2


def _rollout(seconds, tokens, calls, truncated, raw):
    traces = [SimpleNamespace(truncated=t) for t in truncated]
    return SimpleNamespace(seconds=seconds, generated_tokens=tokens, generate_calls=calls, traces=traces,
                           raw_rewards=raw)


def test_rollout_metrics_cover_every_rank_not_rank_zeros_rows():
    rank0 = rollout_stats(_rollout(2.0, 100, 3, [False, False], [0.0, 0.0]))
    rank1 = rollout_stats(_rollout(4.0, 300, 5, [True, False], [1.0, 1.0]))
    m = reduce_rollout_stats([rank0, rank1])
    assert m["rods/raw_reward"] == 0.5 and m["rods/truncated_frac"] == 0.25  # rank 0 alone: 0.0 and 0.0
    assert m["rods/rollout_s"] == 4.0 and m["rods/rollout_tokens_per_s"] == 100.0 and m["rods/generate_calls"] == 5


def test_trainer_logs_the_gathered_rollout_metrics(monkeypatch):
    from trl import GRPOTrainer

    other_rank = rollout_stats(_rollout(3.0, 60, 2, [True, True], [1.0, 1.0]))

    class TwoRanks:  # accelerate's gather on two ranks: this rank's row, then the other rank's
        device = torch.device("cpu")

        def gather(self, t):
            return torch.cat([t, torch.tensor([other_rank], dtype=t.dtype)])

    monkeypatch.setattr(GRPOTrainer, "_generate_and_score_completions", lambda self, inputs: {"ok": True})
    trainer = object.__new__(CurriculumGRPOTrainer)
    trainer.model = SimpleNamespace(training=True)
    trainer.accelerator = TwoRanks()
    trainer.curriculum = SimpleNamespace(generations_in_epoch=0)
    trainer._metrics = {"train": defaultdict(list)}
    trainer._last_rollout = _rollout(1.0, 20, 1, [False, False], [0.0, 0.0])
    assert trainer._generate_and_score_completions([{"task_id": "t"}]) == {"ok": True}
    m = trainer._metrics["train"]
    assert m["rods/raw_reward"] == [0.5] and m["rods/truncated_frac"] == [0.5] and m["rods/rollout_s"] == [3.0]
    assert trainer.curriculum.generations_in_epoch == 1


def _card(tmp_path, model_name):
    trainer = object.__new__(CurriculumGRPOTrainer)
    trainer.model = SimpleNamespace(config=SimpleNamespace(_name_or_path="/root/.cache/snapshot"))
    trainer.args = SimpleNamespace(model_name_or_path=model_name, output_dir=str(tmp_path), hub_model_id=None)
    trainer.hub_model_id = None
    trainer.is_world_process_zero = lambda: True
    trainer.create_model_card()
    assert trainer.model.config._name_or_path == "/root/.cache/snapshot" and trainer.hub_model_id is None
    return (tmp_path / "README.md").read_text()


def test_model_card_links_only_hub_models_and_loads_the_run(tmp_path):
    """Before: `[rods-tiny](https://huggingface.co/rods-tiny)` (no such page) and `pipeline(..., model="None")`."""
    card = _card(tmp_path, "rods-tiny")
    assert "huggingface.co/rods-tiny" not in card and 'model="None"' not in card and "huggingface.co/None" not in card
    assert "fine-tuned version of `rods-tiny` (a local model, not on the Hugging Face Hub)" in card
    assert f'model="{tmp_path}"' in card
    card = _card(tmp_path, "Qwen/Qwen3-4B-Instruct-2507")
    assert "[Qwen/Qwen3-4B-Instruct-2507](https://huggingface.co/Qwen/Qwen3-4B-Instruct-2507)" in card


def test_resume_does_not_warn_about_the_tied_output_head(caplog):
    """Before: `There were missing keys in the checkpoint model loaded: ['lm_head.weight']` on every resume."""
    from torch.nn.modules.module import _IncompatibleKeys

    tied = []
    model = SimpleNamespace(config=SimpleNamespace(tie_word_embeddings=True), _keys_to_ignore_on_save=None,
                            _tied_weights_keys={"lm_head.weight": "model.embed_tokens.weight"},
                            tie_weights=lambda: tied.append(True))
    trainer = object.__new__(CurriculumGRPOTrainer)
    trainer.model = model
    with caplog.at_level("WARNING"):
        trainer._issue_warnings_after_load(_IncompatibleKeys(["lm_head.weight"], []))
    assert "missing keys" not in caplog.text and tied == [True]
    with caplog.at_level("WARNING"):  # a key that really is missing is still reported
        trainer._issue_warnings_after_load(_IncompatibleKeys(["lm_head.weight", "model.norm.weight"], []))
    assert "['model.norm.weight']" in caplog.text and "lm_head" not in caplog.text
