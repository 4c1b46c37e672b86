"""Prompt templates and phrase tables, shipped as package data, and their one loader.

``prompts/*.txt`` are the LLM prompt templates (named ``{placeholders}``, ``str.format``);
``prompts/bfcl/`` holds what the synthesis knows about BFCL's environments as data (method lexicon,
value pools, preconditions, phrase tables). Files are found through :data:`PROMPTS_DIR`
(``importlib.resources``), never through a path computed from another package's ``__file__``: after
``pip install rods-*.whl`` the repository layout is gone.
"""

from __future__ import annotations

import json
import string
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

PROMPTS_DIR: Path = Path(str(resources.files(__name__)))
"""The folder holding the prompt files (the repo's ``prompts/`` in a checkout, ``site-packages/prompts`` installed)."""


def prompt_path(name: str) -> Path:
    """Path of ``prompts/<name>``."""
    return PROMPTS_DIR / name


@cache
def load_prompt(name: str) -> str:
    """The text of ``prompts/<name>`` (FileNotFoundError names the path)."""
    return (PROMPTS_DIR / name).read_text()


@cache
def load_prompt_json(name: str) -> Any:
    """``prompts/<name>`` parsed as JSON; keys starting with ``_`` are comments and dropped from dicts."""
    data = json.loads(load_prompt(name))
    return {k: v for k, v in data.items() if not k.startswith("_")} if isinstance(data, dict) else data


def placeholders(template: str) -> set[str]:
    """The named placeholders of a ``str.format`` template."""
    return {field for _, field, _, _ in string.Formatter().parse(template) if field}


__all__ = ["PROMPTS_DIR", "load_prompt", "load_prompt_json", "placeholders", "prompt_path"]
