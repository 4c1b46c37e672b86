"""One episode runner for BFCL's function-calling (FC) protocol.

For each user turn: append the user message (BFCL's fixed message on a miss_func reveal turn,
with the held-out tools added), then let the policy take up to ``max_steps`` executing steps.
A step's tool calls are decoded to call strings (BFCL's ``convert_to_function_call``), executed,
and their results go back as ``tool`` messages. The turn ends when the policy answers without a
tool call or with calls that cannot be decoded; a step past ``max_steps`` force-quits the
episode (its calls are still executed, as in BFCL).

The runner knows nothing of the trainer or LangGraph: evaluation, GRPO rollouts and the
synthesis graph all use it with different policies.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, Field

from envs.executor import Environment, to_call_string
from envs.task import Task
from envs.tools import tool_names, tools_for_turn

MAX_STEPS_PER_TURN = 20  # bfcl_eval.constants.default_prompts.MAXIMUM_STEP_LIMIT


class ToolCall(BaseModel):
    id: str
    name: str
    arguments: dict[str, Any] | str = Field(description="Parsed arguments, or the raw text a model produced.")

    def to_openai(self) -> dict:
        args = self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": args}}


class AssistantMessage(BaseModel):
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)

    def to_openai(self) -> dict:
        msg: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            msg["tool_calls"] = [c.to_openai() for c in self.tool_calls]
        return msg


@dataclass(frozen=True)
class StepContext:
    """Where the episode is; scripted policies (oracle, replay) key on it."""

    task: Task
    turn: int
    step: int


class Policy(Protocol):
    async def respond(self, messages: list[dict], tools: list[dict], ctx: StepContext) -> AssistantMessage: ...


class Episode(BaseModel):
    """What a policy did on one task: decoded calls per turn and step, plus the transcript."""

    task_id: str
    decoded: list[list[list[str]]] = Field(default_factory=list, description="turns -> executing steps -> calls")
    messages: list[dict] = Field(default_factory=list)
    force_terminated: bool = False
    error: str | None = None
    steps: int = 0
    tool_calls: int = 0
    malformed_calls: int = Field(0, description="Tool calls whose arguments were not a JSON object.")


def decode(calls: Sequence[ToolCall]) -> list[str] | None:
    """Decode a step's tool calls to call strings; None when any cannot be decoded (BFCL drops the step)."""
    out = []
    for call in calls:
        args = call.arguments
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except (ValueError, RecursionError):  # malformed or absurdly nested JSON from a model
                return None
        if not isinstance(args, dict):
            return None
        out.append(to_call_string(call.name, args))
    return out


async def run_episode(task: Task, policy: Policy, *, max_steps: int = MAX_STEPS_PER_TURN,
                      strict_tools: bool = False, system_prompt: str | None = None) -> Episode:
    """Run one task with a policy. Policy exceptions end the episode with ``error`` set.

    ``strict_tools`` refuses calls to functions not offered at the current turn (stricter than
    BFCL, whose executor runs held-out functions too); the default follows BFCL.
    """
    env = Environment(task.involved_classes, task.initial_config, task.long_context)
    episode = Episode(task_id=task.id)
    messages = episode.messages
    if system_prompt:
        messages.append({"role": "system", "content": system_prompt})
    for turn in range(len(task.turns)):
        tools = tools_for_turn(task, turn)
        allowed = set(tool_names(task, turn)) if strict_tools else None
        messages.extend(task.user_messages(turn))
        turn_steps: list[list[str]] = []
        episode.decoded.append(turn_steps)
        for step in range(max_steps + 1):
            try:
                reply = await policy.respond(messages, tools, StepContext(task, turn, step))
            except Exception as exc:  # noqa: BLE001 - a failing policy ends the episode, never the run
                episode.error = f"{type(exc).__name__}: {exc}"
                return episode
            episode.steps += 1
            episode.tool_calls += len(reply.tool_calls)
            calls = decode(reply.tool_calls) if reply.tool_calls else []
            if calls is None:  # undecodable: nothing runs, and no tool_calls stay without results
                episode.malformed_calls += sum(1 for c in reply.tool_calls if not _decodable(c))
                messages.append({"role": "assistant", "content": reply.content or ""})
                break
            messages.append(reply.to_openai())
            if not calls:
                break
            results = env.run(calls, allowed)
            turn_steps.append(calls)
            messages.extend(
                {"role": "tool", "content": r, "tool_call_id": c.id} for r, c in zip(results, reply.tool_calls, strict=True)
            )
            if step + 1 > max_steps:
                episode.force_terminated = True
                return episode
    return episode


def _decodable(call: ToolCall) -> bool:
    return decode([call]) is not None
