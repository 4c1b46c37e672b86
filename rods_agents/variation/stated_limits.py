"""A limit the user sets is the user's own number: a variant may set another one, on the same side of every result.

'If it's below 40, point me to the nearest tire shop', 'if the cost is under 2000, book it', 'By promising I mean the
price is larger than 300': the number is a threshold no call takes, so the plan's numbers (which change only values
calls take) left it as it was, and readers marked variants "partly new" for the seed's own amounts. Here such a
limit gets another value of the same roundness, within a quarter of it (40 -> 45, 2000 -> 2200, 37.5 -> 35) that falls on the same side of
every number the seed's results hold, with a margin, so each comparison the text asks for comes out as in the seed
and none is knife-edge. A result the variant changes (another state, another route) is checked again after
execution (:func:`rods_agents.analysis.tracing.limit_flips`, :func:`rods_agents.analysis.faithfulness.fare_over_cap`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from rods_agents.analysis.obtainability import camel_words
from rods_agents.analysis.tracing import _num_leaves, stated_limits
from rods_agents.variation.draw import Draw, scalar_numbers
from rods_agents.variation.seed_anchor import has_number, number_matches, word_number_matches
from rods_agents.variation.seed_anchor import scalar_strings as _scalar_strings
from rods_agents.variation.tire_pressures import fits, limit_moves, pressures, reads_tires, tire_limits

_LEAF_LIMIT = 200_000  # a long-context listing holds no limit's comparison and is slow to walk


_RANGE = (0.75, 1.25)
"""How far a limit may move, as shares of the seed's: a tire limit of 40 PSI became 60 (read 36: 'lower than 60' is
no tire pressure anyone sets), so a new limit stays within a quarter of the old, as a person's own would."""


def _step(n: float) -> float:
    """How round ``n`` is, within a fifth of it: a new limit moves by this much (5000 by 500, 2000 by 100, 300 by 50,
    40 by 5, 37.5 by 2.5)."""
    for step in (500, 100, 50, 10, 5):
        if n >= 5 * step and n % step == 0:
            return step
    return 2.5 if (2 * n) % 1 == 0 and n % 1 else 1.0


def _result_numbers(d: Draw, turn: int | None = None, tires: bool = True, only_tires: bool = False) -> list[float]:
    """The numbers the seed's results print. With ``turn`` (where a limit is stated), those of that turn and the next,
    and of other turns only under a name the turn's words use ('pressure' for frontLeftTirePressure): base_68's
    'pressure below 40' (turn 2) could not move for the full tank's 50 that turn 1's engine start prints.
    ``only_tires``: the tire pressures alone, for a limit on them."""
    words = set(re.findall(r"[a-z]{4,}", d.turn_text[turn].lower())) if turn is not None else set()
    out: list[float] = []
    for rec in d.trace.calls:
        if rec.error or not rec.result or len(rec.result) > _LEAF_LIMIT:
            continue
        try:
            leaves = _num_leaves(json.loads(rec.result))
        except (json.JSONDecodeError, TypeError):
            continue
        near = turn is None or rec.turn in (turn, turn + 1)
        out += [v for k, v in leaves.items() if (near or _key_words(k) & words) and (tires or "TirePressure" not in k)
                and (not only_tires or "TirePressure" in k)]
    return out


def _key_words(key: str) -> set[str]:
    return {w for w in camel_words(key.replace(".", " ")).split() if len(w) >= 4}


def _same_side(old: float, new: float, results: list[float]) -> bool:
    """Every result number compares with ``new`` as it does with ``old``, none within 5% (at least 1) of ``new``."""
    lo, hi = min(old, new), max(old, new)
    margin = max(1.0, 0.05 * new)
    return not any(lo <= x <= hi or abs(x - new) < margin for x in results)


def _taken_by_a_call(bound: list[tuple[Any, dict[str, Any]]], n: float) -> bool:
    return any(n in scalar_numbers(v) or any(has_number(s, n) for s in _scalar_strings(v))
               for _rec, args in bound for v in args.values())


def _only_as_limit(texts: list[str], n: float) -> bool:
    """Every place the text says ``n`` states it as a limit: a 40 said as '40 gallons' elsewhere would change too."""
    said = sum(len(number_matches(t, n)) + len(word_number_matches(t, n)) for t in texts)
    return said == sum(x == n for _t, x in stated_limits(texts))


def _tires_follow(d: Draw, n: float, new: float, limits: list[tuple[int, float]]) -> bool:
    """A tire limit may cross the car's tires when the tires move with it (:func:`shift_tires`): every other result
    still falls on its side, and the tires shifted by the limit's move compare with it as before."""
    tires, said = pressures(d.seed.initial_config), tire_limits(d.turn_text)
    if not tires or not reads_tires(d.trace) or n not in said:
        return False
    others = [x for t, m in limits if m == n for x in _result_numbers(d, t, tires=False)]
    return _same_side(n, new, others) and fits(tires, new - n, limit_moves({repr(n): new}, said))


def limit_numbers(d: Draw, bound: list[tuple[Any, dict[str, Any]]], taken: dict[str, Any]) -> dict[str, Any]:
    """The plan's new numbers (``repr(old) -> new``, as :func:`rods_agents.variation.seed_anchor.substitute_numbers`
    reads them) for the limits the seed's text states and no call takes; ``taken``: the numbers already changed."""
    out: dict[str, Any] = {}
    limits = stated_limits(d.turn_text)
    for n in dict.fromkeys(x for _t, x in limits):
        if (n <= 0 or any(k.partition("|")[0] in (repr(n), repr(int(n))) for k in taken) or _taken_by_a_call(bound, n)
                or not _only_as_limit(d.turn_text, n) or not d.p(0.8)):
            continue
        # a tire limit compares with the tires only: base_94's 'below the 40 PSI mark' could not move for the 40
        # gallons the next turn's engine start prints, and stayed in all eight samples (read 63)
        tire_limit = n in tire_limits(d.turn_text) and bool(pressures(d.seed.initial_config))
        results = [x for t, m in limits if m == n for x in _result_numbers(d, t, only_tires=tire_limit)]
        step = _step(n)
        options = [n + k * step for k in (-2, -1, 1, 2) if _RANGE[0] * n <= n + k * step <= _RANGE[1] * n]
        options = [x for x in options if _same_side(n, x, results) or _tires_follow(d, n, x, limits)]
        if options:
            new = d.pick(options, f"limit|{n:g}")
            out[repr(n)] = int(new) if float(new).is_integer() and float(n).is_integer() else new
    return out


__all__ = ["limit_numbers"]
