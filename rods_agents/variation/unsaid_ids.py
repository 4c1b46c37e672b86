"""Say the ids and logins a ground truth uses that neither its text, the state's hints nor any result gives.

A few BFCL seeds use a value no careful reader could find: miss_func_173 closes ticket 'ticket_001' after 'Can you
cancel it on my behalf?', and no call lists that ticket (it has no creator, so ``get_user_tickets`` misses it);
base_188 logs in to Twitter with credentials no turn states. Read 50 marked both pairs borderline for the seed's gap.
The seed's gaps are :func:`rods_agents.analysis.seed_gaps.seed_gaps` (an id or a login no text, hint, recipe or lookup
gives), the same test by which the verdict takes a stated one as filling the gap (``gap_fallbacks``); this module
writes that sentence, from ``prompts/phrasebook/choices.json``'s ``unsaid_ids`` table, so the variant is a task its
text can solve. A value the text already says and a withheld parameter (miss_param) are never said again.
"""

from __future__ import annotations

from typing import Any

from envs.task import Message, Task
from rods_agents.analysis.seed_gaps import seed_gaps
from rods_agents.analysis.tracing import Trace
from rods_agents.analysis.value_sources import said_in
from rods_agents.variation.phrasebook import unsaid_id_sentences
from rods_agents.variation.unsaid_choices import append_to_asking_turn, said_upto, withholdings


def _keyed(key: str) -> tuple[str, tuple[str, ...]] | None:
    """'authenticate_twitter.username+authenticate_twitter.password' -> ('authenticate_twitter', ('username',
    'password')); None for a key that spans several methods (no such table entry)."""
    pairs = [k.split(".", 1) for k in key.split("+")]
    methods = {m for m, _ in pairs}
    return (pairs[0][0], tuple(p for _, p in pairs)) if len(methods) == 1 else None


def say_unsaid_ids(seed: Task, variant: Task, turns: list[list[Message]], trace: Trace, seed_info: Any,
                   slot: int | None) -> tuple[list[list[Message]], list[dict]]:
    """``turns`` with a sentence stating each of the seed's gaps (:func:`seed_gaps`) the variant's calls use, appended
    to the last user turn at or before its call, and the provenance of each ({'turn', 'donors': [['phrasebook:ids',
    turn]], 'said': key})."""
    table = unsaid_id_sentences()
    withheld = {(w.method, w.param) for w in withholdings(seed_info)}
    gaps = seed_gaps(seed)
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
            if f"turn {rec.turn} {method}.{params[0]}" not in gaps or all(said_in(str(v), said) for v in values):
                continue
            sentence = texts[((slot or 0) + (variant.scenario or 0)) % len(texts)].format(
                **{f"v{i + 1}": v for i, v in enumerate(values)})
            t = append_to_asking_turn(turns, seed_info, rec.turn, sentence)
            if t is not None:
                out.append({"turn": t, "donors": [["phrasebook:ids", t]], "said": key})
    return turns, out


__all__ = ["say_unsaid_ids"]
