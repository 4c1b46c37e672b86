"""`rods eval --policy openai` against the real vLLM server: every entry scored, the report written, malformed tool
calls counted instead of crashing.

The model is random, so its accuracy is not asserted. To exercise the tool-call paths deterministically, one run goes
through a loopback proxy that adds a ``structured_outputs`` regex to the first request of some turns: the real server
then emits a Hermes tool call that its own parser turns into a structured tool call (well-formed for one task,
with non-object arguments for another); the other tasks get the model's own output untouched.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from envs.dataset import load_tasks
from tests.fake_openai import LoopbackServer

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
# One task per category, all on GorillaFileSystem (the smallest tool set: ~4k-token prompts), from different
# scenarios: a scenario's variants share their first user message, which is how the proxy recognises a task.
TASK_IDS = ["multi_turn_base_12", "multi_turn_miss_func_37", "multi_turn_miss_param_25", "multi_turn_long_context_39"]
WELL_FORMED = "multi_turn_base_12"  # proxy forces `pwd()` on each turn's first step
MALFORMED = "multi_turn_miss_param_25"  # proxy forces a call whose arguments are a JSON string, not an object


def hermes_regex(name: str, arguments_json: str) -> str:
    return re.escape(f'<tool_call>\n{{"name": "{name}", "arguments": {arguments_json}}}\n</tool_call>')


FORCED = {WELL_FORMED: hermes_regex("pwd", "{}"), MALFORMED: hermes_regex("ls", '"everything please"')}


class ForcingProxy(LoopbackServer):
    """Loopback HTTP proxy to the server; forces a tool call on the first step of a turn for chosen tasks.

    A task is recognised by its first user message (the runner resends the whole conversation every step).
    """

    def __init__(self, upstream: str, forced: dict[str, str]):
        self.upstream = upstream.rstrip("/")
        self.forced = forced  # first user message -> regex
        self.forced_requests = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def _forward(self, body: bytes | None) -> None:
                req = urllib.request.Request(proxy.upstream + self.path.removeprefix("/v1"), data=body,
                                             method=self.command, headers={"Content-Type": "application/json"})
                try:
                    with urllib.request.urlopen(req, timeout=300) as r:  # noqa: S310 - loopback
                        status, data = r.status, r.read()
                except urllib.error.HTTPError as e:
                    status, data = e.code, e.read()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._forward(None)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                msgs = body.get("messages", [])
                first_user = next((m.get("content") for m in msgs if m.get("role") == "user"), None)
                regex = proxy.forced.get(first_user)
                if regex and msgs and msgs[-1].get("role") == "user":  # first step of a turn only
                    body["structured_outputs"] = {"regex": regex}
                    body["skip_special_tokens"] = False  # <tool_call> is a special token for the parser
                    proxy.forced_requests += 1
                self._forward(json.dumps(body).encode())

        super().__init__(Handler)


def run_eval(base_url: str, out: Path, cwd: Path) -> tuple[subprocess.CompletedProcess, float]:
    cmd = [sys.executable, "-m", "rods_cli.main", "eval", "--policy", "openai", "--model", "tiny",
           "--base-url", base_url, "--out", str(out), "--concurrency", "4", "--timeout", "120"]
    for task_id in TASK_IDS:
        cmd += ["--id", task_id]
    t0 = time.monotonic()
    env = {**os.environ, "PYTHONPATH": str(REPO), "OPENAI_API_KEY": "EMPTY", "COLUMNS": "160"}
    env.pop("OPENAI_BASE_URL", None)
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600, env=env)
    return proc, time.monotonic() - t0


def check_protocol(report: dict) -> None:
    """Every requested task appears once, scored, and the aggregates add up."""
    entries = {e["id"]: e for e in report["entries"]}
    assert sorted(entries) == sorted(TASK_IDS)
    assert report["overall"]["total"] == len(TASK_IDS)
    assert set(report["categories"]) == {"base", "miss_func", "miss_param", "long_context"}
    for e in entries.values():
        assert 0.0 <= e["progress"] <= 1.0
        assert e["steps"] >= 1, e  # the model answered at least once: the server was reached
        assert e["failure"] != "multi_turn:inference_error", e  # no policy/transport error ended an episode
    assert report["malformed_calls"] == sum(e["malformed_calls"] for e in entries.values())


def test_eval_openai_policy_scores_every_entry(vllm_server, workdir):
    out = workdir / "report.json"
    proc, seconds = run_eval(vllm_server.base_url, out, workdir)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:] + vllm_server.log_tail()
    report = json.loads(out.read_text())
    check_protocol(report)
    assert report["policy"] == "openai"
    assert "report written to" in proc.stdout
    for e in report["entries"]:
        assert e["failure"] != "multi_turn:inference_error", e  # no policy/transport error ended an episode
    print(f"rods eval (4 tasks, random model): {seconds:.1f} s")


def test_eval_counts_server_parsed_tool_calls_and_malformed_ones(vllm_server, workdir):
    tasks = {t.id: t for t in load_tasks("test", ids=TASK_IDS)}
    forced = {tasks[i].user_messages(0)[0]["content"]: regex for i, regex in FORCED.items()}
    firsts = [t.user_messages(0)[0]["content"] for t in tasks.values()]
    assert len(set(firsts)) == len(firsts), "the proxy needs distinct first user messages"
    out = workdir / "report.json"
    with ForcingProxy(vllm_server.base_url, forced) as proxy:
        proc, seconds = run_eval(proxy.base_url, out, workdir)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:] + vllm_server.log_tail()
    report = json.loads(out.read_text())
    check_protocol(report)
    entries = {e["id"]: e for e in report["entries"]}

    # Malformed: each turn's forced call is counted, nothing runs, the turn ends, the episode goes on.
    bad = entries[MALFORMED]
    n_turns = len(tasks[MALFORMED].turns)
    assert bad["malformed_calls"] == n_turns and bad["tool_calls"] >= n_turns
    assert report["malformed_calls"] >= n_turns
    assert "malformed tool calls" in proc.stdout

    # Well-formed: the server-parsed call is decoded and executed (it is not malformed).
    good = entries[WELL_FORMED]
    assert good["malformed_calls"] == 0
    assert good["tool_calls"] >= len(tasks[WELL_FORMED].turns)
    assert good["steps"] >= 2 * len(tasks[WELL_FORMED].turns)  # the forced call, then the model's own step
    assert proxy.forced_requests >= n_turns + len(tasks[WELL_FORMED].turns)
    print(f"rods eval through the forcing proxy: {seconds:.1f} s, {proxy.forced_requests} forced requests")
