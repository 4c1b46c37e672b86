"""Where each ground-truth argument value comes from: the task's information structure.

Sources, in the order they are tried:

- ``user``: stated in the user turns up to and including the call's turn;
- ``call``: printed in the result of an earlier call (same turn included);
- ``state``: present in the initial environment state the agent can explore (keys and leaves);
- ``composed``: none of those; the value is a transformation of them (a diff pasted into a post, a
  list joined into a string, an amount computed from a balance).

A value counts as stated when the text says it in a human format: numbers with thousands separators,
currency symbols, percentages or as words ("$10,000", "15%", "fifty"), dates in words ("November
10th, 2026"), card expiry dates ("12/25" for ``12/2025``). An airport code is read from the
environment (``state``) when the text names its city: ``get_nearest_airport_by_city`` gives it; so is a
ticker the text names by its company ('Zeta Corp', 'Tesla') without writing the ticker as it is:
``get_symbol_by_name`` gives it (:func:`named_by_lookup`).

Booleans, ``None``, navigation tokens (``.``, ``..``, empty strings) and *choices* (a value of an
enum parameter, or a phrase-table choice such as ``order_type='Buy'``) are flags, not information,
and are not classified: the rewrite always states them in words.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import cache, lru_cache
from typing import Any, Literal

from pydantic import BaseModel

from envs.executor import Environment
from envs.task import Task
from rods_agents.analysis import knowledge
from rods_agents.analysis.catalog import build_catalog
from rods_agents.analysis.tracing import Trace

Source = Literal["user", "call", "state", "composed"]
SOURCES: tuple[str, ...] = ("user", "call", "state", "composed")
_NUM = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(k\b|%)?", re.I)
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_MIN_SUBSTRING = 4
_WORD_NUMBERS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
_WORD_NUMBERS.update({"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
                      "ninety": 90, "hundred": 100, "thousand": 1000, "dozen": 12, "half": 0.5})
_MULTIPLIER = re.compile(r"\b(" + "|".join(sorted(_WORD_NUMBERS, key=len, reverse=True)) +
                         r"|\d+(?:\.\d+)?)[ -](hundred|thousand|million)\b", re.I)
_MONTHS = {m: i + 1 for i, m in enumerate(
    "january february march april may june july august september october november december".split())}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTH_RE = r"(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\.?"
_DATE_MD = re.compile(_MONTH_RE + r"\s+(\d{1,2})(?:st|nd|rd|th)?(?:,?\s+(\d{4}))?", re.I)
_DATE_DM = re.compile(r"(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH_RE + r"(?:,?\s+(\d{4}))?", re.I)
_DATE_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_DATE_SLASH = re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b")
_EXPIRY = re.compile(r"\b(\d{2})/(\d{2})\b(?!/)")
_ISO_VALUE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_FLAG_STRINGS = {"", ".", "..", "/", "~"}


class ArgSource(BaseModel):
    turn: int
    index: int
    method: str
    param: str
    value: str
    source: Source
    producer: int | None = None  # position in the trace of the call whose result held the value


def _walk(obj: Any, strings: set[str], numbers: dict[float, set[str]], key: str = "", depth: int = 0) -> None:
    """The string leaves (dict keys included) and the numbers of ``obj``, each number with the keys it sits under."""
    if depth > 40:
        return
    if isinstance(obj, bool) or obj is None:
        return
    if isinstance(obj, str):
        strings.add(obj)
    elif isinstance(obj, int | float):
        numbers.setdefault(float(obj), set()).add(key)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _walk(k, strings, numbers, key, depth + 1)
            _walk(v, strings, numbers, str(k), depth + 1)
    elif isinstance(obj, list | tuple | set | frozenset):
        for v in obj:
            _walk(v, strings, numbers, key, depth + 1)
    elif hasattr(obj, "__dict__"):
        for k, v in vars(obj).items():
            if k != "parent" and not k.startswith("_"):
                _walk(v, strings, numbers, k, depth + 1)


def _key_words(name: str) -> set[str]:
    """'fuelAmount' -> {'fuel', 'amount'}; 'rear_left_tire_pressure' -> {'rear', 'left', 'tire', 'pressure'}."""
    return {w.lower() for w in re.findall(r"[A-Z]?[a-z]+", name)}


def numbers_for(param: str, number_keys: dict[float, set[str]]) -> set[float]:
    """The state's numbers an argument ``param`` may be read from: those under a key sharing a word with it (a
    price under 'price', a balance under 'balance'). A fill of 45.0 is not read from a humidity of 45.0: the
    coincidence made the seed's fill 'found in the state' and the same fill on another fuel level 'stated'."""
    words = _key_words(param)
    return {n for n, keys in number_keys.items() if any(words & _key_words(k) for k in keys)}


def state_leaves(task: Task) -> tuple[set[str], dict[float, set[str]]]:
    """String leaves (dict keys included) of the task's initial public state, and its numbers with the keys they
    sit under (one environment built, one walk)."""
    env = Environment(task.involved_classes, task.initial_config, task.long_context)
    strings: set[str] = set()
    numbers: dict[float, set[str]] = {}
    for inst in env.instances.values():
        _walk({k: v for k, v in vars(inst).items() if not k.startswith("_")}, strings, numbers)
    return strings, numbers


def state_values(task: Task) -> tuple[set[str], set[float]]:
    """String and numeric leaves (dict keys included) of the task's initial public state."""
    strings, numbers = state_leaves(task)
    return strings, set(numbers)


_TOKEN = re.compile(r"[a-z0-9]+")


def _paraphrased(value: str, text: str) -> bool:
    """Free text (a message, a post) the user dictated with small changes: most of its words are there."""
    words = [w for w in _TOKEN.findall(value.lower()) if len(w) > 2]
    if len(words) < 4:
        return False
    have = set(_TOKEN.findall(text.lower()))
    return sum(w in have for w in words) / len(words) >= 0.7


# 'one' after these words stands for a thing, not a count: 'the one with id card_4206', 'which one', 'this one'
_PRONOUN_ONE = frozenset("the this that which each any every no another same other right last first new old only "
                         "main second third latest".split())
# 'one of the stocks', 'one that catches my eye', '450 miles in one go': a pronoun, not a count (the turn's new words
# had to say 'one' again, and no sentence does: base_109 and three other turns kept the seed's words for it)
_PRONOUN_ONE_NEXT = frozenset("of that which who whose go".split())


@lru_cache(maxsize=32768)
def _numbers(text: str) -> frozenset[float]:
    """Numbers a reader takes from ``text``: '$10,000' -> 10000, '15%' -> 15 and 0.15, '2k' -> 2000,
    'fifty' -> 50, 'two thousand' -> 2000. Cached: synthesis reads the same turns and results many times over
    (a fifth of a rewrite's time was this function before)."""
    text = _THOUSANDS.sub("", text)
    out: set[float] = set()
    for m in _NUM.finditer(text):
        raw, suffix = m.group(0), (m.group(1) or "").lower()
        num = float(raw[: len(raw) - len(suffix)] if suffix else raw)
        out.add(num)
        if suffix == "k":
            out.add(num * 1000)
        elif suffix == "%":
            out.add(round(num / 100, 6))
    low = text.lower()
    words = re.findall(r"[a-z]+", low)
    for k, word in enumerate(words):
        if word in _WORD_NUMBERS and not (word == "one" and ((k and words[k - 1] in _PRONOUN_ONE)
                                                              or words[k + 1:k + 2] and words[k + 1] in _PRONOUN_ONE_NEXT)):
            out.add(float(_WORD_NUMBERS[word]))
    scale = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
    for m in _MULTIPLIER.finditer(low):
        base = m.group(1).lower()
        num = float(_WORD_NUMBERS[base]) if base in _WORD_NUMBERS else float(base)
        out.add(num * scale[m.group(2).lower()])
    return frozenset(out)


@lru_cache(maxsize=32768)
def _dates(text: str) -> frozenset[str]:
    """Dates a reader takes from ``text`` as ISO strings; a date without a year takes every year the
    text names (or matches any year, as '????-MM-DD'). Cached, as :func:`_numbers`."""
    years = set(re.findall(r"\b(20\d{2}|19\d{2})\b", text)) or {"????"}
    out: set[str] = set()

    def add(y: str | None, mo: int, d: int) -> None:
        if 1 <= mo <= 12 and 1 <= d <= 31:
            for year in ([y] if y else years):
                out.add(f"{year}-{mo:02d}-{d:02d}")

    for m in _DATE_MD.finditer(text):
        add(m.group(3), _MONTHS[m.group(1).lower()[:3] if m.group(1).lower() != "sept" else "sep"], int(m.group(2)))
    for m in _DATE_DM.finditer(text):
        add(m.group(3), _MONTHS[m.group(2).lower()[:3] if m.group(2).lower() != "sept" else "sep"], int(m.group(1)))
    for m in _DATE_ISO.finditer(text):
        add(m.group(1), int(m.group(2)), int(m.group(3)))
    for m in _DATE_SLASH.finditer(text):
        add(m.group(3), int(m.group(1)), int(m.group(2)))
    for m in _EXPIRY.finditer(text):
        out.add(f"{m.group(1)}/20{m.group(2)}")
    return frozenset(out)


def stated_as_date(value: str, dates: set[str]) -> bool:
    if value in dates:
        return True
    m = _ISO_VALUE.match(value)
    return bool(m) and f"????-{m.group(2)}-{m.group(3)}" in dates


# airports a model knows by their city without a lookup ('from Los Angeles' is LAX); a made-up city's is looked up
WELL_KNOWN_AIRPORTS = frozenset({"SFO", "LAX", "JFK", "ORD", "BOS", "LHR", "CDG", "PEK", "HKG", "HND"})

# what people call the cities of TravelAPI's airport table
CITY_ALIASES: dict[str, tuple[str, ...]] = {"New York": ("NYC", "New York City"), "San Francisco": ("SF",),
                                            "Los Angeles": ("LA",), "Hong Kong": ("HK",)}


@lru_cache(maxsize=1)
def airport_cities() -> dict[str, str]:
    """Airport code -> city, as ``TravelAPI.get_nearest_airport_by_city`` answers (run, not parsed)."""
    from envs.bfcl_data import env_class

    spec = build_catalog().methods.get("get_nearest_airport_by_city")
    cities = [c.strip() for c in spec.params[0].description.split("[Enum]:", 1)[-1].split(",")] if spec else []
    api = env_class("TravelAPI")()
    out: dict[str, str] = {}
    for city in cities:
        code = api.get_nearest_airport_by_city(city).get("nearest_airport")
        if code and code != "Unknown":
            out.setdefault(code, city)
    return out


@lru_cache(maxsize=1)
def ticker_companies() -> dict[str, str]:
    """Ticker -> company name, as ``TradingBot.get_symbol_by_name`` knows them (prompts/bfcl/offline_value_kinds.json)."""
    table = knowledge.value_pools().get("company_of_ticker", {})
    return {k: v for k, v in table.items() if not k.startswith("_")}


@lru_cache(maxsize=1)
def household_tickers() -> frozenset[str]:
    """Tickers of companies a model knows before it looks anything up (Apple, Microsoft): a made-up company's ticker
    is found only by the lookup, a known one's is common knowledge (prompts/bfcl/offline_value_kinds.json)."""
    return frozenset(knowledge.value_pools().get("household_tickers", {}).get("tickers", ()))


@lru_cache(maxsize=1)
def ticker_products() -> dict[str, str]:
    """Ticker -> what the company makes, in the words a user picks its stock by ('making GPUs' for NVDA)."""
    return {k: v for k, v in knowledge.value_pools().get("ticker_products", {}).items() if not k.startswith("_")}


def named_by_lookup(value: Any, text: str) -> str | None:
    """The name ``text`` gives ``value`` by, which the assistant looks the value up with, or None: an airport
    code by its city ('Los Angeles' for LAX), a ticker by its company ('Zeta Corp' for ZETA, 'Tesla' for TSLA)
    where the ticker itself is not written in its own case. Either way the value is read from the environment:
    'Zeta Corp' no more states ZETA than 'Tesla' states TSLA, so a variant that names its company is as hard as a
    seed that named its own, and one that writes the ticker is easier."""
    if not isinstance(value, str):
        return None
    low = text.lower()
    city = airport_cities().get(value)
    for name in (city, *CITY_ALIASES.get(city or "", ())) if city else ():
        if re.search(r"\b" + re.escape(name.lower()) + r"\b", low):
            return name
    company = ticker_companies().get(value)
    if company and not re.search(rf"(?<![A-Za-z0-9]){re.escape(value)}(?![A-Za-z0-9])", text):
        if re.search(r"\b" + re.escape(company.lower().rstrip(".")), low):
            return company
    return None


@lru_cache(maxsize=1)
def choice_phrases() -> dict[str, dict[str, str]]:
    """``method.param`` -> {repr(value): words}: choices the rewrite says in words (prompts/bfcl/value_phrases.json)."""
    return knowledge.value_phrases()


@cache
def enum_values(method: str, param: str) -> tuple[str, ...]:
    """The values an enum parameter allows (from the schema or its '[Enum]:' description)."""
    spec = build_catalog().methods.get(method)
    p = next((p for p in spec.params if p.name == param), None) if spec else None
    if p is None:
        return ()
    if p.enum:
        return tuple(map(str, p.enum))
    if "[Enum]:" not in p.description:
        return ()
    body = p.description.split("[Enum]:", 1)[1]
    return tuple(x.strip().strip('"\'') for x in body.strip().strip("[]").split(",") if x.strip())


def is_choice(method: str, param: str, value: Any) -> bool:
    """A value picked from a closed set (an enum, a phrase-table choice): a flag, not information."""
    if method == "get_nearest_airport_by_city":
        return False  # the city is information the user gives
    phrases = choice_phrases().get(f"{method}.{param}", {})
    if repr(value) in phrases:
        return True
    allowed = enum_values(method, param)
    if not allowed:
        return False
    items = value if isinstance(value, list | tuple) else [value]
    return bool(items) and all(isinstance(x, str) and x in allowed for x in items)


def is_flag(method: str, param: str, value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, str) and value.strip() in _FLAG_STRINGS:
        return True
    return is_choice(method, param, value)


def _scalars(value: Any) -> list[Any] | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, list | tuple):
        out = []
        for v in value:
            s = _scalars(v)
            if s:
                out.extend(s)
        return out
    if isinstance(value, dict):
        return _scalars(list(value.values()))
    return [value]


def user_text_upto(task: Task, turn: int) -> str:
    return "\n".join(m.content for t in task.turns[: turn + 1] for m in t)


def _word_in(value: str, text: str) -> bool:
    """A one-word value said in another form ('comprehensive' in 'comprehensively', 'USD' in 'usd')."""
    v = value.lower()
    return len(v) >= 6 and v.isalpha() and re.search(r"\b" + re.escape(v[:-1]), text.lower()) is not None


def said_in(value: str, text: str) -> bool:
    """``value`` written in ``text`` as itself, case aside: not inside a longer word or number ('BOS' is not said
    by 'Boston', 'QUAS' not by 'Quasar Ltd.', 'ORD' not by 'order'); a value with a non-alphanumeric end
    ('.hidden') may sit next to anything at that end. Values of one or two letters are matched anywhere."""
    v = value.strip().lower()
    if not v:
        return False
    if len(v) < 3:  # an option code ('l' for wc's lines, 'c'): found anywhere, as before, its words decide
        return v in text.lower()
    lead = r"(?<![a-z0-9])" if v[0].isalnum() else ""
    trail = r"(?![a-z0-9])" if v[-1].isalnum() else ""
    return re.search(lead + re.escape(v) + trail, text.lower()) is not None


def classify_scalar(value: Any, text: str, text_nums: set[float], results: list[str], result_nums: list[set[float]],
                    strings: set[str], numbers: set[float], long_strings: list[str],
                    dates: set[str] | None = None) -> tuple[str, int | None]:
    if isinstance(value, str):
        v = value.strip()
        if v in ticker_companies() and named_by_lookup(v, text):
            return "state", None  # 'Zeta Corp' names ZETA for a lookup, as 'Tesla' names TSLA
        if v and said_in(v, text):
            return "user", None
        if len(v) > 3 and v[0] in "#@" and said_in(v[1:], text):  # three letters or more: 'AI' is inside 'said'
            return "user", None  # a hashtag or handle the user names without its sign ('the hashtag 'TravelUpdate'')
        if _paraphrased(v, text) or _word_in(v, text) or stated_as_date(v, dates if dates is not None else _dates(text)):
            return "user", None
        if named_by_lookup(v, text):
            return "state", None
        if len(v) >= 2:
            for i in range(len(results) - 1, -1, -1):
                if v in results[i]:
                    return "call", i
        if v.isdigit():  # a result rounded up for the user ('302' from a mean of 301.67): the seed's '3333' from
            # 3333.33 was read off the result, the rounded-up one was not (trial 6, request 0058: data_flow_dropped)
            for i in range(len(results) - 1, -1, -1):
                if any(n != int(n) and math.floor(n + 0.5) == int(v) for n in result_nums[i]):
                    return "call", i
        if v in strings or (len(v) >= _MIN_SUBSTRING and any(v in s for s in long_strings)):
            return "state", None
        return "composed", None
    num = float(value)
    if num in text_nums:
        return "user", None
    for i in range(len(results) - 1, -1, -1):
        if num in result_nums[i]:
            return "call", i
    if num in numbers:
        return "state", None
    return "composed", None


_RANK = {"user": 0, "call": 1, "state": 2, "composed": 3}


def classify_arguments(task: Task, trace: Trace) -> list[ArgSource]:
    """Classify every non-flag argument of every traced call (see module docstring)."""
    strings, number_keys = state_leaves(task)
    related: dict[str, set[float]] = {}
    long_strings = [s for s in strings if len(s) >= 8]
    out: list[ArgSource] = []
    results: list[str] = []
    result_nums: list[set[float]] = []
    texts: dict[int, tuple[str, set[float]]] = {}
    for rec in trace.calls:
        if rec.turn not in texts:
            text = user_text_upto(task, rec.turn)
            texts[rec.turn] = (text, _numbers(text), _dates(text))
        text, text_nums, dates = texts[rec.turn]
        for param, value in rec.args.items():
            if is_flag(rec.name, param, value):
                continue
            scalars = _scalars(value)
            if not scalars:
                continue
            if param not in related:
                related[param] = numbers_for(param, number_keys)
            labels = [classify_scalar(s, text, text_nums, results, result_nums, strings, related[param], long_strings, dates)
                      for s in scalars]
            worst = max(labels, key=lambda lp: _RANK[lp[0]])
            source = worst[0] if len({lb for lb, _ in labels}) == 1 else ("composed" if worst[0] == "composed" else worst[0])
            producer = next((p for lb, p in labels if p is not None), None)
            out.append(ArgSource(turn=rec.turn, index=rec.index, method=rec.name, param=param,
                                 value=repr(value)[:200], source=source, producer=producer))
        results.append(rec.result)
        result_nums.append(_numbers(rec.result) if len(rec.result) < 50_000 else set())
    return out


def source_shares(arg_sources: list[ArgSource]) -> dict[str, float]:
    counts = Counter(a.source for a in arg_sources)
    total = sum(counts.values()) or 1
    return {s: round(counts.get(s, 0) / total, 4) for s in SOURCES}
