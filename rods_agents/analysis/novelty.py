"""Is a variant a new task? Text and call comparisons against its seed and its scenario's other variants.

API (stable; the verdict, the dedupe and ``benchmarks/synthesis_quality.py`` use it):

- ``user_text(task) -> str``: every user message, joined;
- ``containment(text, reference, n=5, mask=False) -> float``: the share of ``text``'s word n-grams that
  also occur in ``reference`` (0 when ``text`` has no words; a text shorter than n words is one gram);
- ``mask_digits(text) -> str``: every run of digits replaced by ``#``;
- ``kept_seed_turns(variant, seed) -> list[int]``: the turns that keep their seed's sentences (entities masked);
- ``kept_seed_sentence(variant, seed) -> tuple[int, str] | None``: the first sentence that rewords one of the seed's
  word for word (synonyms swapped in, the words aligned in order: :func:`rewords` over :func:`sentence_words`);
- ``new_only_in_digits(variant, seed) -> bool``: the user text is the seed's once digits are masked, or
  the method sequence is the seed's and so is the parsed ground truth once digits are masked;
- ``seed_copy_reasons(variant, seed) -> list[str]``: located verdict reasons (``novelty:seed_text_copy
  containment=0.87 turn=1 text='...'``, ``novelty:seed_turn_kept turn=3 text='...'``,
  ``novelty:seed_sentence_kept turn=0 text='...'``, ``novelty:digits_only turn=2
  call=... seed_call=...``);
- ``kept_stated_entities(variant, seed) -> list[str]``: the seed's stated values (files, cities, stocks, amounts;
  documented options left out) that the variant states and takes again;
- ``near_copy(a, b) -> str | None``: why two variants (of one scenario) are near-copies, or None;
- ``sibling_copy_reason(task, siblings) -> str | None``: the verdict reason when ``task`` near-copies an
  already accepted variant of its scenario (the four BFCL categories share a scenario, so a sibling
  seed's variants count).

Why n-grams of five words: a run of five words is a phrase; a variant that keeps most of its seed's
five-word runs keeps its sentences (the seed-anchored copies measured 0.873 on average,
issue 13), while a text written anew shares only the dictated values and a few stock
phrases. Containment (not Jaccard) because a copy that adds a sentence is still a copy.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from difflib import SequenceMatcher
from functools import lru_cache

from envs.task import Task
from rods_agents.analysis.knowledge import involves_user_class, zip_codes
from rods_agents.analysis.variant_quality import parsed_ground_truth, skeleton

_WORD = re.compile(r"[a-z0-9#]+(?:'[a-z]+)?")
_DIGITS = re.compile(r"\d+(?:[.,]\d+)*")

N = 5
SEED_TEXT_COPY = 0.6
"""A variant whose user text (entities and digits masked, :func:`masked_text`) has more than this share of its word 5-grams in its seed's is a
copy of the seed: at 0.6 most sentences are the seed's with a few values swapped (the seed-anchored copies
averaged 0.873, fresh wording with the seed's dictated values stays well under 0.5: the issue's target
mean). Masked digits so a copy with nudged numbers is still one."""

SIBLING_TEXT_COPY = 0.5
"""Two variants of one scenario whose user texts (entities and digits masked) share more than half of the shorter one's
word 5-grams are near-copies: the same sentences told twice (sibling seeds differ by a withheld value, a
held-out function or padding, so their untouched copies share most of their text)."""


def user_text(task: Task) -> str:
    return "\n".join(m.content for turn in task.turns for m in turn if m.role == "user")


def _strings(value: object, out: set[str]) -> None:
    if isinstance(value, str):
        if len(value) >= 3:
            out.add(value)
    elif isinstance(value, list | tuple):
        for v in value:
            _strings(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _strings(v, out)


def call_values(task: Task) -> set[str]:
    """The string values of a task's ground-truth calls (three characters or more): its entities."""
    out: set[str] = set()
    for turn in parsed_ground_truth(task):
        for _, args in turn:
            try:
                _strings(json.loads(args) if args else {}, out)
            except json.JSONDecodeError:
                continue
    return out


def _stated_arguments(task: Task) -> dict[str, str]:
    """Each value the ground truth's calls take, as its text would write it ('150' for 150.0), keyed by that form and
    mapped to its method.parameter; documented options (a travel class, an ignition mode: the task's vocabulary, from
    ``value_pools()['swappable']`` or the schema's enum) and numbers up to 2 (a precision, a pedal position) left out."""
    from envs.executor import CallError, parse_call
    from rods_agents.analysis.knowledge import value_pools
    from rods_agents.analysis.value_sources import enum_values

    swappable = value_pools().get("swappable", {})
    out: dict[str, str] = {}
    for calls in task.ground_truth:
        for call in calls:
            try:
                parsed = parse_call(call)
            except CallError:
                continue
            for param, value in parsed.kwargs.items():
                slot = f"{parsed.name}.{param}"
                for v in value if isinstance(value, list) else [value]:
                    if isinstance(v, bool) or not isinstance(v, str | int | float):
                        continue
                    if isinstance(v, str) and (len(v) < 3 or v in swappable.get(slot, ()) or
                                               v in enum_values(parsed.name, param)):
                        continue
                    if not isinstance(v, str) and abs(v) <= 2:
                        continue
                    out.setdefault(str(int(v)) if isinstance(v, float) and v.is_integer() else str(v), slot)
    return out


def _says(text: str, value: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(value)}(?![\w]|\.\d)", text) is not None


def kept_stated_entities(variant: Task, seed: Task) -> list[str]:
    """The values the seed's text states and its ground truth takes (a file, a city, a stock, an amount) that the
    variant's text states and its ground truth takes again. The issue-13 reads mark a pair 'partly new' for such a
    kept entity ('it keeps the seed's San Francisco -> Los Angeles route', '150 liters', 'final_report.pdf'): a count
    of what they see, beside the n-gram measures, which a reworded sentence with the seed's entities passes."""
    seed_text, text = user_text(seed), user_text(variant)
    again = _stated_arguments(variant)
    return sorted(v for v in _stated_arguments(seed) if v in again and _says(seed_text, v) and _says(text, v))


COPIED_SENTENCE_WORDS = 6


def sentence_key(sentence: str) -> str:
    """A sentence's words, lower case, punctuation (straight and curly quotes alike) aside: the key two sentences said
    word for word share."""
    return " ".join(re.findall(r"[a-z0-9]+", sentence.lower()))


@lru_cache(maxsize=1)
def _benchmark_sentences() -> dict[str, frozenset[int]]:
    """Every sentence of six words or more that BFCL's user turns say (all 800 tasks), with the scenarios saying it."""
    from envs.dataset import load_bfcl_tasks

    out: dict[str, set[int]] = {}
    for task in load_bfcl_tasks():
        for sentence in _SENTENCE_END.split(user_text(task)):
            if len(key := sentence_key(sentence).split()) >= COPIED_SENTENCE_WORDS:
                out.setdefault(" ".join(key), set()).add(-1 if task.scenario is None else task.scenario)
    return {k: frozenset(v) for k, v in out.items()}


def other_seed_sentences(variant: Task) -> list[str]:
    """The variant's sentences of six words or more that another BFCL scenario's user says word for word. Its own
    seed's are the seed-copy measures'; another's is a sentence any model trained on the benchmark has seen, whatever
    the rest of the task (read 62 named four: 'May I have the details of the most recent order I've placed to verify
    the transaction?'). The offline rewrite takes a human donor's words whole only where nothing else fits."""
    index = _benchmark_sentences()
    own = -1 if variant.scenario is None else variant.scenario
    return [x.strip() for x in _SENTENCE_END.split(user_text(variant))
            if index.get(sentence_key(x), frozenset({own})) - {own}]


def masked_text(task: Task) -> str:
    """A task's user text with its entities (:func:`call_values`) and digits masked: what is left is its
    wording. Why: a text that is its seed's sentences with every file name, ticker and city renamed shares
    few raw 5-grams with the seed (each name breaks five of them) and still reads as the seed; compared
    with entities masked it is the copy it is."""
    return _masked(user_text(task), call_values(task))


def _masked(text: str, values: set[str]) -> str:
    """``text`` with ``values`` (longest first) and digits masked."""
    for value in sorted(values, key=len, reverse=True):
        text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(value)}(?![A-Za-z0-9])", " # ", text, flags=re.I)
    return mask_digits(text)


KEPT_TURN = 0.8
"""A variant's turn whose words (entities and digits masked) have more than this share of their 5-grams in its seed's
same turn is the seed's sentence kept: a reader sees the seed there, whatever the rest of the text does."""

KEPT_TURN_WORDS = 8
SEED_TURN_COPY = 0.65
"""A turn of at least ``KEPT_TURN_WORDS`` words with more than this share of its masked 5-grams in its seed turn's makes
the variant a copy in part (``novelty:seed_turn_kept``): readers mark such a pair 'partly new' whatever the other
turns do (read 41: 'Could you kindly dispatch the message ... to my colleague' kept around a new message; 'The
nearest airport to Stonebrook. After that, I'd appreciate a price estimate ...' at 0.75 is the seed's sentence with
its values swapped). A short answer kept ('I mean the fuel situation, in liters.') does not, nor a turn whose own
words are new around a format the user dictates (0.58-0.63 in scenario 75)."""


KEPT_SENTENCE = 0.75
"""A variant sentence of ``KEPT_SENTENCE_WORDS`` to ``LONG_SENTENCE_WORDS`` words whose words (:func:`sentence_words`)
align with one of its seed's sentences above this ratio (:class:`difflib.SequenceMatcher`) is the seed's sentence
reworded word by word ('please send him a quick note' for 'please send him a concise message ...', 0.83; 'keep the
fill amount to two decimal places' for 'round the fill amount ...', 0.88). Synonyms break the 5-grams such a sentence
shares with its seed's, so the containment checks pass it; the aligned word sequence does not. Below the bar a short
sentence is one of the few ways to ask for a call ('can you kick this order off for me' / 'would you initiate this
order for me', 0.67)."""

KEPT_SENTENCE_WORDS = 8
LONG_SENTENCE_WORDS = 14
KEPT_LONG_SENTENCE = 0.5
"""A sentence of ``LONG_SENTENCE_WORDS`` words or more is kept above this ratio: half of a long sentence's words aligned
with its seed's in order is its seed's clause order and most of its words, and readers mark the pair 'partly new'
(read 45: 'If it falls under 37.5 PSI, would it make sense to hit the nearest tire shop?' for '... perhaps we could
swing by the nearest tire shop?', 0.59; 'the last thing I need is a highway problem because the tank wasn't filled so
round it off to the nearest hundredth and fill that in', 0.51)."""

_SENTENCE_END = re.compile(r"(?<=[.?!;])\s+|\n+")
_QUOTED_TEXT = re.compile(r"(?<![\w])'[^'\n]*\s[^'\n]*'(?![\w])|\"[^\"\n]*\s[^\"\n]*\"")
"""A quoted text of two words or more; an apostrophe inside a word ('don't', 'I'd') opens or closes none."""
_PROPER = re.compile(r"(?<=\S)(\s+)(?!I\b|I')[A-Z][A-Za-z]*")
_MONTH = re.compile(r"\b(January|February|March|April|May|June|July|August|September|October|November|December)\b")
_SLOT = re.compile(r"\{[a-z]\d?\}")


def sentence_words(text: str, values: set[str] = frozenset()) -> list[list[str]]:
    """The word lists of ``text``'s sentences without what a variant changes or may carry: quoted texts (a message or
    format the user dictates), ``values`` (the task's entities), digits, months, phrasebook slots ('{n}') and
    capitalised words inside a sentence (places and people the calls name by a code: 'from NYC to Tokyo' for NRT).
    What is left is how the sentence asks. Masks are dropped, not kept: kept, they aligned two requests by their
    slots alone ('could you price # class from # # to #' / 'i need a # class seat from # # to #', 0.67)."""
    text = _masked(_QUOTED_TEXT.sub(" # ", _SLOT.sub(" # ", text)), set(values))
    return [[w for w in _WORD.findall(_PROPER.sub(r"\1#", _MONTH.sub("#", x)).lower()) if "#" not in w]
            for x in _SENTENCE_END.split(text) if x.strip()]


def rewords(words: list[str], original: list[str]) -> bool:
    """``words`` (a sentence's, :func:`sentence_words`) reword ``original`` word for word (:data:`KEPT_SENTENCE`,
    :data:`KEPT_LONG_SENTENCE`); a sentence under ``KEPT_SENTENCE_WORDS`` words is nobody's."""
    if len(words) < KEPT_SENTENCE_WORDS or len(original) < KEPT_SENTENCE_WORDS // 2:
        return False
    bar = KEPT_LONG_SENTENCE if len(words) >= LONG_SENTENCE_WORDS else KEPT_SENTENCE
    return SequenceMatcher(None, words, original, autojunk=False).ratio() > bar


def _entities(task: Task) -> set[str]:
    """:func:`call_values` but a value that is a whole turn's text: a turn a later call writes down ('Write my last
    question in it', base_29) is words, not an entity, and masked it let 'Create a file whose name is based on the byte
    count in use.' pass as new beside 'Create a file name based on the number of byte used.' (read 47)."""
    turns = {_turn_text(task, t).strip() for t in range(len(task.turns))}
    return {v for v in call_values(task) if v.strip() not in turns}


def kept_seed_sentence(variant: Task, seed: Task) -> tuple[int, str] | None:
    """The first turn of ``variant`` with a sentence that rewords one of ``seed``'s sentences word for word
    (:func:`rewords`), and that sentence's words; None when every sentence is worded anew."""
    theirs, mine = _entities(seed), _entities(variant)
    seed_sentences = [w for t in range(len(seed.turns)) for w in sentence_words(_turn_text(seed, t), theirs)]
    for t in range(len(variant.turns)):
        for words in sentence_words(_turn_text(variant, t), mine):
            if any(rewords(words, w) for w in seed_sentences):
                return t, " ".join(words)
    return None


def kept_seed_turns(variant: Task, seed: Task, threshold: float = KEPT_TURN) -> list[int]:
    """The turns of ``variant`` that keep their seed's sentences (:data:`KEPT_TURN`; turns of four words or more:
    'Yes, please.' is nobody's). Why per turn: a variant re-worded everywhere but in one long seed turn passes the
    whole-text copy check, and readers marked such variants 'partly new' (reads 25 and 26: 20 of 30)."""
    mine, theirs = call_values(variant), call_values(seed)
    return [t for t in range(min(len(variant.turns), len(seed.turns)))
            if len(_turn_text(variant, t).split()) >= 4
            and containment(_turn_words(variant, t, mine), _turn_words(seed, t, theirs), mask=True) > threshold]


def _turn_words(task: Task, turn: int, values: set[str]) -> str:
    """Turn ``turn``'s text with the task's entities masked, except a value that is the whole turn: a turn a later
    call writes down ('Write my last question in it', base_29) is words, not an entity, and masked whole it read as
    kept whatever its new words."""
    text = _turn_text(task, turn)
    return _masked(text, {v for v in values if v.strip() != text.strip()})


def mask_digits(text: str) -> str:
    return _DIGITS.sub("#", text)


def _words(text: str, mask: bool) -> list[str]:
    return _WORD.findall((mask_digits(text) if mask else text).lower())


def ngrams(text: str, n: int = N, mask: bool = False) -> set[tuple[str, ...]]:
    """The word n-grams of ``text`` (one gram of all its words when it has fewer than n)."""
    words = _words(text, mask)
    if not words:
        return set()
    if len(words) < n:
        return {tuple(words)}
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def containment(text: str, reference: str, n: int = N, mask: bool = False) -> float:
    """Share of ``text``'s word n-grams found in ``reference``'s (0.0 for a text without words)."""
    mine = ngrams(text, n, mask)
    if not mine:
        return 0.0
    return len(mine & ngrams(reference, n, mask)) / len(mine)


def _mutual(a: str, b: str, n: int = N) -> float:
    """Containment of the smaller gram set in the larger one (digits masked): symmetric."""
    ga, gb = ngrams(a, n, True), ngrams(b, n, True)
    if not ga or not gb:
        return 0.0
    return len(ga & gb) / min(len(ga), len(gb))


def _masked_calls(task: Task) -> list[list[tuple[str, str]]]:
    """The parsed calls with digits masked; a zip code the environment knows is its city first (another city
    pair is another trip, not the same one with other numbers)."""
    cities = {z: c for c, z in zip_codes().items()}

    def masked(args: str) -> str:
        return mask_digits(re.sub(r"(?<!\d)\d{5}(?!\d)", lambda m: cities.get(m.group(0), m.group(0)), args))
    return [[(m, masked(args)) for m, args in turn] for turn in parsed_ground_truth(task)]


def new_only_in_digits(variant: Task, seed: Task) -> bool:
    """New only in numbers, ids, tokens or dates: the same user text once digits are masked, or the same
    method sequence with the same parsed ground truth once digits are masked."""
    if mask_digits(user_text(variant)) == mask_digits(user_text(seed)):
        return True
    return skeleton(variant) == skeleton(seed) and _masked_calls(variant) == _masked_calls(seed)


def _quote(text: str, limit: int = 70) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[:limit - 3] + "...")


def _turn_text(task: Task, t: int) -> str:
    return "\n".join(m.content for m in task.turns[t] if m.role == "user") if t < len(task.turns) else ""


def seed_copy_reasons(variant: Task, seed: Task) -> list[str]:
    """Verdict reasons when ``variant`` copies its seed's text or differs from it only in digits; each
    names the turn (the most copied one, or the first that differs only in digits) and its text or call."""
    out: list[str] = []
    whole = containment(masked_text(variant), masked_text(seed), mask=True)
    if whole > SEED_TEXT_COPY:
        per_turn = [(containment(_turn_text(variant, t), _turn_text(seed, t), mask=True), t)
                    for t in range(len(variant.turns)) if _turn_text(variant, t).strip()]
        share, t = max(per_turn) if per_turn else (whole, 0)
        out.append(f"novelty:seed_text_copy containment={whole:.2f} turn={t} turn_containment={share:.2f} "
                   f"text={_quote(_turn_text(variant, t))}")
    elif not involves_user_class(seed):  # a user's own environment has no phrasebook to word its turns anew
        kept = [t for t in kept_seed_turns(variant, seed, SEED_TURN_COPY)
                if len(_turn_text(variant, t).split()) >= KEPT_TURN_WORDS]
        if kept:
            out.append(f"novelty:seed_turn_kept turn={kept[0]} text={_quote(_turn_text(variant, kept[0]))}")
        elif (sentence := kept_seed_sentence(variant, seed)) is not None:
            out.append(f"novelty:seed_sentence_kept turn={sentence[0]} text={_quote(sentence[1])}")
    if new_only_in_digits(variant, seed):
        v_parsed, s_parsed = parsed_ground_truth(variant), parsed_ground_truth(seed)
        where = next(((t, i) for t, (vt, st) in enumerate(zip(v_parsed, s_parsed, strict=False))
                      for i, (vc, sc) in enumerate(zip(vt, st, strict=False)) if vc != sc), None)
        if where is not None:
            t, i = where
            out.append(f"novelty:digits_only turn={t} call={variant.ground_truth[t][i][:80]} "
                       f"seed_call={seed.ground_truth[t][i][:80]}")
        else:
            t = next((t for t in range(len(variant.turns)) if _turn_text(variant, t) != _turn_text(seed, t)), 0)
            out.append(f"novelty:digits_only turn={t} text={_quote(_turn_text(variant, t))}")
    return out


def near_copy(a: Task, b: Task) -> str | None:
    """Why ``a`` and ``b`` are near-copies ('text 0.83': shared 5-grams, digits masked, over the shorter
    text; 'calls': the same parsed calls once digits are masked), or None."""
    text = _mutual(masked_text(a), masked_text(b))
    if text > SIBLING_TEXT_COPY:
        return f"text {text:.2f}"
    ca = Counter(c for turn in _masked_calls(a) for c in turn)
    cb = Counter(c for turn in _masked_calls(b) for c in turn)
    if ca and ca == cb:
        return "calls"
    return None


def sibling_copy_reason(task: Task, siblings: list[Task]) -> str | None:
    """``novelty:sibling_copy of=<id> why=...`` when ``task`` near-copies an accepted variant of its scenario."""
    for other in siblings:
        if other.id == task.id or other.scenario != task.scenario:
            continue
        why = near_copy(task, other)
        if why:
            return f"novelty:sibling_copy of={other.id} scenario={task.scenario} why={json.dumps(why)}"
    return None


__all__ = ["KEPT_TURN", "KEPT_TURN_WORDS", "N", "SEED_TEXT_COPY", "SEED_TURN_COPY", "SIBLING_TEXT_COPY", "call_values", "containment", "kept_seed_turns", "kept_stated_entities", "mask_digits", "masked_text", "near_copy", "new_only_in_digits",
           "ngrams", "seed_copy_reasons", "sibling_copy_reason", "user_text"]
