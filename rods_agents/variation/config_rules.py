"""Stage 5: patch the initial_config after an execution error, instead of discarding the plan.

A rule table keyed by (error kind, class) turns the first error into a minimal config patch: create
the missing file or folder where the call ran, log the user in, add balance, open the market, raise
the fuel level. Every patch is a dot-path edit recorded in the sample's provenance; the number of
patch rounds is bounded (``SynthesisContext.max_patch_attempts``, default 3).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from envs.task import Task
from rods_agents.analysis.tracing import Trace


class ConfigPatch(BaseModel):
    rule: str
    cls: str
    path: str
    value: Any
    error: str


def _set(config: dict, cls: str, path: list[str], value: Any) -> None:
    node = config.setdefault(cls, {})
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value


def _fs_dir(config: dict, cwd: str | None) -> tuple[dict, list[str]] | None:
    """The config dict of the working directory ``cwd`` ('root/sub/...') and its dot-path."""
    root = config.get("GorillaFileSystem", {}).get("root")
    if not isinstance(root, dict) or not cwd:
        return None
    parts = cwd.split("/")
    node = root.get(parts[0])
    path = ["root", parts[0]]
    for part in parts[1:]:
        if not isinstance(node, dict) or part not in node.get("contents", {}):
            return None
        node = node["contents"][part]
        path += ["contents", part]
    return (node, path) if isinstance(node, dict) else None


def _create_fs_entry(config: dict, rec: dict, call: Any, trace: Trace) -> ConfigPatch | None:
    args = call.args
    name = args.get("folder") if call.name == "cd" else next(
        (args[k] for k in ("file_name", "source", "file_name1", "file_name2") if isinstance(args.get(k), str)), None)
    if not name or "/" in name or name in (".", ".."):
        return None
    found = _fs_dir(config, call.cwd)
    if found is None:
        return None
    node, path = found
    entry = {"type": "directory", "contents": {}} if call.name == "cd" else {"type": "file", "content": ""}
    if name in node.setdefault("contents", {}):
        return None
    node["contents"][name] = entry
    return ConfigPatch(rule="fs.create_missing", cls="GorillaFileSystem", path=".".join(path + ["contents", name]),
                       value=entry, error=rec["error"])


def _setter(cls: str, path: str, value: Any, rule: str) -> Callable[..., ConfigPatch | None]:
    def apply(config: dict, rec: dict, call: Any, trace: Trace) -> ConfigPatch | None:
        node = config.get(cls, {})
        for key in path.split(".")[:-1]:
            node = node.get(key, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict) and node.get(path.split(".")[-1]) == value:
            return None
        _set(config, cls, path.split("."), value)
        return ConfigPatch(rule=rule, cls=cls, path=path, value=value, error=rec["error"])
    return apply


def round_balance(required: float) -> float:
    """A round balance at least 25% above ``required``: the next multiple of 500 (of 100 under 1,000)."""
    target = required * 1.25
    step = 500.0 if target >= 1000 else 100.0
    return float(math.ceil(target / step) * step)


def _add_balance(config: dict, rec: dict, call: Any, trace: Trace) -> ConfigPatch | None:
    """Raise the balance to a round amount with room to spare: the shortfall the error reports (or the amount
    asked) plus at least a quarter of what is needed, rounded up to a round figure (:func:`round_balance`).
    A balance a dollar above the order's cost is a knife edge the seed never had, and one the agent sees."""
    info = config.setdefault("TradingBot", {}).setdefault("account_info", {})
    m = re.search(r"required \$([\d.]+) but only \$([\d.]+)", rec["error"])
    need = float(m.group(1)) - float(m.group(2)) if m else float(call.args.get("amount", 0) or 0)
    if need <= 0:
        return None
    balance = round_balance(float(info.get("balance", 0.0)) + need)
    info["balance"] = balance
    return ConfigPatch(rule="trading.add_balance", cls="TradingBot", path="account_info.balance", value=balance,
                       error=rec["error"])


def _add_card_balance(config: dict, rec: dict, call: Any, trace: Trace) -> ConfigPatch | None:
    card = call.args.get("card_id")
    cards = config.get("TravelAPI", {}).get("credit_card_list", {})
    if card not in cards:
        return None
    cards[card]["balance"] = round_balance(float(cards[card].get("balance", 0)) + 5000.0)  # the fare is not reported
    return ConfigPatch(rule="travel.add_card_balance", cls="TravelAPI", path=f"credit_card_list.{card}.balance",
                       value=cards[card]["balance"], error=rec["error"])


def _fit_fuel(config: dict, rec: dict, call: Any, trace: Trace) -> ConfigPatch | None:
    """Set the starting fuel so every fill in the plan fits the 50-gallon tank (or the tank is not empty)."""
    vc = config.setdefault("VehicleControlAPI", {})
    fills = sum(float(c.args.get("fuelAmount", 0) or 0) for c in trace.calls if c.name == "fillFuelTank")
    if "above the tank capacity" in rec["error"]:
        level = max(0.0, round(50.0 - fills, 1))
    else:
        level = max(float(vc.get("fuelLevel", 0.0)), 10.0)
    if vc.get("fuelLevel") == level:
        return None
    vc["fuelLevel"] = level
    return ConfigPatch(rule="vehicle.fit_fuel", cls="VehicleControlAPI", path="fuelLevel", value=level, error=rec["error"])


def _add_stock(config: dict, rec: dict, call: Any, trace: Trace) -> ConfigPatch | None:
    """A stock the sector tables list but the config's own stock table lacks: add it, priced like a
    stock (a deterministic draw per symbol), so a swapped sector's stocks can be looked up."""
    import random

    m = re.search(r"Stock with symbol '([A-Z]{1,6})' not found", rec["error"])
    stocks = config.get("TradingBot", {}).get("stocks")
    if not m or not isinstance(stocks, dict) or m.group(1) in stocks:
        return None
    draw = random.Random(m.group(1))
    price = round(draw.uniform(40.0, 900.0), 2)
    entry = {"price": price, "percent_change": round(draw.uniform(-0.5, 0.5), 2), "volume": round(draw.uniform(0.5, 3.5), 3),
             "MA(5)": round(price * draw.uniform(0.98, 1.02), 2), "MA(20)": round(price * draw.uniform(0.97, 1.03), 2)}
    stocks[m.group(1)] = entry
    return ConfigPatch(rule="trading.add_stock", cls="TradingBot", path=f"stocks.{m.group(1)}", value=entry,
                       error=rec["error"])


# (error kind, class) -> rule
RULES: dict[tuple[str, str], Callable[..., ConfigPatch | None]] = {
    ("missing_entity", "GorillaFileSystem"): _create_fs_entry,
    ("not_authenticated", "TwitterAPI"): _setter("TwitterAPI", "authenticated", True, "twitter.log_in"),
    ("not_authenticated", "TradingBot"): _setter("TradingBot", "authenticated", True, "trading.log_in"),
    ("market_closed", "TradingBot"): _setter("TradingBot", "market_status", "Open", "trading.open_market"),
    ("insufficient_funds", "TradingBot"): _add_balance,
    ("missing_entity", "TradingBot"): _add_stock,
    ("insufficient_funds", "TravelAPI"): _add_card_balance,
    ("fuel", "VehicleControlAPI"): _fit_fuel,
}


def propose_patch(config: dict, error: dict, trace: Trace) -> ConfigPatch | None:
    """Apply the rule for ``error`` to ``config`` in place; None when no rule applies."""
    rule = RULES.get((error["kind"], error.get("class") or ""))
    if rule is None:
        return None
    call = next((c for c in trace.calls if c.turn == error["turn"] and c.index == error["index"]), None)
    if call is None:
        return None
    return rule(config, error, call, trace)


# (task, error, state) -> (patch or None, patched config, extra state updates): the LLM patch stage
PatchFallback = Callable[[Task, dict, dict], tuple["ConfigPatch | None", dict, dict[str, Any]]]


