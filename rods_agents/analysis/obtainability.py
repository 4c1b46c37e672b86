"""Can the agent obtain every literal argument, and how must the user text point at it?

The verdict's solvability check and the rewrite's wording share this module, so what the text says
is exactly what the check accepts:

- a ``state`` value (discovered by exploring the environment) needs a *hint* in the turn text that
  identifies it uniquely: the only file of its kind in the folder, the only one with that extension
  or that word in its name, the key it is stored under (``'Kelly'`` -> ``USR003``), a field of its
  record no other record shares (the ticket titled 'Login issue'), the state field it is (the
  current fuel level), the city whose airport it is. :func:`state_hints` lists the unique hints;
  :func:`state_obtainable` checks that the text carries one.
- a ``composed`` value needs a *recipe*: every word and number of it must come from obtainable
  pieces (user text, earlier results, the readable state, the tool docs), a number may be the sum,
  difference, product or ratio of two of them, and the text must say how it is built.
  :func:`recipe` finds the pieces and words the recipe; :func:`recomposable` checks it.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from envs.executor import Environment
from envs.task import Task
from rods_agents.analysis.catalog import build_catalog
from rods_agents.analysis.tracing import CallRecord
from rods_agents.analysis.value_sources import CITY_ALIASES, _numbers, airport_cities, ticker_companies

_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TOKEN = re.compile(r"[A-Za-z]+|\d+(?:\.\d+)?")
_NAME_TOKEN = re.compile(r"[A-Za-z]{3,}|\d+")
_GENERIC = {"the", "and", "for", "file", "txt", "pdf", "doc", "docx", "json", "csv", "new", "old", "copy"}
RECIPE_MARKERS = ("in the form", "worked out as", "built from")
_MAX_POOL = 400
_MAX_LITERALS = 3  # pieces a recipe may state itself ('pdf' in '<number>.pdf', 'Jerry' in '@<Jerry>')
_MAX_FORMAT_CHARS = 40


class Hint(BaseModel):
    """A phrase that singles a state value out; ``say`` is how the rewrite words it."""

    kind: str
    phrase: str
    say: str


def camel_words(name: str) -> str:
    """'fuelLevel' / 'fuel_level' -> 'fuel level': the words of a state field or result key."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name).replace("_", " ").lower()


def _in_text(phrase: str, text: str) -> bool:
    return bool(phrase) and re.search(r"(?<![\w])" + re.escape(phrase.lower()) + r"(?![\w])", text.lower()) is not None


def _fs_hints(value: str, siblings: dict[str, str], noun: str) -> list[Hint]:
    kind = siblings.get(value)
    if kind is None:
        return []
    same = [n for n, k in siblings.items() if k == kind]
    word = "folder" if kind == "directory" else "file"
    out: list[Hint] = []
    if len(same) == 1:
        out.append(Hint(kind="only", phrase=f"only {word}", say=f"the only {word} there"))
    if len(same) == 2:  # 'review both files in this directory' (base_13): the pair is all there is
        out.append(Hint(kind="only", phrase=f"both {word}s", say=f"both {word}s there"))
    if len(same) > 1 and value in (min(same), max(same)):  # 'the alphabetically first file' (base_13)
        end = "first" if value == min(same) else "last"
        out.append(Hint(kind="position", phrase=f"alphabetically {end}", say=f"the alphabetically {end} {word} there"))
    if kind == "file" and "." in value:
        ext = value.rsplit(".", 1)[1]
        if sum(1 for n in same if n.rsplit(".", 1)[-1] == ext and "." in n) == 1:
            out.append(Hint(kind="extension", phrase=f".{ext}", say=f"the .{ext} {word} there"))
    others = [set(t.lower() for t in _NAME_TOKEN.findall(n)) for n in same if n != value]
    for tok in _NAME_TOKEN.findall(value.rsplit(".", 1)[0] if kind == "file" else value):
        t = tok.lower()
        if t in _GENERIC or any(t in o for o in others) or t == value.lower():
            continue
        out.append(Hint(kind="name_token", phrase=t, say=f"the {word} with '{t}' in its name"))
        break
    return out


def _records(obj: Any, depth: int = 0):
    """Yield (container, key, record) for every dict record inside lists/dicts of the state."""
    if depth > 6:
        return
    if isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(v, dict):
                yield obj, k, v
            yield from _records(v, depth + 1)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            if isinstance(v, dict):
                yield obj, i, v
            yield from _records(v, depth + 1)


def _idents(container: Any, key: Any, record: dict, field: str) -> list[str]:
    out = []
    if isinstance(container, dict) and isinstance(key, str) and len(key) >= 3:
        out.append(key)
    for g, x in record.items():
        if g != field and isinstance(x, str) and 3 <= len(x) <= 60 and "\n" not in x:
            out.append(x)
    return out


def _record_strings(record: Any) -> set[str]:
    if isinstance(record, dict):
        return {x.lower() for x in record.values() if isinstance(x, str)}
    return set()


def _unique_idents(container: Any, key: Any, record: dict, field: str | None) -> list[str]:
    siblings = ([v for k, v in container.items() if k != key] if isinstance(container, dict)
                else [v for i, v in enumerate(container) if i != key])
    keys = [str(k).lower() for k in container if k != key] if isinstance(container, dict) else []
    out = []
    for ident in sorted(_idents(container, key, record, field or ""), key=lambda x: (len(x) < 5, len(x))):
        if len(ident) > 40:
            continue
        low = ident.lower()
        if low in keys or any(low in _record_strings(s) for s in siblings):
            continue
        out.append(ident)
    return out


def _state_hints(value: Any, state: dict[str, Any], noun: str) -> list[Hint]:
    out: list[Hint] = []
    seen: set[str] = set()

    def add(kind: str, phrase: str, say: str) -> None:
        if phrase.lower() not in seen:
            seen.add(phrase.lower())
            out.append(Hint(kind=kind, phrase=phrase, say=say))

    for container, key, record in _records(state):
        if key == value and not isinstance(value, bool):  # the value is the record's key (orders, cards)
            for ident in _unique_idents(container, key, record, None)[:1]:
                add("record", ident, f"the {noun} listed with '{ident}'")
        is_map = (len(record) >= 2 and len({type(y) for y in record.values()}) == 1
                  and all(not isinstance(y, dict | list) for y in record.values()))
        for field, x in record.items():
            if x != value or isinstance(x, bool) or isinstance(x, dict | list):
                continue
            if is_map and isinstance(field, str) and not re.fullmatch(r"[a-z_0-9]+", field):
                add("key", field, field)  # a name -> value map (user_map): the name is the hint
                continue
            for ident in _unique_idents(container, key, record, field)[:1]:
                add("record", ident, f"the {noun} listed with '{ident}'")
    for attr, x in state.items():
        if not isinstance(x, bool) and x == value and not isinstance(x, dict | list):
            words = camel_words(attr.lstrip("_"))
            if isinstance(value, str) or set(words.split()) & set(camel_words(noun).split()):
                add("field", f"current {words}", f"the current {words}")  # numbers: only a field of that name
    return out


def public_state(task: Task, cls: str | None) -> dict[str, Any]:
    return public_states(task).get(cls, {}) if cls else {}


def public_states(task: Task) -> dict[str, dict[str, Any]]:
    """Class -> its loaded state (defaults included: MessageAPI's user map where the config lists no users), from
    one environment for all of the task's classes."""
    env = Environment(task.involved_classes, task.initial_config, task.long_context)
    return {cls: {k: v for k, v in vars(inst).items() if not k.startswith("_") and k != "long_context"}
            for cls, inst in env.instances.items()}


def state_hints(value: Any, rec: CallRecord, state: dict[str, Any], noun: str) -> list[Hint]:
    """Unique hints for a state value used by ``rec`` (best first); empty when none exists."""
    out: list[Hint] = []
    if isinstance(value, str) and value in airport_cities():
        city = airport_cities()[value]
        out.append(Hint(kind="lookup", phrase=city, say=city))
        out += [Hint(kind="lookup", phrase=alias, say=alias) for alias in CITY_ALIASES.get(city, ())]
    company = ticker_companies().get(value) if isinstance(value, str) else None
    if company:
        out.append(Hint(kind="lookup", phrase=company, say=company))  # get_symbol_by_name's name for the ticker
    if rec.siblings and isinstance(value, str):
        out += _fs_hints(value, rec.siblings, noun)
    if not isinstance(value, list | dict):
        out += _state_hints(value, state, noun)
    return out


def state_obtainable(value: Any, rec: CallRecord, state: dict[str, Any], text: str) -> bool:
    """True when ``text`` carries a hint that singles ``value`` out (list values: every item)."""
    items = value if isinstance(value, list) else [value]
    return all(any(_in_text(h.phrase, text) for h in state_hints(v, rec, state, "value")) for v in items)


# ----------------------------------------------------------------------------- composed values
class Piece(BaseModel):
    token: str
    where: str  # 'user' | 'call' | 'state' | 'docs'


class Recipe(BaseModel):
    """How a composed value is built from obtainable pieces; ``say`` is its wording."""

    kind: str  # 'arithmetic' | 'format'
    say: str
    pieces: list[Piece]


def _doc_text(method: str) -> str:
    spec = build_catalog().methods.get(method)
    if spec is None:
        return ""
    return spec.description + " " + " ".join(p.description for p in spec.params)


@lru_cache(maxsize=4096)
def _tokens(text: str) -> frozenset[str]:
    return frozenset(t.lower() for t in _TOKEN.findall(text))


@lru_cache(maxsize=4096)
def _nums_cached(text: str) -> frozenset[float]:
    return frozenset(_numbers(text))


def _state_numbers(state: dict[str, Any]) -> dict[float, str]:
    out: dict[float, str] = {}
    for attr, x in state.items():
        if isinstance(x, int | float) and not isinstance(x, bool):
            out.setdefault(float(x), f"the current {camel_words(attr)}")
    return out


def _number_pool(text: str, results: list[str], state: dict[str, Any], method: str) -> dict[float, str]:
    pool: dict[float, str] = {}
    for n in _nums_cached(text):
        pool.setdefault(n, _fmt(n))
    for n in _nums_cached(_doc_text(method)):
        pool.setdefault(n, _fmt(n))
    for r in results:
        if len(r) < 20000:
            for n in _nums_cached(r):
                pool.setdefault(n, "the number from the earlier result")
    for n, d in _state_numbers(state).items():
        pool.setdefault(n, d)
    return dict(list(pool.items())[:_MAX_POOL])


def _fmt(n: float) -> str:
    return str(int(n)) if float(n).is_integer() else str(n)


def _arithmetic(v: float, pool: dict[float, str]) -> Recipe | None:
    nums = list(pool)
    for a in nums:  # a rounded piece (166 liters in gallons, to the hundredth)
        for k in range(0, 4):
            if a != v and abs(round(a, k) - v) < 1e-9 and not float(a).is_integer():
                return Recipe(kind="arithmetic", say=f"worked out as {pool[a]} rounded to {k} decimals",
                              pieces=[Piece(token=_fmt(a), where="pool")])
    for a in nums:
        for b in nums:
            for op, res, word in (("-", a - b, "minus"), ("+", a + b, "plus"), ("*", a * b, "times"),
                                  ("/", a / b if b else None, "divided by")):
                if res is not None and abs(res - v) < 1e-6 and not (op == "+" and a > b):
                    if a == v or b == v:
                        continue
                    return Recipe(kind="arithmetic", say=f"worked out as {pool[a]} {word} {pool[b]}",
                                  pieces=[Piece(token=_fmt(a), where="pool"), Piece(token=_fmt(b), where="pool")])
    return None


def recipe_pieces(value: float, text: str, results: list[str], state: dict[str, Any], method: str
                  ) -> list[tuple[float, str]] | None:
    """The numbers a composed number is worked out from, each with where it comes from ('the current fuel level',
    'the number from the earlier result', or the number as the text says it); None when no recipe rebuilds it."""
    pool = _number_pool(text, results, state, method)
    found = _arithmetic(float(value), pool)
    return None if found is None else [(float(p.token), pool[float(p.token)]) for p in found.pieces]


def recipe(value: Any, text: str, results: list[str], state: dict[str, Any], method: str,
           strings: set[str] | None = None) -> Recipe | None:
    """A recipe that rebuilds ``value`` from obtainable pieces, or None (then it is unobtainable)."""
    if isinstance(value, list | tuple):
        parts = [recipe(v, text, results, state, method, strings) for v in value]
        if any(p is None for p in parts):
            return None
        if len(parts) == 1 and parts[0] is not None:
            return parts[0]
        return Recipe(kind="format", say="built from: " + "; ".join(p.say for p in parts if p),
                      pieces=[x for p in parts if p for x in p.pieces])
    if isinstance(value, int | float) and not isinstance(value, bool):
        pool = _number_pool(text, results, state, method)
        if float(value) in pool:
            return Recipe(kind="format", say=f"worked out as {pool[float(value)]}", pieces=[])
        return _arithmetic(float(value), pool)
    if not isinstance(value, str):
        return None
    if _ISO.match(value):
        return None  # a date the text does not state cannot be rebuilt from scattered digits
    user_toks = _tokens(text)
    result_toks = set().union(*(_tokens(r) for r in results if len(r) < 20000)) if results else set()
    result_nums = set().union(*(_nums_cached(r) for r in results if len(r) < 20000)) if results else set()
    state_toks = _tokens(" ".join(sorted(strings or ())))
    pieces: list[Piece] = []
    template: list[str] = []
    last = 0

    def hole() -> None:
        if not template or not template[-1].endswith("...>"):
            template.append("<...>")

    for m in _TOKEN.finditer(value):
        tok = m.group(0)
        low = tok.lower()
        template.append(value[last:m.start()])
        last = m.end()
        if low in user_toks:
            pieces.append(Piece(token=tok, where="user"))
            template.append(tok)
        elif low in result_toks or (tok[0].isdigit() and float(tok) in result_nums):
            pieces.append(Piece(token=tok, where="call"))
            hole()
        elif low in state_toks and len(low) >= 3:
            pieces.append(Piece(token=tok, where="state"))
            hole()
        elif tok.isalpha() and len(value) <= _MAX_FORMAT_CHARS:
            pieces.append(Piece(token=tok, where="literal"))  # a piece the recipe itself states
            template.append(tok)
        else:
            return None
    template.append(value[last:])
    if not pieces or sum(p.where == "literal" for p in pieces) > _MAX_LITERALS:
        return None
    if (any(p.where == "literal" for p in pieces) and not any(p.where in ("call", "state") for p in pieces)
            and value.isalnum()):
        return None  # a plain word with nothing obtained: it would just be dictated
    form = "".join(template)
    form = re.sub(r"(<\.\.\.>)(\W{0,3}<\.\.\.>)+", r"\1", form)
    if form.count("<...>") and len(form) > 80 or form.strip() in ("<...>", ""):
        where = "the earlier result" if any(p.where == "call" for p in pieces) else "what is stored"
        return Recipe(kind="format", say=f"built from the text of {where}", pieces=pieces)
    if value.lower() in form.lower():  # every piece is stated: point at them without spelling the value out
        form = "".join(f"<{m.group(0)}>" if m.group(0).isalnum() else m.group(0)
                       for m in re.finditer(r"[A-Za-z0-9]+|[^A-Za-z0-9]+", form))
    form = form.replace("<...>", "<from the earlier result>" if any(p.where == "call" for p in pieces)
                        else "<from what is stored>")
    return Recipe(kind="format", say=f"in the form '{form}'", pieces=pieces)


def recomposable(value: Any, text: str, results: list[str], state: dict[str, Any], method: str,
                 strings: set[str] | None = None) -> bool:
    """The verdict's check for a composed value: pieces exist and the text words a recipe."""
    return recipe(value, text, results, state, method, strings) is not None and any(
        m in text.lower() for m in RECIPE_MARKERS)


def problem_key(problem: str) -> str:
    """'turn 2 fillFuelTank.fuelAmount=40 (no recipe ...)' -> 'turn 2 fillFuelTank.fuelAmount'."""
    return problem.split("=", 1)[0]


def new_problems(problems: list[str], seed_problems: list[str]) -> list[str]:
    """The obtainability problems of a seed-anchored variant that its seed does not have itself.

    A variant written from its seed's own words points at a value exactly as the seed does; where the
    checks cannot read the seed's pointing ("fuel up entirely", "the file we just made"), they cannot
    read the variant's either, and the seed's human-written text is the ground truth's warrant. The
    plan sampler never renames such a value and never resamples the state it is built from."""
    seen = {problem_key(p) for p in seed_problems}
    return [p for p in problems if problem_key(p) not in seen]
