"""The LLM backbone through the real ChatOpenAI client, against loopback OpenAI-compatible stubs.

The stub answers every stage from the prompt alone (the draft plan, the numbered drafts; the judge
accepts), reports token usage, and records each request so the tests can check what the client
sends: a strict JSON schema, the token cap, the extra body. A second stub accepts the preflight but
drops every chat request: those samples are ``llm_unreachable``, not ``llm_invalid_output``.
"""

from __future__ import annotations

import json
import re
import socket
from http.server import BaseHTTPRequestHandler

import pytest
import typer
from typer.testing import CliRunner

from rods_agents.llm.client import EndpointUnreachable, preflight
from rods_cli.synthesize import synthesize
from tests.fake_openai import LoopbackServer
from tests.test_synthesis_llm_backbone import offline_accepted

PROMPT_TOKENS, COMPLETION_TOKENS = 11, 5


def _answer(schema: str, prompt: str) -> dict:
    if schema == "PlanProposal":
        draft = prompt.split("\n## Draft plan", 1)[1].split("\n", 1)[1]
        return json.loads(draft.split("\n", 1)[0])
    if schema == "JudgeVerdict":
        return {"reasoning": "faithful and natural", "faithfulness": 5, "coherence": 4, "naturalness": 4,
                "easier_than_seed": False, "substantively_new": True, "decision": "accept", "fault": "none",
                "critique": ""}
    if schema == "ConfigPatchProposal":
        return {"cls": "TradingBot", "path": "market_status", "value": "Open", "reason": "open the market"}
    body = prompt.split("Drafts:", 1)[1]
    drafts = [m.group(1) for m in re.finditer(r"^\d+\. (?:\(turn \d+\) )?(.*)$", body, re.M)]
    return {"narrative": "a goal", "turns": ["Hi! " + d for d in drafts]}


class StubOpenAI(LoopbackServer):
    """Answers /models and structured /chat/completions (json_schema or tools), with usage."""

    def __init__(self, drop_chat: bool = False):
        self.requests: list[dict] = []
        self.drop_chat = drop_chat
        super().__init__(self._handler())

    def _handler(self):
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def _send(self, obj: dict) -> None:
                data = json.dumps(obj).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):  # noqa: N802 - http.server API
                self._send({"object": "list", "data": [{"id": "stub-model", "object": "model", "owned_by": "t"}]})

            def do_POST(self):  # noqa: N802 - http.server API
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append(body)
                if stub.drop_chat:  # the connection dies mid-request: a transport failure
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                prompt = body["messages"][-1]["content"]
                if body.get("tools"):
                    name = body["tools"][0]["function"]["name"]
                    answer = json.dumps(_answer(name, prompt))
                    message = {"role": "assistant", "content": None, "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": name, "arguments": answer}}]}
                else:
                    name = body["response_format"]["json_schema"]["name"]
                    message = {"role": "assistant", "content": json.dumps(_answer(name, prompt))}
                self._send({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                            "usage": {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": COMPLETION_TOKENS,
                                      "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS}})

        return Handler


def _cli(url: str, out, seeds_file, *extra: str):
    app = typer.Typer()
    app.command("synthesize")(synthesize)
    app.command("noop")(lambda: None)
    return CliRunner().invoke(app, ["synthesize", "--seeds", str(seeds_file), "--num_seeds", "2",
                                    "--variants_per_seed", "1", "--backbone", "llm", "--model", "stub-model",
                                    "--base_url", url, "--out", str(out), *extra])


@pytest.fixture
def seeds_file(tmp_path):
    from envs.dataset import load_tasks

    path = tmp_path / "seeds.jsonl"
    path.write_text("".join(json.dumps(t.to_bfcl()) + "\n" for t in load_tasks(ids=list(offline_accepted()[:2]))))
    return path


def test_cli_llm_backbone_against_an_openai_compatible_endpoint(tmp_path, monkeypatch, seeds_file):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    out = tmp_path / "run"
    with StubOpenAI() as stub:
        res = _cli(stub.base_url, out, seeds_file, "--max_tokens", "321",
                   "--extra_body", '{"chat_template_kwargs": {"enable_thinking": false}}')
        assert res.exit_code == 0, res.output
    report = json.loads((out / "report.json").read_text())
    n = len(stub.requests)
    assert report["llm_calls"] == n > 0
    # tokens from the responses' usage (LangChain usage_metadata), per stage and in total
    assert report["llm"]["total"] == {"calls": n, "prompt_tokens": PROMPT_TOKENS * n, "completion_tokens": COMPLETION_TOKENS * n}
    assert sum(s["prompt_tokens"] for s in report["llm"]["per_stage"].values()) == PROMPT_TOKENS * n
    assert {"plan", "rewrite", "judge"} <= {s for s, u in report["llm"]["per_stage"].items() if u["calls"]}
    accepted = [json.loads(line) for line in (out / "accepted.jsonl").read_text().splitlines()]
    assert accepted and all(e["provenance"]["backbone"] == "llm" for e in accepted)
    assert report["llm"]["per_accepted"]["prompt_tokens"] == round(PROMPT_TOKENS * n / len(accepted), 4)
    assert all(e["provenance"]["models"] == ["stub-model"] for e in accepted)
    assert all(e["provenance"]["judge"][-1]["decision"] == "accept" for e in accepted)
    first = next(turn for turn in accepted[0]["question"] if turn)
    assert first[0]["content"].startswith("Hi! ")
    for body in stub.requests:  # what the client sent: a token cap, the extra body, a strict closed schema
        assert body["max_completion_tokens"] == 321
        assert body["chat_template_kwargs"] == {"enable_thinking": False}
        fmt = body.get("response_format", {}).get("json_schema", {})
        assert fmt.get("strict") is True and fmt["schema"]["additionalProperties"] is False


def test_transport_failures_mid_run_are_llm_unreachable_apart_from_invalid_answers(tmp_path, seeds_file):
    out = tmp_path / "run"
    with StubOpenAI(drop_chat=True) as stub:
        res = _cli(stub.base_url, out, seeds_file, "--max_retries", "1", "--request_timeout", "5")
    # the run finishes and records every sample, and says loudly (exit 1) that most samples failed on the LLM
    assert res.exit_code == 1 and "failed on the LLM" in res.output, res.output
    rejected = [json.loads(line) for line in (out / "rejected.jsonl").read_text().splitlines()]
    assert len(rejected) == 2 and all(r["reasons"] == ["llm_unreachable"] for r in rejected)
    assert all("Connection" in r["detail"]["llm_last_error"] for r in rejected)
    assert len(stub.requests) == 2 * 2  # one call per sample, each tried twice by the client (max_retries 1)
    report = json.loads((out / "report.json").read_text())
    assert report["llm_failures"] == {"llm_unreachable": 2, "llm_invalid_output": 0}


def test_preflight_names_the_url_of_an_unreachable_endpoint():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    with pytest.raises(EndpointUnreachable) as info:
        preflight(url, None, timeout=2.0)
    assert url in str(info.value) and info.value.base_url == url
    with StubOpenAI() as stub:
        preflight(stub.base_url, "k", timeout=2.0)  # reachable: no error
