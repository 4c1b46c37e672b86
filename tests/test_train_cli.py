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

    monkeypatch.setattr(train_cli.importlib.util, "find_spec", lambda name: None)
    res = _train("--config", TINY, "--output_dir", str(tmp_path), "--report_to", backend)
    assert res.exit_code == 2, res.output
    assert f"error: report_to={backend} needs `pip install 'rods[track]'`" in res.output
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
