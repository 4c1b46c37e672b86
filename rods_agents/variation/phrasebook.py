"""Ways to ask for one call, written as data: the offline backbone's second source of wording.

Why: the human turns of the train split (:mod:`rods_agents.variation.turn_bank`) are natural, but few of
them ask for a given run of calls the same way, so the eight samples of a scenario (four categories x two
variants) kept picking the same donor, or none, and re-told their seed's sentences (issue 13: 306 of 800
samples were near-copies of a sibling, a third of all turns kept the seed's words). A phrasebook gives every
method several phrasings, so any run of explicit calls can be worded and siblings word it differently.

A phrasing asks for exactly one call and states exactly what the seed's turn states for it:

- ``{param}`` writes a value the user states (a string as it is, a number without a trailing ``.0``, a list
  as 'a, b and c'); ``{param|VALUE=words|VALUE2=words}`` writes the words for a documented option (VALUE is
  the option as a string, or JSON for booleans and lists: ``{unlock|false=lock|true=unlock}``);
- ``"when": {"param": value}`` marks an option the sentence's own words state ('Fire up the engine' is
  ``ignitionMode='START'``);
- a value the assistant reads from a result or the state, or a miss_param turn withholds, has no placeholder
  (the phrasing asks for the call without it, as the seed's turn does); except a code the seed's turn names by
  other words, which ``{param}`` writes in those words (the city for an airport, the company for a ticker, a date
  in words: :func:`rods_agents.variation.saying.named_as`), so the lookup stays the assistant's;
- ``"pick": "param"`` marks a phrasing whose ``{param}`` stands where a noun phrase goes ('Pull up the numbers
  for {symbol}.'), for a value the seed's turn picks by its place in a list or by recency: the seed's own words for
  the pick ('the first stock listed in my watchlist', 'the most recent order ID') are written there
  (:func:`rods_agents.variation.cues.pick_phrase`), so the new sentence leaves the same pick to the
  assistant. Only such phrasings fit a picked value, and they fit nothing else. A list (``["travel_from",
  "travel_to"]``) marks a route the turn picks from one list ('from the first airport to the second one in the
  system's list': :func:`rods_agents.variation.cues.route_picks`);
- ``"withholds": "param"`` marks a phrasing for a miss_param turn that leaves ``param`` out and says so ('Post
  {content} with the right hashtag.' for the tweet's tags): a value the call can go without (an optional tag, a
  default line count) or one a person fills in unasked (a fuel amount: 'fill it up') must be missed in words, so
  only such phrasings word a turn withholding it
  (:func:`rods_agents.variation.donor_search.withholds_plainly`); a plain phrasing without a required value asks
  for the call all the same ('Please copy notes.txt.': copy where?);
- ``"describes": {"param": "text"}`` marks a phrasing that describes a free text of its own for the assistant to
  compose ('I don't eat meat, so I need a vegetarian meal on board.' for the message 'Request for a vegetarian meal
  on my flight.'): it words only a turn describing another such text, which then takes this one
  (:mod:`rods_agents.variation.free_text`), never a call whose text it does not describe;
- ``"from": {"param": ["method", ...]}`` marks a phrasing that points at a value read from the result of one of
  those methods, ``"*"`` for any ('Cancel the booking I just made.' for ``cancel_booking.booking_id`` from ``book_flight``;
  'I'd like those numbers averaged.' for a list of numbers the last results hold,
  :func:`rods_agents.variation.turn_bank.gathered_producer`). Such
  a phrasing fits only a call whose value that result singles out
  (:func:`rods_agents.variation.turn_bank.singled_producer`): one booking made, not a booking history;
- ``"same": ["param", ...]`` marks a phrasing that points back at values an earlier turn said and this one leaves
  out ('... with the same card and token as before.'): it fits only a call whose turn leaves exactly those unsaid
  (``unsaid`` in :func:`render`), never one where a value is said now, read from a result or said nowhere;
- ``"composes": {"param": "recipe"}`` marks a phrasing that asks for a value the assistant builds by a named recipe
  (``prompts/bfcl/value_recipes.json``: 'Fill the tank all the way up.' for a ``fuelAmount`` that leaves the tank at
  its capacity): it fits only a call whose value was built by that recipe
  (:func:`rods_agents.variation.turn_bank.recipe_of`), and such a value is asked for by no other phrasing.

A phrasing fits a call when its placeholders and ``when`` keys are exactly the call's stated values and
options, every ``when`` value is the call's, and its ``from`` keys are exactly the values the call reads from
a result (none for a phrasing without ``from``), each from one of the methods it names. It becomes a :class:`~rods_agents.variation.turn_bank.Donor`
carrying the call's own slots, so :mod:`rods_agents.variation.transplant` measures it like a human donor: a
phrasing that moves a value source, adds a reference or drops a condition is never kept.

A method with many parameters has more patterns of stated, withheld and read values than a list of sentences can
cover (``purchase_insurance``: five parameters, each stated, left to an earlier turn or read from a result), so a
file may also give it a *frame*: ``"frames": {method: {"heads": [...], "parts": {param: [...]}, "reads": {param:
{producer: [...]}}, "order": [...], "needs": [...]}}``. A head is a request with ``{rest}`` where the values go
('Buy {insurance_type} insurance{rest}.'); each value the call states gets one of its ``parts`` (' at ${insurance_cost}'),
each value read from a result one of its ``reads`` for that result's method (' for the flight we booked'), in
``order`` (else the parts' order); a frame applies only when the call states or reads every parameter of ``needs``.
:func:`frame_phrasings` writes the one sentence per head that fits a call, a :class:`Phrasing` like any other.

Files: ``prompts/phrasebook/<Class>.json``, one per environment class (a user class's too), each
``{"class": ..., "methods": {method: [phrasing, ...]}, "frames": {...}, "context": {...}}``; a phrasing is a string or
``{"text": ..., "when": {...}}``. ``python -m rods_agents.variation.phrasebook`` checks every file against the
catalog and the lexicon and prints, per method, how many phrasings fit the argument patterns the train turns use.
"""

from __future__ import annotations

import json
import re
import sys
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, TypeVar

from prompts import PROMPTS_DIR
from rods_agents.analysis import knowledge
from rods_agents.analysis.information_structure import lexicon
from rods_agents.variation.turn_bank import Donor, Slot

PHRASEBOOK_DIR = PROMPTS_DIR / "phrasebook"
T = TypeVar("T")
STATED = frozenset({"user", "flag"})
"""Slot sources a phrasing must write: the values the user states and the options said in words."""

_QUOTED_STOP = re.compile(r"([.?!][\"'])[.?!]$")
_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?)(\|[^{}]*)?\}")
"""``{param}``, ``{param|OPTION=words|...}``, or in a run of calls ``{method.param}`` (:func:`own_slots`)."""


@dataclass(frozen=True)
class Phrasing:
    """One way to ask for ``method``: its text, the options its words fix, the options it words by value."""

    cls: str
    method: str
    index: int
    text: str
    when: tuple[tuple[str, str], ...]  # (param, JSON value)
    fields: frozenset[str]
    choices: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]  # (param, ((option, words), ...))
    results: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (param, methods whose result it is read from)
    pick: str = ""  # the parameter(s, space-separated) whose placeholder takes the seed's words for a picked value
    withholds: str = ""  # the parameter a miss_param turn leaves out, which the words mark as missing
    describes: tuple[tuple[str, str], ...] = ()  # (param, the free text its words describe for the assistant to compose)
    composes: tuple[tuple[str, str], ...] = ()  # (param, the named recipe its words ask the assistant to build it by)
    same: frozenset[str] = frozenset()  # values said in an earlier turn that its words point back at ('the same card')

    @property
    def params(self) -> frozenset[str]:
        return self.fields | {p for p, _ in self.when} | {p for p, _ in self.describes}


def _option_key(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def parse_phrasing(cls: str, method: str, index: int, entry: str | dict) -> Phrasing:
    """A phrasebook entry as a :class:`Phrasing` (ValueError naming the file's method on a bad entry)."""
    if isinstance(entry, str):
        text, when, origin, pick, withholds, describes, composes, same = entry, {}, {}, "", "", {}, {}, []
    elif isinstance(entry, dict) and isinstance(entry.get("text"), str):
        text, when, origin = entry["text"], dict(entry.get("when") or {}), dict(entry.get("from") or {})
        pick, withholds = entry.get("pick") or "", entry.get("withholds") or ""
        describes, composes = entry.get("describes") or {}, entry.get("composes") or {}
        same = entry.get("same") or []
        if not isinstance(same, list) or not all(isinstance(v, str) and "{" + v not in text for v in same):
            raise ValueError(f"phrasebook {cls}.{method}[{index}]: 'same' lists parameters the text points back at "
                             "without writing them")
        if not isinstance(composes, dict) or not all(isinstance(v, str) and v and "{" + k not in text
                                                     for k, v in composes.items()):
            raise ValueError(f"phrasebook {cls}.{method}[{index}]: 'composes' maps a parameter the text leaves to the "
                             "assistant (no {param} for it) to a recipe name of prompts/bfcl/value_recipes.json")
        if not isinstance(describes, dict) or not all(isinstance(v, str) and v.strip() and "{" + k not in text
                                                      for k, v in describes.items()):
            raise ValueError(f"phrasebook {cls}.{method}[{index}]: 'describes' maps a parameter the text does not write "
                             "to the text its words describe")
        if isinstance(pick, list) and len(pick) > 1 and all(isinstance(v, str) for v in pick):
            pick = " ".join(pick)  # a route picked by one phrase ('from the first airport to the second one listed')
        if not isinstance(pick, str) or any("{" + v + "}" not in text for v in pick.split()):
            raise ValueError(f"phrasebook {cls}.{method}[{index}]: 'pick' names a parameter (or a list of them) the "
                             "text writes as {param}")
        if not isinstance(withholds, str) or (withholds and "{" + withholds in text):
            raise ValueError(f"phrasebook {cls}.{method}[{index}]: 'withholds' names a parameter the text leaves out")
    else:
        raise ValueError(f"phrasebook {cls}.{method}[{index}]: a phrasing is a string or "
                         "{'text', 'when', 'from', 'pick', 'withholds', 'describes', 'composes', 'same'}")
    results = []
    for param, methods in sorted(origin.items()):
        methods = [methods] if isinstance(methods, str) else methods
        if not isinstance(methods, list) or not methods or not all(isinstance(m, str) for m in methods):
            raise ValueError(f"phrasebook {cls}.{method}[{index}]: 'from' maps a parameter to a method or a list of them")
        results.append((param, tuple(methods)))
    fields, choices = set(), []
    for m in _FIELD.finditer(text):
        fields.add(m.group(1))
        if m.group(2):
            pairs = [p.split("=", 1) for p in m.group(2)[1:].split("|")]
            if any(len(p) != 2 for p in pairs):
                raise ValueError(f"phrasebook {cls}.{method}[{index}]: bad option list in {m.group(0)!r}")
            choices.append((m.group(1), tuple((k.strip(), v) for k, v in pairs)))
    return Phrasing(cls, method, index, text, tuple(sorted((k, json.dumps(v, sort_keys=True)) for k, v in when.items())),
                    frozenset(fields), tuple(choices), tuple(results), pick, withholds, tuple(sorted(describes.items())),
                    tuple(sorted(composes.items())), frozenset(same))


@lru_cache(maxsize=1)
def _files() -> tuple[tuple[str, dict], ...]:
    """Every phrasebook file as (stem, parsed JSON), read once: the tables below all come from these."""
    return tuple((path.stem, json.loads(path.read_text(encoding="utf-8"))) for path in sorted(PHRASEBOOK_DIR.glob("*.json")))


def _merged(table: str) -> dict[str, tuple[str, ...]]:
    """One keyed table of every file, the files' lists for a key joined in file order."""
    out: dict[str, list[str]] = {}
    for _, data in _files():
        for key, texts in (data.get(table) or {}).items():
            out.setdefault(key, []).extend(texts)
    return {k: tuple(v) for k, v in out.items()}


@lru_cache(maxsize=1)
def contexts() -> dict[str, tuple[str, ...]]:
    """Hidden-value key -> sentences that state values of calls a turn leaves implicit, from the files'
    ``"context"`` tables. The key joins the hidden slots' ``method.param`` in call order with '+'
    (``get_zipcode_based_on_city.city+get_zipcode_based_on_city.city``); ``{v1}``, ``{v2}``... are their
    values. 'The files I'm working with are in the {v1} folder.' states where an implicit ``cd`` goes without asking for it."""
    return _merged("context")


@lru_cache(maxsize=1)
def supply_sentences() -> dict[str, tuple[str, ...]]:
    """``method.param`` (or ``*`` for any) -> answers that supply a miss_param turn's withheld value, ``{v1}``
    the value, from the files' ``"supply"`` tables: "It's {v1}." answers the assistant's question."""
    return _merged("supply")


@lru_cache(maxsize=1)
def vague_requests() -> dict[str, tuple[str, ...]]:
    """``method.param`` withheld -> requests as vague as a miss_param turn that asks for no call ('Oh no, something
    unforeseen circumstances happened' before 'please cancel the booking'), from the files' ``"vague"`` tables: they
    name no call and no value, so the next turn still says what to do."""
    return _merged("vague")


@lru_cache(maxsize=1)
def clause_rewordings() -> dict[str, tuple[str, ...]]:
    """A clause as the seeds say it ('Should the range fall short,') -> other words that say the same
    ('If the range isn't enough,'), from the files' ``"clauses"`` tables, and a whole sentence the variants kept
    ('Please cd into {x} folder and find {w}'s {x2} report ...') from their ``"sentences"`` tables; ``{n}`` a number,
    ``{q}`` a quoted value, ``{w}``/``{c}``/``{x}`` a name (see :func:`rods_agents.variation.clause_words._compiled`).
    Applied by :mod:`rods_agents.variation.clause_words`."""
    return {**_merged("clauses"), **_merged("sentences")}


@lru_cache(maxsize=1)
def unsaid_choice_sentences() -> dict[str, tuple[str, ...]]:
    """``method.param`` -> sentences that say a choice the text never says ('Make it {words} cover.'), from the files'
    ``"unsaid_choices"`` tables (``prompts/phrasebook/choices.json``); applied by
    :mod:`rods_agents.variation.unsaid_choices`."""
    return _merged("unsaid_choices")


@lru_cache(maxsize=1)
def recency_sentences() -> dict[str, tuple[str, ...]]:
    """An id parameter ('order_id') -> sentences saying the object meant is the most recent one ('I mean the most
    recent order I placed.'), from the files' ``"recency"`` tables (``prompts/phrasebook/choices.json``); applied by
    :mod:`rods_agents.variation.recency`."""
    return _merged("recency")


@lru_cache(maxsize=1)
def unsaid_id_sentences() -> dict[str, tuple[str, ...]]:
    """'method.param+method.param' -> sentences that state an id or a login no text, hint or result gives ('The ticket
    ID is {v1}.'), from the files' ``"unsaid_ids"`` tables (``prompts/phrasebook/choices.json``); applied by
    :mod:`rods_agents.variation.unsaid_ids`."""
    return _merged("unsaid_ids")


def story_sentences(classes: list[str]) -> list[str]:
    """Sentences that open a conversation with a story of its environments (the files' ``"story"`` tables,
    by class): a first turn that drops its seed's anecdote starts with one of these instead."""
    stories = _merged("story")
    return [text for cls in classes for text in stories.get(cls, ())]


def context_sentences(hidden: tuple[Slot, ...]) -> list[str]:
    """The context sentences for a turn's hidden slots (index < 0), written with their values; [] when the
    phrasebook has none for them (or a value no sentence can carry, such as the parent folder '..')."""
    ordered = sorted(hidden, key=lambda x: -x.index)
    values = [json.loads(x.value) for x in ordered]
    if any(not isinstance(v, str | int | float) or v in ("", "..", ".", "/") for v in values):
        return []
    fields = {f"v{i + 1}": spoken(v) for i, v in enumerate(values)}
    out = []
    for text in contexts().get("+".join(x.param for x in ordered), ()):
        try:
            out.append(text.format(**fields))
        except (KeyError, IndexError):
            continue
    return out


def _per_method(table: str, build: Callable[[str, str, Any], list[T]]) -> dict[str, tuple[T, ...]]:
    """Method -> what ``build(cls, method, entry)`` makes of every file's ``table`` entry for it, in file order."""
    out: dict[str, list[T]] = {}
    for stem, data in _files():
        cls = data.get("class", stem)
        for method, entry in (data.get(table) or {}).items():
            out.setdefault(method, []).extend(build(cls, method, entry))
    return {k: tuple(v) for k, v in out.items()}


@lru_cache(maxsize=1)
def phrasebook() -> dict[str, tuple[Phrasing, ...]]:
    """Method -> its phrasings, from every file under :data:`PHRASEBOOK_DIR` (read once)."""
    return _per_method("methods", lambda cls, method, entries: [parse_phrasing(cls, method, i, e)
                                                                  for i, e in enumerate(entries)])


@dataclass(frozen=True)
class Frame:
    """A method's request with a slot for its values (see the module docstring): heads, parts, reads."""

    cls: str
    method: str
    heads: tuple[tuple[str, tuple[tuple[str, Any], ...], frozenset[str]], ...]  # (text with {rest}, when, own fields)
    parts: tuple[tuple[str, tuple[str, ...]], ...]  # (param, fragments) in order
    reads: tuple[tuple[str, tuple[tuple[str, tuple[str, ...]], ...]], ...]  # (param, ((producer, fragments), ...))
    order: tuple[str, ...]
    needs: frozenset[str]


def _frame(cls: str, method: str, data: dict) -> Frame:
    heads = []
    for i, h in enumerate(data.get("heads") or ()):
        text, when = (h, {}) if isinstance(h, str) else (h.get("text"), dict(h.get("when") or {}))
        if not isinstance(text, str) or text.count("{rest}") != 1:
            raise ValueError(f"phrasebook {cls}.{method} frame head {i}: a string with one {{rest}}")
        fields = {m.group(1) for m in _FIELD.finditer(text) if m.group(1) != "rest"}
        heads.append((text, tuple(sorted(when.items())), frozenset(fields)))
    parts = tuple((k, tuple(v)) for k, v in (data.get("parts") or {}).items())
    reads = tuple((k, tuple((m, tuple(f)) for m, f in v.items())) for k, v in (data.get("reads") or {}).items())
    order = tuple(data.get("order") or [k for k, _ in parts] + [k for k, _ in reads if k not in dict(parts)])
    return Frame(cls, method, tuple(heads), parts, reads, order, frozenset(data.get("needs") or ()))


@lru_cache(maxsize=1)
def frames() -> dict[str, tuple[Frame, ...]]:
    """Method -> its frames, from every file's ``"frames"`` table (read once)."""
    return _per_method("frames", lambda cls, method, data: [_frame(cls, method, data)])


def frame_phrasings(method: str, wanted: frozenset[str], read: Mapping[str, str]) -> list[Phrasing]:
    """One phrasing per head of ``method``'s frames for a call whose sentence writes the values ``wanted`` and
    points at the results ``read`` (parameter -> producer): the head's own fields and options, a part for every other
    wanted value, a read part for every read one (none when a value has no part: the frame does not fit). Siblings
    take other heads, so the fragments rotate with the head."""
    out: list[Phrasing] = []
    for frame in frames().get(method, ()):
        parts, reads = dict(frame.parts), {p: dict(ms) for p, ms in frame.reads}
        if not frame.needs <= wanted | read.keys():
            continue
        for h, (head, when, fields) in enumerate(frame.heads):
            own = fields | {p for p, _ in when}
            rest = wanted - own
            if not own <= wanted or any(p not in parts for p in rest) or any(
                    prod not in reads.get(p, {}) for p, prod in read.items()):
                continue
            frags = []
            for j, param in enumerate(p for p in frame.order if p in rest or p in read):
                options = reads[param][read[param]] if param in read else parts[param]
                frags.append(options[(h + j) % len(options)])
            entry = {"text": head.replace("{rest}", "".join(frags)), "when": dict(when),
                     "from": {p: [prod] for p, prod in read.items()}}
            out.append(parse_phrasing(frame.cls, method, 1000 + h, entry))
    return out


def spoken(value: Any) -> str:
    """A value as a user writes it: numbers without a trailing '.0', lists as 'a, b and c'."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        items = [spoken(v) for v in value]
        return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1] if items else ""
    return str(value)


def own_slots(slots: tuple[Slot, ...], method: str) -> dict[str, Slot] | None:
    """Parameter -> slot of the call(s) a phrasing asks for: index 0, or for a run of calls written as one request
    (``'get_flight_cost+book_flight'``: 'price it, then book it') every call of the run, a value the calls share
    written once. Where two calls of the run take one parameter with different values, each is keyed
    ``method.param`` ('cp+mv': 'Copy {source} into {cp.destination} and name the copy {mv.destination}.'); None
    when they are calls of one method (``method.param`` would not say which)."""
    run = run_slots(slots, method)
    names = method.split("+")
    keyed = {(s.param, s.index) for s in run}
    differs = {p for p in {s.param for s in run}
               if len({(s.value, s.source, s.producer, s.recipe) for s in run if s.param == p}) > 1}
    own: dict[str, Slot] = {}
    for s in run:
        if s.param in differs:
            if len({names[i] for p, i in keyed if p == s.param}) < len({i for p, i in keyed if p == s.param}):
                return None
            own[f"{names[s.index]}.{s.param}"] = s
        else:
            own.setdefault(s.param, s)
    return own


def run_slots(slots: tuple[Slot, ...], method: str) -> tuple[Slot, ...]:
    """The slots of the call(s) ``method`` names: index 0, or each call of a run ``'a+b'`` (no hidden slots)."""
    return tuple(s for s in slots if 0 <= s.index <= method.count("+"))


def _stated_and_read(own: Mapping[str, Slot], named: Mapping[str, str], picks: Mapping[str, str]
                     ) -> tuple[set[str], dict[str, str]]:
    """The parameters a sentence writes (stated values and options, and values it names by other words) and those it
    points at a result for (parameter -> the producing method; a picked value is written, not pointed at)."""
    stated = {p for p, s in own.items() if s.source in STATED or p in named}
    read = {p: s.producer for p, s in own.items() if s.source == "call" and s.producer and p not in picks}
    return stated, read


def _runs_into_words(value: Any, text: str, m: re.Match) -> bool:
    """A lower-case value of several words written bare ('comprehensive protection' in '{insurance_type} coverage'):
    its end would run into the sentence's own words ('comprehensive protection coverage' reads as the type
    'comprehensive', read 31), so it is quoted as the seeds quote it. Names and places (capitalised) and values the
    phrasing already quotes are written as they are."""
    return (isinstance(value, str) and " " in value.strip() and value == value.lower()
            and text[m.start() - 1:m.start()] not in ("'", '"') and text[m.end():m.end() + 1] not in ("'", '"'))


_ORDINAL_PICK = re.compile(r"the (first|second|third|fourth|fifth|last) (stock|file|order|booking|ticket|symbol)"
                           r"(?: (?:listed|displayed|shown))? (in|on|from|within) ((?:the|that|this|my) [\w' ]+)", re.I)


def reworded_pick(phrase: str, key: str) -> str:
    """The seed's words for a pick by position, or other words for the same pick ('the third stock in the list' ->
    'the third of the stocks in the list', 'the third entry in the list'), chosen by ``key`` (the phrasing's text, so
    siblings taking other phrasings take other words too): scenario 18's 'the third stock in the list' and 49's
    'the third file displayed in that directory' were in all eight variants. Each form keeps a position cue the
    structure reads (:mod:`rods_agents.analysis.information_structure`)."""
    m = _ORDINAL_PICK.fullmatch(phrase)
    if m is None:
        return phrase
    nth, noun, prep, place = m.groups()
    forms = (phrase, f"the {nth} of the {noun}s {prep} {place}", f"the {nth} entry {prep} {place}")
    return forms[zlib.crc32(key.encode()) % len(forms)]


def render(phrasing: Phrasing, slots: tuple[Slot, ...], unsaid: frozenset[str] = frozenset(),
           named: Mapping[str, str] | None = None, picks: Mapping[str, str] | None = None) -> str | None:
    """The phrasing written for a call's ``slots`` (one call, index 0), or None when it does not fit: its
    placeholders and ``when`` keys must be exactly the call's stated values and options, less ``unsaid``: the
    values the user stated in an earlier turn and the replaced words leave out ('book it with the same card'),
    which a sentence repeating them would make easier. ``named``: parameter -> the words the turn names its
    value by ('Los Angeles' for LAX, 'Zeta Corp' for ZETA), written in their place, so a code the assistant
    looks up stays to be looked up; such a value fills a placeholder even where it counts as read from the state.
    ``picks``: parameter -> the seed's words picking its value from a list or by recency; only a phrasing marked
    ``pick`` for that parameter fits (its placeholder stands where a noun phrase goes), and the pick stands in for
    any pointer at a result."""
    picks = picks or {}
    if set(picks) != set(phrasing.pick.split()):
        return None
    named = {**(named or {}), **{p: reworded_pick(w, phrasing.text) for p, w in picks.items()}}
    own = own_slots(slots, phrasing.method)
    if own is None or any(p.split(".")[-1] in named or p.split(".")[-1] in unsaid for p in own if "." in p):
        return None  # words for a value of one call of the run that the turn names otherwise, or said before
    if dict(phrasing.composes) != {p: x.recipe for p, x in own.items() if x.recipe}:
        return None  # a value built by a named recipe is asked for only by words for that recipe, and only those fit it
    if not phrasing.same <= unsaid:
        return None  # its words point back at a value said before that this call does not leave to an earlier turn
    held = {p for p, x in own.items() if x.source == "withheld"}
    if phrasing.withholds and phrasing.withholds not in held:
        return None  # its words mark a value missing that this call has
    stated, read = _stated_and_read(own, named, picks)
    # a free text the assistant composes from what the turn describes is described anew by a 'describes' phrasing
    stated |= {p for p, _ in phrasing.describes if p in own and own[p].source == "composed"}
    origin = dict(phrasing.results)
    if origin.keys() != read.keys() or any(read[p] not in methods and "*" not in methods for p, methods in origin.items()):
        return None  # it points at a result the call does not read, or leaves one unpointed
    when = {p for p, _ in phrasing.when}
    # every value said must be written; a value unsaid is not; an option may be worded by the sentence's own words
    if not (stated - unsaid <= phrasing.params <= stated and phrasing.fields <= stated - unsaid and when <= stated):
        return None
    for param, value in phrasing.when:
        if json.loads(own[param].value) != json.loads(value):
            return None
    choices = dict(phrasing.choices)

    def fill(m: re.Match) -> str:
        if m.group(1) in named:
            return named[m.group(1)]
        value = json.loads(own[m.group(1)].value)
        if m.group(1) in choices:
            words = dict(choices[m.group(1)]).get(_option_key(value))
            if words is None:
                raise KeyError(m.group(1))
            return words
        if isinstance(value, dict) or value is None or value == "":
            raise KeyError(m.group(1))
        if _runs_into_words(value, phrasing.text, m):
            return f"'{value}'"
        return spoken(value)

    try:
        text = _FIELD.sub(fill, phrasing.text)
    except KeyError:
        return None
    text = _QUOTED_STOP.sub(r"\1", text)  # a quoted value ending its own sentence: '... "Please assist."', not '."."'
    return text[:1].upper() + text[1:]


def phrase_donors(method: str, slots: tuple[Slot, ...], signature: str, unsaid: frozenset[str] = frozenset(),
                  named: Mapping[str, str] | None = None, picks: Mapping[str, str] | None = None,
                  marked_only: bool = False, describing: bool = False) -> list[Donor]:
    """The phrasings of ``method`` that fit the call's ``slots`` (``unsaid``, ``named``, ``picks``: see :func:`render`),
    as donors carrying those slots (their values are the variant's own, so re-instantiating one changes nothing).
    ``marked_only``: just the phrasings whose words mark a withheld value missing (``withholds``). ``describing``: just
    the phrasings that describe a free text of their own (``describes``), as donors carrying that text in its slot
    (:mod:`rods_agents.variation.free_text` adopts it); never otherwise, as their words describe no other text."""
    out, seen = [], set()
    framed = [] if marked_only or describing else _framed(method, slots, unsaid, named, picks)
    for p in (*phrasebook().get(method, ()), *framed):
        if (marked_only and not p.withholds) or bool(p.describes) != describing:
            continue
        text = render(p, slots, unsaid, named, picks)
        if text is None or text in seen:
            continue
        seen.add(text)
        described = dict(p.describes)
        own = tuple(replace(s, value=json.dumps(described[s.param])) if s.index == 0 and s.param in described else s
                    for s in run_slots(slots, method))
        out.append(Donor(f"phrasebook:{p.cls}.{method}#{p.index}", "phrasebook", -1, text, tuple(method.split("+")),
                         own, signature, frozenset(), ""))
    return out


def _framed(method: str, slots: tuple[Slot, ...], unsaid: frozenset[str], named: Mapping[str, str] | None,
            picks: Mapping[str, str] | None) -> list[Phrasing]:
    """The frame phrasings for exactly the values :func:`render` wants written and pointed at (none for a pick)."""
    own = own_slots(slots, method)
    if picks or method not in frames() or own is None:
        return []
    stated, read = _stated_and_read(own, named or {}, {})
    return frame_phrasings(method, frozenset(stated - unsaid), read)


# ----------------------------------------------------------------------------- the check
def check() -> list[str]:
    """Problems of the phrasebook files: unknown methods or parameters, options the catalog does not know."""
    from rods_agents.analysis.catalog import build_catalog

    catalog = build_catalog().methods
    problems = []
    for method, phrasings in phrasebook().items():
        params = _params(method)
        if params is None:
            problems.append(f"{method}: not a method of the catalog")
            continue
        for p in phrasings:
            for name in (p.params | {r for r, _ in p.results} | p.same) - params:
                problems.append(f"{p.cls}.{method}[{p.index}]: no parameter {name!r} ({p.text!r})")
            for name in {m for _, ms in p.results for m in ms} - catalog.keys() - {"*"}:
                problems.append(f"{p.cls}.{method}[{p.index}]: 'from' names {name!r}, not a method of the catalog")
            for name, recipe in p.composes:  # a typo would leave the phrasing fitting nothing, silently
                if name not in params or recipe not in (knowledge.value_recipes().get(f"{method}.{name}") or {}):
                    problems.append(f"{p.cls}.{method}[{p.index}]: 'composes' names {name}={recipe!r}, not a recipe of "
                                    "prompts/bfcl/value_recipes.json")
            problems += [f"{p.cls}.{method}[{p.index}]: {why} ({p.text!r})" for why in lint(p)]
    for method, fs in frames().items():
        params = _params(method) or set()
        for frame in fs:
            names = {k for k, _ in frame.parts} | {k for k, _ in frame.reads} | set(frame.order) | frame.needs
            problems += [f"{frame.cls}.{method} frame: no parameter {n!r}" for n in sorted(names - params)]
            problems += [f"{frame.cls}.{method} frame: {why} ({p.text!r})" for p in _frame_samples(frame) for why in lint(p)]
    return problems


def _frame_samples(frame: Frame) -> list[Phrasing]:
    """Every head with each of its parts and read parts in turn (what :func:`lint` reads of a frame)."""
    out = []
    for head, when, own in frame.heads:
        frags = [f for k, fs in frame.parts if k not in own for f in fs] + [f for _, ms in frame.reads for _, fs in ms for f in fs]
        out += [parse_phrasing(frame.cls, frame.method, 1000, {"text": head.replace("{rest}", f), "when": dict(when)})
                for f in frags or [""]]
    return out


_PICK_STANDIN = "that entry I keep coming back to in my "
"""What :func:`lint` writes before a pick placeholder's head noun: a pick phrase as long as the seeds' ('the first
stock listed in my watchlist'), with no cue of its own."""


def _params(method: str) -> set[str] | None:
    """The parameter names of a method, or of a run of them ('cp+mv': each name, and ``cp.destination`` for
    each call's own); None when the catalog lacks one of them."""
    from rods_agents.analysis.catalog import build_catalog

    catalog = build_catalog().methods
    names = method.split("+")
    specs = [catalog.get(m) for m in names]
    if None in specs:
        return None
    qualified = {f"{m}.{p.name}" for m, spec in zip(names, specs, strict=True) for p in spec.params} if len(names) > 1 else set()
    return {p.name for spec in specs for p in spec.params} | qualified


def lint(phrasing: Phrasing) -> list[str]:
    """Why a phrasing would change a turn's structure: no cue of its method in the lexicon (the call would
    read as left to the assistant), or words the structure reads as a condition, reference or
    transformation (a segment has none of them); or why it reads as no user writes: a parameter named as the
    tool names it ('with lines set to 15')."""
    lex = lexicon()
    # a pick's placeholder takes a long noun phrase ending in its head ('the first stock listed in my watchlist'): the
    # method's cue must be found around a phrase that long, and may be its head ('the most recent order ID')
    text = _FIELD.sub(lambda m: _PICK_STANDIN + m.group(1).replace("_", " ") if m.group(1) in phrasing.pick.split()
                      else m.group(1).upper(), phrasing.text)
    out = []
    for method in phrasing.method.split("+"):
        # a method the lexicon reads as asked for by its value ('fill the tank with 40 liters' asks for the
        # liters-to-gallons conversion by stating 40 liters) is asked for where the sentence writes that value
        by_value = method in lex.methods and lex.methods[method][1] and phrasing.fields & (_params(method) or set())
        if method in lex.methods and not by_value and not any(p.search(text) for p in lex.methods[method][0]):
            out.append(f"no lexicon cue for {method} (the call would read as implicit)")
    if any(p.search(text) for p in lex.conditions) and not any(p.search(text) for p in lex.condition_exclusions):
        out.append("reads as one of the conditions")
    if any(p.search(text) for p in lex.transformations):
        out.append("reads as one of the transformations")
    for kind, pats in lex.references.items():
        if any(p.search(text) for p in pats):
            out.append(f"reads as a reference ({kind})")
    for name in phrasing.fields:  # 'with lines set to 15' is the tool's words, not a user's (read 18)
        words = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name).replace("_", " ")
        if re.search(rf"\b{re.escape(words)}(?:\s*=|\s+set to)", phrasing.text, re.I):
            out.append(f"names its parameter {name!r} as the tool does")
    return out


def coverage() -> dict[str, list[tuple[str, int, int]]]:
    """Per method the argument patterns of the train turns' explicit calls: (pattern, turns, fitting phrasings)."""
    from collections import Counter

    from rods_agents.variation.turn_bank import turn_bank

    patterns: dict[str, Counter] = {}
    examples: dict[tuple[str, str], tuple[Slot, ...]] = {}
    for donors in turn_bank().values():
        for d in donors:
            for i, m in enumerate(d.methods):
                own = tuple(replace(s, index=0) for s in d.slots if s.index == i)
                key = json.dumps({s.param: (json.loads(s.value) if s.source == "flag" else
                                            f"from {s.producer}" if s.producer else s.source) for s in own}, sort_keys=True)
                patterns.setdefault(m, Counter())[key] += 1
                examples[(m, key)] = own
    return {m: [(k, n, sum(render(p, examples[(m, k)]) is not None for p in phrasebook().get(m, ())))
                for k, n in c.most_common()] for m, c in patterns.items()}


def main() -> int:
    problems = check()
    for line in problems:
        sys.stdout.write(f"PROBLEM {line}\n")
    for method, rows in sorted(coverage().items()):
        for key, n, fits in rows:
            sys.stdout.write(f"{method:40s} {n:4d} turns  {fits:2d} phrasings  {key}\n")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
