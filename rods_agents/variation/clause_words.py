"""Other words for the clauses a turn keeps because they decide its ground truth.

A condition ('Should the range fall short,'), a limit ('I really can't afford a ticket that is over $5000.') or a
rounding instruction ('round it to nearest hundredth') decides which calls run and with what values, so the rewrite
kept its words: no donor turn says the same condition, and a donor's own would decide something else. Reads 29 and 30
then marked most pairs only "partly new", for the seed's clause inside otherwise new words, and every sibling of a
scenario carried the same clause. Each clause form the train seeds use has hand-written rewordings
(``prompts/phrasebook/clauses.json``) that keep the clause's kind of cue: one condition cue, one limit word before
the same number, a rounding cue. :func:`reworded` writes them in; the caller
(:func:`rods_agents.variation.transplant.transplant_turns`) keeps a rewording only where the re-measured turn has
the seed's structure (its condition count, limits, transformations and value sources), so a rewording that reads
otherwise is never kept.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from rods_agents.analysis.information_structure import _QUOTED
from rods_agents.variation.phrasebook import clause_rewordings

_NUMBER = r"(?P<n>\d[\d,]*(?:\.\d+)?)"
_QUOTE = r"(?P<q>'[^'\n]{1,40}')"
_NAME = r"(?P<w>(?-i:[A-Z][a-z]+))"


@dataclass(frozen=True)
class ClauseForm:
    """One clause as the seeds say it, compiled, and its rewordings (``{n}``/``{q}`` written back as found)."""

    form: str
    pattern: re.Pattern[str]
    says: tuple[str, ...]


_FIELDS = {"n": _NUMBER, "q": _QUOTE, "w": _NAME,
           "c": r"(?P<c>(?-i:[A-Z][a-z]+(?:\s+[A-Z][a-z]+){0,2}))",  # a place of up to three words ('Crescent Hollow')
           "x": r"(?P<x>[A-Za-z0-9][\w.\-]*)"}  # one token: an id ('card_6789'), a lower-case folder name
SLOT = re.compile(r"\{([nqwcx])(\d?)\}")


def _field(kind: str, number: str) -> str:
    """The pattern of slot ``{kind}`` or ``{kind2}``: the same pattern under its own group name."""
    return _FIELDS[kind].replace(f"(?P<{kind}>", f"(?P<{kind}{number}>", 1)


def _compiled(form: str) -> re.Pattern[str]:
    """``form`` as a pattern: case and runs of spaces ignored, either apostrophe accepted, ``{n}`` a number and
    ``{q}`` a quoted value, ``{w}`` a capitalised word, ``{c}`` a place of up to three capitalised words, ``{x}`` one
    token (an id, a lower-case name); a slot used twice is numbered (``{n2}``). It matches at word edges only ('if any
    are unlocked' is not inside 'if any are unlockedx')."""
    parts = SLOT.split(form)
    body = "".join(re.sub(r"\\ ", r"\\s+", re.escape(parts[i])).replace("'", "['’]") if i % 3 == 0
                   else _field(parts[i], parts[i + 1]) if i % 3 == 1 else "" for i in range(len(parts)))
    lead = r"\b" if form[:1].isalnum() else ""
    tail = r"\b" if form[-1:].isalnum() else ""
    return re.compile(lead + body + tail, re.I)


@lru_cache(maxsize=1)
def clause_forms() -> tuple[ClauseForm, ...]:
    """Every clause form of the phrasebook, longest first (a longer form holds a shorter one's words)."""
    return tuple(sorted((ClauseForm(form, _compiled(form), says) for form, says in clause_rewordings().items()),
                        key=lambda f: -len(f.form)))


def _cased(words: str, text: str, at: int) -> str:
    """``words`` opening as the place ``at`` in ``text`` wants: a capital at the start of a sentence, else a small
    letter ('..., if the cost is under 2000,'), except the pronoun 'I'."""
    starts = not text[:at].strip() or text[:at].rstrip()[-1] in ".?!"
    if not words or re.match(r"I\b", words):
        return words
    return (words[:1].upper() if starts else words[:1].lower()) + words[1:]


def _written(say: str, m: re.Match[str], text: str) -> str:
    fields = {k: v for k, v in m.groupdict().items() if v is not None}
    say = SLOT.sub(lambda s: fields.get(s.group(1) + s.group(2), s.group(0)), say)
    return _cased(say, text, m.start())


def _cuts_a_quote(m: re.Match[str], quotes: list[re.Match[str]]) -> bool:
    """The match lies inside a quoted text, or across its edge: the user dictates those words (a tweet), which a
    later call writes down as they are, so they are never reworded (a whole quote inside the match is a ``{q}``)."""
    return any(m.start() < q.end() and q.start() < m.end() and not (m.start() <= q.start() and q.end() <= m.end())
               for q in quotes)


def clauses_in(text: str) -> list[tuple[re.Match[str], ClauseForm]]:
    """The clauses of ``text`` the phrasebook has other words for, in text order, none overlapping, none inside a
    quoted text."""
    found: list[tuple[re.Match[str], ClauseForm]] = []
    quotes = list(_QUOTED.finditer(text))
    for form in clause_forms():
        for m in form.pattern.finditer(text):
            if all(m.end() <= o.start() or m.start() >= o.end() for o, _ in found) and not _cuts_a_quote(m, quotes):
                found.append((m, form))
    return sorted(found, key=lambda x: x[0].start())


_MOVING = frozenset({"fly", "travel", "go", "head", "leave", "depart", "drive", "to"})


def _follows(before: str, say: str) -> bool:
    """``say`` reads on from ``before``: a clause opening with a participle ('flying X to Y', 'leaving X for Y') never
    follows a verb of going or its own verb ('I'd like to fly flying ORD to PHV', read 66)."""
    prev = re.findall(r"[A-Za-z']+", before[-30:])
    first = re.match(r"[A-Za-z]+", say)
    if not prev or first is None or not first.group(0).lower().endswith("ing"):
        return True
    word = prev[-1].lower()
    return word not in _MOVING and not first.group(0).lower().startswith(word)


def reworded(text: str, key: str, slot: int | None) -> Iterator[str]:
    """``text`` with every clause the phrasebook knows said in other words, one way after another: the ``slot``-th
    rewording of each clause first (siblings of one scenario take different ones), then the next. ``key`` (the
    scenario and turn) fixes each clause's order of rewordings, so a run is reproducible."""
    found = clauses_in(text)
    if not found:
        return
    orders = []
    for m, form in found:
        says = [x for x in form.says if _follows(text[:m.start()], x)] or [m.group(0)]
        random.Random(f"{key}|{form.form}").shuffle(says)
        orders.append(says)
    for k in range(max(len(says) for says in orders)):
        out, at = [], 0
        for (m, _form), says in zip(found, orders, strict=True):
            out += [text[at:m.start()], _written(says[((slot or 0) + k) % len(says)], m, text)]
            at = m.end()
        yield "".join(out) + text[at:]


__all__ = ["ClauseForm", "clause_forms", "clauses_in", "reworded"]
