"""`rods synthesize` input errors, run manifest and a deterministic mid-sample resume."""

from __future__ import annotations

import json
import os
import re
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
                                             ("--max_llm_calls", "0"), ("--backbone", "gpt"), ("--backbone", "openai"),
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
                 "--extra_body", "--max_tokens", "--max_llm_calls", "--max-llm-calls"):
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


# ----------------------------------------------------------------------------- issue 16: no silent loss, no quiet failure
TWO_SEEDS = ("--id", "multi_turn_base_98,multi_turn_miss_func_17", "--variants_per_seed", "2")


def test_out_naming_an_existing_file_is_one_line_and_exit_2(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("mine\n")
    line = _one_error_line(_invoke("--num_seeds", "1", "--out", str(afile)))
    assert str(afile) in line and "not a folder" in line
    assert afile.read_text() == "mine\n"


def test_seeds_test_explains_that_the_test_split_is_held_out(tmp_path):
    line = _one_error_line(_invoke("--seeds", "test", "--out", str(tmp_path / "o")))
    assert "held out" in line and "no such file" not in line


def test_categories_and_id_pick_the_seeds(tmp_path):
    from rods_cli.synthesize import select_seeds

    assert {t.category for t in select_seeds("train", 6, categories=["miss_func"])} == {"miss_func"}
    picked = select_seeds("train", 20, ids=["multi_turn_miss_func_17,multi_turn_base_98"])
    assert [t.id for t in picked] == ["multi_turn_miss_func_17", "multi_turn_base_98"]
    line = _one_error_line(_invoke("--id", "multi_turn_base_988", "--out", str(tmp_path / "o")))
    assert "--id multi_turn_base_988" in line and "did you mean multi_turn_base_98" in line
    line = _one_error_line(_invoke("--categories", "bass", "--out", str(tmp_path / "o")))
    assert "--categories" in line and "base" in line


def test_ctrl_c_says_where_it_stopped_and_the_same_command_continues(tmp_path, monkeypatch):
    import graphs.results as results

    out = tmp_path / "run"
    real = results.RunTally.admit
    seen = {"n": 0}

    def interrupted_at_the_third(self, r):
        seen["n"] += 1
        if seen["n"] == 3:
            raise KeyboardInterrupt
        return real(self, r)

    monkeypatch.setattr(results.RunTally, "admit", interrupted_at_the_third)
    res = _invoke(*TWO_SEEDS, "--out", str(out))
    assert res.exit_code == 130, res.output
    m = re.search(r"interrupted: (\d) of 4 samples finished", res.output)
    assert m and int(m.group(1)) >= 2 and "--resume" in res.output
    assert f"--out {out}" in res.output and "Traceback" not in res.output
    monkeypatch.setattr(results.RunTally, "admit", real)
    published = _ids(out / "accepted.jsonl")
    assert published
    again = _invoke(*TWO_SEEDS, "--out", str(out))  # the same command, without --resume: continues, never truncates
    assert again.exit_code == 0, again.output
    assert "continuing the run" in again.output and f"{m.group(1)} of 4 samples already finished" in again.output
    after = _ids(out / "accepted.jsonl")
    assert after[: len(published)] == published
    fresh = _invoke(*TWO_SEEDS, "--out", str(tmp_path / "fresh"))
    assert fresh.exit_code == 0 and after == _ids(tmp_path / "fresh" / "accepted.jsonl")


@pytest.fixture
def endpoint_answering_500():
    """An endpoint that passes the /models preflight, then answers every chat call with HTTP 500."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def _send(self, code: int, body: bytes) -> None:
            self.send_response(code)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):  # noqa: N802
            self._send(200, b'{"object": "list", "data": [{"id": "m", "object": "model"}]}')

        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self._send(500, b'{"error": {"message": "boom"}}')

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_a_run_whose_samples_fail_on_the_llm_exits_nonzero_naming_the_reasons(tmp_path, endpoint_answering_500):
    out = tmp_path / "llm"
    res = runner.invoke(app, ["synthesize", "--num_seeds", "2", "--variants_per_seed", "1", "--backbone", "llm",
                              "--model", "m", "--base_url", endpoint_answering_500, "--max_retries", "0",
                              "--out", str(out)], env={"OPENAI_API_KEY": "x", "COLUMNS": "200"})
    assert res.exit_code == 1, res.output
    (line,) = [x for x in res.output.splitlines() if x.startswith("error:")]
    assert "2 of 2 samples failed on the LLM" in line and "llm_unreachable 2" in line
    report = json.loads((out / "report.json").read_text())
    assert report["accepted"] == 0
    # the seeds' value shares are the seeds' own, not 0.00 because nothing was accepted
    assert report["value_sources"]["all_seeds"]["user"] > 0
    (row,) = [x for x in res.output.splitlines() if "values from user" in x]
    assert "0.00 (0) /" not in row


@pytest.mark.slow
def test_a_real_ctrl_c_exits_130_naming_the_command_that_continues(tmp_path):
    import signal
    import time

    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "rods_cli.synthesize", *TWO_SEEDS, "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        report = out / "report.json"
        if report.exists() and json.loads(report.read_text())["run"]["finished"] >= 1:
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    text = err.decode()
    assert proc.returncode == 130, text[-2000:]
    assert "interrupted:" in text and "of 4 samples finished and saved" in text and "Traceback" not in text
    (again,) = [line.strip() for line in text.splitlines() if line.strip().startswith("rods synthesize ")]
    assert again.endswith("--resume") and f"--out {out}" in again
    before = _ids(out / "accepted.jsonl")
    rerun = subprocess.run([sys.executable, "-m", "rods_cli.main", *again.split()[1:]], cwd=ROOT, env=env,
                           capture_output=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr.decode()[-2000:]
    assert _ids(out / "accepted.jsonl")[: len(before)] == before
    assert json.loads((out / "report.json").read_text())["run"]["finished"] == 4


def test_the_first_ctrl_c_asks_the_run_to_stop_and_the_second_stops_it_at_once():
    """Ctrl-C during a run sets the stop event (samples in flight stop after their node) instead of raising
    KeyboardInterrupt inside LangGraph's executor, where it could leave the run waiting forever; a second Ctrl-C
    raises at once, and the handler before the run is back after it."""
    import signal
    import threading

    import pytest

    from rods_cli.synthesize import ctrl_c_stops

    stop = threading.Event()
    before = signal.getsignal(signal.SIGINT)
    with ctrl_c_stops(stop):
        signal.raise_signal(signal.SIGINT)
        assert stop.is_set()
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is before
