"""Values the assistant reads from earlier results, re-derived on the variant's own results.

A plan changes entities and state, so a value the seed's ground truth read from a result (an order id, a price, a
distance) must be read from the variant's result by the same path: the same key, the same position in a list
(:func:`rederive`). A number a dictated text quotes from a result follows too (:func:`rederive_embedded`).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from envs.executor import parse_call, to_call_string
from envs.task import Task
from rods_agents.analysis.catalog import build_catalog
from rods_agents.analysis.profile import Profile
from rods_agents.analysis.tracing import Trace, bind_args, trace_task


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return None


def _paths(obj: Any, value: Any, path: tuple = ()) -> list[tuple]:
    """Paths (keys / list positions) at which ``value`` is a leaf of ``obj``."""
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in _paths(v, value, (*path, k))]
    if isinstance(obj, list):
        return [p for i, v in enumerate(obj) for p in _paths(v, value, (*path, (i, len(obj))))]
    same = (obj == value and type(obj) is type(value)) or (
        isinstance(obj, int | float) and isinstance(value, int | float) and not isinstance(obj, bool)
        and not isinstance(value, bool) and float(obj) == float(value))
    if not same and isinstance(obj, str) and isinstance(value, int | float) and not isinstance(value, bool):
        same = obj == str(value)
    if not same and isinstance(value, str) and isinstance(obj, int | float) and not isinstance(obj, bool):
        same = value == str(obj)
    return [path] if same else []


def _keyed(obj: Any, value: Any) -> bool:
    """``value`` is a key of a dict inside ``obj`` (``view_messages_sent`` keys messages by receiver id)."""
    if isinstance(obj, dict):
        return value in obj or any(_keyed(v, value) for v in obj.values())
    return isinstance(obj, list) and any(_keyed(v, value) for v in obj)


def _path_leaves(obj: Any, name: str, path: tuple = ()) -> list[tuple]:
    """Paths at which a leaf of ``obj`` is a file-system path through or ending in ``name`` ('./a/name/c', './a/b/name')."""
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in _path_leaves(v, name, (*path, k))]
    if isinstance(obj, list):
        return [p for i, v in enumerate(obj) for p in _path_leaves(v, name, (*path, (i, len(obj))))]
    return [path] if isinstance(obj, str) and len(name) >= 3 and (obj.endswith("/" + name) or f"/{name}/" in obj) else []


def _at(obj: Any, path: tuple, from_end: bool, ordinal: bool = False) -> Any:
    """The leaf at ``path``; a list entry from the end with ``from_end``, and at the same index in a list of another
    length only where the first is meant or the text names the place (``ordinal``: 'the third stock in the list')."""
    for step in path:
        if isinstance(step, tuple):
            i, n = step
            if not isinstance(obj, list):
                raise KeyError(step)
            if len(obj) != n and not from_end and i != 0 and not (ordinal and i < len(obj)):
                raise KeyError("list length changed")  # the first entry is the first whatever the length
            obj = obj[i - n] if from_end else obj[i]
        else:
            if not isinstance(obj, dict) or step not in obj:
                raise KeyError(step)
            obj = obj[step]
    return obj


FROM_END = re.compile(r"\b(last|final|latest|most recent|bottom)\b", re.I)
"""Words that count a list's place from its end ('the last stock on the list')."""


_POSITION = re.compile(r"\b(first|initial|second|third|fourth|fifth|last|final|latest|most recent|earliest|top|bottom|"
                       r"\d+(?:st|nd|rd|th))\b", re.I)


def rederive(seed: Task, seed_trace: Trace, profile: Profile, gt: list[list[str]], config: dict,
             max_rounds: int = 3) -> tuple[list[list[str]], list[list[Any]]] | None:
    """Values read from earlier results, taken from the variant's results by the seed's path.

    Returns the updated ground truth and [old, new] of the values that changed, or None when a value
    cannot be found again (the reference would no longer hold)."""
    call_args = [a for a in profile.arg_sources if a.source == "call" and a.producer is not None]
    changed: list[list[Any]] = []
    for _ in range(max_rounds):
        draft = seed.model_copy(update={"ground_truth": gt, "initial_config": config})
        vtrace = trace_task(draft)
        if len(vtrace.calls) != len(seed_trace.calls):
            return None
        updates: dict[tuple[int, int], dict[str, Any]] = {}
        for a in call_args:
            seed_res, var_res = seed_trace.calls[a.producer].result, vtrace.calls[a.producer].result
            pos = next(p for p, r in enumerate(seed_trace.calls) if (r.turn, r.index) == (a.turn, a.index))
            if seed_res == var_res:
                old_value, cur_value = seed_trace.calls[pos].args.get(a.param), vtrace.calls[pos].args.get(a.param)
                if cur_value != old_value and not vtrace.calls[a.producer].error:
                    # the same result gives the same value: a swap that wrote a new city into the tire shop's
                    # address ('456 Oakwood Avenue, Rivermist') took it where the environment still says Rivermist
                    updates.setdefault((a.turn, a.index), {})[a.param] = old_value
                    changed.append([old_value, old_value])
                continue
            if vtrace.calls[a.producer].error:
                continue  # the patch agent repairs the producer first; the verdict re-checks the result
            old_value = seed_trace.calls[pos].args.get(a.param)
            cur_value = vtrace.calls[pos].args.get(a.param)
            if isinstance(old_value, list | dict):
                return None
            sj, vj = _json(seed_res), _json(var_res)
            text = " ".join(m.content for t in seed.turns[: a.turn + 1] for m in t)
            positional = bool(_POSITION.search(text))
            # a number is read by its path ('price'), never found anywhere else in the result: a long-context
            # moving average that happens to equal the old price is not the new stock's price (long_context_108)
            paths = _paths(sj, old_value) if sj is not None else []
            by_path = isinstance(cur_value, int | float) and not isinstance(cur_value, bool) and bool(paths)
            inside = (isinstance(cur_value, str) and len(cur_value) >= 4 and cur_value in var_res
                      and isinstance(old_value, str) and old_value in seed_res)
            if inside or not positional and not by_path and (
                    _paths(vj, cur_value) or _keyed(vj, cur_value) if vj is not None
                    else isinstance(cur_value, str) and cur_value in var_res):
                continue  # the same entity (renamed alike) is still there, as a value, a key (the messages sent,
                # keyed by their receiver's id) or inside a text ("Message sent to 'USR003' successfully."):
                # nothing to re-derive
            if sj is not None and vj is not None and isinstance(old_value, str) and isinstance(cur_value, str):
                seed_at, var_at = _path_leaves(sj, old_value), _path_leaves(vj, cur_value)
                if seed_at and seed_at == var_at:
                    continue  # a file a listing names by its path ('./projects/photography/a.jpg'), renamed
                    # alike and at the same place: the reference still holds
            keyed = [p for p in paths if not any(isinstance(step, tuple) for step in p)]
            if len(paths) > 1 and keyed and by_path:
                paths = keyed  # the price under its own key, not a list entry that happens to equal it
            if not paths or vj is None:
                return None
            from_end = bool(FROM_END.search(text))
            try:
                news = {json.dumps(_at(vj, p, from_end, positional), sort_keys=True) for p in paths}
            except (KeyError, IndexError, TypeError):
                return None
            if len(news) != 1:
                return None
            new_value = json.loads(news.pop())
            if type(new_value) is not type(old_value) and not (isinstance(new_value, int | float)
                                                               and isinstance(old_value, int | float)):
                new_value = str(new_value) if isinstance(old_value, str) else new_value
            if new_value != cur_value:
                updates.setdefault((a.turn, a.index), {})[a.param] = new_value
                changed.append([old_value, new_value])
        if not updates:
            return gt, changed
        gt = with_args(gt, updates)
    return None


def with_args(gt: list[list[str]], updates: dict[tuple[int, int], dict[str, Any]]) -> list[list[str]]:
    """``gt`` with the arguments of call (turn, index) set as ``updates`` says, each call re-written in full."""
    gt = [list(calls) for calls in gt]
    for (t, i), args in updates.items():
        parsed = parse_call(gt[t][i])
        spec = build_catalog().methods.get(parsed.name)
        bound = bind_args(spec.cls if spec else None, parsed.name, parsed.args, parsed.kwargs)
        bound.update(args)
        gt[t][i] = to_call_string(parsed.name, bound)
    return gt


_NUMBER_IN_TEXT = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.]*\d)")


def restated(token: str, value: Any) -> str | None:
    """``value`` written as ``token`` writes its number (the same decimals); None where that would round."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        return None
    decimals = len(token.split(".")[1]) if "." in token else 0
    if round(float(value), decimals) != float(value):
        return None  # 780.46 written as '780.5' would quote a distance the tool never returned
    return f"{float(value):.{decimals}f}"


def _quoted_results(seed: Task, seed_trace: Trace) -> dict[tuple[int, str], dict[str, tuple[int, tuple]]]:
    """(call position, parameter) -> {number token: (producer position, JSON path)} for the numbers a seed's string
    argument quotes from exactly one place of an earlier result, and the user's words up to that turn do not say."""
    results = [_json(r.result) for r in seed_trace.calls]
    out: dict[tuple[int, str], dict[str, tuple[int, tuple]]] = {}
    for pos, rec in enumerate(seed_trace.calls):
        said = set(_NUMBER_IN_TEXT.findall(" ".join(m.content for t in seed.turns[: rec.turn + 1] for m in t
                                                    if m.role == "user")))
        for param, value in rec.args.items():
            if not isinstance(value, str):
                continue
            for token in sorted(set(_NUMBER_IN_TEXT.findall(value)) - said):
                found = [(p, path) for p in range(pos) if results[p] is not None
                         for path in _paths(results[p], float(token))]
                if len(found) == 1:
                    out.setdefault((pos, param), {})[token] = found[0]
    return out


def rederive_embedded(seed: Task, seed_trace: Trace, gt: list[list[str]], config: dict) -> list[list[str]]:
    """Numbers a dictated text quotes from an earlier result, taken from the variant's results.

    base_62 asks for the distance 'in the format 'The distance from Rivermist to Stonebrook is xxx km.'', and its
    message says 750.0 km, the seed's distance; with the cities changed, the variant's message must say the new
    pair's distance (780.0), written with the same decimals. A number the user's words say up to that turn, or one
    that more than one place of the earlier results holds, is left as it is (the verdict then judges the text). The
    variant runs only when the seed quotes such a number (most seeds do not)."""
    quoted = _quoted_results(seed, seed_trace)
    if not quoted:
        return gt
    vtrace = trace_task(seed.model_copy(update={"ground_truth": gt, "initial_config": config}))
    if len(vtrace.calls) != len(seed_trace.calls):
        return gt
    results = [_json(r.result) for r in vtrace.calls]
    updates: dict[tuple[int, int], dict[str, Any]] = {}
    for (pos, param), tokens in quoted.items():
        current = vtrace.calls[pos].args.get(param)
        if not isinstance(current, str):
            continue
        news: dict[str, str] = {}
        for token, (p, path) in tokens.items():
            try:
                new = restated(token, _at(results[p], path, False))
            except (KeyError, IndexError, TypeError):
                continue
            if new is not None and new != token:
                news[token] = new
        # one pass: a new value equal to another quoted number ('750.0 -> 780.0' beside '780.0 -> 810.0') is
        # never rewritten a second time
        text = _NUMBER_IN_TEXT.sub(lambda m, news=news: news.get(m.group(0), m.group(0)), current)
        if text != current:
            rec = vtrace.calls[pos]
            updates.setdefault((rec.turn, rec.index), {})[param] = text
    return with_args(gt, updates) if updates else gt


def _number_leaves(obj: Any, path: tuple = ()) -> list[tuple[tuple, float]]:
    """(path, number) for every numeric leaf of a parsed result."""
    if isinstance(obj, dict):
        return [x for k, v in obj.items() for x in _number_leaves(v, (*path, k))]
    if isinstance(obj, list):
        return [x for i, v in enumerate(obj) for x in _number_leaves(v, (*path, (i, len(obj))))]
    if isinstance(obj, int | float) and not isinstance(obj, bool) and math.isfinite(obj):
        return [(path, float(obj))]
    return []


def _rounded_from(seed_trace: Trace, pos: int, value: float) -> tuple[int, tuple, int] | None:
    """(producer position, JSON path, decimals) of the one fractional number of an earlier result that ``value``
    rounds ('fill that amount, rounded': fillFuelTank(40) from liter_to_gallon's 39.63); None unless exactly one."""
    found = []
    for p in range(pos):
        res = _json(seed_trace.calls[p].result)
        for path, x in _number_leaves(res) if res is not None else ():
            k = next((k for k in range(4) if not x.is_integer() and abs(round(x, k) - value) < 1e-9), None)
            if k is not None:
                found.append((p, path, k))
    return found[0] if len(found) == 1 else None


def rederive_rounded(seed: Task, seed_trace: Trace, profile: Profile, gt: list[list[str]], config: dict
                     ) -> list[list[str]]:
    """Numbers the assistant rounds from an earlier result, rounded again from the variant's result.

    base_90 says 'fill 150 liters ... How much is that in gallons? Round it to the nearest integer and fill that
    amount': the fill (40) is 39.63 gallons rounded. A plan that states 170 liters instead must fill round(44.91) =
    45, the same path of the variant's result at the same decimals; before, the 150 liters stayed in every variant
    so that the composition held."""
    rounded = []
    for a in profile.arg_sources:
        pos = next((p for p, r in enumerate(seed_trace.calls) if (r.turn, r.index) == (a.turn, a.index)), None)
        old = seed_trace.calls[pos].args.get(a.param) if pos is not None else None
        if a.source == "composed" and isinstance(old, int | float) and not isinstance(old, bool):
            where = _rounded_from(seed_trace, pos, float(old))
            if where is not None:
                rounded.append((a, pos, old, where))
    if not rounded:
        return gt
    vtrace = trace_task(seed.model_copy(update={"ground_truth": gt, "initial_config": config}))
    if len(vtrace.calls) != len(seed_trace.calls):
        return gt
    updates: dict[tuple[int, int], dict[str, Any]] = {}
    for a, pos, old, (p, path, k) in rounded:
        try:
            x = _at(_json(vtrace.calls[p].result), path, False)
        except (KeyError, IndexError, TypeError):
            continue
        if not isinstance(x, int | float) or isinstance(x, bool):
            continue
        new = round(float(x), k)
        new = int(new) if isinstance(old, int) else new
        if new != vtrace.calls[pos].args.get(a.param):
            updates.setdefault((a.turn, a.index), {})[a.param] = new
    return with_args(gt, updates) if updates else gt


__all__ = ["rederive", "rederive_embedded", "rederive_rounded", "restated", "with_args"]
