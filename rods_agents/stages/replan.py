"""Node ``sample_plan``: start a (re)plan round, then plan (:mod:`rods_agents.stages.plan_sampling`).

A rejected candidate's verdict is remembered (the LLM planner is told why earlier attempts failed),
and its verdict, patch and refine state are cleared so the new candidate starts clean.

A rejection whose every reason is a fault of the *text* (:func:`text_faults_only`: an information-structure
break, an old name left in the words, a value the text gives no hint for, the seed's wording) is no reason
to re-plan: a planner cannot fix wording (the LLM trial spent 5 of 48 calls re-sending the same plan).
With the LLM rewrite stage the graph sends it back to the rewrite with the reasons, keeping the plan
(:func:`wants_text_fix`, one such round per plan); only plan faults re-plan.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rods_agents.run.outcome import Verdict
from rods_agents.stages.plan_sampling import plan_node
from rods_agents.stages.state import SampleState, items, verdict_of

if TYPE_CHECKING:
    from langgraph.runtime import Runtime

    from rods_agents.run.context import SynthesisContext


# reasons a rewrite of the words fixes (everything else is the plan's: its calls, state or values)
TEXT_FAULT_PREFIXES = ("information_structure:", "leftover_name:text", "unobtainable_value:no_hint",
                       "novelty:seed_text_copy", "novelty:seed_sentence_kept", "novelty:seed_turn_kept",
                       "novelty:digits_only", "unfaithful:old_choice_words")
PLAN_FAULTS_IN_TEXT_FAMILY = ("information_structure:held_out_changed",)  # the plan's miss_func mechanics


def is_text_fault(reason: str) -> bool:
    """True when ``reason`` is a fault of the user's words, not of the plan."""
    return reason.startswith(TEXT_FAULT_PREFIXES) and not reason.startswith(PLAN_FAULTS_IN_TEXT_FAMILY)


def text_faults_only(reasons: list[str]) -> bool:
    """True when there are reasons and a rewrite of the text alone can fix every one of them."""
    return bool(reasons) and all(is_text_fault(r) for r in reasons)


def text_fault_rounds(state: SampleState, plan_attempt: int) -> int:
    """How many times the text of this plan (``plan_attempt``) went back to the rewrite."""
    return sum(1 for r in items(state, "rejections") if r.get("text_fault") and r.get("plan_attempt") == plan_attempt)


def wants_text_fix(state: SampleState, llm_rewrite: bool, rounds: int = 1) -> bool:
    """Route a rejection to the rewrite (keeping the plan) rather than to the planner: the LLM rewrite
    stage is on, every reason is a text fault, and this plan's text has had fewer than ``rounds`` fixes."""
    verdict = verdict_of(state)
    if not llm_rewrite or verdict is None or verdict.accepted or verdict.terminal:
        return False
    attempt = int((state.get("plan") or {}).get("attempt", 0) or 0)
    return text_faults_only(list(verdict.reasons)) and text_fault_rounds(state, attempt) < rounds


def text_feedback(reasons: list[str], detail: dict | None = None) -> str:
    """The rewrite's feedback for text faults: the reasons whole, and that the plan stays."""
    faults = [r for r in reasons if is_text_fault(r)]
    if not faults:
        return ""
    lines = [f"- {r}" for r in faults]
    unobtainable = (detail or {}).get("unobtainable") or []
    lines += [f"  ({u})" for u in unobtainable[:3]]
    return ("The automatic checks rejected the previous text of these turns (turn numbers count from 0 in "
            "these reasons); the plan and its calls are fine and stay. Change only the words so that:\n"
            + "\n".join(lines) + "\n(information_structure:* = keep the seed's implicit steps, conditions, "
            "references (position/property/filter, with the seed's kind of cue) and transformations as listed; "
            "leftover_name:text = an old name or value the plan replaced is still in the words (also as an "
            "ordinary word): remove it; seed_cue='X' = the check looks for the words X in that turn: use them; "
            "unobtainable_value:no_hint = the text gives no way to single out that "
            "value: say the words that identify it, the way the seed does; novelty:seed_sentence_kept / "
            "seed_turn_kept = that sentence or turn is the seed's own reworded word for word: say it in words and an "
            "order of your own, keeping only the cue words listed)")


def rejection_record(verdict: Verdict, attempt: int, **extra: object) -> dict:
    """What the next plan prompt is told about a rejected attempt (no bulky profile)."""
    detail = {k: v for k, v in verdict.detail.items() if k not in ("profile", "judge_log")}
    if isinstance(detail.get("judge"), dict):
        detail["judge"] = {k: detail["judge"].get(k) for k in ("decision", "fault", "critique", "easier_than_seed")}
    return {"attempt": attempt, "reasons": list(verdict.reasons), "detail": detail, **extra}


def start_plan_round(state: SampleState, runtime: Runtime[SynthesisContext] | None = None) -> dict[str, Any]:
    """Remember why the previous candidate was rejected, forget its verdict and patch state, plan anew."""
    rejections = items(state, "rejections")
    previous = verdict_of(state)
    if previous is not None and not previous.accepted:
        rejections.append(rejection_record(previous, len(rejections)))
    fresh = {"verdict": None, "patch_failed": False, "errors": [], "patch_attempts": 0, "llm_error": None,
             "rejections": rejections, "refine_rounds": 0, "refine_pending": False}
    return fresh | plan_node({**state, **fresh}, runtime)


__all__ = ["is_text_fault", "rejection_record", "start_plan_round", "text_fault_rounds", "text_faults_only",
           "text_feedback", "wants_text_fix"]
