"""The episode runner follows BFCL's FC protocol, and scripted policies score as the checker says."""

from __future__ import annotations

import asyncio
import json

import pytest

from envs.checker import check
from envs.dataset import load_bfcl_tasks
from envs.evaluate import evaluate
from envs.policies import OraclePolicy, ScriptedPolicy, keyword_arguments, parse_hermes, replay_policy
from envs.runner import MAX_STEPS_PER_TURN, AssistantMessage, ToolCall, run_episode
from envs.task import REVEAL_MESSAGE, TaskFileError


@pytest.fixture(scope="module")
def tasks():
    return {t.id: t for t in load_bfcl_tasks()}


def test_oracle_passes_every_category(tasks):
    # one scenario per category is enough here; the 800-entry run is `rods eval --split all` (CLI test)
    sample = [tasks[f"multi_turn_{c}_{i}"] for c in ("base", "miss_func", "miss_param", "long_context") for i in (0, 7)]
    report = evaluate(sample, OraclePolicy(), policy_name="oracle")
    assert report.overall.passed == len(sample)
    assert all(e.progress == 1.0 for e in report.entries)


def test_transcript_follows_bfcl_fc_protocol(tasks):
    task = tasks["multi_turn_miss_func_0"]
    episode = asyncio.run(run_episode(task, OraclePolicy()))
    msgs = episode.messages
    users = [m for m in msgs if m["role"] == "user"]
    assert len(users) == len(task.turns)  # one user message per turn, reveal turn included
    reveal = min(task.missed_function)
    assert users[reveal]["content"] == REVEAL_MESSAGE
    # every tool_call id is answered by exactly one tool message, in order
    for i, m in enumerate(msgs):
        if m.get("tool_calls"):
            ids = [c["id"] for c in m["tool_calls"]]
            answers = [x["tool_call_id"] for x in msgs[i + 1 : i + 1 + len(ids)]]
            assert answers == ids
    # decoded calls are BFCL's keyword form of the ground truth (`name(k=repr(v),...)`)
    as_keywords = [[[keyword_arguments(task, c) for c in step] for step in turn] for turn in episode.decoded]
    assert as_keywords == [[[keyword_arguments(task, c) for c in gt]] if gt else [] for gt in task.ground_truth]


def test_held_out_tools_only_offered_from_reveal_turn(tasks):
    task = tasks["multi_turn_miss_func_0"]
    seen: list[set[str]] = []

    class Spy(OraclePolicy):
        async def respond(self, messages, tools, ctx):
            if ctx.step == 0:
                seen.append({t["function"]["name"] for t in tools})
            return await super().respond(messages, tools, ctx)

    asyncio.run(run_episode(task, Spy()))
    (reveal, hidden), = task.missed_function.items()
    for turn, names in enumerate(seen):
        assert set(hidden) <= names if turn >= reveal else not set(hidden) & names


class Looping:
    """Calls pwd() forever: BFCL force-quits the entry after 20 executing steps."""

    async def respond(self, messages, tools, ctx):
        return AssistantMessage(tool_calls=[ToolCall(id=f"c{ctx.step}", name="pwd", arguments={})])


def test_force_quit_after_max_steps(tasks):
    task = tasks["multi_turn_base_0"]
    episode = asyncio.run(run_episode(task, Looping()))
    assert episode.force_terminated
    assert len(episode.decoded) == 1 and len(episode.decoded[0]) == MAX_STEPS_PER_TURN + 1
    score = check(task, episode.decoded)
    assert not score.passed and score.failure == "multi_turn:force_terminated" and score.progress == 0.0


class Garbage:
    """Malformed arguments end the turn without executing anything; they are counted."""

    async def respond(self, messages, tools, ctx):
        if ctx.step == 0:
            return AssistantMessage(tool_calls=[ToolCall(id="x", name="mkdir", arguments='{"dir_name": ')])
        return AssistantMessage(content="?")


def test_malformed_tool_calls_are_counted_not_executed(tasks):
    task = tasks["multi_turn_base_0"]
    episode = asyncio.run(run_episode(task, Garbage()))
    assert episode.malformed_calls == len(task.turns)
    assert all(turn == [] for turn in episode.decoded)
    assert not any(m.get("tool_calls") for m in episode.messages)  # no dangling tool_calls in history
    assert check(task, episode.decoded).failure == "multi_turn:empty_turn_model_response"


class Crashing:
    async def respond(self, messages, tools, ctx):
        raise RuntimeError("server exploded")


def test_policy_exception_is_an_inference_error(tasks):
    task = tasks["multi_turn_base_1"]
    episode = asyncio.run(run_episode(task, Crashing()))
    assert "server exploded" in episode.error
    score = check(task, episode.decoded, inference_error=episode.error)
    assert score.failure == "multi_turn:inference_error" and score.progress == 0.0


def test_strict_tools_refuses_hidden_function(tasks):
    task = tasks["multi_turn_miss_func_0"]
    reveal, (hidden, *_) = next(iter(task.missed_function.items()))

    class Early:
        async def respond(self, messages, tools, ctx):
            if ctx.turn == reveal - 1 and ctx.step == 0:
                return AssistantMessage(tool_calls=[ToolCall(id="e", name=hidden, arguments={})])
            return AssistantMessage(content="ok")

    strict = asyncio.run(run_episode(task, Early(), strict_tools=True))
    tool_msgs = [m["content"] for m in strict.messages if m["role"] == "tool"]
    assert tool_msgs == [f"Error during execution: function '{hidden}' is not available at this turn"]


def test_replay_policy_reads_decoded_calls(tmp_path, tasks):
    task = tasks["multi_turn_base_1"]
    half = [gt if t < 2 else [] for t, gt in enumerate(task.ground_truth)]
    path = tmp_path / "traj.jsonl"
    path.write_text(json.dumps({"id": task.id, "turns": half}) + "\n")
    report = evaluate([task], replay_policy(path))
    (entry,) = report.entries
    scored = task.scored_turns
    # the first two turns pass, every later scored turn fails: progress = 2 / |scored|
    assert not entry.passed and entry.progress == pytest.approx(2 / len(scored))


def test_replay_policy_rejects_bad_lines(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "x", "turns": "nope"}\n')
    with pytest.raises(TaskFileError, match=r"bad.jsonl:1"):
        replay_policy(path)


def test_positional_calls_bind_to_keywords(tasks):
    task = tasks["multi_turn_base_0"]
    assert keyword_arguments(task, "sort('final_report.pdf')") == ("sort", {"file_name": "final_report.pdf"})


def test_parse_hermes_tool_calls():
    text = '<tool_call>\n{"name": "ls", "arguments": {"a": true}}\n</tool_call><tool_call>{"name": oops</tool_call><|im_end|>'
    msg = parse_hermes(text, eos="<|im_end|>")
    assert msg.tool_calls[0].name == "ls" and msg.tool_calls[0].arguments == {"a": True}
    assert isinstance(msg.tool_calls[1].arguments, str)  # kept raw, so the runner counts it as malformed


def test_unknown_task_in_script_is_an_error(tasks):
    episode = asyncio.run(run_episode(tasks["multi_turn_base_2"], ScriptedPolicy({})))
    assert "no trajectory" in episode.error


def test_strict_tools_also_applies_when_scoring(tasks):
    """A call refused by the runner must not be re-executed (and credited) by the checker."""
    task = tasks["multi_turn_miss_func_0"]
    reveal = min(task.missed_function)
    # do the reveal turn's work one turn early (BFCL tolerates this), junk call at the reveal turn
    early = [list(gt) for gt in task.ground_truth]
    early[reveal - 1], early[reveal] = early[reveal], ["pwd()"]
    policy = ScriptedPolicy({task.id: early})
    lax = evaluate([task], policy)
    strict = evaluate([task], policy, strict_tools=True)
    assert lax.entries[0].passed
    assert not strict.entries[0].passed


def test_absurdly_nested_arguments_are_malformed_not_a_crash(tasks):
    """A garbage model can emit JSON nested thousands deep; it must not kill the evaluation."""
    nested = "[" * 5000 + "]" * 5000

    class Nested:
        async def respond(self, messages, tools, ctx):
            if ctx.step == 0:
                return AssistantMessage(tool_calls=[ToolCall(id="n", name="ls", arguments='{"a": ' + nested + "}")])
            return AssistantMessage(content="ok")

    episode = asyncio.run(run_episode(tasks["multi_turn_base_1"], Nested()))
    assert episode.error is None and episode.malformed_calls == len(tasks["multi_turn_base_1"].turns)
    msg = parse_hermes('<tool_call>{"name": "ls", "arguments": ' + nested + "}</tool_call>")
    assert isinstance(msg.tool_calls[0].arguments, str)


def test_replay_file_missing_selected_tasks_is_an_error(tmp_path):
    from typer.testing import CliRunner

    from rods_cli.main import app

    path = tmp_path / "traj.jsonl"
    path.write_text(json.dumps({"id": "multi_turn_base_999", "turns": [["ls()"]]}) + "\n")
    result = CliRunner().invoke(app, ["eval", "--policy", f"replay:{path}", "--split", "test", "-c", "base", "--limit", "2"])
    assert result.exit_code == 2 and "no trajectory for 2 of 2 selected task(s)" in result.output
