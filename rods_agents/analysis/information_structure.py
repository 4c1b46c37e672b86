"""The information structure of a task: what the user says and what the assistant must work out.

Computed for any task (seed or variant) from its user text, ground truth and execution trace, with a
per-method lexicon kept as data (``prompts/bfcl/method_lexicon.json``). Per turn:

- **calls**, explicit or implicit: a call is *explicit* when the text that asks for its turn (the
  turn's own text, plus the withholding / pre-reveal turn before it) carries one of the method's
  lexicon phrases, or states one of its argument values (``by_value``; not for navigation,
  preconditions, logins and id lookups, which the assistant infers: ``cd``, ``pressBrakePedal``,
  ``ticket_login``, ``get_user_id``, ...). An explicit call is asked for *by goal* when only a phrase of the
  method's ``hints`` asks for it ('confirm my flight booking's details' for ``retrieve_invoice``) and *named* when
  words naming it do ('the invoice'): a variant that names a call its seed asks for by goal tells the assistant
  which step to take (read of 2026-12-05), and is refused (``goal_made_named``);
- **conditions**: a condition cue ("Should any tire fall below", "if", "unless", "in case") in a
  sentence of a turn whose calls follow an earlier call whose result decides it;
- **references**: an argument value picked out of an earlier result (or the explorable state)
  that lists several candidates, with the cue that picks it (by position: "the last stock on the
  list"; by property: "the most recent order"; by filter: "the one making GPUs");
- **transformations**: a ``composed`` value (:mod:`rods_agents.analysis.value_sources`) with the cue that
  says how it is built ("Round to nearest integer", "in the format ... where XXX");
- **withheld** (miss_param): the parameter a turn leaves out and the turn that supplies it;
- **held-out function** (miss_func): on the turn that asks for work needing a function that is only
  revealed at the next turn.

:func:`compare_structure` says, with machine-readable reasons, how a variant breaks its seed's
structure; the verdict rejects on them. Accuracy on 30 hand-labelled seeds: docs/information-structure.md.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, Field

from envs import threadsafe_ast
from envs.task import Task
from prompts import PROMPTS_DIR as PROMPTS
from rods_agents.analysis import knowledge
from rods_agents.analysis.catalog import build_catalog
from rods_agents.analysis.obtainability import public_state
from rods_agents.analysis.tracing import CallRecord, Trace, stated_limits, trace_task
from rods_agents.analysis.value_sources import (
    ArgSource,
    _dates,
    _numbers,
    classify_arguments,
    is_flag,
    named_by_lookup,
    stated_as_date,
    user_text_upto,
)

LEXICON = PROMPTS / "bfcl/method_lexicon.json"
REASON = "information_structure"
_SENTENCE = re.compile(r"[^.?!;]+[.?!;]?")
_QUOTED = re.compile(r"(?<![\w])'[^'\n]{2,}?'(?![\w])|\"[^\"\n]+\"")
_TOKENS = re.compile(r"[A-Za-z]{3,}|\d+(?:\.\d+)?")
_ROUND_CUE = re.compile(r"\bround\w*|\bnearest (integer|whole|hundredth|tenth|dollar)|\bwhole number|\bdecimal places?\b"
                        r"|\bonly (write )?the integer\b", re.I)


class CallInfo(BaseModel):
    turn: int
    index: int
    method: str
    explicit: bool
    cue: str | None = Field(default=None, description="The text span that asks for the call.")
    by_goal: bool = Field(default=False, description="Asked for only by what it is for ('confirm my booking's "
                          "details' for retrieve_invoice: a lexicon ``hints`` phrase), no words naming the call.")
    named: bool = Field(default=False, description="Words naming the call ask for it ('the invoice').")


class Condition(BaseModel):
    turn: int
    cue: str = Field(description="The sentence part that makes the call conditional.")
    depends_on: list[str] = Field(description="Methods whose earlier results decide the condition.")


class Reference(BaseModel):
    turn: int
    kind: Literal["position", "property", "filter"]
    cue: str
    method: str
    param: str


class Transformation(BaseModel):
    turn: int
    cue: str = Field(description="The wording that says how the value is built ('' when none is found).")
    method: str
    param: str
    kind: Literal["round", "number", "text"] = "text"


class Withheld(BaseModel):
    turn: int
    method: str
    param: str
    supplied_at: int | None
    stated_before: bool = Field(default=False, description="The value is already said at or before the withholding turn.")
    index: int | None = Field(default=None, description="Position of the supplying call in its turn: two lookups of "
                              "one method (a zip code per city) withhold one city, not both.")


class TurnStructure(BaseModel):
    turn: int
    calls: list[CallInfo] = Field(default_factory=list)
    conditions: list[Condition] = Field(default_factory=list)
    references: list[Reference] = Field(default_factory=list)
    transformations: list[Transformation] = Field(default_factory=list)
    withheld: Withheld | None = None
    held_out_function: str | None = None
    unresolved_picks: int = Field(default=0, description="Values picked from several candidates with no cue "
                                  "in the text: the text does not pin the ground truth down.")
    limits: list[float] = Field(default_factory=list, description="Thresholds the user states that no call takes "
                                "('By promising I mean the price is larger than 300'): a condition reads them.")


class InformationStructure(BaseModel):
    turns: list[TurnStructure]

    def implicit_share(self) -> float:
        calls = [c for t in self.turns for c in t.calls]
        return round(sum(not c.explicit for c in calls) / len(calls), 4) if calls else 0.0

    def counts(self) -> dict[str, int]:
        calls = [c for t in self.turns for c in t.calls]
        return {"calls": len(calls), "implicit": sum(not c.explicit for c in calls),
                "conditions": sum(len(t.conditions) for t in self.turns),
                "references": sum(len(t.references) for t in self.turns),
                "transformations": sum(len(t.transformations) for t in self.turns),
                "withheld": sum(t.withheld is not None for t in self.turns),
                "held_out": sum(t.held_out_function is not None for t in self.turns),
                "unresolved_picks": sum(t.unresolved_picks for t in self.turns)}

    def signature(self) -> list[dict[str, Any]]:
        """Per turn, what a variant must match: implicit call positions, condition count, reference kinds,
        transformation kinds, the withheld parameter and the held-out function."""
        return [{"implicit": [c.index for c in t.calls if not c.explicit],
                 "conditions": len(t.conditions),
                 "references": sorted(r.kind for r in t.references),
                 "transformations": sorted(x.kind for x in t.transformations),
                 "withheld": (t.withheld.method, t.withheld.param) if t.withheld else None,
                 "held_out": t.held_out_function} for t in self.turns]


# ----------------------------------------------------------------------------- lexicon
class _Lexicon:
    def __init__(self, data: dict) -> None:
        # a method's hints ask for it too (by what it is for): ``methods`` holds them after its names
        self.names = {m: [re.compile(p, re.I) for p in spec["phrases"]] for m, spec in data["methods"].items()}
        self.hints = {m: [re.compile(p, re.I) for p in spec.get("hints", ())] for m, spec in data["methods"].items()}
        self.methods = {m: (self.names[m] + self.hints[m], bool(spec.get("by_value", True)))
                        for m, spec in data["methods"].items()}
        self.conditions = [re.compile(p, re.I) for p in data["conditions"]]
        self.condition_exclusions = [re.compile(p, re.I) for p in data["condition_exclusions"]]
        self.references = {k: [re.compile(p, re.I) for p in v] for k, v in data["references"].items()}
        self.transformations = [re.compile(p, re.I) for p in data["transformations"]]


def lexicon() -> _Lexicon:
    """The per-method phrase table and cue lists: BFCL's (prompts/bfcl/method_lexicon.json) plus entries derived
    for the user classes in use (rods_agents.analysis.knowledge)."""
    return _lexicon(tuple(knowledge.known_classes()))


@lru_cache(maxsize=8)
def _lexicon(classes: tuple[str, ...]) -> _Lexicon:
    return _Lexicon(knowledge.method_lexicon())


def _first(patterns: list[re.Pattern], text: str) -> re.Match | None:
    found = [m for p in patterns if (m := p.search(text))]
    return min(found, key=lambda m: m.start()) if found else None


# ----------------------------------------------------------------------------- text of a turn
def turn_text(task: Task, turn: int) -> str:
    return "\n".join(m.content for m in task.turns[turn]) if 0 <= turn < len(task.turns) else ""


def asking_text(task: Task, turn: int) -> str:
    """The text that asks for ``turn``'s calls: its own, plus the turns before it that ask for the same
    work but are answered empty (a miss_param turn withholding a value, the turn before a reveal)."""
    parts = [turn_text(task, turn)]
    t = turn - 1
    while t >= 0 and not task.ground_truth[t] and (t + 1 in task.missed_function or task.category == "miss_param"):
        parts.insert(0, turn_text(task, t))
        t -= 1
    return "\n".join(p for p in parts if p)


def _scalars(value: Any) -> list[Any]:
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, list | tuple):
        return [x for v in value for x in _scalars(v)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _scalars(v)]
    return [value]


def stated_values(rec: CallRecord, text: str) -> list[str]:
    """The argument values of ``rec`` that ``text`` states (strings of 3+ characters, numbers other than 0/1)."""
    low, nums, out = text.lower(), None, []
    for param, value in rec.args.items():
        if is_flag(rec.name, param, value):
            continue
        for s in _scalars(value):
            if isinstance(s, str):
                v = s.strip().lower()
                if len(v) >= 3 and re.search(r"(?<![\w])" + re.escape(v) + r"(?![\w])", low):
                    out.append(s)
            elif isinstance(s, int | float) and float(s) not in (0.0, 1.0):
                nums = _numbers(text) if nums is None else nums
                if float(s) in nums:
                    out.append(repr(s))
    return out


def _classify_calls(trace: Trace, turn: int, text: str) -> list[CallInfo]:
    lex = lexicon()
    recs = [r for r in trace.calls if r.turn == turn]
    per_method = Counter(r.name for r in recs)
    out: list[CallInfo] = []
    named_once: set[str] = set()
    phrased = {r.index for r in recs if _first(lex.methods.get(r.name, ([], True))[0], text)}
    # values that belong to a call the text names: stating them asks for that call, not for a lookup
    # sharing them ('snag 100 shares of XYZ' asks for place_order, not the get_stock_info that prices it)
    claimed = {v for r in recs if r.index in phrased for v in stated_values(r, text)}
    for rec in recs:
        phrases, by_value = lex.methods.get(rec.name, ([], True))
        m = _first(phrases, text)
        stated = stated_values(rec, text)
        if m is None:
            stated = [v for v in stated if v not in claimed]
        cue: str | None = None
        if m is not None:
            # for an inferred step (by_value false) called several times in the turn, one phrase asks for the
            # occurrences whose values it states, or only the first one
            if per_method[rec.name] == 1 or by_value or stated or rec.name not in named_once:
                cue = m.group(0)
                if per_method[rec.name] > 1 and not stated:
                    named_once.add(rec.name)
        named = m is not None and cue is not None and _first(lex.names.get(rec.name, []), unnegated(text)) is not None
        by_goal = m is not None and cue is not None and not named
        if cue is None and by_value and stated:
            cue = stated[0]
        out.append(CallInfo(turn=turn, index=rec.index, method=rec.name, explicit=cue is not None, cue=cue,
                            by_goal=by_goal, named=named))
    return out


def asked_by_goal(method: str, text: str) -> bool | None:
    """How ``text`` asks for ``method``: True by what it is for only (a hint, or words naming it only inside a
    condition), False by words naming it outside any condition, None not by the lexicon at all (quoted values
    blanked). 'If any tire pressure is under 35 PSI, direct me to the closest tire shop' names the pressure only as
    what the condition tests, which leaves the check to the assistant: a variant asking 'What are my tire pressure
    readings?' first names the step (read 36, three readers: mild easier)."""
    lex, plain = lexicon(), unquoted(text)
    if _first(lex.names.get(method, []), unnegated(outside_topics(outside_conditions(plain)))) is not None:
        return False
    if _first(lex.names.get(method, []), plain) is not None or _first(lex.hints.get(method, []), plain) is not None:
        return True
    return None


_CLAUSE_END = re.compile(r"[,;]|$")


def _condition_cues(text: str) -> Iterator[tuple[re.Match, re.Match]]:
    """(sentence, cue) for every condition cue the lexicon reads in ``text``, its sentence by sentence, less the cues
    inside an exclusion ('check if', 'if you could')."""
    lex = lexicon()
    excluded = [(m.start(), m.end()) for p in lex.condition_exclusions for m in p.finditer(text)]
    for sent in _SENTENCE.finditer(text):
        for p in lex.conditions:
            for m in p.finditer(sent.group(0)):
                s, e = sent.start() + m.start(), sent.start() + m.end()
                if not any(a <= s and e <= b for a, b in excluded):
                    yield sent, m


def _blanked(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """``text`` with each (start, end) span turned to spaces: positions stay, so a later match still points into it."""
    chars = list(text)
    for a, b in spans:
        chars[a:b] = " " * (b - a)
    return "".join(chars)


def outside_conditions(text: str) -> str:
    """``text`` with each condition clause blanked: from its cue ('if', 'should any', 'in case') to the next comma,
    or to the sentence's end when none follows ('... the closest shop if any tire reads under 35')."""
    return _blanked(text, ((sent.start() + m.start(), sent.start() + _CLAUSE_END.search(sent.group(0), m.end()).start())
                           for sent, m in _condition_cues(text)))


_NEGATED = re.compile(r"\bwithout\s+(?:\w+\s+){0,2}\w+", re.I)


def unnegated(text: str) -> str:
    """``text`` with what it says is not done blanked ('without visible currency conversion'): such words name no call
    (miss_func_160 leaves the conversion to 'a 20,000 RMB equivalent allowance'; read 40 marked 'how many US dollars is
    that on exchange?' easier)."""
    return _NEGATED.sub(lambda m: " " * len(m.group(0)), text)


_TELLS = re.compile(r"\b(tweet\w*|post\w*|share\w*|send\w*|messag\w*|comment\w*|notify\w*|inform\w*|let \w+ know|"
                    r"compos\w*|format\w*)\b", re.I)
_TOPIC = re.compile(r"\b(?:(?:update|news|word|note|post|tweet|message)s? (?:about|on|regarding)|"
                    r"(?:values?|readings?|numbers?|figures?) (?:for|of)) (?:the|my|our|their) [^,.?!;']{0,40}", re.I)


def outside_topics(text: str) -> str:
    """``text`` with what a message is about blanked ('share a quick update about the tire pressures on Twitter'): the
    pressures are the tweet's topic, which leaves reading them to the assistant, as a condition does (three reads in a
    row marked base_75's 'Can you see whether the tires are properly inflated? Next, put it out as a tweet.' mild
    easier). Only in a sentence that asks to tell someone."""
    return _blanked(text, ((sent.start() + m.start(), sent.start() + m.end()) for sent in _SENTENCE.finditer(text)
                           if _TELLS.search(sent.group(0)) for m in _TOPIC.finditer(sent.group(0))))


def unquoted(text: str) -> str:
    """``text`` with quoted spans (values the user dictates) blanked, so their words are not read as cues."""
    return _QUOTED.sub(lambda m: " " * len(m.group(0)), text)


def asks_for(method: str, text: str) -> bool:
    """The lexicon reads ``text``, its quoted values blanked, as asking for ``method``."""
    plain = unquoted(text)
    return any(p.search(plain) for p in lexicon().methods.get(method, ((), None))[0])


def reads_as_condition(words: str) -> bool:
    """The lexicon reads ``words`` as a condition ('Should the range fall short', 'if any tire falls below 40')."""
    return any(p.search(words) for p in lexicon().conditions)


# ----------------------------------------------------------------------------- conditions
def _conditions(turn: int, text: str, trace: Trace) -> list[Condition]:
    text = unquoted(text)
    recs = [r for r in trace.calls if r.turn == turn]
    if not recs:
        return []
    catalog = build_catalog()

    def reads(r: CallRecord) -> bool:
        spec = catalog.methods.get(r.name)
        return spec is not None and spec.role in ("read", "compute") and bool(r.result)

    deciders = [r.name for r in recs[:-1] if reads(r)]
    if not deciders:
        earlier = [r for r in trace.calls if r.turn < turn and reads(r)]
        deciders = [earlier[-1].name] if earlier else []
    if not deciders:
        return []
    sentences = {sent.start(): sent.group(0) for sent, _cue in _condition_cues(text)}  # one condition per sentence
    return [Condition(turn=turn, cue=body.strip()[:160], depends_on=sorted(set(deciders))) for body in sentences.values()]


def _thresholds(turn: int, text: str, trace: Trace) -> list[float]:
    """The limits the turn states (:func:`rods_agents.analysis.tracing.stated_limits`) that none of its calls
    takes as an argument (nor the next turn's, where a miss_param turn's call waits for another value): a budget the
    user sets is an argument, a bar a price must clear is a threshold."""
    args: set[float] = set()
    for r in trace.calls:
        if r.turn in (turn, turn + 1):
            for v in r.args.values():
                args |= {float(x) for x in _scalars(v) if isinstance(x, int | float) and not isinstance(x, bool)}
    return [n for _t, n in stated_limits([unquoted(text)]) if n not in args]


# ----------------------------------------------------------------------------- references
def _load_result(result: str) -> Any:
    if len(result) > 200_000:
        return None
    try:
        return json.loads(result)
    except (json.JSONDecodeError, ValueError):
        pass
    try:
        return threadsafe_ast.literal_eval(result)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        pass
    if result[:1] in "[{(":  # a repr that does not parse (a list shown with '...'): its quoted items
        items = [a or b for a, b in re.findall(r"'([^'\n]*)'|\"([^\"\n]*)\"", result)]
        return items if len(items) >= 2 else None
    return None


def _eq(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return False
    if isinstance(a, int | float) and isinstance(b, int | float):
        return float(a) == float(b)
    if isinstance(a, int | float) and isinstance(b, str) or isinstance(a, str) and isinstance(b, int | float):
        return str(a) == str(b)
    if isinstance(a, str) and isinstance(b, str):
        # a name picked out of a listed path ('analysis_report.txt' or 'data' from './data/analysis_report.txt')
        return a == b or ("/" in b and a in b.split("/"))
    return False


def among_candidates(value: Any, obj: Any, depth: int = 0) -> bool:
    """True when ``value`` is one of several candidates in ``obj``: an item of a list of 2+, a key of a
    dict of 2+ keys, or a field of one record among 2+ records."""
    if depth > 12 or obj is None:
        return False
    if isinstance(obj, list | tuple):
        if len(obj) >= 2 and any(_eq(value, x) for x in obj if not isinstance(x, dict | list)):
            return True
        records = [x for x in obj if isinstance(x, dict)]
        if len(records) >= 2 and any(_eq(value, v) for r in records for v in r.values()):
            return True
        return any(among_candidates(value, x, depth + 1) for x in obj if isinstance(x, dict | list | tuple))
    if isinstance(obj, dict):
        if len(obj) >= 2 and any(_eq(value, k) for k in obj):
            return True
        records = [v for v in obj.values() if isinstance(v, dict)]
        if len(records) >= 2 and any(_eq(value, v) for r in records for v in r.values()
                                     if not isinstance(v, dict | list)):
            return True
        return any(among_candidates(value, v, depth + 1) for v in obj.values() if isinstance(v, dict | list | tuple))
    return False


def state_of(task: Task, cls: str | None, cache: dict) -> Any:
    """The public state of ``cls`` in ``task``'s initial config, loaded once per ``cache``; {} for a config the
    classes cannot load (nothing there to pick from)."""
    if cls not in cache:
        try:
            cache[cls] = public_state(task, cls)
        except Exception:  # noqa: BLE001 - a config the classes cannot load has no explorable state
            cache[cls] = {}
    return cache[cls]


def _named_field(value: Any, result: dict) -> bool:
    """``value`` stands under exactly one top-level key of ``result``, as a scalar: the call returned it as its
    answer. ``book_flight`` returns the new ``booking_id`` and the whole booking history, whose keys hold that id
    among the old ones; 'Cancel the flight.' points at the booking just made, not at one picked from the history
    (long_context_181 and long_context_184 kept their seed's words: their turns counted a pick with no cue)."""
    return sum(1 for v in result.values() if not isinstance(v, dict | list) and _eq(value, v)) == 1


def _picked(a: ArgSource, rec: CallRecord, trace: Trace, task: Task, cache: dict, said: str) -> bool:
    """Was this argument's value picked out of several candidates (an earlier result or the state)? ``said``: the
    user text up to the argument's turn."""
    items = _scalars(rec.args.get(a.param))
    if not items:
        return False
    if a.source == "call" and a.producer is not None and a.producer < len(trace.calls):
        obj = _load_result(trace.calls[a.producer].result)
        if isinstance(obj, dict) and len(items) == 1 and _named_field(items[0], obj):
            return False  # the result names it ('booking_id': '3426812'), beside a history of others: no pick
        return all(among_candidates(v, obj) for v in items)
    if a.source == "state":
        if all(named_by_lookup(v, said) for v in items):
            return False  # named for a lookup ('Tesla' for TSLA): one value, not a pick among the state's
        if rec.siblings and all(isinstance(v, str) and v in rec.siblings for v in items) and len(rec.siblings) >= 2:
            return True
        return all(among_candidates(v, state_of(task, rec.cls, cache)) for v in items)
    return False


def _reference_cue(text: str) -> tuple[str, str] | None:
    """(kind, cue) of the earliest reference cue; the cue spans every match of its kind that overlaps it
    ('the last' + 'last stock on the list' -> 'the last stock on the list'). A filter cue counts only where the turn
    has no position or property cue: 'there's a file that piques my curiosity ... It's alphabetically first file'
    picks by the order, and the filter's words say nothing of which file (base_13)."""
    text = unquoted(text)
    best: tuple[int, int, str] | None = None
    for kind in ("position", "property", "filter"):
        spans = sorted((m.start(), m.end()) for p in lexicon().references[kind] for m in p.finditer(text))
        if not spans or (kind == "filter" and best is not None):
            continue
        start, end = spans[0]
        for s, e in spans[1:]:
            if s < end:
                end = max(end, e)
        if best is None or start < best[0]:
            best = (start, end, kind)
    return (best[2], text[best[0]:best[1]]) if best else None


# ----------------------------------------------------------------------------- transformations
def _transformation_kind(value: Any, results: list[str]) -> str:
    items = _scalars(value)
    nums = []
    for v in items:
        if isinstance(v, int | float):
            nums.append(float(v))
        elif isinstance(v, str) and re.fullmatch(r"-?\d+(\.\d+)?", v.strip()):
            nums.append(float(v))
    if not nums or len(nums) != len(items):
        return "text"
    pool = set().union(*(_numbers(r) for r in results if len(r) < 50_000)) if results else set()
    for n in nums:
        if any(x != n and any(abs(round(x, k) - n) < 1e-9 for k in (0, 1, 2)) for x in pool):
            return "round"
    return "number"


def _as_number(v: Any) -> float | None:
    if isinstance(v, int | float) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, str) and re.fullmatch(r"-?\d+(\.\d+)?", v.strip()):
        return float(v)
    return None


def hidden_transformation(value: Any, text: str, results: list[str]) -> str | None:
    """A value the value sources call stated or printed that is in fact built from results: a number
    that only appears rounded off a longer one ('3333' from 3333.33), or a text the user describes by
    its format whose numbers or words come from results and not from the text (a tweet 'Front Left
    Tire: 32 PSI, ...' for 'Front Left Tire: XXX PSI')."""
    items = _scalars(value)
    if not items or not results:
        return None
    recent = [r for r in results if len(r) < 50_000]
    pool = set().union(*(_numbers(r) for r in recent)) if recent else set()
    nums = [_as_number(v) for v in items]
    if all(n is not None for n in nums):
        if any(n not in pool and any(x != n and any(abs(round(x, k) - n) < 1e-9 for k in (0, 1, 2)) for x in pool)
               for n in nums if n is not None):
            return "round"
        return None
    low_text = text.lower()
    result_text = " ".join(recent).lower()
    for v in items:
        if not isinstance(v, str) or len(v) < 8 or v.lower() in low_text or v.lower() in result_text:
            continue  # said by the user, or copied from a result as it is (data flow, not a transformation)
        toks = [t.lower() for t in _TOKENS.findall(v)]
        if any(t not in low_text and t in result_text and (t[0].isdigit() or len(t) >= 4) for t in toks):
            return "text"
    return None


def _said_as_handles(value: Any, text: str) -> bool:
    """Tags and mentions the user names without their sign ('hashtag JourneyAhead' for '#JourneyAhead'):
    stated, not composed."""
    items = _scalars(value)
    low = text.lower()
    return bool(items) and all(isinstance(v, str) and v[:1] in "#@" and v.lstrip("#@").lower() in low for v in items)


def _transformation_cue(kind: str, text: str) -> str:
    if kind == "round":
        m = _ROUND_CUE.search(text)
        return m.group(0) if m else ""
    m = next((m for p in lexicon().transformations if (m := p.search(text))), None)  # the list is in priority order
    return m.group(0) if m else ""


# ----------------------------------------------------------------------------- withheld / held out
def withheld_of(task: Task, trace: Trace, turn: int) -> Withheld | None:
    """The parameter a miss_param ``turn`` (empty ground truth) withholds, supplied by the next turn.

    Among the arguments of the next turn's calls, the first one that turn's text states and the text
    before it does not; else the first the next turn states; else the first not said before (a value
    the next turn points at: "the last file displayed"); else the first argument; a call without
    arguments gives ``param=''`` (the turn withholds what to do, or a threshold)."""
    nxt = turn + 1
    if nxt >= len(task.ground_truth) or not task.ground_truth[nxt]:
        return None
    before = "\n".join(turn_text(task, t) for t in range(nxt))
    supply = turn_text(task, nxt)
    ranked: list[tuple[int, int, str, str, int]] = []
    for order, rec in enumerate(r for r in trace.calls if r.turn == nxt):
        for param, value in rec.args.items():
            single = rec.model_copy(update={"args": {param: value}})
            in_supply = bool(stated_values(single, supply)) or any(_value_in(x, supply) for x in _scalars(value))
            in_before = any(_value_in(x, before) for x in _scalars(value))
            rank = 0 if in_supply and not in_before else 1 if in_supply else 2 if not in_before else 3
            ranked.append((rank, order, rec.name, param, rec.index))
    index = None
    if ranked:
        _, _, method, param, index = min(ranked)
    else:
        method, param = next(r.name for r in trace.calls if r.turn == nxt), ""
    w = Withheld(turn=turn, method=method, param=param, supplied_at=nxt if supply.strip() else None, index=index)
    said = "\n".join(turn_text(task, t) for t in range(turn + 1))
    w.stated_before = bool(param) and any(_value_in(x, said) for x in withheld_value(task, trace, w))
    return w


def withheld_value(task: Task, trace: Trace, w: Withheld) -> list[Any]:
    """The value(s) the withheld parameter takes in the supplying turn's call."""
    t = w.supplied_at if w.supplied_at is not None else w.turn + 1
    for r in trace.calls:
        if r.turn == t and r.name == w.method and w.param in r.args and w.index in (None, r.index):
            return _scalars(r.args[w.param])
    return []


# ----------------------------------------------------------------------------- the structure
def information_structure(task: Task, trace: Trace | None = None,
                          arg_sources: list[ArgSource] | None = None) -> InformationStructure:
    """The information structure of ``task`` (executes its ground truth unless a trace is given)."""
    trace = trace if trace is not None else trace_task(task)
    arg_sources = arg_sources if arg_sources is not None else classify_arguments(task, trace)
    recs = {(r.turn, r.index): (p, r) for p, r in enumerate(trace.calls)}
    states: dict = {}
    turns: list[TurnStructure] = []
    for t in range(len(task.ground_truth)):
        text = asking_text(task, t)
        said = user_text_upto(task, t)  # a value stated in any turn so far is no transformation
        ts = TurnStructure(turn=t, calls=_classify_calls(trace, t, text))
        ts.conditions = _conditions(t, text, trace)
        ts.limits = _thresholds(t, text, trace)
        cue = _reference_cue(text)
        for a in arg_sources:
            if a.turn != t or (a.turn, a.index) not in recs:
                continue
            pos, rec = recs[(a.turn, a.index)]
            if a.source in ("call", "state") and _picked(a, rec, trace, task, states, said):
                if cue is not None:
                    ts.references.append(Reference(turn=t, kind=cue[0], cue=cue[1], method=a.method, param=a.param))  # type: ignore[arg-type]
                else:
                    ts.unresolved_picks += 1
            elif (a.source == "composed" and not _said_as_handles(rec.args.get(a.param), said)) or (
                    a.source in ("call", "user") and (hidden := hidden_transformation(
                    rec.args.get(a.param), said, [c.result for c in trace.calls[:pos]]))):
                results = [c.result for c in trace.calls[:pos]]
                kind = hidden if a.source != "composed" else _transformation_kind(rec.args.get(a.param), results)
                ts.transformations.append(Transformation(turn=t, cue=_transformation_cue(kind, text), method=a.method,
                                                         param=a.param, kind=kind))  # type: ignore[arg-type]
        if task.category == "miss_param" and not task.ground_truth[t] and t + 1 < len(task.ground_truth):
            ts.withheld = withheld_of(task, trace, t)
        if t + 1 in task.missed_function:
            ts.held_out_function = ",".join(sorted(task.missed_function[t + 1]))
        turns.append(ts)
    return InformationStructure(turns=turns)


# ----------------------------------------------------------------------------- comparison
class Mismatch(BaseModel):
    reason: str
    turn: int
    detail: str = ""


def _same_role(a: str, b: str) -> bool:
    if a == b:
        return True
    catalog = build_catalog()
    return a in catalog.methods and b in catalog.alternatives(a)


def call_shift(seed: Any, variant: Any) -> str | None:
    """How the variant's words ask for a call differently from the seed's (``implicit_made_explicit``,
    ``explicit_made_implicit``, ``goal_made_named``, ``named_made_goal``), or None; for a :class:`CallInfo` or a
    skill profile's call alike (both carry ``explicit``, ``by_goal`` and ``named``)."""
    if not seed.explicit and variant.explicit:
        return "implicit_made_explicit"
    if seed.explicit and not variant.explicit:
        return "explicit_made_implicit"
    if seed.by_goal and variant.named:
        return "goal_made_named"
    if seed.named and variant.by_goal:
        return "named_made_goal"
    return None


def structure_mismatches(seed: InformationStructure, variant: InformationStructure) -> list[Mismatch]:
    """Every way ``variant`` breaks ``seed``'s information structure, per turn (see :func:`compare_structure`)."""
    out: list[Mismatch] = []
    for t, s in enumerate(seed.turns):
        v = variant.turns[t] if t < len(variant.turns) else TurnStructure(turn=t)
        v_calls = {c.index: c for c in v.calls}
        for c in s.calls:
            vc = v_calls.get(c.index)
            if vc is None:
                continue
            shift = call_shift(c, vc)
            if shift is not None:
                detail = {"implicit_made_explicit": f"{vc.method}: {vc.cue}", "explicit_made_implicit": vc.method
                          }.get(shift, f"{vc.method}: {c.cue} -> {vc.cue}")
                out.append(Mismatch(reason=shift, turn=t, detail=detail))
        if len(v.conditions) < len(s.conditions):
            out.append(Mismatch(reason="condition_dropped", turn=t, detail=s.conditions[0].cue))
        if len(v.limits) < len(s.limits):
            out.append(Mismatch(reason="limit_dropped", turn=t, detail=", ".join(f"{x:g}" for x in s.limits)))
        s_kinds, v_kinds = Counter(r.kind for r in s.references), Counter(r.kind for r in v.references)
        if len(v.references) < len(s.references):
            out.append(Mismatch(reason="reference_dropped", turn=t, detail=s.references[0].cue))
        elif s_kinds != v_kinds and sum(v_kinds.values()) == sum(s_kinds.values()):
            out.append(Mismatch(reason="reference_kind_changed", turn=t,
                                detail=f"{sorted(s_kinds.elements())} -> {sorted(v_kinds.elements())}"))
        if v.unresolved_picks > s.unresolved_picks and len(v.references) <= len(s.references):
            out.append(Mismatch(reason="reference_unresolved", turn=t, detail=f"{v.unresolved_picks} picks without a cue"))
        s_cued = sum(1 for x in s.transformations if x.cue)
        v_cued = sum(1 for x in v.transformations if x.cue)
        if len(v.transformations) < len(s.transformations) or v_cued < s_cued:
            out.append(Mismatch(reason="transformation_dropped", turn=t,
                                detail=", ".join(f"{x.method}.{x.param} ({x.cue or 'no cue'})" for x in s.transformations)))
        if s.withheld is not None:
            if v.withheld is None:
                out.append(Mismatch(reason="withheld_dropped", turn=t, detail=f"{s.withheld.method}.{s.withheld.param}"))
            elif v.withheld.param != s.withheld.param or not _same_role(s.withheld.method, v.withheld.method):
                out.append(Mismatch(reason="withheld_other_param", turn=t,
                                    detail=f"{s.withheld.method}.{s.withheld.param} -> {v.withheld.method}.{v.withheld.param}"))
            elif v.withheld.supplied_at is None:
                out.append(Mismatch(reason="withheld_not_supplied", turn=t, detail=f"{v.withheld.method}.{v.withheld.param}"))
            if v.withheld is not None and v.withheld.stated_before and not s.withheld.stated_before:
                out.append(Mismatch(reason="withheld_stated", turn=t, detail=f"{v.withheld.method}.{v.withheld.param}"))
        if s.held_out_function != v.held_out_function:
            out.append(Mismatch(reason="held_out_changed", turn=t, detail=f"{s.held_out_function} -> {v.held_out_function}"))
    return out


def _value_in(value: Any, text: str) -> bool:
    """``text`` states ``value``: a string as a word, a number in any form, an ISO date in words too ('November 15,
    2026'; miss_param_173 states its date so, and reading it as withheld made variants ask in the turn that asks
    nothing)."""
    if isinstance(value, str):
        v = value.strip().lower()
        if stated_as_date(value, _dates(text)):
            return True
        return len(v) >= 2 and re.search(r"(?<![\w])" + re.escape(v) + r"(?![\w])", text.lower()) is not None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value) in _numbers(text)
    return False


def compare_structure(seed: InformationStructure, variant: InformationStructure) -> list[str]:
    """Machine-readable reasons (``information_structure:<kind>``) why ``variant`` does not keep ``seed``'s
    information structure; ``[]`` when it keeps it."""
    return sorted({f"{REASON}:{m.reason}" for m in structure_mismatches(seed, variant)})


__all__ = ["asked_by_goal", "outside_conditions", "outside_topics", "unnegated", "asks_for", "call_shift", "reads_as_condition", "CallInfo", "Condition", "InformationStructure", "Mismatch", "Reference", "Transformation",
           "TurnStructure", "Withheld", "asking_text", "compare_structure", "information_structure", "lexicon",
           "structure_mismatches"]
