"""The real vLLM server answers the requests RODS sends: chat with BFCL tool schemas, Hermes tool calls parsed by the
server, and JSON-schema constrained decoding. The model is random, so nothing here asserts on what it chooses to say;
the constrained requests pin the output, so they can assert on parsed results.
"""

from __future__ import annotations

import json
from typing import Literal

import pytest
from pydantic import BaseModel, Field

pytestmark = [pytest.mark.vllm, pytest.mark.slow]


def test_models_lists_the_served_tiny_model(vllm_server):
    models = vllm_server.client().models.list()
    assert [m.id for m in models.data] == [vllm_server.model]


def test_chat_with_bfcl_tools_answers(vllm_server):
    """A real BFCL prompt (~5k tokens of tool schemas) is accepted and answered, whatever the model says."""
    from envs.dataset import load_split
    from envs.tools import tools_for_turn

    task = next(t for t in load_split("test") if t.category == "base")
    resp = vllm_server.client().chat.completions.create(
        model=vllm_server.model, messages=task.user_messages(0), tools=tools_for_turn(task, 0),
        max_tokens=32, temperature=1.0)
    choice = resp.choices[0]
    assert choice.message.role == "assistant"
    assert choice.finish_reason in {"stop", "length", "tool_calls"}
    assert resp.usage.prompt_tokens > 1000  # the tools block went through the chat template
    assert 0 < resp.usage.completion_tokens <= 32


def test_forced_hermes_tool_call_is_parsed_by_the_server(vllm_server):
    """Output forced by a regex into Hermes format comes back as a structured tool call (hermes parser path)."""
    tools = [{"type": "function", "function": {
        "name": "cd", "description": "Change directory.",
        "parameters": {"type": "object", "properties": {"folder": {"type": "string"}}, "required": ["folder"]}}}]
    resp = vllm_server.client().chat.completions.create(
        model=vllm_server.model, messages=[{"role": "user", "content": "Go to the documents folder."}],
        tools=tools, max_tokens=64,
        extra_body={"structured_outputs": {
            "regex": r'<tool_call>\n\{"name": "cd", "arguments": \{"folder": "documents"\}\}\n</tool_call>'},
            "skip_special_tokens": False})
    choice = resp.choices[0]
    assert choice.finish_reason == "tool_calls"
    [call] = choice.message.tool_calls
    assert call.function.name == "cd"
    assert json.loads(call.function.arguments) == {"folder": "documents"}


class Verdict(BaseModel):
    """A stage-result-like answer: small, closed fields so a random model still finishes within max_tokens."""

    accept: bool
    reason: Literal["valid", "unsolvable", "duplicate"]
    score: int = Field(ge=0, le=10)
    tags: list[Literal["file", "math", "travel"]] = Field(max_length=2)


def test_json_schema_response_format_returns_schema_valid_json(vllm_server):
    """OpenAI-style ``response_format`` (how langchain's structured output reaches the server). ``max_tokens`` is
    generous because without the fixture's compact-JSON setting a random model pads this object to ~100-200 tokens."""
    resp = vllm_server.client().chat.completions.create(
        model=vllm_server.model, messages=[{"role": "user", "content": "Judge this task. Answer in JSON."}],
        max_tokens=1024,
        response_format={"type": "json_schema",
                         "json_schema": {"name": "verdict", "schema": Verdict.model_json_schema(), "strict": True}})
    choice = resp.choices[0]
    assert choice.finish_reason == "stop", choice.message.content
    verdict = Verdict.model_validate_json(choice.message.content)
    assert 0 <= verdict.score <= 10

