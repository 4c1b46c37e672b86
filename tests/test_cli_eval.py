"""`rods eval` and `rods tasks` as a user runs them."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from rods_cli.main import app

runner = CliRunner()


@pytest.mark.slow
def test_oracle_eval_all_800_passes(tmp_path):
    out = tmp_path / "report.json"
    result = runner.invoke(app, ["eval", "--policy", "oracle", "--split", "all", "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["overall"]["passed"] == 800 and report["overall"]["total"] == 800
    for name, cat in report["categories"].items():
        assert (cat["passed"], cat["total"], cat["progress"]) == (200, 200, 1.0), name
    assert len(report["entries"]) == 800 and all(e["passed"] for e in report["entries"])


def test_repeats_report_mean_and_std(tmp_path):
    out = tmp_path / "r.json"
    result = runner.invoke(app, ["eval", "--split", "train", "-c", "base", "--limit", "3", "--repeats", "2",
                                 "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["repeats"] == 2 and len(report["entries"]) == 6
    assert report["overall"]["accuracy"] == 1.0 and report["overall"]["accuracy_std"] == 0.0
    assert "±" in result.output


def test_tasks_jsonl_lists_split():
    result = runner.invoke(app, ["tasks", "--split", "test", "--format", "jsonl"])
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert len(rows) == 400
    assert {"id", "category", "scenario"} <= rows[0].keys()


def test_tasks_table_shows_whole_ids_on_an_80_column_terminal(tmp_path):
    """Variants of one seed differ only in their id suffix: a cut id makes them look alike."""
    seeds = [json.loads(line) for line in runner.invoke(
        app, ["tasks", "--split", "train", "-c", "base", "--format", "jsonl"]).output.splitlines()[:1]]
    from envs.dataset import load_tasks

    seed = load_tasks(ids=[seeds[0]["id"]])[0]
    rows = []
    for suffix in ("__rods_0a1b2c3d", "__rods_9f8e7d6c"):
        entry = seed.to_bfcl()
        rows.append({**entry, "id": seed.id + suffix})
    path = tmp_path / "variants.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = runner.invoke(app, ["tasks", "--tasks", str(path)], env={"COLUMNS": "80"}, terminal_width=80)
    assert result.exit_code == 0, result.output
    for r in rows:
        assert r["id"] in result.output


@pytest.mark.parametrize(
    ("content", "expected"),
    [("{not json\n", "tasks.jsonl:1: malformed JSON"),
     ('{"id": "multi_turn_base_0", "question": [[{"role": "user", "content": "hi"}]]}\n',
      "tasks.jsonl:1: entry 'multi_turn_base_0' has no ground_truth"),
     ('{"id": "multi_turn_base_9999"}\n', "tasks.jsonl:1: entry 'multi_turn_base_9999' has no ground_truth and is not "
                                          "a BFCL task id")],
)
def test_bad_task_file_names_file_and_line(tmp_path, content, expected):
    path = tmp_path / "tasks.jsonl"
    path.write_text(content)
    result = runner.invoke(app, ["eval", "--tasks", str(path)])
    assert result.exit_code == 2 and expected in result.output and "Traceback" not in result.output


def test_unknown_id_and_missing_file():
    assert "unknown task id(s): nope" in runner.invoke(app, ["eval", "--id", "nope"]).output
    result = runner.invoke(app, ["eval", "--tasks", "/does/not/exist.jsonl"])
    assert result.exit_code == 2 and "no such file" in result.output


@pytest.mark.parametrize("flag", ["--strict_tools", "--strict-tools"])
def test_eval_options_take_the_canonical_and_the_dashed_spelling(flag):
    """One naming scheme: underscore names as in recipes, dashed ones accepted."""
    result = CliRunner().invoke(app, ["eval", "--policy", "oracle", "--split", "all", "--id", "multi_turn_base_0", flag])
    assert result.exit_code == 0, result.output
