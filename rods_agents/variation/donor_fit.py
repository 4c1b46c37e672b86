"""A donor's words on the variant's values: which donor value stands for which target value, and the re-worded text.

:func:`value_map` pairs the donor's argument values with the variant's at the same slots (a date with its forms in
words, a number only where the text says it once); :func:`reinstantiate` writes the variant's values into the donor's
words and refuses a text that still names anything of the donor's world.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rods_agents.analysis.information_structure import _QUOTED
from rods_agents.analysis.value_sources import CITY_ALIASES, _numbers, airport_cities, ticker_companies
from rods_agents.variation.saying import CODE_PATTERN, date_forms, word_in
from rods_agents.variation.seed_anchor import Substitution, substitute_numbers
from rods_agents.variation.turn_bank import Donor, Slot


def _pairs(donor_value: Any, target_value: Any) -> list[tuple[Any, Any]] | None:
    a = donor_value if isinstance(donor_value, list) else [donor_value]
    b = target_value if isinstance(target_value, list) else [target_value]
    if len(a) != len(b) or isinstance(donor_value, list) != isinstance(target_value, list):
        return None
    return list(zip(a, b, strict=True))


def _once(value: str, text: str) -> bool:
    forms = {value, value.replace("_", " ")}
    return sum(len(re.findall(rf"(?<![\w]){re.escape(f)}(?![\w])", text, re.I)) for f in forms) == 1


_UNSAID = frozenset({"call", "state"})


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
        if ds.source == ts.source == "call" and ds.producer != ts.producer:
            return None  # the donor's words name its own result ('the base 20 logarithm for the number of line' read
            # from wc), not the variant's (the distance): read of 2026-12-05, miss_param_59
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
# airports the donors name by their own names: detected (never carried), so a donor's trip cannot stay
_AIRPORT_NAMES = {"JFK": ("John F. Kennedy", "Kennedy"), "ORD": ("O'Hare", "OHare"), "LHR": ("Heathrow",),
                  "CDG": ("Charles de Gaulle",), "HND": ("Haneda",)}


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
        if old != new and any(word_in(n, donor.text) for n in _AIRPORT_NAMES.get(old, ())):
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
    caps = {o: n for o, n in strings.items() if CODE_PATTERN.fullmatch(o)}
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
    ours = {c.lower() for code, c in cities.items() if word_in(code, variant_values)} | world
    named = {c for code, c in cities.items()
             for f in (code, c, *CITY_ALIASES.get(c, ()), *_AIRPORT_NAMES.get(code, ())) if word_in(f, text)}
    ours |= {c.lower() for c in named if any(word_in(c, v) for v in strings.values())}  # 'Crescent Hollow, Spring, TX'
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


__all__ = ["reinstantiate", "value_map"]
