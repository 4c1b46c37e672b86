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

A turn no donor words whole is re-worded piece by piece (:func:`rods_agents.variation.assembly.mixed_turn`): it is cut into units (the
sentences, or clauses handed over with 'and then' / ', then' / ';', that ask for a call), each run of
units from a donor asking for just those calls the same way, and the units holding a condition, a
reference or a transformation cue keep the carried wording: their cue ("the last stock on the list",
"should any tire fall below 40 PSI", "round to the nearest integer") decides the ground truth, and a
donor's cue of the same kind ("the first stock") would pick another value (a condition, limit or rounding clause
the phrasebook knows is then said in other words of the same kind, :mod:`~rods_agents.variation.clause_words`,
re-measured like any new wording). Values a turn states for a
call it leaves implicit ('the distance between Rivermist and Greenway' for the implicit zip-code
lookups) are hidden slots that a donor must carry too. A miss_param withholding turn is worded only by
another train turn withholding the same parameter of the same method (the withheld value is never
carried); the supplying turn and a miss_func reveal turn keep the seed's (the category's mechanics).
Siblings of one scenario (four categories x variants) pick among the fitting donors by their slot.

The modules, in the order a turn goes through them: :mod:`~rods_agents.variation.saying` (what a sentence says of
the values), :mod:`~rods_agents.variation.donor_fit` (a donor's words on the variant's values),
:mod:`~rods_agents.variation.cues` (picks and stray cue words), :mod:`~rods_agents.variation.donor_search` (the fitting
donors and the one a sibling takes), :mod:`~rods_agents.variation.assembly` (one wording of a turn), and this one
(the measure of the whole variant).

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
from collections.abc import Iterable, Iterator
from typing import Any

from envs.task import Message, Task
from rods_agents.analysis import knowledge
from rods_agents.analysis.information_structure import (
    _QUOTED,
    asks_for,
    information_structure,
    lexicon,
    reads_as_condition,
    structure_mismatches,
    withheld_value,
)
from rods_agents.analysis.novelty import call_values
from rods_agents.analysis.obtainability import public_state, public_states, state_obtainable
from rods_agents.analysis.tracing import Trace, trace_task
from rods_agents.analysis.value_sources import _numbers, classify_arguments, user_text_upto
from rods_agents.variation import clause_words
from rods_agents.variation.assembly import assemble_turn, mixed_turn
from rods_agents.variation.donor_search import (
    collect_fits,
    copies_donor,
    lookup_names,
    ordered_donors,
    phrasebook_donors,
    sibling_rank,
)
from rods_agents.variation.free_text import (
    adopted_ground_truth,
    adopted_slots,
    described,
    free_text_params,
    quoted_later,
    tied_elsewhere,
    whole_quote,
    with_text,
)
from rods_agents.variation.phrasebook import contexts, spoken, story_sentences, supply_sentences, vague_requests
from rods_agents.variation.recency import say_recency
from rods_agents.variation.saying import as_sentence, dictated, keeps_specifics, named_as, said_as_is, word_in
from rods_agents.variation.seed_anchor import number_matches, unit_after
from rods_agents.variation.set_picks import set_phrase, set_pick_turn
from rods_agents.variation.turn_bank import (
    SENTENCE_END,
    Donor,
    Slot,
    asked_turn,
    clean_piece,
    cue_key,
    donors_for,
    explicit_calls,
    mark_sole,
    piece_bounds,
    portable_signature,
    turn_slots,
    withholding_calls,
    world_strings,
)
from rods_agents.variation.unsaid_choices import say_unsaid_choices
from rods_agents.variation.unsaid_ids import say_unsaid_ids

ASSEMBLIES = 4  # wordings tried per turn
"""Sources of a value the text does not write: where the assistant finds it (an earlier result, the state) is
decided by the ground truth and the environment, not by the words, so a donor that leaves a value to a result
words a turn that leaves it to the state as well (the re-measure checks that the state value is still singled
out)."""


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


# a sentence saying that a file is somewhere else without naming where ('The file is somewhere inside the file
# system.'): the only words sending the assistant to look for it before an implicit cd
_WHERE_HINT = re.compile(r"\b(somewh?ere|some where)\b|\b(?:inside|within|in) (?:the|my|a|some|one of the) "
                         r"(?:file ?system|sub-?director(?:y|ies)|sub-?folders?|other folders?)\b", re.I)


def with_where_hints(text: str, span: str) -> str:
    """``text`` with the sentences of ``span`` that say a thing is somewhere else without naming where, and ask for
    nothing, kept at its end: new words for the request dropped 'The file is somewhere inside the file system.', the
    one hint that the file must be found first (reads 9 and 10, miss_param_44)."""
    lex = lexicon().methods
    kept = [x for x in SENTENCE_END.split(span.strip()) if _WHERE_HINT.search(x) and x not in text
            and not any(p.search(x) for pats, _ in lex.values() for p in pats)]
    return " ".join([as_sentence(text), *kept]) if kept else text


_IDENTITY = re.compile(r"[^.?!]*\b(?:I am|I'm|[Mm]y name is|[Tt]his is)\s+([A-Z][a-z]+)\b[^.?!]*[.?!]?")
IDENTITY_WORDS = 8  # an identity sentence longer than this carries a story of its own: the turn keeps its words


def with_identity(text: str, span: str, world: set[str]) -> str | None:
    """``text`` opened with the sentences of ``span`` in which the user says who they are by a name of the task's
    world ('I am Alice.' where the messaging state's current user is someone else): new words for the request
    dropped it, and the assistant no longer had to notice that Alice is not the one logged in (read 15,
    miss_func_137). None when such a sentence is too long to carry alone (the turn then keeps its words)."""
    kept = []
    for m in _IDENTITY.finditer(span):
        if m.group(1).lower() in world and not word_in(m.group(1), text):
            sentence = m.group(0).strip().lstrip("'\"").strip()  # not the closing quote of a text before it
            if len(sentence.split()) > IDENTITY_WORDS:
                return None
            kept.append(as_sentence(sentence))
    return " ".join([*kept, text]) if kept else text
"""Slot sources whose value the turn's words leave the assistant to pick: read from a result or the state, or built."""


_GO_AHEAD = re.compile(r"^Go ahead and (\w)")


def opening(text: str, earlier: str) -> str:
    """``text`` as a conversation's first words: 'Go ahead and ...' answers something said before, so a first turn
    opening with it asks plainly ('Please set the budget at $5000.'); read 26 found it with nothing before it."""
    if earlier.strip():
        return text
    return _GO_AHEAD.sub(lambda m: "Please " + m.group(1).lower(), text, count=1)


def statement_texts(carried: str, target: tuple[Slot, ...], world: set[str], scenario: int, slot: int | None
                    ) -> list[str]:
    """New words for a turn that asks for no call and says where a file is: the folder an implicit ``cd`` enters and
    the quoted name of a file a later turn works on ('I remember I should have a document called 'FinalReport.txt' in
    the 'Documentation' folder.', scenario 9, whose every sample kept the sentence). The phrasebook's
    ``cd.folder@file`` context sentences, written with both ({v1} the folder, {file} the file), in an order per
    scenario and sibling; [] for any other turn (the caller re-measures each)."""
    hidden = [x for x in target if x.index < 0]
    if len(hidden) != 1 or len(target) != 1 or not hidden[0].param.startswith("cd."):
        return []
    folder = json.loads(hidden[0].value)
    files = [q for q in dict.fromkeys(m.group(0)[1:-1].strip() for m in _QUOTED.finditer(carried))
             if q != folder and q.lower() in world and re.search(r"\.\w{2,4}$", q)]
    if len(files) != 1 or not isinstance(folder, str) or not word_in(folder, carried):
        return []
    texts = [x.format(v1=folder, file=files[0]) for x in contexts().get("cd.folder@file", ())]
    random.Random(f"{scenario}|statement").shuffle(texts)
    k = (slot or 0) % len(texts) if texts else 0
    return texts[k:] + texts[:k]


def _supply_texts(variant: Task, trace: Trace, info: Any, turn: int, aliases: dict[str, str] | None = None
                  ) -> list[str]:
    """New wordings of a miss_param supplying turn ('The specific file is notes.txt.'): the phrasebook's
    ``supply`` sentences for the withheld ``method.param``, then its generic ones, written with the value; a city
    that starts or ends a distance estimate takes only the sentences saying which end it is (:func:`_trip_end`).
    A value the answer gives by the name it is looked up by ('My advisor is Alice.' for USR003; ``aliases``: value ->
    name, :func:`~rods_agents.variation.donor_search.lookup_names`) takes the ``method.param@name`` sentences written
    with the name, so finding the id stays the assistant's. [] for any other turn, or a value a sentence cannot
    carry (a list, a long text)."""
    w = next((x.withheld for x in info.turns if x.withheld is not None and x.withheld.supplied_at == turn), None)
    if w is None:
        return []
    values = withheld_value(variant, trace, w)
    said = "\n".join(m.content for m in variant.turns[turn] if m.role == "user")
    table = supply_sentences()
    if values and all(isinstance(v, str) and v[:1] in "#@" for v in values):
        return _tag_supply(table, f"{w.method}.{w.param}", values, said)
    if len(values) != 1 or not isinstance(values[0], str | int | float) or len(str(values[0])) > 80:
        return []
    name = (aliases or {}).get(str(values[0]), "")
    if not said_as_is(values[0], said, _numbers(said)):
        if not name or not word_in(name, said) or not table.get(f"{w.method}.{w.param}@name"):
            return []  # the seed's answer says it otherwise ('The company is named Zeta Corp'): the ticker would be easier
        return _named_supply(table, f"{w.method}.{w.param}", name, said)
    role = _trip_end(trace, turn, w.method, values[0])
    own = table.get(f"{w.method}.{w.param}@{role}", ()) if role else table.get(f"{w.method}.{w.param}", ())
    generic = () if role else table.get("*", ())
    if dictated(values[0]):  # words to be written as they are ('Another task done!') go in quotes, never bare:
        # "One more job done today!, please." reads as the user's own exclamation (read of 2026-12-03)
        own, generic = tuple(t for t in own if "'{v1}'" in t), table.get("*text", ())
    if own and asks_for(w.method, said):
        generic = ()  # the seed's answer names the call its value is for ('I mean comment that tweet, something like
        # ...'): the generic 'Write this: ...' would leave a comment, a reply and a new tweet open (read 49 #27)
    texts = [t.format(v1=spoken(values[0])) for t in (*own, *generic)]
    # the answer may say more than the value: "The report should be in the format of 'Kelly Total Score:
    # total_score'" supplies a format holding the name, which "Use Kelly for that." loses (read 7)
    unit = _supplied_unit(values[0], said)
    return [t for t in texts if keeps_specifics(t, said) and (not unit or _supplied_unit(values[0], t) == unit)]


_NOT_UNITS = frozenset({"and", "or", "for", "please", "is", "of", "to", "in", "the", "at", "as", "it", "will", "would",
                        "should", "that", "then", "this", "with", "on", "from", "by", "if", "so", "but"})


def _supplied_unit(value: Any, text: str) -> str:
    """The word a supplied number is said with ('shares' in 'I want 100 shares.'); '' for a string, or a number said
    bare. An answer that says what the number counts must keep saying it: 'Use 50 for that.' left 50 shares or
    $50 open where the seed said 'I want 100 shares.' (read 50 #23)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return ""
    found = number_matches(text, value)
    unit = unit_after(text, found[0].end()) if found else ""
    return "" if unit in _NOT_UNITS else unit


def _tag_supply(table: dict[str, tuple[str, ...]], key: str, tags: list[str], said: str) -> list[str]:
    """Answers supplying hashtags or handles ('I mean these: '#RoadAhead, #RideReady, #Thankful'.', "His handle is
    'huanzhimao01'."): the ``key`` sentences written with the tags as the seed's answer gives them, with their sign or
    without it (:func:`~rods_agents.variation.saying.named_as`: adding the '@' stays the assistant's)."""
    words = named_as(tags, said) or (spoken(tags) if all(said_as_is(t, said, set()) for t in tags) else None)
    if not words:
        return []
    texts = [t.format(v1=words) for t in table.get(key, ())]
    return [t for t in texts if keeps_specifics(t, said)]


def _named_supply(table: dict[str, tuple[str, ...]], key: str, name: str, said: str) -> list[str]:
    """The ``key@name`` answers written with ``name``; where the seed's answer says who that is to the user ('My advisor
    is Alice.', 'To my friend John'), the ``key@name+rel`` ones, which say it too: a later turn may point back at 'my
    advisor' (miss_param_131: 'Please delete the last message to my advisor')."""
    rel = re.search(rf"\b[Mm]y ((?:[a-z]+ )??[a-z]+) (?:is |was |called |named )?{re.escape(name)}\b", said)
    texts = ([t.format(v1=name, rel=rel.group(1)) for t in table.get(f"{key}@name+rel", ())] if rel
             else [t.format(v1=name) for t in table[f"{key}@name"]])
    return [t for t in texts if keeps_specifics(t, said)]


def _trip_end(trace: Trace, turn: int, method: str, value: Any) -> str:
    """'from' or 'to' when the withheld value is a city whose zip code a distance estimate of ``turn`` takes as its
    start or its end; "" otherwise. 'The city is San Francisco.' did not say which end of the trip it is (read of
    2026-12-05, miss_param_67 and miss_param_77); 'I'm starting from San Francisco.' does."""
    if method != "get_zipcode_based_on_city":
        return ""
    recs = [r for r in trace.calls if r.turn == turn]
    zips = {str(r.result) for r in recs if r.name == method and value in r.args.values()}
    for r in recs:
        if r.name == "estimate_distance":
            for param, end in (("cityA", "from"), ("cityB", "to")):
                if any(str(r.args.get(param)) in z for z in zips):
                    return end
    return ""


def _reword_supply(seed: Task, seed_info: Any, variant: Task, turns: list[list[Message]], trace: Trace,
                   slot: int | None) -> tuple[list[list[Message]], list[dict]]:
    """Miss_param supplying turns re-worded (:func:`_supply_texts`) where the variant's per-turn value sources
    and information structure stay as they are: the value is still supplied there and nowhere before."""
    if variant.category != "miss_param":
        return turns, []
    provenance = []
    aliases = lookup_names(trace, public_states(variant))
    for t in range(len(turns)):
        if _user_messages(turns[t]) != 1:
            continue
        current = variant.model_copy(update={"turns": turns})
        base_sources, base_info, _ = _measure(current, trace)
        options = _supply_texts(current, trace, base_info, t, aliases)
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
    if any(word_in(w, lower) for w in world if len(w) >= 3):
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


def _cuts_a_quote(sentence: str, text: str) -> bool:
    """``sentence`` starts or ends inside a quoted value of ``text``: the dictated message 'My strategy is shifting
    ... order. Current balance in my account is $10000.' reads as two sentences, and its second half is no sentence
    of its own to drop."""
    at = text.find(sentence)
    end = at + len(sentence)
    return at < 0 or any(m.start() < end and m.end() > at and not (at <= m.start() and m.end() <= end)
                         for m in _QUOTED.finditer(text))


def _drop_carried_context(seed_info: Any, variant: Task, turns: list[list[Message]], trace: Trace, seed_turns: dict[int, str],
                          reworded: set[int], measured: tuple[Any, set, set, set[int]]) -> tuple[list[list[Message]], list[dict]]:
    """Re-worded turns lose the seed's sentences that new words carried along only for a date, a code, a quoted
    value or a handle no call takes (:func:`rods_agents.variation.saying.with_specifics`: 'Please call off the booking
    we made. After reconsideration, the flight planned for London on the 15th is no longer necessary.'), where the
    variant measures the same without them: every per-turn value source, the structure and the state hints. Such a
    sentence is the seed's story in the seed's words; kept in every sibling, it made them copies of the seed and of
    each other (issue 13). A sentence of the user saying who they are, or where a file is, stays (they are kept on
    purpose: :func:`with_identity`, :func:`with_where_hints`), and so does a condition whose branch the task never
    takes ('If it is reachable, set navigation to ...', base_66): no call measures it, yet the assistant must see it
    does not hold."""
    provenance = []
    for t in sorted(reworded):
        carried = seed_turns.get(t, "")
        text = next((m.content for m in turns[t] if m.role == "user"), "")
        sentences = [x for x in SENTENCE_END.split(text.strip()) if x]
        for x in [x for x in sentences if x in carried and not keeps_specifics("", x) and not _cuts_a_quote(x, text)
                  and not _IDENTITY.search(x) and not _WHERE_HINT.search(x) and not reads_as_condition(x)]:
            rest = " ".join(y for y in sentences if y != x)
            if not rest.strip():
                continue
            took = _worded(seed_info, variant, trace, turns, t, rest, measured)
            if took is not None:
                turns, sentences = took[2], [y for y in sentences if y != x]
                provenance.append({"turn": t, "donors": [["phrasebook:dropped_context", x[:60]]]})
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
    # the composing of a described free text (a 'text' transformation of it) is what the adopted words describe anew
    delicate = bool(parsed.get("references") or any(
        not (x.kind == "text" and f"{x.method}.{x.param}" in free_text_params()) for x in seed_info.turns[g].transformations))
    pool = ordered_donors([d for d in donors_for(methods, sig, knowledge.donor_key(seed), cue_key(seed_info, g) if delicate else None)
                     if d.task_id not in used], seed, t, 0, len(methods), rng, slot)
    if len(methods) == 1 and not delicate and all(x.index >= 0 for x in target):  # and the phrasebook's described texts
        earlier = " ".join(m.content for x in turns[:t] for m in x if m.role == "user")
        pool += phrasebook_donors(seed, t, 0, methods, target, sig, used, set(), carried, earlier, describing=True)
    if slot is not None and pool:
        k = sibling_rank(slot, f"{seed.scenario}|{t}|adopt") % len(pool)
        pool = pool[k:] + pool[:k]
    copies: list[tuple[str, Donor, tuple[Slot, ...]]] = []
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
        collect_fits([d], fits, after, world | {v.lower() for v in new}, allowed, " ".join([values, *new]), span, 1)
        text = with_identity(as_sentence(fits[0][0]), carried, world) if fits else None
        if text is not None and copies_donor(text, d):
            copies.append((text, d, after))  # another seed's sentence word for word: after every other wording
        elif text is not None:
            yield text, d, after
    yield from copies


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


def _first_worded(seed_info: Any, variant: Task, trace: Trace, turns: list[list[Message]], t: int,
                  texts: Iterable[str], measured: tuple[Any, set, set, set[int]]) -> list[list[Message]] | None:
    """The turns with turn ``t`` worded by the first of ``texts`` that :func:`_worded` keeps (tried lazily, in
    order); None when it keeps none."""
    for text in texts:
        took = _worded(seed_info, variant, trace, turns, t, text, measured)
        if took is not None:
            return took[2]
    return None


def _reword_vague(seed: Task, seed_info: Any, variant: Task, turns: list[list[Message]], trace: Trace,
                  held: dict[int, Any], measured: tuple[Any, set, set, set[int]], slot: int | None,
                  worded: frozenset[int] = frozenset()) -> tuple[list[list[Message]], list[dict]]:
    """New words for each miss_param turn that asks for no call and leaves the next turn's call a value ('Can you
    amplify some messages?' before 'I mean retweet my recent post'): a request as vague as the seed's
    (:func:`rods_agents.variation.phrasebook.vague_requests`), kept only where the re-measure finds the same
    structure. No donor words such a turn (it names no call), so every sample kept the seed's sentence (reads 27/28).
    A withholding turn that names its call only vaguely ('Can you amplify some messages?', miss_param_189) and that no
    donor worded (not in ``worded``) tries them too: the re-measure keeps one only where the call and the withheld
    value read as before."""
    out: list[dict] = []
    for t in range(len(turns) - 1):
        w = seed_info.turns[t].withheld if t < len(seed_info.turns) else None
        if (variant.category != "miss_param" or t in held and t in worded or w is None or w.supplied_at != t + 1 or w.stated_before
                or variant.ground_truth[t] or _user_messages(turns[t]) != 1):
            continue
        texts = list(vague_requests().get(f"{w.method}.{w.param}", ()))
        random.Random(f"{seed.scenario}|{t}|vague").shuffle(texts)
        k = (slot or 0) % len(texts) if texts else 0
        took = _first_worded(seed_info, variant, trace, turns, t, texts[k:] + texts[:k], measured)
        if took is not None:
            turns = took
            out.append({"turn": t, "donors": [["phrasebook:vague", t]]})
    return turns, out


def _reword_clauses(seed: Task, seed_info: Any, variant: Task, turns: list[list[Message]], trace: Trace,
                    measured: tuple[Any, set, set, set[int]], slot: int | None
                    ) -> tuple[list[list[Message]], list[dict]]:
    """Each turn's conditions, limits and rounding instructions in other words
    (:func:`rods_agents.variation.clause_words.reworded`), in new and kept turns alike, each kept only where the
    re-measure finds the structure the turn had: these clauses decide the ground truth, so they were the seed's
    words inside every variant's new ones (reads 29/30: most pairs only "partly new")."""
    out: list[dict] = []
    for t in range(len(turns)):
        # two passes: a clause the first rewording brings to light was inside an overlapping one ('If it falls under
        # 37.5 PSI,' shares its number with '{n} PSI, perhaps we could swing by the nearest tire shop?', so base_78's
        # condition stayed the seed's words in every variant: read 51 #29)
        for _ in range(2):
            if _user_messages(turns[t]) != 1:
                break
            text = next(m.content for m in turns[t] if m.role == "user")
            quote = whole_quote(text, variant, t)
            if quoted_later(text, variant, t) and quote is None:
                break  # a later call writes some of this turn's words down: they stay
            for new in clause_words.reworded(text, f"{seed.scenario}|{t}", slot):
                ground_truth = None if quote is None else with_text(variant.ground_truth, *quote, text, new)
                took = _worded(seed_info, variant, trace, turns, t, new, measured, ground_truth)
                if took is not None:
                    variant, trace, turns = took
                    out.append({"turn": t, "donors": [["phrasebook:clauses", t]], **_requote_note(quote, text, new)})
                    break
            else:
                break  # no rewording kept: nothing more to find
    return turns, out


def _requote_note(quote: tuple[int, str, str] | None, old: str, new: str) -> dict[str, Any]:
    """The provenance of a turn a later call writes down whole: that call's argument, from the old words to the new
    (applied to the plan's ground truth by :func:`~rods_agents.variation.free_text.apply_adoptions`)."""
    if quote is None:
        return {}
    turn, method, param = quote
    return {"requoted": [{"turn": turn, "method": method, "param": param, "from": old, "to": new}]}


def transplant_turns(seed: Task, seed_info: Any, variant: Task, rng: Any, slot: int | None = None,
                     adopt: bool = True) -> tuple[list[list[Message]], list[dict]]:
    """The variant's turns with as many as possible replaced by re-instantiated donor turns, and the
    provenance of each replacement ({'turn', 'donor', 'donor_turn'}). ``variant`` holds the carried turns,
    the plan's ground truth and config; ``seed_info`` is the seed's information structure. ``adopt``: a donor
    describing a free text of its own may bring that text into the ground truth (never where an LLM planned the
    text: LLM trial 4, requests 0002-0006, had its support messages replaced)."""
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
    # the loaded states, defaults included: MessageAPI's user map names Bob even where the config lists no users
    aliases = lookup_names(trace, public_states(variant))
    gt_text = " ".join(c for calls in variant.ground_truth for c in calls)
    turns = [list(t) for t in variant.turns]
    seed_turns = {t: next((m.content for m in turn if m.role == "user"), "") for t, turn in enumerate(turns)}
    used: set[str] = set()
    provenance: list[dict] = []
    for t in candidates:
        if t in held:
            g, (methods, target, signature) = t + 1, held[t]
        else:
            g, signature = asked_turn(variant, t), None
            assert g is not None
            methods, target = explicit_calls(seed_info, g, *turn_slots(trace, sources, g))
            target = mark_sole(variant, trace, g, target)
        carried = next(m.content for m in turns[t] if m.role == "user")
        set_pick = bool(seed_info.turns[g].unresolved_picks)
        if not methods and signature is None:
            took = _first_worded(seed_info, variant, trace, turns, t,
                                 statement_texts(carried, target, world, seed.scenario, slot), measured)
            if took is not None:
                turns = took
                provenance.append({"turn": t, "donors": [["phrasebook:statement", t]]})
            continue
        if not methods or (set_pick and (signature is not None or set_phrase(carried) is None)):
            continue  # words that pick a value the lexicon cannot read ('the one with a substantial order value',
            # read 10) stay the seed's: new words would leave the pick to no words, and the re-measure cannot tell;
            # a set the turn names ('each stock in my watchlist') keeps its phrase inside new words (set_picks)
        if quoted_later(carried, variant, t):
            continue  # 'Write my last question in it': a later call writes these words, so they stay (read 15)
        allowed = _numbers(gt_text) | _numbers(carried)
        tried: set[str] = set()
        failed: set[str] = set()  # donors whose words this turn already tried: the next assembly passes them over
        for i in range(ASSEMBLIES):
            s_i = None if slot is None else slot + i
            earlier = " ".join(m.content for x in turns[:t] for m in x if m.role == "user")
            if set_pick:
                built = set_pick_turn(seed, t, methods, target, world, allowed, gt_text, used | failed, s_i, carried,
                                      earlier, aliases)
            else:
                built = assemble_turn(seed, seed_info, t, g, methods, target, world, allowed, gt_text, used | failed, rng,
                                      s_i, carried, signature, earlier, aliases)
            if built is None and signature is None and not set_pick:
                built = mixed_turn(seed, base_info, t, g, methods, target, world, allowed, gt_text, used | failed, rng,
                                   s_i, carried, earlier, aliases)
            if built is None:
                break
            text, donors = built
            text = with_identity(with_where_hints(text, carried), carried, world)
            if text is None:
                break
            text = opening(text, earlier)
            if text in tried or text == carried:
                failed.update(d.task_id for d in donors)  # the same words again (base_56: one human donor that
                continue  # fails the re-measure came back in every assembly, and the phrasebook's were never tried)
            tried.add(text)
            took = _worded(seed_info, variant, trace, turns, t, text, measured)
            if took is None:
                failed.update(d.task_id for d in donors)
                continue
            turns = took[2]
            used.update(d.task_id for d in donors)
            provenance.append({"turn": t, "donors": [[d.task_id, d.turn] for d in donors]})
            break
        if not adopt or t in held or any(p["turn"] == t for p in provenance):
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
    turns, vague = _reword_vague(seed, seed_info, variant, turns, trace, held, measured, slot,
                                 frozenset(p["turn"] for p in provenance))
    provenance += vague
    reworded = {p["turn"] for p in provenance if "adopted" not in p}
    turns, dropped = _drop_carried_context(seed_info, variant, turns, trace, seed_turns, reworded, measured)
    provenance += dropped
    turns, supplied = _reword_supply(seed, seed_info, variant, turns, trace, slot)
    reworded = {p["turn"] for p in provenance + supplied}
    turns, trimmed = _trim_fillers(seed, seed_info, variant, turns, trace, reworded, slot)
    turns, clauses = _reword_clauses(seed, seed_info, variant, turns, trace, measured, slot)
    turns, choices = say_unsaid_choices(variant, turns, trace, seed_info, slot)
    turns, ids = say_unsaid_ids(seed, variant, turns, trace, seed_info, slot)
    turns, recent = say_recency(seed, variant, turns, trace, seed_info, slot)
    return turns, provenance + supplied + trimmed + clauses + choices + ids + recent


__all__ = ["transplant_turns"]
