"""Say the choices a ground truth makes that its text never says.

BFCL's travel seeds buy ``insurance_type='comprehensive'`` after 'Buy travel insurance worth $450': no state,
result or function document gives the type, so no careful reader could know it, and reads 31 and 32 marked three
pairs borderline for it (the seed's gap, carried over). The choice is a flag, not information the assistant works
out (``prompts/bfcl/value_phrases.json``), so saying it leaves the task's information structure as it was; it only
makes the ground truth the one the text asks for. A withheld parameter (miss_param) stays withheld.

:func:`say_unsaid_choices` appends one sentence from ``prompts/phrasebook/choices.json`` to the turn that asks for
the call; siblings (``slot``) and scenarios take different sentences.
"""

from __future__ import annotations

from typing import Any

from envs.task import Message, Task
from rods_agents.analysis.tracing import Trace
from rods_agents.analysis.value_sources import choice_phrases, said_in
from rods_agents.variation.phrasebook import unsaid_choice_sentences


def said_upto(turns: list[list[Message]], upto: int) -> str:
    return "\n".join(m.content for t in turns[: upto + 1] for m in t if m.role == "user")


def withholdings(seed_info: Any) -> list[Any]:
    return [t.withheld for t in seed_info.turns if t.withheld is not None]


def _withheld(seed_info: Any) -> set[tuple[str, str]]:
    return {(w.method, w.param) for w in withholdings(seed_info)}


def say_unsaid_choices(variant: Task, turns: list[list[Message]], trace: Trace, seed_info: Any, slot: int | None
                       ) -> tuple[list[list[Message]], list[dict]]:
    """``turns`` with a sentence saying each unsaid choice appended to the last user turn at or before its call,
    and the provenance of each ({'turn', 'donors': [['phrasebook:choices', turn]], 'said': 'method.param'})."""
    table, words_of = unsaid_choice_sentences(), choice_phrases()
    withheld = _withheld(seed_info)
    out: list[dict] = []
    turns = [list(t) for t in turns]
    for rec in trace.calls:
        for param, value in rec.args.items():
            key = f"{rec.name}.{param}"
            words = words_of.get(key, {}).get(repr(value))
            if key not in table or words is None or (rec.name, param) in withheld:
                continue
            said = said_upto(turns, rec.turn)
            if said_in(words, said) or said_in(str(value), said):
                continue
            sentence = table[key][((slot or 0) + (variant.scenario or 0)) % len(table[key])].format(words=words)
            t = append_to_asking_turn(turns, seed_info, rec.turn, sentence)
            if t is not None:
                out.append({"turn": t, "donors": [["phrasebook:choices", t]], "said": key})
    return turns, out


def append_to_asking_turn(turns: list[list[Message]], seed_info: Any, call_turn: int, sentence: str) -> int | None:
    """Append ``sentence`` (in place) to the last user turn at or before the one that asks for a call of ground-truth
    turn ``call_turn``; that turn's index, or None where no user turn comes before. A miss_param call runs in the turn
    that supplies the withheld value: what it says goes with the request the turn before makes, or it would read as
    the value withheld and supplied (miss_param_185)."""
    asked = next((w.turn for w in withholdings(seed_info) if w.supplied_at == call_turn), call_turn)
    t = next((x for x in range(asked, -1, -1) if any(m.role == "user" for m in turns[x])), None)
    if t is not None:
        turns[t] = [Message(role=m.role, content=f"{m.content.rstrip()} {sentence}" if m.role == "user" else m.content)
                    for m in turns[t]]
    return t


__all__ = ["append_to_asking_turn", "said_upto", "say_unsaid_choices", "withholdings"]
