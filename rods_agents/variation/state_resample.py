"""A new state for a plan: the environment's numbers drawn again, within what the task's words still fit.

:func:`resample_state` draws new balances, fuel levels and prices (a balance stays clear of the task's costs; a tank
the task fills to capacity keeps its level there); :func:`resample_fill_level` gives such a task another round level,
and :func:`refill_gt` its fill what the tank then lacks; :func:`vary_state` keeps such a draw only where every value read
from a result is re-derived (:mod:`~rods_agents.variation.rederive`) and no outcome of the seed flips.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from envs.task import Task
from rods_agents.analysis.profile import Profile
from rods_agents.analysis.tracing import Trace, trace_task
from rods_agents.analysis.value_sources import _numbers
from rods_agents.variation.draw import Draw, fs_kinds, hardcoded, perturb
from rods_agents.variation.plan_checks import dangling, flips, inputs_changed, patchable
from rods_agents.variation.rederive import _json, rederive
from rods_agents.variation.seed_anchor import (
    Substitution,
    _strings,
    has_number,
    number_matches,
    unit_after,
    word_number_matches,
)
from rods_agents.variation.seed_anchor import scalar_strings as _scalar_strings
from rods_agents.variation.value_kinds import fresh, kind_of

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
        if float(old) in numbers_used or r >= 0.7 or fills_to_capacity(cls, old, trace):
            continue  # a fill to capacity gets a new level only with its amount re-derived (resample_fill_level)
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


def fills_to_capacity(cls: str, level: Any, trace: Trace) -> bool:
    """The seed's fills top the tank up to its capacity ("fill it completely"): the amount is decided by the
    starting level, so a new level would leave the old amount filling the tank only part way."""
    if cls != "VehicleControlAPI":
        return False
    fills = sum(float(r.args.get("fuelAmount", 0) or 0) for r in trace.calls if r.name == "fillFuelTank")
    return fills > 0 and abs(float(level) + fills - TANK_CAPACITY) < 0.51


def resample_fill_level(config: dict, trace: Trace, rng: Any, text: str = "") -> dict[str, Any]:
    """For a task whose composed value is a fill to capacity ('fuel up the car entirely'): a new starting fuel level
    (in place; class.path -> new value), the one resample a composed task gets. Its fill amount is re-derived by
    :func:`refill_gt`; scenario 82 otherwise had no value a plan could change but numbers tied to others."""
    node = config.get("VehicleControlAPI")
    old = node.get("fuelLevel") if isinstance(node, dict) else None
    if not isinstance(old, int | float) or not fills_to_capacity("VehicleControlAPI", old, trace) \
            or _level_said(text, old) or not _fill_unstated(trace, text) or rng.random() >= 0.7:
        return {}  # (a level the text says stays: 'I have 15 gallons left'; the rng is drawn only for a task it fits)
    level = _capacity_fill_level(old, rng)
    node["fuelLevel"] = level
    return {"VehicleControlAPI.fuelLevel": level}


_COUNTERS = {"create_ticket": ("TicketAPI", "ticket_counter", "id"), "place_order": ("TradingBot", "order_counter", "order_id"),
             "post_tweet": ("TwitterAPI", "tweet_counter", "id")}
"""method -> (class, the state's counter, the result key): the environments number what these calls create themselves."""


def drawn_id_changes(state_changes: dict[str, Any]) -> dict[str, Any]:
    """The state changes that decide the ids the environments hand out (:func:`shift_counters`): the counters of
    :data:`_COUNTERS` and TravelAPI's ``random_seed``, class.key -> value."""
    keys = {f"{cls}.{key}" for cls, key, _ in _COUNTERS.values()} | {"TravelAPI.random_seed"}
    return {path: value for path, value in state_changes.items() if path in keys}


def _ids(obj: Any) -> list[int]:
    """Every int held under an 'id' key or as a numeric dict key (orders and tweets are keyed by id)."""
    if isinstance(obj, list):
        return [i for v in obj for i in _ids(v)]
    if not isinstance(obj, dict):
        return []
    out = [int(k) for k in obj if isinstance(k, int) or (isinstance(k, str) and k.isdigit())]
    out += [v for k, v in obj.items() if k == "id" and isinstance(v, int) and not isinstance(v, bool)]
    return out + [i for v in obj.values() if isinstance(v, dict | list) for i in _ids(v)]


def shift_counters(config: dict, trace: Trace, text: str, rng: Any) -> dict[str, Any]:
    """Move the counters that number new tickets, orders and tweets, and the seed TravelAPI draws its ids from
    (:func:`_travel_seed`), in place to new values, for a task that creates one and whose text states none of the
    ids it hands out; class.path -> new value. The environments number them
    themselves, so base_60's 'get_ticket(2)' after its create_ticket kept id 2 in every variant, and
    get_order_details kept its order id in 91 of the accepted variants; ids read back from results follow the new
    numbers (:func:`~rods_agents.variation.rederive.rederive`)."""
    out: dict[str, Any] = {}
    for method, (cls, key, result_key) in _COUNTERS.items():
        made = [r for r in trace.calls if r.name == method and not r.error]
        node = config.get(cls, {}) if made else None
        first = _result_id(made[0].result, result_key) if made else None
        if not isinstance(node, dict) or first is None or any(has_number(text, first + k) for k in range(len(made))):
            continue  # an id the user states ('ticket 2') stays the environment's
        new = max([first, *(i + 1 for i in _ids(node))]) + rng.randint(3, 40)
        config.setdefault(cls, node)[key] = new
        out[f"{cls}.{key}"] = new
    seed = _travel_seed(config, trace, text, rng)
    if seed is not None:
        out["TravelAPI.random_seed"] = seed
    return out


_TRAVEL_DRAWS = {"book_flight": ("booking_id", "transaction_id"), "register_credit_card": ("card_id",),
                 "purchase_insurance": ("insurance_id",), "authenticate_travel": ("access_token",)}
"""TravelAPI calls and the result keys the environment draws from its seeded generator (the state's ``random_seed``,
141053 unless the config says otherwise). A registered card's balance is drawn too, and read by
``get_credit_card_balance``."""


def _travel_seed(config: dict, trace: Trace, text: str, rng: Any) -> int | None:
    """A new ``random_seed`` for TravelAPI (in place) where the task books, registers, insures or logs in and its text
    states none of the values drawn: every flight booked from the default seed is booking 3426812, which 122 of 126
    accepted variants' invoices and cancellations kept. The ids read back follow the new draws
    (:func:`~rods_agents.variation.rederive.rederive`); a drawn value the text states would not, so such a task keeps
    the seed."""
    calls = [r for r in trace.calls if not r.error]
    drawn = [_result_value(r.result, key) for r in calls if r.name in _TRAVEL_DRAWS for key in _TRAVEL_DRAWS[r.name]]
    if any(r.name == "register_credit_card" for r in calls):
        drawn += [_result_value(r.result, "balance") for r in calls if r.name == "get_credit_card_balance"]
    drawn = [v for v in drawn if v is not None]
    if not drawn or any(str(v) in text or (isinstance(v, int | float) and has_number(text, v)) for v in drawn):
        return None
    node = config.setdefault("TravelAPI", {})
    if not isinstance(node, dict):
        return None
    node["random_seed"] = new = rng.randint(100000, 999999)
    return new


def _result_value(result: str, key: str) -> Any:
    parsed = _json(result)
    return parsed.get(key) if isinstance(parsed, dict) else None


def _result_id(result: str, key: str) -> int | None:
    value = _result_value(result, key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


_FUEL_WORDS = re.compile(r"\b(fuel|gas|gasoline|petrol|tank|gallons?|liters?|litres?)\b", re.I)


def _level_said(text: str, level: float) -> bool:
    """The text states the level as a fuel amount ('I have 15 gallons left', 'my fuel level is 10'): a fuel word right
    before it or a unit right after. base_59's 'computed to a precision of 10' beside a 10-gallon tank is no such
    statement, and kept the level and its fill in all eight variants."""
    for m in number_matches(text, level):
        if _FUEL_WORDS.fullmatch(unit_after(text, m.end())) or _FUEL_WORDS.search(text[max(0, m.start() - 30):m.start()]):
            return True
    return any(_FUEL_WORDS.search(text[max(0, m.start() - 30):m.end() + 12]) for m in word_number_matches(text, level))


def _fill_unstated(trace: Trace, text: str) -> bool:
    """The task makes one fill and its text does not state the amount (the amount is what the tank lacks, not the
    user's number)."""
    fills = [r for r in trace.calls if r.name == "fillFuelTank"]
    return len(fills) == 1 and not has_number(text, float(fills[0].args.get("fuelAmount", 0) or 0))


def _capacity_fill_level(old: float, rng: Any) -> float:
    """A new round starting level for a task that fills the tank to capacity: a multiple of 5 with room to fill, never
    half the tank (a fill of 25 onto 25 reads as the level itself, not the sum the assistant must make)."""
    return rng.choice([float(x) for x in range(5, 46, 5) if abs(x - float(old)) > 0.5 and x * 2 != TANK_CAPACITY])


def refill_gt(gt: list[list[str]], seed_level: Any, config: dict, trace: Trace) -> list[list[str]]:
    """The plan's ground truth with its fill-to-capacity amount re-derived on the new starting level (a task with
    one fill: :func:`resample_fill_level`): what the tank lacks ('fuel up the car entirely' from 20 gallons fills 30,
    not the seed's 35)."""
    level = config.get("VehicleControlAPI", {}).get("fuelLevel")
    if not isinstance(level, int | float) or not fills_to_capacity("VehicleControlAPI", seed_level, trace) \
            or abs(float(level) - float(seed_level)) < 0.5:
        return gt
    from envs.executor import parse_call, to_call_string

    out = []
    for turn in gt:
        calls = []
        for call in turn:
            parsed = parse_call(call)
            if parsed.name == "fillFuelTank" and isinstance(parsed.kwargs.get("fuelAmount"), int | float):
                old = parsed.kwargs["fuelAmount"]
                new = TANK_CAPACITY - float(level)
                parsed.kwargs["fuelAmount"] = int(new) if isinstance(old, int) and new.is_integer() else round(new, 1)
                call = to_call_string(parsed.name, parsed.kwargs)
            calls.append(call)
        out.append(calls)
    return out


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


def vary_state(seed: Task, profile: Profile, trace: Trace, gt: list[list[str]], config: dict, d: Draw, rng: Any
                ) -> tuple[list[list[str]], dict, list[list[Any]], dict[str, Any]] | None:
    """Perturb one number of the state that neither the text nor the ground truth names; results that
    change carry into values read from them. None when no such number keeps the seed's outcomes."""
    text = " ".join(d.turn_text)
    used = {float(v) for r in trace.calls for v in r.args.values() if isinstance(v, int | float) and not isinstance(v, bool)}
    leaves = [(cls, p, v) for cls, cfg in config.items() if cls != "GorillaFileSystem"
              for p, v in _numeric_leaves(cfg) if float(v) not in used and not has_number(text, v) and v != 0]
    rng.shuffle(leaves)
    before = trace_task(seed.model_copy(update={"ground_truth": gt, "initial_config": config}))
    fs = fs_kinds(config.get("GorillaFileSystem", {}), {})
    gt_strings = " ".join(c for turn in gt for c in turn)
    distractors = sorted(n for n, k in fs.items() if k == "file" and n.lower() not in text.lower()
                         and n not in gt_strings and not hardcoded(n, ["GorillaFileSystem"], seed.long_context))
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
        if (vtrace.errors and not patchable(draft)) or flips(d, trace, vtrace) or dangling(trace, vtrace, d.turn_text):
            return None
        if d.composed and inputs_changed(profile, before, vtrace):
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
            node[path[-1]] = perturb(value, rng)
            change = {f"{cls}." + ".".join(str(k) for k in path): node[path[-1]]}
        kept = keeps_outcomes(new_config)
        if kept is not None:
            return kept[0], new_config, kept[1], change
    return None


__all__ = ["TANK_CAPACITY", "fills_to_capacity", "refill_gt", "resample_fill_level", "resample_state", "shift_counters",
           "vary_state"]
