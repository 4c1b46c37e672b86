"""The :class:`Plan` model (a candidate variant before its user turns are written) and the config helpers
the offline and LLM plan stages share.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field

from prompts import PROMPTS_DIR as PROMPTS  # noqa: F401 - the one prompts/ loader; PROMPTS re-exported

_FILENAME = re.compile(r"^([A-Za-z0-9]+(?:([_\-])[A-Za-z0-9]+)*)\.([A-Za-z0-9]{1,5})$")


_IDENT = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")


_NAME = re.compile(r"^[A-Z][a-z]+$")


_TICKER = re.compile(r"^[A-Z]{3,5}$")


_FULL_NAME = re.compile(r"^[A-Z][a-z]+ [A-Z][a-z]+$")


class Plan(BaseModel):
    """A candidate variant before its user turns are written."""

    ground_truth: list[list[str]]
    initial_config: dict[str, Any]
    renames: dict[str, str] = Field(default_factory=dict)
    numbers: dict[str, float | int] = Field(default_factory=dict, description="repr(old) -> new")
    substitutions: list[dict[str, Any]] = Field(default_factory=list)
    state_changes: dict[str, Any] = Field(default_factory=dict, description="class.path -> new resampled value")
    swaps: dict[str, str] = Field(default_factory=dict, description="documented option -> another option")
    derived: list[list[Any]] = Field(default_factory=list, description="[old, new] values re-read from results")
    phrases: list[dict[str, Any]] = Field(default_factory=list, description="per turn, [old, new] wording swaps")
    donors: list[dict[str, Any]] = Field(default_factory=list, description="turns worded from other train seeds: "
                                         "{'turn', 'donor', 'donor_turn'}")
    attempt: int = 0


def config_strings(obj: Any, out: set[str]) -> set[str]:
    """Every string of a config (keys and values), added to ``out``."""
    if isinstance(obj, str):
        out.add(obj)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(k, str):
                out.add(k)
            config_strings(v, out)
    elif isinstance(obj, list):
        for v in obj:
            config_strings(v, out)
    return out


def replace_in_config(obj: Any, mapping: dict[str, str]) -> Any:
    """A copy of a config with every string (key or value) in ``mapping`` replaced."""
    if isinstance(obj, str):
        return mapping.get(obj, obj)
    if isinstance(obj, dict):
        return {(mapping.get(k, k) if isinstance(k, str) else k): replace_in_config(v, mapping) for k, v in obj.items()}
    if isinstance(obj, list):
        return [replace_in_config(v, mapping) for v in obj]
    return obj
