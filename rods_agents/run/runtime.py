"""Small helpers shared by the stage nodes: progress events, per-stage timings, seeded RNGs.

``context_of`` (the run's :class:`rods_agents.run.context.SynthesisContext`) is re-exported here.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import random
import time
from collections.abc import Iterator
from typing import Any

from rods_agents.run.context import context_of

log = logging.getLogger("rods.synthesis")


def emit(runtime: Any, state: dict, stage: str, status: str, **extra: Any) -> None:
    """Send a progress event on LangGraph's custom stream (no-op outside a graph run)."""
    event = {"sample_id": state.get("sample_id"), "stage": stage, "status": status, **extra}
    writer = getattr(runtime, "stream_writer", None) if runtime is not None else None
    if writer is not None:
        try:
            writer(event)
        except Exception:  # noqa: BLE001 - progress must never break a run
            log.debug("stream writer failed", exc_info=True)
    log.debug("%s", event)


@contextlib.contextmanager
def stage_timer(state: dict, stage: str) -> Iterator[dict[str, float]]:
    """Accumulate wall time of ``stage`` into a copy of ``state['timings']``."""
    timings = dict(state.get("timings") or {})
    start = time.perf_counter()
    try:
        yield timings
    finally:
        timings[stage] = round(timings.get(stage, 0.0) + time.perf_counter() - start, 6)


def rng_for(*parts: Any) -> random.Random:
    """A private RNG seeded from a stable hash of ``parts`` (deterministic across processes)."""
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


__all__ = ["context_of", "emit", "log", "rng_for", "stage_timer"]
