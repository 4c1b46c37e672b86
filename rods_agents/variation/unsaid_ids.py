"""Say the ids and logins a ground truth uses that neither its text, the state's hints nor any result gives.

A few BFCL seeds use a value no careful reader could find: miss_func_173 closes ticket 'ticket_001' after 'Can you
cancel it on my behalf?', and no call lists that ticket (it has no creator, so ``get_user_tickets`` misses it);
base_188 logs in to Twitter with credentials no turn states. Read 50 marked both pairs borderline for the seed's gap.
The verdict already lets a variant state a value its seed reads from the state where the state holds no hint
(``stated fallback``, :func:`rods_agents.stages.verdict.obtainability_problems`); this module writes that sentence,
from ``prompts/phrasebook/choices.json``'s ``unsaid_ids`` table, so the variant is a task its text can solve. A value
the text can still be read to (a hint in the state, a result) and a withheld parameter (miss_param) are never said.
"""

from __future__ import annotations

from typing import Any

from envs.task import Message, Task
from rods_agents.analysis.obtainability import public_states, state_obtainable
from rods_agents.analysis.tracing import CallRecord, Trace
from rods_agents.analysis.value_sources import classify_arguments, said_in, user_text_upto
from rods_agents.variation.phrasebook import unsaid_id_sentences
from rods_agents.variation.unsaid_choices import append_to_asking_turn, said_upto, withholdings


def _keyed(key: str) -> tuple[str, tuple[str, ...]] | None:
    """'authenticate_twitter.username+authenticate_twitter.password' -> ('authenticate_twitter', ('username',
    'password')); None for a key that spans several methods (no such table entry)."""
    pairs = [k.split(".", 1) for k in key.split("+")]
    methods = {m for m, _ in pairs}
    return (pairs[0][0], tuple(p for _, p in pairs)) if len(methods) == 1 else None


def _unfindable(task: Task, rec: CallRecord, param: str, sources: dict, states: dict) -> bool:
    """The value of ``rec``'s ``param`` is read from the state (or built from it) with no hint in the text before it."""
    src = sources.get((rec.turn, rec.index, param))
    if src is None or src.source not in ("state", "composed"):
        return False
    return not state_obtainable(rec.args[param], rec, states.get(rec.cls, {}), user_text_upto(task, rec.turn))


def say_unsaid_ids(variant: Task, turns: list[list[Message]], trace: Trace, seed_info: Any, slot: int | None
                   ) -> tuple[list[list[Message]], list[dict]]:
    """``turns`` with a sentence stating each unfindable id or login appended to the last user turn at or before
    its call, and the provenance of each ({'turn', 'donors': [['phrasebook:ids', turn]], 'said': key})."""
    table = unsaid_id_sentences()
    withheld = {(w.method, w.param) for w in withholdings(seed_info)}
    task = variant.model_copy(update={"turns": turns})
    sources = {(a.turn, a.index, a.param): a for a in classify_arguments(task, trace)}
    states = public_states(task)
    out: list[dict] = []
    turns = [list(t) for t in turns]
    for key, texts in table.items():
        keyed = _keyed(key)
        if keyed is None:
            continue
        method, params = keyed
        for rec in trace.calls:
            if rec.name != method or any(p not in rec.args or (method, p) in withheld for p in params):
                continue
            values = [rec.args[p] for p in params]
            said = said_upto(turns, rec.turn)
            if all(said_in(str(v), said) for v in values) or not _unfindable(task, rec, params[0], sources, states):
                continue
            sentence = texts[((slot or 0) + (variant.scenario or 0)) % len(texts)].format(
                **{f"v{i + 1}": v for i, v in enumerate(values)})
            t = append_to_asking_turn(turns, seed_info, rec.turn, sentence)
            if t is not None:
                out.append({"turn": t, "donors": [["phrasebook:ids", t]], "said": key})
    return turns, out


__all__ = ["say_unsaid_ids"]
