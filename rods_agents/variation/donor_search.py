"""Donors for a run of calls: human pieces and phrasebook sentences that fit, and the one a sibling takes.

:func:`collect_fits` re-instantiates each candidate (:mod:`rods_agents.variation.donor_fit`) and keeps those whose
words pass every check of :mod:`rods_agents.variation.saying` and :mod:`rods_agents.variation.cues`;
:func:`find_wording` picks one by the sample's sibling slot, so the eight samples of a scenario (four categories x two
variants) take different words. :func:`phrasebook_donors` turns the phrasebook's sentences for the calls into donors
(with their picks, aliases and hidden values). Inside :func:`avoiding_siblings` (the rewrite stage opens it with the
scenario's variants accepted so far), :func:`find_wording` passes over a wording a sibling already says when
another one fits, so the eight samples do not keep drawing the one sentence that fits first.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from typing import Any

from envs.task import Task
from rods_agents.analysis import knowledge
from rods_agents.analysis.catalog import build_catalog
from rods_agents.analysis.faithfulness import choice_words
from rods_agents.analysis.information_structure import _QUOTED, asked_by_goal, lexicon
from rods_agents.analysis.novelty import COPIED_SENTENCE_WORDS, SIBLING_TEXT_COPY, N, ngrams, sentence_key
from rods_agents.analysis.tracing import Trace
from rods_agents.analysis.value_sources import _dates, _numbers, named_by_lookup
from rods_agents.variation.cues import PICKED, brings_cues, names_other_work, said_out_of_order
from rods_agents.variation.donor_fit import reinstantiate, value_map
from rods_agents.variation.free_text import free_text_params
from rods_agents.variation.phrasebook import STATED, context_sentences, phrase_donors, spoken
from rods_agents.variation.saying import (
    as_sentence,
    asked_as_said,
    companies_of,
    foreign_names,
    keeps_said,
    named_as,
    names_other_option,
    premise_free,
    says_all,
    says_no_more,
    says_value,
    scalars_of,
    source_as_said,
    with_specifics,
    word_in,
    word_set,
)
from rods_agents.variation.turn_bank import SENTENCE_END, Donor, Slot

MAX_TRIES = 16  # donors tried per segment (siblings pick among the fitting ones)
PICK = 8  # fitting donors a sibling slot picks among (the 8 samples of a scenario: 4 categories x 2 variants)

_SIBLING_GRAMS: ContextVar[frozenset[tuple[str, ...]]] = ContextVar("sibling_grams", default=frozenset())


@contextmanager
def avoiding_siblings(texts: Iterable[str]) -> Iterator[None]:
    """Within the block, :func:`find_wording` prefers wordings the user ``texts`` of the scenario's accepted variants
    do not already say (word 5-grams, digits masked, as the verdict's ``novelty:sibling_copy`` test reads them).

    Why: the slot rotation alone left siblings on the same sentence wherever few donors fit (a vegetarian-meal
    request for customer support in five samples of one scenario), and the verdict then refused the later ones as
    near-copies after the whole plan had run. A context variable scopes this to one rewrite without threading the
    texts through every assembly helper."""
    token = _SIBLING_GRAMS.set(frozenset(g for text in texts for g in ngrams(text, N, True)))
    try:
        yield
    finally:
        _SIBLING_GRAMS.reset(token)


def said_by_sibling(text: str) -> bool:
    """More than ``SIBLING_TEXT_COPY`` of ``text``'s 5-grams are in an accepted sibling's words (see
    :func:`avoiding_siblings`)."""
    grams = _SIBLING_GRAMS.get()
    mine = ngrams(text, N, True) if grams else set()
    return bool(mine) and len(mine & grams) / len(mine) > SIBLING_TEXT_COPY


def ordered_donors(pool: list[Donor], seed: Task, turn: int, start: int, stop: int, rng: Any, slot: int | None) -> list[Donor]:
    """The donors in the order they are tried: shuffled (for a sibling slot, one order per scenario and turn,
    :func:`find_wording` then picks among the fitting ones by the slot, so siblings take other donors); an opening
    turn's donors from opening turns first."""
    pool = list(pool)
    if slot is None:
        rng.shuffle(pool)
    else:
        pool.sort(key=lambda d: (d.task_id, d.turn, d.text))
        random.Random(f"{seed.scenario}|{turn}|{start}|{stop}").shuffle(pool)
    # an introduction ("I'm planning a trip ...") reads oddly mid-conversation and a follow-up ("that file") at the start
    pool.sort(key=lambda d: (d.turn == 0) != (turn == 0))
    return pool


def collect_fits(donors: list[Donor], fits: list[tuple[str, Donor]], target: tuple[Slot, ...], world: set[str],
             allowed: set[float], values: str, span: str, want: int, whole_span: bool = True, earlier: str = "",
             before: str = "") -> None:
    """Append to ``fits`` the donors that re-instantiate on ``target`` and say exactly what ``span`` says, until
    ``want`` fit; at most ``MAX_TRIES`` human donors asking for the calls the same way are tried. ``whole_span``:
    the donor words all of ``span``, so a phrasebook sentence must keep its numbers and quoted values (one call's
    sentence of several is held to that only once they are joined: :func:`rods_agents.variation.assembly._segments`).
    ``before``: the turn's new sentences before this one, which may have said a value a phrasebook sentence points at
    (:func:`_phrasebook_donors` keeps only sentences that point back for such a value); a human donor is held to
    ``span`` alone, since nothing checks that its words point back."""
    tries = 0
    names: set[str] | None = None  # what a human donor's capitalised words may name: built once, on first need
    for d in donors:
        if len(fits) >= want or tries >= MAX_TRIES:
            return
        if value_map(d, target) is None or said_out_of_order(d):
            continue
        tries += d.scenario != "phrasebook"
        if d.scenario != "phrasebook" and (not premise_free(d.text) or any(x.source == "state" for x in d.slots)):
            continue  # a premise of its own story, or a value it names its own way ('Alice' for the id to look up)
        text = reinstantiate(d, target, world, allowed, values)
        if text is not None and d.scenario != "phrasebook":
            names = names if names is not None else world | word_set(span) | companies_of(world)
            if (foreign_names(text, names) or brings_cues(text, span, any(x.producer for x in target),
                                                          any(x.source == "call" for x in target))
                    or names_other_work(text, world, values)):
                continue  # a person or a thing of the donor's own story, or its own pick ('the first file you find')
        if d.scenario == "phrasebook" and whole_span and text is not None:
            text = with_specifics(text, span, d.methods, values, world, earlier, recipe_numbers(d))
        said = f"{before} {text}" if before and d.scenario == "phrasebook" else text
        if (text is not None and keeps_said(said, target, span) and says_no_more(text, target, span)
                and source_as_said(text, d.methods, span) and asked_as_said(text, d.methods, span)
                and not names_other_option(text, d.methods, target)):
            fits.append((text, d))


def recipe_numbers(d: Donor) -> frozenset[float]:
    """The numbers a phrasebook sentence marked ``composes`` says in its own words: its recipe's result ('Top the tank
    off.' leaves the tank at its capacity, 50 gallons; ``prompts/bfcl/value_recipes.json``)."""
    recipes = knowledge.value_recipes()
    out: set[float] = set()
    for x in d.slots:
        if x.recipe and 0 <= x.index < len(d.methods):
            rule = recipes.get(f"{d.methods[x.index]}.{x.param}", {}).get(x.recipe, {})
            out.update(float(v) for v in (rule.get("result") or {}).values()
                       if isinstance(v, int | float) and not isinstance(v, bool))
    return frozenset(out)


def sibling_rank(slot: int, key: str) -> int:
    """A sibling's rank among a turn's fitting donors: its slot through one permutation of the ``PICK`` slots per
    scenario and turn (``key``). Why not the slot itself: with fewer fits than siblings, ``slot % fits`` sends the
    same siblings to the same donor in every such turn (slots 1 and 5 share every turn with 1, 2 or 4 fits), so
    their texts end up near-copies (issue 13: 29 of 35 sibling rejections over 120 seeds); a permutation per turn
    spreads the collisions over other pairs in each turn."""
    order = list(range(PICK))
    random.Random(f"{key}|siblings").shuffle(order)
    return order[slot % PICK] + PICK * (slot // PICK)


def find_wording(pool: list[Donor], target: tuple[Slot, ...], world: set[str], allowed: set[float], values: str,
          span: str, slot: int | None = None, phrases: list[Donor] | None = None, phrases_first: bool = False,
          distinct: bool = False, whole_span: bool = True, after: str = "", key: str = "", earlier: str = "",
          before: str = "") -> tuple[str, Donor] | None:
    """A donor of ``pool`` that re-instantiates on ``target`` and states what ``span`` states: the first one, or
    for a sibling ``slot`` the slot's pick among the first ``PICK`` that fit (siblings of one scenario share
    their turns' pools, and the first fitting donor of a rotated pool is often the same one). At most
    ``MAX_TRIES`` donors that ask for the calls the same way are tried (the others are skipped at no cost).
    ``after``: the sentences this one follows in its turn; one opening as any of them does is taken only when no
    other fits ('Could you set the parking brake? Could you fire up the car?', read 10; 'I need its length in lines,
    please. Then how many words are in it? I need its length in characters, please.', read 27). ``key``: the scenario and turn, whose
    permutation of the sibling slots orders the pick (:func:`sibling_rank`). ``earlier``: the user's earlier turns
    (:func:`rods_agents.variation.saying.with_specifics`)."""
    fits: list[tuple[str, Donor]] = []
    rank = None if slot is None else sibling_rank(slot, key)
    first, then = (list(phrases or []), pool) if phrases_first else (pool, list(phrases or []))
    for source in (first, then):  # a piece of a turn takes the phrasebook first: a human piece brings its story
        collect_fits(source, fits, target, world, allowed, values, span, PICK if slot is not None or after else 1,
                 whole_span, earlier, before)
    fits = [f for f in fits if not copies_donor(*f)] or fits  # another seed's sentence word for word: the last resort
    fits = [f for f in fits if not said_by_sibling(f[0])] or fits  # a sibling's words only where nothing else fits
    if not fits or (distinct and rank is not None and rank % PICK >= len(fits)):
        return None  # distinct: a sibling past the fitting donors words the turn in pieces, not a sibling's words;
        # a slot past the scenario's eight (a re-plan, a later assembly) stands for its sibling's place, not a ninth
        # sibling: before, every such slot refused every whole-turn wording (46 of 498 accepted samples)
    if after:
        opened = {_opener(x) for x in SENTENCE_END.split(after) if x.strip()}
        fits = [f for f in fits if _opener(f[0]) not in opened] or fits
    return fits[0] if rank is None else fits[rank % len(fits)]


def copies_donor(text: str, donor: Donor) -> bool:
    """A human donor's words kept whole: a sentence of six words or more of ``text`` is one of the donor turn's own
    ('May I have the details of the most recent order I've placed to verify the transaction?'). Such a sentence is
    BFCL's, seen by any model trained on the benchmark: 103 of 553 accepted variants held one (read 62 named four),
    so a phrasebook sentence or a donor re-worded on the variant's values goes first."""
    if donor.scenario == "phrasebook":
        return False
    own = {sentence_key(x) for x in SENTENCE_END.split(donor.text)}
    return any(len(w.split()) >= COPIED_SENTENCE_WORDS and w in own for w in map(sentence_key, SENTENCE_END.split(text)))


def _opener(text: str) -> str:
    """How a request opens, for variety between a turn's sentences: its first two words ('could you', 'please go')."""
    return " ".join(re.findall(r"[a-z']+", text.lower())[:2])


def hidden_said(target: tuple[Slot, ...], span: str) -> tuple[Slot, ...]:
    """The hidden slots (values of implicit calls) that ``span`` states: a context sentence must state them too. One it
    leaves to an earlier turn ('search the file' inside the folder named a turn before) needs none, and one would
    make the turn easier; the re-measure checks the value is still obtainable as in the seed."""
    dates, nums = _dates(span), _numbers(span)
    return tuple(x for x in target if x.index < 0 and any(says_value(v, span, dates, nums) for v in scalars_of(json.loads(x.value))))


def _describes_withheld(text: str, target: tuple[Slot, ...]) -> bool:
    """A sentence for a miss_param turn that names what the withheld value is about ('at market price' for the
    price the next turn supplies): it answers the question the assistant must ask, wrongly. Any word of the
    withheld parameter's name counts (conservative: 'the ticket' for a withheld ticket id too), except after words
    saying which one is still open ('a sector I have in mind', 'at a price I'll give you', 'one particular sector'):
    that is how a user leaves it out."""
    words = {w for x in target if x.source == "withheld" for w in x.param.lower().split("_") if len(w) >= 3}
    return any(not _OPEN.search(text[:m.start()]) for w in words
               for m in re.finditer(rf"\b{re.escape(w)}", text, re.I))


_OPEN = re.compile(r"\b(?:a|an|one|some|certain|particular|specific)\s+(?:\w+\s+)?$", re.I)
"""Words before a noun that leave which one open ('a', 'one particular', 'a certain')."""


def _alias(value: Any, span: str, aliases: dict[str, str] | None) -> str | None:
    """The name ``span`` gives a looked-up value by (:func:`lookup_names`), or None; with the value itself where
    ``span`` says both ('my friend, Sam (id USR006)'): the name alone would leave the id to a lookup the ground
    truth never makes."""
    name = (aliases or {}).get(value) if isinstance(value, str) else None
    if not name or not word_in(name, span):
        return None
    return f"{name} (id {value})" if word_in(value, span) else name


def lookup_names(trace: Trace, config: dict[str, Any] | None = None) -> dict[str, str]:
    """Value -> the name the ground truth looked it up by: one-argument lookups (``get_user_id(user='Bob')`` gives
    USR002) whose result is one string, and the state's name maps (MessageAPI's ``user_map``: Michael -> USR006;
    ``config`` is best the loaded state, whose defaults name Bob where the task's config lists no users). A
    turn naming Bob for the id read from that result or the state ('delete what you sent Bob', 'update Michael')
    writes Bob where the id goes, so finding the id stays the assistant's."""
    kinds = set(knowledge.skill_classes().get("kinds", {}).get("lookup", ()))
    out: dict[str, str] = {}
    for state in (config or {}).values():
        for key, table in (state.items() if isinstance(state, dict) else ()):
            if key.endswith("_map") and isinstance(table, dict):
                out.update({v: k for k, v in table.items() if isinstance(k, str) and isinstance(v, str)})
    for rec in trace.calls:
        if rec.name not in kinds or rec.error or len(rec.args) != 1:
            continue
        (name,) = rec.args.values()
        try:
            result = json.loads(rec.result)
        except (TypeError, ValueError):
            continue
        values = list(result.values()) if isinstance(result, dict) else []
        if isinstance(name, str) and len(values) == 1 and isinstance(values[0], str):
            out.setdefault(values[0], name)
    return out


def unworded_options(methods: tuple[str, ...], own: list[Slot], span: str, earlier: str) -> frozenset[str]:
    """The documented options (``prompts/bfcl/choice_words.json``) of a turn's calls that neither its words nor an
    earlier turn's say: 'secure travel insurance with a fee of $350' leaves the insurance type to the assistant, and
    a sentence naming 'comprehensive' would decide it for them. A sentence for the call leaves them unsaid too."""
    table = choice_words()
    out = set()
    for x in own:
        words = table.get(f"{methods[x.index]}.{x.param}") if x.source == "flag" else None
        option = json.loads(x.value) if words else None
        if words and str(option) in words and not any(p.search(f"{earlier} {span}") for p in words[str(option)]):
            out.add(x.param)
    return frozenset(out)


_THINGS = r"(?:stock|stocks|company|file|files|order|booking|flight|reservation|ticket|message|folder|directory|card|one)"
_ANAPHOR = re.compile(rf"\b(?:it|them)\b|\b(?:that|this|these|those|the) {_THINGS}\b", re.I)
"""Words pointing back at a thing said before ('add it', 'that stock')."""
_POINTER = re.compile(rf"\b(?:it|them|over there)\b|\b(?:that|these|those) {_THINGS}\b", re.I)
"""Words pointing back at a thing said before, short of 'this' ('this directory' is the one the user is in)."""
_PLACE_POINTER = re.compile(r"\bthere\b|\b(?:that|the same) (?:address|place|location|spot|destination)\b", re.I)
"""Words pointing back at a place said before ('Set the navigation to that address.', 'Navigate me there')."""
_PLACE_INTRODUCED = re.compile(r"\b(?:a|an|this|some|my)\s+(?:[\w'-]+\s+){0,3}(?:spot|place|town|city|address|location|"
                               r"destination|hometown)\b", re.I)
"""A place the sentence brings in itself ('this gorgeous little spot ... take me there')."""


def points_back_at_place(text: str) -> bool:
    """``text`` points at a place said before it: 'that address', or 'there' with no place of its own before it."""
    text = _QUOTED.sub("''", text)
    m = _PLACE_POINTER.search(text)
    return m is not None and not (m.group(0).lower() == "there" and _PLACE_INTRODUCED.search(text[:m.start()]))
_PLACE_PARAMS = frozenset({"destination", "location", "city", "cityA", "cityB", "travel_from", "travel_to"})
_SAME = re.compile(r"\b(?:same|identical)\b", re.I)
"""Words pointing back at a value said before ('with the same card and token')."""
_PRONOUN = re.compile(r"\b(?:it|its|them|they|their|that person|that user)\b"
                      r"|\b(?:that|this|these|those)(?=\s+(?:in|into|to|written|down|for|as|on|at|over|with|under)\b"
                      r"|\s*[.,?!])", re.I)
"""Words standing for a thing ('store that in the file', 'send it to them'); 'that file' names one."""


EmptySearch = Callable[[Task, int, tuple[str, ...], tuple[Slot, ...], str], None]
EMPTY_SEARCHES: list[EmptySearch] = []
"""Observers of phrasebook searches that found no sentence, called with (seed, turn, the run of calls, its slots, the
replaced words): ``scripts/phrasebook_gaps.py`` groups them by the calls and where each value comes from, which is
how the data a phrasebook lacks is found (none observe by default)."""


def phrasebook_donors(seed: Task, turn: int, start: int, methods: tuple[str, ...], target: tuple[Slot, ...], signature: str,
                      used: set[str], picked: set[str], span: str = "", earlier: str = "",
                      picks: dict[str, str] | None = None, aliases: dict[str, str] | None = None,
                      describing: bool = False, before: str = "") -> list[Donor]:
    """:func:`_phrasebook_donors`, telling :data:`EMPTY_SEARCHES` when it finds no sentence (a describing search aside:
    most calls have no free text to describe)."""
    out = _phrasebook_donors(seed, turn, start, methods, target, signature, used, picked, span, earlier, picks, aliases,
                             describing, before)
    if not out and not describing:
        for observe in EMPTY_SEARCHES:
            observe(seed, turn, methods, target, span)
    return out


def _phrasebook_donors(seed: Task, turn: int, start: int, methods: tuple[str, ...], target: tuple[Slot, ...], signature: str,
                       used: set[str], picked: set[str], span: str = "", earlier: str = "",
                       picks: dict[str, str] | None = None, aliases: dict[str, str] | None = None,
                       describing: bool = False, before: str = "") -> list[Donor]:
    """The phrasebook's donors for a one-call segment, or two calls a frame asks for in one request
    (:mod:`rods_agents.variation.phrasebook`), in one order per scenario and turn (siblings pick among them by their slot), the ones a turn already uses left out.
    ``describing``: the phrasings describing a free text of their own (:func:`rods_agents.variation.transplant._adopted`)."""
    picks = picks or {}
    own = [x for x in target if 0 <= x.index < len(methods)]  # the run's calls, no hidden slots
    named = {x.param: words for x in own if x.param not in picks
             and (words := named_as(json.loads(x.value), span) or _alias(json.loads(x.value), span, aliases))}
    # a code an earlier turn named for its lookup ('the nearest airport to Rivermist', then 'book that flight'): left
    # to that turn, as a value it said as it is would be
    looked_up = {x.param for x in own if x.source == "state" and not x.producer
                 and x.param not in named and all(named_by_lookup(v, earlier) for v in scalars_of(json.loads(x.value)))}
    # the new sentences this turn already has (``before``) say a value the next call takes again: the next sentence
    # points at it ('Quote me economy class from NYC to Tokyo on December 24th, 2026. Then book it, ...'), where read
    # 26 had the route, date and class twice in back-to-back sentences
    b_dates, b_nums = _dates(before), _numbers(before)
    said_before = {x.param for x in own if before and x.source in (*STATED, "state") and not x.producer and all(
        says_value(v, before, b_dates, b_nums) for v in scalars_of(json.loads(x.value)))}
    named = {k: v for k, v in named.items() if k not in said_before}
    looked_up |= {x.param for x in own if x.source == "state" and x.param in said_before}
    if len(methods) > 2 or any(x.source in PICKED and not x.producer and not x.recipe and not x.sole
                                and x.param not in named and x.param not in picks and x.param not in looked_up
                                and not (describing and f"{methods[x.index]}.{x.param}" in free_text_params())
                                for x in own):
        return []  # a value read from the state or one of several results: the seed's words say which one
    # a value of an implicit call that the call itself takes too ('snag 100 shares of XYZ' states the symbol of the
    # implicit price lookup as well as the order's): the sentence writing the order's symbol says it
    stated = {x.value for x in own if x.source in STATED}
    hidden = tuple(x for x in hidden_said(target, span) if x.value not in stated)
    # a value the replaced words leave out may be left out only where an earlier turn says it as it is: a value the
    # seed's turn says in words no lookup finds ('high-priority', 'end with 50 gallons', 'in pounds sterling') stays
    # said, and an option is never left out
    dates, nums, e_dates, e_nums = _dates(span), _numbers(span), _dates(earlier), _numbers(earlier)
    unsaid = frozenset(x.param for x in own if x.source in STATED and all(
        not says_value(v, span, dates, nums) and says_value(v, earlier, e_dates, e_nums) for v in scalars_of(json.loads(x.value))))
    unsaid |= looked_up | unworded_options(methods, own, span, earlier) | said_before
    marked = not withholds_plainly(methods, own)  # a withheld value the words must say is missing
    out = [d for d in phrase_donors("+".join(methods), target, signature, unsaid - named.keys() - picks.keys(), named, picks,
                                    marked_only=marked, describing=describing)
           if d.task_id not in used and d.text not in picked and not _describes_withheld(d.text, target)]
    out = at_goal_level(seed, turn, methods, span, out)
    for words in named.values():  # a folder named by its singular or plural stays a folder ('the document folder'),
        if re.search(rf"\b{re.escape(words)}\s+(?:folder|directory)\b", span, re.I):  # not 'Please navigate into document.'
            out = [d for d in out if re.search(rf"\b{re.escape(words)}\s+(?:folder|directory)\b", d.text, re.I)]
    if said_before:  # words left to the sentence before point back at it ('book it', 'that flight'); 'Next, go ahead
        # and transfer 'report.pdf'.' after 'create a directory called 'exports'' says nowhere to (h20 run)
        out = [d for d in out if _ANAPHOR.search(_QUOTED.sub("''", d.text))]
    if any(re.search(rf"\b(?:same|identical)\s+(?:\w+\s+)?{re.escape(p.split('_')[0])}", span, re.I) for p in unsaid):
        # the seed points back at a value it leaves out ('a new ticket with same title'): the new words do too, or
        # the value is left to nothing (read of 2026-12-05, long_context_27)
        out = [d for d in out if _SAME.search(d.text)]
    if start == 0 and not earlier.strip() and any(x.source == "withheld" for x in own):
        # the task's first words: 'Please put it on my watchlist.' points at nothing said before (read of
        # 2026-12-03, miss_param_142); 'a company' or 'a stock' withholds which one without pointing back
        out = [d for d in out if not _ANAPHOR.search(d.text)]
    elif start == 0 and not earlier.strip():
        # nor does 'Go to that directory.' for the folder the seed calls 'the temporary directory' (base_26), though
        # the state holds no other; a pointer at a value the sentence itself writes ('read the file 'notes' out and
        # forward it', 'quote me ... and book it') points inside it
        written = [w.lower() for w in (*(spoken(json.loads(x.value)) for x in own if x.source in STATED and not x.flag),
                                       *named.values(), *picks.values()) if w]
        out = [d for d in out if not _POINTER.search(_QUOTED.sub("''", d.text))
               or any(w in d.text.lower() for w in written)]
    elif any(x.source == "withheld" for x in own):
        # later on, a pronoun in a sentence that leaves a value out stands for that value, which nothing before
        # names: 'Please pass along ... to them.' where the seed asked to write to 'my financial advisor' (read of
        # 2026-12-04, miss_param_131); 'Can you store that in the file X?' before the content is given (miss_param_15,
        # read of 2026-12-04, third session); 'Could you send over a message that reads ...?' leaves the recipient out
        out = [d for d in out if not says_withheld_by_pronoun(d.text)]
        if any(x.source == "withheld" and x.param in _PLACE_PARAMS for x in own):
            # a place left out is no place said before: 'Set the navigation to that address.' took the address turn
            # 0 states, where the seed asks to be taken 'to this gorgeous little spot' and names it a turn later (read
            # 59, miss_param_66)
            out = [d for d in out if not points_back_at_place(d.text)]
    if earlier.strip():  # 'Can you check on the ticket?' where no turn has spoken of a ticket (read 28): words
        # that name it by themselves go first ('the support ticket I opened')
        # the words of a value the sentence writes ('Unexpected charge found on the invoice.') are not its own pointer
        out = [d for d in out if not _dangling(_unvalued(d.text, own), f"{earlier} {before}")] or out
    if hidden:  # a one-call turn that states values of implicit calls: a context sentence carries them, unless the
        # sentence itself names them ('How far is it from Sunset Valley to Shadowridge?' after 'There's a trip from
        # Sunset Valley to Shadowridge on my mind.' named both cities twice, read 18)
        ctx = context_sentences(hidden)
        pick = random.Random(f"{seed.scenario}|{turn}|context").randrange(len(ctx)) if ctx else 0
        worded = []
        for k, d in enumerate(out):
            if says_all(hidden, d.text):
                worded.append(replace(d, slots=target))
            elif ctx:
                worded.append(replace(d, text=f"{ctx[(pick + k) % len(ctx)]} {as_sentence(d.text)}", slots=target))
        out = worded
    elif any(x.index < 0 for x in target):  # values of implicit calls the turn leaves to an earlier one: nothing to say
        out = [replace(d, slots=target) for d in out]
    random.Random(f"{seed.scenario}|{turn}|{start}|phrasebook").shuffle(out)
    return out


_DEFINITE = re.compile(r"\bthe (ticket|order|booking|reservation|invoice|message|tweet|post)\b", re.I)


def _unvalued(text: str, own: Iterable[Slot]) -> str:
    """``text`` without the values of several words it states: their words are the user's message, not a pointer."""
    for x in own:
        value = json.loads(x.value)
        if x.source in STATED and isinstance(value, str) and len(value.split()) >= 3:
            text = text.replace(value, "")
    return text


def _dangling(text: str, said: str) -> bool:
    """``text`` says 'the ticket' (an order, a booking, a message ...) bare, and nothing ``said`` before names one."""
    low = said.lower()
    return any(m.group(1).lower() not in low for m in _DEFINITE.finditer(_QUOTED.sub("''", text)))


def at_goal_level(seed: Task, turn: int, methods: tuple[str, ...], span: str, donors: list[Donor]) -> list[Donor]:
    """The donors that ask for each call as the seed does: a call the seed asks for by what it is for stays unnamed,
    a named one named (read of 2026-12-05: 'confirm their flight booking's details' became 'pull up the invoice', which
    tells the assistant the step). Words for another call of the turn never name one the seed leaves to its goal
    either ('set my budget to the exchanged figure' after 'an equivalence of 20,000 RMB in US dollars')."""
    whole = " ".join(m.content for m in seed.turns[turn] if m.role == "user") if turn < len(seed.turns) else span
    called = {c.split("(", 1)[0] for calls in seed.ground_truth for c in calls}
    others = [m for m, hints in lexicon().hints.items() if hints and m in called and m not in methods]
    for m in (*methods, *others):
        goal = asked_by_goal(m, span if m in methods else whole)
        if goal is None and m in methods:
            # words that say nothing of the call ('make sure my car is in excellent shape'), with the turn naming it
            # only in its condition ('If any tire pressure is under 35'): the condition leaves the step to the
            # assistant, and so must the new words (read 36: 'What are my tire pressure readings?')
            goal = asked_by_goal(m, whole) or None
        if goal is not None and (m in methods or goal):
            donors = [d for d in donors if asked_by_goal(m, d.text) is not (not goal)]
    return donors


def says_withheld_by_pronoun(text: str) -> bool:
    """A sentence that leaves a value out says a pronoun for it, which points at something said before ('I need its
    length in lines, please.' after a turn about the third file, where the seed's 'For a different file' made the
    assistant ask which: read of 2026-12-05, miss_param_49); a dictated text's own words aside."""
    return _PRONOUN.search(_QUOTED.sub("''", text)) is not None


def withholds_plainly(methods: tuple[str, ...], target: tuple[Slot, ...]) -> bool:
    """Every value the turn withholds is a required parameter of its call that a person would not fill in unasked:
    a sentence for the call without it leaves the assistant no way to make the call but to ask ('Please make a
    copy of notes.txt.': copy where?). An optional one (a tweet's tags or mentions, tail's line count) and one with
    an obvious default (``prompts/bfcl/skill_classes.json`` ``withheld_in_words``: a fuel amount, 'fill it up') must
    be missed in words ('with the tag we discussed'): 'Go ahead and tweet ...' is posted as it is, nothing asked."""
    catalog = build_catalog()
    in_words = set(knowledge.skill_classes().get("withheld_in_words", ()))
    held = [(methods[x.index], x.param) for x in target if x.source == "withheld" and 0 <= x.index < len(methods)]
    return all(m in catalog.methods and p in catalog.spec(m).required and f"{m}.{p}" not in in_words for m, p in held)


__all__ = ["EMPTY_SEARCHES", "MAX_TRIES", "PICK", "at_goal_level", "collect_fits", "copies_donor", "find_wording", "hidden_said", "lookup_names", "ordered_donors", "phrasebook_donors", "points_back_at_place", "says_withheld_by_pronoun", "sibling_rank", "unworded_options", "withholds_plainly"]
