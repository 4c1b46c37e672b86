"""Prompt templates and phrase tables, shipped as package data so a wheel install has them too.

Load files through :data:`PROMPTS_DIR` (or ``importlib.resources.files("prompts")``), never through a path computed
from another package's ``__file__``: after ``pip install rods-*.whl`` the repository layout is gone.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

PROMPTS_DIR: Path = Path(str(resources.files(__name__)))
"""The folder holding the prompt files (the repo's ``prompts/`` in a checkout, ``site-packages/prompts`` installed)."""


def prompt_path(name: str) -> Path:
    """Path of ``prompts/<name>``."""
    return PROMPTS_DIR / name


__all__ = ["PROMPTS_DIR", "prompt_path"]
