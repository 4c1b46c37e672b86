"""Shared CLI plumbing: one clear error line instead of a traceback wall."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import typer
from pydantic import ValidationError
from rich.console import Console

from envs.task import TaskFileError

console = Console()
err_console = Console(stderr=True)

USER_ERRORS = (TaskFileError, FileNotFoundError, KeyError, ValueError, ConnectionError, ValidationError)


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Turn expected failures (bad files, unknown ids, unreachable endpoints) into exit code 2."""
    try:
        yield
    except USER_ERRORS as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        err_console.print(f"[bold red]error:[/] {msg}", soft_wrap=True, highlight=False)
        raise typer.Exit(2) from None
