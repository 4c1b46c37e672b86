"""Say which object a turn means where its seed picks it by when it came.

base_134 asks for 'an investment order I submitted not too long ago' while the history holds two orders; the ground
truth reads the newer one. A donor sentence ('I'm curious about the specifics of my placed order') says no such thing,
and read 53 marked the pair borderline: a careful reader cannot tell which order. The verdict refuses such a variant
(:func:`rods_agents.analysis.faithfulness.recency_dropped`); this module first appends one sentence from
``prompts/phrasebook/choices.json``'s ``recency`` table ('I mean the most recent order I placed.') to the turn that
asks for the call, so the variant keeps the seed's pick in words of its own.
"""

from __future__ import annotations

from typing import Any

from envs.task import Message, Task
from rods_agents.analysis.faithfulness import recency_drops, says_recency
from rods_agents.analysis.novelty import user_text
from rods_agents.analysis.tracing import Trace, trace_task
from rods_agents.analysis.value_sources import classify_arguments
from rods_agents.variation.phrasebook import recency_sentences
from rods_agents.variation.unsaid_choices import append_to_asking_turn


def say_recency(seed: Task, variant: Task, turns: list[list[Message]], trace: Trace, seed_info: Any,
                slot: int | None) -> tuple[list[list[Message]], list[dict]]:
    """``turns`` with a recency sentence for each pick :func:`recency_drops` finds, and the provenance of each
    ({'turn', 'donors': [['phrasebook:recency', turn]], 'said': param}). A seed whose words pick nothing by when it
    came is not traced again."""
    if not says_recency(user_text(seed)):
        return turns, []
    table = recency_sentences()
    task = variant.model_copy(update={"turns": turns})
    drops = recency_drops(task, seed, classify_arguments(task, trace), classify_arguments(seed, trace_task(seed)))
    out: list[dict] = []
    turns = [list(t) for t in turns]
    for a in drops[:3]:
        texts = table.get(a.param)
        if not texts:
            continue
        sentence = texts[((slot or 0) + (variant.scenario or 0)) % len(texts)]
        t = append_to_asking_turn(turns, seed_info, a.turn, sentence)
        if t is not None:
            out.append({"turn": t, "donors": [["phrasebook:recency", t]], "said": a.param})
    return turns, out


__all__ = ["say_recency"]
