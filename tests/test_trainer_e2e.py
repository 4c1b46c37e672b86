"""``rods train --config recipes/tiny-cpu.yaml`` end to end on CPU, through the CLI function.

Real TRL GRPO steps, real BFCL episodes (tiny Qwen3 model, transformers generate), the real
synthesis graph (offline backbone), the real detector and buffer. An untrained tiny model scores
0 everywhere, so the run uses the documented shaping hook ``synthetic_boundary`` on four chosen
seeds: two boundary tasks (rewards alternate 0/1 over the group), one mastered, one left as
scored (hard). The production code path is unchanged; the test only observes it through spies.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

import trainer.rollout as rollout_mod
from rods_cli.train import TRAIN_CONTEXT_SETTINGS, plot_command, train_command
from trainer.curriculum import STATE_FILE, Curriculum
from trainer.reward_shaping import _bucket

RECIPE = Path(__file__).resolve().parents[1] / "recipes" / "tiny-cpu.yaml"
# hash buckets of synthetic_boundary: 0 -> boundary, 1 -> mastered, 2 -> reward as scored (0: hard)
SEEDS = ["multi_turn_base_29", "multi_turn_base_38", "multi_turn_base_1", "multi_turn_base_3"]


def _app() -> typer.Typer:
    app = typer.Typer()
    app.command("train", context_settings=TRAIN_CONTEXT_SETTINGS)(train_command)
    app.command("plot")(plot_command)
    return app


class Spy:
    """Timeline of rollouts, detector records, synthesis rounds and boundaries."""

    def __init__(self, monkeypatch):
        self.events: list[tuple] = []
        self.curriculum: Curriculum | None = None
        spy = self
        real_run, real_record, real_end = rollout_mod.run_rollouts, Curriculum.record, Curriculum.end_epoch

        def run_rollouts(tasks, *a, **kw):
            res = real_run(tasks, *a, **kw)
            spy.events.append(("rollout", [t.id for t in tasks], res))
            return res

        def record(self, step, task_ids, rewards, k):
            spy.curriculum = self
            spy.events.append(("record", self.epoch, list(task_ids), list(rewards), k))
            return real_record(self, step, task_ids, rewards, k)

        def end_epoch(self, step, **kw):
            rep = real_end(self, step, **kw)
            spy.events.append(("boundary", rep))
            return rep

        import graphs.driver as driver

        real_synth = driver.synthesize_resumable  # a trainer round: one checkpointed run of the sample driver

        def synthesize(seeds, ctx, db_path, **kw):
            res = real_synth(seeds, ctx, db_path, **kw)
            spy.events.append(("synth", [s.id for s in seeds], [t.id for t in res.accepted]))
            return res

        monkeypatch.setattr(rollout_mod, "run_rollouts", run_rollouts)
        monkeypatch.setattr(Curriculum, "record", record)
        monkeypatch.setattr(Curriculum, "end_epoch", end_epoch)
        monkeypatch.setattr(driver, "synthesize_resumable", synthesize)

    def of(self, kind: str) -> list[tuple]:
        return [e for e in self.events if e[0] == kind]


def _spans(ids, mask, tok):
    out, start = [], 0
    for i in range(1, len(ids) + 1):
        if i == len(ids) or mask[i] != mask[start]:
            out.append((mask[start], tok.decode(ids[start:i], skip_special_tokens=False)))
            start = i
    return out


@pytest.mark.slow
def test_tiny_cpu_closed_loop_two_epochs_then_resume(tmp_path, monkeypatch):
    assert [_bucket(s, 3) for s in SEEDS] == [0, 0, 1, 2]
    run_dir = tmp_path / "run"
    spy = Spy(monkeypatch)
    # K=2: the four seeds fill one batch of 8 sequences, so each epoch costs half the steps of the recipe's K=4
    common = ["--config", str(RECIPE), "--output_dir", str(run_dir), "--task_ids", *SEEDS,
              "--reward_shaping", "synthetic_boundary", "--num_generations", "2"]
    t0 = time.perf_counter()
    res = CliRunner().invoke(_app(), ["train", *common, "--num_train_epochs", "2"], catch_exceptions=False)
    first_run_s = time.perf_counter() - t0
    assert res.exit_code == 0, res.output
    summary = json.loads((run_dir / "rods_summary.json").read_text())
    assert summary["epochs"] == 2
    # progress is truthful: the logged epoch is the curriculum's, and the last step is the last logged one
    history = json.loads((run_dir / "log_history.json").read_text())
    assert history[-1]["epoch"] == 2 and max(h["step"] for h in history) == summary["global_step"]
    assert 0 < history[0]["epoch"] <= 1
    # the model card names the base model (not "[None]")
    assert "fine-tuned version of `rods-tiny` (a local model" in (run_dir / "README.md").read_text()

    rollouts, records, boundaries = spy.of("rollout"), spy.of("record"), [e[1] for e in spy.of("boundary")]
    assert len(boundaries) == 2 and summary["global_step"] == len(rollouts) >= 2

    # detection saw every group: each rollout batch was recorded, in order, as groups of K sharing a task id
    assert [r[1] for r in rollouts] == [r[2] for r in records]
    for _, _, ids, _rewards, k in records:
        assert k == 2 and len(ids) % k == 0
        assert all(len(set(ids[g:g + k])) == 1 for g in range(0, len(ids), k))
    assert records[0][1] == 0 and sorted(set(records[0][2])) == sorted(SEEDS)  # epoch 0: the four seeds, one batch

    # boundary 0: the two boundary seeds were chosen and synthesized; their variants injected at the boundary
    b0 = boundaries[0]
    assert (b0.boundary, b0.mastered, b0.hard) == (2, 1, 1)
    assert sorted(b0.seeds) == sorted(SEEDS[:2])
    synth_rounds = spy.of("synth")
    assert synth_rounds and sorted(synth_rounds[0][1]) == sorted(b0.seeds)
    assert b0.synthesized == synth_rounds[0][2] and b0.synthesized, "offline synthesis accepted no variant"
    assert b0.injected and set(b0.injected) <= set(b0.synthesized)
    n_before = next(i for i, e in enumerate(spy.events) if e[0] == "boundary")
    trained_before = {tid for e in spy.events[:n_before] if e[0] == "rollout" for tid in e[1]}
    trained_after = {tid for e in spy.events[n_before:] if e[0] == "rollout" for tid in e[1]}
    assert trained_before == set(SEEDS)
    assert not trained_before & set(b0.synthesized)  # queued items never trained before the boundary
    assert set(b0.injected) <= trained_after  # and train in the very next epoch
    assert b0.pool_size == 4 + len(b0.injected)
    # boundary 1 saw the injected variants' first evaluation: exactly those the untrained model scores 0
    # (synthetic_boundary's hash bucket 2) are burned in, nothing else retires, and the pool adds up
    b1 = boundaries[1]
    burned = sorted(tid for tid in b0.injected if _bucket(tid, 3) == 2)
    assert sorted(b1.retired["burn_in"]) == burned
    assert b1.retired["mastered"] == b1.retired["hard"] == b1.retired["pruned"] == []
    assert b1.pool_size == b1.pool_before + len(b1.injected) - len(burned)
    assert b1.seeds == [] and "last boundary" in (b1.seed_reason or "")  # a variant made now could never train

    # the loss mask: 1 only on model tokens; user turns (and any tool results) are 0
    from transformers import AutoTokenizer

    from trainer.tiny_model import ensure_tiny_model

    tok = AutoTokenizer.from_pretrained(ensure_tiny_model())
    user_turn_seen = False
    for _, _ids, result in rollouts:
        for trace, episode in zip(result.traces, result.episodes, strict=True):
            assert len(trace.env_mask) == len(trace.completion_ids) and trace.completion_ids
            assert trace.env_mask[0] == 1
            spans = _spans(trace.completion_ids, trace.env_mask, tok)
            # what the environment wrote (a user turn, a tool result) never sits under the model's mask; a bare
            # special token may (the untrained model samples any of its 2k tokens), the env's words may not
            env_words = [f"<|im_start|>user\n{m['content'][:20]}" if m["role"] == "user"
                         else f"<tool_response>\n{m['content'][:20]}"
                         for m in episode.messages[1:] if m["role"] in ("user", "tool") and m["content"]]
            for m, text in spans:
                if m == 1:
                    assert not [w for w in env_words if w in text], text
            injected = "".join(t for m, t in spans if m == 0)
            for msg in episode.messages[1:]:
                if msg["role"] in ("user", "tool") and f"<|im_start|>user\n{msg['content'][:20]}" in injected:
                    user_turn_seen = True
    assert user_turn_seen, "no episode reached a second user turn inside the budget"

    # metrics reached report_to through Trainer.log, and the curriculum log has one line per epoch
    ckpts = sorted(run_dir.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    state = json.loads((ckpts[-1] / "trainer_state.json").read_text())
    assert state["max_steps"] == state["global_step"] == summary["global_step"]  # the bar ends at 100%
    assert any("rods/pool_size" in h for h in state["log_history"])
    assert any("rods/rollout_s" in h for h in state["log_history"])
    lines = (run_dir / "curriculum.jsonl").read_text().splitlines()
    assert [json.loads(ln)["epoch"] for ln in lines] == [0, 1]

    # buffer save/load round-trips through the checkpoint, and --resume continues with the same pool
    saved = json.loads((ckpts[-1] / STATE_FILE).read_text())
    final = json.loads((run_dir / STATE_FILE).read_text())
    assert saved["buffer"] == final["buffer"] and saved["detector"] == final["detector"]
    assert saved["epoch"] == 2
    pool = [t["id"] for t in saved["buffer"]["pool"]]
    spy.events.clear()
    gs = summary["global_step"]
    res = CliRunner().invoke(_app(), ["train", *common, "--num_train_epochs", "3", "--max_steps", str(gs + 1),
                                      "--resume"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    resumed = json.loads((run_dir / "rods_summary.json").read_text())
    resumed_history = json.loads((run_dir / "log_history.json").read_text())
    assert 2 < resumed_history[-1]["epoch"] < 3  # inside epoch 2 of the curriculum, not 0.19
    assert resumed["resumed_from"] == str(ckpts[-1]) and resumed["global_step"] == gs + 1
    first = spy.of("rollout")[0][1]
    assert set(first) <= set(pool)
    cur = spy.curriculum
    assert cur is not None and cur.epoch == 2 and [r.epoch for r in cur.reports] == [0, 1]
    assert cur.buffer.active_ids() == pool
    for tid in SEEDS:  # detector statistics of epochs 0 and 1 survived the restart
        assert cur.detector.evaluations(tid) >= 2

    # rods plot draws both figures
    res = CliRunner().invoke(_app(), ["plot", str(run_dir)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert (run_dir / "pool_dynamics.png").stat().st_size > 0
    assert (run_dir / "reward_distributions.png").stat().st_size > 0
    print(f"first run (2 epochs, {gs} steps): {first_run_s:.1f} s; mean step {summary['step_seconds_mean']:.1f} s")
