"""Policies for the episode runner: ``oracle``, ``replay:PATH``, ``openai``, ``hf:PATH``.

A policy only answers ``respond(messages, tools, ctx)``; the runner does the protocol. Scripted
policies emit each turn's calls as one step, then close the turn with a text reply.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from envs.executor import CallError, method_signature, parse_call, public_methods
from envs.runner import AssistantMessage, StepContext, ToolCall
from envs.task import InputError, Task, TaskFileError, iter_jsonl

log = logging.getLogger(__name__)


def keyword_arguments(task: Task, call: str) -> tuple[str, dict[str, Any]]:
    """Turn a call string into (name, keyword arguments), binding positional ones to the signature.

    BFCL's ground truth has 160 positional calls (``sort('final_report.pdf')``); a model's tool call
    is always keyword-only, so replaying a GT call as a tool call needs the parameter names.
    """
    parsed = parse_call(call)
    owner = next((c for c in task.involved_classes if parsed.name in public_methods(c)), None)
    if owner is None:
        raise CallError(f"{parsed.name!r} is not a method of {task.involved_classes}")
    bound = method_signature(owner, parsed.name).bind(None, *parsed.args, **parsed.kwargs)  # None stands for self
    return parsed.name, {k: v for k, v in list(bound.arguments.items())[1:]}


class ScriptedPolicy:
    """Replays given call strings: all calls of a turn in one step, then a closing text reply."""

    def __init__(self, script: Mapping[str, list[list[str]]], name: str = "scripted"):
        self.script = dict(script)
        self.name = name

    async def respond(self, messages: list[dict], tools: list[dict], ctx: StepContext) -> AssistantMessage:
        turns = self.script.get(ctx.task.id)
        if turns is None:
            raise KeyError(f"{self.name}: no trajectory for task {ctx.task.id!r}")
        calls = turns[ctx.turn] if ctx.turn < len(turns) else []
        if ctx.step > 0 or not calls:
            return AssistantMessage(content="Done.")
        tool_calls = []
        for i, call in enumerate(calls):
            try:
                name, args = keyword_arguments(ctx.task, call)
            except (CallError, TypeError):  # replay the raw text; the executor will report the error
                name, args = call.split("(", 1)[0].strip() or "invalid", {}
            tool_calls.append(ToolCall(id=f"call_{ctx.turn}_{i}", name=name, arguments=args))
        return AssistantMessage(tool_calls=tool_calls)


class OraclePolicy(ScriptedPolicy):
    """Replays each task's own ground truth (an upper bound and an end-to-end protocol check)."""

    def __init__(self) -> None:
        super().__init__({}, name="oracle")

    async def respond(self, messages: list[dict], tools: list[dict], ctx: StepContext) -> AssistantMessage:
        self.script.setdefault(ctx.task.id, ctx.task.ground_truth)
        return await super().respond(messages, tools, ctx)


def check_script_covers(policy: Any, tasks: list[Task]) -> None:
    """A replay file that misses the selected tasks is a user error, not a silent 0/N score."""
    script = getattr(policy, "script", None)
    if not isinstance(policy, ScriptedPolicy) or isinstance(policy, OraclePolicy) or script is None:
        return
    missing = [t.id for t in tasks if t.id not in script]
    if missing:
        raise InputError(f"{policy.name}: no trajectory for {len(missing)} of {len(tasks)} selected task(s), "
                         f"e.g. {', '.join(missing[:3])}")


def replay_policy(path: str | Path) -> ScriptedPolicy:
    """Load ``{"id": ..., "turns": [[call, ...], ...]}`` lines (decoded calls per turn)."""
    script: dict[str, list[list[str]]] = {}
    for lineno, obj in iter_jsonl(path):
        turns = obj.get("turns")
        if not isinstance(obj.get("id"), str) or not isinstance(turns, list) or not all(
            isinstance(t, list) and all(isinstance(c, str) for c in t) for t in turns
        ):
            raise TaskFileError(f"{path}:{lineno}: expected {{'id': str, 'turns': [[call string, ...], ...]}}")
        script[obj["id"]] = turns
    return ScriptedPolicy(script, name=f"replay:{path}")


class OpenAIPolicy:
    """Any OpenAI-compatible chat endpoint (vLLM's server, OpenAI) with tools.

    Bounded concurrency (a semaphore shared by every episode), per-request timeout and
    retries with backoff come from the ``openai`` client.
    """

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None,
                 concurrency: int = 8, timeout: float = 120.0, max_retries: int = 3,
                 temperature: float = 0.001, max_tokens: int | None = None):
        from openai import AsyncOpenAI

        self.model = model
        self.client = AsyncOpenAI(
            base_url=base_url, api_key=api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY",
            timeout=timeout, max_retries=max_retries,
        )
        self.semaphore = asyncio.Semaphore(concurrency)
        self.sampling: dict[str, Any] = {"temperature": temperature}
        if max_tokens:
            self.sampling["max_tokens"] = max_tokens

    async def preflight(self) -> None:
        """Fail fast, with one clear error, when the endpoint is unreachable."""
        from openai import APIConnectionError, APIStatusError

        try:
            await self.client.with_options(max_retries=1).models.list()
        except (APIConnectionError, APIStatusError) as exc:
            raise ConnectionError(f"cannot reach the OpenAI-compatible endpoint at {self.client.base_url}: {exc}") from None

    async def respond(self, messages: list[dict], tools: list[dict], ctx: StepContext) -> AssistantMessage:
        async with self.semaphore:
            resp = await self.client.chat.completions.create(
                model=self.model, messages=messages, tools=tools or None, **self.sampling
            )
        msg = resp.choices[0].message
        calls = []
        for i, tc in enumerate(msg.tool_calls or []):
            fn = getattr(tc, "function", None)
            if fn is None:
                continue
            calls.append(ToolCall(id=tc.id or f"call_{i}", name=fn.name or "", arguments=fn.arguments or ""))
        return AssistantMessage(content=msg.content, tool_calls=calls)


class HFPolicy:
    """A local transformers chat model (tiny models on CPU). Tool calls are parsed Hermes-style."""

    def __init__(self, path: str | Path, max_new_tokens: int = 256, temperature: float = 0.0):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModelForCausalLM.from_pretrained(path)
        self.model.eval()
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self._lock = asyncio.Lock()

    async def respond(self, messages: list[dict], tools: list[dict], ctx: StepContext) -> AssistantMessage:
        import torch

        ids = self.tokenizer.apply_chat_template(
            _for_template(messages), tools=tools, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        async with self._lock:
            with torch.no_grad():
                out = self.model.generate(
                    **ids, max_new_tokens=self.max_new_tokens, do_sample=self.temperature > 0,
                    temperature=self.temperature or None, pad_token_id=self.tokenizer.pad_token_id,
                )
        text = self.tokenizer.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=False)
        return parse_hermes(text, eos=self.tokenizer.eos_token)


def _for_template(messages: list[dict]) -> list[dict]:
    """Chat templates want tool-call arguments as objects, not JSON strings."""
    out = []
    for m in messages:
        if m.get("tool_calls"):
            m = dict(m)
            m["tool_calls"] = [
                {**c, "function": {**c["function"], "arguments": _maybe_json(c["function"]["arguments"])}}
                for c in m["tool_calls"]
            ]
        out.append(m)
    return out


def _maybe_json(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def parse_hermes(text: str, eos: str | None = None) -> AssistantMessage:
    """Parse ``<tool_call>{"name":..., "arguments":...}</tool_call>`` blocks; anything else is content.

    A block that is not valid JSON becomes a call with raw string arguments, so the runner counts
    it as malformed instead of silently dropping it.
    """
    import re

    if eos:
        text = text.split(eos)[0]
    calls = []
    for i, block in enumerate(re.findall(r"<tool_call>(.*?)(?:</tool_call>|$)", text, flags=re.S)):
        try:
            obj = json.loads(block.strip())
            name, args = str(obj.get("name", "")), obj.get("arguments", {})
        except (ValueError, RecursionError, AttributeError):  # malformed, absurdly nested, or not an object
            name, args = "", block.strip() or "<empty>"
        if not isinstance(args, dict):
            args = args if isinstance(args, str) else "<not an object>"
        calls.append(ToolCall(id=f"call_{i}", name=name, arguments=args))
    content = re.sub(r"<tool_call>.*?(?:</tool_call>|$)", "", text, flags=re.S).strip()
    return AssistantMessage(content=content or None, tool_calls=calls)


def make_policy(spec: str, *, model: str | None = None, base_url: str | None = None,
                concurrency: int = 8, timeout: float = 120.0, max_retries: int = 3) -> Any:
    """Build a policy from its CLI name: ``oracle``, ``replay:PATH``, ``openai``, ``hf:PATH``."""
    if spec == "oracle":
        return OraclePolicy()
    if spec.startswith("replay:"):
        return replay_policy(spec.split(":", 1)[1])
    if spec == "openai":
        if not model:
            raise InputError("--policy openai needs --model")
        return OpenAIPolicy(model, base_url, concurrency=concurrency, timeout=timeout, max_retries=max_retries)
    if spec.startswith("hf:"):
        path = spec.split(":", 1)[1]
        if not Path(path).exists():
            raise FileNotFoundError(f"{path}: no such model folder")
        return HFPolicy(path)
    raise InputError(f"unknown policy {spec!r}; use oracle, replay:PATH, openai or hf:PATH")
