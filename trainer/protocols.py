"""The trainer's seams, as ``typing.Protocol`` s: what the curriculum needs from a synthesizer.

Why protocols: the curriculum used to probe its synthesizer with ``getattr(synth, "submit", None)``,
``getattr(synth, "collects", False)``, ``getattr(synth, "state_dict", ...)``, ``getattr(synth,
"close", ...)``; a reader could not tell which of those a synthesizer must have, and a typo in an
implementation silently turned a feature off. Here the contract is written once; a type checker
(and :func:`isinstance`, the protocol being runtime-checkable) holds implementations to it.

Two shapes:

* :class:`SynthesisRound`: one synchronous round, ``f(seeds, epoch) -> SynthesisOutcome``. What a
  test or benchmark passes to ``trainer.grpo.train(args, synthesizer=...)`` and what
  ``trainer.synthesis_bridge.make_synthesizer`` returns (guarded: it never raises).
* :class:`Synthesizer`: what :class:`trainer.curriculum.Curriculum` holds and calls at every epoch
  boundary. It can collect rounds that landed since the last boundary (``collects``), take seeds
  during the epoch (``dispatches`` + :meth:`Synthesizer.submit`, step dispatch), save and restore the
  rounds in flight with the curriculum's checkpoint, and be closed when training ends.
  :func:`as_synthesizer` lifts a plain round into one (synchronous: it synthesizes at the boundary,
  keeps no state, takes no submissions).

Nothing here imports TRL, LangGraph or the synthesis graph: the module is a leaf of ``trainer/``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from envs.task import Task
    from trainer.synthesis_bridge import SynthesisOutcome


class SynthesisRound(Protocol):
    """One synchronous synthesis round over ``seeds`` at the end of ``epoch`` (``epoch`` names the variants)."""

    def __call__(self, seeds: list[Task], epoch: int) -> SynthesisOutcome: ...


@runtime_checkable
class Synthesizer(Protocol):
    """The curriculum's synthesizer (module docstring); every rank holds one and calls it identically."""

    collects: bool
    """True: the boundary calls it even without seeds (rounds submitted earlier may have landed)."""
    dispatches: bool
    """True: it accepts :meth:`submit` during an epoch (``synthesis_dispatch: step``); False: seeds
    go to it only at the boundary, through ``__call__``."""

    def __call__(self, seeds: list[Task], epoch: int) -> SynthesisOutcome:
        """The boundary: submit ``seeds`` (may be empty), wait as configured, hand over what has landed."""
        ...

    def submit(self, seeds: list[Task], epoch: int) -> None:
        """Queue one round now and return at once (only called when ``dispatches``)."""
        ...

    def state_dict(self) -> dict[str, Any] | None:
        """Rounds not handed over yet (JSON-serializable), saved in the curriculum's checkpoint; None: nothing."""
        ...

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        """Restore :meth:`state_dict`'s value (resubmitting rounds that were in flight)."""
        ...

    def close(self) -> None:
        """Stop taking rounds; called once when training ends, normally or not. Must not raise."""
        ...


class RoundSynthesizer:
    """A plain :class:`SynthesisRound` as a :class:`Synthesizer`: synchronous, stateless, boundary-only."""

    collects = False
    dispatches = False

    def __init__(self, round_fn: SynthesisRound):
        self.round_fn = round_fn

    def __call__(self, seeds: list[Task], epoch: int) -> SynthesisOutcome:
        return self.round_fn(seeds, epoch)

    def submit(self, seeds: list[Task], epoch: int) -> None:
        raise TypeError("a synchronous round synthesizer takes seeds at the boundary only (dispatches=False)")

    def state_dict(self) -> dict[str, Any] | None:
        return None

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        if state:
            raise ValueError("the checkpoint holds background synthesis rounds, but this synthesizer is synchronous")

    def close(self) -> None:
        return None


def as_synthesizer(obj: Synthesizer | SynthesisRound | None) -> Synthesizer | None:
    """``obj`` itself when it already is a :class:`Synthesizer`, a :class:`RoundSynthesizer` around a plain round."""
    if obj is None or isinstance(obj, Synthesizer):
        return obj  # type: ignore[return-value]
    if not callable(obj):
        raise TypeError(f"a synthesizer must be callable as f(seeds, epoch); got {type(obj).__name__}")
    return RoundSynthesizer(obj)
