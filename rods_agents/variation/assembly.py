"""One wording of a seed turn from donors: whole, call by call, in segments, or unit by unit around kept cues.

:func:`assemble_turn` tries a phrasebook sentence or one-call human piece per call, then one donor for the whole
turn, then consecutive segments (:func:`_segments`); a turn with a condition, or one no donor words whole, is re-worded
unit by unit (:func:`mixed_turn`), keeping the sentences that hold its condition, reference or transformation cue.
:func:`by_recipe` says when a transformation is worded alike by a named recipe or a date in words.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from envs.task import Task
from rods_agents.analysis import knowledge
from rods_agents.analysis.information_structure import _QUOTED, asks_for, lexicon, reads_as_condition, unquoted
from rods_agents.variation.condition_clauses import ConditionCut, condition_cut
from rods_agents.variation.cues import call_picks, cue_spans, picks_something, stray_cues, stray_picks, turn_picks
from rods_agents.variation.donor_search import (
    at_goal_level,
    find_wording,
    hidden_said,
    ordered_donors,
    phrasebook_donors,
    says_withheld_by_pronoun,
)
from rods_agents.variation.phrasebook import context_sentences
from rods_agents.variation.saying import (
    as_sentence,
    named_as,
    says_all,
    says_no_more,
    scalars_of,
    times_named,
    with_specifics,
)
from rods_agents.variation.templates import NOUNS, detached_template, left_to_template, template_sentence
from rods_agents.variation.turn_bank import (
    SENTENCE_END,
    Donor,
    Slot,
    call_positions,
    clean_piece,
    cue_key,
    donors_for,
    piece_bounds,
    piece_of,
    portable_signature,
    segment_signature,
)

MAX_SEGMENTS = 4  # donor turns joined into one turn at most


def _rebased(target: tuple[Slot, ...], start: int, stop: int, whole: bool = False) -> tuple[Slot, ...]:
    """The slots of calls ``start:stop``, re-indexed from 0; the hidden slots of implicit calls
    (:func:`rods_agents.variation.turn_bank.explicit_calls`) only for the ``whole`` turn."""
    return tuple(replace(x, index=x.index - start) if x.index >= 0 else x for x in target
                 if (start <= x.index < stop) or (whole and x.index < 0))


_HAND_OVER = ("", "", "", "After that, ", "Then ", "Next, ", "Also, ", "Once that's done, ")


def _joined(parts: list[tuple[str, Donor]], key: str) -> str:
    """A turn's segments as one text; a phrasebook sentence after the first is handed over with a connective
    now and then ('After that, ...'), one choice per sample and segment."""
    out = []
    leads = list(_HAND_OVER)
    random.Random(key).shuffle(leads)  # one order per turn: no 'Next, ... Next, ...'
    for i, (text, d) in enumerate(parts):
        text = as_sentence(text)
        if i and d.scenario == "phrasebook":
            if any(_PLEASE.search(x) for x in out):
                text = _without_please(text)  # 'I'd like every door locked, please. Then engage the parking brake,
                # please.' (read 27): one 'please' a turn
            lead = leads[i % len(leads)]
            if lead and not text.startswith(("I ", "I'")):
                text = lead + text[:1].lower() + text[1:]
        out.append(text)
    return " ".join(out)


_PLEASE = re.compile(r"\bplease\b", re.I)


def _without_please(text: str) -> str:
    """A phrasebook sentence without its 'please' ('Scrap the order, please.' -> 'Scrap the order.', 'Please book it.'
    -> 'Book it.'); a 'please' inside a quoted value stays."""
    if any(_PLEASE.search(m.group(0)) for m in _QUOTED.finditer(text)):
        return text
    out = re.sub(r",?\s*\bplease\b(?=\s*[.?!]\s*$)", "", text, flags=re.I)
    out = re.sub(r"^please,?\s+(\w)", lambda m: m.group(1).upper(), out, flags=re.I)
    out = re.sub(r",\s*please\s*,", "", out, flags=re.I)
    return out


def assemble_turn(seed: Task, seed_info: Any, turn: int, g: int, methods: tuple[str, ...], target: tuple[Slot, ...], world: set[str],
              allowed: set[float], values: str, used: set[str], rng: Any, slot: int | None = None, carried: str = "",
              signature: str | None = None, earlier: str = "", aliases: dict[str, str] | None = None
              ) -> tuple[str, list[Donor]] | None:
    """One wording of a turn: call by call first (a phrasebook sentence or a one-call piece of a human turn for
    each call: no other task's story comes along), else the whole turn from one donor where one fits, else the
    calls in consecutive segments (at most ``MAX_SEGMENTS``), each from a donor asking for just those calls the
    same way (longest segment first). A turn with a reference or a transformation takes only donors with
    the same cue words; a turn with a condition is never re-worded whole (None; :func:`mixed_turn` keeps its
    cue sentence and re-words the rest)."""
    sig = signature or portable_signature(seed_info, g)
    parsed = json.loads(sig)
    if parsed.get("conditions"):
        return None
    whole_only = signature is not None  # a withholding turn: one donor withholding the same value
    delicate = bool(parsed.get("references") or (parsed.get("transformations") and not by_recipe(seed_info, g, methods,
                                                                                                 target, carried)))
    untied: dict[str, str] | None = None  # a pick the structure tied to no call (stray_picks)
    if not delicate and not whole_only and (stray := _outside_named(stray_cues(carried, methods, len(methods) == 1 and any(
            x.producer for x in target)), carried, target)) and picks_something(target):
        untied = stray_picks(carried, stray, methods, target)
        if not untied:
            return None  # cue words the structure did not tie to a call: mixed_turn keeps their sentences
    elif not delicate and not whole_only and len(methods) == 1 and picks_something(target) and not any(
            x.producer for x in target) and (cues := cue_spans(carried)):
        # cue words that read as the call's own ('output the content of the first file you find'): where they are
        # one noun phrase naming a value no one result singles out, a sentence around it keeps the pick (a value
        # one result holds is pointed at by the sentences for that result: 'cancel the order we placed')
        untied = stray_picks(carried, cues, methods, target) or None
    if (delicate or untied) and not whole_only and (picks := untied or turn_picks(seed_info, g, carried, methods)):
        whole = _rebased(target, 0, 1, True)
        phrases = phrasebook_donors(seed, turn, 0, methods, whole, sig, used, set(), carried, earlier, picks, aliases)
        found = find_wording([], whole, world, allowed, values, carried, slot, phrases, True, key=f"{seed.scenario}|{turn}|0")
        if found is not None:
            return as_sentence(found[0]), [found[1]]
    if untied:
        return None  # a sentence without the pick would leave the value to no words
    def call_by_call() -> tuple[str, list[Donor]] | None:  # one sentence per call: no other task's story
        return _segments(seed, seed_info, turn, g, methods, target, world, allowed, values, used, rng, slot, carried,
                         sig, earlier, single_only=True, aliases=aliases)

    if len(methods) > 1 and not (delicate or whole_only) and (built := call_by_call()) is not None:
        return built  # sentence by sentence first
    built = _segments(seed, seed_info, turn, g, methods, target, world, allowed, values, used, rng, slot, carried, sig,
                      earlier, whole_only=whole_only, delicate=delicate, aliases=aliases)
    if built is None and whole_only and len(methods) > 1 and not delicate:
        # a withholding turn of several calls no other turn words whole: a phrasebook sentence per call, the
        # withheld call's as :func:`withholds_plainly` allows; the re-measure checks the same value is still withheld
        built = call_by_call()
    return built


def _outside_named(spans: list[tuple[int, int]], carried: str, target: tuple[Slot, ...]) -> list[tuple[int, int]]:
    """``spans`` less those inside the words the turn names a value by (:func:`named_as`: 'P followed by 12345678'
    for a passport number): those words say which value, and a sentence for the call repeats them."""
    if not spans:
        return spans
    named = [(m.start(), m.end()) for x in target if isinstance(v := json.loads(x.value), str)
             and (w := named_as(v, carried)) for m in re.finditer(re.escape(w), carried)]
    return [(a, b) for a, b in spans if not any(lo <= a and b <= hi for lo, hi in named)]


def by_recipe(info: Any, g: int, methods: tuple[str, ...], target: tuple[Slot, ...], span: str = "") -> bool:
    """Every transformation of the turn builds a value a phrasebook sentence words the same way: by a named recipe
    (:func:`rods_agents.variation.turn_bank.recipe_of`: 'fuel up the car entirely' fills the tank to its capacity,
    and a sentence marked ``composes`` for it, 'Top the tank off for me.', asks for the same reading and the same
    sum), or a date ``span`` writes in words, which the sentence writes in words too (:func:`named_as`: 'on
    August 15, 2026' -> 'on August 15th, 2026'), one such value per transformation of the same call and parameter.
    So the turn may be re-worded like any other; the re-measure checks the turn still counts as many transformations
    of each kind, and the sentence's fit (``composes``, the date's words) checks which value they build."""
    def worded_alike(x: Slot) -> bool:
        value = json.loads(x.value)
        return bool(x.recipe) or (isinstance(value, str) and named_as(value, span) is not None)

    built = Counter((methods[x.index], x.param) for x in target if 0 <= x.index < len(methods) and worded_alike(x))
    wanted = Counter((t.method, t.param) for t in info.turns[g].transformations)
    return bool(wanted) and all(built[k] >= n for k, n in wanted.items())


def _segments(seed: Task, seed_info: Any, turn: int, g: int, methods: tuple[str, ...], target: tuple[Slot, ...],
              world: set[str], allowed: set[float], values: str, used: set[str], rng: Any, slot: int | None, carried: str,
              sig: str, earlier: str, single_only: bool = False, whole_only: bool = False, delicate: bool = False,
              aliases: dict[str, str] | None = None) -> tuple[str, list[Donor]] | None:
    """The calls in consecutive segments, longest first (``single_only``: one call per segment, so each sentence
    comes from the phrasebook or a one-call piece of a human turn), with a context sentence for hidden values."""
    parts: list[tuple[str, Donor]] = []
    start, n = 0, len(methods)
    joined = _compound_cuts(carried, seed_info, g, methods, target)
    while start < n:
        for stop in range(n, start, -1):
            if (delicate or whole_only) and (start, stop) != (0, n):
                continue
            if stop in joined:
                continue  # one request for two calls on one thing ('copy it under the name X'): never cut
            if single_only and stop - start > 1:
                continue
            seg_sig = sig if (start, stop) == (0, n) else segment_signature()
            picked = {d.text for _, d in parts}  # one turn never repeats a donor's words ('..., to Rivermist. ..., to Stonebrook.')
            pool = [] if single_only else [  # the sentence-by-sentence pass: the phrasebook only, no other story
                d for d in donors_for(methods[start:stop], seg_sig, knowledge.donor_key(seed),
                                      cue_key(seed_info, g) if delicate and not whole_only else None)
                if d.task_id not in used and d.text not in picked
                and not (whole_only and says_withheld_by_pronoun(d.text))]
            pool = ordered_donors(at_goal_level(seed, turn, methods[start:stop], carried, pool), seed, turn, start, stop,
                                  rng, slot)
            seg_target = _rebased(target, start, stop, (start, stop) == (0, n))
            # a miss_param turn withholding a value of its one call: a sentence for that call without the value
            # (the re-measure checks the same parameter is still the one withheld)
            before = " ".join(text for text, _ in parts)  # what this turn's new words said already
            found = None
            for said in dict.fromkeys((before, "")):  # pointing at it where a sentence fits, else saying it again
                # a one-call turn with a reference ('the order I just placed') may take a phrasebook sentence
                # pointing back the same way (``from``): the re-measure keeps it only where its reference is the seed's
                phrases = [] if (delicate or whole_only) and n > 1 else phrasebook_donors(
                    seed, turn, start, methods[start:stop], seg_target, seg_sig, used, picked, carried, earlier,
                    aliases=aliases, before=said)
                found = find_wording(pool, seg_target, world, allowed, values, carried, slot, phrases,
                                     (start, stop) != (0, n) or n == 1,
                                     distinct=(start, stop) == (0, n) and n > 1 and not (delicate or whole_only),
                                     whole_span=(start, stop) == (0, n), after=before,
                                     key=f"{seed.scenario}|{turn}|{start}|{stop}", earlier=earlier, before=said)
                if found is not None:
                    break
            if found is not None:
                parts.append(found)
                start = stop
                break
        else:
            return None
        if len(parts) > MAX_SEGMENTS:
            return None
    text = _joined(parts, f"{seed.scenario}|{turn}|{slot}")
    if len(parts) > 1 and any(d.scenario == "phrasebook" for _, d in parts):
        text = with_specifics(text, carried, methods, values, world, earlier)  # a number or quoted value no segment says
        if text is None:
            return None
    hidden = hidden_said(target, carried)
    if hidden and len(parts) > 1 and (not says_all(hidden, text) or located_only_as_argument(hidden, target, text)):
        # the values of implicit calls no segment carries
        ctx = [c for c in context_sentences(hidden) if says_no_more(c, hidden, carried)]
        if not ctx:
            return None
        text = f"{ctx[random.Random(f'{seed.scenario}|{turn}|{slot}|context').randrange(len(ctx))]} {text}"
    return text, [d for _, d in parts]


def located_only_as_argument(hidden: tuple[Slot, ...], target: tuple[Slot, ...], text: str) -> bool:
    """A folder the turn's implicit ``cd`` enters is named in ``text`` only as often as the explicit calls take it as an
    argument: 'Please get rid of the file contracts. Then erase the directory Minutes.' names Minutes for the rmdir
    and no longer says the file is inside it, which the seed's 'locating contracts within this Minutes' said (the
    independent read of 2026-12-03, miss_func_38). A value an implicit lookup shares with the call (the symbol of an
    order's price lookup) is said by the call's own mention; a folder's place is not."""
    for x in hidden:
        if not x.param.startswith("cd."):
            continue
        folder = json.loads(x.value)
        if not isinstance(folder, str):
            continue
        taken = sum(1 for y in target if y.index >= 0 and folder in scalars_of(json.loads(y.value)))
        if taken and times_named(folder, text) <= taken:
            return True
    return False


def _compound_cuts(text: str, info: Any, g: int, methods: tuple[str, ...], target: tuple[Slot, ...]) -> set[int]:
    """Call indices ``i`` where a turn's wording must not be cut between calls ``i - 1`` and ``i``: both take a
    value the seed's turn says once. "Secure 'TeamNotes.txt': copy it to the archive under the name
    IdeasArchive.txt" is a copy, a cd and a rename of that copy; worded call by call ('Copy TeamNotes.txt over to
    Archived. Move TeamNotes.txt over to IdeasArchive.txt.') it reads as renaming the original, and it spells
    out the steps the seed left to the assistant (read 5)."""
    stated: dict[int, set[str]] = {}
    for x in target:
        if x.index >= 0 and x.source == "user":
            stated.setdefault(x.index, set()).update(str(v) for v in scalars_of(json.loads(x.value)) if isinstance(v, str))
    low = text.lower()
    # a call that makes the thing it names (mkdir, touch) may be asked for on its own: 'Create a folder called
    # research. Move hiring_plan.pdf into research.' says what 'move it to a new directory research' says
    return {i for i in range(1, len(methods)) if methods[i - 1] not in _MAKES
            and any(low.count(v.lower()) == 1 for v in stated.get(i - 1, set()) & stated.get(i, set()))}


_MAKES = frozenset({"mkdir", "touch"})


def _units(text: str, info: Any, g: int, methods: tuple[str, ...], target: tuple[Slot, ...]
           ) -> list[tuple[int, int, int, int]] | None:
    """The carried turn cut into units of (first call, stop call, start char, end char), in the text's order: the
    sentences that ask for a call (and those after it up to the next call's, and for the first unit those before
    it); calls asked for in one sentence are one unit. A turn may ask for its calls in another order than they run
    ('Start the engine with the doors locked and the brake on. ... so round it and fill that in.': the fill runs
    first), as long as each sentence asks for a run of consecutive calls and the turn has no condition (base_98's
    'make sure the doors are locked tight. Check the door locks and secure them if any are unlocked' asks for the
    locks under the condition of its last sentence). None when a call cannot be placed."""
    explicit = [c.method for c in info.turns[g].calls if c.explicit]
    if tuple(explicit) != methods:
        return None
    n = len(methods)
    bounds = piece_bounds(text)
    positions = call_positions(text, info, g, target, n)
    if positions is None and not info.turns[g].conditions:  # a condition's call is not told by where its words sit
        positions = call_positions(text, info, g, target, n, ordered=False)
    if positions is None:
        return _paragraph_units(text, info, g, methods)
    sent = [piece_of(bounds, p) for p in positions]
    runs: dict[int, list[int]] = {}
    for i, s_i in enumerate(sent):
        runs.setdefault(s_i, []).append(i)
    if any(calls != list(range(calls[0], calls[-1] + 1)) for calls in runs.values()):
        return None  # one sentence asks for calls that others interleave: no unit is one run of calls
    order = sorted(runs)
    units = []
    for k, s_i in enumerate(order):
        lo = 0 if k == 0 else bounds[s_i]
        hi = bounds[order[k + 1]] if k + 1 < len(order) else len(text)
        units.append((runs[s_i][0], runs[s_i][-1] + 1, lo, hi))
    return units


def _paragraph_units(text: str, info: Any, g: int, methods: tuple[str, ...]) -> list[tuple[int, int, int, int]] | None:
    """A turn written as paragraphs, one errand each (base_198: price and book a flight; cancel it; tweet about it),
    cut into one unit per paragraph when each paragraph's words ask for the next run of calls (the lexicon's cues,
    in any order inside the paragraph: 'share a tweet ... authenticate using ...'); None otherwise."""
    spans = [(m.start(), m.end()) for m in re.finditer(r"\S(?:.|\n(?!\s*\n))*", text)]
    if len(spans) < 2:
        return None
    units, k = [], 0
    for lo, hi in spans:
        start = k
        while k < len(methods) and asks_for(methods[k], text[lo:hi]):
            k += 1
        if k == start:
            return None
        units.append((start, k, lo, hi))
    return units if k == len(methods) else None


def _locked(text: str, info: Any, g: int, units: list[tuple[int, int, int, int]]) -> set[int] | None:
    """The units whose words hold a condition, a reference or a transformation cue: they keep the seed's
    wording (the cue decides the ground truth). None when a cue cannot be found in the text."""
    s = info.turns[g]
    lower, blanked = text.lower(), unquoted(text).lower()
    out: set[int] = set()
    explicit = [c.method for c in s.calls if c.explicit]
    for x in [*s.references, *s.transformations]:
        if x.cue.strip():
            continue
        # no cue found: the words that say how the value is built sit with its call; keep that call's unit
        at = [i for i, m in enumerate(explicit) if m == x.method]
        if len(at) != 1:
            return None
        out.update(k for k, (a, b, _, _) in enumerate(units) if a <= at[0] < b)
    for cue in [c.cue for c in s.conditions] + [r.cue for r in s.references if r.cue.strip()] + [
            x.cue for x in s.transformations if x.cue.strip()]:
        at = lower.find(cue.lower().strip()) if cue.strip() else -1
        if at < 0 and cue.strip():  # a condition's cue is read with quoted values blanked ('access token      .')
            at = blanked.find(cue.lower().strip())
        if at < 0:
            return None
        end = at + len(cue.strip())
        out.update(k for k, (_, _, lo, hi) in enumerate(units) if lo < end and at < hi)
    for at, end in cue_spans(text):  # cue words the structure did not tie to a call stay too
        out.update(k for k, (_, _, lo, hi) in enumerate(units) if lo < end and at < hi)
    return out


def drops_request(span: str, words: str, methods: tuple[str, ...], a: int, b: int,
                  asked_elsewhere: frozenset[str] = frozenset()) -> bool:
    """True when ``span``, replaced by ``words`` that ask for ``methods[a:b]``, holds lexicon words of another call
    of the turn that ``words`` lacks: the replacement would drop a request ('fill the tank with 40 more liters'
    asks for the fill as well as the liters-to-gallons conversion whose value it states; re-worded as the
    conversion alone, nobody asks for the fill, though 'Round the fill amount' later keeps the fill explicit).
    ``asked_elsewhere``: calls a kept sentence right after ``span`` asks for ('... without a pit stop for gas. Should
    the range fall short, top off the tank'), whose words ``span`` may drop."""
    lex = lexicon().methods
    others = {methods[i] for i in range(len(methods)) if not a <= i < b} - set(methods[a:b]) - asked_elsewhere
    return any(p.search(span) and not p.search(words) for name in others for p in lex.get(name, ((), None))[0])


Piece = tuple[int, int] | str
"""A carried span of the seed's turn (start, end), or new words."""
Wording = Callable[..., "tuple[str, list[Donor]] | None"]
"""``mixed_turn``'s words for a run of calls: (first call, stop call, span, slots, ...) -> (words, donors) or None."""


def _templated_words(carried: str, unit: tuple[int, int, int, int], templated: tuple[int, int, tuple[int, str]],
                     methods: tuple[str, ...], target: tuple[Slot, ...], word: Wording, key: str
                     ) -> tuple[list[Piece], list[Donor]] | None:
    """A unit holding a template the user dictates: new words for the request around the template's clause, which
    leave the text to it (:func:`rods_agents.variation.templates.left_to_template`), then the clause as a sentence of
    its own, naming the text where more words came after it; None when no sentence words the request."""
    a, b, lo, hi = unit
    start, end, slot_key = templated
    after = carried[lo + end:hi]
    if a <= slot_key[0] < b - 1 and len(after.split()) >= 3:
        # later calls asked for after the template ('..., in the format of '...', I'd appreciate a list of all the
        # communications I've sent'): the template follows its own call's words, not theirs (read 32, miss_func_17
        # put the format after 'Can you pull up my sent messages?')
        k = slot_key[0] + 1
        first = word(a, k, carried[lo:lo + start], left_to_template(_rebased(target, a, k), (slot_key[0] - a, slot_key[1])))
        rest = word(k, b, after, _rebased(target, k, b)) if first is not None else None
        if first is not None and rest is not None:
            return ([as_sentence(first[0]), template_sentence(carried[lo + start:lo + end], key), as_sentence(rest[0])],
                    first[1] + rest[1])
    span = carried[lo:lo + start] + after
    found = word(a, b, span, left_to_template(_rebased(target, a, b, whole=(a, b) == (0, len(methods))), slot_key))
    if found is None:
        return None
    noun = NOUNS.get(methods[slot_key[0]], "") if len(after.split()) >= 3 else ""
    return [as_sentence(found[0]), template_sentence(carried[lo + start:lo + end], key, noun)], found[1]


def _conditioned_words(carried: str, unit: tuple[int, int, int, int], cut: ConditionCut, methods: tuple[str, ...],
                       target: tuple[Slot, ...], word: Wording, uncued: Callable[[int, int], bool]
                       ) -> tuple[list[Piece], list[Donor]] | None:
    """A unit holding a condition, cut by :func:`rods_agents.variation.condition_clauses.condition_cut`: the
    condition's clause keeps its words and governs one new phrasebook sentence for its request; the words before the
    conditioned sentence get new ones too where they hold no cue. None when the request holds a reference or
    transformation cue, or no single sentence words it."""
    a, b, lo, hi = unit
    if not uncued(lo + cut.request[0], lo + cut.request[1]):
        return None
    j, h = cut.first, lo + cut.head[1]
    rest = word(j, b, carried[lo + cut.request[0]:lo + cut.request[1]], _rebased(target, j, b), phrasebook_only=True,
                before=carried[:lo + cut.request[0]])
    if rest is None:
        return None
    head = word(a, j, carried[lo:h], _rebased(target, a, j), frozenset(methods[j:b])) if j > a and uncued(lo, h) else None
    joined = cut.joined(carried[lo:hi], as_sentence(rest[0]))
    kept = carried[lo:h].strip()
    if head is None and cut.leading and kept and kept[-1] not in ".?!:;":
        # the kept words lead into the clause mid-sentence ('Based on the insights gathered, if ...'): one sentence
        # still, not 'Based on the insights gathered. If ...' (read 27)
        lowered = joined if re.match(r"I\b|I'", joined) else joined[:1].lower() + joined[1:]
        # the conjunction that handed the clause over stays ('..., and if the cost is under 2000, book it', read 29)
        conj = re.match(r"\s*[,;]\s*((?:and|but|then)\s+)", carried[lo + cut.clause[0]:lo + cut.clause[1]], re.I)
        return [f"{kept}, {conj.group(1).lower() if conj else ''}{lowered}", (lo + cut.tail[0], hi)], list(rest[1])
    pieces: list[Piece] = [as_sentence(head[0]) if head else (lo, h), joined, (lo + cut.tail[0], hi)]
    return pieces, [*(head[1] if head else []), *rest[1]]


def unit_picks(span: str, info: Any, methods: tuple[str, ...], unit: tuple[int, int, int, int]) -> dict[str, str]:
    """Parameter -> pick phrase for a unit asking for one call whose only cues are that call's references by position
    (:func:`rods_agents.variation.cues.turn_picks` for one unit of a longer turn: base_185 picks a route 'from the first
    to the second airport in your inventory' and then caps the budget); {} otherwise."""
    a, b, _, _ = unit
    if b - a != 1:
        return {}
    refs = [r for r in info.references if r.method == methods[a]]
    own = {(r.cue, r.param) for r in refs}
    # another call's reference counts as this one's where it is the same pick of the same value: base_49 sorts 'the
    # third file displayed in that directory' and then tails it, both calls reading that one pick
    if not refs or any((r.cue, r.param) not in own for r in info.references) or info.transformations or info.conditions:
        return {}
    return call_picks(info, span, methods[a])


def _picked_words(carried: str, unit: tuple[int, int, int, int], picks: dict[str, str], methods: tuple[str, ...],
                  target: tuple[Slot, ...], word: Wording) -> tuple[list[Piece], list[Donor]] | None:
    """A unit that picks its call's values by position: one phrasebook sentence marked ``pick`` written around the
    seed's pick words, in place of the unit's words."""
    a, b, lo, hi = unit
    found = word(a, b, carried[lo:hi], _rebased(target, a, b, whole=(a, b) == (0, len(methods))), picks=picks)
    return None if found is None else ([as_sentence(found[0])], found[1])


def transformation_sentence(carried: str, unit: tuple[int, int, int, int], info: Any) -> int | None:
    """Where the last sentence of a unit starts when that sentence alone holds the unit's transformation cues and
    the unit holds no condition or reference: 'Afterwards, fill the tank with 40 additional liters of gasoline.
    Round the fill amount to two decimal places.' keeps its second sentence, which says how the value is built, and
    the first can get new words. None for any other unit (a cue inside the request sentence, a one-sentence unit)."""
    _, _, lo, hi = unit
    text = carried[lo:hi]
    ends = [m.end() for m in SENTENCE_END.finditer(text.rstrip())]
    if not ends or ends[-1] >= len(text.rstrip()):
        ends = ends[:-1]
    if not ends:
        return None
    last = ends[-1]
    lower = text.lower()
    cues = [x.cue.strip().lower() for x in info.transformations if x.cue.strip()]
    others = [c.cue for c in info.conditions] + [r.cue for r in info.references if r.cue.strip()]
    if not cues or any(o.strip() and o.strip().lower() in lower for o in others) or cue_spans(text[:last]):
        return None
    return last if all(lower.find(c) >= last for c in cues) else None  # every cue found, all in the last sentence


def _transformed_words(carried: str, unit: tuple[int, int, int, int], start: int, methods: tuple[str, ...],
                       target: tuple[Slot, ...], word: Wording) -> tuple[list[Piece], list[Donor]] | None:
    """A unit whose last sentence says how a value is built (:func:`transformation_sentence`): new words for the
    request before it, that sentence kept as it is; None when no wording asks for the unit's calls."""
    a, b, lo, hi = unit
    kept = carried[lo + start:hi]
    elsewhere = frozenset(m for m in methods[a:b] if asks_for(m, kept))
    # the kept sentence says how a composed value is built: the new words need not ('add 40 liters' + 'Round the
    # fill amount to two decimal places.'), so such a value is no pick the words must make
    sub = tuple(replace(x, sole=True) if x.source == "composed" else x for x in _rebased(target, a, b))
    found = word(a, b, carried[lo:lo + start], sub, elsewhere)
    if found is None:
        return None
    return [as_sentence(found[0]), (lo + start, hi)], found[1]


def mixed_turn(seed: Task, base_info: Any, turn: int, g: int, methods: tuple[str, ...], target: tuple[Slot, ...],
           world: set[str], allowed: set[float], values: str, used: set[str], rng: Any, slot: int | None,
           carried: str, earlier: str = "", aliases: dict[str, str] | None = None) -> tuple[str, list[Donor]] | None:
    """A turn no donor words whole, re-worded unit by unit (:func:`_units`): each run of units without a cue
    from a donor asking for just those calls the same way (longest run first); a unit with a cue cut where it can
    be, its dictated template's clause (:func:`_templated_words`), its condition's (:func:`_conditioned_words`) or
    its closing sentence saying how a value is built (:func:`_transformed_words`) keeping the seed's words and the
    request around it getting new ones; the other units with a condition,
    reference or transformation cue, and those no donor fits, in the carried wording. So a conditioned turn keeps
    'Should any tire fall below 40 PSI,' and gets new words for the rest, and a turn with one call no donor asks
    for keeps only that call's sentence."""
    units = _units(carried, base_info, g, methods, target)
    if units is None:
        return None
    locked = _locked(carried, base_info, g, units)
    if locked is None:
        return None
    templated = {k: cut for k in locked if (cut := detached_template(carried[units[k][2]:units[k][3]], target,
                                                                    units[k][0], units[k][1])) is not None}
    conditioned = {k: cut for k in locked if (cut := condition_cut(carried[units[k][2]:units[k][3]], methods,
                                                                 units[k][0], units[k][1])) is not None}
    transformed = {k: at for k in locked - templated.keys() - conditioned.keys()
                   if (at := transformation_sentence(carried, units[k], base_info.turns[g])) is not None}
    picked = {k: picks for k in locked - templated.keys() - conditioned.keys() - transformed.keys()
              if (picks := unit_picks(carried[units[k][2]:units[k][3]], base_info.turns[g], methods, units[k]))}
    cuttable = templated.keys() | conditioned.keys() | transformed.keys() | picked.keys()
    if len(units) - len(locked) + len(cuttable) < 1 or (len(units) < 2 and not cuttable):
        return None  # nothing to re-word: every unit keeps its cue sentence whole
    pieces: list[Piece] = []
    donors: list[Donor] = []

    def word(a: int, b: int, span: str, sub: tuple[Slot, ...], elsewhere: frozenset[str] = frozenset(),
             phrasebook_only: bool = False, before: str = "", picks: dict[str, str] | None = None
             ) -> tuple[str, list[Donor]] | None:
        """Words for calls ``a:b`` in place of ``span``: one donor, else (several calls) a sentence per call.
        ``elsewhere``: calls that kept words right after ``span`` ask for, which ``span`` may name in passing.
        ``phrasebook_only``: one phrasebook sentence, no human turn (one going on after a kept condition brings its
        own premise: 'Should any tire fall below 40 PSI, the tire pressure seems worrying, kindly find ...').
        ``before``: the turn's kept words before ``span``, which say values as an earlier turn would ('... a flight
        from SFO on November 10th ..., and if the cost is under 2000, book it with card X')."""
        said = f"{earlier} {before}".strip()
        pool = [] if phrasebook_only or picks else [
            d for d in donors_for(methods[a:b], segment_signature(), knowledge.donor_key(seed))
            if d.task_id not in used and d.text not in {x.text for x in donors}]
        pool = at_goal_level(seed, turn, methods[a:b], span, pool)  # a human turn naming what the seed leaves unnamed
        phrases = phrasebook_donors(seed, turn, a, methods[a:b], sub, segment_signature(), used,
                                    {x.text for x in donors}, span, said, picks=picks, aliases=aliases)
        if phrasebook_only:  # one sentence, so that a kept condition governs all of it
            phrases = [d for d in phrases if len(SENTENCE_END.split(d.text.strip())) == 1]
        one = find_wording(ordered_donors(pool, seed, turn, a, b, rng, slot), sub, world, allowed, values, span, slot,
                           phrases, True, key=f"{seed.scenario}|{turn}|{a}|{b}", earlier=said if before else "")
        found = None if one is None else (one[0], [one[1]])  # (words, their donors)
        if found is None and b - a > 1 and not phrasebook_only:  # several calls no donor asks for together: a
            # sentence per call (never after a kept condition: the calls after its first sentence would read as
            # unconditional)
            found = _segments(seed, base_info, turn, g, methods[a:b], sub, world, allowed, values,
                              used | {x.task_id for x in donors}, rng, slot, span, segment_signature(), earlier,
                              single_only=True, aliases=aliases)
        if found is not None and drops_request(span, found[0], methods, a, b, elsewhere):
            return None
        return found

    info = base_info.turns[g]
    cued = [*cue_spans(carried)] + [(at, at + len(c.strip())) for c in [x.cue for x in [*info.references, *info.transformations]]
                                    if c.strip() and (at := carried.lower().find(c.lower().strip())) >= 0]

    def uncued(start: int, stop: int) -> bool:
        """No reference or transformation cue in ``carried[start:stop]``: new words there lose nothing a cue says
        ('withdraw that order if it hasn't gone through' keeps 'that order' only in the seed's words)."""
        return not any(x < stop and start < y for x, y in cued if not reads_as_condition(carried[x:y]))

    k = 0
    while k < len(units):
        a, b, lo, hi = units[k]
        if k in locked:  # a cut keeps the clause whose words decide the ground truth and re-words the rest
            cut_words = (_templated_words(carried, units[k], templated[k], methods, target, word,
                                          f"{seed.scenario}|{turn}|{slot}") if k in templated else None) \
                or (_conditioned_words(carried, units[k], conditioned[k], methods, target, word, uncued)
                    if k in conditioned else None) \
                or (_transformed_words(carried, units[k], transformed[k], methods, target, word)
                    if k in transformed else None) \
                or (_picked_words(carried, units[k], picked[k], methods, target, word) if k in picked else None)
            if cut_words is None:
                pieces.append((lo, hi))
            else:
                pieces += cut_words[0]
                donors.extend(cut_words[1])
            k += 1
            continue
        last = k  # a run of units asking for consecutive calls, in order
        while last + 1 < len(units) and last + 1 not in locked and units[last + 1][0] == units[last][1]:
            last += 1
        found = None
        for m in range(last, k - 1, -1):
            found = word(a, units[m][1], carried[lo:units[m][3]], _rebased(target, a, units[m][1]))
            if found is not None:
                break
        if found is None:
            pieces.append((lo, hi))
            k += 1
            continue
        pieces.append(as_sentence(found[0]))
        donors.extend(found[1])
        k = m + 1
    if not donors:
        return None
    merged: list[Piece] = []
    for p in pieces:  # carried spans side by side stay one span (a condition cut at ', then' stays whole)
        if isinstance(p, tuple) and merged and isinstance(merged[-1], tuple) and merged[-1][1] == p[0]:
            merged[-1] = (merged[-1][0], p[1])
        else:
            merged.append(p)
    texts = [p if isinstance(p, str) else as_sentence(clean_piece(carried[p[0]:p[1]])) for p in merged]
    if sum(bool(_PLEASE.search(t)) for t in texts) > 1:  # one 'please' a turn: the kept words keep theirs ('Let me
        # peek at the file 'notes', please. Forward it exactly to Farid please.', read 29)
        texts = [_without_please(t) if isinstance(p, str) and any(_PLEASE.search(o) for o in texts if o is not t)
                 else t for p, t in zip(merged, texts, strict=True)]
    return " ".join(t for t in texts if t), donors


__all__ = ["MAX_SEGMENTS", "assemble_turn", "by_recipe", "drops_request", "mixed_turn"]
