"""A condition that opens its sentence keeps its words; the request it governs gets new ones.

'Should the range fall short, go ahead and top off the fuel tank with 30 gallons to ensure we're in the clear.'
holds the condition ('Should the range fall short') and the request it governs. The condition decides whether the
call is made, so its words stay the seed's; before, the whole sentence did, and the siblings of a scenario carried
it alike (scenario 94 had no variant new enough). Here the sentence is cut after the condition's clause
(:func:`leading_condition`), the request is worded like any other, and the two are joined again
(:func:`with_condition`: 'Should the range fall short, add 30 gallons of fuel to the tank.'). The re-measure of the
whole turn checks that the condition count, every value source and the call's place are as they were.
"""

from __future__ import annotations

import re

from rods_agents.analysis.information_structure import lexicon, unquoted

# an opening condition clause up to its comma: 'Should the range fall short, ', 'Additionally, if it falls under 40 PSI, '
_LEAD = re.compile(r"(?:^|(?<=[.?!]))\s*(?:(?:additionally|also|and|but|so|then|otherwise),?\s+)?"
                   r"(?P<cond>(?:if|should|in case|whenever|unless|provided|as long as|in the event)\b[^,.?!;]{3,120}),\s*",
                   re.I)


def leading_condition(span: str) -> tuple[int, int] | None:
    """(start, end) of the clause in ``span`` that opens a sentence with a condition and ends at its comma, when
    the lexicon reads it as a condition and request words follow it in the same sentence; None otherwise. A
    sentence that only asks whether something holds ('verify if my car can make it') has no such clause."""
    lex = lexicon()
    plain = unquoted(span)
    for m in _LEAD.finditer(plain):
        clause = plain[m.start("cond"):m.end()]
        if not any(p.search(clause) for p in lex.conditions):
            continue
        if any(p.search(plain[max(0, m.start() - 40):m.end()]) for p in lex.condition_exclusions):
            continue  # 'if you need', 'if it's possible': politeness, no condition
        rest = re.split(r"(?<=[.?!])\s", plain[m.end():], maxsplit=1)[0]
        if len(rest.split()) >= 3:
            return m.start(), m.end()
    return None


def conditioned_calls(span: str, methods: tuple[str, ...], start: int, stop: int
                      ) -> tuple[int, int, int, int] | None:
    """How a unit asking for calls ``start:stop`` cuts around its opening condition: (clause start, clause end,
    sentence end, first call the conditioned request asks for), offsets within ``span``. The calls the request after
    the clause asks for (by the lexicon's words) must be the last ones of the unit, so that the words before the
    clause ask for the others ('Check the stats for me, would you? Should the range fall short, top off the tank');
    where they ask for none of them, the words before it must ask for no call of the unit at all (else new words for
    the request would ask twice). None when there is no such cut."""
    at = leading_condition(span)
    if at is None:
        return None
    c0, c1 = at
    m = re.search(r"(?<=[.?!])\s", span[c1:])
    end = c1 + m.start() if m else len(span)
    lex = lexicon().methods

    def asks(i: int, text: str) -> bool:
        return any(p.search(unquoted(text)) for p in lex.get(methods[i], ((), None))[0])

    asked = [i for i in range(start, stop) if asks(i, span[c1:end])]
    if not asked or asked != list(range(asked[0], stop)):
        return None
    if asked[0] == start and any(asks(i, span[:c0]) for i in range(start, stop)):
        return None
    return c0, c1, end, asked[0]


def with_condition(clause: str, words: str) -> str:
    """The kept condition ``clause`` ('Should the range fall short, ') before the request's new ``words``, which
    go on in lower case ('add 30 gallons ...'); a request opening with 'I' keeps its capital."""
    words = words.strip()
    if not re.match(r"I\b|I'", words):
        words = words[:1].lower() + words[1:]
    return f"{clause.strip()} {words}"


__all__ = ["conditioned_calls", "leading_condition", "with_condition"]
