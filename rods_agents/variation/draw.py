"""One draw of a plan's changes: the seed facts every change reads, and choices coordinated across siblings.

:class:`Draw` holds the seed, its profile and trace, the draw's random state and its sibling slot; ``Draw.pick`` gives
the eight samples of a scenario (four categories x two variants) different options while options last. Numbers the
user states are perturbed with their roundness kept (:func:`perturb`). The modules that draw changes
(:mod:`~rods_agents.variation.entity_swaps`, :mod:`~rods_agents.variation.method_swap`,
:mod:`~rods_agents.variation.changes`) all read a :class:`Draw`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cached_property, lru_cache
from typing import Any

from envs.task import Task
from rods_agents.analysis.obtainability import public_states, recipe_pieces
from rods_agents.analysis.profile import Profile
from rods_agents.analysis.tracing import Trace
from rods_agents.variation.seed_anchor import has_number

PROTECTED = {".", "..", "/", "~", "", "*"}  # path values that name no entity: never renamed, never a composed piece


def fs_kinds(tree: Any, out: dict[str, str]) -> dict[str, str]:
    """Every name of a GorillaFileSystem tree -> 'file' or 'directory' (the kind a rename must keep)."""
    if isinstance(tree, dict):
        for k, v in tree.items():
            if isinstance(v, dict) and v.get("type") in ("file", "directory"):
                out.setdefault(k, v["type"])
                fs_kinds(v.get("contents", {}), out)
            elif isinstance(v, dict):
                fs_kinds(v, out)
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


def perturb(value: int | float, rng: Any, grow: bool = False) -> int | float:
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


def hardcoded(value: str, classes: list[str], long_context: bool = True) -> bool:
    """``value`` is written in quotes in an environment's code or, for a long-context task, its long-context data; an
    id-like value anywhere there (inside a text) counts too. The long-context data (BFCL's ``long_context`` module)
    acts only when a task loads with ``long_context=True``: ``file3.txt`` in its ``FILES_TAIL_USED`` fixes the name in
    a long_context task, not in a base one."""
    return _hardcoded(value, tuple(classes), long_context)


@lru_cache(maxsize=16384)
def _hardcoded(value: str, classes: tuple[str, ...], long_context: bool) -> bool:
    from rods_agents.analysis.catalog import class_source_text, source_text

    quoted = [f"{a}{value}{b}" for a in "'\"" for b in "'\""]  # plain substrings: the sources are long
    sources = map(class_source_text if long_context else source_text, classes)
    return any((len(value) >= 6 and any(ch.isdigit() for ch in value) and value in src) or any(q in src for q in quoted)
               for src in sources)


@lru_cache(maxsize=1)
def _swappable_names() -> frozenset[str]:
    """Stocks, cities, zip codes and airports: the environment's code writes them, and its tables can still swap them."""
    from rods_agents.analysis.knowledge import zip_codes
    from rods_agents.analysis.value_sources import airport_cities, ticker_companies

    return frozenset({*ticker_companies(), *zip_codes(), *zip_codes().values(), *airport_cities(),
                      *airport_cities().values()})


def numbers_only(seed: Task) -> bool:
    """The seed's calls take nothing a variant could change but numbers: every string argument is a documented option
    ('START', the doors) or a value the environment's own code writes (the tire shop's address). Such a task
    (base_84: refuel, start, check the tires) is new in its numbers, its vehicle state and its words, or not at all."""
    from envs.executor import parse_call
    from rods_agents.variation.value_kinds import options

    swappable = _swappable_names()
    for call in (c for turn in seed.ground_truth for c in turn):
        parsed = parse_call(call)
        for param, value in parsed.kwargs.items():
            for s in (value if isinstance(value, list) else [value]):
                if isinstance(s, str) and s not in options(parsed.name, param) and (
                        s in swappable or not hardcoded(s, seed.involved_classes, seed.long_context)):
                    return False
    return True


def scalar_numbers(value: Any) -> list[float]:
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, list | tuple):
        return [n for v in value for n in scalar_numbers(v)]
    return []


def sibling_index(slot: int, n: int) -> int:
    """The option sibling ``slot`` takes of ``n``: the slot-th, so the eight samples of a scenario take eight
    different options when there are eight; where ``n`` divides 4 (two or four options), one further, so the two
    variants of one seed (slots c and c + 4) still differ. (Slot + slot // 4 for every ``n`` wasted an option: with
    five city pairs the eight samples took four, and with eight texts seven.)"""
    return (slot + slot // 4) % n if 4 % n == 0 else slot % n


class Draw:
    """One draw of changes; ``level`` 0 is the most varied, higher levels keep more of the seed."""

    def __init__(self, seed: Task, profile: Profile, trace: Trace, rng: Any, attempt: int, force: bool) -> None:
        self.seed, self.profile, self.trace, self.rng = seed, profile, trace, rng
        self.attempt, self.force = attempt, force
        self.slot: int | None = None
        self.turn_text = [" ".join(m.content for m in turn) for turn in seed.turns]
        self.sources = {(a.turn, a.index, a.param): a for a in profile.arg_sources}
        self.composed = any(a.source == "composed" and a.value.strip("'\"") not in PROTECTED
                            for a in profile.arg_sources)
        self.composed_values = [a.value.strip("'\"") for a in profile.arg_sources
                                if a.source == "composed" and a.value.strip("'\"") not in PROTECTED]

    def feeds_composed(self, value: str) -> bool:
        """True when ``value`` shares a word with a composed argument (a piece it is built from)."""
        return any(_shares(value, c) for c in self.composed_values)

    def names_in_composed(self, value: str) -> bool:
        """Every composed argument ``value`` is a piece of holds it as a whole word ('Kelly' in 'Kelly Total Score:
        96', base_17): a person renamed everywhere, state and text included, is renamed inside it too, so the
        composition still holds."""
        word = re.compile(rf"(?<!\w){re.escape(value)}(?!\w)")
        return all(word.search(c) is not None for c in self.composed_values if _shares(value, c))

    def feeds_composed_number(self, value: float) -> bool:
        """True when the stated number ``value`` is a piece of a composed argument: written inside a composed text, or
        one of the two numbers a composed number is worked out from ('40 gallons in total' for fillFuelTank(30) on
        a tank holding 10), or taken by an earlier call whose result a composed number is built from (150 liters
        converted, then the rounded gallons filled). Only such a number must stay for the composition to hold; before,
        any composed argument kept every number of the task (base_66's 450 miles stayed beside the fill it has nothing
        to do with)."""
        if not self.composed:
            return False
        results: list[str] = []
        states = self._states
        taken_before = False  # an earlier call takes the number: a result built from it may feed the composition
        for rec in self.trace.calls:
            for param, arg in rec.args.items():
                a = self.sources.get((rec.turn, rec.index, param))
                if a is None or a.source != "composed":
                    continue
                if isinstance(arg, str) and has_number(arg, value):
                    return True
                for v in scalar_numbers(arg):
                    pieces = recipe_pieces(v, self.text_upto(rec.turn), results, states.get(rec.cls or "", {}), rec.name)
                    if pieces is None or any(n == float(value) for n, _ in pieces):
                        return True  # no recipe found: keep every number, as before
                    if taken_before and len(pieces) > 1 and any(where == "the number from the earlier result"
                                                                 for _, where in pieces):
                        return True  # a sum or difference with an earlier result the number fed: it must stay
                    # (150 liters -> liter_to_gallon -> 39.63 -> fill 40, base_90, is one rounded piece: the fill
                    # is rounded again from the variant's result, rederive.rederive_rounded)
            results.append(rec.result)
            taken_before = taken_before or any(value in scalar_numbers(x) for x in rec.args.values())
        return False

    @cached_property
    def _states(self) -> dict[str, dict[str, Any]]:
        """The seed's loaded states by class, built once per draw (an environment per call was built before)."""
        return public_states(self.seed)

    def text_upto(self, turn: int) -> str:
        return " ".join(self.turn_text[: turn + 1])

    def later_text(self, turn: int) -> str:
        return " ".join(self.turn_text[turn:])

    def pick(self, options: list[Any], key: str, prefer: Callable[[Any], bool] | None = None) -> Any:
        """One of ``options``. With a sibling slot (:func:`sibling_slot`), a choice coordinated across the
        scenario's samples: the options in one order per scenario, sample ``slot`` takes the slot-th, so the
        eight samples of a scenario (four categories x two variants) take different ones while options last
        (random draws collide: 'first' -> 'economy' twice is one task told twice). Options ``prefer`` holds for
        come first in that order, so the samples take them while they last (a route with both ends new before one
        that keeps the seed's San Francisco)."""
        options = sorted(options, key=repr)
        if self.slot is None:
            liked = [o for o in options if prefer is None or prefer(o)]
            return self.rng.choice(liked or options)
        import random

        random.Random(f"{self.seed.scenario}|{key}").shuffle(options)
        if prefer is not None:
            options.sort(key=lambda o: not prefer(o))  # stable: the scenario's order within each group
        return options[sibling_index(self.slot, len(options))]

    def p(self, base: float) -> bool:
        return self.force or self.rng.random() < base


def _shares(value: str, composed: str) -> bool:
    """``value`` is inside ``composed``, holds it, or shares a word of four or more characters with it."""
    v, c = value.lower(), composed.lower()
    return v in c or c in v or bool(set(re.findall(r"[a-z0-9]{4,}", v)) & set(re.findall(r"[a-z0-9]{4,}", c)))


__all__ = ["Draw", "PROTECTED", "fs_kinds", "hardcoded", "perturb", "scalar_numbers", "sibling_index"]
