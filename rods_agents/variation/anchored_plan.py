"""The offline plan, anchored on the seed: change only what the seed's own words can carry.

Every change is chosen so that the seed's text can be rewritten to state it (see
:mod:`rods_agents.variation.seed_anchor`), and so that the variant stays the same task in a new story:

- **renames** of entities the task controls (keys and leaves of the initial_config, new names the
  user introduces), each with a new value of the same kind (:mod:`rods_agents.variation.value_kinds`); a value
  the user states is renamed only where the seed's text writes it in a form the rewrite can carry;
  a person's first and last name are renamed together, so the same person is the same everywhere;
- **numbers** the user states, in digits or words, perturbed (amounts may grow past the balance or the
  tank: the config patch agent repairs the state, see :mod:`rods_agents.stages.config_patch`);
- **option swaps**: a documented option (a travel class, a currency, a city of the environment's
  tables, a sector) replaced by another when the seed's text names it;
- **method swaps** inside a skill class (:func:`rods_agents.analysis.skills.same_skill`: a copy for a move,
  the highest value for an average) only where the seed turn holds a lexicon phrase of the old method and
  the lexicon has one for the new method (``prompts/bfcl/offline_value_kinds.json``);
- **dictated texts** (a tweet, a message, a ticket's description, a hashtag) replaced by another text of the
  same purpose and topic (``prompts/bfcl/offline_dictated.json``);
- **entities**: another city pair the distance tables know, another stock the TradingBot lists (not one a
  sector list names when the task looks a sector up), another route the fare table prices, each picked per
  sibling (:meth:`_Draw.pick`) so the eight samples of a scenario differ;
- values the assistant reads from earlier results are **re-derived** by the path they had in the
  seed's result (the same key, the same position in the list), so references by position still hold;
- a plan whose execution flips a yes/no outcome of the seed (a range that no longer falls short, a
  tire that is no longer low) is made more conservative: a condition of the seed's text must keep
  its answer.

A plan new only in digits (the same calls once digits are masked) is the verdict's ``novelty:digits_only``,
so the sampler tries again, with every change forced, until one changes an entity, a text or a method; the
conservative fallbacks (:func:`_levels`) drop the resampled state, numbers, options and renames before they
drop the entity swaps, and later attempts swap entities too.
"""

from __future__ import annotations

import copy
import json
import math
import re
from functools import lru_cache
from typing import Any

from envs.executor import CallError, parse_call, to_call_string
from envs.task import Task
from rods_agents.analysis import knowledge
from rods_agents.analysis.catalog import build_catalog
from rods_agents.analysis.profile import Profile
from rods_agents.analysis.skills import same_skill
from rods_agents.analysis.tracing import Trace, bind_args, limit_flips, outcome_flips, trace_task
from rods_agents.analysis.value_sources import _numbers, state_values, ticker_companies
from rods_agents.variation.seed_anchor import Substitution, _strings, has_number, substitute_phrases
from rods_agents.variation.seed_anchor import scalar_strings as _scalar_strings
from rods_agents.variation.value_kinds import (
    fresh,
    kind_of,
    method_swaps,
    mode_words,
    options,
    pools,
)

_PROTECTED = {".", "..", "/", "~", "", "*"}
_SYMBOL_LOOKUPS = knowledge.symbol_lookups()
# amounts that may grow past what the state allows (the patch agent then repairs the state)
_GROWABLE = {("place_order", "amount"), ("fillFuelTank", "fuelAmount"), ("transfer_funds", "amount")}


def _fs_kinds(tree: Any, out: dict[str, str]) -> dict[str, str]:
    if isinstance(tree, dict):
        for k, v in tree.items():
            if isinstance(v, dict) and v.get("type") in ("file", "directory"):
                out.setdefault(k, v["type"])
                _fs_kinds(v.get("contents", {}), out)
            elif isinstance(v, dict):
                _fs_kinds(v, out)
    return out


def _trailing_zeros(n: int) -> int:
    z = 0
    while n and n % 10 == 0:
        n //= 10
        z += 1
    return z


def _round_perturb(value: int | float, rng: Any, grow: bool) -> int | float | None:
    """A new number as round as the old one ('$10,000' -> '$8,500', '50 shares' -> '40 shares'): people
    state round amounts, and a round figure turned odd ('$9,267') reads as a made-up task. Steps of half the
    old value's last round unit, within about a fifth of it (or 1.6-3 times it, ``grow``). None when
    ``value`` is not round."""
    if isinstance(value, bool) or not float(value).is_integer() or abs(value) < 10:
        return None
    old = int(value)
    z = min(_trailing_zeros(old), 3)
    if z == 0:
        return None
    unit = 5 * 10 ** (z - 1)
    if grow:
        news = {int(round(old * f / unit)) * unit for f in (1.6, 2.0, 2.5, 3.0)}
    else:
        news = {old + k * unit for k in range(-4, 5) if k and abs(k * unit) <= max(unit, old * 0.25)}
    news = sorted(n for n in news if n > 0 and n != old)
    if not news:
        return None
    new = rng.choice(news)
    return new if isinstance(value, int) else float(new)


def _perturb(value: int | float, rng: Any, grow: bool = False) -> int | float:
    rounded = _round_perturb(value, rng, grow and rng.random() < 0.5)
    if rounded is not None:
        return rounded
    if grow and rng.random() < 0.5:
        factor = rng.uniform(1.6, 3.0)
        return int(round(value * factor)) if isinstance(value, int) else round(value * factor, 1)
    if isinstance(value, int):
        step = max(1, abs(value) // 5)
        new = value + rng.choice([-1, 1]) * rng.randint(1, step)
        return new if (new > 0) == (value > 0) and new != value else value + step
    decimals = len(repr(value).split(".")[1]) if "." in repr(value) else 1
    new = round(value * rng.uniform(0.8, 1.2), decimals)
    return new if new != value else round(value * 1.1, decimals)


def _hardcoded(value: str, classes: list[str]) -> bool:
    from rods_agents.analysis.catalog import class_source_text

    # an id-like value anywhere in the environment's code or long-context data (inside a text) counts too
    return any((len(value) >= 6 and any(ch.isdigit() for ch in value) and value in class_source_text(c))
               or re.search(r"['\"]" + re.escape(value) + r"['\"]", class_source_text(c)) for c in classes)


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


def _path_leaves(obj: Any, name: str, path: tuple = ()) -> list[tuple]:
    """Paths at which a leaf of ``obj`` is a file-system path ending in ``name`` ('./a/b/name')."""
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in _path_leaves(v, name, (*path, k))]
    if isinstance(obj, list):
        return [p for i, v in enumerate(obj) for p in _path_leaves(v, name, (*path, (i, len(obj))))]
    return [path] if isinstance(obj, str) and len(name) >= 3 and obj.endswith("/" + name) else []


def _at(obj: Any, path: tuple, from_end: bool) -> Any:
    for step in path:
        if isinstance(step, tuple):
            i, n = step
            if not isinstance(obj, list):
                raise KeyError(step)
            if len(obj) != n and not from_end and i != 0:
                raise KeyError("list length changed")  # the first entry is the first whatever the length
            obj = obj[i - n] if from_end else obj[i]
        else:
            if not isinstance(obj, dict) or step not in obj:
                raise KeyError(step)
            obj = obj[step]
    return obj


_DOUBLED = re.compile(r"\b([A-Za-z]{2,})( \1\b)+", re.I)
_LAST = re.compile(r"\b(last|final|latest|most recent|bottom)\b", re.I)
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
            if seed_res == var_res:
                continue
            pos = next(p for p, r in enumerate(seed_trace.calls) if (r.turn, r.index) == (a.turn, a.index))
            if vtrace.calls[a.producer].error:
                continue  # the patch agent repairs the producer first; the verdict re-checks the result
            old_value = seed_trace.calls[pos].args.get(a.param)
            cur_value = vtrace.calls[pos].args.get(a.param)
            if isinstance(old_value, list | dict):
                return None
            sj, vj = _json(seed_res), _json(var_res)
            text = " ".join(m.content for t in seed.turns[: a.turn + 1] for m in t)
            positional = bool(_POSITION.search(text))
            if not positional and (_paths(vj, cur_value) if vj is not None else
                                   (isinstance(cur_value, str) and cur_value in var_res)):
                continue  # the same entity (renamed alike) is still there: nothing to re-derive
            if sj is not None and vj is not None and isinstance(old_value, str) and isinstance(cur_value, str):
                seed_at, var_at = _path_leaves(sj, old_value), _path_leaves(vj, cur_value)
                if seed_at and seed_at == var_at:
                    continue  # a file a listing names by its path ('./projects/photography/a.jpg'), renamed
                    # alike and at the same place: the reference still holds
            paths = _paths(sj, old_value) if sj is not None else []
            if not paths or vj is None:
                return None
            from_end = bool(_LAST.search(text))
            try:
                news = {json.dumps(_at(vj, p, from_end), sort_keys=True) for p in paths}
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


def _restated(token: str, value: Any) -> str | None:
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
                new = _restated(token, _at(results[p], path, False))
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


# Scalar state the plan never names but its calls depend on: resampled in the new config; when a draw
# breaks a precondition (not enough money or fuel) the config patch agent repairs it.
_RESAMPLED_STATE: list[tuple[str, tuple[str, ...], Any]] = [
    ("TradingBot", ("account_info", "balance"), lambda v, rng: round(float(v) * rng.uniform(0.2, 1.5), 2)),
    ("VehicleControlAPI", ("fuelLevel",), lambda v, rng: round(rng.uniform(5.0, 48.0), 1)),
]


def resample_state(config: dict, trace: Trace, rng: Any, text: str = "") -> dict[str, Any]:
    """Resample the scalars of ``_RESAMPLED_STATE`` in ``config`` (in place); class.path -> new value.

    About a third of the draws miss a precondition of the plan on purpose (a balance below the
    order's cost, a tank too full for the fill, a card short of the fare): the config patch agent then
    repairs the state, so the variant starts from a state the seed never had. A value the task says (in ``text``,
    its user turns, or inside a dictated argument: 'Current balance in my account is $10000.', read 10) stays."""
    numbers_used = {float(v) for r in trace.calls for v in r.args.values()
                    if isinstance(v, int | float) and not isinstance(v, bool)}
    numbers_used |= _numbers(" ".join([text, *(x for r in trace.calls for x in _scalar_strings(list(r.args.values())))]))
    changes: dict[str, Any] = {}
    for cls, path, draw in _RESAMPLED_STATE:
        node = config.get(cls)
        for key in path[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
        if not isinstance(node, dict) or not isinstance(node.get(path[-1]), int | float):
            continue
        old = node[path[-1]]
        r = rng.random()
        if float(old) in numbers_used or r >= 0.7 or _fills_to_capacity(cls, old, trace):
            continue
        short = _short_draw(cls, old, trace, rng) if r < 0.35 else None
        node[path[-1]] = short if short is not None else _clear_of_costs(cls, draw(old, rng), trace)
        changes[f"{cls}.{'.'.join(path)}"] = node[path[-1]]
    cards = config.get("TravelAPI", {}).get("credit_card_list")
    booked = {r.args.get("card_id") for r in trace.calls if r.name == "book_flight"}
    for card in sorted(c for c in booked if isinstance(c, str)):
        entry = cards.get(card) if isinstance(cards, dict) else None
        if isinstance(entry, dict) and isinstance(entry.get("balance"), int | float) and rng.random() < 0.35 \
                and float(entry["balance"]) not in numbers_used:
            entry["balance"] = round(rng.uniform(40.0, 400.0), 2)  # short of any fare
            changes[f"TravelAPI.credit_card_list.{card}.balance"] = entry["balance"]
    return changes


TANK_CAPACITY = 50.0


def _clear_of_costs(cls: str, value: float, trace: Trace) -> float:
    """A resampled balance, round (to 100), and not a knife edge: at least a quarter above any order the plan
    pays (then raised to :func:`rods_agents.variation.config_rules.round_balance`), or below it (the patch
    agent then repairs it the same way)."""
    if cls != "TradingBot":
        return value
    from rods_agents.variation.config_rules import round_balance

    value = float(max(100, round(value / 100.0) * 100))
    for r in trace.calls:
        if r.name == "place_order" and str(r.args.get("order_type", "")).lower() == "buy":
            cost = float(r.args.get("price", 0) or 0) * float(r.args.get("amount", 0) or 0)
            if cost <= value < cost * 1.25:
                value = round_balance(cost)
    return value


def _fills_to_capacity(cls: str, level: Any, trace: Trace) -> bool:
    """The seed's fills top the tank up to its capacity ("fill it completely"): the amount is decided by the
    starting level, so a new level would leave the old amount filling the tank only part way."""
    if cls != "VehicleControlAPI":
        return False
    fills = sum(float(r.args.get("fuelAmount", 0) or 0) for r in trace.calls if r.name == "fillFuelTank")
    return fills > 0 and abs(float(level) + fills - TANK_CAPACITY) < 0.51


def _short_draw(cls: str, old: float, trace: Trace, rng: Any) -> float | None:
    """A value that misses the plan's first precondition on ``cls`` (None when there is none)."""
    if cls == "TradingBot":
        costs = [float(r.args.get("price", 0) or 0) * float(r.args.get("amount", 0) or 0) for r in trace.calls
                 if r.name == "place_order" and str(r.args.get("order_type", "")).lower() == "buy"]
        return round(max(costs) * rng.uniform(0.3, 0.9), 2) if costs and max(costs) > 0 else None
    if cls == "VehicleControlAPI":
        fills = sum(float(r.args.get("fuelAmount", 0) or 0) for r in trace.calls if r.name == "fillFuelTank")
        return round(rng.uniform(50.0 - fills + 0.5, 49.5), 1) if 0 < fills < 49 else None
    return None


def _parsed(gt: list[list[str]]) -> list[list[tuple]]:
    out = []
    for calls in gt:
        row = []
        for c in calls:
            try:  # arguments bound to parameter names: sort('a') and sort(file_name='a') are one call
                p = parse_call(c)
                spec = build_catalog().methods.get(p.name)
                row.append((p.name, repr(sorted(bind_args(spec.cls if spec else None, p.name, p.args,
                                                          p.kwargs).items()))))
            except (CallError, TypeError):
                row.append((c,))
        out.append(row)
    return out


def _masked(parsed: list[list[tuple]]) -> list[list[tuple]]:
    """Parsed calls with every run of digits masked: a plan equal to its seed here is new only in ids,
    tokens, dates or numbers (the verdict's ``novelty:digits_only``)."""
    return [[tuple(re.sub(r"\d+(?:[.,]\d+)*", "#", x) for x in call) for call in turn] for turn in parsed]


def _bound(trace: Trace, seed: Task) -> list[tuple[Any, dict[str, Any]]]:
    out = []
    pos = 0
    for calls in seed.ground_truth:
        for call in calls:
            rec = trace.calls[pos]
            try:
                parsed = parse_call(call)
                args = bind_args(rec.cls, parsed.name, parsed.args, parsed.kwargs)
            except (CallError, TypeError):
                args = dict(rec.args)
            out.append((rec, args))
            pos += 1
    return out


def _replace(value: Any, exact: dict[str, str], sub: Substitution, numbers: dict[str, Any]) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):  # a number quoted inside a text ('a buy order for 100 shares') changes with it
        from rods_agents.variation.seed_anchor import substitute_numbers

        return exact[value] if value in exact else substitute_numbers(sub.text(value), numbers)
    if isinstance(value, int | float):
        return numbers.get(repr(value), value)
    if isinstance(value, list):
        return [_replace(v, exact, sub, numbers) for v in value]
    if isinstance(value, tuple):
        return tuple(_replace(v, exact, sub, numbers) for v in value)
    if isinstance(value, dict):
        return {k: _replace(v, exact, sub, numbers) for k, v in value.items()}
    return value


class _Draw:
    """One draw of changes; ``level`` 0 is the most varied, higher levels keep more of the seed."""

    def __init__(self, seed: Task, profile: Profile, trace: Trace, rng: Any, attempt: int, force: bool) -> None:
        self.seed, self.profile, self.trace, self.rng = seed, profile, trace, rng
        self.attempt, self.force = attempt, force
        self.slot: int | None = None
        self.turn_text = [" ".join(m.content for m in turn) for turn in seed.turns]
        self.sources = {(a.turn, a.index, a.param): a for a in profile.arg_sources}
        self.composed = any(a.source == "composed" and a.value.strip("'\"") not in _PROTECTED
                            for a in profile.arg_sources)
        self.composed_values = [a.value.strip("'\"") for a in profile.arg_sources
                                if a.source == "composed" and a.value.strip("'\"") not in _PROTECTED]

    def feeds_composed(self, value: str) -> bool:
        """True when ``value`` shares a word with a composed argument (a piece it is built from)."""
        words = {w for w in re.findall(r"[a-z0-9]{4,}", value.lower())}
        return any(value.lower() in c.lower() or c.lower() in value.lower() or words & set(re.findall(r"[a-z0-9]{4,}", c.lower()))
                   for c in self.composed_values)

    def text_upto(self, turn: int) -> str:
        return " ".join(self.turn_text[: turn + 1])

    def later_text(self, turn: int) -> str:
        return " ".join(self.turn_text[turn:])

    def pick(self, options: list[Any], key: str) -> Any:
        """One of ``options``. With a sibling slot (:func:`sibling_slot`), a choice coordinated across the
        scenario's samples: the options in one order per scenario, sample ``slot`` takes the slot-th, so the
        eight samples of a scenario (four categories x two variants) take different ones while options last
        (random draws collide: 'first' -> 'economy' twice is one task told twice)."""
        options = sorted(options, key=repr)
        if self.slot is None:
            return self.rng.choice(options)
        import random

        random.Random(f"{self.seed.scenario}|{key}").shuffle(options)
        # slot + slot // 4: the two variants of one seed (slots c and c + 4) differ even between two options
        return options[(self.slot + self.slot // 4) % len(options)]

    def p(self, base: float) -> bool:
        return self.force or self.rng.random() < base


def _unverifiable(seed: Task, profile: Profile, trace: Trace) -> set[str]:
    """State values the seed points at in words the checks cannot read ('the temporary directory' for
    'tmp'): renaming one could leave the pointer pointing nowhere, so they keep their names."""
    from rods_agents.analysis.obtainability import public_state, state_obtainable
    from rods_agents.analysis.value_sources import user_text_upto

    pos_of = {(r.turn, r.index): p for p, r in enumerate(trace.calls)}
    states: dict[str | None, dict] = {}
    out: set[str] = set()
    for a in profile.arg_sources:
        if a.source != "state" or (a.turn, a.index) not in pos_of:
            continue
        rec = trace.calls[pos_of[(a.turn, a.index)]]
        if rec.cls not in states:
            states[rec.cls] = public_state(seed, rec.cls)
        value = rec.args.get(a.param)
        if not state_obtainable(value, rec, states[rec.cls], user_text_upto(seed, a.turn)):
            out |= set(_scalar_strings(value))
    return out


def _person_parts(renames: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for old, new in renames.items():
        if re.fullmatch(r"[A-Z][a-z]+ [A-Z][a-z]+", old) and re.fullmatch(r"[A-Z][a-z]+ [A-Z][a-z]+", new):
            (of, ol), (nf, nl) = old.split(), new.split()
            out.setdefault(of, nf)
            out.setdefault(ol, nl)
            # handles made from the name ('cmartinez', 'carlosmartinez') follow the person
            out.setdefault((of[0] + ol).lower(), (nf[0] + nl).lower())
            out.setdefault((of + ol).lower(), (nf + nl).lower())
    return out


def draw_changes(d: _Draw, bound: list[tuple[Any, dict[str, Any]]]) -> dict[str, Any]:
    """Renames, numbers, swaps and method swaps for one draw (not yet applied)."""
    seed, catalog = d.seed, build_catalog()
    config_strings = set(_strings(seed.initial_config, []))
    state_strings, _ = state_values(seed)
    fs = _fs_kinds(seed.initial_config.get("GorillaFileSystem", {}), {})
    stocks = seed.initial_config.get("TradingBot", {}).get("stocks")
    uses_lookup = any(r.name in _SYMBOL_LOOKUPS for r in d.trace.calls)
    own_symbols = set(stocks) if isinstance(stocks, dict) and not uses_lookup else set()
    own_symbols |= set(_default_users(seed))  # the environment's default users, written into the new state
    arg_strings = {x for r in d.trace.calls for x in _scalar_strings(list(r.args.values())) if len(x) >= 3}
    all_text = " ".join(d.turn_text)
    unverifiable = _unverifiable(seed, d.profile, d.trace)
    taken = set(config_strings) | state_strings | set(re.findall(r"[A-Za-z0-9_.\-]+", all_text))
    renames: dict[str, str] = {}
    swaps: dict[str, str] = {}
    numbers: dict[str, Any] = {}
    phrases: list[dict[str, Any]] = []
    first_names: dict[str, str] = {}
    last_names: dict[str, str] = {}
    # people first: one person, one new name, everywhere
    for rec, args in bound:
        for param, value in args.items():
            for s in _scalar_strings(value):
                if kind_of(s, rec.name, param) == "person" and s not in renames and not _hardcoded(s, seed.involved_classes):
                    new = fresh(s, "person", d.rng, taken, pronoun=_pronoun(all_text))
                    if new:
                        renames[s] = new
                        taken.add(new)
    # a first and a last name given together (verify_traveler_information) are one person too
    for _rec, args in bound:
        first = next((args[p] for p in ("first_name", "user_first_name") if isinstance(args.get(p), str)), None)
        last = next((args[p] for p in ("last_name", "user_last_name") if isinstance(args.get(p), str)), None)
        full = f"{first} {last}" if first and last else None
        if (full and re.fullmatch(r"[A-Z][a-z]+ [A-Z][a-z]+", full) and full not in renames
                and first not in {o.split()[0] for o in renames if " " in o}
                and not _hardcoded(first, seed.involved_classes) and not _hardcoded(last, seed.involved_classes)):
            new = fresh(full, "person", d.rng, taken, pronoun=_pronoun(all_text))
            if new:
                renames[full] = new
                taken.add(new)
    parts = _person_parts(renames)
    first_names.update({k: v for k, v in parts.items() if k in {o.split()[0] for o in renames if " " in o}})
    last_names.update({k: v for k, v in parts.items() if k not in first_names})
    for rec, args in bound:
        spec = catalog.methods.get(rec.name)
        for param, value in args.items():
            src = d.sources.get((rec.turn, rec.index, param))
            enum = next((p.enum for p in spec.params if p.name == param), None) if spec else None
            for s in _scalar_strings(value):
                if s in renames or s in swaps or s in _PROTECTED or s in unverifiable:
                    continue
                opts = options(rec.name, param)
                if s in opts or (enum and s in enum):
                    _maybe_swap(d, rec, param, s, swaps, phrases)
                    continue
                in_config = s in config_strings or s in own_symbols
                stated = src is not None and src.source == "user"
                if not in_config:
                    if not stated or s in state_strings:
                        continue
                    if any(s in c for c in config_strings if len(c) > len(s)):
                        continue  # a phrase inside file contents (grep pattern): keep it findable
                if d.feeds_composed(s):
                    continue  # a piece of a value the assistant composes: the composition must still hold
                if any(o != s and o in s for o in arg_strings):
                    continue
                if _hardcoded(s, seed.involved_classes) and s not in own_symbols:
                    continue
                if s in own_symbols and not _ticker_renamable(s, all_text):
                    continue
                if s.isdigit() and not param.lower().endswith("id") and any(_keys_with(seed.initial_config, s)):
                    continue  # a password '12345' renamed would re-key the record whose id is 12345
                kind = kind_of(s, rec.name, param, fs.get(s))
                if kind in (None, "title") and knowledge.is_user_class(rec.cls):
                    kind = knowledge.derived_kind(s) or kind  # no pools for this class: a handle or a name by its shape
                if kind == "first_name" and s in first_names:
                    renames[s] = first_names[s]
                    continue
                if kind == "last_name" and s in last_names:
                    renames[s] = last_names[s]
                    continue
                if kind is None or not _renamable_in_context(s, kind, all_text, config_strings | arg_strings):
                    continue
                if stated and not Substitution({s: "\0"}).found(d.text_upto(rec.turn)):
                    continue  # the text says it in a form the rewrite cannot carry
                if kind == "sentence" or (kind == "title" and not d.force):
                    continue  # dictated free text stays (a pool sentence would be off-topic); titles change their head noun
                new = (knowledge.derived_value(s, kind, d.rng, taken, rec.cls) if kind in knowledge.DERIVED_KINDS
                       else fresh(s, kind, d.rng, taken, rec.cls, pronoun=_pronoun(all_text)))
                if new is not None:
                    renames[s] = new
                    taken.add(new)
            if rec.name == "fillFuelTank" and _fills_to_capacity(
                    "VehicleControlAPI", seed.initial_config.get("VehicleControlAPI", {}).get("fuelLevel", 0) or 0, d.trace):
                continue  # "fill it up": the amount is what the tank lacks
            if (not d.composed and (d.attempt == 0 or d.force) and src is not None and src.source == "user"
                    and isinstance(value, int | float) and not isinstance(value, bool) and abs(value) > 1
                    and repr(value) not in numbers and has_number(d.text_upto(rec.turn), value)
                    and _number_only_for_arguments(d, bound, value) and d.p(0.5)):
                numbers[repr(value)] = _perturb(value, d.rng, grow=(rec.name, param) in _GROWABLE)
    # first or last names stated on their own, of a person renamed above
    for name, new in {**first_names, **last_names}.items():
        renames.setdefault(name, new)
    # distractor entries of the file system (never referenced by the plan or the text)
    if d.attempt < 2 and not d.composed and "GorillaFileSystem" in seed.initial_config:
        for name, kind in fs.items():
            if name in renames or name.lower() in all_text.lower() or _hardcoded(name, ["GorillaFileSystem"]):
                continue
            if any(name in s for s in arg_strings) or d.rng.random() < 0.5:
                continue
            k = kind_of(name, None, None, kind)
            new = fresh(name, k, d.rng, taken) if k else None
            if new is not None:
                renames[name] = new
                taken.add(new)
    _digit_companions(renames, config_strings)
    _untangle(renames, d.rng, taken, fs)
    option_swaps = sorted(swaps)  # documented options (a sector, a class): dropped before the entities are
    # entity swaps on every attempt: a later attempt that kept the seed's entities would be new only in
    # digits (the verdict's novelty:digits_only), so it draws other entities instead (another sibling slot)
    _city_pair_swap(d, bound, swaps)
    _stock_swap(d, bound, swaps)
    _route_swap(d, bound, swaps)
    _dictated_swap(d, bound, renames, swaps)
    for old in [o for o in renames if o in swaps]:
        del renames[old]  # a stock swapped for another the environment lists is not also renamed (read 10: the plan
        # held AAPL -> ZETA beside AAPL -> NEPT)
    substitutions = _method_swaps(d, bound)
    phrases += [{"turn": m["turn"], "phrases": m["phrases"]} for m in substitutions]
    return {"renames": renames, "swaps": swaps, "numbers": numbers, "substitutions": substitutions, "phrases": phrases,
            "option_swaps": option_swaps}


_DICTATED_PARAMS = {"content", "message", "comment_content", "description", "tags", "hashtags"}


def _dictated_swap(d: _Draw, bound: list[tuple[Any, dict[str, Any]]], renames: dict[str, str],
                   swaps: dict[str, str]) -> None:
    """A text the user dictates word for word (a tweet, a message) or a hashtag becomes another text of the
    same purpose and topic (``prompts/bfcl/offline_dictated.json``), one per sibling (:meth:`_Draw.pick`):
    the variant posts or sends something of its own, so it is new beyond digits. Only where the text quotes
    it exactly, it holds no other value the plan changes (a city swapped in a tweet's story), and no longer
    argument contains it (a search for a word of it), nor one that names a file or folder of the state."""
    table = knowledge.dictated()
    pool = {**table.get("sentences", {}), **table.get("hashtags", {})}
    text = " ".join(d.turn_text)
    arg_strings = {x for r in d.trace.calls for x in _scalar_strings(list(r.args.values()))}
    changed = [o for o in {**renames, **swaps} if len(o) >= 3]
    fs_names = {n for n in _fs_kinds(d.seed.initial_config.get("GorillaFileSystem", {}), {}) if len(n) >= 4}
    for rec, args in bound:
        for param, value in args.items():
            if param not in _DICTATED_PARAMS:
                continue
            for s in _scalar_strings(value):
                if s not in pool or s in renames or s in swaps or s not in text:
                    continue
                src = d.sources.get((rec.turn, rec.index, param))
                if src is not None and src.source not in ("user", "state"):
                    continue
                if any(o in s for o in changed) or any(s != x and s in x for x in arg_strings):
                    continue
                if any(re.search(rf"\b{re.escape(n)}\b", s, re.I) for n in fs_names):
                    continue  # it speaks of a file or folder of the state ('Managed to archive ...' beside 'archive')
                choices = [c for c in pool[s] if c not in text]
                if choices:
                    renames[s] = d.pick(choices, f"dictated|{s}")


def _keys_with(obj: Any, key: str) -> list[str]:
    """The dict keys equal to ``key`` anywhere in ``obj`` (record ids: an order 12345, a ticket '7')."""
    if isinstance(obj, dict):
        return [k for k in obj if k == key] + [x for v in obj.values() for x in _keys_with(v, key)]
    if isinstance(obj, list | tuple):
        return [x for v in obj for x in _keys_with(v, key)]
    return []


def _digit_companions(renames: dict[str, str], config_strings: set[str]) -> None:
    """An id renamed with new digits ('card_6789' -> 'card_2623') takes its digit runs of four or more along
    wherever the config writes them on their own (the card number ending '-6789'): a renamed card whose
    number still ends in the old digits is two cards at once."""
    for old, new in list(renames.items()):
        if re.sub(r"\d", "#", old) != re.sub(r"\d", "#", new) or old.isdigit():
            continue
        for o_run, n_run in zip(re.findall(r"\d+", old), re.findall(r"\d+", new), strict=False):
            if len(o_run) < 4 or o_run in renames:
                continue
            for c in config_strings:  # a card number written without separators ends with the run
                if c != old and c not in renames and re.fullmatch(r"[\d\s\-*]+", c) and c.endswith(o_run):
                    renames[c] = c[: -len(o_run)] + n_run
            # the run as a group of a longer value ('1234-5678-9012-6789'), not a value of its own (a transaction
            # id '12345' is another record's id, not a companion of the token '12345-67890')
            if any(c != old and c != o_run and re.search(rf"(?<![A-Za-z0-9]){o_run}(?![A-Za-z0-9])", c)
                   for c in config_strings):
                renames[o_run] = n_run


def _pronoun(text: str) -> str | None:
    """'he' or 'she' when the text refers to someone only that way ('add him to the group'), else None."""
    he = bool(re.search(r"\b(?:he|him|his|himself)\b", text, re.I))
    she = bool(re.search(r"\b(?:she|her|hers|herself)\b", text, re.I))
    return "he" if he and not she else "she" if she and not he else None


def _renamable_in_context(value: str, kind: str, text: str, strings: set[str]) -> bool:
    """An address whose city or street the text names on its own ('a spot in Berkeley') keeps its value, or the
    new address and the old city disagree; a name that is an everyday word ('archive', 'notes') keeps it when
    free text uses the word too ('Managed to archive ...'), or the rename would rewrite that sentence."""
    if kind == "address":
        rest = text.replace(value, " ")  # what the text says besides the address itself
        return not any(len(p) >= 4 and re.search(rf"\b{re.escape(p)}\b", rest, re.I)
                       for p in (x.strip() for x in value.split(",")))
    if value.isalpha() and value.islower():
        if len(value) > 4 and value.endswith("s") and re.search(rf"\b{re.escape(value[:-1])}\b", text, re.I):
            return False  # 'the Archived directory in document folder' for 'documents': the rename would miss it
        return not any(x != value and re.search(rf"\b{re.escape(value)}\b", x, re.I) for x in strings)
    return True


def _ticker_renamable(symbol: str, text: str) -> bool:
    """Only a ticker the text spells out, and whose company it does not name: 'the one making GPUs' or 'Apple,
    with symbol AAPL' would point at nothing (or at two stocks) after a new ticker."""
    company = ticker_companies().get(symbol)
    named = company is not None and re.search(rf"\b{re.escape(company.split()[0])}", text, re.I)  # 'Alphabet' too
    return bool(re.search(rf"\b{re.escape(symbol)}\b", text)) and not named


def _flips(d: _Draw, trace: Trace, vtrace: Trace, numbers: dict[str, Any] | None = None) -> list[str]:
    """Yes/no outcomes and stated limits ('a cost below $1200') the variant decides otherwise than its seed."""
    from rods_agents.variation.seed_anchor import substitute_numbers

    texts = [substitute_numbers(t, numbers or {}) for t in d.turn_text]
    return outcome_flips(trace, vtrace) or limit_flips(trace, vtrace, d.turn_text, texts)


def _number_only_for_arguments(d: _Draw, bound: list[tuple[Any, dict[str, Any]]], value: float) -> bool:
    """A number may change only where every turn that says it has a call (in that turn or, for a withheld
    value, the next) taking it as an argument: 'show the last 10 lines' over ``tail(file)`` (10 is its
    default) must keep its 10, or the text no longer determines the ground truth. A number inside a text
    argument ('Rear Left Tire: 30 PSI', built from a result) stays too: the result would not follow."""
    def carried(turn: int) -> bool:
        return any(rec.turn in (turn, turn + 1) and any(value in _scalar_numbers(v) for v in args.values())
                   for rec, args in bound)
    inside_text = any(has_number(x, value) for _rec, args in bound for x in _scalar_strings(list(args.values())))
    return not inside_text and all(carried(t) for t, text in enumerate(d.turn_text) if has_number(text, value))


def _untangle(renames: dict[str, str], rng: Any, taken: set[str], fs: dict[str, str]) -> None:
    """A new name must not contain another renamed old name ('release_notes.txt' while 'notes' is
    renamed): redraw it, or keep the old value when no other name is found."""
    for old in list(renames):
        others = Substitution({o: "\0" for o in renames if o != old and len(o) >= 3})
        tries = 0
        while others.found(renames[old]) and tries < 6:
            kind = kind_of(old, None, None, fs.get(old)) or "folder"
            new = fresh(old, kind, rng, taken) if kind not in ("first_name", "last_name") else None
            tries += 1
            if new is None:
                break
            renames[old] = new
            taken.add(new)
        if others.found(renames[old]):
            del renames[old]


@lru_cache(maxsize=1)
def _distance_pairs() -> tuple[tuple[str, str], ...]:
    """City pairs whose distance the vehicle environment knows (its tables, run, not parsed)."""
    from itertools import permutations

    from envs.bfcl_data import env_class

    api = env_class("VehicleControlAPI")()
    api._load_scenario({}, long_context=False)
    cities = list(dict.fromkeys(options("get_zipcode_based_on_city", "city")))
    zips = {c: api.get_zipcode_based_on_city(c).get("zipcode") for c in cities}
    return tuple((a, b) for a, b in permutations(cities, 2)
                 if "distance" in api.estimate_distance(cityA=zips[a], cityB=zips[b]))


def _city_pair_swap(d: _Draw, bound: list[tuple[Any, dict[str, Any]]], swaps: dict[str, str]) -> None:
    """Two cities whose distance the task estimates become another pair the tables know."""
    cities = [args.get("city") for rec, args in bound if rec.name == "get_zipcode_based_on_city"]
    if len(cities) != 2 or len(set(cities)) != 2 or not any(r.name == "estimate_distance" for r, _ in bound):
        return
    text = " ".join(d.turn_text)
    if any(c in swaps or d.feeds_composed(c) or not Substitution({c: "\0"}).found(text) for c in cities):
        return
    # another pair the tables know; a pair that keeps one city in its place counts too (SF -> Rivermist
    # becomes SF -> Stonebrook), so each sibling of a scenario can take its own (:meth:`_Draw.pick`)
    pairs = [p for p in _distance_pairs() if p != tuple(cities)
             and all(x == c or (x not in cities and not Substitution({x: "\0"}).found(text))
                     for x, c in zip(p, cities, strict=True))]
    if pairs and d.p(0.7):
        new = d.pick(pairs, "city_pair")
        for old, x in zip(cities, new, strict=True):
            if old != x:
                swaps[old] = x


_STOCK_PARAMS = {"symbol", "stock"}


@lru_cache(maxsize=1)
def _sectors_of() -> dict[str, frozenset[str]]:
    """Symbol -> the sectors whose lookup lists it, in the trading environment's own tables (run, not parsed)."""
    from envs.bfcl_data import env_class

    api = env_class("TradingBot")()
    api._load_scenario({}, long_context=False)
    out: dict[str, set[str]] = {}
    for sector in options("get_available_stocks", "sector"):
        listed = api.get_available_stocks(sector)
        for symbol in listed.get("stock_list", []) if isinstance(listed, dict) else []:
            out.setdefault(symbol, set()).add(sector)
    return {k: frozenset(v) for k, v in out.items()}


_SECTOR_LOOKUPS = {"get_available_stocks", "filter_stocks_by_price"}


def _similar_price(stocks: dict[str, Any], old: str, new: str, spread: float = 3.0) -> bool:
    """``new`` trades within ``spread`` times ``old``'s price: the story's sums still fit (read 10: 50 Zeta Corp shares
    for $7,500 became 50 Alpha Tech shares for $66,022 beside 'top up $4,000 to make sure I've got enough cash')."""
    a, b = ((stocks[k].get("price") if isinstance(stocks.get(k), dict) else None) for k in (old, new))
    if not isinstance(a, int | float) or not isinstance(b, int | float) or a <= 0 or b <= 0:
        return True  # no price to compare: nothing the story sums
    return 1 / spread <= b / a <= spread


def _stock_swap(d: _Draw, bound: list[tuple[Any, dict[str, Any]]], swaps: dict[str, str]) -> None:
    """The stock a task trades becomes another stock the environment lists (its config's stock table and
    get_symbol_by_name's company table), its company's name with it ('Zeta Corp' -> 'Omega Industries'):
    another market situation, not a made-up ticker. Prices read from results follow (:func:`rederive`). Not
    a stock where the text names it in neither form, or where a dictated text quotes it. Next to a sector lookup
    the sector lists are the environment's and fixed: a stock one of them names becomes another stock of exactly
    the same sectors ('MSFT' -> 'NVDA' after the Technology list), so the list the assistant reads still holds it;
    next to a price filter, whose answer depends on every price, it stays. Never a stock the watchlist already holds:
    adding it would change nothing (read 18: AAPL -> NVDA where the list held NVDA), and a task reading the list
    would find it there before the task put it there."""
    stocks = d.seed.initial_config.get("TradingBot", {}).get("stocks")
    if not isinstance(stocks, dict):
        return
    lookups = {r.name for r, _ in bound} & _SECTOR_LOOKUPS
    sectors = _sectors_of() if lookups else {}
    fixed = frozenset(sectors) if "filter_stocks_by_price" in lookups else frozenset()
    from rods_agents.analysis.faithfulness import known_symbols

    known = known_symbols(d.seed.long_context)
    companies = {k: v for k, v in ticker_companies().items() if k in known}
    watched = set(d.seed.initial_config.get("TradingBot", {}).get("watch_list") or ())
    used = [v for r, args in bound for p, v in args.items() if p in _STOCK_PARAMS and isinstance(v, str)]
    text = " ".join(d.turn_text)
    for symbol in dict.fromkeys(used):
        if symbol in swaps or symbol in fixed or symbol not in stocks or symbol not in companies or not d.p(0.7):
            continue
        forms = [symbol, companies[symbol]]
        if not any(Substitution({f: "\0"}, derived_forms=False).found(text) for f in forms):
            continue
        if any(symbol in x and x != symbol for _r, args in bound for x in _scalar_strings(list(args.values()))):
            continue  # inside a dictated text ('bought ZETA today'): the text is the user's
        if sectors and any(v == symbol and (a := d.sources.get((r.turn, r.index, p))) is not None and a.source == "call"
                           for r, args in bound for p, v in args.items()):
            continue  # picked from a sector's list ('the third stock in the list', read 11): the list stays the
            # environment's, so a new stock would not be where the words point
        choices = sorted(k for k in stocks if k in companies and k not in used and k not in swaps.values()
                         and k not in fixed and sectors.get(k, frozenset()) == sectors.get(symbol, frozenset())
                         and k not in watched
                         and _similar_price(stocks, symbol, k)
                         and not Substitution({k: "\0", companies[k]: "\0"}, derived_forms=False).found(text))
        if not choices:
            continue
        new = d.pick(choices, f"stock|{symbol}")
        swaps[symbol] = new
        swaps[companies[symbol]] = companies[new]
        head_o, head_n = companies[symbol].split()[0], companies[new].split()[0]
        if head_o != companies[symbol] and re.search(rf"\b{re.escape(head_o)}\b", text):
            swaps.setdefault(head_o, head_n)  # 'Zeta' on its own


@lru_cache(maxsize=1)
def _routes() -> frozenset[tuple[str, str]]:
    """Airport pairs the travel environment prices (its fare table, run, not parsed)."""
    from envs.bfcl_data import env_class
    from rods_agents.analysis.value_sources import airport_cities

    api = env_class("TravelAPI")()
    api._load_scenario({}, long_context=False)
    out = set()
    for a in airport_cities():
        for b in airport_cities():
            if a == b:
                continue
            try:
                res = api.get_flight_cost(travel_from=a, travel_to=b, travel_date="2026-12-25", travel_class="economy")
            except Exception:  # noqa: BLE001 - an unpriced route raises in the environment's own code
                continue
            if isinstance(res, dict) and "travel_cost_list" in res:
                out.add((a, b))
    return frozenset(out)


_ROUTE_METHODS = {"get_flight_cost", "book_flight"}


def _route_swap(d: _Draw, bound: list[tuple[Any, dict[str, Any]]], swaps: dict[str, str]) -> None:
    """A flight the user states (airport codes or their cities) becomes another route the travel environment
    prices: the new endpoint replaces the old code and city name everywhere, the other endpoint stays where
    it is not stated (found by a lookup). Not where any flight of the task is to or from another airport,
    or where an airport is named only inside a dictated text."""
    from rods_agents.analysis.value_sources import airport_cities

    flights = {(args.get("travel_from"), args.get("travel_to")) for r, args in bound if r.name in _ROUTE_METHODS}
    if len(flights) != 1 or not d.p(0.7):
        return
    (src, dst), = flights
    cities = airport_cities()
    if src not in cities or dst not in cities or src in swaps or dst in swaps:
        return
    text = " ".join(d.turn_text)

    def stated(code: str) -> bool:
        hits = [f for f in (code, cities[code]) if Substitution({f: "\0"}, derived_forms=False).found(text)]
        stated_src = all(d.sources.get((r.turn, r.index, p), None) is None or d.sources[(r.turn, r.index, p)].source == "user"
                         for r, args in bound for p, v in args.items() if v == code)
        return bool(hits) and stated_src

    from rods_agents.analysis.value_sources import CITY_ALIASES
    from rods_agents.variation.donor_fit import _AIRPORT_NAMES

    # an airport the text also calls by its own name ('John F. Kennedy') or an alias ('LA') keeps it: the name
    # would not follow the new code
    for code in (src, dst):
        if any(re.search(rf"(?<![A-Za-z0-9]){re.escape(n)}(?![A-Za-z0-9])", text)
               for n in (*_AIRPORT_NAMES.get(code, ()), *CITY_ALIASES.get(cities[code], ()))):
            return
    movable = [c for c in (src, dst) if stated(c)]
    if not movable:
        return
    named = {c for c in cities if Substitution({c: "\0", cities[c]: "\0"}, derived_forms=False).found(text)}
    options_ = [(a, b) for a, b in _routes() if (a, b) != (src, dst) and (a == src or src in movable)
                and (b == dst or dst in movable) and not ({a, b} - {src, dst}) & named]
    if not options_:
        return
    a, b = d.pick(options_, "route")
    for old, new in ((src, a), (dst, b)):
        if old != new:
            swaps[old] = new
            swaps[cities[old]] = cities[new]


def _maybe_swap(d: _Draw, rec: Any, param: str, value: str, swaps: dict[str, str],
                phrases: list[dict[str, Any]]) -> None:
    key = f"{rec.name}.{param}"
    if key not in pools()["swappable"] or not d.p(0.5):
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


def _method_swaps(d: _Draw, bound: list[tuple[Any, dict[str, Any]]]) -> list[dict[str, Any]]:
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


def apply_changes(seed: Task, bound: list[tuple[Any, dict[str, Any]]], changes: dict[str, Any]
                  ) -> tuple[list[list[str]], dict]:
    renames, swaps, numbers = changes["renames"], changes["swaps"], changes["numbers"]
    sub = Substitution(renames)
    sub_gt = Substitution({**renames, **swaps})  # a swapped city inside a dictated tweet changes as in the text
    sub_of = {(s["turn"], s["index"]): s["to"] for s in changes["substitutions"]}
    exact = {**renames, **swaps}
    gt: list[list[str]] = [[] for _ in seed.ground_truth]
    for rec, args in bound:
        name = sub_of.get((rec.turn, rec.index), rec.name)
        new_args = {k: _replace(v, exact, sub_gt, numbers) for k, v in args.items()}
        gt[rec.turn].append(to_call_string(name, new_args))
    base = copy.deepcopy(seed.initial_config)
    users = _default_users(seed)
    if any(u in renames for u in users):  # a default user renamed: the new state names its users itself
        base.setdefault("MessageAPI", {})["user_map"] = dict(users)
    config = sub.obj(base)
    return gt, config


def _default_users(seed: Task) -> dict[str, str]:
    """MessageAPI's default users (name -> id) when the seed's state leaves its user map to the environment's
    default: renaming one ('Bob' -> 'Rosa') writes the whole map into the variant's state, so another person
    is known to the environment, consistently, instead of a name the environment hard-codes."""
    if "MessageAPI" not in seed.involved_classes or "user_map" in seed.initial_config.get("MessageAPI", {}):
        return {}
    return dict(_message_default_users())


@lru_cache(maxsize=1)
def _message_default_users() -> tuple[tuple[str, str], ...]:
    from envs.bfcl_data import env_class

    api = env_class("MessageAPI")()
    api._load_scenario({}, long_context=False)
    return tuple(sorted(api.user_map.items()))


_SKIP_KEYS = re.compile(r"id$|_id|counter|number|count|limit|level$|pressure|speed|^cvv$", re.I)


def _numeric_leaves(obj: Any, path: tuple = (), out: list | None = None) -> list[tuple[tuple, float]]:
    out = [] if out is None else out
    if isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(v, int | float) and not isinstance(v, bool):
                if not _SKIP_KEYS.search(str(k)):
                    out.append(((*path, k), v))
            elif isinstance(v, dict | list) and len(path) < 5:
                _numeric_leaves(v, (*path, k), out)
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:20]):
            if isinstance(v, dict):
                _numeric_leaves(v, (*path, i), out)
    return out


def _stale_composed(seed: Task, profile: Profile, trace: Trace, vtrace: Trace) -> list[str]:
    """Pieces of a composed text (a message quoting a distance) taken from an earlier result that the
    variant's earlier results no longer hold: the composed value would be stale."""
    pos_of = {(r.turn, r.index): p for p, r in enumerate(trace.calls)}
    out = []
    for a in profile.arg_sources:
        pos = pos_of.get((a.turn, a.index))
        if a.source != "composed" or pos is None:
            continue
        text = " ".join(m.content for t in seed.turns[: a.turn + 1] for m in t).lower()
        seed_res = " ".join(r.result for r in trace.calls[:pos] if len(r.result) < 50_000)
        var_res = " ".join(r.result for r in vtrace.calls[:pos] if len(r.result) < 50_000)
        new = vtrace.calls[pos].args.get(a.param) if pos < len(vtrace.calls) else None
        for piece in re.findall(r"\d+(?:\.\d+)?|[A-Za-z]{4,}", " ".join(_scalar_strings(new)) + " " +
                                " ".join(str(n) for n in _scalar_numbers(new))):
            if piece.lower() not in text and piece in seed_res and piece not in var_res:
                out.append(f"{a.method}.{a.param}: {piece!r}")
    return out


def _inputs_changed(profile: Profile, trace: Trace, vtrace: Trace) -> bool:
    """A result a composed value may be built from (any call before the last one with a composed
    argument) differs between the seed and the variant."""
    pos_of = {(r.turn, r.index): p for p, r in enumerate(trace.calls)}
    last = max((pos_of.get((a.turn, a.index), -1) for a in profile.arg_sources if a.source == "composed"), default=-1)
    return any(a.result != b.result for a, b in zip(trace.calls[:last], vtrace.calls[:last], strict=False))


def _vary_state(seed: Task, profile: Profile, trace: Trace, gt: list[list[str]], config: dict, d: _Draw, rng: Any
                ) -> tuple[list[list[str]], dict, list[list[Any]], dict[str, Any]] | None:
    """Perturb one number of the state that neither the text nor the ground truth names; results that
    change carry into values read from them. None when no such number keeps the seed's outcomes."""
    text = " ".join(d.turn_text)
    used = {float(v) for r in trace.calls for v in r.args.values() if isinstance(v, int | float) and not isinstance(v, bool)}
    leaves = [(cls, p, v) for cls, cfg in config.items() if cls != "GorillaFileSystem"
              for p, v in _numeric_leaves(cfg) if float(v) not in used and not has_number(text, v) and v != 0]
    rng.shuffle(leaves)
    before = trace_task(seed.model_copy(update={"ground_truth": gt, "initial_config": config}))
    fs = _fs_kinds(config.get("GorillaFileSystem", {}), {})
    gt_strings = " ".join(c for turn in gt for c in turn)
    distractors = sorted(n for n, k in fs.items() if k == "file" and n.lower() not in text.lower()
                         and n not in gt_strings and not _hardcoded(n, ["GorillaFileSystem"]))
    rng.shuffle(distractors)
    candidates: list[tuple[str, Any, Any]] = [("GorillaFileSystem", n, None) for n in distractors[:2]]
    candidates += leaves[:4]
    def keeps_outcomes(new_config: dict) -> tuple[list[list[str]], list[list[Any]]] | None:
        """The ground truth re-derived on ``new_config``, when it still runs and decides as the seed did."""
        derived = rederive(seed, trace, profile, gt, new_config)
        if derived is None:
            return None
        new_gt, more = derived
        draft = seed.model_copy(update={"ground_truth": new_gt, "initial_config": new_config})
        vtrace = trace_task(draft)
        if (vtrace.errors and not _patchable(draft)) or _flips(d, trace, vtrace) or _dangling(trace, vtrace):
            return None
        if d.composed and _inputs_changed(profile, before, vtrace):
            return None  # a composed value may be built from an earlier result
        return new_gt, [m for m in more if m[0] != m[1]]

    for cls, path, value in candidates:
        new_config = copy.deepcopy(config)
        if cls == "GorillaFileSystem":  # a file nobody mentions gets another name of its kind
            kind = kind_of(path, None, None, "file")
            new_name = fresh(path, kind, rng, set(_strings(config, []))) if kind else None
            if new_name is None:
                continue
            new_config = Substitution({path: new_name}, derived_forms=False).obj(new_config)
            change: dict[str, Any] = {f"GorillaFileSystem.rename.{path}": new_name}
        else:
            node = new_config[cls]
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = _perturb(value, rng)
            change = {f"{cls}." + ".".join(str(k) for k in path): node[path[-1]]}
        kept = keeps_outcomes(new_config)
        if kept is not None:
            return kept[0], new_config, kept[1], change
    return None


def _scalar_numbers(value: Any) -> list[float]:
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, list | tuple):
        return [n for v in value for n in _scalar_numbers(v)]
    return []


def _result_numbers(result: str) -> set[float]:
    from rods_agents.analysis.value_sources import _numbers

    return _numbers(result) if len(result) < 50_000 else set()


def _dangling(seed_trace: Trace, vtrace: Trace) -> list[str]:
    """Later values the seed took from a result (stated or not) that the variant's result no longer holds:
    'list the Technology stocks and add AAPL' must not become 'list the Automobile stocks and add AAPL'."""
    out: list[str] = []
    for i, (a, b) in enumerate(zip(seed_trace.calls, vtrace.calls, strict=False)):
        if a.result == b.result or b.error or len(a.result) > 50_000:
            continue
        for j in range(i + 1, min(len(seed_trace.calls), len(vtrace.calls))):
            for param, value in seed_trace.calls[j].args.items():
                new = vtrace.calls[j].args.get(param)
                for old_s, new_s in zip(_scalar_strings(value), _scalar_strings(new), strict=False):
                    if len(old_s) >= 3 and old_s not in _PROTECTED and re.search(
                            rf"(?<![\w]){re.escape(old_s)}(?![\w])", a.result) and new_s not in b.result:
                        out.append(f"call {j} {param}={new_s!r} not in the result of call {i}")
                for old_n, new_n in zip(_scalar_numbers(value), _scalar_numbers(new), strict=False):
                    if abs(old_n) > 1 and old_n in _result_numbers(a.result) and new_n not in _result_numbers(b.result):
                        out.append(f"call {j} {param}={new_n!r} not in the result of call {i}")
    return out


def repaired_config(draft: Task, rounds: int = 3) -> dict | None:
    """The initial config the config patch agent's rule table makes of ``draft``'s (every error repaired within
    ``rounds`` patches, as the patch stage will after execution), or None when a rule is missing."""
    from rods_agents.analysis.execution import error_report
    from rods_agents.variation.config_rules import propose_patch

    config = copy.deepcopy(draft.initial_config)
    for _ in range(rounds + 1):
        vtrace = trace_task(draft.model_copy(update={"initial_config": config}))
        if not vtrace.errors:
            return config
        if propose_patch(config, error_report(vtrace.errors[0]), vtrace) is None:
            return None
    return None


def _patchable(draft: Task, rounds: int = 3) -> bool:
    """The config patch agent's rule table repairs every error of ``draft`` within ``rounds`` patches."""
    return repaired_config(draft, rounds) is not None


def sibling_slot(category: str, variant: int, attempt: int = 0) -> int:
    """The sample's place among its scenario's samples (the four BFCL categories share a scenario)."""
    cats = ("base", "miss_func", "miss_param", "long_context")
    return (cats.index(category) if category in cats else 0) + 4 * int(variant) + 8 * int(attempt)


def _levels(changes: dict[str, Any]) -> list[dict[str, Any]]:
    """The draw's changes, then more conservative versions of them, in the order :func:`anchored_plan` tries
    them: without the resampled state, without new numbers, without the option swaps, without the renames,
    without any swap."""
    calm = {**changes, "state": False, "numbers": {}}
    out = [changes, {**changes, "state": False}, calm]
    if changes.get("option_swaps"):
        out.append({**calm, "substitutions": [], "phrases": [],
                    "swaps": {k: v for k, v in changes["swaps"].items() if k not in changes["option_swaps"]}})
    if changes.get("renames") and (changes.get("substitutions") or changes.get("swaps")):
        out.append({**calm, "renames": {}})
    out.append({**calm, "swaps": {}, "substitutions": [], "phrases": []})
    return out


def anchored_plan(seed: Task, profile: Profile, trace: Trace, rng: Any, attempt: int = 0, tries: int = 6,
                  slot: int | None = None) -> dict[str, Any]:
    """The plan's fields (see :class:`rods_agents.stages.plan_sampling.Plan`) for one draw."""
    bound = _bound(trace, seed)
    seed_parsed = _parsed(seed.ground_truth)
    seed_masked = _masked(seed_parsed)
    best: dict[str, Any] | None = None
    for n in range(tries):
        d = _Draw(seed, profile, trace, rng, attempt, force=n >= 1)
        d.slot = None if slot is None else slot + 16 * n
        drawn = draw_changes(d, bound)
        # progressively more conservative until the seed's yes/no outcomes hold and the plan runs; the entities
        # (another stock, city pair, route) outlive the documented options (a sector swap that breaks a
        # reference must not take the stock swap with it), and a method swap outlives the renames
        for changes in _levels(drawn):
            plan = _realize(seed, profile, trace, bound, changes, d, rng, attempt)
            if plan is None:
                continue
            parsed = _parsed(plan["ground_truth"])
            if best is None or (parsed != seed_parsed and _parsed(best["ground_truth"]) == seed_parsed):
                best = plan
            if _masked(parsed) != seed_masked:
                return plan  # new beyond digits: another entity, option or method, not only new ids and numbers
            break
    if best is not None:
        return best
    gt, config = apply_changes(seed, bound, {"renames": {}, "swaps": {}, "numbers": {}, "substitutions": [],
                                             "phrases": []})
    return {"ground_truth": gt, "initial_config": config, "attempt": attempt}


def _realize(seed: Task, profile: Profile, trace: Trace, bound: list, changes: dict[str, Any], d: _Draw, rng: Any,
             attempt: int) -> dict[str, Any] | None:
    """Apply ``changes``, re-derive values read from results, and check the draft (None: not usable)."""
    for _ in range(3):
        gt, config = apply_changes(seed, bound, changes)
        state_changes = {} if (d.composed or attempt >= 2 or not changes.get("state", True)) else \
            resample_state(config, trace, rng, " ".join(d.turn_text))
        derived = rederive(seed, trace, profile, gt, config)
        if derived is None:
            return None
        gt, derived_values = derived
        gt = rederive_embedded(seed, trace, gt, config)
        # a renamed value the environment still prints under its old name is not the task's to rename
        back = {o for o, n in derived_values if isinstance(o, str) and o == n and o in changes["renames"]}
        if not back:
            break
        changes = {**changes, "renames": {k: v for k, v in changes["renames"].items() if k not in back}}
    else:
        return None
    draft = seed.model_copy(update={"ground_truth": gt, "initial_config": config})
    vtrace = trace_task(draft)
    if _flips(d, trace, vtrace, changes["numbers"]) or _dangling(trace, vtrace) or (vtrace.errors and not _patchable(draft)):
        return None
    if d.composed and _stale_composed(seed, profile, trace, vtrace):
        return None
    derived_values = [p for p in derived_values if p[0] != p[1]]
    if config == seed.initial_config or state_changes:  # a new state (a patch may undo a resampled one)
        varied = _vary_state(seed, profile, trace, gt, config, d, rng)
        if varied is not None:
            gt, config, more, extra = varied
            state_changes = {**state_changes, **extra}
            derived_values += more
    return {"ground_truth": gt, "initial_config": config, "renames": changes["renames"],
            "numbers": changes["numbers"], "swaps": changes["swaps"], "derived": derived_values,
            "substitutions": changes["substitutions"], "phrases": changes["phrases"],
            "state_changes": state_changes, "attempt": attempt}


def _quoted(text: str, pos: int) -> bool:
    """Inside a quoted value (dictated text the ground truth holds word for word)."""
    return len(re.findall(r"(?<![A-Za-z])'|'(?![A-Za-z])", text[:pos])) % 2 == 1


def carry_turn(text: str, turn: int, plan: Any) -> str:
    """The seed's turn ``text`` with the plan's changes carried in (see :mod:`rods_agents.variation.seed_anchor`)."""
    from rods_agents.variation.seed_anchor import substitute_numbers

    strings = {**plan.renames, **plan.swaps}
    numbers = dict(plan.numbers)
    for old, new in plan.derived:
        if isinstance(old, str) and isinstance(new, str):
            strings.setdefault(old, new)
        elif isinstance(old, int | float) and isinstance(new, int | float) and not isinstance(old, bool):
            numbers.setdefault(repr(old), new)
    text = Substitution(strings).text(text)
    text = substitute_numbers(text, numbers)
    phrases = [tuple(p) for entry in plan.phrases if entry.get("turn") == turn for p in entry.get("phrases", [])]
    text = substitute_phrases(text, phrases)
    for new in {*plan.renames.values(), *plan.swaps.values(), *(p[1] for p in phrases)}:
        if isinstance(new, str) and new[:1].isalpha():  # 'a business class' -> 'an economy class'
            article = "an" if new[0].lower() in "aeiou" else "a"
            text = re.sub(rf"\b([Aa])n? (?={re.escape(new)}\b)",
                          lambda m, a=article, t=text: m.group(0) if _quoted(t, m.start()) else
                          (a.capitalize() if m.group(1) == "A" else a) + " ", text)
    return _DOUBLED.sub(r"\1", text)  # the seeds' own typos ('each each') are not carried


__all__ = ["anchored_plan", "carry_turn", "rederive"]
