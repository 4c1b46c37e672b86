"""``ast.parse`` and ``ast.literal_eval`` behind one process-wide lock.

Why: CPython 3.11 keeps the AST constructor's recursion counter in interpreter-wide state, so two
threads parsing at once can corrupt it and one of them raises ``SystemError: AST constructor
recursion depth mismatch`` (python/cpython#106905). Synthesis runs samples on worker threads
(``--concurrency``), and every call a plan or a model writes goes through :func:`parse`. Parsing a
call takes microseconds, so serialising it costs nothing measurable.
"""

from __future__ import annotations

import ast
import threading
from typing import Any

_LOCK = threading.Lock()


def parse(source: str, mode: str = "exec") -> ast.AST:
    """``ast.parse(source, mode=mode)``, one thread at a time."""
    with _LOCK:
        return ast.parse(source, mode=mode)


def literal_eval(source: str | ast.AST) -> Any:
    """``ast.literal_eval(source)`` (constants and containers only, never code), one thread at a time."""
    with _LOCK:
        return ast.literal_eval(source)
