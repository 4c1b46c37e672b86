"""Cue words of a turn: the picks that single out a value ('the last stock on the list') and cues no call explains.

A reference's cue decides the ground truth, so a donor may stand for such a turn only with a pick of the same kind
(:func:`turn_picks`, :func:`pick_phrase`); a cue the structure tied to no call (:func:`stray_cues`) keeps its sentence;
a donor piece that brings cue words of its own story (:func:`brings_cues`, :func:`names_other_work`) is refused.
"""

from __future__ import annotations

import json
import re
from typing import Any

from prompts import load_prompt_json
from rods_agents.analysis.information_structure import _QUOTED, lexicon
from rods_agents.variation.turn_bank import Donor, Slot

_PICK_LEAD = re.compile(r"(?:the|that|this|my|your)\b", re.I)  # a pick phrase opens with a determiner
_PICK_DET = re.compile(r"\b(?:the|that|this|my|your)(?:\s+(?:same|very))?\s+$", re.I)
_PICK_TAIL = re.compile(r"\s+(?:listed|displayed|shown|on|in|of|from|within|my|the|your|that|this|those|these|list|watchlist|"
                        r"watch\s+list|directory|folder|system's|id|ids|one|stock|stocks|file|files|order|orders|booking|"
                        r"bookings|symbols?|results?|output|sector)\b", re.I)
_PICK_END = re.compile(r"(?:\s+(?:on|in|of|from|within|my|the|your|that|this|those|these))+$", re.I)
_PICK_HEADS = frozenset("stock stocks symbol file files order booking reservation one list watchlist directory folder id "
                        "output results listed displayed shown message tweet ticket transaction".split())


def pick_phrase(cue: str, span: str) -> str | None:
    """The noun phrase ``span`` picks a value by, around a reference cue: 'the first stock listed in my watchlist'
    for the cue 'the first stock', 'the most recent order ID' for 'most recent order'. A sentence written around
    these words ('Pull up the numbers for {symbol}.', phrasebook ``pick``) leaves the assistant the same pick from
    the same list, in words that are not the seed's sentence. None where the words around the cue are no noun
    phrase with a determiner and a head ('my recently acquired flight and insurance', 'the first' alone)."""
    at = span.lower().find(cue.lower().strip())
    if at < 0 or not cue.strip():
        return None
    start, end = at, at + len(cue.strip())
    before = _PICK_DET.search(span[:start])
    if before and not _PICK_LEAD.match(span, start):
        start = before.start()
    while (more := _PICK_TAIL.match(span, end)) is not None:
        end = more.end()
    phrase = _PICK_END.sub("", span[start:end])
    if phrase.lower().startswith("alphabetically "):
        phrase = "the " + phrase  # 'It's alphabetically first file in that directory': the noun phrase it means
    words = phrase.lower().split()
    if not _PICK_LEAD.match(phrase) or len(words) < 2 or words[-1] not in _PICK_HEADS:
        return None
    return phrase[:1].lower() + phrase[1:]


def turn_picks(info: Any, g: int, span: str, methods: tuple[str, ...]) -> dict[str, str]:
    """Parameter -> pick phrase (:func:`pick_phrase`) for a one-call turn whose only cues are references of its
    call (by position or recency, one per parameter); {} for any other turn (a transformation or a condition
    keeps its sentence, two picks in one call read as one phrase, a route excepted: :func:`route_picks`)."""
    s = info.turns[g]
    if len(methods) != 1 or s.conditions or s.transformations or not s.references:
        return {}
    return call_picks(s, span, methods[0])


def call_picks(s: Any, span: str, method: str) -> dict[str, str]:
    """:func:`turn_picks` for the call ``method`` of the turn structure ``s``, its words being ``span``."""
    if {r.param for r in s.references if r.method == method} == set(_ROUTE) and (route := route_picks(span)):
        return route
    out: dict[str, str] = {}
    own = {(r.cue, r.param) for r in s.references if r.method == method}
    for r in s.references:
        if r.method != method and (r.cue, r.param) in own:
            continue  # an implicit lookup of the same pick ('buy 100 shares of the last one': its price first)
        phrase = pick_phrase(r.cue, span) if r.kind in ("position", "property") and r.method == method else None
        if phrase is None or r.param in out:
            return {}
        out[r.param] = phrase
    if len(set(out.values())) != len(out):
        return {}
    return out


_ORDINALS = r"(?:first|second|third|fourth|fifth|sixth|last)"
_ROUTE = ("travel_from", "travel_to")
_ROUTE_PICK = re.compile(
    rf"\bfrom\s+(?P<a>the\s+{_ORDINALS}(?:\s+(?:airport|one))?)\s+to\s+(?P<b>the\s+{_ORDINALS}(?:\s+(?:airport|one))?"
    rf"\s+(?:in|on|from)\s+(?:the|your|my)\s+(?:[\w']+\s+)?(?:list|inventory))\b", re.I)


def route_picks(span: str) -> dict[str, str]:
    """Where the turn picks a flight's two ends from one list by position ('from the first airport to the second one
    in the system's list', base_159; 'from the first to the second airport in your inventory', base_185), the words
    for each end: a sentence written around them ('What's the fare from {travel_from} to {travel_to}?', phrasebook
    ``pick`` for both) leaves the same two picks from the same list to the assistant. {} where the turn says no such
    route (both references read as 'the first', so :func:`pick_phrase` gives one phrase for both)."""
    m = _ROUTE_PICK.search(span)
    return {"travel_from": m.group("a"), "travel_to": m.group("b")} if m else {}


PICKED = frozenset({"call", "state", "composed"})


def picks_something(target: tuple[Slot, ...]) -> bool:
    """Some argument of the turn is left for its words to pick (read from a result or the state, or composed). A
    turn whose every argument is stated or a documented choice has nothing a filter phrase could single out: 'an
    inventory of files that are visible and hidden' (ls -a) describes the listing, and a sentence for the same
    calls that states the same values asks for the same thing (the re-measure still checks sources and structure).
    A value one result singles out (:attr:`Slot.producer`) is no pick either: a sentence pointing at that result says it."""
    return any(x.source in PICKED for x in target if not x.flag and not x.producer)  # a value its result singles
    # out leaves nothing to pick ('that first analysis' over a find with one match, base_28)


def stray_picks(span: str, stray: list[tuple[int, int]], methods: tuple[str, ...], target: tuple[Slot, ...]
                ) -> dict[str, str]:
    """Parameter -> pick phrase for a one-call turn whose stray cues (:func:`stray_cues`: the structure tied them to
    no call) all lie in one noun phrase naming the value of its one parameter not stated in the words ('annul the
    latest order I put in', where another result holds that order too). The phrase says which value, as a
    reference tied to the call does (:func:`turn_picks`): a sentence written around it keeps the pick, and the
    re-measure checks the turn's value sources and structure are unchanged. {} for any other turn."""
    if len(methods) != 1:
        return {}
    params = {x.param for x in target if x.index == 0 and not x.flag and x.source in PICKED}
    if len(params) != 1:
        return {}
    (param,) = params
    phrases = {pick_phrase(span[a:b], span) for a, b in stray}
    if None in phrases and len(merged := _merged(stray)) < len(stray):
        # overlapping cues read as one ('the most recent ticket': 'most recent' and 'recent ticket', long_context_125),
        # kept only where the phrase's head names the parameter (else base_131's 'the last message' took a receiver)
        phrases = {pick_phrase(span[a:b], span) for a, b in merged}
        if not any(p and p.lower().split()[-1] in param.lower().split("_") for p in phrases):
            return {}
        stray = merged
    if len(phrases) != 1 or None in phrases:
        return {}
    (phrase,) = phrases
    if not all(span.lower().find(phrase.lower()) <= a and b <= span.lower().find(phrase.lower()) + len(phrase)
               for a, b in stray):
        return {}
    return {param: antecedent(phrase, span)}


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a < out[-1][1]:
            out[-1] = (out[-1][0], max(b, out[-1][1]))
        else:
            out.append((a, b))
    return out


_DEMONSTRATIVE = re.compile(r"(?:that|this)\s+(\w+)", re.I)


def antecedent(phrase: str, span: str) -> str:
    """A pick by a demonstrative ('that ticket') written as the one thing the words before it introduce ('There seems
    to be a glitch with a ticket I lodged recently regarding trading system queries. Would you be able to track down
    that ticket') -> 'the ticket I lodged recently regarding trading system queries': new words around 'that ticket'
    alone would drop the description that picks it (base_106). The phrase as it is where no one such thing is said."""
    m = _DEMONSTRATIVE.fullmatch(phrase.strip())
    if not m:
        return phrase
    at = span.lower().find(phrase.lower())
    found = list(re.finditer(rf"\b(?:a|an)\s+({re.escape(m.group(1))}\b[^.?!,;]*)", span[:max(at, 0)], re.I))
    return f"the {found[0].group(1).strip()}" if len(found) == 1 else phrase


# 'that last order I made' where one order exists so far: recency, not a place in a list
_LAST_MADE = re.compile(r"\b(?:the|that|this|my)?\s*(?:last|final)\s+(?:\w+\s+)?(?:order|ticket|booking|message|tweet|"
                        r"reservation|transaction|purchase|trade)\b(?!\s+(?:on|in|of|from)\s+(?:the|that|this|my)\b)", re.I)


def cue_spans(text: str, singled: bool = False, last_is_recency: bool | None = None) -> list[tuple[int, int]]:
    """Where ``text`` has words the lexicon reads as a condition, a reference or a transformation, whether or not
    the structure tied them to a call: 'only rounded to the nearest integer, just the number' decides that the
    mean's 6500.0 is written '6500' even where the value counts as read from a result. ``singled``: the one call's
    value read from a result is the only one of its kind so far (:func:`rods_agents.variation.turn_bank.singled_producer`),
    so words picking it by recency ('the order I just placed', 'my latest booking', 'that last order I made') say
    nothing a sentence pointing at that result ('Cancel the booking we made') does not: they are left out."""
    lex = lexicon()
    spans = []
    # the generic 'the result' / 'based on the' / 'with the details' cues mark a value read from a result, which
    # the value sources already hold to its call; the rest say how a value is built or which one is meant
    strong = [p for p in lex.transformations if not re.search(r"result|based on|includ", p.pattern)]
    kinds = [k for k in lex.references if not (singled and k == "property")]
    last_is_recency = singled if last_is_recency is None else last_is_recency
    recency = [m.span() for m in _LAST_MADE.finditer(text)] if last_is_recency else []
    for p in [*strong, *(q for k in kinds for q in lex.references[k])]:
        spans += [m.span() for m in p.finditer(text) if not any(a < m.end() and m.start() < b for a, b in recency)]
    excluded = [m.span() for p in lex.condition_exclusions for m in p.finditer(text)]
    for p in lex.conditions:
        spans += [m.span() for m in p.finditer(text) if not any(a <= m.start() < b for a, b in excluded)]
    return spans


def stray_cues(text: str, methods: tuple[str, ...], singled: bool = False) -> list[tuple[int, int]]:
    """:func:`cue_spans` less the words that ask for one of the turn's own calls: 'the average amount' asks for the
    mean, 'a summary of my booking' for the invoice, 'the total' for the sum; they say which call, not how a value
    is built, and a sentence for that call says it too."""
    own = [m.span() for name in methods for p in lexicon().methods.get(name, ((), None))[0] for m in p.finditer(text)]
    # a cue whose last word opens the call's own words ('the last 4 lines' for tail: 'the last' and 'last ... lines'),
    # and one inside dictated content (a tweet 'Just made a move...', a message 'The last-minute cancellation...')
    quoted = list(_QUOTED.finditer(text))
    dictated = [(m.start(), m.end()) for m in quoted if len(m.group(0).split()) >= 3]
    # and words of recency right after a value the turn writes out ("'backup.txt' that we just created"): the name
    # says which file, the words only recall it
    attached = [m.end() for m in quoted]
    return [(a, b) for a, b in cue_spans(text, singled)
            if not any(x <= a and b <= y or a < x < b <= y for x, y in own)
            and not any(x <= a and b <= y for x, y in dictated)
            and not any(e <= a and _ATTACHED.fullmatch(text[e:a]) for e in attached)
            and not any(b <= x and _NAMING.fullmatch(text[b:x]) for x, _ in dictated)]


_ATTACHED = re.compile(r"\s*,?\s*(?:(?:that|which)\s+)?(?:(?:we|i|you)\s+)?", re.I)
# a few words between a cue and the dictated text it names ("Forward my latest trading summary 'I just executed
# another order...'"): the words say what the text is, not which of several values to pick
_NAMING = re.compile(r"(?:\s*[\w-]+){0,3}\s*:?\s*")


def names_other_work(text: str, world: set[str], calls: str) -> bool:
    """``text`` names work of an environment the variant does not have, or of a call it never makes
    (``prompts/bfcl/donor_domain_words.json``): 'the invoice that details my recently acquired flight and
    insurance' where nobody bought insurance, 'close the ticket as the tire issue is resolved' in a flight task
    (read 8). ``world``: the variant's world strings (its config's class names among them); ``calls``: its
    ground truth's text."""
    for entry in load_prompt_json("bfcl/donor_domain_words.json").values():
        match = re.search(entry["pattern"], text, re.I)
        if match is None:
            continue
        if not any(c.lower() in world for c in entry.get("classes", ())):
            return True
        methods = entry.get("methods")
        if methods and not any(f"{m}(" in calls for m in methods) and match.group(0).lower() not in world:
            return True
    return False


_CLAIM = re.compile(r"\b(just|recently|previously)\s+(placed|made|booked|created|submitted|opened|sent|posted|"
                    r"purchased|acquired|lodged|filed|reserved|initiated|put in|moved|copied)\b", re.I)
# 'the last service ticket you submitted' (read 11): work the donor's assistant did, which the variant's never did
_DONE_BY = re.compile(r"\b(?:you|we)\s+(?:just\s+|recently\s+|already\s+)?(?:submitted|created|filed|opened|lodged|"
                      r"raised|placed|booked|made)\b", re.I)


# a line picked by its place in a file ('sort the inaugural line of the report', a BFCL train turn worded for a sort
# of the whole file): the reference lexicon leaves 'first line' to head's and tail's line counts
_LINE_PICK = re.compile(r"\b(first|inaugural|opening|initial|top|last|final|closing|bottom)\s+(?:\d+\s+|\w+\s+)?lines?\b",
                        re.I)


def _line_picks(text: str, span: str) -> bool:
    """``text`` picks a line by its place ('the inaugural line') where ``span`` names no line at that place."""
    return any(not re.search(rf"\b{m.group(1).lower()}\b[^.?!]{{0,20}}\blines?\b", span.lower())
               for m in _LINE_PICK.finditer(text))


def said_out_of_order(donor: Donor) -> bool:
    """The donor writes the values of one parameter asked twice in another order than its calls take them: 'a trip
    from Silverpine to Oakendale' over zip-code lookups of Oakendale, then Silverpine (read 9). The donor's own
    ground truth got away with it (the distance is the same both ways), but re-instantiated slot by slot on a
    variant its words name the pair against the variant's ground truth."""
    low = donor.text.lower()
    groups: dict[str, list[Slot]] = {}
    for x in donor.slots:
        if x.source == "user" and not x.flag:
            groups.setdefault(x.param, []).append(x)
    for slots in groups.values():
        ordered = sorted(slots, key=lambda x: (x.index < 0, abs(x.index)))
        at = [low.find(str(json.loads(x.value)).lower()) for x in ordered]
        if len(at) > 1 and -1 not in at and at != sorted(at):
            return True
    return False


def brings_cues(text: str, span: str, singled: bool = False, reads_result: bool = True) -> bool:
    """``text`` has condition, position, filter or transformation words that the words it replaces (``span``) lack:
    a human turn's own pick ('output the content of the first file you find', read 7) names another file than the
    seed's description did, and the structure, which ties no call to such words, would not see it. Words of
    recency ('that booking', 'the order I just placed') are left to the value sources: the donor reads its value
    from the same call's result as the seed (a pick the seed's structure ties to a call takes only donors with
    the seed's own cue words). Unless a result singles the value out (``singled``), words claiming what was just
    done stay the donor's story: 'the file that we just created' for a file the variant moved (read 6). A line
    picked by its place counts too ('sort the inaugural line of', read 9). Where the turn reads no value from a
    result (``reads_result`` False), words of recency point at nothing of the variant: 'enough cash for that order'
    funding an account after the order was cancelled is the donor's story (my read of session 6)."""
    low = span.lower()
    claims = [] if singled else [m.span() for p in (_CLAIM, _DONE_BY) for m in p.finditer(text)]
    spans = cue_spans(text, reads_result, last_is_recency=singled)
    return (any(text[a:b].lower() not in low for a, b in [*spans, *claims])
            or _line_picks(text, span))


__all__ = ["call_picks", "route_picks", "PICKED", "brings_cues", "cue_spans", "names_other_work", "pick_phrase", "picks_something", "said_out_of_order", "stray_cues", "stray_picks", "turn_picks"]
