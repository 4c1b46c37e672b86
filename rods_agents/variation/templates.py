"""A text the user dictates as a template: its words kept, the request around it re-worded.

'Could you provide an estimate of the distance and forward this info to my cousin Bob via text, in the format
'The distance from Rivermist to Stonebrook is xxx km.', where xxx is replaced by the distance value' asks for two
calls and says how the message is built. The template decides the ground truth, so its clause keeps the seed's
words; before, the whole sentence did, and every sibling of the scenario carried it (scenarios 62 and 75 had no
variant new enough). Here the clause is cut off (:func:`detached_template`), the request before it is worded like
any other (the templated value is one a phrasebook sentence marked ``composes: template`` leaves to the clause),
and the clause follows as a sentence of its own (:func:`template_sentence`). The re-measure of the whole turn then
checks that every value source and the transformation count are as they were.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import replace

from rods_agents.analysis.information_structure import _QUOTED
from rods_agents.variation.saying import as_sentence
from rods_agents.variation.turn_bank import Slot

TEMPLATE = "template"  # the recipe name (prompts/bfcl/value_recipes.json) of a value filled into a dictated template

# the clause that says a text follows a template: ', in the format ...', ' using the format ...'
_FORMAT = re.compile(r"(?:,\s*|\s+)(?:and\s+)?(?:in|using|with|following)\s+(?:the|this|a)\s+format\b", re.I)
_PIECES = re.compile(r"(\{[^{}]*\}|<[^<>]*>|\[[^\[\]]*\]|\w+)")
_PLACEHOLDER = re.compile(r"\{[^{}]*\}|<[^<>]*>|\[[^\[\]]*\]|[xX]{2,}|[A-Za-z]+_\w+|number|value|amount", re.I)
_FRAMES = ("Write it {}", "Please word it {}", "Compose it {}")
_NAMED_FRAMES = ("Write the {} {}", "Please word the {} {}", "Compose the {} {}")  # a clause not right after its call
_EXPLAINED = re.compile(r"(?:,?\s*where\b[^.?!]*)?")  # ', where xxx is replaced by the distance value, ...'
NOUNS = {"send_message": "message", "post_tweet": "tweet"}  # what a template sentence away from its call names


def fills_template(template: str, value: str) -> bool:
    """``value`` is ``template`` with its placeholders filled in: 'The distance from A to B is xxx km.' -> 'The
    distance from A to B is 750.0 km.'; 'Front Left Tire: XXX PSI' -> 'Front Left Tire: 32 PSI'; 'Kelly Total
    Score: total_score' -> 'Kelly Total Score: 96'. A placeholder is a word that stands for a value ('xxx', a
    name with an underscore, 'number', '{distance}'); every other word and mark must be in the value as it is."""
    pattern, holes = [], 0
    for i, part in enumerate(_PIECES.split(" ".join(template.split()))):
        if i % 2:
            if _PLACEHOLDER.fullmatch(part):
                pattern.append(r"(.+?)")
                holes += 1
            else:
                pattern.append(re.escape(part))
        elif part:
            pattern.append(r"\s*".join(re.escape(x) for x in part.split(" ")))
    return holes > 0 and re.fullmatch("".join(pattern), " ".join(value.split())) is not None


def detached_template(span: str, target: tuple[Slot, ...], start: int, stop: int
                      ) -> tuple[int, int, tuple[int, str]] | None:
    """Where the clause of ``span`` (the words asking for calls ``start:stop``) giving the template of one of their
    text values starts and ends (the quoted template, and a 'where xxx is ...' saying how to fill it), and that slot's
    (index, param); None when it holds no such clause. The clause must come after some request words and quote a
    template the value fills (:func:`fills_template`); words after it ask for more ('..., in the format of 'Kelly
    Total Score: total_score', I'd appreciate a list of all the messages I've sent') and are re-worded with the rest."""
    for m in _FORMAT.finditer(span):
        if not span[:m.start()].strip():
            continue
        for q in _QUOTED.finditer(span[m.start():]):
            template = q.group(0)[1:-1]
            end = m.start() + q.end()
            end += len(_EXPLAINED.match(span, end).group(0))
            for x in target:
                if not start <= x.index < stop:
                    continue
                value = json.loads(x.value)
                if isinstance(value, str) and value not in span and fills_template(template, value):
                    return m.start(), end, (x.index, x.param)
    return None


def left_to_template(target: tuple[Slot, ...], key: tuple[int, str]) -> tuple[Slot, ...]:
    """``target`` with the templated slot marked as built by the template: only a sentence that leaves that value
    to the clause fits it (``composes: template``), and no sentence writes the filled-in text."""
    return tuple(replace(x, source="composed", recipe=TEMPLATE) if (x.index, x.param) == key else x for x in target)


def template_sentence(clause: str, key: str, noun: str = "") -> str:
    """The template clause as a sentence of its own ('Write it in the format '...', where xxx is ...'), one frame
    per sample; a question mark the cut sentence ended with becomes a full stop, and a ')' that closes nothing goes.
    ``noun``: what the text is ('message'), named where the sentence does not follow the words asking for it."""
    clause = re.sub(r"^[\s,]*(?:and\s+)?", "", clause).rstrip()
    clause = re.sub(r"\?$", ".", clause)
    if clause.count(")") > clause.count("("):  # the seed's stray ')' closing nothing ('in one decimal place)?')
        clause = re.sub(r"\)(?=[.!]?$)", "", clause)
    pick = random.Random(key).randrange(len(_FRAMES))
    return as_sentence(_NAMED_FRAMES[pick].format(noun, clause) if noun else _FRAMES[pick].format(clause))


__all__ = ["NOUNS", "TEMPLATE", "detached_template", "fills_template", "left_to_template", "template_sentence"]
