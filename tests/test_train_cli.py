"""``rods train`` as a user meets it: one naming scheme, one-line errors, a help that lists the RODS fields,
trackers that are missing, and the honest tiny-demo banner; plus the truthful progress callback."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from rods_cli.main import app
from rods_cli.train import TINY_BANNER, field_groups, parse_recipe

RECIPES = Path(__file__).resolve().parents[1] / "recipes"
TINY = str(RECIPES / "tiny-cpu.yaml")


def _train(*argv: str):
    return CliRunner().invoke(app, ["train", *argv])


def test_a_mistyped_override_is_one_line_with_the_nearest_field():
    res = _train("--config", TINY, "--num_generatons", "4")
    assert res.exit_code == 2
    assert res.output.strip().splitlines() == ["error: unknown option --num_generatons; did you mean --num_generations?"]


def test_a_bad_value_and_a_mistyped_recipe_key_are_one_line(tmp_path):
    res = _train("--config", TINY, "--num_generations", "abc")
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert res.exit_code == 2 and len(lines) == 1 and "invalid int value: 'abc'" in lines[0]
    bad = tmp_path / "r.yaml"
    bad.write_text("num_generatons: 4\n")
    res = _train("--config", str(bad))
    assert res.exit_code == 2 and "unknown field num_generatons; did you mean num_generations?" in res.output


def test_dashed_and_underscored_options_are_the_same_field(tmp_path):
    a = parse_recipe(Path(TINY), ["--output_dir", str(tmp_path), "--num-generations", "8", "--synthesis_wait_s", "-1"])
    b = parse_recipe(Path(TINY), ["--output-dir", str(tmp_path), "--num_generations", "8", "--synthesis-wait-s", "-1"])
    assert a.num_generations == b.num_generations == 8 and a.synthesis_wait_s == b.synthesis_wait_s == -1


def test_help_lists_the_rods_fields_by_group_and_points_to_trl():
    from trainer.config import RODSConfig

    res = _train("--help")
    assert res.exit_code == 0
    out = res.output
    groups = field_groups()
    assert {"model / tasks", "rollout", "reward", "curriculum", "synthesis"} <= set(groups)
    own = [f.name for f in dataclasses.fields(RODSConfig) if f.name in RODSConfig.__dict__["__annotations__"]]
    for name in own:  # every RODS field, with its one-line help from the dataclass metadata
        assert f"  --{name} (default " in out, name
    assert "Most synthesized tasks active at once, P_max (paper: 400)." in out
    assert "--help-all" in out and "learning_rate" not in out.split("TRL's own fields")[0]
    assert len(out.splitlines()) < 200
    assert _train("-h").output == out
    full = _train("--help-all")
    assert full.exit_code == 0 and "--learning_rate" in full.output and "--p_max" in full.output


def test_missing_config_is_one_line():
    res = _train()
    assert res.exit_code == 2 and "needs --config" in res.output


@pytest.mark.parametrize("backend", ["tensorboard", "trackio"])
def test_a_missing_tracker_is_one_clear_line(backend, monkeypatch, tmp_path):
    import rods_cli.train as train_cli

    real = train_cli.importlib.util.find_spec
    trackers = {m for modules, _ in train_cli.TRACKERS.values() for m in modules}
    monkeypatch.setattr(train_cli.importlib.util, "find_spec",
                        lambda name, *a: None if name in trackers else real(name, *a))
    res = _train("--config", TINY, "--output_dir", str(tmp_path), "--report_to", backend)
    assert res.exit_code == 2, res.output
    assert f"error: report_to={backend} needs `pip install -e '.[track]' (from the RODS checkout)`" in res.output
    assert "Traceback" not in res.output


def test_track_extra_is_declared():
    import tomllib

    extra = tomllib.loads((RECIPES.parent / "pyproject.toml").read_text())["project"]["optional-dependencies"]["track"]
    assert any(x.startswith("tensorboard") for x in extra) and any(x.startswith("trackio") for x in extra)


def test_backbone_names_are_offline_and_llm(tmp_path):
    from rods_agents.run.context import LLM_STAGES

    args = parse_recipe(Path(TINY), ["--output_dir", str(tmp_path), "--synthesis_backbone", "llm",
                                     "--synthesis_model", "m"])
    assert args.synthesis_backbone == "llm" and args.synthesis_llm_stages == list(LLM_STAGES)
    assert "judge" in LLM_STAGES
    with pytest.warns(FutureWarning, match="'openai' is deprecated; use 'llm'"):
        old = parse_recipe(Path(TINY), ["--output_dir", str(tmp_path), "--synthesis_backbone", "openai",
                                        "--synthesis_model", "m"])
    assert old.synthesis_backbone == "llm"
    res = _train("--config", TINY, "--output_dir", str(tmp_path), "--synthesis_backbone", "gpt")
    assert res.exit_code == 2 and "synthesis_backbone must be 'offline' or 'llm'" in res.output


def test_every_recipe_names_its_backbone_llm_or_offline():
    import yaml

    for recipe in RECIPES.glob("*.yaml"):
        data = yaml.safe_load(recipe.read_text())
        assert data.get("synthesis_backbone", "offline") in ("offline", "llm"), recipe.name


def test_tiny_banner_names_the_flag_that_rehearses_the_loop():
    assert "scores 0" in TINY_BANNER and "--reward_shaping synthetic_boundary" in TINY_BANNER


# ---------------------------------------------------------------------------------------------- progress
class _Cur:
    def __init__(self, pool):
        self.epoch, self.generations_in_epoch, self.epoch_generations = 0, 0, 0
        self.buffer = [0] * pool


def _args(max_steps=100):
    return SimpleNamespace(steps_per_generation=1, num_iterations=1, gradient_accumulation_steps=1,
                           generation_batch_size=8, num_generations=4, max_steps=max_steps)


def test_progress_total_and_epoch_follow_the_pool():
    """Pool 4 (2 generation batches), then 6 after boundary 0: the total goes 6 -> 7 and the run ends at 100%."""
    from transformers import TrainerControl, TrainerState

    from trainer.progress import TruthfulProgress

    cur, args = _Cur(4), _args()
    cb = TruthfulProgress(cur, epochs=2)
    state, control = TrainerState(), TrainerControl()
    cb.on_train_begin(args, state, control)
    assert state.max_steps == 4  # 2 epochs x 2 batches of the seed pool
    logged = []
    for epoch, (pool_after, gens) in enumerate([(6, 2), (6, 3)]):
        cur.epoch_generations = gens
        for g in range(gens):
            cur.generations_in_epoch = g + 1
            state.global_step += 1
            control.should_training_stop = state.global_step >= state.max_steps  # the Trainer's own stop
            cb.on_step_end(args, state, control)
            assert not control.should_training_stop or g + 1 == gens, "the estimate stopped training mid-epoch"
            control.should_training_stop = False
            logged.append(state.epoch)
        cur.epoch, cur.generations_in_epoch, cur.buffer = epoch + 1, 0, [0] * pool_after
        cb.on_epoch_end(args, state, control)
        if epoch == 0:
            assert state.max_steps == 2 + 3  # the next epoch over the grown pool is known exactly
    assert logged == pytest.approx([0.5, 1.0, 1 + 1 / 3, 1 + 2 / 3, 2.0], abs=1e-3)  # the curriculum's epoch
    assert state.epoch == 2.0 and state.max_steps == state.global_step == 5


def test_a_boundary_wait_near_the_process_group_timeout_is_refused(tmp_path):
    res = _train("--config", TINY, "--output_dir", str(tmp_path), "--synthesis_wait_s", "1500")
    assert res.exit_code == 2 and "must stay well under ddp_timeout=1800" in res.output
    res = _train("--config", TINY, "--output_dir", str(tmp_path), "--synthesis_dispatch", "epoch")
    assert res.exit_code == 2 and "synthesis_dispatch must be 'step' or 'boundary'" in res.output


# ---------------------------------------------------------------------------------------------- issue 16: no silent loss
def test_an_output_dir_that_is_a_file_is_one_line(tmp_path):
    """Before: a FileExistsError traceback from transformers' Trainer, after the model had loaded."""
    f = tmp_path / "notes.txt"
    f.write_text("mine")
    res = _train("--config", TINY, "--output_dir", str(f))
    assert res.exit_code == 2 and "is a file, not a folder" in res.output and "Traceback" not in res.output
    assert f.read_text() == "mine"


def _old_run(tmp_path):
    run = tmp_path / "run"
    (run / "checkpoint-8").mkdir(parents=True)
    (run / "checkpoint-8" / "model.safetensors").write_text("weights")
    (run / "curriculum.jsonl").write_text("{}\n")
    (run / "synthesis").mkdir()
    (run / "synthesis" / "round-e0-abc.sqlite").write_text("an old run's round")
    return run


def test_a_folder_holding_another_run_is_refused_not_overwritten(tmp_path, monkeypatch):
    """Before: the run started over in the folder, mixing logs and rotating away the old checkpoints."""
    import trainer.grpo as grpo

    run = _old_run(tmp_path)
    monkeypatch.setattr(grpo, "train", lambda args, resume=False: pytest.fail("must refuse before training"))
    res = _train("--config", TINY, "--output_dir", str(run))
    assert res.exit_code == 2
    assert "holds a training run (1 checkpoint(s), last checkpoint-8, curriculum.jsonl)" in res.output
    assert "--resume" in res.output and "--overwrite" in res.output
    assert (run / "checkpoint-8" / "model.safetensors").exists()


def test_overwrite_starts_over_and_resume_continues(tmp_path, monkeypatch):
    import trainer.grpo as grpo

    run = _old_run(tmp_path)
    seen = []
    monkeypatch.setattr(grpo, "train", lambda args, resume=False: seen.append(resume) or {"epochs": 0})
    assert _train("--config", TINY, "--output_dir", str(run), "--resume").exit_code == 0
    assert (run / "checkpoint-8").exists()
    res = _train("--config", TINY, "--output_dir", str(run), "--overwrite")
    assert res.exit_code == 0 and "removed the earlier run" in res.output
    assert not (run / "checkpoint-8").exists() and not (run / "curriculum.jsonl").exists() and seen == [True, False]
    assert not (run / "synthesis").exists()  # a fresh run must not resume the old run's synthesis rounds


def test_ctrl_c_says_where_it_stopped_and_how_to_continue(tmp_path, monkeypatch):
    """Before: a KeyboardInterrupt traceback (or nothing) and no word about --resume or the lost epoch."""
    import trainer.grpo as grpo

    def interrupted(args, resume=False):
        raise grpo.TrainingInterrupted(5, 2, 1, 3, Path(args.output_dir) / "checkpoint-4")

    monkeypatch.setattr(grpo, "train", interrupted)
    res = _train("--config", TINY, "--output_dir", str(tmp_path / "r"), "--num_generations", "4")
    assert res.exit_code == 130
    out = " ".join(res.output.split())
    assert "interrupted at step 5, in epoch 2 (1 of 3 generation batches done)" in out
    assert "the work of epoch 2 since checkpoint-4 is lost" in out
    assert f"rods train --config {TINY} --output_dir {tmp_path / 'r'} --num_generations 4 --resume" in out

    monkeypatch.setattr(grpo, "train", lambda args, resume=False: (_ for _ in ()).throw(
        grpo.TrainingInterrupted(1, 0, 1, 2, None)))
    res = _train("--config", TINY, "--output_dir", str(tmp_path / "r2"))
    out = " ".join(res.output.split())
    assert res.exit_code == 130 and "No checkpoint yet" in out and "--resume" not in out


def test_train_raises_training_interrupted_with_the_stop_point(monkeypatch, tmp_path):
    """The library side of Ctrl-C: synthesis closed, the step, epoch and last checkpoint reported."""
    import trainer.grpo as grpo

    closed = []
    cur = SimpleNamespace(epoch=1, generations_in_epoch=2, epoch_generations=3,
                          synthesizer=SimpleNamespace(close=lambda: closed.append(True)))

    class Stopped:
        state = SimpleNamespace(global_step=7)
        rods_callback = SimpleNamespace(clock=None)

        def train(self, resume_from_checkpoint=None):
            raise KeyboardInterrupt

    (tmp_path / "checkpoint-4").mkdir()
    (tmp_path / "checkpoint-4" / "trainer_state.json").write_text("{}")
    monkeypatch.setattr(grpo, "build_trainer", lambda args, **kw: (Stopped(), cur, None))
    args = SimpleNamespace(num_train_epochs=3, output_dir=str(tmp_path))
    with pytest.raises(grpo.TrainingInterrupted) as info:
        grpo.train(args)
    e = info.value
    assert (e.step, e.epoch, e.generations_done, e.generations, e.checkpoint.name) == (7, 1, 2, 3, "checkpoint-4")
    assert closed == [True]


# ---------------------------------------------------------------------------------------------- issue 16: one-line errors
def _tasks_file(tmp_path):
    from envs.dataset import load_split
    from envs.task import write_tasks

    tasks = [t for t in load_split("train", ["base"]) if "GorillaFileSystem" in t.involved_classes
             and len(t.involved_classes) > 1][:3]
    path = tmp_path / "accepted.jsonl"
    write_tasks(path, tasks)
    return path


def test_a_tasks_file_the_recipe_filters_empty_says_how_many_and_which_filter(tmp_path, monkeypatch):
    """Before: `ValueError: no seed tasks match the recipe (...)` with no counts (README: --tasks_file accepted.jsonl)."""
    path = _tasks_file(tmp_path)
    res = _train("--config", TINY, "--output_dir", str(tmp_path / "o"), "--tasks_file", str(path))
    out = " ".join(res.output.split())
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert f"no seed tasks: {path} holds 3 tasks; categories ['base'] kept 3, involved_classes " \
           "['GorillaFileSystem'] kept 0; clear that filter with --involved_classes all" in out
    import trainer.grpo as grpo

    got = []
    monkeypatch.setattr(grpo, "train", lambda args, resume=False: got.append(grpo.load_seed_tasks(args)) or {})
    res = _train("--config", TINY, "--output_dir", str(tmp_path / "o"), "--tasks_file", str(path),
                 "--involved_classes", "all")
    assert res.exit_code == 0 and len(got[0]) == 3


def test_a_recipes_list_filter_clears_from_the_command_line(tmp_path):
    args = parse_recipe(Path(TINY), ["--output_dir", str(tmp_path), "--involved_classes", "all", "--categories", "all"])
    assert args.involved_classes is None and args.categories is None
    kept = parse_recipe(Path(TINY), ["--output_dir", str(tmp_path)])
    assert kept.involved_classes == ["GorillaFileSystem"] and kept.categories == ["base"]
    assert kept.seed_quotas  # the tiny recipe's quota ({base: 2}) keeps a user's other categories out ...
    cleared = parse_recipe(Path(TINY), ["--output_dir", str(tmp_path), "--seed_quotas", "all"])
    assert cleared.seed_quotas is None  # ... and clears like the list filters


def test_a_bad_command_line_value_is_not_blamed_on_the_recipe(tmp_path):
    """Before: `error: recipes/tiny-cpu.yaml: mode must be one of (...), got 'statc'` (the recipe said rods)."""
    res = _train("--config", TINY, "--output_dir", str(tmp_path), "--mode", "statc")
    out = " ".join(res.output.split())
    assert res.exit_code == 2 and "error: --mode statc: mode must be one of" in out and "did you mean static?" in out
    assert "tiny-cpu.yaml" not in out


def test_help_all_does_not_undercount_its_lines():
    res = _train("--help-all")
    assert res.exit_code == 0 and "~400" not in res.output and len(res.output.splitlines()) > 1000
    assert "over 1,500 lines" in res.output


# ---------------------------------------------------------------------------------------------- issue 16: console
def test_console_lines_replace_trls_raw_dict():
    from trainer.trl_trainer import step_line

    state = SimpleNamespace(global_step=3, max_steps=8, epoch=1.5)
    line = step_line({"loss": 0.0123, "reward": 0.5, "rods/raw_reward": 0.0, "step_time": 9.87, "epoch": 1.5,
                      "completions/mean_length": 40.0}, state)
    assert line == "step 3/8  epoch 1.50  reward 0.500 (checker 0.000)  loss 0.0123  9.9 s"
    assert "checker" not in step_line({"loss": 0.1, "reward": 0.5, "rods/raw_reward": 0.5}, state)
    boundary = step_line({"rods/pool_size": 5.0, "rods/injected": 1.0, "rods/retired/burn_in": 1.0,
                          "rods/epoch": 0.0, "rods/boundary": 2.0, "rods/synthesized": 1.0}, state)
    assert boundary == "epoch 0 boundary: pool 5 (+1 injected, -1 retired), boundary tasks 2, synthesized 1"
    assert step_line({"train_runtime": 12.0}, state) is None


def test_summary_says_shaped_rewards_are_synthetic(tmp_path, capsys):
    import json

    from rods_cli.train import print_summary

    (tmp_path / "curriculum.jsonl").write_text(json.dumps({"rewards": [1.0, 0.0], "synthesized": ["v1", "v2"],
                                                           "injected": ["v1"]}) + "\n")
    (tmp_path / "log_history.json").write_text(json.dumps([{"rods/raw_reward": 0.0}, {"rods/raw_reward": 0.5}]))
    args = SimpleNamespace(output_dir=str(tmp_path), reward_shaping="synthetic_boundary",
                           model_name_or_path="rods-tiny", mode="rods")
    print_summary(args, {"epochs": 1})
    out = " ".join(capsys.readouterr().out.split())
    assert "1 of 2 non-zero (synthetic: reshaped by reward_shaping=synthetic_boundary; the checker's own mean " \
           "reward was 0.250); variants synthesized 2, injected 1" in out


def test_resume_summary_covers_the_whole_run(tmp_path):
    """Before: after --resume, train_seconds and training_loss covered only the resumed part."""
    import json

    from trainer.grpo import _seconds_before, run_loss

    ckpt = tmp_path / "checkpoint-4"
    ckpt.mkdir()
    assert _seconds_before(ckpt) == 0.0 and _seconds_before(None) == 0.0
    (ckpt / "rods_time.json").write_text(json.dumps({"train_seconds": 120.5}))
    assert _seconds_before(ckpt) == 120.5
    history = [{"loss": 0.4, "step": 1}, {"loss": 0.2, "step": 2}, {"rods/pool_size": 4.0}, {"loss": 0.0, "step": 3},
               {"train_loss": 0.0, "step": 3}]
    assert run_loss(history, fallback=0.0) == pytest.approx(0.2)  # TRL's training_loss after a resume: 0.0
    assert run_loss([], fallback=0.7) == 0.7


def test_checkpoints_carry_the_training_seconds_so_far(tmp_path, monkeypatch):
    import json

    from trainer.trl_trainer import CurriculumCallback

    saved = []
    cb = CurriculumCallback(SimpleNamespace(save=lambda p: saved.append(p)), epochs=2)
    cb.clock = (0.0, 100.0)
    monkeypatch.setattr("trainer.trl_trainer.time.perf_counter", lambda: 20.0)
    args, state = SimpleNamespace(output_dir=str(tmp_path)), SimpleNamespace(is_world_process_zero=True, global_step=6)
    cb.on_save(args, state, None)
    assert json.loads((tmp_path / "checkpoint-6" / "rods_time.json").read_text()) == {"train_seconds": 120.0}
    assert saved == [tmp_path / "checkpoint-6" / "rods_curriculum.json"]


def test_quiet_console_hides_library_deprecations_and_weight_bars():
    """Before: `FutureWarning: gradient_checkpointing is deprecated ...` twice, and `Loading weights` /
    `Writing model shards` bars around the training bar."""
    import warnings

    from transformers.utils import logging as hf_logging

    from rods_cli.train import quiet_console

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            quiet_console()
            assert not hf_logging.is_progress_bar_enabled()
            warnings.warn_explicit("`gradient_checkpointing` is deprecated and will be removed in v6. Use "
                                   "`activation_checkpointing` instead.", FutureWarning, "training_args.py", 1541,
                                   module="transformers.training_args")
            warnings.warn("a user's own FutureWarning", FutureWarning, stacklevel=1)
        finally:
            hf_logging.enable_progress_bar()
    assert [str(w.message) for w in caught] == ["a user's own FutureWarning"]


def test_a_seed_pool_cut_by_num_seed_tasks_is_said(tmp_path, caplog):
    """A user's 7 seeds under the tiny recipe's num_seed_tasks=4 trained on 4 without a word."""
    import logging

    from trainer.grpo import load_seed_tasks

    args = parse_recipe(Path(TINY), ["--output_dir", str(tmp_path)])
    with caplog.at_level(logging.WARNING, logger="trainer.grpo"):
        tasks = load_seed_tasks(args)
    assert len(tasks) == args.num_seed_tasks
    assert f"keeps the first {args.num_seed_tasks} of" in caplog.text
