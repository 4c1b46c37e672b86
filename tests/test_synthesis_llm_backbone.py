"""LLM backbone with a scripted fake chat model: good answers accepted, bad ones bounded and recorded."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from graphs.state import SynthesisContext
from graphs.synthesis import synthesize
from rods_agents.llm_backbone import LLMOutputError
from rods_cli.synthesize import select_seeds


class ScriptedChatModel(GenericFakeChatModel):
    """Answers each prompt with ``script(prompt)``; ``bind_tools`` returns itself so
    ``with_structured_output`` works. Counts calls."""

    script: Callable[[str], AIMessage]
    calls: int = 0

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.calls += 1
        prompt = messages[-1].content if messages else ""
        return ChatResult(generations=[ChatGeneration(message=self.script(prompt))])


def _drafts(prompt: str) -> list[str]:
    body = prompt.split("Drafts:", 1)[1]
    return [m.group(1) for m in re.finditer(r"^\d+\. (.*)$", body, re.M)]


def _tool(args: dict) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": "RewrittenTurns", "args": args, "id": "call_1"}])


def good(prompt: str) -> AIMessage:
    drafts = _drafts(prompt)
    return _tool({"narrative": "a goal", "turns": ["Hello there. " + d for d in drafts]})


BAD: dict[str, Callable[[str], AIMessage]] = {
    "malformed_json": lambda p: AIMessage(content='{"turns": ["oops"', tool_calls=[]),
    "wrong_schema": lambda p: _tool({"foo": 1}),
    "empty": lambda p: AIMessage(content=""),
    "absurd": lambda p: _tool({"narrative": "x", "turns": ["banana"] * len(_drafts(p))}),
    "wrong_count": lambda p: _tool({"narrative": "x", "turns": _drafts(p)[:1] + _drafts(p)}),
}


def _run(script: Callable[[str], AIMessage], n_seeds: int = 3, stage: str = "rewrite") -> tuple[Any, ScriptedChatModel]:
    """Synthesize with the scripted model taking over one LLM stage."""
    model = ScriptedChatModel(messages=iter([]), script=script)
    ctx = SynthesisContext(seed=0, variants_per_seed=1, backbone="llm", llm_stages=[stage], chat_models=[model],
                           models=["scripted"], llm_retries=2, max_llm_calls_per_sample=6)
    return synthesize(select_seeds("train", n_seeds, seed=1), ctx), model


def test_valid_llm_rewrites_are_accepted_and_counted():
    result, model = _run(good)
    assert result.accepted
    for task in result.accepted:
        assert task.provenance["backbone"] == "llm"
        assert task.provenance["llm_calls"] >= 1
        first = next(t for t in task.turns if t)
        assert first[0].content.startswith("Hello there.")
    assert result.report["llm_calls"] == model.calls
    assert result.report["llm_calls_per_accepted"] > 0


@pytest.mark.parametrize("kind", sorted(BAD))
def test_invalid_llm_output_is_retried_then_rejected_never_crashes(kind):
    result, model = _run(BAD[kind], n_seeds=2)
    assert not result.accepted
    assert result.rejected and all(r["reasons"] == ["llm_invalid_output"] for r in result.rejected)
    for r in result.rejected:
        assert r["llm_calls"] == 3  # one try + two retries, then stop
    assert model.calls == 3 * len(result.rejected)
    assert result.report["rejections_by_reason"] == {"llm_invalid_output": len(result.rejected)}


def _patch_backbone(script: Callable[[str], AIMessage]):
    from rods_agents.llm_backbone import LLMBackbone

    model = ScriptedChatModel(messages=iter([]), script=script)
    ctx = SynthesisContext(backbone="llm", llm_stages=["patch"], chat_models=[model], models=["m"], llm_retries=2)
    return LLMBackbone(ctx), model


def _closed_market_task():
    from envs.dataset import load_tasks

    task = next(t for t in load_tasks("train", ["base"]) if "TradingBot" in t.involved_classes)
    task.initial_config.setdefault("TradingBot", {})["market_status"] = "Closed"
    return task


def test_llm_config_patch_is_validated_and_applied():
    task = _closed_market_task()
    backbone, model = _patch_backbone(lambda p: AIMessage(content="", tool_calls=[{
        "name": "ConfigPatchProposal", "id": "c1",
        "args": {"cls": "TradingBot", "path": "market_status", "value": "Open", "reason": "market must be open"}}]))
    error = {"error": "Market is closed.", "call": "withdraw_funds(amount=1)", "class": "TradingBot", "kind": "other"}
    patch, config, calls = backbone.propose_patch(task, error, {"sample_id": "s"})
    assert patch is not None and patch.rule == "llm" and calls == 1
    assert config["TradingBot"]["market_status"] == "Open"
    assert task.initial_config["TradingBot"]["market_status"] == "Closed"  # the task itself is untouched


@pytest.mark.parametrize("args", [
    {"cls": "NotAClass", "path": "x", "value": 1},           # class not involved
    {"cls": "TradingBot", "path": "stocks", "value": 1},      # would overwrite an object
    {"cls": "TradingBot", "path": "__import__('os')", "value": 1},  # not a dot-path
    {"nope": True},                                           # wrong schema
    {"cls": "TwitterAPI", "path": "tweets", "value": 5},     # TwitterAPI is not involved
    {"cls": "TradingBot", "path": "watch_list", "value": 5},  # a list field becomes a scalar
])
def test_invalid_llm_config_patches_are_refused_after_bounded_retries(args):
    task = _closed_market_task()
    backbone, model = _patch_backbone(lambda p: _tool(args) if "cls" not in args else AIMessage(
        content="", tool_calls=[{"name": "ConfigPatchProposal", "args": args, "id": "c1"}]))
    error = {"error": "Market is closed.", "call": "withdraw_funds(amount=1)", "class": "TradingBot", "kind": "other"}
    before = copy.deepcopy(task.initial_config)
    with pytest.raises(LLMOutputError) as info:
        backbone.propose_patch(task, error, {"sample_id": "s"})
    assert info.value.calls == 3 and model.calls == 3 and len(info.value.errors) == 3
    assert task.initial_config == before


# ----------------------------------------------------------------------------- LLM plan sampling
def _draft_plan(prompt: str) -> dict:
    import json

    body = prompt.split("Draft plan to improve on (JSON, same format as your answer):\n", 1)[1]
    return json.loads(body.split("\n", 1)[0])


def _plan_tool(args: dict) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": "PlanProposal", "args": args, "id": "call_p"}])


def good_plan(prompt: str) -> AIMessage:
    return _plan_tool(_draft_plan(prompt))


def _absurd_function(prompt: str) -> AIMessage:
    draft = _draft_plan(prompt)
    for turn in draft["turns"]:
        for call in turn:
            call["name"] = "__import__"
    return _plan_tool(draft)


def _absurd_arguments(prompt: str) -> AIMessage:
    draft = _draft_plan(prompt)
    for turn in draft["turns"]:
        for call in turn:
            call["arguments"] = {"cmd": "os.system('rm -rf /')"}
    return _plan_tool(draft)


def _wrong_shape(prompt: str) -> AIMessage:
    draft = _draft_plan(prompt)
    return _plan_tool({"turns": draft["turns"] + [[]], "renames": {}})


def _bogus_rename(prompt: str) -> AIMessage:
    draft = _draft_plan(prompt)
    return _plan_tool({"turns": draft["turns"], "renames": {"not-in-the-config-at-all": "x"}})


BAD_PLANS: dict[str, Callable[[str], AIMessage]] = {
    "malformed_json": lambda p: AIMessage(content='{"turns": [[', tool_calls=[]),
    "wrong_schema": lambda p: _plan_tool({"calls": "ls"}),
    "empty": lambda p: AIMessage(content=""),
    "absurd_function": _absurd_function,
    "absurd_arguments": _absurd_arguments,
    "wrong_shape": _wrong_shape,
    "bogus_rename": _bogus_rename,
}


def test_valid_llm_plans_are_validated_executed_and_accepted():
    result, model = _run(good_plan, stage="plan")
    assert result.accepted
    assert model.calls >= len(result.accepted)
    assert result.report["llm_calls"] == model.calls
    for task in result.accepted:
        assert task.provenance["llm_calls"] >= 1 and {"source": "llm"} in task.provenance["substitutions"]
        assert task.provenance["llm_stages"] == ["plan"]
        assert "__probe" not in task.id


@pytest.mark.parametrize("kind", sorted(BAD_PLANS))
def test_invalid_llm_plans_are_retried_then_rejected_never_crash(kind):
    result, model = _run(BAD_PLANS[kind], n_seeds=2, stage="plan")
    assert not result.accepted
    assert result.rejected and all(r["reasons"] == ["llm_invalid_output"] for r in result.rejected)
    for r in result.rejected:
        assert r["llm_calls"] == 3 and r["detail"]["stage"] == "plan" and len(r["detail"]["llm_errors"]) == 3
    assert model.calls == 3 * len(result.rejected)


def test_plan_validation_refuses_held_out_functions_before_their_reveal():
    from envs.dataset import load_split
    from rods_agents.llm_backbone import _plan_json, validate_plan
    from rods_agents.plan_sampling import Plan

    seed = next(t for t in load_split("train") if t.category == "miss_func" and min(t.missed_function) > 0)
    reveal = min(seed.missed_function)
    held = seed.missed_function[reveal][0]
    turns = _plan_json(seed.ground_truth)
    early = next(t for t in range(reveal) if turns[t])
    turns[early][0] = {"name": held, "arguments": {}}
    draft = Plan(ground_truth=seed.ground_truth, initial_config=seed.initial_config)
    with pytest.raises(ValueError):
        validate_plan({"turns": turns, "renames": {}}, seed, draft)
