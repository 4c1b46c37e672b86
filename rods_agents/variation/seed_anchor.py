"""Carry a plan's changes into the seed's own words, config and ground truth.

The seed's human-written turns already have the right information structure: which calls they
leave implicit, their conditions, their references by position, their transformations. Writing a
variant turn from the seed turn, with only the plan's renames, new numbers, swapped options and
method phrases carried in, keeps all of that by construction.

A value appears in text in several forms, and every form is carried:

- strings: as written, quoted or not, in any letter case (case is kept: 'Temp' -> 'Drafts'), a file
  name without its extension or with its separators as spaces ('final_report.pdf' is also
  'final_report' and 'final report'), a person's first and last name on their own (the sampler maps
  them together), and inside other strings (a name in a message, a ticker in a tweet);
- numbers: '30', '30.0', '$10,000', '10,000.00' and small numbers in words ('thirty'); the new number
  is written in the form the seed used.

The same substitution is applied to the config and the ground truth, so no old name survives in
text, state or ground truth (:func:`leftovers` checks).
"""

from __future__ import annotations

import re
from typing import Any

from rods_agents.analysis.value_sources import _WORD_NUMBERS

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")


def ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def date_words(iso: str) -> list[str]:
    """The ways a user writes the ISO date ``iso`` in words, most specific first ('December 15th, 2026', ...,
    'Dec. 15')."""
    year, month, day = (int(x) for x in ISO_DATE.match(iso).groups())
    m, mon = MONTHS[month - 1], MONTHS[month - 1][:3]
    sept = "Sept" if month == 9 else mon  # 'Next Friday 19th Sept 2026' (base_188 kept its date in every sample)
    d, o = str(day), ordinal(day)
    return [f"{m} {o}, {year}", f"{m} {d}, {year}", f"{m} {o} {year}", f"{m} {d} {year}", f"{o} of {m}, {year}",
            f"{o} of {m} {year}", f"{d} {m} {year}", f"{o} {m} {year}", f"{o} {sept} {year}", f"{d} {sept} {year}",
            f"{o} {mon} {year}", f"{d} {mon} {year}", f"{mon} {o}, {year}", f"{mon} {d}, {year}", f"{mon}. {d}, {year}",
            f"{mon} {d} {year}", f"{o} of {m}", f"{m} {o}", f"{m} {d}", f"{mon} {o}", f"{mon} {d}", f"{mon}. {d}"]

_ALNUM = "A-Za-z0-9"
_EXT = re.compile(r"^(?P<stem>.+)\.(?P<ext>[A-Za-z0-9]{1,5})$")
_NUMBER = re.compile(r"(?<![\w.,/])(?<![^a-z]-)(?<!^-)(?P<cur>\$)?(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?P<dec>\.\d+)?(?![\w]|\.\d|/\d)")
"""A number written in digits; after a hyphen only where a lower-case word ends before it ('a priority-2 ticket',
never '2278-9812' or '-5')."""
_WORDS = {w: n for w, n in _WORD_NUMBERS.items() if isinstance(n, int) and w not in ("hundred", "thousand", "dozen")}
MIN_TEXT_LEN = 3  # shorter values are never substituted in free text ('l', 'a')


def string_forms(old: str, new: str) -> list[tuple[str, str]]:
    """(old form, new form) pairs of one rename, the most specific first; an ISO date's forms in words too
    ('2026-12-15' -> '2027-01-05' rewrites 'December 15th, 2026' and 'December 15th'), as users say their dates."""
    forms = [(old, new)]
    if ISO_DATE.match(old):
        olds = date_words(old)
        return forms + list(zip(olds, date_words(new) if ISO_DATE.match(new) else [new] * len(olds), strict=True))
    mo, mn = _EXT.match(old), _EXT.match(new)
    if mo and mn and mo.group("ext") == mn.group("ext"):
        so, sn = mo.group("stem"), mn.group("stem")
        if len(so) >= 4 and re.search(r"[_\-\d]|[a-z][A-Z]", so):  # a plain stem ('notes') is a word too
            forms.append((so, sn))
        spaced_o = re.sub(r"[_\-]+", " ", so)
        spaced_n = re.sub(r"[_\-]+", " ", sn)
        camel_o = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", so)
        camel_n = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", sn)
        for fo, fn in ((spaced_o, spaced_n), (camel_o, camel_n)):
            if " " in fo and (fo, fn) not in forms:
                forms.append((fo, fn))
    return forms


def _cased(found: str, old: str, new: str) -> str:
    if found == old:
        return new
    if found == old.lower():
        return new.lower()
    if found == old.upper():
        return new.upper()
    if found[:1].isupper() and not old[:1].isupper():
        return new[:1].upper() + new[1:]
    if found[:1].islower() and old[:1].isupper():
        return new[:1].lower() + new[1:]
    return new


def article(word: str) -> str:
    """'a' or 'an' before ``word`` as it is read aloud: a code by its letters ('an NVDA', 'a GM'), a word by its first
    letter ('an economy class', 'a business class')."""
    if word[:5].isupper() and word[:1].isalpha() and len(word.split()[0]) <= 5:
        return "an" if word[0] in "AEFHILMNORSX" else "a"
    return "an" if word[:1].lower() in "aeiou" else "a"


_ARTICLE_END = re.compile(r"\b([Aa])(n?) $")


def _agreed(before: str, old: str, new: str) -> str:
    """``before`` (the text up to a replaced value) with its closing article made to fit ``new`` where it fit ``old``
    ('the cancellation of an AAPL order' -> 'of a GM order', in the text and the dictated argument alike)."""
    m = _ARTICLE_END.search(before)
    if m is None or not new[:1].isalpha() or article(old) != ("an" if m.group(2) else "a"):
        return before
    fixed = article(new)
    return before[:m.start()] + (fixed.capitalize() if m.group(1) == "A" else fixed) + " "


class Substitution:
    """One compiled, case-insensitive, longest-first substitution of many (old -> new) forms."""

    def __init__(self, mapping: dict[str, str], derived_forms: bool = True) -> None:
        pairs: dict[str, tuple[str, str]] = {}
        for old, new in mapping.items():
            if not isinstance(old, str) or not isinstance(new, str) or old == new:
                continue
            for fo, fn in (string_forms(old, new) if derived_forms else [(old, new)]):
                if len(fo) >= MIN_TEXT_LEN and fo.lower() not in pairs:
                    pairs[fo.lower()] = (fo, fn)
        self.exact = {o: n for o, n in mapping.items() if isinstance(o, str) and o != n}
        self.pairs = pairs
        alts = sorted(pairs, key=len, reverse=True)
        self.pattern = (re.compile(rf"(?<![{_ALNUM}])(?:" + "|".join(re.escape(a) for a in alts) + rf")(?![{_ALNUM}])",
                                   re.IGNORECASE) if alts else None)

    def text(self, s: str) -> str:
        if s in self.exact:
            return self.exact[s]
        if self.pattern is None or not s:
            return s

        out: list[str] = []
        last = 0
        for m in self.pattern.finditer(s):
            old, new = self.pairs[m.group(0).lower()]
            rep = _cased(m.group(0), old, new)
            out.append(_agreed(s[last:m.start()], m.group(0), rep))
            out.append(rep)
            last = m.end()
        return "".join(out) + s[last:]

    def found(self, s: str) -> set[str]:
        """Old forms (lower case) that occur in ``s``."""
        return {m.group(0).lower() for m in self.pattern.finditer(s)} if self.pattern is not None else set()

    def obj(self, obj: Any) -> Any:
        """Apply to every string (dict keys included) of a JSON-like object."""
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            return {(self.text(k) if isinstance(k, str) else k): self.obj(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [self.obj(v) for v in obj]
        if isinstance(obj, tuple):
            return tuple(self.obj(v) for v in obj)
        return obj


def _format_like(new: float | int, m: re.Match) -> str:
    dec = m.group("dec")
    if dec:
        body = f"{float(new):,.{len(dec) - 1}f}" if "," in m.group("int") else f"{float(new):.{len(dec) - 1}f}"
    elif float(new).is_integer():
        body = f"{int(new):,}" if "," in m.group("int") else str(int(new))
    else:
        body = f"{new:,}" if "," in m.group("int") else str(new)
    return (m.group("cur") or "") + body


def number_matches(text: str, old: float | int) -> list[re.Match]:
    """Where ``text`` writes the number ``old`` in digits (any separators, decimals, currency sign)."""
    out = []
    for m in _NUMBER.finditer(text):
        try:
            value = float(m.group("int").replace(",", "") + (m.group("dec") or ""))
        except ValueError:
            continue
        if value == float(old):
            out.append(m)
    return out


def word_number_matches(text: str, old: float | int) -> list[re.Match]:
    if not float(old).is_integer():
        return []
    words = [w for w, n in _WORDS.items() if n == int(old)]
    if not words:
        return []
    return list(re.finditer(r"\b(" + "|".join(words) + r")\b", text, re.IGNORECASE))


def has_number(text: str, old: float | int) -> bool:
    return bool(number_matches(text, old) or word_number_matches(text, old))


def substitute_numbers(text: str, numbers: dict[str, float | int]) -> str:
    """Write every changed number (``repr(old) -> new``) in the form the text used for the old one. A key
    ``repr(old)|unit`` changes the number only where that unit word follows it ('30|gallons': 'refuel with 30
    gallons' changes, 'less than 30.0 psi' in the same task does not)."""
    for key, new in numbers.items():
        old_repr, _, unit = key.partition("|")
        try:
            old = float(old_repr)
        except ValueError:
            continue
        text = _NUMBER.sub(lambda m, o=old, n=new, u=unit: _format_like(n, m) if _value(m) == o and (
            not u or unit_after(m.string, m.end()) == u) else m.group(0), text)
        for m in reversed(word_number_matches(text, old)):
            if not unit or unit_after(text, m.end()) == unit:
                text = text[: m.start()] + _format_like(new, _fake(new)) + text[m.end():]
    return text


def unit_after(text: str, end: int) -> str:
    """The word right after a number ending at ``end``, lower case ('gallons' in '30 gallons of gas'); '' when none."""
    m = re.match(r"\s*([A-Za-z]+)", text[end:])
    return m.group(1).lower() if m else ""


def number_for(numbers: dict[str, float | int], value: float | int) -> float | int:
    """The plan's new number for an argument ``value`` (a key with a unit, :func:`substitute_numbers`, counts too)."""
    if repr(value) in numbers:
        return numbers[repr(value)]
    return next((new for key, new in numbers.items() if key.partition("|")[0] == repr(value)), value)


def _value(m: re.Match) -> float | None:
    try:
        return float(m.group("int").replace(",", "") + (m.group("dec") or ""))
    except ValueError:
        return None


def _fake(new: float | int) -> re.Match:
    return _NUMBER.match(str(int(new)) if float(new).is_integer() else str(new))  # type: ignore[return-value]


def substitute_phrases(text: str, phrases: list[tuple[str, str]]) -> str:
    for old, new in phrases:
        text = re.sub(rf"(?<![{_ALNUM}]){re.escape(old)}(?![{_ALNUM}])",
                      lambda m, o=old, n=new: _cased(m.group(0), o, n), text, flags=re.IGNORECASE)
    return text


def _strings(obj: Any, out: list[str]) -> list[str]:
    if isinstance(obj, str):
        out.append(obj)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(k, str):
                out.append(k)
            _strings(v, out)
    elif isinstance(obj, list | tuple):
        for v in obj:
            _strings(v, out)
    return out


def leftovers(olds: list[str], texts: list[str], config: Any, ground_truth: list[list[str]]) -> list[str]:
    """Old names (and their derived forms) still present anywhere: '<where>: <old>' per hit."""
    sub = Substitution({o: o + "\0" for o in olds})
    hits: list[str] = []
    for where, strings in (("text", texts), ("config", _strings(config, [])), ("ground_truth",
                                                                              [c for t in ground_truth for c in t])):
        found: set[str] = set()
        for s in strings:
            found |= sub.found(s)
        hits += [f"{where}: {f}" for f in sorted(found)]
    return hits


def scalar_strings(value: Any) -> list[str]:
    """Every string inside an argument value or config (lists, tuples, dict values), in order."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [s for v in value for s in scalar_strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in scalar_strings(v)]
    return []
