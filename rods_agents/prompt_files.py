"""The one loader of ``prompts/``: prompt templates and phrase tables, cached, by file name.

A leaf module so every stage (offline or LLM) can use it without an import cycle. Templates use
named ``{placeholders}`` (``str.format``); :func:`placeholders` lists them so a test can check that
every one is filled.
"""

from __future__ import annotations

import json
import string
from functools import cache
from pathlib import Path
from typing import Any

PROMPTS = Path(__file__).resolve().parent.parent / "prompts"


@cache
def load_prompt(name: str) -> str:
    """The text of ``prompts/<name>`` (FileNotFoundError names the path)."""
    return (PROMPTS / name).read_text()


@cache
def load_prompt_json(name: str) -> Any:
    """``prompts/<name>`` parsed as JSON; keys starting with ``_`` are comments and dropped from dicts."""
    data = json.loads(load_prompt(name))
    return {k: v for k, v in data.items() if not k.startswith("_")} if isinstance(data, dict) else data


def placeholders(template: str) -> set[str]:
    """The named placeholders of a ``str.format`` template."""
    return {field for _, field, _, _ in string.Formatter().parse(template) if field}
