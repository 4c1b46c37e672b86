"""A turn that makes one call for every member of a set it names, worded anew around the seed's own set phrase.

'I need to see the details of each stock in my watchlist' (get_watchlist, then get_stock_info per symbol) and 'Copy
all the text files of the 'Quarter1_Reports' directory and place it in a new directory naming it 'Archived_Quarter1''
(mkdir, then cp per file) pick their values with words the information-structure lexicon reads as no cue, so the
structure counts them as unresolved picks and the rewrite kept these turns in the seed's sentences, in every sample of
their scenarios (113 and 18). The set phrase ('each stock in my watchlist', 'all the text files of the
'Quarter1_Reports' directory') is what decides which values the calls take, so it is kept word for word and written
into a phrasebook sentence marked ``pick`` for the repeated call ('Give me the stock info for {symbol}.' -> 'Give me
the stock info for each stock in my watchlist.'), after a sentence per call that comes before the set. The caller
re-measures the new turn like any other (the same picks left to the words, every value as findable as before).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

from envs.task import Task
from rods_agents.variation.cues import PICKED
from rods_agents.variation.donor_search import find_wording, phrasebook_donors
from rods_agents.variation.saying import as_sentence
from rods_agents.variation.turn_bank import Donor, Slot, segment_signature

_SET_PHRASE = re.compile(
    r"\b(?:each|every|all(?:\s+of)?(?:\s+(?:the|my|these|those))?|both(?:\s+of)?(?:\s+(?:the|my))?"
    r"|the\s+(?:first|last|top)\s+(?:two|three|four|five))"
    r"(?:\s+[a-z]+)?\s+(?:stocks?|files?|symbols?|orders?|tickets?|messages?|tweets?|them)\b"
    r"(?:\s+(?:in|on|of|from|within)\s+(?:my|the|this|that)(?:\s+'[^']{1,60}')?"
    r"\s+(?:watchlist|watch\s+list|list|directory|folder|sector|industry))?", re.I)


def set_phrase(text: str) -> str | None:
    """The one noun phrase of ``text`` naming a set by 'each', 'every', 'all', 'both' or a count from one end ('each
    stock in my watchlist', 'the first two stocks in my watchlist'); None where there is none or more than one (which one decides the calls is then unclear)."""
    found = _SET_PHRASE.findall(text)
    return found[0] if len(found) == 1 else None


def set_group(methods: tuple[str, ...], target: tuple[Slot, ...]) -> tuple[int, tuple[str, ...]] | None:
    """(first call, parameters) of the set: the trailing run of two or more calls of one method that differ only in
    one picked parameter (read from a result or the state: the set's members), or a last call whose every parameter
    is picked, each another member ('review both files in this directory': diff's two file names); None for any
    other turn."""
    method, n = methods[-1], len(methods)
    start = n
    while start > 0 and methods[start - 1] == method:
        start -= 1
    per_call = [{x.param: x for x in target if x.index == i} for i in range(start, n)]
    if n - start == 1:
        own = per_call[0]
        members = {json.dumps(x.value) for x in own.values()}
        if len(own) >= 2 and len(members) == len(own) and all(x.source in PICKED and not x.flag for x in own.values()):
            return start, tuple(own)
        return None
    varying = {p for p in per_call[0] if len({json.dumps(c.get(p).value) if c.get(p) else "" for c in per_call}) > 1}
    if len(varying) != 1:
        return None
    param = next(iter(varying))
    if not all(c.get(param) is not None and c[param].source in PICKED and not c[param].flag for c in per_call):
        return None
    return start, (param,)


def set_pick_turn(seed: Task, turn: int, methods: tuple[str, ...], target: tuple[Slot, ...], world: set[str],
                  allowed: set[float], values: str, used: set[str], slot: int | None, carried: str, earlier: str = "",
                  aliases: dict[str, str] | None = None) -> tuple[str, list[Donor]] | None:
    """New words for a set-pick turn (see the module's docstring), or None where the turn is none or no sentence
    fits: a phrasebook sentence per call before the set, then one for the set's calls with the set phrase."""
    group, phrase = set_group(methods, target), set_phrase(carried)
    if group is None or phrase is None:
        return None
    start, params = group
    parts: list[tuple[str, Donor]] = []
    for i in range(start):  # the calls before the set ('Show me my watchlist.')
        own = tuple(replace(x, index=0) for x in target if x.index == i)
        phrases = phrasebook_donors(seed, turn, i, (methods[i],), own, segment_signature(), used,
                                    {d.text for _, d in parts}, carried, earlier, aliases=aliases)
        found = find_wording([], own, world, allowed, values, carried, slot, phrases, True, whole_span=False,
                             key=f"{seed.scenario}|{turn}|set|{i}", earlier=earlier)
        if found is None:
            return None
        parts.append(found)
    # the set's first member stands for all of them: one placeholder takes the set phrase ('Show me how {file_name1}
    # differ.' -> 'Show me how both files in this directory differ.')
    first = tuple(replace(x, index=0) for x in target if x.index == start and x.param not in params[1:])
    phrases = phrasebook_donors(seed, turn, start, (methods[start],), first, segment_signature(), used,
                                {d.text for _, d in parts}, carried, earlier, picks={params[0]: _lower(phrase)},
                                aliases=aliases)
    found = find_wording([], first, world, allowed, values, carried, slot, phrases, True, whole_span=False,
                         key=f"{seed.scenario}|{turn}|set", earlier=earlier)
    if found is None:
        return None
    parts.append(found)
    return " ".join(as_sentence(text) for text, _ in parts), [d for _, d in parts]


def _lower(phrase: str) -> str:
    return phrase[:1].lower() + phrase[1:]


__all__ = ["set_group", "set_phrase", "set_pick_turn"]

