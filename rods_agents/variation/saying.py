"""What a sentence says of a task's values: the checks a donor's words must pass to stand for the variant's calls.

A donor sentence (a piece of another train turn, or a phrasebook sentence) is re-instantiated on the variant's values
(:mod:`rods_agents.variation.donor_fit`); these checks say whether the result still says every value the seed turn says
(:func:`keeps_said`), says nothing more (:func:`says_no_more`: a value the seed leaves to the assistant stays unsaid),
names a date or a code the same way (:func:`named_as`), carries the seed's specifics (:func:`keeps_specifics`,
:func:`with_specifics`), and brings no premise or name of another task's story (:func:`premise_free`,
:func:`foreign_names`).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from rods_agents.analysis import knowledge
from rods_agents.analysis.catalog import build_catalog
from rods_agents.analysis.faithfulness import choice_words, says
from rods_agents.analysis.information_structure import _QUOTED, lexicon, reads_as_condition
from rods_agents.analysis.value_sources import (
    CITY_ALIASES,
    _dates,
    _numbers,
    airport_cities,
    enum_values,
    stated_as_date,
    ticker_companies,
)
from rods_agents.variation.seed_anchor import ISO_DATE, MONTHS, date_words, ordinal
from rods_agents.variation.turn_bank import SENTENCE_END, Slot

# A human turn opened by a premise of its own conversation ('With the liters in mind, ...', 'Now that the tank is
# full, ...', 'Finally, ...') or a persona ('I am Alice', 'As a high-ranking official, ...') carries its story into
# the variant, where the premise is false: the independent reads found such leftovers in over half of 30 pairs.
_PREMISE = re.compile(
    r"(?:^|(?<=[.?!]\s))(?:with|given|now that|since|after|once|having|following|finally|lastly|furthermore|moreover|"
    r"additionally|speaking of|in light of|on top of|as|considering|upon|building on|in addition|subsequently|"
    r"meanwhile|besides|then|next|also|oh|earlier)\b"
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


def word_set(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[A-Za-z][\w'-]*", text)}


def companies_of(world: set[str]) -> set[str]:
    """The company names of the tickers in ``world`` ('quasar ltd.' for 'quas'): how a user names a stock."""
    return {v.lower() for k, v in ticker_companies().items() if k.lower() in world}


def premise_free(text: str) -> bool:
    """True when a human turn's words presuppose nothing of their own conversation: no sentence opens on a
    premise or a hand-over ('Given this apprehension, ...', 'Finally, ...'), no persona is introduced, no
    second-person story is told. Only such turns are donors: the phrasebook words the rest."""
    return _PREMISE.search(text.strip()) is None


def date_forms(old: str, new: str, text: str) -> list[tuple[str, str]]:
    """(old form, new form) of an ISO date the donor writes in words ('December 15th, 2026'), the forms
    found in ``text`` only, longest first."""
    mo, mn = ISO_DATE.match(old), ISO_DATE.match(new)
    if not mo or not mn:
        return []
    olds, news = date_words(old), date_words(new)
    return [(o, n) for o, n in zip(olds, news, strict=True) if re.search(rf"(?<!\w){re.escape(o)}(?!\w)", text, re.I)]


CODE_PATTERN = re.compile(r"[A-Z]{2,5}")


def word_in(word: str, text: str) -> bool:
    return word in text and _word_pattern(word).search(text) is not None  # the substring test rules out most


@lru_cache(maxsize=8192)
def _word_pattern(word: str) -> re.Pattern:
    return re.compile(rf"(?<![A-Za-z0-9]){re.escape(word)}(?![A-Za-z0-9])")


def as_sentence(text: str) -> str:
    """``text`` ending as a sentence does: a full stop added unless it ends in one, inside a closing quote too
    ('tell them: "Unexpected charge found."', never '..."."')."""
    text = text.strip()
    return text if text[-1:] in ".?!" or (text[-1:] in "\"'" and text[-2:-1] in ".?!") else text + "."


def scalars_of(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _written(value: str, text: str) -> bool:
    """``value`` in ``text`` in any case; a long one (a dictated message) also without its closing stop, as a seed
    may quote it ('... I'll update you soon'.')."""
    low = text.lower()
    return value.lower() in low or (len(value) > 20 and value.rstrip(".!").lower() in low)


def says_value(value: Any, text: str, dates: set[str], nums: set[float]) -> bool:
    """``value`` is written in ``text``: as itself (any case), an ISO date in words, a number in any form, an
    airport code by its city's name."""
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, int | float):
        return float(value) in nums
    if not isinstance(value, str) or len(value) < 3:
        return False
    if _written(value, text) or stated_as_date(value, dates):
        return True
    city = airport_cities().get(value)
    return bool(city) and any(word_in(c, text) for c in (city, *CITY_ALIASES.get(city, ())))


@lru_cache(maxsize=1)
def _worded_choices() -> frozenset[str]:
    return frozenset(o for options in choice_words().values() for o in options if len(o) >= 5)


def keeps_said(text: str, target: tuple[Slot, ...], span: str) -> bool:
    """Every value of ``target`` that the replaced words (``span``) write, ``text`` writes too: a donor that
    leaves a value to an earlier turn of its own conversation ('book the flight' after a turn naming it)
    would leave the variant's value unsaid, which the re-measure then rejects (a wasted try)."""
    span_dates, dates, span_nums, nums = _dates(span), _dates(text), _numbers(span), _numbers(text)
    for x in target:
        if x.source == "withheld":
            continue
        for v in scalars_of(json.loads(x.value)):
            if x.flag and not (isinstance(v, str) and v in _worded_choices() and word_in(v, span)):
                continue  # an option a verb implies ('start the engine': START) may go unsaid; a choice the table of
                # choice words knows, named as itself ('comprehensive travel insurance'), must be named, or the
                # variant leaves the choice open (the verdict's unfaithful:option_unsaid)
            if says_value(v, span, span_dates, span_nums) and not says_value(v, text, dates, nums):
                return False
    return True


def says_no_more(text: str, target: tuple[Slot, ...], span: str) -> bool:
    """Every value of ``target`` that ``text`` writes, the replaced words (``span``) write too, options included:
    a sentence that repeats the token, the route or the class the seed's turn left to an earlier turn ('book it
    as we discussed'), or names the option the seed described ('the climate settings' for 'the AC temperature'),
    makes the turn easier (issue 13's independent reads: 12 and 9 of 30); so does the ticker for the company
    the seed names or the ISO date for its words (:func:`said_as_is`)."""
    dates, span_dates, span_nums, nums = _dates(text), _dates(span), _numbers(span), _numbers(text)
    for x in target:
        if x.source == "withheld":
            continue
        for v in scalars_of(json.loads(x.value)):
            if isinstance(v, bool) or not says_value(v, text, dates, nums):
                continue
            if not says_value(v, span, span_dates, span_nums) or (said_as_is(v, text, nums)
                                                             and not said_as_is(v, span, span_nums)):
                return False  # the same form only: a city for the city, never the code for the city
            if isinstance(v, str) and len(v.split()) >= 3 and quoted_in(v, text) and not quoted_in(v, span):
                return False  # a text the seed writes into its sentence, left to the assistant to lift out ('contact
                # support with the details to solve this unexpected charge found on the invoice'), dictated in quotes
                # ('Send customer service this note: "Unexpected charge found on the invoice."'; read 27, #2)
    return True


def quoted_in(value: str, text: str, ends: str = " .!?") -> bool:
    """``value`` (a text of three words or more, less the ``ends`` around it) stands inside quotes in ``text``."""
    low = value.lower().strip(ends)
    return any(low in m.group(0).lower() for m in _QUOTED.finditer(text))


def times_named(value: str, text: str) -> int:
    """How often ``text`` writes ``value`` as a word of its own: 'research' inside 'research_notes.txt' is no mention."""
    return len(re.findall(rf"(?<![\w.\-]){re.escape(value)}(?![\w\-]|\.\w)", text, re.I))


def says_all(slots: tuple[Slot, ...], text: str) -> bool:
    """Every value of ``slots`` is written in ``text`` as a word of its own (a number in any form): 'research' inside
    'research_notes.txt' names no folder, so the context sentence 'In research directory, ...' stays."""
    nums = _numbers(text)

    def said(v: Any) -> bool:
        if isinstance(v, int | float) and not isinstance(v, bool):
            return float(v) in nums
        return isinstance(v, str) and times_named(v, text) > 0
    return all(said(v) for x in slots for v in scalars_of(json.loads(x.value)))


def said_as_is(value: Any, text: str, nums: set[float]) -> bool:
    """``value`` is written in ``text`` as it is: a code in its own case as a word ('Zeta Corp' does not say ZETA,
    'Los Angeles' does not say LAX), a string in any case, a number in any form. A sentence that writes the ticker
    for a company the seed names, the code for its city or the ISO date for its words hands the assistant a step."""
    if isinstance(value, int | float):
        return float(value) in nums
    if not isinstance(value, str):
        return False
    if CODE_PATTERN.fullmatch(value):
        return word_in(value, text)
    return _written(value, text)


def named_as(value: Any, span: str) -> str | None:
    """The words ``span`` names a code by where it does not write the code itself: the airport's city ('Los
    Angeles' or 'LA' for LAX), the ticker's company ('Zeta Corp' for ZETA). A sentence written for the turn
    names the value the same way, so the lookup the seed leaves to the assistant stays left to it. A date the turn
    writes in words is written in words too ('October 15th, 2026'; without the year where the turn leaves it out)."""
    if isinstance(value, list) and value and all(isinstance(v, str) and v[:1] in "#@" for v in value):
        return _named_without_sign(value, span)
    if not isinstance(value, str) or said_as_is(value, span, set()):
        return None
    if date := ISO_DATE.match(value):
        found = [old for old, _ in date_forms(value, value, span)]
        year, month, day = (int(x) for x in date.groups())
        words = f"{MONTHS[month - 1]} {ordinal(day)}"
        if not found:
            return date_riddle(year, month, day, span)
        return f"{words}, {year}" if any(str(year) in f for f in found) else words
    if (split := _said_in_parts(value, span)) is not None:
        return split
    if not CODE_PATTERN.fullmatch(value):
        return _folder_as_named(value, span)
    city = airport_cities().get(value)
    for form in (*CITY_ALIASES.get(city, ()), city) if city else ():
        if word_in(form, span):
            return form
    company = ticker_companies().get(value)
    if company and re.search(rf"\b{re.escape(company)}", span, re.I):
        return company
    return None


_ORDINAL_WORDS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
                  "eleventh", "twelfth"]


def date_riddle(year: int, month: int, day: int, span: str) -> str | None:
    """The words ``span`` spreads a date over, where it writes it in no form a reader takes at a glance ('the 15th of
    the year 2026's eleventh month', 'the 15th of next month, which is November of 2026', base_152 and base_190): the
    day, the month (by name or by its ordinal) and the year, within one clause. A sentence written for the turn
    repeats those words, so putting the date together stays the assistant's (every sample of those scenarios kept
    the seed's whole first turn, and siblings were copies of each other); None when the span has no such clause."""
    tokens = [rf"\b{day}(?:st|nd|rd|th)?\b", rf"\b{year}\b",
              rf"\b(?:{MONTHS[month - 1]}|{MONTHS[month - 1][:3]}\.?|{_ORDINAL_WORDS[month - 1]}\s+month)\b"]
    spots = []
    for pattern in tokens:
        found = [m for m in re.finditer(pattern, span, re.I) if not _inside_quotes(span, m.start())]
        if len(found) != 1:
            return None  # missing, or said twice: which one the date is would be a guess
        spots.append(found[0])
    lo, hi = min(m.start() for m in spots), max(m.end() for m in spots)
    clause = span[lo:hi]
    if hi - lo > 60 or re.search(r"[.;!?]\s", clause):
        return None
    the = re.search(r"\bthe\s+$", span[:lo], re.I)
    return f"the {clause}" if the else clause


def _inside_quotes(span: str, at: int) -> bool:
    """``at`` sits inside a quoted text ('... 'Trip on the 15th' ...'): a number there dates nothing."""
    return any(m.start() < at < m.end() for m in _QUOTED.finditer(span))


_IN_PARTS = re.compile(r"(?<![\w'])'?([A-Za-z0-9]+)'?\s+(?:followed by|and then)\s+'?([A-Za-z0-9]+)'?", re.I)


def _said_in_parts(value: str, span: str) -> str | None:
    """The words ``span`` gives a value by in two parts ('P followed by 12345678' for the passport P12345678,
    base_153): a sentence written for the turn says them so too, so joining them stays the assistant's (every sample
    of scenario 153 kept the seed's first turn whole)."""
    for m in _IN_PARTS.finditer(span):
        if m.group(1) + m.group(2) == value:
            return m.group(0)
    return None


def _folder_as_named(value: str, span: str) -> str | None:
    """The singular or plural a turn names a folder by, next to the word 'folder' or 'directory' ('Go into document
    folder' for 'documents', base_2): a sentence written for the turn names it the same way, so matching the name to
    the folder stays the assistant's (new words saying 'documents' said no more than the seed only in the seed's own
    sentence, which every sample of scenario 2 kept)."""
    if not re.fullmatch(r"[a-z]{4,}", value):
        return None
    for form in (value[:-1] if value.endswith("s") else None, value + "s"):
        if form and re.search(rf"\b{form}\s+(?:folder|directory)\b", span, re.I):
            return form
    return None


def _named_without_sign(tags: list[str], span: str) -> str | None:
    """Hashtags or handles the turn names without their '#' or '@' ("with the hashtag 'BusinessOnTheMove'"), written
    that way again (quoted where the turn quotes them; hashtags after 'the hashtag'), so adding the sign stays the
    assistant's; None when the turn writes any of them with its sign or not at all."""
    forms = []
    for tag in tags:
        bare = tag[1:]
        # the word inside a quoted text of its own ('Post 'Travel is fun' with a fitting hashtag') names no tag
        outside = _QUOTED.sub(lambda m, b=bare: m.group(0) if m.group(0)[1:-1].strip() == b else " ", span)
        if re.search(rf"{re.escape(tag)}(?!\w)", span) or not re.search(rf"(?<![\w#@]){re.escape(bare)}(?!\w)", outside):
            return None
        forms.append(f"'{bare}'" if re.search(rf"'{re.escape(bare)}'", span) else bare)
    said = forms[0] if len(forms) == 1 else ", ".join(forms[:-1]) + " and " + forms[-1]
    if tags[0][0] == "#":  # a bare word is no hashtag by itself: 'include the hashtag 'X'', not 'include 'X''
        said = ("the hashtag " if len(forms) == 1 else "the hashtags ") + said
    return said


_SPECIFIC = re.compile(r"[#@]\w+(?:\.\w+)*")  # a dot inside (@user.name), never the full stop after


def keeps_specifics(text: str, span: str) -> bool:
    """Every number, quoted value, hashtag and handle of the replaced words (``span``) is in ``text`` too: 'end with
    50 gallons' decides a fill of 40 even where 50 is no argument, and '#BusinessOnTheMove' may be said without
    quotes. (A phrasebook sentence writes only its call's values; a human turn is re-instantiated whole.)"""
    return _numbers(span) <= _numbers(text) and _keeps_quoted(text, span)


def _keeps_quoted(text: str, span: str) -> bool:
    """Every quoted value, hashtag and handle of ``span`` is in ``text`` (:func:`keeps_specifics` less the numbers)."""
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


_UPPER_LIMIT = re.compile(
    r"\b(?:no|not) more th[ae][nt]|\b(?:not|never) (?:to )?exceed(?:ing)?|\bunder|\bbelow|\bless than|\bat most|\bup to"
    r"|\bmax(?:imum)?\b(?:\s+\w+){0,2}\s+(?:is|of|at)|\blimit (?:is|of)", re.I)
_AMOUNT = re.compile(r"(?P<amount>\$\s?\d(?:[\d,]*\d)?(?:\.\d+)?|\d(?:[\d,]*\d)?(?:\.\d+)?(?:\s?(?:dollars|USD|bucks))?)")


_FACTS = {  # kind -> where a sentence states it; 'value': the number as written
    "cvv": re.compile(r"\bCVV\b(?:\s+(?:code|number))?(?:\s+(?:of|is))?(?:[^.?!\d]{0,25}\b(?:which|that) is)?\s*"
                      r"(?P<value>\d{3,4})\b", re.I),  # 'the CVV when needed, which is 456'
    "expiry": re.compile(r"\bexpir\w*(?:\s+date)?(?:\s+(?:on|in|of|is|at))?\s*(?P<value>\d{1,2}/\d{2,4}|\d{4})\b", re.I),
    # 'estimated at $1,200'; 'at a cost of 4700 dollars' (base_193: the price the user expects, which no call takes)
    "estimate": re.compile(r"\b(?:estimated\s+(?:at|to be)|at\s+a\s+(?:cost|price|fare)\s+of)\s*"
                           r"(?P<value>\$\s?\d(?:[\d,]*\d)?(?:\.\d+)?|\d(?:[\d,]*\d)?(?:\.\d+)?\s+dollars\b)", re.I),
}


def restated_numbers(sentence: str, untaken: set[float], key: str) -> list[str] | None:
    """The numbers of ``sentence`` that no call takes (``untaken``) said on their own, in the sentence's order, one
    sentence each from ``prompts/bfcl/restated_numbers.json``: a card's CVV or expiry ('expiring on 10/2026, with CVV
    456'), an estimate ('estimated at $1,200'), a spending cap ('costing no more that $2500', 'with a cost under
    $1200', 'My max spending limit is 7000'; upper bounds only). None unless every one of them is one of those. Each
    keeps its sense and its number as written; the plan's limit check (:func:`rods_agents.variation.plan_checks.flips`)
    held the variant's costs to a cap already, and reads every cap sentence of the table as a limit too. ``key`` picks
    the sentences (the new words, so siblings differ); they follow the new words, after any sentence kept whole."""
    table = knowledge.table("restated_numbers")
    found: list[tuple[int, str]] = []
    covered: set[float] = set()

    def say(kind: str, pos: int, value: str) -> None:
        pool = table.get(kind) or []
        if pool:
            found.append((pos, pool[sum(map(ord, f"{key}|{kind}|{value}")) % len(pool)].format(value=value)))
            covered.update(_numbers(value))

    card = re.search(r"\b(?:card|CVV)\b", sentence, re.I) is not None  # a CVV or an expiry of a card, not a passport's
    for kind, pattern in _FACTS.items():
        for m in pattern.finditer(sentence):
            if _numbers(m.group("value")) & untaken and (card or kind == "estimate"):
                say(kind, m.start(), m.group("value"))
    for n in sorted(untaken - covered):
        spot = next((m for m in _AMOUNT.finditer(sentence)
                     if _numbers(m.group("amount")) == {abs(n)} and _capped(sentence[:m.start()], m.group("amount"))), None)
        if spot is not None:
            say("upper", spot.start(), spot.group("amount").strip())
    return [text for _, text in sorted(found)] if untaken <= covered else None


_NEGATED = re.compile(r"(?:\b(?:no|not|never)|n't)(?:\s+\w+)?\s*$", re.I)
_MONEY_WORDS = re.compile(r"\$|\b(?:dollars?|USD|bucks|cost\w*|price\w*|fare|spend\w*|budget|pay|afford|limit)\b", re.I)


def _capped(before: str, amount: str) -> bool:
    """The words right before an amount make it an upper bound on money ('no more than $2500', 'a cost under $1200',
    'spending limit is 7000'); never a negated lower bound ('no less than', 'not below') or a count ('up to 4 guests')."""
    clause = before[-40:].rsplit(",", 1)[-1]
    leads = list(_UPPER_LIMIT.finditer(clause))
    if not leads or clause[leads[-1].end():].split() or _NEGATED.search(clause[:leads[-1].start()]):
        return False
    return bool(_MONEY_WORDS.search(amount) or _MONEY_WORDS.search(clause))


def _without_numbers(span: str, numbers: frozenset[float]) -> str:
    """``span`` with the numbers of ``numbers`` left out (for the check of what the new words must say only)."""
    if not numbers:
        return span
    return _NUMBER_TEXT.sub(lambda m: "" if float(m.group(0).replace(",", "")) in numbers else m.group(0), span)


def with_specifics(text: str, span: str, methods: tuple[str, ...], values: str, world: set[str] | None = None,
                   earlier: str = "", implied: frozenset[float] = frozenset()) -> str | None:
    """``text``, followed where it must be by the sentences of ``span`` that hold a number, a quoted value, a hashtag
    or a handle ``text`` lacks and ask for none of ``methods`` ("Your user id is 'USR001'." after the message it
    sends: the value an implicit login takes). None when such a sentence also asks for a call (it would ask twice),
    holds a number no call of the task takes that reads as a bound (:func:`untaken_limit`), or a quoted value neither
    a call nor the state (``world``) holds (``values``: the ground truth's text). A quoted value the user's
    ``earlier`` turns already said is no specific the new words must repeat ('Copy X to the 'Archives' directory
    inside the 'Documentation' folder' after 'I should have X in the 'Documentation' folder'): the re-measure of
    the re-worded turn still checks that every value stays as findable as before. ``implied``: numbers the new words
    say in words of their own, a recipe's result (50 gallons, the tank's capacity, for 'Fill the tank up
    completely.' where the seed said 'top it up to end with 50 gallons'): they need not be said as numbers."""
    if keeps_specifics(text, _specifics_of(_without_numbers(span, implied), earlier, text)):
        return text
    bounds = [0, *(m.end() for m in SENTENCE_END.finditer(span))]
    sentences = [span[a:b].strip() for a, b in zip(bounds, [*bounds[1:], len(span)], strict=True)]
    missing = [x for x in sentences if x and not keeps_specifics(text, _specifics_of(x, earlier, text))]
    cues = [p for name in methods for p in lexicon().methods.get(name, ((), None))[0]]
    lower, taken, said = values.lower(), _numbers(values), text.lower()
    kept: list[str] = []  # sentences that follow the new words as they are
    again: list[str] = []  # numbers no call takes said on their own, for a sentence holding nothing else beyond them
    for x in missing:
        restated = _restated_only(x, text, taken, earlier)
        if restated is None:
            kept.append(x)
        else:
            again += restated
    joined = text
    if any(asks(x, cues) for x in kept):
        joined, kept = _with_clauses(text, kept, cues, earlier)
    if not (kept or again or joined != text) or any(asks(x, cues) for x in kept):
        return None
    if any(q not in lower and q not in (world or ()) and q not in _documented_options()
           for q in _quoted_in(joined) - _quoted_in(text)):
        return None  # a clause carried beside the new words names a value of another world
    text = joined
    for x in kept:
        quoted = _quoted_in(x)
        if any(len(q) >= 3 and q in said for q in quoted):
            return None  # it restates what the new words say: part of their request, said twice ("..., description
            # 'Y.' Details write 'Y.', priority be level 4.", read of 2026-12-03)
        if untaken_limit(x, _numbers(_QUOTED.sub(" ", x)) - _numbers(text) - taken):
            return None  # (a number inside a quoted value is part of that value, not a bound: '1914 7th St')
        if any(q and q not in lower and q not in (world or ()) for q in quoted) and not reads_as_condition(x):
            return None  # a value of another world; a branch the task never takes keeps its own ('If it is
            # reachable, set navigation to '1914 7th St, ...'', base_66: the assistant must see it is not reachable)
    out = " ".join([as_sentence(text), *(as_sentence(x) for x in kept), *again])
    return out if keeps_specifics(out, _specifics_of(span, earlier, out)) else None


_LEADING_CLAUSE = re.compile(r"^((?:In|Inside|Within|From|At)\b[^,.;:!?]{3,80}),\s+(?=\S)")
_FIRST_PERSON = re.compile(r"I\b")  # 'I'd like ...' keeps its capital after a leading clause
_TRAILING_CLAUSE = re.compile(r"\s((?:before|after|once|until|while)\s[^,.;:!?]{3,100})[.!?]?$", re.I)
_IDENTIFIER = re.compile(r"\b\w*(?:_\w*|\d)\w*\b")


def asks(sentence: str, cues: list[re.Pattern]) -> bool:
    """Some cue of ``cues`` (a method's lexicon phrases) reads ``sentence`` as asking for the call, its ids aside:
    'the booking id is insurance_12345' names a booking, it asks for no insurance (base_187 kept the seed's turn)."""
    plain = _IDENTIFIER.sub(" ", sentence)
    return any(p.search(plain) for p in cues)


def _quoted_in(text: str) -> set[str]:
    return {m.group(0)[1:-1].strip().lower() for m in _QUOTED.finditer(text)} - {""}


@lru_cache(maxsize=1)
def _documented_options() -> frozenset[str]:
    """Every option a catalog parameter documents ('START' of ``startEngine.ignitionMode``), lower-cased: a clause
    naming one ('before I turn on the ignition using the 'START' mode') names no value of another world."""
    return frozenset(v.lower() for m in build_catalog().methods.values() for p in m.params
                     for v in enum_values(m.name, p.name))


def _with_clauses(text: str, kept: list[str], cues: list[re.Pattern], earlier: str) -> tuple[str, list[str]]:
    """``text`` with the clause of a kept sentence that holds its specifics, where the rest of that sentence asks
    for the call ``text`` words: a leading place ('In my existing folder called 'Lectures', ...') goes before the
    new words, a trailing time clause ('... before I turn on the ignition using the 'START' mode.') after them.
    Why: such a sentence asks for the call again, so it cannot follow the new words whole, and before this the
    turn kept the seed's sentence (scenarios 42 and 75). The sentences it leaves are returned for the usual checks."""
    rest: list[str] = []
    for x in kept:
        lead, trail = _LEADING_CLAUSE.match(x), _TRAILING_CLAUSE.search(x)
        clause = next((m.group(1) for m in (lead, trail) if m is not None and not asks(m.group(1), cues)
                       and not keeps_specifics("", _specifics_of(m.group(1), earlier, text))), None)
        if clause is None or not keeps_specifics(f"{text} {clause}", _specifics_of(x, earlier, text)):
            rest.append(x)
        elif lead is not None and clause == lead.group(1):
            head = text if _FIRST_PERSON.match(text) else text[:1].lower() + text[1:]
            text = f"{clause}, {head}"
        else:
            body = text.rstrip()
            end = body[-1] if body[-1:] in ".!?" else "."
            text = f"{body.rstrip('.!?')} {clause}{end}"
    return text, rest


def _restated_only(sentence: str, text: str, taken: set[float], earlier: str) -> list[str] | None:
    """The sentences that say again the numbers of ``sentence`` no call takes (:func:`restated_numbers`), when those
    are all it holds beyond ``text``."""
    rest = _specifics_of(sentence, earlier, text)
    lacking = _numbers(rest) - _numbers(text)
    if not lacking:
        return _restated_ids(sentence, rest, text)
    if not lacking - taken or lacking & taken or not _keeps_quoted(text, rest):
        return None
    return restated_numbers(sentence, lacking - taken, text)


# an id the user gives that no call takes: "using my sender id 'MichaelTpss'" (base_199's distractor)
_QUOTED_ID = re.compile(r"\b(?:my|the)\s+((?:[a-z]+\s+){0,2}id)\s+(?:is\s+|of\s+)?'([^']+)'", re.I)


def _restated_ids(sentence: str, rest: str, text: str) -> list[str] | None:
    """Sentences that say again the quoted ids of ``sentence`` the new words ``text`` lack ("My sender id is
    'MichaelTpss'."), when those are all they lack: base_199 gives a sender id no call takes beside the message it
    dictates, so every new wording was refused for dropping it, and all eight samples kept the seed's sentence."""
    low = text.lower()
    lacking = sorted(q for q in _quoted_in(rest) if q not in low)
    said = {m.group(2).strip().lower(): f"My {m.group(1).lower()} is '{m.group(2)}'." for m in _QUOTED_ID.finditer(sentence)}
    if not lacking or any(q not in said for q in lacking):
        return None
    return [said[q] for q in lacking]


def _specifics_of(span: str, earlier: str, text: str) -> str:
    """What of ``span`` the new words must keep (:func:`keeps_specifics`): its quoted values less those the ``earlier``
    turns said (:func:`_unquote_said`), and its numbers less a 'one' in words ('I only have one past booking history'
    is a count of a fact, which new words may leave out; before, it kept base_187's sentence beside them)."""
    return _ONE.sub(" ", _unquote_said(span, earlier, text))


_ONE = re.compile(r"\bone\b", re.I)


def _unquote_said(span: str, earlier: str, text: str) -> str:
    """``span`` without the quotes around values the ``earlier`` turns said and ``text`` does not (a name of three
    characters or more: the quotes are what make :func:`keeps_specifics` hold a value to be repeated)."""
    if not earlier:
        return span
    low = earlier.lower()

    def plain(m: re.Match) -> str:
        inner = m.group(0)[1:-1]
        q = inner.strip().strip(",.;:").strip().lower()
        return inner if len(q) >= 3 and q in low and q not in text.lower() and not _numbers(q) else m.group(0)
    return _QUOTED.sub(plain, span)


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


def dictated(value: Any) -> bool:
    """A value that is text to be written as it is (a comment, a message, a title of three words or more, or one
    ending in a punctuation mark), not a name or a number a sentence can say bare."""
    return isinstance(value, str) and (len(value.split()) >= 3 or value.rstrip()[-1:] in tuple("!?.,"))


__all__ = ["CODE_PATTERN", "as_sentence", "asked_as_said", "companies_of", "date_forms", "dictated", "foreign_names", "keeps_said", "keeps_specifics", "named_as", "names_other_option", "premise_free", "said_as_is", "says_all", "says_no_more", "says_value", "scalars_of", "source_as_said", "times_named", "restated_numbers", "untaken_limit", "with_specifics", "word_in", "word_set"]
