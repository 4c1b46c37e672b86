"""Restarts around synthesis on the tiny closed loop (real GRPO steps, real offline graph through the sample driver).

* A run killed in the middle of an epoch while a step-dispatched round is in flight, resumed from the last
  boundary's checkpoint, has the same pool and candidate queue as the uninterrupted run at every boundary up to
  the first one after the restart (boundary 1: the one that takes the resumed round's variants). Both runs stop
  there (the third epoch only re-trains a pool already compared; it cost a third of the test's minutes).
* A synthesis stop (``synthesis_on_failure: stop``) writes that boundary's checkpoint before it raises, with
  the failed round back in flight, so ``--resume`` continues from the boundary instead of losing the epoch.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rods_cli.train import parse_recipe
from trainer.curriculum import STATE_FILE, Curriculum
from trainer.synthesis_bridge import SynthesisUnavailable

RECIPE = Path(__file__).resolve().parents[1] / "recipes" / "tiny-cpu.yaml"
SEEDS = ["multi_turn_base_29", "multi_turn_base_38", "multi_turn_base_1", "multi_turn_base_3"]


def _args(out: Path, *extra: str):
    return parse_recipe(RECIPE, ["--output_dir", str(out), "--task_ids", *SEEDS, "--reward_shaping",
                                 "synthetic_boundary", "--num_train_epochs", "3", "--synthesis_dispatch", "step",
                                 "--synthesis_wait_s", "-1", "--disable_tqdm", "true",
                                 "--num_generations", "2", *extra])  # K=2: all four seeds in one batch per epoch


class Enough(Exception):
    """Raised by the spy after the last boundary a test compares: the rest of the run would only cost minutes."""


class Boundaries:
    """Pool and candidate queue after every boundary (and the rounds submitted), recorded through spies."""

    def __init__(self, monkeypatch):
        self.seen: list[dict] = []
        self.kill_in_epoch: int | None = None
        self.stop_after: int | None = None
        real_end, real_record = Curriculum.end_epoch, Curriculum.record
        spy = self

        def end_epoch(cur, step, **kw):
            rep = real_end(cur, step, **kw)
            spy.seen.append({"epoch": rep.epoch, "pool": cur.buffer.active_ids(), "queue": cur.buffer.queued_ids(),
                             "injected": rep.injected, "synthesized": rep.synthesized})
            if spy.stop_after is not None and rep.epoch >= spy.stop_after:
                raise Enough(f"boundary {rep.epoch} recorded")
            return rep

        def record(cur, step, ids, rewards, k):
            real_record(cur, step, ids, rewards, k)
            if spy.kill_in_epoch is not None and cur.epoch == spy.kill_in_epoch and cur.dispatched:
                raise KeyboardInterrupt("killed mid-epoch with a synthesis round in flight")

        monkeypatch.setattr(Curriculum, "end_epoch", end_epoch)
        monkeypatch.setattr(Curriculum, "record", record)


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_a_resumed_run_matches_the_uninterrupted_run_at_every_boundary(tmp_path, monkeypatch):
    from trainer.grpo import train

    spy = Boundaries(monkeypatch)
    spy.stop_after = 1
    with pytest.raises(Enough):
        train(_args(tmp_path / "whole"))
    whole = list(spy.seen)
    assert [b["epoch"] for b in whole] == [0, 1]
    assert whole[0]["injected"] and whole[1]["synthesized"], "the loop grew nothing: the test shows nothing"

    spy.seen.clear()
    spy.kill_in_epoch = 1  # dies right after the batch of epoch 1 that submitted its boundary seeds
    with pytest.raises(KeyboardInterrupt):
        train(_args(tmp_path / "killed"))
    spy.kill_in_epoch = None
    saved = json.loads(next((tmp_path / "killed").glob(f"checkpoint-*/{STATE_FILE}")).read_text())
    assert saved["epoch"] == 1
    with pytest.raises(Enough):
        train(_args(tmp_path / "killed"), resume=True)
    assert spy.seen == whole, "pool or queue of the resumed run differs from the uninterrupted run's"


@pytest.mark.slow
def test_a_synthesis_stop_checkpoints_its_boundary_first(tmp_path, monkeypatch):
    from trainer.grpo import train

    Boundaries(monkeypatch)

    def down(seeds, epoch):
        raise ConnectionError("Connection refused")

    args = _args(tmp_path / "run", "--synthesis_max_failures", "1", "--synthesis_on_failure", "stop",
                 "--num_train_epochs", "2")
    with pytest.raises(SynthesisUnavailable, match="1 synthesis rounds failed in a row"):
        train(args, synthesizer=down)
    ckpts = sorted((tmp_path / "run").glob("checkpoint-*"))
    assert ckpts, "the stop lost the boundary: no checkpoint was written"
    state = json.loads((ckpts[-1] / STATE_FILE).read_text())
    assert state["epoch"] == 1 and len(state["reports"]) == 1  # boundary 0 is done and saved
    rounds = state["synthesis"]["rounds"]
    assert rounds and all(r["outcome"] is None for r in rounds)  # the failed round waits for --resume
    assert {s["id"] for r in rounds for s in r["seeds"]} == set(state["reports"][0]["seeds"])
