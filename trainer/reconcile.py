"""Checkpoint settings against the current run's: which config a resumed object runs with, and what changed.

Why its own module: the detector, the buffer and the curriculum each save a config in their
checkpoint state, and a resumed run (``rods train --resume --p_max 4``) must use the settings it was
started with while saying what differs. One rule for all three: the current config wins, each
differing saved value is logged and returned as ``{name: (saved, current)}``; ``restore_config``
adopts the saved one (an exact clone).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

log = logging.getLogger(__name__)


def reconcile_config(state: Mapping[str, Any], current: BaseModel, version: int, what: str,
                     restore_config: bool) -> tuple[BaseModel, dict[str, tuple[Any, Any]]]:
    """Check a saved state's version and decide which config a loaded object runs with.

    The current config wins (each differing saved value is logged as a warning); with
    ``restore_config`` the saved one is adopted and no change is reported.
    """
    if state.get("version") != version:
        raise ValueError(f"unsupported {what} state version {state.get('version')!r}")
    saved = type(current).model_validate(state["config"])
    if restore_config:
        return saved, {}
    changes = config_changes(saved, current)
    if changes:
        log.warning("%s state loaded with the current settings, not the saved ones: %s", what, format_changes(changes))
    return current, changes


def config_changes(saved: BaseModel, current: BaseModel) -> dict[str, tuple[Any, Any]]:
    """``{field: (saved, current)}`` for every field of two configs of one model that differs."""
    a, b = saved.model_dump(), current.model_dump()
    return {k: (a.get(k), b[k]) for k in b if a.get(k) != b[k]}


def format_changes(changes: Mapping[str, tuple[Any, Any]]) -> str:
    """``"p_max 8 -> 4, beta 0.5 -> 0.2"`` (saved -> current)."""
    return ", ".join(f"{k} {old!r} -> {new!r}" for k, (old, new) in changes.items())
