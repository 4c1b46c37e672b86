"""The LLM backbone through the real ChatOpenAI client, against a loopback OpenAI-compatible stub."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import typer
from typer.testing import CliRunner

from rods_cli.synthesize import synthesize


class _Stub(BaseHTTPRequestHandler):
    requests: list[dict] = []

    def log_message(self, *args):  # keep test output quiet
        pass

    def do_POST(self):  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Stub.requests.append(body)
        prompt = body["messages"][-1]["content"]
        drafts = [m.group(1) for m in re.finditer(r"^\d+\. (.*)$", prompt.split("Drafts:", 1)[1], re.M)]
        answer = json.dumps({"narrative": "a goal", "turns": ["Hi! " + d for d in drafts]})
        message: dict = {"role": "assistant", "content": answer}
        if body.get("tools"):
            name = body["tools"][0]["function"]["name"]
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": name, "arguments": answer}}]}
        out = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                          "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                          "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


@pytest.fixture
def stub_url():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Stub.requests = []
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_cli_llm_backbone_against_an_openai_compatible_endpoint(stub_url, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    app = typer.Typer()
    app.command("synthesize")(synthesize)
    app.command("noop")(lambda: None)
    out = tmp_path / "run"
    res = CliRunner().invoke(app, ["synthesize", "--seeds", "train", "--num-seeds", "2", "--variants-per-seed", "1",
                                   "--backbone", "llm", "--model", "stub-model", "--base-url", stub_url,
                                   "--out", str(out)])
    assert res.exit_code == 0, res.output
    report = json.loads((out / "report.json").read_text())
    assert report["llm_calls"] == len(_Stub.requests) > 0
    accepted = [json.loads(line) for line in (out / "accepted.jsonl").read_text().splitlines()]
    assert accepted and all(e["provenance"]["backbone"] == "llm" for e in accepted)
    assert all(e["provenance"]["models"] == ["stub-model"] for e in accepted)
    first = next(turn for turn in accepted[0]["question"] if turn)
    assert first[0]["content"].startswith("Hi! ")
