"""LLM backbone with a scripted chat model that answers from the prompts alone, as a capable model would.

The scripted answers read only the prompt text (the draft plan, the numbered drafts, the values the
user must state), so these tests fail when a prompt stops carrying what a model needs. Bad answers
are bounded and recorded; a judge rejection gets one refine round; transport failures are
``llm_unreachable``, apart from invalid answers.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from envs.dataset import load_split, load_tasks
from graphs.synthesis import synthesize
from rods_agents.llm.backbone import LLMOutputError
from rods_agents.stages.state import SynthesisContext
from rods_cli.synthesize import select_seeds


class ScriptedChatModel(GenericFakeChatModel):
    """Answers each prompt with ``script(prompt)``; ``bind_tools`` returns itself so
    ``with_structured_output`` works. Records prompts; reports tokens (words of the prompt, 7 per answer)."""

    script: Callable[[str], AIMessage]
    calls: int = 0
    prompts: list[str] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.calls += 1
        prompt = messages[-1].content if messages else ""
        self.prompts.append(prompt)
        message = self.script(prompt)
        if message.usage_metadata is None:
            n = len(prompt.split())
            message.usage_metadata = {"input_tokens": n, "output_tokens": 7, "total_tokens": n + 7}
        return ChatResult(generations=[ChatGeneration(message=message)])


def _tool(args: dict, name: str = "RewrittenTurns") -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": "call_1"}])


# ----------------------------------------------------------------------------- reading the prompts
def _section(prompt: str, title: str) -> str:
    body = prompt.split(f"## {title}", 1)[1]
    return body.split("\n## ", 1)[0].split("\n", 1)[1] if "\n" in body else ""


def _drafts(prompt: str) -> list[str]:
    body = prompt.split("Drafts:", 1)[1]
    return [m.group(1) for m in re.finditer(r"^\d+\. (?:\(turn \d+\) )?(.*)$", body, re.M)]


def _draft_turns(prompt: str) -> list[int]:
    body = prompt.split("Drafts:", 1)[1]
    return [int(m.group(1)) - 1 for m in re.finditer(r"^\d+\. \(turn (\d+)\) ", body, re.M)]


def _must_state(prompt: str) -> dict[int, list[Any]]:
    out = {}
    for m in re.finditer(r"^Turn (\d+): must state (\[.*?\]); must stay unstated", prompt, re.M):
        out[int(m.group(1)) - 1] = json.loads(m.group(2))
    return out


def capable_rewrite(prompt: str, prefix: str = "Hello there. ") -> AIMessage:
    """What a capable model writes: each draft, naturally, keeping every value it states and adding none."""
    values = _must_state(prompt)
    texts: list[str] = []
    for turn, draft in zip(_draft_turns(prompt), _drafts(prompt), strict=True):
        assert turn in values  # the prompt lists the values of every turn it asks for
        texts.append(prefix + draft)
    return _tool({"narrative": "a goal", "turns": texts})


def good(prompt: str) -> AIMessage:
    return capable_rewrite(prompt)


BAD: dict[str, Callable[[str], AIMessage]] = {
    "malformed_json": lambda p: AIMessage(content='{"turns": ["oops"', tool_calls=[]),
    "wrong_schema": lambda p: _tool({"foo": 1}),
    "empty": lambda p: AIMessage(content=""),
    "absurd": lambda p: _tool({"narrative": "x", "turns": ["banana"] * len(_drafts(p))}),
    "wrong_count": lambda p: _tool({"narrative": "x", "turns": _drafts(p)[:1] + _drafts(p)}),
}


def _ctx(model: ScriptedChatModel, stages: list[str], **kw: Any) -> SynthesisContext:
    settings = {"seed": 0, "variants_per_seed": 1, "llm_retries": 2, "max_llm_calls_per_sample": 12} | kw
    return SynthesisContext(backbone="llm", llm_stages=stages, chat_models=[model], models=["scripted"], **settings)


@functools.cache
def offline_accepted(n: int = 3) -> tuple[str, ...]:
    """Train seeds whose offline variant (seed 0, variant 0) is accepted: a capable LLM keeping the offline
    plan or drafts must then be accepted too, so the LLM tests do not depend on which seeds the offline
    stages happen to handle today."""
    result = synthesize(select_seeds("train", 24, seed=1), SynthesisContext(seed=0, variants_per_seed=1))
    ids = tuple(t.provenance["seed_id"] for t in result.accepted)[:n]
    assert ids, "the offline pipeline accepts none of 24 train seeds"
    return ids


def _run(script: Callable[[str], AIMessage], n_seeds: int = 3, stage: str = "rewrite") -> tuple[Any, ScriptedChatModel]:
    """Synthesize with the scripted model taking over one LLM stage."""
    model = ScriptedChatModel(messages=iter([]), script=script)
    return synthesize(load_tasks(ids=list(offline_accepted()[:n_seeds])), _ctx(model, [stage])), model


def test_valid_llm_rewrites_are_accepted_and_their_calls_and_tokens_counted():
    result, model = _run(good)
    assert result.accepted
    for task in result.accepted:
        assert task.provenance["backbone"] == "llm"
        assert task.provenance["llm_usage"]["rewrite"]["calls"] >= 1
        first = next(t for t in task.turns if t)
        assert first[0].content.startswith("Hello there.")
    report = result.report
    assert report["llm_calls"] == model.calls == report["llm"]["total"]["calls"]
    assert report["llm"]["per_stage"]["rewrite"]["prompt_tokens"] == sum(len(p.split()) for p in model.prompts)
    assert report["llm"]["per_stage"]["rewrite"]["completion_tokens"] == 7 * model.calls
    assert report["llm"]["per_accepted"]["calls"] == pytest.approx(model.calls / len(result.accepted), abs=1e-3)


@pytest.mark.parametrize("kind", sorted(BAD))
def test_invalid_llm_output_is_retried_then_rejected_never_crashes(kind):
    result, model = _run(BAD[kind], n_seeds=2)
    assert not result.accepted and result.rejected
    invalid = [r for r in result.rejected if r["reasons"] == ["llm_invalid_output"]]
    for r in invalid:
        assert r["llm_calls"] == 3  # one try + two retries, then stop
    # Turns of "banana" that state every value the validator asks for (a turn with nothing to state) pass the
    # answer's validation; the verdict's information-structure checks then reject them as text faults.
    by_rules = [r for r in result.rejected if r not in invalid]
    assert all(r["reasons"] and all(x.startswith("information_structure:") or x.startswith("unobtainable_value:")
                                    for x in r["reasons"]) for r in by_rules), [r["reasons"] for r in by_rules]
    assert invalid and (kind == "absurd" or not by_rules)
    assert result.report["llm_failures"] == {"llm_unreachable": 0, "llm_invalid_output": len(invalid)}


def test_a_transport_failure_is_llm_unreachable_not_invalid_output():
    from openai import APIConnectionError

    def down(prompt: str) -> AIMessage:
        raise APIConnectionError(request=__import__("httpx").Request("POST", "http://127.0.0.1:9/v1/chat/completions"))

    result, model = _run(down, n_seeds=2)
    assert result.rejected and all(r["reasons"] == ["llm_unreachable"] for r in result.rejected)
    assert all(r["llm_calls"] == 1 for r in result.rejected)  # no hand-written retries: the client already retried
    assert result.report["llm_failures"] == {"llm_unreachable": len(result.rejected), "llm_invalid_output": 0}


# ----------------------------------------------------------------------------- config patch
def _patch_backbone(script: Callable[[str], AIMessage]):
    from rods_agents.llm.backbone import LLMBackbone

    model = ScriptedChatModel(messages=iter([]), script=script)
    return LLMBackbone(_ctx(model, ["patch"])), model


def _closed_market_task():
    task = next(t for t in load_tasks("train", ["base"]) if "TradingBot" in t.involved_classes)
    task.initial_config.setdefault("TradingBot", {})["market_status"] = "Closed"
    return task


def test_llm_config_patch_is_validated_and_applied():
    task = _closed_market_task()
    backbone, model = _patch_backbone(lambda p: _tool(
        {"cls": "TradingBot", "path": "market_status", "value": "Open", "reason": "market must be open"},
        "ConfigPatchProposal"))
    error = {"error": "Market is closed.", "call": "withdraw_funds(amount=1)", "class": "TradingBot", "kind": "other"}
    patch, config, usage = backbone.propose_patch(task, error, {"sample_id": "s"})
    assert patch is not None and patch.rule == "llm" and usage.calls == 1
    assert "withdraw_funds(" in model.prompts[0] and "Market is closed." in model.prompts[0]
    assert config["TradingBot"]["market_status"] == "Open"
    assert task.initial_config["TradingBot"]["market_status"] == "Closed"  # the task itself is untouched


@pytest.mark.parametrize("args", [
    {"cls": "NotAClass", "path": "x", "value": 1, "reason": ""},           # class not involved
    {"cls": "TradingBot", "path": "stocks", "value": 1, "reason": ""},      # would overwrite an object
    {"cls": "TradingBot", "path": "__import__('os')", "value": 1, "reason": ""},  # not a dot-path
    {"nope": True},                                                         # wrong schema
    {"cls": "TwitterAPI", "path": "tweets", "value": 5, "reason": ""},     # TwitterAPI is not involved
    {"cls": "TradingBot", "path": "watch_list", "value": 5, "reason": ""},  # a list field becomes a scalar
])
def test_invalid_llm_config_patches_are_refused_after_bounded_retries(args):
    task = _closed_market_task()
    backbone, model = _patch_backbone(lambda p: _tool(args, "ConfigPatchProposal"))
    error = {"error": "Market is closed.", "call": "withdraw_funds(amount=1)", "class": "TradingBot", "kind": "other"}
    before = copy.deepcopy(task.initial_config)
    with pytest.raises(LLMOutputError) as info:
        backbone.propose_patch(task, error, {"sample_id": "s"})
    assert info.value.calls == 3 and model.calls == 3 and len(info.value.errors) == 3
    assert task.initial_config == before


# ----------------------------------------------------------------------------- LLM plan sampling
def _draft_plan(prompt: str) -> dict:
    body = prompt.split("\n## Draft plan", 1)[1].split("\n", 1)[1]
    return json.loads(body.strip().split("\n")[0])


def good_plan(prompt: str) -> AIMessage:
    return _tool(_draft_plan(prompt), "PlanProposal")


def _absurd_function(prompt: str) -> AIMessage:
    draft = _draft_plan(prompt)
    for turn in draft["turns"]:
        for call in turn:
            call["name"] = "__import__"
    return _tool(draft, "PlanProposal")


def _absurd_arguments(prompt: str) -> AIMessage:
    draft = _draft_plan(prompt)
    for turn in draft["turns"]:
        for call in turn:
            call["arguments"] = [{"name": "cmd", "value_json": json.dumps("os.system('rm -rf /')")}]
    return _tool(draft, "PlanProposal")


def _wrong_shape(prompt: str) -> AIMessage:
    draft = _draft_plan(prompt)
    return _tool({"turns": draft["turns"] + [[]], "renames": [], "new_values": []}, "PlanProposal")


def _bogus_rename(prompt: str) -> AIMessage:
    draft = _draft_plan(prompt)
    return _tool({"turns": draft["turns"], "renames": [{"old": "not-in-the-config-at-all", "new": "x"}],
                  "new_values": []}, "PlanProposal")


def _not_json_value(prompt: str) -> AIMessage:
    draft = _draft_plan(prompt)
    for turn in draft["turns"]:
        for call in turn:
            for arg in call["arguments"]:
                arg["value_json"] = "{not json"
    return _tool(draft, "PlanProposal")


BAD_PLANS: dict[str, Callable[[str], AIMessage]] = {
    "malformed_json": lambda p: AIMessage(content='{"turns": [[', tool_calls=[]),
    "wrong_schema": lambda p: _tool({"calls": "ls"}, "PlanProposal"),
    "empty": lambda p: AIMessage(content=""),
    "absurd_function": _absurd_function,
    "absurd_arguments": _absurd_arguments,
    "wrong_shape": _wrong_shape,
    "bogus_rename": _bogus_rename,
    "value_not_json": _not_json_value,
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
    from rods_agents.llm.backbone import validate_plan
    from rods_agents.llm.prompting import plan_json
    from rods_agents.variation.plan import Plan

    seed = next(t for t in load_split("train") if t.category == "miss_func" and min(t.missed_function) > 0)
    reveal = min(seed.missed_function)
    held = seed.missed_function[reveal][0]
    turns = plan_json(seed.ground_truth)
    early = next(t for t in range(reveal) if turns[t])
    turns[early][0] = {"name": held, "arguments": []}
    draft = Plan(ground_truth=seed.ground_truth, initial_config=seed.initial_config)
    with pytest.raises(ValueError, match="held out"):
        validate_plan({"turns": turns, "renames": [], "new_values": []}, seed, draft)


def test_plan_validation_refuses_an_option_outside_the_documented_ones_and_an_old_name_left_behind():
    from rods_agents.llm.backbone import validate_plan
    from rods_agents.llm.prompting import plan_json
    from rods_agents.variation.plan import Plan

    seed = load_tasks(ids=["multi_turn_base_0"])[0]
    draft = Plan(ground_truth=seed.ground_truth, initial_config=seed.initial_config)
    turns = plan_json(seed.ground_truth)
    renamed = {"turns": turns, "renames": [{"old": "final_report.pdf", "new": "annual_summary.pdf"}], "new_values": []}
    with pytest.raises(ValueError, match="still used"):  # the calls still name the old file
        validate_plan(renamed, seed, draft)


# ----------------------------------------------------------------------------- re-plan with the reason
def test_a_plan_that_breaks_the_information_structure_is_rejected_and_its_reason_is_in_the_next_plan_prompt():
    """base_14 sends a message to the id an earlier lookup returned; a plan that hard-codes another user's
    id drops that reference. The verdict rejects it; the next plan prompt says why; the next plan keeps it."""
    seed = load_tasks(ids=["multi_turn_base_14"])[0]

    def script(prompt: str) -> AIMessage:
        draft = _draft_plan(prompt)
        if "previous plans were rejected" not in prompt:
            for turn in draft["turns"]:
                for call in turn:
                    for arg in call["arguments"]:
                        if call["name"] == "send_message" and arg["name"] == "receiver_id":
                            arg["value_json"] = json.dumps("USR003")  # another user, not the looked-up one
        return _tool(draft, "PlanProposal")

    model = ScriptedChatModel(messages=iter([]), script=script)
    result = synthesize([seed], _ctx(model, ["plan"], max_plan_attempts=2))
    plan_prompts = [p for p in model.prompts if "## Draft plan" in p]
    assert len(plan_prompts) == 2
    assert "previous plans were rejected" not in plan_prompts[0]
    if result.accepted:
        attempts = result.accepted[0].provenance["earlier_attempts"]
    else:
        attempts = result.rejected[0]["detail"]["earlier_attempts"]
    first = attempts[0]["reasons"]
    assert first and first[0].split(":")[0] in IS_REASONS, first
    assert first[0] in plan_prompts[1]  # the planner is told why its first plan was rejected
    # the plan it then returns (the offline draft, the reference kept) passes the structure checks
    second = [] if result.accepted else result.rejected[0]["reasons"]
    assert not {r.split(":")[0] for r in second} & IS_REASONS, second


# a dropped reference shows up as a profile change (the data edge is gone) or as the information structure
IS_REASONS = {"information_structure", "profile_mismatch", "skill_profile", "unobtainable_value"}


# ----------------------------------------------------------------------------- the judge and one refine round
def _judge(decision: str, fault: str = "none", critique: str = "") -> AIMessage:
    return _tool({"reasoning": "checked every turn", "faithfulness": 5 if decision == "accept" else 3,
                  "coherence": 4, "naturalness": 4, "easier_than_seed": False,
                  "substantively_new": decision == "accept", "decision": decision,
                  "fault": fault, "critique": critique}, "JudgeVerdict")


def _judge_script(verdicts: list[str]) -> tuple[Callable[[str], AIMessage], list[str]]:
    """Rewrite prompts answered capably; judge prompts answered from ``verdicts`` in order (last repeats)."""
    seen: list[str] = []

    def script(prompt: str) -> AIMessage:
        if "strict quality judge" in prompt:
            decision = verdicts[min(len(seen), len(verdicts) - 1)]
            seen.append(decision)
            if decision == "accept":
                return _judge("accept")
            return _judge("reject", "query_fixable", "Turn 1: say which folder in plain words.")
        refined = "A reviewer rejected the previous version" in prompt
        return capable_rewrite(prompt, prefix="Refined. " if refined else "Hello there. ")

    return script, seen


def test_a_judge_rejection_triggers_exactly_one_refine_round_then_the_judge_runs_again():
    script, seen = _judge_script(["reject", "accept"])
    model = ScriptedChatModel(messages=iter([]), script=script)
    result = synthesize(load_tasks(ids=list(offline_accepted()[:1])), _ctx(model, ["rewrite", "judge"]))
    refines = [p for p in model.prompts if "A reviewer rejected the previous version" in p]
    assert len(refines) == 1 and "say which folder in plain words" in refines[0]
    assert seen == ["reject", "accept"]
    (task,) = result.accepted
    assert [j["decision"] for j in task.provenance["judge"]] == ["reject", "accept"]
    assert task.provenance["refine_rounds"] == 1
    assert next(t for t in task.turns if t)[0].content.startswith("Refined.")
    assert result.report["judge"]["refined"] == 1
    assert result.report["llm"]["per_stage"]["judge"]["calls"] == 2


def test_a_judge_that_keeps_rejecting_gets_one_refine_per_candidate_and_the_sample_is_rejected_with_its_critique():
    script, seen = _judge_script(["reject"])
    model = ScriptedChatModel(messages=iter([]), script=script)
    result = synthesize(load_tasks(ids=list(offline_accepted()[:1])), _ctx(model, ["rewrite", "judge"], max_plan_attempts=2,
                                                                          max_llm_calls_per_sample=20))
    (rej,) = result.rejected
    assert rej["reasons"] == ["judge_rejected:query_fixable"]
    assert rej["detail"]["judge"]["critique"].startswith("Turn 1")
    rounds = [(j["plan_attempt"], j["refine_round"]) for j in rej["detail"]["judge_log"]]
    assert rounds == [(0, 0), (0, 1), (1, 0), (1, 1)]  # two candidates, each judged, refined once, judged again
    assert len([p for p in model.prompts if "A reviewer rejected the previous version" in p]) == 2
    assert result.report["rejections_by_reason"] == {"judge_rejected": 1}


def test_offline_runs_never_call_the_judge():
    result = synthesize(load_tasks(ids=["multi_turn_base_0"]), SynthesisContext(seed=0, variants_per_seed=1))
    assert result.report["judge"] == {"judged": 0, "refined": 0, "rejected_by_judge": 0}
    assert result.report["llm"]["total"]["calls"] == 0


def test_an_answer_cut_by_the_token_cap_is_invalid_output_and_its_tokens_still_count():
    from openai import LengthFinishReasonError
    from openai.types.chat import ChatCompletion
    from openai.types.completion_usage import CompletionUsage

    def cut(prompt: str) -> AIMessage:
        usage = CompletionUsage(completion_tokens=256, prompt_tokens=1000, total_tokens=1256)
        raise LengthFinishReasonError(completion=ChatCompletion(id="x", choices=[], created=0, model="m",
                                                                object="chat.completion", usage=usage))

    result, model = _run(cut, n_seeds=1)
    (rej,) = result.rejected
    assert rej["reasons"] == ["llm_invalid_output"] and rej["llm_calls"] == 3  # retried: not a transport failure
    assert result.report["llm"]["per_stage"]["rewrite"] == {"calls": 3, "prompt_tokens": 3000, "completion_tokens": 768}


def test_an_llm_plan_that_fails_on_its_state_goes_to_the_config_patch_agent():
    """The planner sets a balance too low for the order its plan places: the plan is not discarded, the
    patch agent tops the balance up and the repair is recorded."""
    seed = load_tasks(ids=["multi_turn_base_108"])[0]

    def script(prompt: str) -> AIMessage:
        assert "TradingBot.account_info.balance" in prompt or "account_info" in prompt  # the state is shown
        draft = _draft_plan(prompt)
        draft["new_values"] = [{"path": "TradingBot.account_info.balance", "value_json": "10.0"}]
        return _tool(draft, "PlanProposal")

    model = ScriptedChatModel(messages=iter([]), script=script)
    result = synthesize([seed], _ctx(model, ["plan"], max_plan_attempts=1))
    patches = (result.accepted[0].provenance["patches"] if result.accepted else result.rejected[0]["patches"])
    assert patches and patches[0]["rule"] == "trading.add_balance" and "Insufficient funds" in patches[0]["error"]
    if result.accepted:  # the repaired plan keeps the planner's other choices
        assert result.accepted[0].provenance["llm_usage"]["plan"]["calls"] == 1
