"""Substance checks of a variant against its seed: parsed calls, filler arguments, leftover old names.

Call strings are compared *parsed* (``envs.executor.parse_call``; positional arguments bound to their
parameter names, ``30`` and ``30.0`` alike), never as text: a rewrite that only drops the spaces
after commas has the seed's ground truth. The verdict uses :func:`same_ground_truth` /
:func:`same_config` for novelty; ``benchmarks/synthesis_quality.py`` uses all of them.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from envs.executor import CallError, parse_call
from envs.task import Task
from rods_agents.analysis import knowledge
from rods_agents.analysis.catalog import build_catalog
from rods_agents.analysis.tracing import bind_args
from rods_agents.analysis.value_sources import enum_values

_SENTENCE_END = re.compile(r"[.!?]\s*$")
_WORD = re.compile(r"[A-Za-z0-9']+")
_NAME_PARAMS = frozenset({"title", "dir_name", "folder", "file_name", "destination", "source", "path", "name"})
_PERSON_SHAPE = re.compile(r"^[A-Z][a-z]+(?: [A-Z][a-z]+)?$")


def _canon(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, int | float):
        return value
    if isinstance(value, list | tuple):
        return [_canon(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _canon(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    return repr(value)


def parsed_call(call: str) -> tuple[str, str]:
    """``(method, canonical JSON of its arguments bound to parameter names)``; an unparsable call is
    kept as its text."""
    try:
        p = parse_call(call)
    except CallError:
        return (call.strip(), "")
    spec = build_catalog().methods.get(p.name)
    try:
        args = bind_args(spec.cls if spec else None, p.name, p.args, p.kwargs)
    except (TypeError, IndexError, KeyError):
        args = {**{f"_{i}": a for i, a in enumerate(p.args)}, **p.kwargs}
    return (p.name, json.dumps(_canon(args), sort_keys=True))


def parsed_ground_truth(task: Task) -> list[list[tuple[str, str]]]:
    return [[parsed_call(c) for c in turn] for turn in task.ground_truth]


def skeleton(task: Task) -> list[list[str]]:
    """The method names per turn."""
    return [[m for m, _ in turn] for turn in parsed_ground_truth(task)]


def same_ground_truth(a: Task, b: Task) -> bool:
    return parsed_ground_truth(a) == parsed_ground_truth(b)


def same_config(a: Task, b: Task) -> bool:
    return json.dumps(_canon(a.initial_config), sort_keys=True) == json.dumps(_canon(b.initial_config), sort_keys=True)


# ----------------------------------------------------------------------------- filler arguments
@lru_cache(maxsize=1)
def person_names() -> frozenset[str]:
    """First and last names the offline backbone draws from (prompts/bfcl/offline_vocab.json and, where it
    exists, prompts/bfcl/offline_value_kinds.json)."""
    names: list[str] = []
    for data in (knowledge.vocab(), knowledge.value_pools()):
        names += list(data.get("first_names", [])) + list(data.get("last_names", []))
    return frozenset(n for n in names if isinstance(n, str))


def documented_options(method: str, param: str) -> tuple[str, ...]:
    """The values a parameter's doc allows: its enum, '[Enum]: a, b' or 'the options: a, b'."""
    allowed = enum_values(method, param)
    if allowed:
        return allowed
    spec = build_catalog().methods.get(method)
    p = next((p for p in spec.params if p.name == param), None) if spec else None
    if p is None:
        return ()
    m = re.search(r"options(?: are)?:\s*([^.]+)", p.description, re.I)
    if not m:
        return ()
    return tuple(x.strip().strip("'\"") for x in m.group(1).split(",") if x.strip())


def _is_sentence(v: str) -> bool:
    n = len(_WORD.findall(v))
    return n >= 9 or (n >= 5 and bool(_SENTENCE_END.search(v)))


def _is_short_name(v: str) -> bool:
    """A name, path, title or address: a few words, no sentence ending."""
    return 0 < len(_WORD.findall(v)) <= 6 and not _SENTENCE_END.search(v)


def _looks_like_person(v: str) -> bool:
    parts = v.split()
    return 1 <= len(parts) <= 2 and all(p in person_names() for p in parts)


def _bound(call: str) -> tuple[str, dict[str, Any]] | None:
    try:
        p = parse_call(call)
    except CallError:
        return None
    spec = build_catalog().methods.get(p.name)
    try:
        return p.name, bind_args(spec.cls if spec else None, p.name, p.args, p.kwargs)
    except (TypeError, IndexError):
        return p.name, dict(p.kwargs)


def filler_arguments(seed: Task, variant: Task) -> list[str]:
    """String arguments of ``variant`` that are filler where the seed's were not: a sentence where the
    seed had a short name, path or title; a value outside the parameter's documented options; a
    person's name given to a title, folder, file or destination. One line per finding."""
    out: list[str] = []
    for t, (s_turn, v_turn) in enumerate(zip(seed.ground_truth, variant.ground_truth, strict=False)):
        for i, v_call in enumerate(v_turn):
            vb = _bound(v_call)
            if vb is None:
                continue
            name, v_args = vb
            sb = _bound(s_turn[i]) if i < len(s_turn) else None
            s_args = sb[1] if sb is not None else {}
            for param, value in v_args.items():
                if not isinstance(value, str):
                    continue
                old = s_args.get(param)
                options = documented_options(name, param)
                where = f"turn {t} {name}.{param}={value[:50]!r}"
                if options and value not in options and (not isinstance(old, str) or old in options):
                    out.append(f"{where}: outside the documented options {list(options)}")
                elif isinstance(old, str) and _is_short_name(old) and _is_sentence(value):
                    out.append(f"{where}: a sentence where the seed had {old[:40]!r}")
                elif (isinstance(old, str) and param in _NAME_PARAMS and _looks_like_person(value)
                      and not _PERSON_SHAPE.match(old)):
                    out.append(f"{where}: a person's name where the seed had {old[:40]!r}")
    return out


# ----------------------------------------------------------------------------- leftover old names
def _strings(obj: Any, out: list[str]) -> list[str]:
    if isinstance(obj, str):
        out.append(obj)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _strings(k, out)
            _strings(v, out)
    elif isinstance(obj, list | tuple):
        for v in obj:
            _strings(v, out)
    return out


def _mentions(old: str, text: str) -> bool:
    return re.search(r"(?<![\w.])" + re.escape(old) + r"(?![\w])", text) is not None


def leftover_names(variant: Task, renames: dict[str, str]) -> list[str]:
    """Old entity names the plan renamed (``renames``: old -> new) that still appear in the variant's
    text, initial_config or ground truth (as a whole word; a name the new one contains, 'doc' in
    'doc_archive', and names under 3 characters are skipped)."""
    text = "\n".join(m.content for turn in variant.turns for m in turn)
    config = _strings(variant.initial_config, [])
    calls = [c for turn in variant.ground_truth for c in turn]
    out: list[str] = []
    for old, new in renames.items():
        if not isinstance(old, str) or len(old) < 3 or old == new or (isinstance(new, str) and old in new):
            continue
        if _mentions(old, text):
            out.append(f"text: {old!r}")
        if any(s == old or (len(old) >= 4 and _mentions(old, s) and " " in s) for s in config):
            out.append(f"initial_config: {old!r}")
        if any(_mentions(old, c) for c in calls):
            out.append(f"ground_truth: {old!r}")
    return out


__all__ = ["documented_options", "filler_arguments", "leftover_names", "parsed_call", "parsed_ground_truth",
           "same_config", "same_ground_truth", "skeleton"]
