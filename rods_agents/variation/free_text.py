"""Free texts a turn describes rather than dictates, and a donor turn that brings its own.

A turn like 'send an inquiry to customer support ... incorporate the concerns I have regarding my luggage
restrictions' leaves the assistant to compose ``contact_customer_support``'s message ('Inquiry regarding
luggage restrictions for my flight'). No other human turn describes that concern, so no donor could word the
turn and it stayed the seed's sentence: four TravelAPI scenarios got no variant at all (issue 13, 8 of 8
samples each refused as copies of one such turn). A donor turn describing *its own* concern, with the
message its ground truth composes from it, asks for the same skill (compose a message from a description)
about another concern; the variant takes the donor's words and the donor's message together.

Which parameters are such free texts is data (``prompts/bfcl/skill_classes.json`` ``described_free_text``).
A text is *described* when the turn does not quote it: a quoted message is dictated, and the ordinary donors
carry it. The target's and the donor's texts must be said alike (both paraphrased, or both written out
unquoted), so the variant leaves the assistant exactly as much composing as the seed did. A text that other
turns or calls point back at (a later ticket 'about the luggage problem') is never replaced.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from envs.executor import CallError, parse_call, to_call_string
from envs.task import Task
from rods_agents.analysis import knowledge
from rods_agents.analysis.novelty import call_values
from rods_agents.variation.saying import quoted_in
from rods_agents.variation.turn_bank import Donor, Slot

_TOPIC = re.compile(r"[a-z]{5,}")
# words every such text shares with the requests around it: they tie no later turn to this concern
_GENERIC = frozenset({"about", "account", "assist", "booking", "customer", "flight", "inquiry", "issue", "message",
                      "please", "regarding", "request", "support", "ticket", "travel", "there", "their", "would"})


def free_text_params() -> frozenset[str]:
    """``method.param`` of the free texts a turn may describe (``skill_classes.json``)."""
    return frozenset(knowledge.skill_classes().get("described_free_text", ()))


def _written_out(value: str, text: str) -> bool:
    return value.lower().strip(" .") in text.lower()


def described(slot: Slot, method: str, text: str) -> bool:
    """``slot`` is a free text of ``method`` that ``text`` gives in words of its own or unquoted, never in quotes: one
    the user states, or one the assistant composes from what the turn describes ('Kindly contact customer support on
    my behalf, emphasizing the smooth facilitation of my travel arrangements', base_186)."""
    if f"{method}.{slot.param}" not in free_text_params() or slot.source not in ("user", "composed") or slot.flag:
        return False
    value = json.loads(slot.value)
    return isinstance(value, str) and len(value.split()) >= 3 and not quoted_in(value, text, ends=" .")


def adopted_slots(methods: tuple[str, ...], target: tuple[Slot, ...], span: str, donor: Donor
                  ) -> tuple[Slot, ...] | None:
    """``target`` with each described free text replaced by the donor's text for the same call and parameter, or
    None when the turn describes none, or the donor does not describe its own the same way (paraphrased vs
    written out)."""
    theirs = {(s.index, s.param): s for s in donor.slots}
    out, changed = list(target), False
    for i, x in enumerate(target):
        if not (0 <= x.index < len(methods) and described(x, methods[x.index], span)):
            continue
        d = theirs.get((x.index, x.param))
        if d is None or not described(d, methods[x.index], donor.text):
            return None
        mine, new = json.loads(x.value), json.loads(d.value)
        if _written_out(mine, span) != _written_out(new, donor.text) or mine == new:
            return None
        out[i], changed = replace(x, value=d.value), True
    return tuple(out) if changed else None


def topic_words(value: str) -> set[str]:
    """The words of a free text that say what it is about ('luggage', 'restrictions')."""
    return set(_TOPIC.findall(value.lower())) - _GENERIC


def tied_elsewhere(value: str, other_text: str) -> bool:
    """Another turn or call names what ``value`` is about: replacing it would leave that pointing at nothing."""
    return bool(topic_words(value) & set(_TOPIC.findall(other_text.lower())))


def quoted_later(text: str, task: Task, turn: int) -> bool:
    """A sentence of ``text`` (three words or more) is written into an argument of a call after ``turn``: 'Create a
    file.' in ``echo(content='Create a file name based on ...')`` for 'Write my last question in it' (read 15,
    miss_param_29). Re-wording the turn would leave that call writing words no turn says any more."""
    later = task.model_copy(update={"ground_truth": [[] if t <= turn else calls
                                                     for t, calls in enumerate(task.ground_truth)]})
    written = " ".join(v.lower() for v in call_values(later))
    sentences = [re.sub(r"\s+", " ", x).strip(" .?!").lower() for x in re.split(r"(?<=[.?!])\s+", text)]
    return any(len(x.split()) >= 3 and x in written for x in sentences)


def whole_quote(text: str, task: Task, turn: int) -> tuple[int, str, str] | None:
    """(turn, method, param) of the one later call that writes ``text`` whole, word for word ('Write my last
    question in it' writes 'Create a file name based on ...' into a file, base_29), or None. Such a turn may take
    new words when that call writes the new words instead (:func:`with_text`, called with this triple)."""
    found = [(t, parsed.name, param) for t in range(turn + 1, len(task.ground_truth)) for call in task.ground_truth[t]
             if (parsed := _parsed(call)) is not None and not parsed.args
             for param, value in parsed.kwargs.items() if isinstance(value, str) and value.strip() == text.strip()]
    return found[0] if len(found) == 1 else None


def _parsed(call: str) -> Any:
    try:
        return parse_call(call)
    except CallError:
        return None


def with_text(ground_truth: list[list[str]], turn: int, method: str, param: str, old: str, new: str
              ) -> list[list[str]] | None:
    """``ground_truth`` with ``method``'s ``param`` in ``turn`` changed from ``old`` to ``new`` (one call), or None."""
    out = [list(calls) for calls in ground_truth]
    for i, call in enumerate(out[turn]):
        parsed = _parsed(call)
        if parsed is not None and parsed.name == method and not parsed.args and parsed.kwargs.get(param) == old:
            out[turn][i] = to_call_string(method, {**parsed.kwargs, param: new})
            return out
    return None


def adopted_ground_truth(ground_truth: list[list[str]], turn: int, methods: tuple[str, ...], before: tuple[Slot, ...],
                         after: tuple[Slot, ...]) -> list[list[str]] | None:
    """``ground_truth`` with every free text :func:`adopted_slots` changed, or None when a call is not found."""
    out: list[list[str]] | None = ground_truth
    for x, y in zip(before, after, strict=True):
        if x.value != y.value and out is not None:
            out = with_text(out, turn, methods[x.index], x.param, json.loads(x.value), json.loads(y.value))
    return out


def apply_adoptions(ground_truth: list[list[str]], provenance: list[dict[str, Any]]) -> list[list[str]]:
    """The plan's ground truth with the free texts the rewrite adopted from donors (provenance ``adopted``) and the
    turns a later call writes down, in their new words (provenance ``requoted``)."""
    out = ground_truth
    for p in provenance:
        for a in (*p.get("adopted", ()), *p.get("requoted", ())):
            changed = with_text(out, a["turn"], a["method"], a["param"], a["from"], a["to"])
            if changed is None:
                raise ValueError(f"adopted free text not found in the ground truth: {a}")
            out = changed
    return out


__all__ = ["adopted_ground_truth", "adopted_slots", "apply_adoptions", "described", "free_text_params",
           "quoted_later", "tied_elsewhere", "topic_words", "whole_quote", "with_text"]
