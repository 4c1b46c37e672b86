"""Calls the synthesis graph in process from the trainer, and times it.

The graph (``graphs.synthesis``) owns every synthesis decision; the trainer only hands it the
boundary seeds and gets accepted tasks back. The backbone is configurable: ``offline`` (no LLM,
deterministic) or ``openai`` (an OpenAI-compatible server, e.g. a vLLM instance serving the
synthesis model on its own GPUs, as in the paper) for the stages in ``synthesis_llm_stages``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from envs.task import Task

log = logging.getLogger(__name__)


class SynthesisOutcome(BaseModel):
    """What one synthesis round returned (the trainer logs these as ``rods/synthesis_*``)."""

    seeds: list[str]
    accepted: list[Task] = Field(default_factory=list)
    attempted: int = Field(0, description="Variants attempted (seeds x variants per seed when unknown).")
    seconds: float = 0.0
    error: str | None = None

    @property
    def acceptance(self) -> float:
        return len(self.accepted) / self.attempted if self.attempted else 0.0


Synthesizer = Callable[[list[Task], int], SynthesisOutcome]
"""``f(seeds, epoch) -> SynthesisOutcome``."""


def _graph_synthesizer(args: Any) -> Synthesizer:
    """The real graph: ``graphs.synthesis.synthesize(seeds, SynthesisContext)`` (import deferred: LangGraph is heavy)."""
    from graphs.synthesis import synthesize

    def run(seeds: list[Task], epoch: int) -> SynthesisOutcome:
        start = time.perf_counter()
        result = synthesize(seeds, graph_context(args, epoch))
        attempted = int((getattr(result, "report", None) or {}).get("samples", len(seeds) * args.variants_per_seed))
        return SynthesisOutcome(seeds=[s.id for s in seeds], accepted=list(result.accepted), attempted=attempted,
                                seconds=time.perf_counter() - start)

    return run


def graph_context(args: Any, epoch: int) -> Any:
    """The graph's ``SynthesisContext`` from the RODS config.

    ``seed`` changes every epoch (it names the variants), so a seed chosen again later grows new
    variants instead of colliding with the ids of earlier ones. With the ``openai`` backbone the
    LLM takes over ``synthesis_llm_stages`` (default plan, rewrite and patch; the rest stay offline);
    ``concurrency`` bounds the samples (seed x variant) in flight.
    """
    from graphs.state import SynthesisContext

    kwargs: dict[str, Any] = {
        "seed": args.seed * 100_003 + epoch, "variants_per_seed": args.variants_per_seed,
        "concurrency": args.synthesis_concurrency, "temperature": args.synthesis_temperature,
        "backbone": "offline" if args.synthesis_backbone == "offline" else "llm",
    }
    if args.synthesis_backbone != "offline":
        if not args.synthesis_model:
            raise ValueError("synthesis_backbone=openai needs synthesis_model")
        kwargs["models"] = [args.synthesis_model]
        kwargs["base_url"] = args.synthesis_base_url
        kwargs["llm_stages"] = list(getattr(args, "synthesis_llm_stages", None) or ["plan", "rewrite", "patch"])
    return SynthesisContext(**kwargs)


def make_synthesizer(args: Any, override: Synthesizer | None = None) -> Synthesizer:
    """The synthesizer the trainer calls at epoch boundaries; never raises (errors are logged and reported)."""
    inner = override or _graph_synthesizer(args)

    def guarded(seeds: list[Task], epoch: int) -> SynthesisOutcome:
        if not seeds:
            return SynthesisOutcome(seeds=[])
        start = time.perf_counter()
        try:
            return inner(seeds, epoch)
        except Exception as exc:  # noqa: BLE001 - a failed synthesis round must not end training
            log.exception("synthesis failed for %d seeds; continuing without new variants", len(seeds))
            return SynthesisOutcome(seeds=[s.id for s in seeds], attempted=len(seeds) * args.variants_per_seed,
                                    seconds=time.perf_counter() - start, error=f"{type(exc).__name__}: {exc}")

    return guarded
