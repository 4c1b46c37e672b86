"""The car's four tire pressures move together, with the user's tire limit where the text states one.

VehicleControlAPI's tires are the state a tire task reads ('If any tire is under 30 psi, go to the shop'), and the
plan kept them as the seed had them: the limit could not move without crossing a tire (30 psi against tires at 30 and
28), so readers saw 'the same 30.0 psi' in every variant of scenarios 82, 84 and 78 (reads 37, 38). Here the pressures
shift by one amount: by the limit's own move where the limit moves, else by a small amount of their own. Every stated
limit compares with every tire as in the seed, with a margin (a tire the seed put at the limit stays at it), and the
car's own verdict (``healthy_tire_pressure``, the mean within 30-35 psi) stays as it was.
"""

from __future__ import annotations

import re
from typing import Any

from rods_agents.analysis.tracing import Trace, stated_limits
from rods_agents.variation.seed_anchor import has_number

_SHIFTS = (-3.0, -2.0, -1.5, -1.0, 1.0, 1.5, 2.0, 3.0)  # psi: the other tires of another car, not another kind of car
_MARGIN = 1.0


def pressures(config: dict[str, Any]) -> dict[str, float]:
    """The state's tire pressures by key ('frontLeftTirePressure' -> 30.0); empty without them."""
    node = config.get("VehicleControlAPI")
    if not isinstance(node, dict):
        return {}
    return {k: float(v) for k, v in node.items()
            if k.endswith("TirePressure") and isinstance(v, int | float) and not isinstance(v, bool)}


def tire_limits(turn_texts: list[str]) -> list[float]:
    """The limits the user states on tire pressure: in a turn that speaks of tires or psi, within a tire's range (a
    fare cap in the same task is no tire limit)."""
    return [n for t, n in stated_limits(turn_texts) if 10 <= n <= 60 and _TIRE_WORDS.search(turn_texts[t])]


_TIRE_WORDS = re.compile(r"\b(psi|tires?|tyres?|pressures?)\b", re.I)


def reads_tires(trace: Trace) -> bool:
    return any(r.name == "check_tire_pressure" for r in trace.calls)


def _healthy(values: list[float]) -> bool:
    return 30 <= sum(values) / len(values) <= 35  # VehicleControlAPI.check_tire_pressure's own standard


def fits(tires: dict[str, float], delta: float, limits: list[tuple[float, float]]) -> bool:
    """Tires shifted by ``delta`` compare with each limit (``old -> new``) as before, none within the margin of a new
    limit unless it sat on the old one, and the car's verdict holds."""
    old = list(tires.values())
    new = [p + delta for p in old]
    if not old or min(new) < 15 or max(new) > 50 or _healthy(old) != _healthy(new):
        return False
    for was, now in limits:
        for p, q in zip(old, new, strict=True):
            if (p < was) != (q < now):
                return False
            if p != was and abs(q - now) < _MARGIN:
                return False
    return True


def limit_moves(numbers: dict[str, Any], limits: list[float]) -> list[tuple[float, float]]:
    """Each stated limit with the value the plan gives it (itself where it stays); ``numbers`` as the plan keys them
    (``repr(old)``, maybe with a '|' suffix)."""
    moved: dict[float, float] = {}
    for key, new in numbers.items():
        try:
            moved[float(key.partition("|")[0])] = float(new)
        except (TypeError, ValueError):
            continue
    return [(n, moved.get(n, n)) for n in dict.fromkeys(limits)]


def shift_tires(config: dict[str, Any], trace: Trace, turn_texts: list[str], numbers: dict[str, Any],
                rng: Any) -> dict[str, Any] | None:
    """Shift the tire pressures of ``config`` (in place) for a task that reads them; class.path -> new value.

    With a stated tire limit that moves, the tires move by the same amount; otherwise by a drawn amount that every
    limit still agrees with. Nothing moves when the text states a pressure itself or no drawn shift fits; None when a
    moved limit finds no shift (the plan's limit would cross a tire the trace checks see unchanged)."""
    moves = limit_moves(numbers, tire_limits(turn_texts))
    forced = {now - was for was, now in moves if now != was}
    tires = pressures(config)
    text = " ".join(turn_texts)
    said = [p for p in set(tires.values()) if p not in {was for was, _now in moves} and has_number(text, p)]
    if not tires or not reads_tires(trace) or said or len(forced) > 1:
        return None if forced else {}
    if forced:
        delta = next(iter(forced))
        if fits(tires, delta, moves):
            return _shifted(config, tires, delta)
        return {} if fits(tires, 0.0, moves) else None  # a moved limit that crosses no tire leaves them where they are
    options = [x for x in _SHIFTS if rng.random() < 0.7]
    rng.shuffle(options)
    return next((_shifted(config, tires, x) for x in options if fits(tires, x, moves)), {})


def _shifted(config: dict[str, Any], tires: dict[str, float], delta: float) -> dict[str, Any]:
    node = config["VehicleControlAPI"]
    for key, p in tires.items():
        node[key] = p + delta
    return {f"VehicleControlAPI.{k}": node[k] for k in tires}


__all__ = ["fits", "limit_moves", "pressures", "reads_tires", "shift_tires", "tire_limits"]
