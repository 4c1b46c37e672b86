"""Locate BFCL v3 multi-turn data and environment code inside the installed ``bfcl-eval`` package.

Nothing is copied into this repository: every file is read from the wheel through
``importlib.resources``, so the data always matches the installed, pinned version.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path

CATEGORIES: tuple[str, ...] = ("base", "miss_func", "miss_param", "long_context")

# Class name -> (module under func_source_code, function-doc file). Mirrors
# bfcl_eval/constants/executable_backend_config.py for the eight multi-turn classes.
CLASS_MODULES: dict[str, tuple[str, str]] = {
    "GorillaFileSystem": ("gorilla_file_system", "gorilla_file_system.json"),
    "MathAPI": ("math_api", "math_api.json"),
    "MessageAPI": ("message_api", "message_api.json"),
    "TwitterAPI": ("posting_api", "posting_api.json"),
    "TicketAPI": ("ticket_api", "ticket_api.json"),
    "TradingBot": ("trading_bot", "trading_bot.json"),
    "TravelAPI": ("travel_booking", "travel_booking.json"),
    "VehicleControlAPI": ("vehicle_control", "vehicle_control.json"),
}
STATELESS_CLASSES: frozenset[str] = frozenset({"MathAPI"})
ENV_PACKAGE = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code"


class BFCLNotInstalled(RuntimeError):
    """Raised when the ``bfcl-eval`` package (installed with ``--no-deps``) is missing."""


def data_dir() -> Path:
    try:
        root = resources.files("bfcl_eval")
    except ModuleNotFoundError as exc:  # pragma: no cover - exercised only on broken installs
        raise BFCLNotInstalled(
            "bfcl-eval is not installed; run `pip install --no-deps bfcl-eval==2026.3.23 mpmath`"
        ) from exc
    return Path(str(root)) / "data"


def _read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@cache
def raw_entries(category: str) -> tuple[dict, ...]:
    """Prompt entries of one category, in file order (ids ``multi_turn_<category>_<n>``)."""
    return tuple(_read_jsonl(data_dir() / f"BFCL_v4_multi_turn_{category}.json"))


@cache
def raw_answers(category: str) -> tuple[dict, ...]:
    """Ground-truth entries of one category, aligned one to one with :func:`raw_entries`."""
    return tuple(_read_jsonl(data_dir() / "possible_answer" / f"BFCL_v4_multi_turn_{category}.json"))


@cache
def function_docs(class_name: str) -> tuple[dict, ...]:
    """Function docs (Gorilla format) of one environment class, in file order."""
    _, doc_file = CLASS_MODULES[class_name]
    return tuple(_read_jsonl(data_dir() / "multi_turn_func_doc" / doc_file))


def env_class(class_name: str) -> type:
    """Import an environment class from the installed package (never from model text)."""
    import importlib

    module_name, _ = CLASS_MODULES[class_name]
    module = importlib.import_module(f"{ENV_PACKAGE}.{module_name}")
    return getattr(module, class_name)
