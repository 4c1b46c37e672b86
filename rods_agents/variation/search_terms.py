"""What the user searches the files for (grep's pattern, find's name), renamed with the files that hold it.

A search term lives in the state as well as in the text: 'identify sections pertaining to 'budget analysis'' finds the
lines of a report that hold the phrase, 'locate any file with analysis in it' the files named so. Renaming only the
text would search for nothing, so the term was kept, and with it the files around it, in all eight samples of nine
file-system scenarios (base_0's 'budget analysis', base_1's 'Error', base_7's 'goal'). Here a term becomes another of
its group (``search_terms`` in ``prompts/bfcl/offline_value_kinds.json``: a log level for a log level, a report
topic for a report topic) in the file contents, the file names and the text alike
(:class:`~rods_agents.variation.seed_anchor.Substitution` renames every word-bounded occurrence), so the variant
searches other files for something else and still finds what the seed found, in the same places.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from rods_agents.variation.draw import Draw, fs_kinds
from rods_agents.variation.saying import word_in
from rods_agents.variation.seed_anchor import Substitution
from rods_agents.variation.value_kinds import pools

_SEARCH_PARAMS = {"grep": "pattern", "find": "name"}


def _group(term: str) -> list[str] | None:
    low = term.lower()
    return next((g for g in pools().get("search_terms", {}).get("groups", []) if low in (x.lower() for x in g)), None)


def _dictated_inside(term: str, bound: list[tuple[Any, dict[str, Any]]], search: Any, names: dict[str, str]) -> bool:
    """The term inside a text another call takes ('update the system', the message base_33 sends): that text is the
    dictated swap's to change (:func:`~rods_agents.variation.entity_swaps.dictated_swap`), not this rename's."""
    low = term.lower()
    return any(isinstance(v, str) and low in v.lower() and v != term and v not in names
               for rec, args in bound if rec is not search for v in args.values())


@lru_cache(maxsize=1)
def _long_context_text() -> str:
    import importlib
    import inspect

    from envs.bfcl_data import ENV_PACKAGE

    try:
        return inspect.getsource(importlib.import_module(f"{ENV_PACKAGE}.long_context")).lower()
    except (OSError, ImportError):
        return ""


def _in_long_context_data(term: str) -> bool:
    """A long-context task's files hold BFCL's filler lines as well: a term they write ('Error' in the filler log)
    stays, or the search would find the filler's lines under the old word and not the new one."""
    return re.search(rf"(?<![a-z0-9]){re.escape(term.lower())}(?![a-z0-9])", _long_context_text()) is not None


def _as_cased(old: str, new: str) -> str:
    """``new`` written in ``old``'s case: 'Error' -> 'Warning', 'error' -> 'warning', 'ERROR' -> 'WARNING'."""
    if old.isupper():
        return new.upper()
    if old.islower():
        return new.lower()
    if old[:1].isupper() and " " not in old:
        return new[:1].upper() + new[1:].lower()
    return new


def search_term_renames(d: Draw, bound: list[tuple[Any, dict[str, Any]]], renames: dict[str, str],
                        taken: set[str]) -> None:
    """Renames (into ``renames``, in place) of each search term the user states that a group of the pool holds, and of
    the file names that hold it inside a word ('goals.txt' for 'goal': find matches a part of a name, the
    substitution only whole words). The new term appears nowhere in the seed's files or text, so the search finds
    exactly the places the old one did."""
    tree = d.seed.initial_config.get("GorillaFileSystem")
    if not isinstance(tree, dict):
        return
    state = json.dumps(tree).lower()
    text = " ".join(d.turn_text)
    names = fs_kinds(tree, {})
    for rec, args in bound:
        value = args.get(_SEARCH_PARAMS.get(rec.name, ""))
        src = d.sources.get((rec.turn, rec.index, _SEARCH_PARAMS.get(rec.name, "")))
        if (not isinstance(value, str) or value in renames or value in names or src is None or src.source != "user"
                or not word_in(value, text) or _dictated_inside(value, bound, rec, names)
                or (d.seed.long_context and _in_long_context_data(value))):
            continue
        group = _group(value)
        fresh = [x for x in group or [] if x.lower() != value.lower() and x.lower() not in state
                 and x.lower() not in text.lower() and x not in taken
                 and (len(x) == len(value) or not d.composed)]  # sizes the task reports (du) stay the seed's
        if not fresh:
            continue
        new = _as_cased(value, d.pick(fresh, f"search|{value.lower()}"))
        renames[value] = new
        taken.add(new)
        whole = Substitution({value: new})
        for name in names:
            if value.lower() in name.lower() and not whole.found(name) and name not in renames:
                renames[name] = re.sub(re.escape(value), lambda m, n=new: _as_cased(m.group(0), n), name, flags=re.I)
                taken.add(renames[name])
