"""Calls parse the same on worker threads as on one (synthesis runs samples on threads: ``--concurrency``).

CPython 3.11's AST constructor keeps its recursion counter per interpreter; a garbage collection that runs
a finalizer mid-parse lets another thread parse into the same counter, and one of them raised
``SystemError: AST constructor recursion depth mismatch`` (a CI run at concurrency 2 lost a sample to it).
"""

from __future__ import annotations

import gc
import sys
import threading

from envs.executor import parse_call

CALL = "f(" + ", ".join(f"[{{'a': [{i}, ({i}, 'x')]}}]" for i in range(60)) + ")"


class _Cyclic:
    """Garbage that only the cycle collector frees, running Python code (and so a thread switch) mid-parse."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        sum(range(50))


def test_calls_parse_on_eight_threads_while_the_collector_runs_finalizers():
    errors: list[BaseException] = []
    parsed: list[int] = []

    def work() -> None:
        for _ in range(40):
            for _ in range(3):
                _Cyclic()
            try:
                parsed.append(len(parse_call(CALL).args))
            except Exception as exc:  # noqa: BLE001 - the test counts every failure
                errors.append(exc)

    threshold, interval = gc.get_threshold(), sys.getswitchinterval()
    gc.set_threshold(50)
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        gc.set_threshold(*threshold)
        sys.setswitchinterval(interval)
    assert errors == []
    assert parsed == [60] * 320
