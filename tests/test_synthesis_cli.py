"""`rods synthesize` input errors, run manifest and a deterministic mid-sample resume."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rods_cli.main import app

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()


def _invoke(*args: str):
    return runner.invoke(app, ["synthesize", *args])


def _one_error_line(res) -> str:
    text = res.output.strip()
    assert res.exit_code == 2, text
    assert "Traceback" not in text
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    return lines[0]


def test_missing_seed_file_is_one_line_and_exit_2(tmp_path):
    line = _one_error_line(_invoke("--seeds", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "o")))
    assert "nope.jsonl" in line and line.startswith("error:")


def test_malformed_seed_file_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    from envs.dataset import load_tasks

    good = load_tasks(ids=["multi_turn_base_0"])[0].to_bfcl()
    bad.write_text(json.dumps(good) + "\n{not json\n")
    line = _one_error_line(_invoke("--seeds", str(bad), "--out", str(tmp_path / "o")))
    assert "bad.jsonl" in line and ":2" in line


@pytest.mark.parametrize(("flag", "value"), [("--num_seeds", "0"), ("--variants_per_seed", "0"),
                                             ("--backbone", "gpt"), ("--backbone", "openai"),
                                             ("--llm_stages", "plan,dance")])
@pytest.mark.parametrize("spelling", ["underscore", "dashed"])
def test_bad_flags_are_one_line_and_exit_2(tmp_path, flag, value, spelling):
    given = flag.replace("_", "-") if spelling == "dashed" else flag  # the dashed spelling is an alias
    line = _one_error_line(_invoke(given, value, "--out", str(tmp_path / "o")))
    assert flag in line  # the message names the canonical (recipe) spelling


def test_help_lists_the_canonical_names_and_their_aliases():
    res = runner.invoke(app, ["synthesize", "--help"], env={"COLUMNS": "200", "TERM": "dumb"})
    assert res.exit_code == 0
    for name in ("--num_seeds", "--num-seeds", "--variants_per_seed", "--llm_stages", "--base_url", "--backbone",
                 "--extra_body", "--max_tokens"):
        assert name in res.output, name
    assert "plan, rewrite, patch, judge" in res.output


def test_unreachable_endpoint_exits_2_naming_the_url_before_any_work(tmp_path):
    import socket

    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    out = tmp_path / "o"
    line = _one_error_line(_invoke("--num_seeds", "1", "--variants_per_seed", "1", "--backbone", "llm",
                                   "--model", "m", "--base_url", url, "--out", str(out)))
    assert url in line and "cannot reach" in line
    assert not out.exists()  # nothing written


def _small(out: Path, *extra: str):
    return _invoke("--num-seeds", "2", "--variants-per-seed", "1", "--out", str(out), *extra)


def test_resume_with_other_settings_is_refused(tmp_path):
    out = tmp_path / "run"
    assert _small(out).exit_code == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["seed"] == 0 and manifest["variants_per_seed"] == 1 and len(manifest["seed_ids"]) == 2
    report_before = (out / "report.json").read_text()
    for flags, key in ((["--num-seeds", "2", "--variants-per-seed", "1", "--seed", "1"], "seed"),
                       (["--num-seeds", "3", "--variants-per-seed", "1"], "seed_ids"),
                       (["--num-seeds", "2", "--variants-per-seed", "2"], "variants_per_seed")):
        line = _one_error_line(_invoke(*flags, "--out", str(out), "--resume"))
        assert "--resume" in line and "other settings" in line and f"{key}:" in line
    line = _one_error_line(_small(out, "--resume", "--backbone", "llm", "--model", "m", "--base-url", "http://127.0.0.1:9"))
    assert "backbone" in line
    assert (out / "report.json").read_text() == report_before  # nothing was touched
    assert _small(out, "--resume").exit_code == 0  # same settings: fine


def test_fresh_run_into_a_folder_holding_another_run_is_refused_unless_overwrite(tmp_path):
    out = tmp_path / "run"
    assert _small(out).exit_code == 0
    line = _one_error_line(_small(out, "--seed", "5"))
    assert "another run" in line and "--overwrite" in line
    assert _small(out).exit_code == 0  # same settings: continues the run (nothing to do)
    res = _small(out, "--seed", "5", "--overwrite")
    assert res.exit_code == 0 and json.loads((out / "manifest.json").read_text())["seed"] == 5


def _ids(path: Path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.slow
def test_kill_after_execute_resumes_the_same_sample_from_its_checkpoint(tmp_path):
    from langgraph.checkpoint.sqlite import SqliteSaver

    from graphs.synthesis import build_sample_graph

    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "rods_cli.synthesize", "--seeds", "train", "--num-seeds", "4",
           "--variants-per-seed", "2", "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # the test injects the kill: tests/synthesize_kill_after.py pauses after execute_plan and SIGKILLs at the 3rd pause
    kill_cmd = [sys.executable, "-m", "tests.synthesize_kill_after", "execute_plan", "3", *cmd[3:]]
    proc = subprocess.run(kill_cmd, cwd=ROOT, env=env, capture_output=True, timeout=300)
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]
    finished = json.loads((out / "report.json").read_text())["run"]["finished"] if (out / "report.json").exists() else 0
    # the sample that was running is stored mid-way: executed, not yet finalized
    import sqlite3

    conn = sqlite3.connect(out / "checkpoints.sqlite", check_same_thread=False)
    try:
        graph = build_sample_graph().compile(checkpointer=SqliteSaver(conn))
        threads = [r[0] for r in conn.execute("select distinct thread_id from checkpoints")]
        done = [r[0] for r in conn.execute("select thread_id from rods_samples")]
        # finished samples keep their result and node updates, not their checkpoints (bounded storage)
        assert len(threads) == 1 and len(done) == finished and threads[0] not in done
        (mid,) = threads
        state = graph.get_state({"configurable": {"thread_id": mid}})
        assert state.next and state.values.get("trace") and not state.values.get("results")
    finally:
        conn.close()
    before = _ids(out / "accepted.jsonl")
    assert subprocess.run([*cmd, "--resume"], cwd=ROOT, env=env, capture_output=True, timeout=300).returncode == 0
    after = _ids(out / "accepted.jsonl")
    assert after[: len(before)] == before and len(after) == len(set(after))
    fresh = tmp_path / "fresh"
    fresh_cmd = [*cmd[:-1], str(fresh)]
    assert subprocess.run(fresh_cmd, cwd=ROOT, env=env, capture_output=True, timeout=300).returncode == 0
    assert after == _ids(fresh / "accepted.jsonl")
    assert json.loads((out / "report.json").read_text())["run"]["finished"] == 8
