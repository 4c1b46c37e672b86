"""A condition keeps its words; the request it governs gets new ones, in the same sentence.

'Should the range fall short, go ahead and top off the fuel tank with 30 gallons to ensure we're in the clear.'
holds the condition ('Should the range fall short') and the request it governs. The condition decides whether the
call is made, so its words stay the seed's; before, the whole sentence did, and the siblings of a scenario carried
it alike (scenarios 67 and 68 had no variant new enough). Here the sentence is cut at the condition's clause
(:func:`condition_cut`): one opening the sentence up to its comma, one handed over to mid-sentence ('..., and if
the cost is under 2000, book it'), or one closing it ('could you set up the GPS to the nearest shop if my tires
aren't up to the mark?'; a purpose after it, ', so I'm not wandering off course', goes with the seed's words). The request is worded by one phrasebook sentence and the
two are joined again (:meth:`ConditionCut.joined`: 'Should the range fall short, add 30 gallons of fuel to the
tank.'). The re-measure of the whole turn checks that the condition count, every value source and the call's place
are as they were. The clause's own words are re-said afterwards where the phrasebook knows its form
(:mod:`rods_agents.variation.clause_words`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rods_agents.analysis.information_structure import asks_for, lexicon, reads_as_condition, unquoted

_CUES = r"(?:if|should|in case|whenever|unless|provided|as long as|in the event)"
# an opening condition clause up to its comma: 'Should the range fall short, ', 'Additionally, if it falls under 40 PSI, '
_LEAD = re.compile(r"(?:^|(?<=[.?!]))\s*(?:(?:additionally|also|and|but|so|then|otherwise),?\s+)?"
                   rf"(?P<cond>{_CUES}\b[^,.?!;]{{3,120}}),\s*", re.I)
# one handed over mid-sentence: '..., and if the cost is under 2000, proceed to book the flight'
_MID = re.compile(rf"\s*[,;]\s*(?:(?:and|but|then)\s+)?(?P<cond>{_CUES}\b[^,.?!;]{{3,120}}),\s*", re.I)
# a closing one: ' if my tires aren't up to the mark, so I'm not wandering off course?'
_TRAIL = re.compile(rf"\s(?=(?P<cond>{_CUES}\b[^.?!;]{{3,160}}[.?!]?$))", re.I)
_SENTENCES = re.compile(r"[^.?!]+(?:[.?!]+|$)")


@dataclass(frozen=True)
class ConditionCut:
    """Offsets within a unit's words: ``head`` (the words before the conditioned sentence, asking for the unit's
    calls before ``first``), ``request`` (the words the condition governs, asking for ``first`` on), ``clause`` (the
    condition's words, kept), ``tail`` (what follows the sentence, kept); ``leading``: the clause opens the sentence."""

    head: tuple[int, int]
    request: tuple[int, int]
    clause: tuple[int, int]
    tail: tuple[int, int]
    first: int
    leading: bool

    def joined(self, text: str, words: str) -> str:
        """The conditioned sentence with new ``words`` for its request: after an opening clause in lower case ('Should
        the range fall short, add 30 gallons ...'; a request opening with 'I' keeps its capital), or before a closing
        one, which then ends as the new words do ('Set the navigation to the shop if my tires aren't up to the
        mark.'; 'Could you ...?')."""
        clause, words = text[self.clause[0]:self.clause[1]].strip(), words.strip()
        if self.leading:
            # a clause handed over mid-sentence opens a sentence of its own: ', and if the cost is under 2000,'
            clause = re.sub(r"^[,;]\s*(?:(?:and|but|then)\s+)?", "", clause)
            clause = clause[:1].upper() + clause[1:]
            if not re.match(r"I\b|I'", words):
                words = words[:1].lower() + words[1:]
            return f"{clause} {words}"
        mark = words[-1:] if words[-1:] in ".?!" else "."  # the new words say whether it is a question
        words = re.sub(r",?\s*please$", "", words.rstrip(".?!"))  # 'Take me there, please if ...' reads badly
        return f"{words} {clause.rstrip('.?!')}{mark}"


def _is_condition(text: str, at: int, end: int) -> bool:
    """The lexicon reads ``text[at:end]`` as a condition, and no politeness ('if you need') or question ('verify
    if') spans its cue at ``at``."""
    lex = lexicon()
    lo = max(0, at - 40)
    return (reads_as_condition(text[at:end])
            and not any(lo + m.start() <= at < lo + m.end() for p in lex.condition_exclusions
                        for m in p.finditer(text[lo:end])))


def leading_condition(span: str) -> tuple[int, int] | None:
    """(start, end) of the clause in ``span`` that opens a sentence with a condition, or is handed over to after a
    comma ('..., and if the cost is under 2000, '), and ends at its comma, when request words follow it in the same
    sentence; None otherwise. A sentence that only asks whether something holds
    ('verify if my car can make it') has no such clause."""
    plain = unquoted(span)
    for m in [*_LEAD.finditer(plain), *_MID.finditer(plain)]:
        if not _is_condition(plain, m.start("cond"), m.end()):
            continue
        rest = re.split(r"(?<=[.?!])\s", plain[m.end():], maxsplit=1)[0]
        if len(rest.split()) >= 3:
            return m.start(), m.end()
    return None


def trailing_condition(span: str) -> tuple[int, int, int] | None:
    """(sentence start, clause start, sentence end) of a sentence of ``span`` that closes with a condition
    ('... to the nearest shop if my tires aren't up to the mark, so I'm not wandering off course?') after at least
    three words of request; None otherwise."""
    plain = unquoted(span)
    for s in _SENTENCES.finditer(plain):
        sentence = s.group(0).rstrip()
        for m in _TRAIL.finditer(sentence):  # each cue in turn: 'if it's possible, withdraw it if it hasn't gone through'
            if len(sentence[:m.start()].split()) < 3:
                continue
            at = s.start() + m.start("cond")
            if _is_condition(plain, at, s.start() + len(sentence)):
                return s.start(), at, s.start() + len(sentence)
    return None


def condition_cut(span: str, methods: tuple[str, ...], start: int, stop: int) -> ConditionCut | None:
    """How a unit asking for calls ``start:stop`` cuts around its condition. The calls the governed request asks
    for (by the lexicon's words) must be the last ones of the unit, so that the words before the sentence ask for the
    others ('Check the stats for me, would you? Should the range fall short, top off the tank'); where they ask for
    none of them, the words before it must ask for no call of the unit at all (else new words for the request would
    ask twice). None when there is no such cut."""
    lead = leading_condition(span)
    if lead is not None:
        c0, c1 = lead
        m = re.search(r"(?<=[.?!])\s", span[c1:])
        end = c1 + m.start() if m else len(span)
        cut = (c0, c0), (c1, end), (c0, c1)
    elif (trail := trailing_condition(span)) is not None:
        s0, t0, end = trail
        # a purpose tacked on after the condition (', so I'm not wandering off course') is the seed's story: it goes
        purpose = re.search(r",\s*(?:so|because|since|as|to ensure|ensuring)\b", span[t0:end])
        cut = (s0, s0), (s0, t0), (t0, t0 + purpose.start() if purpose else end)
    else:
        return None
    (h, _), request, clause = cut
    asked = [i for i in range(start, stop) if asks_for(methods[i], span[request[0]:request[1]])]
    if not asked or asked != list(range(asked[0], stop)):
        return None
    if asked[0] == start and any(asks_for(methods[i], span[:h]) for i in range(start, stop)):
        return None
    return ConditionCut((0, h), request, clause, (end, len(span)), asked[0], lead is not None)


__all__ = ["ConditionCut", "condition_cut", "leading_condition", "trailing_condition"]
