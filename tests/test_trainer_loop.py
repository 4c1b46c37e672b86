"""The trainer's closed loop without TRL steps: recipes, epoch rows, boundaries, modes, state, plots."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import yaml

from envs.dataset import load_split
from rods_cli.train import parse_recipe
from trainer.config import RODSConfig
from trainer.curriculum import LOG_FILE, Curriculum
from trainer.grpo import max_steps_bound, unique_rows_per_generation
from trainer.synthesis_bridge import SynthesisOutcome, make_synthesizer

RECIPES = Path(__file__).resolve().parents[1] / "recipes"
CPU = ["--use_cpu", "true", "--bf16", "false"]


@pytest.fixture(scope="module")
def seeds():
    return [t for t in load_split("train", ["base"]) if t.involved_classes == ["GorillaFileSystem"]][:4]


@pytest.fixture()
def args(tmp_path):
    return parse_recipe(RECIPES / "tiny-cpu.yaml", ["--output_dir", str(tmp_path)])


def _variant(task, suffix):
    t = task.model_copy(deep=True)
    t.id = f"{task.id}__rods_{suffix}"
    return t


class FakeSynth:
    """Stands in for the graph: one variant per seed, records its calls."""

    def __init__(self):
        self.calls: list[tuple[list[str], int]] = []

    def __call__(self, seeds, epoch):
        self.calls.append(([s.id for s in seeds], epoch))
        return SynthesisOutcome(seeds=[s.id for s in seeds], accepted=[_variant(s, f"e{epoch}") for s in seeds],
                                attempted=len(seeds))


@pytest.mark.parametrize("recipe", sorted(p.name for p in RECIPES.glob("*.yaml")))
def test_recipes_parse_into_rods_config(recipe, tmp_path):
    fields = {f.name for f in dataclasses.fields(RODSConfig)}
    data = yaml.safe_load((RECIPES / recipe).read_text())
    assert set(data) <= fields, set(data) - fields
    args = parse_recipe(RECIPES / recipe, [*CPU, "--output_dir", str(tmp_path), "--num_generations", "4",
                                           "--mode", "static"])
    assert args.num_generations == 4 and args.mode == "static"  # command-line overrides win over the recipe


def test_gpu_recipe_carries_the_paper_settings(tmp_path):
    args = parse_recipe(RECIPES / "qwen3-4b-rods.yaml", [*CPU, "--output_dir", str(tmp_path)])
    assert (args.num_generations, args.alpha_minus, args.alpha_plus, args.p_max, args.injection_cap) == (16, 0.2, 0.85, 400, 0.2)
    assert args.learning_rate == 1e-6 and args.num_train_epochs == 5 and args.use_vllm and args.vllm_mode == "colocate"
    assert args.model_name_or_path == "Qwen/Qwen3-4B-Instruct-2507"


def test_bad_mode_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="mode"):
        RODSConfig(output_dir=str(tmp_path), mode="nope", use_cpu=True, bf16=False)


def test_epoch_rows_are_deterministic_whole_batches(seeds, args):
    cur = Curriculum(seeds[:3], args)
    rows = cur.epoch_rows(2)
    assert len(rows) == 4 and {r["task_id"] for r in rows} == {t.id for t in seeds[:3]}
    assert rows == Curriculum(seeds[:3], args).epoch_rows(2)
    assert rows[0]["prompt"] == cur.task(rows[0]["task_id"]).user_messages(0)


def _record_epoch(cur, rewards_by_task, k=4):
    ids, rewards = [], []
    for tid, rs in rewards_by_task.items():
        ids += [tid] * k
        rewards += rs
    cur.record(0, ids, rewards, k)


def test_no_boundary_tasks_is_logged_not_fatal(seeds, args):
    synth = FakeSynth()
    cur = Curriculum(seeds, args, synth, run_dir=args.output_dir)
    _record_epoch(cur, {t.id: [0.0] * 4 for t in seeds})
    rep = cur.end_epoch(step=1)
    assert rep.seeds == [] and "no boundary" in rep.seed_reason and synth.calls == []
    assert rep.hard == 4 and rep.pool_size == 4 and cur.epoch == 1


def test_boundary_round_synthesizes_queues_and_injects_at_the_boundary(seeds, args):
    synth = FakeSynth()
    cur = Curriculum(seeds, args, synth, run_dir=args.output_dir)
    a, b, c, d = (t.id for t in seeds)
    _record_epoch(cur, {a: [0, 1, 0, 1], b: [0, 1, 1, 1], c: [1] * 4, d: [0] * 4})
    before = {r["task_id"] for r in cur.epoch_rows(2)}
    rep = cur.end_epoch(step=2)
    assert sorted(rep.seeds) == sorted([a, b]) and synth.calls == [(rep.seeds, 0)]
    assert rep.synthesized and rep.injected == rep.synthesized[: max(1, int(args.injection_cap * 4))]
    after = {r["task_id"] for r in cur.epoch_rows(2)}
    assert not before & set(rep.injected) and set(rep.injected) <= after
    assert rep.metrics()["rods/injected"] == len(rep.injected)
    cur.append_log(rep)
    line = json.loads((Path(args.output_dir) / LOG_FILE).read_text().splitlines()[0])
    assert line["epoch"] == 0 and line["injected"] == rep.injected


def _run_epochs(seeds, args, mode, epochs=3, variant_reward=0.0):
    """Epochs whose rewards put two seeds on the boundary (so rods mode synthesizes and injects) and score every
    injected variant ``variant_reward`` (0: each would fail burn-in in rods mode)."""
    args.mode = mode
    synth = FakeSynth()
    cur = Curriculum(seeds, args, synth)  # a synthesizer is given in every mode: the mode alone must decide
    a, b, c, d = (t.id for t in seeds)
    fixed = {a: [0, 1, 0, 1], b: [0, 1, 1, 1], c: [1] * 4, d: [0] * 4}
    reports = []
    for epoch in range(epochs):
        _record_epoch(cur, {t.id: fixed.get(t.id, [variant_reward] * 4) for t in cur.active_tasks()})
        reports.append(cur.end_epoch(step=epoch))
    return cur, synth, reports


def test_static_mode_never_synthesizes_or_injects(seeds, args):
    cur, synth, reports = _run_epochs(seeds, args, "static")
    assert synth.calls == [] and all(r.boundary == 2 for r in reports)  # boundary tasks existed every epoch
    assert all(r.injected == [] and r.synthesized == [] for r in reports)
    assert cur.buffer.active_ids() == [t.id for t in seeds]
    _, rods_synth, rods_reports = _run_epochs(seeds, args, "rods")  # the same rewards do trigger the loop in rods mode
    assert rods_synth.calls and any(r.injected for r in rods_reports)


def test_no_retirement_mode_never_retires(seeds, args):
    cur, synth, reports = _run_epochs(seeds, args, "no-retirement")
    assert synth.calls and any(r.injected for r in reports)
    assert all(not ids for r in reports for ids in r.retired.values())
    injected = [t for r in reports for t in r.injected]
    assert set(injected) <= set(cur.buffer.active_ids())  # every variant stayed although it scored 0
    _, _, rods_reports = _run_epochs(seeds, args, "rods")  # in rods mode the same variants are burned in
    assert any(r.retired["burn_in"] for r in rods_reports)


def test_random_seeds_mode_draws_seeds_regardless_of_the_boundary(seeds, args):
    args.mode = "random-seeds"
    synth = FakeSynth()
    cur = Curriculum(seeds, args, synth)
    for epoch in range(3):
        _record_epoch(cur, {t.id: [0.0] * 4 for t in cur.active_tasks()})
        cur.end_epoch(step=epoch)
    assert synth.calls and all(len(s) == args.seeds_per_epoch for s, _ in synth.calls)  # no task is on the boundary


def test_burn_in_evicts_a_planted_variant_with_a_low_first_reward(seeds, args):
    args.injection_cap = 1.0
    cur = Curriculum(seeds, args, None)
    low, ok = _variant(seeds[0], "low"), _variant(seeds[0], "ok")
    cur.buffer.enqueue([low, ok], epoch=0)
    for t in (low, ok):
        cur._known[t.id] = t
    _record_epoch(cur, {t.id: [0, 1, 0, 1] for t in seeds})
    rep0 = cur.end_epoch(step=0)
    assert rep0.injected == [low.id, ok.id] and rep0.retired["burn_in"] == []  # not evaluated yet: no burn-in
    _record_epoch(cur, {**{t.id: [0, 1, 0, 1] for t in seeds}, low.id: [0.0, 0.0, 0.0, 0.5], ok.id: [0, 1, 0, 1]})
    rep1 = cur.end_epoch(step=1)
    assert rep1.retired["burn_in"] == [low.id]  # first mean 0.125 < 0.20
    assert low.id not in cur.buffer.active_ids() and ok.id in cur.buffer.active_ids()


def test_last_boundary_sends_no_seeds(seeds, args):
    synth = FakeSynth()
    cur = Curriculum(seeds, args, synth)
    a, b, c, d = (t.id for t in seeds)
    _record_epoch(cur, {a: [0, 1, 0, 1], b: [0, 1, 1, 1], c: [1] * 4, d: [0] * 4})
    rep = cur.end_epoch(step=1, last=True)
    assert synth.calls == [] and rep.seeds == [] and "last boundary" in rep.seed_reason and rep.boundary == 2


def test_state_round_trips_and_resume_skips_generated_rows(seeds, args):
    cur = Curriculum(seeds, args, FakeSynth())
    a, b, c, d = (t.id for t in seeds)
    _record_epoch(cur, {a: [0, 1, 0, 1], b: [0, 1, 1, 1], c: [1] * 4, d: [0] * 4})
    cur.end_epoch(step=2)
    cur.generations_in_epoch = 1
    path = Path(args.output_dir) / "state.json"
    cur.save(path)
    other = Curriculum(seeds, args, FakeSynth())
    other.load(path, unique_per_batch=2)
    assert other.state_dict() == cur.state_dict()
    assert other.buffer.active_ids() == cur.buffer.active_ids()
    assert other.resume_skip_rows == 2


def test_failing_synthesis_never_stops_training(seeds, args):
    def boom(seeds, epoch):
        raise RuntimeError("server down")

    out = make_synthesizer(args, boom)(seeds[:1], 0)
    assert out.accepted == [] and "server down" in out.error


def test_max_steps_bound_covers_the_largest_pool(args):
    u = unique_rows_per_generation(args)
    assert u == args.per_device_train_batch_size // args.num_generations
    assert max_steps_bound(args, 4) >= args.num_train_epochs * (4 + args.p_max) / u


def test_plot_writes_both_figures(seeds, args, tmp_path):
    from trainer.plot import plot_run

    cur = Curriculum(seeds, args, FakeSynth(), run_dir=tmp_path)
    a, b, c, d = (t.id for t in seeds)
    for epoch in range(2):
        _record_epoch(cur, {a: [0, 1, 0, 1], b: [0, 1, 1, 1], c: [1] * 4, d: [0] * 4})
        cur.append_log(cur.end_epoch(step=epoch))
    paths = plot_run(tmp_path)
    assert [p.name for p in paths] == ["pool_dynamics.png", "reward_distributions.png", "variants_vs_seeds.png"]
    assert all(p.stat().st_size > 1000 for p in paths)


# --------------------------------------------------------------------------- review fixes
def test_quota_by_class_spreads_category_quota_over_classes(args):
    base = load_split("train", ["base"])
    fs = [t for t in base if t.involved_classes == ["GorillaFileSystem"]][:3]
    tb = [t for t in base if t.involved_classes == ["TradingBot"]][:1]
    args.quota_by_class, args.seed_quotas, args.seeds_per_epoch = True, {"base": 2}, 2
    synth = FakeSynth()
    cur = Curriculum(fs + tb, args, synth)
    # the three file-system tasks rank best (0.5); the trading task (0.25) is the only one of its class group
    _record_epoch(cur, {fs[0].id: [0, 1, 0, 1], fs[1].id: [0, 1, 0, 1], fs[2].id: [0, 1, 0, 1], tb[0].id: [0, 0, 0, 1]})
    rep = cur.end_epoch(step=1)
    best_fs = sorted(t.id for t in fs)  # equal means and variances: id order
    assert sorted(rep.seeds) == sorted([best_fs[0], tb[0].id])  # one per class group, not the two best fs tasks
    # classes of injected variants are known to the detector (the lookup follows the live task table)
    (v,) = rep.injected
    _record_epoch(cur, {t.id: [0, 1, 0, 1] for t in cur.active_tasks()})
    assert cur.detector.stats(v).classes == sorted(cur.task(v).involved_classes) != []
    args.quota_by_class = False  # plain category quota: rank only
    plain = Curriculum(fs + tb, args, FakeSynth())
    _record_epoch(plain, {fs[0].id: [0, 1, 0, 1], fs[1].id: [0, 1, 0, 1], fs[2].id: [0, 1, 0, 1], tb[0].id: [0, 0, 0, 1]})
    assert sorted(plain.end_epoch(step=1).seeds) == best_fs[:2]


def test_resume_keeps_the_runs_current_settings_and_warns(seeds, args, tmp_path, caplog):
    cur = Curriculum(seeds, args, FakeSynth())
    a, b, c, d = (t.id for t in seeds)
    _record_epoch(cur, {a: [0, 1, 0, 1], b: [0, 1, 1, 1], c: [1] * 4, d: [0] * 4})
    cur.end_epoch(step=2)
    cur.save(tmp_path / "state.json")
    new_args = parse_recipe(RECIPES / "tiny-cpu.yaml", ["--output_dir", str(tmp_path), "--p_max", "3",
                                                        "--alpha_minus", "0.3", "--seeds_per_epoch", "1"])
    resumed = Curriculum(seeds, new_args, FakeSynth())
    with caplog.at_level("WARNING", logger="trainer.curriculum"):
        resumed.load(tmp_path / "state.json", unique_per_batch=2)
    assert resumed.resume_changes == {"p_max": (8, 3), "detector.alpha_minus": (0.2, 0.3), "seeds_per_epoch": (2, 1)}
    assert "p_max 8 -> 3" in caplog.text and "detector.alpha_minus 0.2 -> 0.3" in caplog.text
    assert resumed.buffer.config.p_max == 3 and resumed.detector.config.alpha_minus == 0.3
    saved, now = cur.state_dict(), resumed.state_dict()
    assert now["buffer"]["pool"] == saved["buffer"]["pool"] and now["buffer"]["queue"] == saved["buffer"]["queue"]
    assert now["detector"]["tracks"] == saved["detector"]["tracks"] and now["known"] == saved["known"]
    _record_epoch(resumed, {t.id: [0, 1, 0, 1] for t in resumed.active_tasks()})
    assert resumed.end_epoch(step=3).alpha_minus == 0.3  # the report shows the settings actually used


def test_pool_never_empties_with_retire_seeds(seeds, args):
    args.retire_seeds, args.mode = True, "static"
    cur = Curriculum(seeds, args)
    for epoch in range(3):  # every seed mastered every epoch
        _record_epoch(cur, {t.id: [1.0] * 4 for t in cur.active_tasks()})
        rep = cur.end_epoch(step=epoch)
    assert len(cur.buffer) == 1 and rep.kept == cur.buffer.active_ids() and rep.metrics()["rods/kept_by_floor"] == 1
    assert len(cur.epoch_rows(2)) == 2  # the next epoch still has rows


def test_graph_context_passes_the_llm_stages(args):
    from trainer.synthesis_bridge import graph_context

    assert graph_context(args, 0).backbone == "offline"
    args.synthesis_backbone, args.synthesis_model = "llm", "m"
    ctx = graph_context(args, 0)
    assert ctx.backbone == "llm" and ctx.llm_stages == ["plan", "rewrite", "patch", "judge"] and ctx.concurrency == 8
    parsed = parse_recipe(RECIPES / "tiny-cpu.yaml", ["--output_dir", str(args.output_dir), "--synthesis_backbone",
                                                      "llm", "--synthesis_model", "m", "--synthesis_llm_stages",
                                                      "plan,patch"])
    assert graph_context(parsed, 0).llm_stages == ["plan", "patch"]
    with pytest.raises(ValueError, match="unknown stage"):
        RODSConfig(output_dir=str(args.output_dir), use_cpu=True, bf16=False, synthesis_llm_stages=["critique"])


def test_epoch_stream_registry_does_not_keep_the_curriculum_alive(seeds, args):
    import gc
    import pickle

    from trainer.grpo import _STREAMS, _EpochStream

    cur = Curriculum(seeds, args)
    stream = _EpochStream(cur, 2)
    copy = pickle.loads(pickle.dumps(stream))
    assert [r["task_id"] for r in copy()] == [r["task_id"] for r in cur.epoch_rows(2)]
    del cur
    gc.collect()
    assert stream.key not in _STREAMS
    with pytest.raises(RuntimeError, match="freed"):
        list(stream())


def test_bad_recipe_value_is_one_clear_cli_error():
    from typer.testing import CliRunner

    from rods_cli.main import app

    result = CliRunner().invoke(app, ["train", "--config", "recipes/tiny-cpu.yaml", "--mode", "bogus"])
    assert result.exit_code == 2 and "mode must be one of" in result.output and "Traceback" not in result.output
