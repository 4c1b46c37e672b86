"""An unscorable rollout (its prompt alone exceeds the context) is no observation for the curriculum.

TRL marks a row whose every reward is None as NaN (advantage 0, left out of its reward stats), but
``nansum`` would turn it into 0.0; recorded as 0 the task would look "hard" to the detector, and a
variant would be burned in or pruned on a score it never earned.
"""

from __future__ import annotations

import math
from types import SimpleNamespace


class Recorder:
    def __init__(self):
        self.calls = []

    def record(self, step, task_ids, rewards, k):
        self.calls.append((step, list(task_ids), list(rewards), k))


def test_curriculum_trainer_leaves_unscorable_groups_out_of_detection(monkeypatch, caplog):
    import torch
    from trl import GRPOTrainer

    from trainer import grpo

    cls = grpo.CurriculumGRPOTrainer
    nan = math.nan
    rpf = torch.tensor([[nan], [nan], [0.0], [1.0]])  # group 0: over-long prompt (None -> NaN), group 1: scored
    monkeypatch.setattr(GRPOTrainer, "_calculate_rewards", lambda self, *a, **kw: rpf.clone())
    trainer = object.__new__(cls)
    trainer.model = SimpleNamespace(training=True)
    trainer.reward_weights = torch.ones(1)
    trainer.num_generations = 2
    trainer.state = SimpleNamespace(global_step=3)
    trainer.curriculum = Recorder()
    inputs = [{"task_id": "multi_turn_base_0"}] * 2 + [{"task_id": "multi_turn_base_1"}] * 2
    with caplog.at_level("WARNING", logger="trainer.grpo"):
        out = trainer._calculate_rewards(inputs, None, None, None)
    assert torch.isnan(out[:2]).all()  # TRL still sees NaN (unscorable: advantage 0)
    assert trainer.curriculum.calls == [(3, ["multi_turn_base_1"] * 2, [0.0, 1.0], 2)]
    assert "multi_turn_base_0" in caplog.text
