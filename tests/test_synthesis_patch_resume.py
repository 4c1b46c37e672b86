"""Config patch agent and resumable CLI runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envs.dataset import load_tasks
from rods_agents.analysis.execution import classify_error, error_report
from rods_agents.analysis.tracing import trace_task
from rods_agents.variation.config_rules import propose_patch

ROOT = Path(__file__).resolve().parent.parent


def test_patch_creates_a_missing_file_and_the_plan_then_runs():
    task = load_tasks(ids=["multi_turn_base_0"])[0]
    doc = task.initial_config["GorillaFileSystem"]["root"]["workspace"]["contents"]["document"]["contents"]
    del doc["previous_report.pdf"]
    trace = trace_task(task)
    assert trace.errors
    err = error_report(trace.errors[0])
    assert err["kind"] == "missing_entity"
    patch = propose_patch(task.initial_config, err, trace)
    assert patch is not None and patch.rule == "fs.create_missing"
    assert patch.path.endswith("contents.previous_report.pdf")
    assert not trace_task(task).errors


@pytest.mark.parametrize(("text", "kind"), [
    ("Market is closed. Cannot withdraw funds.", "market_closed"),
    ("User not authenticated. Please log in", "not_authenticated"),
    ("Insufficient funds: requested 10 but only 2 available", "insufficient_funds"),
    ("No such file or directory: x.txt", "missing_entity"),
    ("something odd", "other"),
])
def test_errors_are_classified(text, kind):
    assert classify_error(text) == kind


def _cli(out: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "rods_cli.synthesize", "--seeds", "train", "--num-seeds", "10",
                             "--variants-per-seed", "2", "--out", str(out), *extra], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _ids(path: Path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.slow
def test_killed_run_resumes_without_duplicates_or_losses(tmp_path):
    out = tmp_path / "run"
    proc = _cli(out)
    deadline = time.time() + 120
    while time.time() < deadline:  # wait until some samples are finished, then kill hard
        report = out / "report.json"
        if report.exists() and json.loads(report.read_text())["run"]["finished"] >= 6:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = _ids(out / "accepted.jsonl")
    finished = json.loads((out / "report.json").read_text())["run"]["finished"]
    assert before and finished < 20
    assert _cli(out, "--resume").wait(timeout=300) == 0
    after = _ids(out / "accepted.jsonl")
    assert len(after) == len(set(after))
    assert set(before) <= set(after)
    assert json.loads((out / "report.json").read_text())["run"]["finished"] == 20
    # and the resumed run equals an uninterrupted one
    fresh = tmp_path / "fresh"
    assert _cli(fresh).wait(timeout=300) == 0
    assert sorted(after) == sorted(_ids(fresh / "accepted.jsonl"))


def test_graph_patches_a_broken_precondition_and_records_it_in_provenance():
    from envs.checker import check
    from graphs.synthesis import synthesize

    # seed 1 draws a balance too low for base_148's order; the patch agent tops it up (round, with headroom)
    result = synthesize(load_tasks(ids=["multi_turn_base_148"]), {"seed": 1, "variants_per_seed": 1})
    (task,) = result.accepted
    (patch,) = task.provenance["patches"]
    assert patch["rule"] == "trading.add_balance" and "Insufficient funds" in patch["error"]
    assert task.initial_config["TradingBot"]["account_info"]["balance"] == patch["value"]
    assert check(task, [[gt] for gt in task.ground_truth]).passed
    assert result.report["patch_share"] == 1.0
