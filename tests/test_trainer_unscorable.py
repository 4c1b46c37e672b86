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
        from trainer.detection import BoundaryDetector

        self.calls = []
        self.detector = BoundaryDetector()

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
    with caplog.at_level("WARNING", logger="trainer.trl_trainer"):
        out = trainer._calculate_rewards(inputs, None, None, None)
    assert torch.isnan(out[:2]).all()  # TRL still sees NaN (unscorable: advantage 0)
    assert trainer.curriculum.calls == [(3, ["multi_turn_base_1"] * 2, [0.0, 1.0], 2)]
    assert "multi_turn_base_0" in caplog.text
    assert trainer.curriculum.detector.unscorable("multi_turn_base_0") == 1  # counted, for the buffer's burn-in


def test_a_variant_that_is_never_scorable_is_evicted_at_burn_in_not_kept_forever():
    from trainer.buffer import BufferConfig, ReplayBuffer
    from trainer.detection import BoundaryDetector

    seeds = [_task("multi_turn_base_0"), _task("multi_turn_base_1")]
    over, fine = _task("multi_turn_base_0__rods_long"), _task("multi_turn_base_0__rods_ok")
    buf = ReplayBuffer(seeds, BufferConfig(beta=1.0, p_max=8))
    det = BoundaryDetector()
    buf.enqueue([over, fine], epoch=0)
    det.record(0, 0, [s.id for s in seeds for _ in range(2)], [0.0, 1.0, 0.0, 1.0], 2)
    assert buf.on_epoch_boundary(0, det).injected == [over.id, fine.id]
    det.record(1, 1, [fine.id] * 2 + [s.id for s in seeds for _ in range(2)], [0.0, 1.0] * 3, 2)
    det.record_unscorable([over.id])  # its group was rolled out and dropped by scorable_groups
    rep = buf.on_epoch_boundary(1, det)
    assert [(r.task_id, r.reason) for r in rep.retired] == [(over.id, "burn_in")]
    assert fine.id in buf.active_ids() and over.id not in buf.active_ids()
    assert det.unscorable(over.id) == 0  # forgotten with it
    restored = BoundaryDetector()
    det.record_unscorable(["multi_turn_base_1"])
    restored.load_state_dict(det.state_dict())
    assert restored.unscorable("multi_turn_base_1") == 1


def _task(tid):
    from envs.dataset import load_tasks

    base = load_tasks("all", ["base"], None, ["multi_turn_base_0"])[0]
    return base.model_copy(update={"id": tid})
