"""Another function of the same skill class, and documented options, where the seed's words can carry the swap.

:func:`maybe_swap` replaces a documented option (a travel class, a currency, a sector) the text names;
:func:`skill_method_swaps` a method by another of its skill class (:func:`rods_agents.analysis.skills.same_skill`) where
the seed turn holds a lexicon phrase of the old method and the lexicon has one for the new.
"""

from __future__ import annotations

import re
from typing import Any

from rods_agents.analysis.catalog import build_catalog
from rods_agents.analysis.skills import same_skill
from rods_agents.variation.draw import Draw
from rods_agents.variation.seed_anchor import Substitution
from rods_agents.variation.seed_anchor import scalar_strings as _scalar_strings
from rods_agents.variation.value_kinds import method_swaps, mode_words, options, pools


def maybe_swap(d: Draw, rec: Any, param: str, value: str, swaps: dict[str, str],
                phrases: list[dict[str, Any]]) -> None:
    key = f"{rec.name}.{param}"
    if key not in pools()["swappable"] or key in pools().get("unswapped", ()) or not d.p(0.8):
        return
    words = mode_words(rec.name, param)
    text = d.turn_text[rec.turn] if rec.turn < len(d.turn_text) else ""
    others = [o for o in options(rec.name, param) if o != value]
    new = d.pick(others, key) if value in options(rec.name, param) and others else None
    if new is None:
        return
    if sum(r.name == rec.name for r in d.trace.calls) > 1:
        return  # several calls of the method: which mention belongs to which call is not known
    if words:  # a mode said in words ('count the lines'): the word must be there to follow
        said = [(w, n) for w, n in zip(words.get(value, []), words.get(new, []), strict=False)
                if re.search(rf"\b{re.escape(w)}\b", text, re.I)]
        if not said or any(v == value for v in swaps.values()):
            return
        later = " ".join(d.turn_text[rec.turn + 1:])
        if any(re.search(rf"\b{re.escape(w)}\b", later, re.I) for w in words.get(value, [])):
            return  # a later turn speaks of the result in the old mode's words ('the number of lines')
        phrases.append({"turn": rec.turn, "phrases": [list(p) for p in said]})
    else:  # every mention must name this choice: 'business' in 'business class', not in 'business trip'
        context = pools().get("swap_context", {}).get(key)
        all_text = " ".join(d.turn_text)
        hits = list(Substitution({value: "\0"}).pattern.finditer(all_text)) if len(value) >= 3 else []
        if not hits or not Substitution({value: "\0"}).found(d.text_upto(rec.turn)):
            return
        if context is None and len(hits) != 1:
            return
        if context and not all(re.match(context, all_text[m.end():], re.I) for m in hits):
            return
    if any(v == value for v in swaps.values()):
        return
    swaps[value] = new


def skill_method_swaps(d: Draw, bound: list[tuple[Any, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Calls swapped for another method of their skill class where the seed turn says the old method in
    words the lexicon maps (``methods`` in ``prompts/bfcl/offline_value_kinds.json``): 'copied' -> 'moved'
    (cp -> mv), 'the average' -> 'the highest' (mean -> max_value). Every call of the method goes, all in
    one turn (two files copied are two files moved); not a call whose result a later call reads or builds
    a text from, nor one whose file a later call uses (a moved file is gone from its source)."""
    catalog = build_catalog()
    feeds = {e["source"] for e in d.profile.edges if e["kind"] == "data"}
    held_out = {f for names in d.seed.missed_function.values() for f in names}
    pos_of = {(r.turn, r.index): p for p, (r, _a) in enumerate(bound)}
    last_composed = max((pos_of.get((a.turn, a.index), -1) for a in d.profile.arg_sources if a.source == "composed"),
                        default=-1)
    lexicon = method_swaps()
    out: list[dict[str, Any]] = []
    done: set[str] = set()
    for rec, _args in bound:
        entry = lexicon.get(rec.name)
        if not entry or rec.name in done or rec.name in held_out or rec.turn >= len(d.turn_text):
            continue
        done.add(rec.name)
        group = [p for p, (r, _a) in enumerate(bound) if r.name == rec.name]
        if len({bound[p][0].turn for p in group}) > 1 or any(p in feeds or p < last_composed for p in group):
            continue
        text = d.turn_text[rec.turn]
        said = [ph for ph in entry["phrases"] if re.search(rf"\b{re.escape(ph)}\b", text, re.I)]
        if not entry.get("noun_ok") and any(re.search(rf"\b(a|an|the)\s+{re.escape(ph)}\b", text, re.I) for ph in said):
            continue  # the phrase as a noun ('make a copy'): the new method's verb would not fit
        targets = [m for m in entry.get("to", {}) if (m in catalog.alternatives(rec.name) or same_skill(rec.name, m))
                   and m in catalog.methods and m not in held_out]
        if not said or not targets or not d.p(0.5):
            continue
        names = {x for p in group for x in _scalar_strings(list(bound[p][1].values())) if len(x) >= 3}
        if any(names & set(_scalar_strings(list(a.values()))) for _later, a in bound[max(group) + 1:]):
            continue  # a later call uses what this one touches (a moved file is no longer at its source)
        new = d.pick(targets, f"method|{rec.name}")
        new_phrases = entry["to"][new]
        phrases = [(ph, new_phrases[min(i, len(new_phrases) - 1)]) for i, ph in enumerate(entry["phrases"]) if ph in said]
        for k, p in enumerate(group):
            r = bound[p][0]
            out.append({"turn": r.turn, "index": r.index, "from": r.name, "to": new,
                        "phrases": [list(x) for x in phrases] if k == 0 else []})
    return out


__all__ = ["maybe_swap", "skill_method_swaps"]
