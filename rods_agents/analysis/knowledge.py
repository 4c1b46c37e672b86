"""What the synthesis knows about each environment, in one place.

For BFCL's eight classes that knowledge is data: ``prompts/bfcl/*.json`` (the method lexicon, value pools,
preconditions, phrase tables, skill classes; the phrasebook is ``prompts/phrasebook``) plus the few symbol lookups below. Every module of
the synthesis reads it through this module, never through a file name of its own, so a user's environment
class (``package.module:ClassName``, see ``docs/environments.md``) plugs into the same lookups:

* **derived** entries for a user class come from the class itself: lexicon phrases from its method names
  (``borrow_book`` -> "borrow ... book"), logins and look-ups marked as steps the assistant infers, options
  from ``Literal`` parameters (already in its tool schema);
* **value kinds** the offline plan can rename without a pool: a handle (``mchen``, ``priya.n``) becomes
  another handle of the same shape (from the shared name pools), a capitalized name (``Station Eleven``) another
  of as many words, made of the words of the same field's other values in the seeds' states (a library's other
  titles) (:func:`derived_kind`, :func:`derived_value`);
* the **seeds' own wording**: the human-written tasks read in this process for a user class
  (:func:`envs.task.human_tasks`) are the donors its turns are re-worded from, as BFCL's train split is for
  BFCL's classes (:func:`donor_tasks`).

Anything a user class lacks is empty, and the offline backbone then keeps the seed's wording where it has
nothing better; the LLM backbone needs none of it (it reads the class's docs and source).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from envs.classes import known_classes, resolve
from envs.task import Task, human_tasks
from prompts import load_prompt_json

BFCL_TABLES = {
    "method_lexicon": "bfcl/method_lexicon.json",
    "value_pools": "bfcl/offline_value_kinds.json",
    "vocab": "bfcl/offline_vocab.json",
    "preconditions": "bfcl/llm_preconditions.json",
    "value_phrases": "bfcl/value_phrases.json",
    "skill_classes": "bfcl/skill_classes.json",
    "choice_words": "bfcl/choice_words.json",
    "dictated": "bfcl/offline_dictated.json",
    "value_recipes": "bfcl/value_recipes.json",
    "restated_numbers": "bfcl/restated_numbers.json",
}
"""Table name -> BFCL's data file (under ``prompts/``)."""

BFCL_SYMBOL_LOOKUPS = frozenset({"get_symbol_by_name", "get_available_stocks", "filter_stocks_by_price"})
"""TradingBot methods that turn a company name into a ticker: a ticker the task finds this way is not the
task's own symbol to rename."""

# words of a method name that mark a step the assistant infers (stating its values does not ask for it)
_INFERRED_VERBS = {"login", "logout", "log", "authenticate", "auth", "signin", "find", "lookup", "resolve"}
_LOGIN_PHRASES = [r"\b(log|sign)(ged|ging)?[ -]?(me |us |him |her )?(in|on)\b", r"\blog ?in\b", r"\bauthenticat\w*"]
_LOGOUT_PHRASES = [r"\b(log|sign)(ged|ging)?[ -]?(me |us )?(out|off)\b"]
_HANDLE = re.compile(r"^[a-z][a-z]*(?:[._\-][a-z]+)*$")
_NAME_WORDS = re.compile(r"^(?:The |A |An )?[A-Z][a-z']+(?: (?:of|the|and|in|on|at|to|a|an|[A-Z][a-z']+)){0,5}$")


def table(name: str) -> Any:
    """One of BFCL's data tables by name (see :data:`BFCL_TABLES`); comment keys dropped."""
    return load_prompt_json(BFCL_TABLES[name])


def _user_classes(classes: tuple[str, ...] | None = None) -> list[str]:
    return [c for c in (classes if classes is not None else known_classes()) if not resolve(c).bfcl]


def is_user_class(cls: str | None) -> bool:
    """True for an environment class that is not BFCL's (it has no data tables, only derived knowledge)."""
    return bool(cls) and not resolve(cls).bfcl  # type: ignore[arg-type]


def involves_user_class(task: Task) -> bool:
    return any(is_user_class(c) for c in task.involved_classes)


# ----------------------------------------------------------------------------------------------- lexicon
def _name_words(method: str) -> list[str]:
    return [w for w in re.split(r"_|(?<=[a-z])(?=[A-Z])", method) if w]


def derived_lexicon_entry(method: str) -> dict[str, Any]:
    """Phrases that show a user turn asks for ``method``, from its name: the verb with its object nearby."""
    words = [w.lower() for w in _name_words(method)]
    if not words:
        return {"phrases": [], "by_value": True}
    verb, rest = words[0], [w for w in words[1:] if w not in {"by", "my", "the", "a", "of", "to", "for"}]
    if "login" in words or words[:2] == ["log", "in"] or verb in {"authenticate", "signin"}:
        return {"phrases": list(_LOGIN_PHRASES), "by_value": False}
    if "logout" in words or words[:2] == ["log", "out"]:
        return {"phrases": list(_LOGOUT_PHRASES), "by_value": False}
    stem = re.escape(verb[:-1] if verb.endswith("e") and len(verb) > 4 else verb)
    phrases = [rf"\b{stem}\w*\b[^.?!]{{0,40}}\b{re.escape(rest[0])}" if rest else rf"\b{stem}\w*\b"]
    if rest:
        phrases.append(rf"\b{stem}\w*\b")
    return {"phrases": phrases, "by_value": verb not in _INFERRED_VERBS and "status" not in words}


@lru_cache(maxsize=8)
def _method_lexicon(classes: tuple[str, ...]) -> dict[str, Any]:
    data = dict(table("method_lexicon"))
    methods = dict(data["methods"])
    for cls in _user_classes(classes):
        for method in resolve(cls).methods:
            methods.setdefault(method, derived_lexicon_entry(method))
    data["methods"] = methods
    return data


def method_lexicon() -> dict[str, Any]:
    """BFCL's method lexicon plus a derived entry for every method of the user classes in use."""
    return _method_lexicon(tuple(known_classes()))


# ----------------------------------------------------------------------------------------------- other tables
def value_pools() -> dict[str, Any]:
    """Pools the offline plan draws new values from (shared by every environment: names, words, file stems)."""
    return table("value_pools")


def dictated() -> dict[str, Any]:
    """Dictated texts of the seeds (tweets, messages) and hashtags, each with texts of the same purpose."""
    return table("dictated")


def vocab() -> dict[str, Any]:
    return table("vocab")


def preconditions() -> dict[str, Any]:
    """Precondition phrases for the LLM's one-line function docs. A user class has none here: its docstrings,
    which the LLM reads, say them."""
    return table("preconditions")


def value_phrases() -> dict[str, Any]:
    return table("value_phrases")


def skill_classes() -> dict[str, Any]:
    return table("skill_classes")


def value_recipes() -> dict[str, Any]:
    """``method.param`` -> {recipe: what the call's result shows when the value was built that way} (BFCL's only;
    a user class has none, and its composed values keep their sentences)."""
    return table("value_recipes")


def symbol_lookups() -> frozenset[str]:
    return BFCL_SYMBOL_LOOKUPS


@lru_cache(maxsize=1)
def zip_codes() -> dict[str, str]:
    """The vehicle environment's city -> zip code table, read by running its own lookup on the cities its
    swappable-values table lists (a zip code stands for its city: swapping one swaps a place, not a number)."""
    from envs.bfcl_data import env_class

    cities = value_pools().get("swappable", {}).get("get_zipcode_based_on_city.city") or []
    api = env_class("VehicleControlAPI")()
    api._load_scenario({}, long_context=False)
    codes = {c: api.get_zipcode_based_on_city(c).get("zipcode") for c in cities}
    return {c: z for c, z in codes.items() if isinstance(z, str) and z != "00000"}


# ----------------------------------------------------------------------------------------------- value kinds
DERIVED_KINDS = ("handle", "name")


def derived_kind(value: str, method: str | None = None, param: str | None = None) -> str | None:
    """The kind of a user-environment value no BFCL pool covers: ``handle`` (``mchen``, ``priya.n``: lower-case
    words joined by ``.``, ``_`` or ``-``) or ``name`` (``Station Eleven``: capitalized words); None otherwise
    (digits are an id, which the plan already renews)."""
    v = value.strip()
    if 3 <= len(v) <= 30 and _HANDLE.match(v):
        return "handle"
    if 3 <= len(v) <= 60 and _NAME_WORDS.match(v):
        return "name"
    return None


_CONNECTORS = {"of", "the", "and", "in", "on", "at", "to", "a", "an"}


def _fields(obj: Any, key: str | None = None) -> list[tuple[str | None, str]]:
    """(field, string) for every string leaf of a config, the field being the dict key that holds it."""
    if isinstance(obj, str):
        return [(key, obj)]
    if isinstance(obj, dict):
        return [f for k, v in obj.items() for f in _fields(v, k if isinstance(k, str) else key)]
    if isinstance(obj, list | tuple):
        return [f for v in obj for f in _fields(v, key)]
    return []


def name_words(cls: str | None, old: str | None = None) -> list[str]:
    """Words a new capitalized name is made of: the words of the other values of ``old``'s field in a user class's
    seed states (a library's ``title`` fields give 'Darkness', 'Station', 'Kindred'; its members' names stay out),
    then the shared word pool; sorted, so draws are reproducible."""
    own: set[str] = set()
    if cls and is_user_class(cls):
        leaves = [f for task in human_tasks(cls) for f in _fields(task.initial_config)]
        fields = {k for k, v in leaves if v == old} if old else set()
        for k, v in leaves:
            if (k in fields or not fields) and derived_kind(v) == "name":
                own |= {w for w in v.split() if w.lower() not in _CONNECTORS and len(w) >= 3 and w.isalpha()}
    own.discard(old or "")
    return sorted(own) + [w.capitalize() for w in vocab().get("words", []) if w.isalpha()][: max(0, 12 - len(own))]


def derived_value(old: str, kind: str, rng: Any, taken: set[str], cls: str | None = None) -> str | None:
    """A new value of a derived kind in ``old``'s shape, not in ``taken`` (case-insensitive); None if none is found.

    A handle keeps its separators and initials (``priya.n`` -> ``jonas.t``, ``mchen`` -> ``bkowalski``); a name keeps
    its article and small words and gets new capitalized words (``The Left Hand of Darkness`` -> ``The Station
    Kindred of Maker``), drawn from :func:`name_words`."""
    pools = value_pools()
    firsts = [n.lower() for n in pools.get("first_names", []) if n.isalpha()]
    lasts = [n.lower() for n in pools.get("last_names", []) if n.isalpha()]
    words = name_words(cls, old)
    taken_low = {t.lower() for t in taken}
    for _ in range(40):
        if kind == "handle":
            parts = re.split(r"([._\-])", old)
            names = [rng.choice(firsts), rng.choice(lasts)]
            out, i = [], 0
            for part in parts:
                if part in "._-" and len(part) == 1:
                    out.append(part)
                    continue
                name = names[min(i, 1)] if i < 2 else rng.choice(lasts)
                out.append(name[0] if len(part) == 1 else name)
                i += 1
            if len([p for p in parts if p not in "._-"]) == 1 and len(old) > 3:
                out = [names[0][0] + names[1]]  # 'mchen': an initial and a last name, as handles are made
            new = "".join(out)
        elif kind == "name":
            tokens = old.split()
            content = [i for i, w in enumerate(tokens) if not (w.lower() in _CONNECTORS and (i > 0 or w in ("The", "A", "An")))]
            if len(words) < len(content):
                return None
            drawn = rng.sample(words, len(content))
            new = " ".join(drawn.pop(0) if i in content else w for i, w in enumerate(tokens))
        else:
            return None
        if new.lower() not in taken_low and new.lower() != old.lower():
            return new
    return None


# ----------------------------------------------------------------------------------------------- donors
@lru_cache(maxsize=1)
def _bfcl_donors() -> tuple[Task, ...]:
    from envs.dataset import load_split

    return tuple(load_split("train"))


def donor_tasks() -> tuple[Task, ...]:
    """Human-written tasks whose turns may be re-worded into a variant's: BFCL's train split, then the seed
    tasks of user classes loaded in this process (never the test split, never a synthesized task). Shared:
    read-only."""
    user = [t for cls in _user_classes() for t in human_tasks(cls)]
    return _bfcl_donors() + tuple(dict((t.id, t) for t in user).values())


def donor_ids() -> tuple[str, ...]:
    """The ids of :func:`donor_tasks`, cheap: what a cache of anything built from the donors is keyed by."""
    return tuple(t.id for t in donor_tasks())


def donor_key(task: Task) -> int | str:
    """What a donor must not share with the seed it serves: BFCL's scenario index, or a user task's id."""
    return task.scenario if task.scenario is not None else task.id


__all__ = ["BFCL_SYMBOL_LOOKUPS", "BFCL_TABLES", "DERIVED_KINDS", "derived_kind", "derived_lexicon_entry",
           "derived_value", "donor_ids", "donor_key", "donor_tasks", "involves_user_class", "is_user_class", "method_lexicon",
           "name_words", "preconditions", "skill_classes", "symbol_lookups", "table", "value_phrases",
           "value_pools", "vocab"]
