"""New wording for a variant: human turns of other train seeds, re-instantiated on the variant's values.

The seed-anchored rewrite (:func:`rods_agents.variation.anchored_plan.carry_turn`) keeps the seed's
information structure by keeping its sentences, which makes the variant the seed again. Here each
turn that can be is replaced by a turn of *another* train scenario that asks for the same calls
(:mod:`rods_agents.variation.turn_bank`), with the donor's stated values replaced by the variant's at
the same argument slots. A donor is taken only when nothing of the seed turn's difficulty moves:

- the same methods in the same order, the same arguments bound, the same source for every argument
  (stated / read from a result / from the state / composed): what the seed states, the donor states;
  what the seed leaves to the assistant, the donor leaves too;
- the same calls implicit, the same number of conditions, the same kinds of reference and
  transformation (:func:`rods_agents.variation.turn_bank.portable_signature`);
- a choice said in words (a boolean, a documented option) is taken only where the donor's value
  equals the variant's (the donor's words describe its own choice);
- nothing of the donor's world survives: no name of its config or arguments that the variant's world
  lacks, no quoted value the variant does not know, no number the variant's calls and its seed turn
  do not hold (a threshold or a count from another task would change what the text asks for).

A turn no donor words whole is re-worded piece by piece (:func:`_mixed`): it is cut into units (the
sentences, or clauses handed over with 'and then' / ', then' / ';', that ask for a call), each run of
units from a donor asking for just those calls the same way, and the units holding a condition, a
reference or a transformation cue keep the carried wording: their cue ("the last stock on the list",
"should any tire fall below 40 PSI", "round to the nearest integer") decides the ground truth, and a
donor's cue of the same kind ("the first stock") would pick another value. Values a turn states for a
call it leaves implicit ('the distance between Rivermist and Greenway' for the implicit zip-code
lookups) are hidden slots that a donor must carry too. A miss_param withholding turn is worded only by
another train turn withholding the same parameter of the same method (the withheld value is never
carried); the supplying turn and a miss_func reveal turn keep the seed's (the category's mechanics).
Siblings of one scenario (four categories x variants) pick among the fitting donors by their slot.

The assembled turns are then measured whole (:func:`transplant_turns`): a donor stays only where the
variant's per-turn argument sources and information structure are no worse than with the carried
wording, and every value the state must hint at is still singled out by the text.

A turn no donor words that describes a free text for the assistant to compose (a concern for customer support)
may take a donor describing *its own*, and the variant's call takes the donor's text with it (:func:`_adopted`,
:mod:`rods_agents.variation.free_text`); the task is then re-run before it is measured. A turn whose sentence a
later call writes down keeps its words, and a user saying who they are ('I am Alice.') keeps saying it.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from envs.task import Message, Task
from prompts import load_prompt_json
from rods_agents.analysis import knowledge
from rods_agents.analysis.catalog import build_catalog
from rods_agents.analysis.faithfulness import choice_words, says
from rods_agents.analysis.information_structure import (
    _QUOTED,
    information_structure,
    lexicon,
    structure_mismatches,
    withheld_value,
)
from rods_agents.analysis.novelty import call_values
from rods_agents.analysis.obtainability import public_state, state_obtainable
from rods_agents.analysis.tracing import Trace, trace_task
from rods_agents.analysis.value_sources import (
    CITY_ALIASES,
    _dates,
    _numbers,
    airport_cities,
    classify_arguments,
    named_by_lookup,
    stated_as_date,
    ticker_companies,
    user_text_upto,
)
from rods_agents.variation.free_text import adopted_ground_truth, adopted_slots, described, quoted_later, tied_elsewhere
from rods_agents.variation.phrasebook import (
    STATED,
    context_sentences,
    phrase_donors,
    spoken,
    story_sentences,
    supply_sentences,
)
from rods_agents.variation.seed_anchor import Substitution, substitute_numbers
from rods_agents.variation.turn_bank import (
    SENTENCE_END,
    Donor,
    Slot,
    asked_turn,
    call_positions,
    clean_piece,
    cue_key,
    donors_for,
    explicit_calls,
    piece_bounds,
    piece_of,
    portable_signature,
    segment_signature,
    turn_slots,
    withholding_calls,
    world_strings,
)

MAX_TRIES = 16  # donors tried per segment (siblings pick among the fitting ones)
PICK = 8  # fitting donors a sibling slot picks among (the 8 samples of a scenario: 4 categories x 2 variants)
ASSEMBLIES = 4  # wordings tried per turn
MAX_SEGMENTS = 4  # donor turns joined into one turn at most

# A human turn opened by a premise of its own conversation ('With the liters in mind, ...', 'Now that the tank is
# full, ...', 'Finally, ...') or a persona ('I am Alice', 'As a high-ranking official, ...') carries its story into
# the variant, where the premise is false: the independent reads found such leftovers in over half of 30 pairs.
_PREMISE = re.compile(
    r"(?:^|(?<=[.?!]\s))(?:with|given|now that|since|after|once|having|following|finally|lastly|furthermore|moreover|"
    r"additionally|speaking of|in light of|on top of|as|considering|upon|building on|in addition|subsequently|"
    r"meanwhile|besides|then|next|also|oh)\b"
    r"|\b(?:i am|i'm|my name is|this is)\s+(?-i:[A-Z][a-z]+)\b"
    r"|\b(?:you|you'd|you've|your)\b(?=[^.?!]*\b(?:prefer|itinerary|adventure|journey|escape)\b)",
    re.IGNORECASE)


_CALENDAR = frozenset("january february march april may june july august september october november december monday "
                      "tuesday wednesday thursday friday saturday sunday".split())


def foreign_names(text: str, world: set[str]) -> list[str]:
    """Capitalised words inside a sentence (not its first word) that name nothing of the variant's world (its
    state, its calls, the words of its own turns): a human turn's 'the stock with Amazon' or 'my friend Maria'
    carried into a task about another company or person. Month and day names, 'I' and codes in capitals pass."""
    out = []
    for sentence in re.split(r"(?<=[.?!])\s+", text):
        for word in re.findall(r"[A-Za-z][\w'-]*", sentence)[1:]:
            low = word.lower().removesuffix("'s")
            if (word[0].isupper() and any(c.islower() for c in word[1:]) and low not in _CALENDAR
                    and not low.startswith("i'") and not any(low in s for s in world)):
                out.append(word)
    return out


def _words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[A-Za-z][\w'-]*", text)}


def _companies(world: set[str]) -> set[str]:
    """The company names of the tickers in ``world`` ('quasar ltd.' for 'quas'): how a user names a stock."""
    return {v.lower() for k, v in ticker_companies().items() if k.lower() in world}


def premise_free(text: str) -> bool:
    """True when a human turn's words presuppose nothing of their own conversation: no sentence opens on a
    premise or a hand-over ('Given this apprehension, ...', 'Finally, ...'), no persona is introduced, no
    second-person story is told. Only such turns are donors: the phrasebook words the rest."""
    return _PREMISE.search(text.strip()) is None


def _pairs(donor_value: Any, target_value: Any) -> list[tuple[Any, Any]] | None:
    a = donor_value if isinstance(donor_value, list) else [donor_value]
    b = target_value if isinstance(target_value, list) else [target_value]
    if len(a) != len(b) or isinstance(donor_value, list) != isinstance(target_value, list):
        return None
    return list(zip(a, b, strict=True))


_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_ISO = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _date_words(year: int, month: int, day: int) -> list[str]:
    m, mon = _MONTHS[month - 1], _MONTHS[month - 1][:3]
    d, o = str(day), _ordinal(day)
    return [f"{m} {o}, {year}", f"{m} {d}, {year}", f"{m} {o} {year}", f"{m} {d} {year}", f"{o} of {m}, {year}",
            f"{o} of {m} {year}", f"{d} {m} {year}", f"{o} of {m}", f"{m} {o}", f"{m} {d}", f"{mon} {o}",
            f"{mon} {d}", f"{mon}. {d}"]


def date_forms(old: str, new: str, text: str) -> list[tuple[str, str]]:
    """(old form, new form) of an ISO date the donor writes in words ('December 15th, 2026'), the forms
    found in ``text`` only, longest first."""
    mo, mn = _ISO.match(old), _ISO.match(new)
    if not mo or not mn:
        return []
    olds = _date_words(*(int(x) for x in mo.groups()))
    news = _date_words(*(int(x) for x in mn.groups()))
    return [(o, n) for o, n in zip(olds, news, strict=True) if re.search(rf"(?<!\w){re.escape(o)}(?!\w)", text, re.I)]


def _once(value: str, text: str) -> bool:
    forms = {value, value.replace("_", " ")}
    return sum(len(re.findall(rf"(?<![\w]){re.escape(f)}(?![\w])", text, re.I)) for f in forms) == 1


_UNSAID = frozenset({"call", "state"})
"""Sources of a value the text does not write: where the assistant finds it (an earlier result, the state) is
decided by the ground truth and the environment, not by the words, so a donor that leaves a value to a result
words a turn that leaves it to the state as well (the re-measure checks that the state value is still singled
out)."""


def _once_number(dv: Any, tv: Any, text: str) -> bool:
    """Both are numbers (not booleans) and ``dv`` is written exactly once in ``text``, as a number."""
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (dv, tv)):
        return False
    return len(re.findall(rf"(?<![\w.]){re.escape(str(dv))}(?![\w]|\.\d)", text)) == 1


def value_map(donor: Donor, target: tuple[Slot, ...]) -> tuple[dict[str, str], dict[str, Any]] | None:
    """(strings, numbers) to carry from the donor's stated values to the target's, or None when the donor
    does not ask for the target's calls the same way (see the module docstring)."""
    d_map = {(s.index, s.param): s for s in donor.slots}
    t_map = {(s.index, s.param): s for s in target}
    if d_map.keys() != t_map.keys():
        return None
    strings: dict[str, str] = {}
    numbers: dict[str, Any] = {}
    for key, ds in d_map.items():
        ts = t_map[key]
        dv, tv = json.loads(ds.value), json.loads(ts.value)
        if "withheld" in (ds.source, ts.source):
            if ds.source != ts.source:
                return None
            continue  # left out on purpose by both: nothing to carry
        if ds.flag or ts.flag:
            if dv == tv:
                continue
            # a documented option the donor names once in words ('in business class') is carried like a value,
            # and so is a numeric option it writes once as a number ('priority 4')
            if _once_number(dv, tv, donor.text):
                if numbers.setdefault(repr(dv), tv) != tv:
                    return None
                continue
            if not (isinstance(dv, str) and isinstance(tv, str) and len(dv) >= 3 and _once(dv, donor.text)
                    and strings.setdefault(dv, tv) == tv):
                return None
            continue
        if ds.source != ts.source and not {ds.source, ts.source} <= _UNSAID:
            return None
        if ds.recipe != ts.recipe:
            return None  # 'I think 40 gallons in total' builds another amount than 'fill it completely' (a review)
        if ds.source != "user":
            continue
        pairs = _pairs(dv, tv)
        if pairs is None:
            return None
        for a, b in pairs:
            if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
                if a != b:
                    return None
            elif isinstance(a, int | float) and isinstance(b, int | float):
                if numbers.setdefault(repr(a), b) != b:
                    return None
            elif isinstance(a, str) and isinstance(b, str):
                for fa, fb in [(a, b), *date_forms(a, b, donor.text)]:
                    if strings.setdefault(fa, fb) != fb:
                        return None
            else:
                return None
    return strings, numbers


_CODE = re.compile(r"[A-Z]{2,5}")
# airports the donors name by their own names: detected (never carried), so a donor's trip cannot stay
_AIRPORT_NAMES = {"JFK": ("John F. Kennedy", "Kennedy"), "ORD": ("O'Hare", "OHare"), "LHR": ("Heathrow",),
                  "CDG": ("Charles de Gaulle",), "HND": ("Haneda",)}


def _word_in(word: str, text: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(word)}(?![A-Za-z0-9])", text) is not None


_TOKEN = re.compile(r"[\w.\-@#$/']+")


def _phrases(text: str, longest: int = 6) -> set[str]:
    """Every run of up to ``longest`` tokens of ``text`` (lower case), with and without edge punctuation and
    quotes: what a name of the donor's world could be written as."""
    tokens = _TOKEN.findall(text)
    out: set[str] = set()
    for i in range(len(tokens)):
        for j in range(i + 1, min(len(tokens), i + longest) + 1):
            phrase = " ".join(tokens[i:j])
            out.add(phrase)
            out.add(phrase.strip(".,'\"!?:;"))
    return out


def reinstantiate(donor: Donor, target: tuple[Slot, ...], world: set[str], allowed_numbers: set[float],
                  variant_values: str) -> str | None:
    """The donor's text with the target's values, or None when it would keep something of the donor's
    world (a name, a quoted value, a number) or cannot carry a value."""
    mapping = value_map(donor, target)
    if mapping is None:
        return None
    strings, numbers = mapping
    cities = airport_cities()
    for old, new in strings.items():  # an airport the donor calls by its own name cannot become another one
        if old != new and any(_word_in(n, donor.text) for n in _AIRPORT_NAMES.get(old, ())):
            return None  # 'John F. Kennedy (JFK)' would read 'John F. Kennedy (OKD)'
    for old, new in list(strings.items()):  # an airport's city goes with its code ('Los Angeles' for LAX)
        if old in cities and new in cities and cities[old] != cities[new]:
            if strings.setdefault(cities[old], cities[new]) != cities[new]:
                return None
    companies = ticker_companies()
    for old, new in list(strings.items()):  # a ticker's company goes with it ('Zeta Corp' for ZETA)
        if old in companies and companies[old] != companies.get(new):
            name = companies[old]
            if re.search(rf"\b{re.escape(name.split()[0])}", donor.text):  # in its own case: not the ticker
                if new not in companies or strings.setdefault(name, companies[new]) != companies[new]:
                    return None
    caps = {o: n for o, n in strings.items() if _CODE.fullmatch(o)}
    text = donor.text
    for old, new in caps.items():  # a ticker or an airport code in its own case only: 'ZETA', not 'Zeta Corp'
        text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(old)}(?![A-Za-z0-9])", new, text)
    rest = {o: n for o, n in strings.items() if o not in caps}
    text = substitute_numbers(Substitution(rest).text(text), numbers)
    for new in strings.values():  # 'a business class' -> 'an economy class'
        if new[:1].isalpha() and new not in donor.text:
            article = "an" if new[0].lower() in "aeiou" else "a"
            text = re.sub(rf"\b([Aa])n? (?={re.escape(new)}\b)",
                          lambda m, a=article: (a.capitalize() if m.group(1) == "A" else a) + " ", text)
    lower = text.lower()
    new_values = {v.lower() for v in strings.values()}
    if any(e in donor.entities and e not in world and e not in new_values for e in _phrases(lower)):
        return None
    ours = {c.lower() for code, c in cities.items() if _word_in(code, variant_values)} | world
    named = {c for code, c in cities.items()
             for f in (code, c, *CITY_ALIASES.get(c, ()), *_AIRPORT_NAMES.get(code, ())) if _word_in(f, text)}
    ours |= {c.lower() for c in named if any(_word_in(c, v) for v in strings.values())}  # 'Crescent Hollow, Spring, TX'
    if any(c.lower() not in ours for c in named):
        return None  # an airport of the donor's trip (its code, city or name) the variant does not fly
    known = variant_values.lower()
    for m in _QUOTED.finditer(text):
        quoted = m.group(0)[1:-1].strip().lower()
        if quoted and quoted not in world and quoted not in known:
            return None
    if not _numbers(text) <= allowed_numbers:
        return None
    return text


def _user_messages(turn: list[Message]) -> int:
    return sum(m.role == "user" for m in turn)


def _measure(task: Task, trace: Trace) -> tuple[list[dict[str, int]], Any, list]:
    sources = classify_arguments(task, trace)
    per_turn: list[dict[str, int]] = [{} for _ in task.ground_truth]
    for a in sources:
        per_turn[a.turn][a.source] = per_turn[a.turn].get(a.source, 0) + 1
    return per_turn, information_structure(task, trace, sources), sources


def _state_ok(task: Task, trace: Trace, sources: list, turns: set[int]) -> set[tuple[int, int, str]]:
    """State-sourced argument slots of ``turns`` that the text singles out."""
    recs = {(r.turn, r.index): r for r in trace.calls}
    states: dict = {}
    out = set()
    for a in sources:
        if a.source != "state" or a.turn not in turns or (a.turn, a.index) not in recs:
            continue
        rec = recs[(a.turn, a.index)]
        if rec.cls not in states:
            states[rec.cls] = public_state(task, rec.cls)
        if state_obtainable(rec.args.get(a.param), rec, states[rec.cls], user_text_upto(task, a.turn)):
            out.add((a.turn, a.index, a.param))
    return out


def _mismatch_keys(seed_info: Any, info: Any) -> set[tuple[str, int]]:
    return {(m.reason, m.turn) for m in structure_mismatches(seed_info, info)}


def _rebased(target: tuple[Slot, ...], start: int, stop: int, whole: bool = False) -> tuple[Slot, ...]:
    """The slots of calls ``start:stop``, re-indexed from 0; the hidden slots of implicit calls
    (:func:`rods_agents.variation.turn_bank.explicit_calls`) only for the ``whole`` turn."""
    return tuple(replace(x, index=x.index - start) if x.index >= 0 else x for x in target
                 if (start <= x.index < stop) or (whole and x.index < 0))


# a sentence saying that a file is somewhere else without naming where ('The file is somewhere inside the file
# system.'): the only words sending the assistant to look for it before an implicit cd
_WHERE_HINT = re.compile(r"\b(somewh?ere|some where)\b|\b(?:inside|within|in) (?:the|my|a|some|one of the) "
                         r"(?:file ?system|sub-?director(?:y|ies)|sub-?folders?|other folders?)\b", re.I)


def with_where_hints(text: str, span: str) -> str:
    """``text`` with the sentences of ``span`` that say a thing is somewhere else without naming where, and ask for
    nothing, kept at its end: new words for the request dropped 'The file is somewhere inside the file system.', the
    one hint that the file must be found first (reads 9 and 10, miss_param_44)."""
    lex = lexicon().methods
    kept = [x for x in re.split(r"(?<=[.?!])\s+", span.strip()) if _WHERE_HINT.search(x) and x not in text
            and not any(p.search(x) for pats, _ in lex.values() for p in pats)]
    return " ".join([_sentence(text), *kept]) if kept else text


_IDENTITY = re.compile(r"[^.?!]*\b(?:I am|I'm|[Mm]y name is|[Tt]his is)\s+([A-Z][a-z]+)\b[^.?!]*[.?!]?")
IDENTITY_WORDS = 8  # an identity sentence longer than this carries a story of its own: the turn keeps its words


def with_identity(text: str, span: str, world: set[str]) -> str | None:
    """``text`` opened with the sentences of ``span`` in which the user says who they are by a name of the task's
    world ('I am Alice.' where the messaging state's current user is someone else): new words for the request
    dropped it, and the assistant no longer had to notice that Alice is not the one logged in (read 15,
    miss_func_137). None when such a sentence is too long to carry alone (the turn then keeps its words)."""
    kept = []
    for m in _IDENTITY.finditer(span):
        if m.group(1).lower() in world and not _word_in(m.group(1), text):
            sentence = m.group(0).strip()
            if len(sentence.split()) > IDENTITY_WORDS:
                return None
            kept.append(_sentence(sentence))
    return " ".join([*kept, text]) if kept else text


def _sentence(text: str) -> str:
    """``text`` ending as a sentence does: a full stop added unless it ends in one, inside a closing quote too
    ('tell them: "Unexpected charge found."', never '..."."')."""
    text = text.strip()
    return text if text[-1:] in ".?!" or (text[-1:] in "\"'" and text[-2:-1] in ".?!") else text + "."


def _ordered(pool: list[Donor], seed: Task, turn: int, start: int, stop: int, rng: Any, slot: int | None) -> list[Donor]:
    """The donors in the order they are tried: shuffled (for a sibling slot, one order per scenario and turn,
    :func:`_find` then picks among the fitting ones by the slot, so siblings take other donors); an opening
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


def _scalars(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _said(value: Any, text: str, dates: set[str], nums: set[float]) -> bool:
    """``value`` is written in ``text``: as itself (any case), an ISO date in words, a number in any form, an
    airport code by its city's name."""
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, int | float):
        return float(value) in nums
    if not isinstance(value, str) or len(value) < 3:
        return False
    if value.lower() in text.lower() or stated_as_date(value, dates):
        return True
    city = airport_cities().get(value)
    return bool(city) and any(_word_in(c, text) for c in (city, *CITY_ALIASES.get(city, ())))


def keeps_said(text: str, target: tuple[Slot, ...], span: str) -> bool:
    """Every value of ``target`` that the replaced words (``span``) write, ``text`` writes too: a donor that
    leaves a value to an earlier turn of its own conversation ('book the flight' after a turn naming it)
    would leave the variant's value unsaid, which the re-measure then rejects (a wasted try)."""
    span_dates, dates, span_nums, nums = _dates(span), _dates(text), _numbers(span), _numbers(text)
    for x in target:
        if x.flag or x.source == "withheld":
            continue
        for v in _scalars(json.loads(x.value)):
            if _said(v, span, span_dates, span_nums) and not _said(v, text, dates, nums):
                return False
    return True


def says_no_more(text: str, target: tuple[Slot, ...], span: str) -> bool:
    """Every value of ``target`` that ``text`` writes, the replaced words (``span``) write too, options included:
    a sentence that repeats the token, the route or the class the seed's turn left to an earlier turn ('book it
    as we discussed'), or names the option the seed described ('the climate settings' for 'the AC temperature'),
    makes the turn easier (issue 13's independent reads: 12 and 9 of 30); so does the ticker for the company
    the seed names or the ISO date for its words (:func:`_said_as_is`)."""
    dates, span_dates, span_nums, nums = _dates(text), _dates(span), _numbers(span), _numbers(text)
    for x in target:
        if x.source == "withheld":
            continue
        for v in _scalars(json.loads(x.value)):
            if isinstance(v, bool) or not _said(v, text, dates, nums):
                continue
            if not _said(v, span, span_dates, span_nums) or (_said_as_is(v, text, nums)
                                                             and not _said_as_is(v, span, span_nums)):
                return False  # the same form only: a city for the city, never the code for the city
    return True


def says_all(slots: tuple[Slot, ...], text: str) -> bool:
    """Every value of ``slots`` is written in ``text`` as a word of its own (a number in any form): 'research' inside
    'research_notes.txt' names no folder, so the context sentence 'In research directory, ...' stays."""
    nums = _numbers(text)

    def said(v: Any) -> bool:
        if isinstance(v, int | float) and not isinstance(v, bool):
            return float(v) in nums
        return isinstance(v, str) and re.search(rf"(?<![\w.\-]){re.escape(v)}(?![\w\-]|\.\w)", text, re.I) is not None
    return all(said(v) for x in slots for v in _scalars(json.loads(x.value)))


def _said_as_is(value: Any, text: str, nums: set[float]) -> bool:
    """``value`` is written in ``text`` as it is: a code in its own case as a word ('Zeta Corp' does not say ZETA,
    'Los Angeles' does not say LAX), a string in any case, a number in any form. A sentence that writes the ticker
    for a company the seed names, the code for its city or the ISO date for its words hands the assistant a step."""
    if isinstance(value, int | float):
        return float(value) in nums
    if not isinstance(value, str):
        return False
    if _CODE.fullmatch(value):
        return _word_in(value, text)
    return value.lower() in text.lower()


def named_as(value: Any, span: str) -> str | None:
    """The words ``span`` names a code by where it does not write the code itself: the airport's city ('Los
    Angeles' or 'LA' for LAX), the ticker's company ('Zeta Corp' for ZETA). A sentence written for the turn
    names the value the same way, so the lookup the seed leaves to the assistant stays left to it. A date the turn
    writes in words is written in words too ('October 15th, 2026'; without the year where the turn leaves it out)."""
    if not isinstance(value, str) or _said_as_is(value, span, set()):
        return None
    if date := _ISO.match(value):
        found = [old for old, _ in date_forms(value, value, span)]
        year, month, day = (int(x) for x in date.groups())
        forms = _date_words(year, month, day)
        return None if not found else forms[0] if any(str(year) in f for f in found) else forms[8]
    if not _CODE.fullmatch(value):
        return None
    city = airport_cities().get(value)
    for form in (*CITY_ALIASES.get(city, ()), city) if city else ():
        if _word_in(form, span):
            return form
    company = ticker_companies().get(value)
    if company and re.search(rf"\b{re.escape(company)}", span, re.I):
        return company
    return None


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
    words = phrase.lower().split()
    if not _PICK_LEAD.match(phrase) or len(words) < 2 or words[-1] not in _PICK_HEADS:
        return None
    return phrase[:1].lower() + phrase[1:]


def turn_picks(info: Any, g: int, span: str, methods: tuple[str, ...]) -> dict[str, str]:
    """Parameter -> pick phrase (:func:`pick_phrase`) for a one-call turn whose only cues are references of its
    call (by position or recency, one per parameter); {} for any other turn (a transformation or a condition
    keeps its sentence, two picks in one call read as one phrase)."""
    s = info.turns[g]
    if len(methods) != 1 or s.conditions or s.transformations or not s.references:
        return {}
    out: dict[str, str] = {}
    for r in s.references:
        phrase = pick_phrase(r.cue, span) if r.kind in ("position", "property") and r.method == methods[0] else None
        if phrase is None or r.param in out:
            return {}
        out[r.param] = phrase
    if len(set(out.values())) != len(out):
        return {}
    return out


_SPECIFIC = re.compile(r"[#@]\w+(?:\.\w+)*")  # a dot inside (@user.name), never the full stop after


PICKED = frozenset({"call", "state", "composed"})
"""Slot sources whose value the turn's words leave the assistant to pick: read from a result or the state, or built."""


def picks_something(target: tuple[Slot, ...]) -> bool:
    """Some argument of the turn is left for its words to pick (read from a result or the state, or composed). A
    turn whose every argument is stated or a documented choice has nothing a filter phrase could single out: 'an
    inventory of files that are visible and hidden' (ls -a) describes the listing, and a sentence for the same
    calls that states the same values asks for the same thing (the re-measure still checks sources and structure)."""
    return any(x.source in PICKED for x in target if not x.flag)


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
    phrases = {pick_phrase(span[a:b], span) for a, b in stray}
    if len(params) != 1 or len(phrases) != 1 or None in phrases:
        return {}
    (phrase,) = phrases
    if not all(span.lower().find(phrase.lower()) <= a and b <= span.lower().find(phrase.lower()) + len(phrase)
               for a, b in stray):
        return {}
    return {next(iter(params)): phrase}


def keeps_specifics(text: str, span: str) -> bool:
    """Every number, quoted value, hashtag and handle of the replaced words (``span``) is in ``text`` too: 'end with
    50 gallons' decides a fill of 40 even where 50 is no argument, and '#BusinessOnTheMove' may be said without
    quotes. (A phrasebook sentence writes only its call's values; a human turn is re-instantiated whole.)"""
    if not _numbers(span) <= _numbers(text):
        return False
    lower = text.lower()
    quoted = [m.group(0)[1:-1].strip().strip(",.;:").strip().lower() for m in _QUOTED.finditer(span)]
    # a quoted list ('#Journey, #SmoothRide, #Grateful') is kept when each of its items is
    return (all(q in lower or ("," in q and all(x.strip() in lower for x in q.split(",") if x.strip()))
                for q in quoted if q)
            and all(t.lower() in lower for t in _SPECIFIC.findall(span)))


_NUMBER_TEXT = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")  # where a number stands in a sentence, as written
_CONTEXT_LEAD = re.compile(r"\b(?:cvv|cvc|pin|code|id|number|no\.?|#|card|phone|zip|passport|account|year|born|birthday|"
                           r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*)\W{0,3}(?:\w+\W{1,3}){0,4}$", re.I)


def untaken_limit(sentence: str, untaken: set[float]) -> bool:
    """``sentence`` holds a number no call takes (``untaken``) that may bound the task: 'My max spending limit is
    7000' is a budget whose check lives in the words around it (read 7), which new words for the request drop. Only
    a number that reads as context passes: a year, a day of a month, or a code, id or number named as such ('I can
    provide the CVV when needed, which is 456', 'We start off on December 24, 2026'); the sentence then follows the
    new words as it is, and the task asks for the same. Any other ('up to 300 dollars', 'larger than 300') refuses."""
    for n in untaken:
        if float(n).is_integer() and 1900 <= n <= 2100:
            continue  # a year
        spots = [m for m in _NUMBER_TEXT.finditer(sentence) if float(m.group(0).replace(",", "")) == abs(n)]
        if not spots or not all(_CONTEXT_LEAD.search(sentence[:m.start()]) for m in spots):
            return True
    return False


def with_specifics(text: str, span: str, methods: tuple[str, ...], values: str, world: set[str] | None = None
                   ) -> str | None:
    """``text``, followed where it must be by the sentences of ``span`` that hold a number, a quoted value, a hashtag
    or a handle ``text`` lacks and ask for none of ``methods`` ("Your user id is 'USR001'." after the message it
    sends: the value an implicit login takes). None when such a sentence also asks for a call (it would ask twice),
    holds a number no call of the task takes that reads as a bound (:func:`untaken_limit`), or a quoted value neither
    a call nor the state (``world``) holds (``values``: the ground truth's text)."""
    if keeps_specifics(text, span):
        return text
    bounds = [0, *(m.end() for m in SENTENCE_END.finditer(span))]
    sentences = [span[a:b].strip() for a, b in zip(bounds, [*bounds[1:], len(span)], strict=True)]
    missing = [x for x in sentences if x and not keeps_specifics(text, x)]
    cues = [p for name in methods for p in lexicon().methods.get(name, ((), None))[0]]
    if not missing or any(p.search(x) for x in missing for p in cues):
        return None
    lower, taken, said = values.lower(), _numbers(values), text.lower()
    for x in missing:
        quoted = [m.group(0)[1:-1].strip().lower() for m in _QUOTED.finditer(x)]
        if any(len(q) >= 3 and q in said for q in quoted):
            return None  # it restates what the new words say: part of their request, said twice ("..., description
            # 'Y.' Details write 'Y.', priority be level 4.", read of 2026-12-03)
        if (untaken_limit(x, _numbers(x) - _numbers(text) - taken)
                or any(q and q not in lower and q not in (world or ()) for q in quoted)):
            return None
    out = f"{_sentence(text)} {' '.join(_sentence(x) for x in missing)}"
    return out if keeps_specifics(out, span) else None


def _collect(donors: list[Donor], fits: list[tuple[str, Donor]], target: tuple[Slot, ...], world: set[str],
             allowed: set[float], values: str, span: str, want: int, whole_span: bool = True) -> None:
    """Append to ``fits`` the donors that re-instantiate on ``target`` and say exactly what ``span`` says, until
    ``want`` fit; at most ``MAX_TRIES`` human donors asking for the calls the same way are tried. ``whole_span``:
    the donor words all of ``span``, so a phrasebook sentence must keep its numbers and quoted values (one call's
    sentence of several is held to that only once they are joined: :func:`_segments`)."""
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
            names = names if names is not None else world | _words(span) | _companies(world)
            if (foreign_names(text, names) or brings_cues(text, span, any(x.producer for x in target),
                                                          any(x.source == "call" for x in target))
                    or names_other_work(text, world, values)):
                continue  # a person or a thing of the donor's own story, or its own pick ('the first file you find')
        if d.scenario == "phrasebook" and whole_span and text is not None:
            text = with_specifics(text, span, d.methods, values, world)
        if (text is not None and keeps_said(text, target, span) and says_no_more(text, target, span)
                and source_as_said(text, d.methods, span) and asked_as_said(text, d.methods, span)
                and not names_other_option(text, d.methods, target)):
            fits.append((text, d))


def asked_as_said(text: str, methods: tuple[str, ...], span: str) -> bool:
    """A call the seed's turn asks for only by stating its value ('My travel funds should not exceed $2000' for
    ``set_budget_limit``: no word of the lexicon names it) is asked for the same way in ``text``: 'Please cap my
    travel spending at $1500' names what the assistant had to infer (read 15, base_185). For the methods of
    ``skill_classes.json`` ``asked_by_value``."""
    lex, by_value = lexicon().methods, set(knowledge.skill_classes().get("asked_by_value", ()))
    return all(any(p.search(text) for p in lex[m][0]) <= any(p.search(span) for p in lex[m][0])
               for m in methods if m in lex and m in by_value)


def names_other_option(text: str, methods: tuple[str, ...], target: tuple[Slot, ...]) -> bool:
    """``text`` says another option of a documented choice (``choice_words.json``) and not the call's own: a human
    turn asking 'how many characters of text remain' (its wc counted characters) for a count of lines, which the
    value map cannot see when the option is a one-letter value its words never write (read of 2026-12-03). The
    faithfulness check :func:`rods_agents.analysis.faithfulness.old_choice_words` holds the seed's words to the same."""
    table = choice_words()
    for x in target:
        words = table.get(f"{methods[x.index]}.{x.param}") if 0 <= x.index < len(methods) else None
        own = str(json.loads(x.value)) if words else ""
        if words and own in words and not says(words[own], text) and any(
                says(pats, text) for option, pats in words.items() if option != own):
            return True
    return False


def source_as_said(text: str, methods: tuple[str, ...], span: str) -> bool:
    """``text`` names the source of a call that has a twin ('from Google' for ``get_outside_temperature_from_google``,
    ``skill_classes.json`` ``source_words``) exactly where ``span`` does: naming it where the seed's turn asks for 'the
    temp outside' settles Google vs weather.com for the assistant (read 14); leaving it out where the turn names it
    leaves the assistant a choice the seed did not."""
    words = [w for m in methods for w in knowledge.skill_classes().get("source_words", {}).get(m, ())]
    return all((w in text.lower()) == (w in span.lower()) for w in words)


def sibling_rank(slot: int, key: str) -> int:
    """A sibling's rank among a turn's fitting donors: its slot through one permutation of the ``PICK`` slots per
    scenario and turn (``key``). Why not the slot itself: with fewer fits than siblings, ``slot % fits`` sends the
    same siblings to the same donor in every such turn (slots 1 and 5 share every turn with 1, 2 or 4 fits), so
    their texts end up near-copies (issue 13: 29 of 35 sibling rejections over 120 seeds); a permutation per turn
    spreads the collisions over other pairs in each turn."""
    order = list(range(PICK))
    random.Random(f"{key}|siblings").shuffle(order)
    return order[slot % PICK] + PICK * (slot // PICK)


def _find(pool: list[Donor], target: tuple[Slot, ...], world: set[str], allowed: set[float], values: str,
          span: str, slot: int | None = None, phrases: list[Donor] | None = None, phrases_first: bool = False,
          distinct: bool = False, whole_span: bool = True, after: str = "", key: str = "") -> tuple[str, Donor] | None:
    """A donor of ``pool`` that re-instantiates on ``target`` and states what ``span`` states: the first one, or
    for a sibling ``slot`` the slot's pick among the first ``PICK`` that fit (siblings of one scenario share
    their turns' pools, and the first fitting donor of a rotated pool is often the same one). At most
    ``MAX_TRIES`` donors that ask for the calls the same way are tried (the others are skipped at no cost).
    ``after``: the sentence this one follows in its turn; one opening as it does is taken only when no other fits
    ('Could you set the parking brake? Could you fire up the car?', read 10). ``key``: the scenario and turn, whose
    permutation of the sibling slots orders the pick (:func:`sibling_rank`)."""
    fits: list[tuple[str, Donor]] = []
    rank = None if slot is None else sibling_rank(slot, key)
    first, then = (list(phrases or []), pool) if phrases_first else (pool, list(phrases or []))
    for source in (first, then):  # a piece of a turn takes the phrasebook first: a human piece brings its story
        _collect(source, fits, target, world, allowed, values, span, PICK if slot is not None or after else 1,
                 whole_span)
    if not fits or (distinct and rank is not None and rank >= len(fits)):
        return None  # distinct: a sibling past the fitting donors words the turn in pieces, not a sibling's words
    if after:
        fits = [f for f in fits if _opener(f[0]) != _opener(after)] or fits
    return fits[0] if rank is None else fits[rank % len(fits)]


def _opener(text: str) -> str:
    """How a request opens, for variety between a turn's sentences: its first two words ('could you', 'please go')."""
    return " ".join(re.findall(r"[a-z']+", text.lower())[:2])


def _hidden_said(target: tuple[Slot, ...], span: str) -> tuple[Slot, ...]:
    """The hidden slots (values of implicit calls) that ``span`` states: a context sentence must state them too. One it
    leaves to an earlier turn ('search the file' inside the folder named a turn before) needs none, and one would
    make the turn easier; the re-measure checks the value is still obtainable as in the seed."""
    dates, nums = _dates(span), _numbers(span)
    return tuple(x for x in target if x.index < 0 and any(_said(v, span, dates, nums) for v in _scalars(json.loads(x.value))))


def _describes_withheld(text: str, target: tuple[Slot, ...]) -> bool:
    """A sentence for a miss_param turn that names what the withheld value is about ('at market price' for the
    price the next turn supplies): it answers the question the assistant must ask, wrongly. Any word of the
    withheld parameter's name counts (conservative: 'the ticket' for a withheld ticket id too)."""
    words = {w for x in target if x.source == "withheld" for w in x.param.lower().split("_") if len(w) >= 3}
    return any(re.search(rf"\b{re.escape(w)}", text, re.I) for w in words)


def _alias(value: Any, span: str, aliases: dict[str, str] | None) -> str | None:
    """The name ``span`` gives a looked-up value by (:func:`lookup_names`), or None."""
    name = (aliases or {}).get(value) if isinstance(value, str) else None
    return name if name and _word_in(name, span) else None


def lookup_names(trace: Trace, config: dict[str, Any] | None = None) -> dict[str, str]:
    """Value -> the name the ground truth looked it up by: one-argument lookups (``get_user_id(user='Bob')`` gives
    USR002) whose result is one string, and the state's name maps (MessageAPI's ``user_map``: Michael -> USR006). A
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


def _phrasebook_donors(seed: Task, turn: int, start: int, methods: tuple[str, ...], target: tuple[Slot, ...], signature: str,
                      used: set[str], picked: set[str], span: str = "", earlier: str = "",
                      picks: dict[str, str] | None = None, aliases: dict[str, str] | None = None,
                      describing: bool = False) -> list[Donor]:
    """The phrasebook's donors for a one-call segment, or two calls a frame asks for in one request
    (:mod:`rods_agents.variation.phrasebook`), in one order per scenario and turn (siblings pick among them by their slot), the ones a turn already uses left out.
    ``describing``: the phrasings describing a free text of their own (:func:`_adopted`)."""
    picks = picks or {}
    own = [x for x in target if 0 <= x.index < len(methods)]  # the run's calls, no hidden slots
    named = {x.param: words for x in own if x.param not in picks
             and (words := named_as(json.loads(x.value), span) or _alias(json.loads(x.value), span, aliases))}
    # a code an earlier turn named for its lookup ('the nearest airport to Rivermist', then 'book that flight'): left
    # to that turn, as a value it said as it is would be
    looked_up = {x.param for x in own if x.source == "state" and not x.producer
                 and x.param not in named and all(named_by_lookup(v, earlier) for v in _scalars(json.loads(x.value)))}
    if len(methods) > 2 or any(x.source in PICKED and not x.producer and not x.recipe
                                and x.param not in named and x.param not in picks and x.param not in looked_up
                                for x in own):
        return []  # a value read from the state or one of several results: the seed's words say which one
    # a value of an implicit call that the call itself takes too ('snag 100 shares of XYZ' states the symbol of the
    # implicit price lookup as well as the order's): the sentence writing the order's symbol says it
    stated = {x.value for x in own if x.source in STATED}
    hidden = tuple(x for x in _hidden_said(target, span) if x.value not in stated)
    # a value the replaced words leave out may be left out only where an earlier turn says it as it is: a value the
    # seed's turn says in words no lookup finds ('high-priority', 'end with 50 gallons', 'in pounds sterling') stays
    # said, and an option is never left out
    dates, nums, e_dates, e_nums = _dates(span), _numbers(span), _dates(earlier), _numbers(earlier)
    unsaid = frozenset(x.param for x in own if x.source in STATED and all(
        not _said(v, span, dates, nums) and _said(v, earlier, e_dates, e_nums) for v in _scalars(json.loads(x.value))))
    unsaid |= looked_up | unworded_options(methods, own, span, earlier)
    marked = not withholds_plainly(methods, own)  # a withheld value the words must say is missing
    out = [d for d in phrase_donors("+".join(methods), target, signature, unsaid - named.keys() - picks.keys(), named, picks,
                                    marked_only=marked, describing=describing)
           if d.task_id not in used and d.text not in picked and not _describes_withheld(d.text, target)]
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
                worded.append(replace(d, text=f"{ctx[(pick + k) % len(ctx)]} {_sentence(d.text)}", slots=target))
        out = worded
    elif any(x.index < 0 for x in target):  # values of implicit calls the turn leaves to an earlier one: nothing to say
        out = [replace(d, slots=target) for d in out]
    random.Random(f"{seed.scenario}|{turn}|{start}|phrasebook").shuffle(out)
    return out


_HAND_OVER = ("", "", "", "After that, ", "Then ", "Next, ", "Also, ", "Once that's done, ")


def _joined(parts: list[tuple[str, Donor]], key: str) -> str:
    """A turn's segments as one text; a phrasebook sentence after the first is handed over with a connective
    now and then ('After that, ...'), one choice per sample and segment."""
    out = []
    leads = list(_HAND_OVER)
    random.Random(key).shuffle(leads)  # one order per turn: no 'Next, ... Next, ...'
    for i, (text, d) in enumerate(parts):
        text = _sentence(text)
        if i and d.scenario == "phrasebook":
            lead = leads[i % len(leads)]
            if lead and not text.startswith(("I ", "I'")):
                text = lead + text[:1].lower() + text[1:]
        out.append(text)
    return " ".join(out)


def _assemble(seed: Task, seed_info: Any, turn: int, g: int, methods: tuple[str, ...], target: tuple[Slot, ...], world: set[str],
              allowed: set[float], values: str, used: set[str], rng: Any, slot: int | None = None, carried: str = "",
              signature: str | None = None, earlier: str = "", aliases: dict[str, str] | None = None
              ) -> tuple[str, list[Donor]] | None:
    """One wording of a turn: call by call first (a phrasebook sentence or a one-call piece of a human turn for
    each call: no other task's story comes along), else the whole turn from one donor where one fits, else the
    calls in consecutive segments (at most ``MAX_SEGMENTS``), each from a donor asking for just those calls the
    same way (longest segment first). A turn with a reference or a transformation takes only donors with
    the same cue words; a turn with a condition is never re-worded whole (None; :func:`_mixed` keeps its
    cue sentence and re-words the rest)."""
    sig = signature or portable_signature(seed_info, g)
    parsed = json.loads(sig)
    if parsed.get("conditions"):
        return None
    whole_only = signature is not None  # a withholding turn: one donor withholding the same value
    delicate = bool(parsed.get("references") or (parsed.get("transformations") and not by_recipe(seed_info, g, methods,
                                                                                                 target, carried)))
    untied: dict[str, str] | None = None  # a pick the structure tied to no call (stray_picks)
    if not delicate and not whole_only and (stray := stray_cues(carried, methods, len(methods) == 1 and any(
            x.producer for x in target))) and picks_something(target):
        untied = stray_picks(carried, stray, methods, target)
        if not untied:
            return None  # cue words the structure did not tie to a call: _mixed keeps their sentences
    if (delicate or untied) and not whole_only and (picks := untied or turn_picks(seed_info, g, carried, methods)):
        whole = _rebased(target, 0, 1, True)
        phrases = _phrasebook_donors(seed, turn, 0, methods, whole, sig, used, set(), carried, earlier, picks, aliases)
        found = _find([], whole, world, allowed, values, carried, slot, phrases, True, key=f"{seed.scenario}|{turn}|0")
        if found is not None:
            return _sentence(found[0]), [found[1]]
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
        return bool(x.recipe) or (isinstance(value, str) and _ISO.match(value) is not None
                                  and named_as(value, span) is not None)

    built = Counter((methods[x.index], x.param) for x in target if 0 <= x.index < len(methods) and worded_alike(x))
    wanted = Counter((t.method, t.param) for t in info.turns[g].transformations)
    return bool(wanted) and all(built[k] >= n for k, n in wanted.items())


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
                if d.task_id not in used and d.text not in picked]
            pool = _ordered(pool, seed, turn, start, stop, rng, slot)
            seg_target = _rebased(target, start, stop, (start, stop) == (0, n))
            # a miss_param turn withholding a value of its one call: a sentence for that call without the value
            # (the re-measure checks the same parameter is still the one withheld)
            phrases = [] if delicate or (whole_only and n > 1) else _phrasebook_donors(
                seed, turn, start, methods[start:stop], seg_target, seg_sig, used, picked, carried, earlier,
                aliases=aliases)
            found = _find(pool, seg_target, world, allowed, values, carried, slot, phrases, (start, stop) != (0, n) or n == 1,
                          distinct=(start, stop) == (0, n) and n > 1 and not (delicate or whole_only),
                          whole_span=(start, stop) == (0, n), after=parts[-1][0] if parts else "",
                          key=f"{seed.scenario}|{turn}|{start}|{stop}")
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
        text = with_specifics(text, carried, methods, values, world)  # a number or quoted value no segment says
        if text is None:
            return None
    hidden = _hidden_said(target, carried)
    if hidden and len(parts) > 1 and not says_all(hidden, text):  # the values of implicit calls no segment carries
        ctx = [c for c in context_sentences(hidden) if says_no_more(c, hidden, carried)]
        if not ctx:
            return None
        text = f"{ctx[random.Random(f'{seed.scenario}|{turn}|{slot}|context').randrange(len(ctx))]} {text}"
    return text, [d for _, d in parts]


def _compound_cuts(text: str, info: Any, g: int, methods: tuple[str, ...], target: tuple[Slot, ...]) -> set[int]:
    """Call indices ``i`` where a turn's wording must not be cut between calls ``i - 1`` and ``i``: both take a
    value the seed's turn says once. "Secure 'TeamNotes.txt': copy it to the archive under the name
    IdeasArchive.txt" is a copy, a cd and a rename of that copy; worded call by call ('Copy TeamNotes.txt over to
    Archived. Move TeamNotes.txt over to IdeasArchive.txt.') it reads as renaming the original, and it spells
    out the steps the seed left to the assistant (read 5)."""
    stated: dict[int, set[str]] = {}
    for x in target:
        if x.index >= 0 and x.source == "user":
            stated.setdefault(x.index, set()).update(str(v) for v in _scalars(json.loads(x.value)) if isinstance(v, str))
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
        return None
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
            and not any(e <= a and _ATTACHED.fullmatch(text[e:a]) for e in attached)]


_ATTACHED = re.compile(r"\s*,?\s*(?:(?:that|which)\s+)?(?:(?:we|i|you)\s+)?", re.I)


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


def _locked(text: str, info: Any, g: int, units: list[tuple[int, int, int, int]]) -> set[int] | None:
    """The units whose words hold a condition, a reference or a transformation cue: they keep the seed's
    wording (the cue decides the ground truth). None when a cue cannot be found in the text."""
    s = info.turns[g]
    lower = text.lower()
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
        if at < 0:
            return None
        end = at + len(cue.strip())
        out.update(k for k, (_, _, lo, hi) in enumerate(units) if lo < end and at < hi)
    for at, end in cue_spans(text):  # cue words the structure did not tie to a call stay too
        out.update(k for k, (_, _, lo, hi) in enumerate(units) if lo < end and at < hi)
    return out


def drops_request(span: str, words: str, methods: tuple[str, ...], a: int, b: int) -> bool:
    """True when ``span``, replaced by ``words`` that ask for ``methods[a:b]``, holds lexicon words of another call
    of the turn that ``words`` lacks: the replacement would drop a request ('fill the tank with 40 more liters'
    asks for the fill as well as the liters-to-gallons conversion whose value it states; re-worded as the
    conversion alone, nobody asks for the fill, though 'Round the fill amount' later keeps the fill explicit)."""
    lex = lexicon().methods
    others = {methods[i] for i in range(len(methods)) if not a <= i < b} - set(methods[a:b])
    return any(p.search(span) and not p.search(words) for name in others for p in lex.get(name, ((), None))[0])


def _mixed(seed: Task, base_info: Any, turn: int, g: int, methods: tuple[str, ...], target: tuple[Slot, ...],
           world: set[str], allowed: set[float], values: str, used: set[str], rng: Any, slot: int | None,
           carried: str, earlier: str = "", aliases: dict[str, str] | None = None) -> tuple[str, list[Donor]] | None:
    """A turn no donor words whole, re-worded unit by unit (:func:`_units`): each run of units without a cue
    from a donor asking for just those calls the same way (longest run first), the units with a condition,
    reference or transformation cue, and those no donor fits, in the carried wording. So a conditioned or
    referencing turn keeps its cue sentence ('Should any tire fall below 40 PSI, ...') and gets new words for
    the rest, and a turn with one call no donor asks for keeps only that call's sentence."""
    units = _units(carried, base_info, g, methods, target)
    if units is None or len(units) < 2:
        return None
    locked = _locked(carried, base_info, g, units)
    if locked is None or len(locked) == len(units):
        return None
    pieces: list[tuple[int, int] | str] = []  # a carried span, or a donor's words
    donors: list[Donor] = []
    k = 0
    while k < len(units):
        a, _, lo, hi = units[k]
        if k in locked:
            pieces.append((lo, hi))
            k += 1
            continue
        last = k  # a run of units asking for consecutive calls, in order
        while last + 1 < len(units) and last + 1 not in locked and units[last + 1][0] == units[last][1]:
            last += 1
        found = None
        for m in range(last, k - 1, -1):
            b = units[m][1]
            pool = [d for d in donors_for(methods[a:b], segment_signature(), knowledge.donor_key(seed))
                    if d.task_id not in used and d.text not in {x.text for x in donors}]
            phrases = _phrasebook_donors(seed, turn, a, methods[a:b], _rebased(target, a, b), segment_signature(), used,
                                         {x.text for x in donors}, carried[lo:units[m][3]], earlier, aliases=aliases)
            one = _find(_ordered(pool, seed, turn, a, b, rng, slot), _rebased(target, a, b), world, allowed, values,
                        carried[lo:units[m][3]], slot, phrases, True, key=f"{seed.scenario}|{turn}|{a}|{b}")
            found = None if one is None else (one[0], [one[1]])  # (words, their donors)
            if found is None and b - a > 1:  # several calls no donor asks for together: a sentence per call
                found = _segments(seed, base_info, turn, g, methods[a:b], _rebased(target, a, b), world, allowed, values,
                                  used | {x.task_id for x in donors}, rng, slot, carried[lo:units[m][3]],
                                  segment_signature(), earlier, single_only=True, aliases=aliases)
            if found is not None and drops_request(carried[lo:units[m][3]], found[0], methods, a, b):
                found = None
            if found is not None:
                break
        if found is None:
            pieces.append((lo, hi))
            k += 1
            continue
        pieces.append(_sentence(found[0]))
        donors.extend(found[1])
        k = m + 1
    if not donors:
        return None
    merged: list[tuple[int, int] | str] = []
    for p in pieces:  # carried spans side by side stay one span (a condition cut at ', then' stays whole)
        if isinstance(p, tuple) and merged and isinstance(merged[-1], tuple) and merged[-1][1] == p[0]:
            merged[-1] = (merged[-1][0], p[1])
        else:
            merged.append(p)
    pieces = [p if isinstance(p, str) else _sentence(clean_piece(carried[p[0]:p[1]])) for p in merged]
    return " ".join(p for p in pieces if p), donors


def dictated(value: Any) -> bool:
    """A value that is text to be written as it is (a comment, a message, a title of three words or more, or one
    ending in a punctuation mark), not a name or a number a sentence can say bare."""
    return isinstance(value, str) and (len(value.split()) >= 3 or value.rstrip()[-1:] in tuple("!?.,"))


def _supply_texts(variant: Task, trace: Trace, info: Any, turn: int) -> list[str]:
    """New wordings of a miss_param supplying turn ('The specific file is notes.txt.'): the phrasebook's
    ``supply`` sentences for the withheld ``method.param``, then its generic ones, written with the value.
    [] for any other turn, or a value a sentence cannot carry (a list, a long text)."""
    w = next((x.withheld for x in info.turns if x.withheld is not None and x.withheld.supplied_at == turn), None)
    if w is None:
        return []
    values = withheld_value(variant, trace, w)
    if len(values) != 1 or not isinstance(values[0], str | int | float) or len(str(values[0])) > 80:
        return []
    said = "\n".join(m.content for m in variant.turns[turn] if m.role == "user")
    if not _said_as_is(values[0], said, _numbers(said)):
        return []  # the seed's answer says it otherwise ('The company is named Zeta Corp'): the ticker would be easier
    table = supply_sentences()
    own, generic = table.get(f"{w.method}.{w.param}", ()), table.get("*", ())
    if dictated(values[0]):  # words to be written as they are ('Another task done!') go in quotes, never bare:
        # "One more job done today!, please." reads as the user's own exclamation (read of 2026-12-03)
        own, generic = tuple(t for t in own if "'{v1}'" in t), table.get("*text", ())
    texts = [t.format(v1=spoken(values[0])) for t in (*own, *generic)]
    # the answer may say more than the value: "The report should be in the format of 'Kelly Total Score:
    # total_score'" supplies a format holding the name, which "Use Kelly for that." loses (read 7)
    return [t for t in texts if keeps_specifics(t, said)]


def _reword_supply(seed: Task, seed_info: Any, variant: Task, turns: list[list[Message]], trace: Trace,
                   slot: int | None) -> tuple[list[list[Message]], list[dict]]:
    """Miss_param supplying turns re-worded (:func:`_supply_texts`) where the variant's per-turn value sources
    and information structure stay as they are: the value is still supplied there and nowhere before."""
    if variant.category != "miss_param":
        return turns, []
    provenance = []
    for t in range(len(turns)):
        if _user_messages(turns[t]) != 1:
            continue
        current = variant.model_copy(update={"turns": turns})
        base_sources, base_info, _ = _measure(current, trace)
        options = _supply_texts(current, trace, base_info, t)
        if not options:
            continue
        random.Random(f"{seed.scenario}|{t}|supply").shuffle(options)
        pick = (slot or 0) % len(options)
        for text in options[pick:] + options[:pick]:
            trial_turns = [list(x) for x in turns]
            trial_turns[t] = [Message(role=m.role, content=text if m.role == "user" else m.content) for m in turns[t]]
            per_turn, info, _ = _measure(variant.model_copy(update={"turns": trial_turns}), trace)
            if per_turn == base_sources and _mismatch_keys(seed_info, info) <= _mismatch_keys(seed_info, base_info):
                turns = trial_turns
                provenance.append({"turn": t, "donors": [["phrasebook:supply", t]]})
                break
    return turns, provenance


def _leaves(obj: Any) -> set[str]:
    """The string values of a config (not its keys: 'date' is a field name, not a name of the world)."""
    if isinstance(obj, str):
        return {obj.lower()} if len(obj) >= 3 else set()
    if isinstance(obj, dict):
        return set().union(*(_leaves(v) for v in obj.values())) if obj else set()
    if isinstance(obj, list | tuple):
        return set().union(*(_leaves(v) for v in obj)) if obj else set()
    return set()


def _filler(sentence: str, world: set[str]) -> bool:
    """A sentence that states and asks nothing: no digit, no quoted value, no name of the task's world, no
    question, and no word the lexicon reads as asking for a call, a condition, a reference or a transformation
    ('Before I start packing my bags for the upcoming trip, I need to double-check a few things.'). A sentence
    such as 'Just the number and nothing else.' or 'How much is that in gallons?' says how a value is built."""
    lower = sentence.lower()
    if re.search(r"\d", sentence) or _QUOTED.search(sentence) or "?" in sentence:
        return False
    if any(_word_in(w, lower) for w in world if len(w) >= 3):
        return False
    lex = lexicon()
    patterns = [p for cues, _ in lex.methods.values() for p in cues]
    patterns += [*lex.conditions, *lex.transformations, *(p for pats in lex.references.values() for p in pats)]
    return not any(p.search(sentence) for p in patterns)


_DEMONSTRATIVE = re.compile(r"\b(?:this|that|these|those|such|said)\s+(?:\w+\s+)?([a-z]{3,})\b", re.I)
_DEICTIC = frozenset("time times morning evening afternoon week weekend month year moment point way".split())


def points_back(rest: str) -> bool:
    """``rest`` holds a demonstrative noun phrase ('this field', 'that report') whose noun it has not named before:
    its referent may be in the sentence before it. 'Word is, one sector is buzzing. Catalogue the stocks in this
    field' loses its referent when the story sentence goes ('this field' dangles, read of 2026-12-02); so the story
    sentence stays. Phrases about time ('this morning') point at nothing."""
    lower = rest.lower()
    return any(m.group(1).lower() not in _DEICTIC and m.group(1).lower()[:5] not in lower[:m.start()]
               for m in _DEMONSTRATIVE.finditer(rest))


def _trim_fillers(seed: Task, seed_info: Any, variant: Task, turns: list[list[Message]], trace: Trace,
                  keep: set[int], slot: int | None) -> tuple[list[list[Message]], list[dict]]:
    """Turns still in the seed's words (a condition, reference or transformation no donor can carry) lose
    the seed's story sentences, the ones that state nothing and whose removal leaves every value source, the
    structure and the state hints as they are; a first turn that loses its story gets another one (the
    phrasebook's ``story`` sentences for its environment). So the seed's anecdote ('As a high-ranking
    government official residing in ...') does not travel with its cue into every sibling."""
    world = {v.lower() for v in call_values(variant)} | _leaves(variant.initial_config)
    provenance = []
    for t in range(len(turns)):
        if t in keep or _user_messages(turns[t]) != 1:
            continue
        text = next(m.content for m in turns[t] if m.role == "user")
        bounds = piece_bounds(text)
        pieces = [text[a:b] for a, b in zip(bounds, [*bounds[1:], len(text)], strict=True)]
        if len(pieces) < 2:
            continue
        current = variant.model_copy(update={"turns": turns})
        base_sources, base_info, sources = _measure(current, trace)
        base_mismatch = _mismatch_keys(seed_info, base_info)
        state_ok = _state_ok(current, trace, sources, {t})
        dropped = 0
        for i in range(len(pieces)):
            if any(pieces[:i]) or not _filler(pieces[i], world) or sum(1 for p in pieces if p) < 2:
                break  # only the story the turn opens with: a sentence after its first request is part of it
            if points_back(" ".join(pieces[i + 1:])):
                break  # the rest points back at what the story sentence names
            trial_pieces = [p if k != i else "" for k, p in enumerate(pieces)]
            new_text = clean_piece(" ".join(p.strip() for p in trial_pieces if p.strip()))
            trial_turns = [list(x) for x in turns]
            trial_turns[t] = [Message(role=m.role, content=new_text if m.role == "user" else m.content) for m in turns[t]]
            trial = variant.model_copy(update={"turns": trial_turns})
            per_turn, info, trial_sources = _measure(trial, trace)
            if (per_turn == base_sources and _mismatch_keys(seed_info, info) <= base_mismatch
                    and state_ok <= _state_ok(trial, trace, trial_sources, {t})):
                pieces, turns, dropped = trial_pieces, trial_turns, dropped + 1
        if dropped and t == 0:
            first = next((r.cls for r in trace.calls if r.turn == asked_turn(variant, 0)), None)
            stories = story_sentences([first] if first else variant.involved_classes)
            if stories:
                story = stories[random.Random(f"{seed.scenario}|{slot}|story").randrange(len(stories))]
                trial_turns = [list(x) for x in turns]
                trial_turns[0] = [Message(role=m.role, content=f"{story} {m.content}" if m.role == "user" else m.content)
                                  for m in turns[0]]
                per_turn, info, _ = _measure(variant.model_copy(update={"turns": trial_turns}), trace)
                if per_turn == base_sources and _mismatch_keys(seed_info, info) <= base_mismatch:
                    turns = trial_turns
        if dropped:
            provenance.append({"turn": t, "donors": [["phrasebook:trimmed", dropped]]})
    return turns, provenance


def _adopted(seed: Task, seed_info: Any, variant: Task, turns: list[list[Message]], t: int, g: int,
             methods: tuple[str, ...], target: tuple[Slot, ...], world: set[str], allowed: set[float], values: str,
             used: set[str], rng: Any, slot: int | None, carried: str) -> Iterator[tuple[str, Donor, tuple[Slot, ...]]]:
    """Wordings of turn ``t`` by whole human turns, or phrasebook sentences marked ``describes``, that describe a free
    text of their own (a concern for customer support), each with the target slots carrying the donor's text
    (:mod:`rods_agents.variation.free_text`): the last resort for a turn no donor words on the plan's own text.
    Yields nothing where another turn or call names what the plan's text is about, or the turn holds a condition."""
    sig = portable_signature(seed_info, g)
    parsed = json.loads(sig)
    if parsed.get("conditions"):
        return
    others = " ".join([*(m.content for x, turn in enumerate(turns) if x != t for m in turn if m.role == "user"),
                       *(c for x, calls in enumerate(variant.ground_truth) if x != g for c in calls)])
    described_values = [json.loads(x.value) for x in target
                        if 0 <= x.index < len(methods) and described(x, methods[x.index], carried)]
    if not described_values or any(tied_elsewhere(v, others) for v in described_values):
        return
    delicate = bool(parsed.get("references") or parsed.get("transformations"))
    pool = _ordered([d for d in donors_for(methods, sig, knowledge.donor_key(seed), cue_key(seed_info, g) if delicate else None)
                     if d.task_id not in used], seed, t, 0, len(methods), rng, slot)
    if len(methods) == 1 and not delicate and all(x.index >= 0 for x in target):  # and the phrasebook's described texts
        earlier = " ".join(m.content for x in turns[:t] for m in x if m.role == "user")
        pool += _phrasebook_donors(seed, t, 0, methods, target, sig, used, set(), carried, earlier, describing=True)
    if slot is not None and pool:
        k = sibling_rank(slot, f"{seed.scenario}|{t}|adopt") % len(pool)
        pool = pool[k:] + pool[:k]
    for d in pool:
        after = adopted_slots(methods, target, carried, d)
        if after is None:
            continue
        new = {json.loads(y.value) for x, y in zip(target, after, strict=True) if x.value != y.value}
        span = carried
        for x, y in zip(target, after, strict=True):  # a text the seed writes out unquoted: the donor's, there
            if x.value != y.value:
                span = span.replace(json.loads(x.value).strip(" ."), json.loads(y.value).strip(" ."))
        fits: list[tuple[str, Donor]] = []
        _collect([d], fits, after, world | {v.lower() for v in new}, allowed, " ".join([values, *new]), span, 1)
        text = with_identity(_sentence(fits[0][0]), carried, world) if fits else None
        if text is not None:
            yield text, d, after


def _worded(seed_info: Any, variant: Task, trace: Trace, turns: list[list[Message]], t: int, text: str,
            measured: tuple[Any, set, set, set[int]], ground_truth: list[list[str]] | None = None
            ) -> tuple[Task, Trace, list[list[Message]]] | None:
    """The variant with turn ``t`` worded ``text`` (and, for an adopted free text, ``ground_truth``, re-run), when it
    measures as the carried turn did: the same per-turn value sources, no new structure mismatch, every state value
    still singled out; else None. ``measured``: the carried variant's (sources, mismatches, state hints, turns)."""
    base_sources, base_mismatch, base_state_ok, candidates = measured
    trial_turns = [list(x) for x in turns]
    trial_turns[t] = [Message(role=m.role, content=text if m.role == "user" else m.content) for m in turns[t]]
    trial = variant.model_copy(update={"turns": trial_turns, **({} if ground_truth is None else {"ground_truth": ground_truth})})
    trial_trace = trace if ground_truth is None else trace_task(trial)
    if len(trial_trace.errors) > len(trace.errors):
        return None
    per_turn, info, trial_sources = _measure(trial, trial_trace)
    if per_turn != base_sources or not _mismatch_keys(seed_info, info) <= base_mismatch:
        return None
    if not base_state_ok <= _state_ok(trial, trial_trace, trial_sources, candidates):
        return None
    return trial, trial_trace, trial_turns


def transplant_turns(seed: Task, seed_info: Any, variant: Task, rng: Any, slot: int | None = None
                     ) -> tuple[list[list[Message]], list[dict]]:
    """The variant's turns with as many as possible replaced by re-instantiated donor turns, and the
    provenance of each replacement ({'turn', 'donor', 'donor_turn'}). ``variant`` holds the carried turns,
    the plan's ground truth and config; ``seed_info`` is the seed's information structure."""
    if rng is None:
        rng = random.Random(f"{seed.id}|transplant")
    trace = trace_task(variant)
    base_sources, base_info, sources = _measure(variant, trace)
    base_mismatch = _mismatch_keys(seed_info, base_info)
    held = {t: h for t in range(len(variant.turns)) if variant.category == "miss_param"
            and _user_messages(variant.turns[t]) == 1
            and (h := withholding_calls(variant, trace, sources, seed_info, t)) is not None}
    candidates = [t for t in range(len(variant.turns)) if (asked_turn(variant, t) is not None or t in held)
                  and _user_messages(variant.turns[t]) == 1]
    base_state_ok = _state_ok(variant, trace, sources, set(candidates))
    measured = (base_sources, base_mismatch, base_state_ok, set(candidates))  # what a re-worded turn must keep
    world = world_strings(variant, trace)
    aliases = lookup_names(trace, variant.initial_config)
    gt_text = " ".join(c for calls in variant.ground_truth for c in calls)
    turns = [list(t) for t in variant.turns]
    used: set[str] = set()
    provenance: list[dict] = []
    for t in candidates:
        if t in held:
            g, (methods, target, signature) = t + 1, held[t]
        else:
            g, signature = asked_turn(variant, t), None
            assert g is not None
            methods, target = explicit_calls(seed_info, g, *turn_slots(trace, sources, g))
        if not methods or seed_info.turns[g].unresolved_picks:
            continue  # words that pick a value the lexicon cannot read ('the one with a substantial order value',
            # read 10) stay the seed's: new words would leave the pick to no words, and the re-measure cannot tell
        carried = next(m.content for m in turns[t] if m.role == "user")
        if quoted_later(carried, variant, t):
            continue  # 'Write my last question in it': a later call writes these words, so they stay (read 15)
        allowed = _numbers(gt_text) | _numbers(carried)
        tried: set[str] = set()
        for i in range(ASSEMBLIES):
            s_i = None if slot is None else slot + i
            earlier = " ".join(m.content for x in turns[:t] for m in x if m.role == "user")
            built = _assemble(seed, seed_info, t, g, methods, target, world, allowed, gt_text, used, rng, s_i, carried,
                              signature, earlier, aliases)
            if built is None and signature is None:
                built = _mixed(seed, base_info, t, g, methods, target, world, allowed, gt_text, used, rng, s_i, carried,
                               earlier, aliases)
            if built is None:
                break
            text, donors = built
            text = with_identity(with_where_hints(text, carried), carried, world)
            if text is None:
                break
            if text in tried or text == carried:
                continue
            tried.add(text)
            took = _worded(seed_info, variant, trace, turns, t, text, measured)
            if took is None:
                continue
            turns = took[2]
            used.update(d.task_id for d in donors)
            provenance.append({"turn": t, "donors": [[d.task_id, d.turn] for d in donors]})
            break
        if t in held or any(p["turn"] == t for p in provenance):
            continue
        for text, donor, after in _adopted(seed, seed_info, variant, turns, t, g, methods, target, world, allowed,
                                           gt_text, used, rng, slot, carried):
            ground_truth = adopted_ground_truth(variant.ground_truth, g, methods, target, after)
            took = None if ground_truth is None else _worded(seed_info, variant, trace, turns, t, text, measured,
                                                              ground_truth)
            if took is not None:
                variant, trace, turns = took
                gt_text = " ".join(c for calls in variant.ground_truth for c in calls)
                world = world_strings(variant, trace)
                used.add(donor.task_id)
                provenance.append({"turn": t, "donors": [[donor.task_id, donor.turn]], "adopted": [
                    {"turn": g, "method": methods[x.index], "param": x.param, "from": json.loads(x.value),
                     "to": json.loads(y.value)} for x, y in zip(target, after, strict=True) if x.value != y.value]})
                break
    turns, supplied = _reword_supply(seed, seed_info, variant, turns, trace, slot)
    reworded = {p["turn"] for p in provenance + supplied}
    turns, trimmed = _trim_fillers(seed, seed_info, variant, turns, trace, reworded, slot)
    return turns, provenance + supplied + trimmed


__all__ = ["reinstantiate", "transplant_turns", "value_map"]
