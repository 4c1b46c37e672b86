"""`rods export` of a `rods train` output folder: the final pool and every variant the run injected, each with its
reward at every evaluation, in the trl / verl / bfcl formats, loaded with `datasets`.

Before: the variants lived only in rods_curriculum.json and `rods export RUN` answered "no accepted.jsonl".
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envs.dataset import load_split
from rods_cli.main import app
from rods_cli.train import parse_recipe
from trainer.curriculum import STATE_FILE, Curriculum

RECIPES = Path(__file__).resolve().parents[1] / "recipes"
runner = CliRunner()


def _variant(task, suffix):
    t = task.model_copy(deep=True)
    t.id = f"{task.id}__rods_{suffix}"
    t.provenance = {"seed_id": task.id, "backbone": "offline"}
    return t


def _record(cur, rewards_by_task, k=4):
    ids, rewards = [], []
    for tid, rs in rewards_by_task.items():
        ids += [tid] * k
        rewards += rs
    cur.record(0, ids, rewards, k)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A two-boundary run: two variants injected at the first, one of them burned in (retired) at the second; the
    state saved in a checkpoint only (a run stopped after it)."""
    out = tmp_path_factory.mktemp("train")
    args = parse_recipe(RECIPES / "tiny-cpu.yaml", ["--output_dir", str(out)])
    args.injection_cap = 1.0
    seeds = [t for t in load_split("train", ["base"]) if t.involved_classes == ["GorillaFileSystem"]][:3]
    cur = Curriculum(seeds, args, None)
    low, ok = _variant(seeds[0], "low"), _variant(seeds[0], "ok")
    cur.buffer.enqueue([low, ok], epoch=0)
    for t in (low, ok):
        cur._known[t.id] = t
    _record(cur, {t.id: [0, 1, 0, 1] for t in seeds})
    cur.end_epoch(step=1)
    _record(cur, {**{t.id: [0, 1, 1, 1] for t in seeds}, low.id: [0.0, 0.0, 0.0, 0.5], ok.id: [0, 1, 0, 1]})
    cur.end_epoch(step=2)
    (out / "checkpoint-2").mkdir()
    cur.save(out / "checkpoint-2" / STATE_FILE)  # a run stopped after its checkpoint: no final state file
    return out, seeds, low, ok


@pytest.mark.parametrize("fmt", ["trl", "verl"])
def test_training_run_exports_pool_and_injected_variants_with_reward_history(run, tmp_path, fmt, caplog):
    import datasets

    out, seeds, low, ok = run
    with caplog.at_level("WARNING"):
        result = runner.invoke(app, ["export", str(out), "--format", fmt, "--out", str(tmp_path / fmt)])
    assert result.exit_code == 0, result.output
    # every variant the run injected is exported, the one burned in (retired) at the second boundary too
    assert "final pool 4, 2 injected variants)" in result.output
    assert not any("retired" in r.getMessage() for r in caplog.records)
    ds = datasets.load_from_disk(str(tmp_path / fmt))
    rows = {r["id"]: r for r in ds}
    assert set(rows) == {t.id for t in seeds} | {ok.id, low.id}
    assert rows[low.id]["rods_origin"] == "injected" and not rows[low.id]["in_final_pool"]
    assert [h["mean_reward"] for h in rows[low.id]["reward_history"]] == [0.125]
    assert rows[ok.id]["rods_origin"] == "injected" and rows[ok.id]["in_final_pool"]
    assert rows[ok.id]["injected_epoch"] == 0
    assert rows[seeds[0].id]["rods_origin"] == "seed" and rows[seeds[0].id]["injected_epoch"] is None
    history = rows[seeds[1].id]["reward_history"]
    assert [h["mean_reward"] for h in history] == [0.5, 0.75] and [h["rollouts"] for h in history] == [4, 4]
    assert rows[ok.id]["reward_history"][0]["reward_std"] == pytest.approx(0.5)
    assert rows[ok.id]["seed_id"] == seeds[0].id
    assert "From a training run" in (tmp_path / fmt / "README.md").read_text()
    if fmt == "verl":
        table = datasets.load_dataset("parquet", data_files=str(tmp_path / fmt / "train.parquet"), split="train")
        assert table.features == ds.features


def test_training_run_exports_bfcl_files(run, tmp_path):
    out, seeds, low, ok = run
    result = runner.invoke(app, ["export", str(out), "--format", "bfcl", "--out", str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    id_map = json.loads((tmp_path / "b" / "id_map.json").read_text())
    assert sorted(id_map.values()) == sorted([t.id for t in seeds] + [ok.id, low.id])


def test_a_folder_with_neither_run_says_what_it_expected(tmp_path):
    result = runner.invoke(app, ["export", str(tmp_path), "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and "rods train` output folder" in result.output
