"""The `openai` policy end to end against a scripted chat server on 127.0.0.1 (no network)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from envs.dataset import load_bfcl_tasks
from envs.evaluate import evaluate
from envs.policies import OpenAIPolicy
from rods_cli.main import app
from tests.fake_openai import FakeOpenAI

IDS = ["multi_turn_base_0", "multi_turn_miss_func_3", "multi_turn_miss_param_5", "multi_turn_long_context_9"]


def _tasks():
    by_id = {t.id: t for t in load_bfcl_tasks()}
    return [by_id[i] for i in IDS]


def test_openai_policy_scores_every_entry_and_counts_malformed_calls():
    tasks = _tasks()
    with FakeOpenAI(tasks, malformed={IDS[0]}) as server:
        report = evaluate(tasks, OpenAIPolicy("fake", server.base_url, concurrency=2), concurrency=4)
        requests = server.requests
    by_id = {e.id: e for e in report.entries}
    assert set(by_id) == set(IDS)
    assert not by_id[IDS[0]].passed and by_id[IDS[0]].malformed_calls > 0
    assert all(by_id[i].passed and by_id[i].progress == 1.0 for i in IDS[1:])
    # the protocol: tools are sent as OpenAI function schemas, tool results answer their call ids
    assert all(r["tools"] and r["tools"][0]["type"] == "function" for r in requests)
    last = max(requests, key=lambda r: len(r["messages"]))
    tool_msgs = [m for m in last["messages"] if m["role"] == "tool"]
    assert tool_msgs and all(m["tool_call_id"].startswith("call_") for m in tool_msgs)


def test_rods_eval_openai_cli_writes_report(tmp_path):
    tasks = _tasks()
    out = tmp_path / "report.json"
    tasks_file = tmp_path / "tasks.jsonl"
    tasks_file.write_text("".join(json.dumps(t.to_bfcl()) + "\n" for t in tasks))
    with FakeOpenAI(tasks) as server:
        result = CliRunner().invoke(app, ["eval", "--policy", "openai", "--model", "fake", "--base-url",
                                          server.base_url, "--tasks", str(tasks_file), "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["overall"]["passed"] == len(tasks) and report["overall"]["accuracy"] == 1.0
    assert {e["id"] for e in report["entries"]} == set(IDS)


def test_unreachable_endpoint_is_one_clear_error():
    result = CliRunner().invoke(app, ["eval", "--policy", "openai", "--model", "m", "--base-url",
                                      "http://127.0.0.1:9/v1", "--limit", "1"])
    assert result.exit_code == 2
    assert "cannot reach" in result.output and "Traceback" not in result.output
