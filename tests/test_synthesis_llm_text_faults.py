"""The second capable-model trial's waste (issue 13, item 3): text faults sent to the planner, validators
that contradict the prompt, prompt gaps, garbled drafts. One scripted-model test per fix; no network.

Each test fails on the code before its fix (named in its docstring).
"""

from __future__ import annotations

import json

from langchain_core.messages import AIMessage

from envs.dataset import load_tasks
from graphs.synthesis import synthesize
from tests.test_synthesis_llm_backbone import ScriptedChatModel, _ctx, _tool, capable_rewrite, offline_accepted

ACCEPT = {"reasoning": "faithful, new", "faithfulness": 5, "coherence": 4, "naturalness": 4,
          "easier_than_seed": False, "substantively_new": True, "decision": "accept", "fault": "none", "critique": ""}


def _draft_plan(prompt: str) -> dict:
    return json.loads(prompt.split("\n## Draft plan", 1)[1].split("\n", 2)[1])


# ----------------------------------------------------------------------------- 1. text faults go to the rewrite
def test_a_text_fault_goes_back_to_the_rewrite_with_its_reasons_and_the_plan_is_kept():
    """Before: a verdict rejection of the words alone (here an old name left in the text: leftover_name:text)
    re-planned: the planner was asked again (it can only resend its plan) and the next rewrite got no reason
    (trial requests 0003/0004, 0025/0026, 0027/0028). Now the rewrite is asked again with the reasons and the
    plan is kept: plan 1, rewrite 2, judge 1."""
    olds: list[str] = []

    def script(prompt: str) -> AIMessage:
        if "## Draft plan" in prompt:
            draft = _draft_plan(prompt)
            olds[:] = [r["old"] for r in draft["renames"] if len(r["old"]) >= 3 and not r["old"].isdigit()]
            return _tool(draft, "PlanProposal")
        if "strict quality judge" in prompt:
            return _tool(ACCEPT, "JudgeVerdict")
        if "leftover_name:text" in prompt:  # told what was wrong with its words: it fixes exactly that
            return capable_rewrite(prompt.replace(f"Hello there, about {olds[0]}. ", ""))
        return capable_rewrite(prompt, prefix=f"Hello there, about {olds[0]}. " if olds else "Hello there. ")

    model = ScriptedChatModel(messages=iter([]), script=script)
    seeds = [s for s in load_tasks(ids=list(offline_accepted()))]
    result = synthesize(seeds[1:2], _ctx(model, ["plan", "rewrite", "judge"], max_plan_attempts=3))
    assert olds, "the draft plan renames nothing: pick another seed"
    plans = [p for p in model.prompts if "## Draft plan" in p]
    rewrites = [p for p in model.prompts if "Drafts:" in p and "## Draft plan" not in p]
    assert len(plans) == 1, "a fault in the words re-planned"
    assert len(rewrites) == 2 and "leftover_name:text" in rewrites[1] and "the plan and its calls are fine" in rewrites[1]
    assert result.accepted, result.rejected
    assert result.accepted[0].provenance["llm_calls"] == 4
