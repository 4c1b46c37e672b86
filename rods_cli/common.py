"""Shared CLI plumbing: one clear error line instead of a traceback wall."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape  # messages quote user text and schemas: '[...]' is not markup

from envs.task import InputError

console = Console(emoji=False)  # ":A" in "pkg.mod:A" is text, not an emoji code
err_console = Console(stderr=True, emoji=False)

# Only failures caused by the user's input; anything else is a bug and keeps its traceback.
USER_ERRORS = (InputError, FileNotFoundError, ConnectionError, ValidationError)


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Turn expected failures (bad files, unknown ids, unreachable endpoints) into one line and exit code 2."""
    try:
        yield
    except USER_ERRORS as exc:
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}", soft_wrap=True, highlight=False)
        raise typer.Exit(2) from None
