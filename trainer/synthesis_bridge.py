"""Calls the synthesis graph from the trainer: preflight, background rounds, bounded boundary waits.

The graph (``graphs.synthesis``) owns every synthesis decision; the trainer only hands it the
boundary seeds and gets accepted tasks back. The backbone is ``offline`` (no LLM, deterministic) or
``llm`` (an OpenAI-compatible server, e.g. a vLLM instance serving the synthesis model on its own
GPUs, as in the paper) for the stages in ``synthesis_llm_stages``.

**Overlap (why background rounds).** A synthesis round against an LLM takes minutes; run inside
the epoch-end callback it idles every GPU, and every other rank waits in a broadcast bounded by the
process-group timeout. :class:`BackgroundSynthesizer` runs rounds on daemon threads of rank 0, side
by side (their samples together bounded by ``synthesis_concurrency``): the epoch boundary submits the
seeds detection chose (or step dispatch submitted them during the epoch), waits at most
``synthesis_wait_s`` for rounds in flight, hands over whatever has landed in submission order (those
variants enter the candidate queue now and train from the next boundary's injection on, never
mid-epoch), and returns; late rounds land at a later boundary. The last boundary does not collect:
a variant handed over then could never train. ``synthesis_wait_s: -1`` waits for every round
(synchronous and deterministic: the CPU tests). Only the boundary's outcome is broadcast
(:func:`on_main_process`).

**Failures are loud.** A round that raises, or whose samples all failed to reach the server, is a
failed round: logged as an error, counted in ``rods/synthesis_errors``, written to
``curriculum.jsonl`` (``synthesis_error``). After ``synthesis_max_failures`` failed rounds in a row
the run stops (``synthesis_on_failure: stop``: :class:`SynthesisUnavailable` carries the boundary's
outcome, the curriculum finishes the boundary, the trainer writes its checkpoint and only then stops,
with the failed rounds back in flight) or switches to the offline backbone with an error line
(``offline``). :func:`preflight` refuses to start against an unreachable server.

**Resume.** Each round is one LangGraph run of the sample driver (``graphs.driver``, shared with
``rods synthesize``) on its own checkpoint file (:func:`round_db`). :meth:`BackgroundSynthesizer.state_dict`
(saved with the curriculum in every checkpoint) holds the rounds still in flight and results not yet
handed over; loading resubmits the former onto the same files, so finished samples are read back and
interrupted ones continue after their last node: a killed run loses no round and redoes no sample.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, PrivateAttr

from envs.task import Task

log = logging.getLogger(__name__)
ROUNDS_DIR = "synthesis"
"""Where each synthesis round keeps its LangGraph checkpoint file, under the run's output_dir (rank 0)."""
UNREACHABLE_REASON = "llm_unreachable"
"""The graph's rejection kind for a sample whose LLM endpoint could not be reached (rods_agents.run.outcome)."""


class SynthesisOutcome(BaseModel):
    """What one boundary's synthesis returned (the trainer logs these as ``rods/synthesis_*``)."""

    seeds: list[str]
    accepted: list[Task] = Field(default_factory=list)
    attempted: int = Field(0, description="Variants attempted (seeds x variants per seed when unknown).")
    seconds: float = Field(0.0, description="Synthesis time of the rounds handed over (mostly overlapped).")
    error: str | None = None
    rounds: int = Field(1, description="Synthesis rounds handed over at this boundary.")
    failed_rounds: int = Field(0, description="Of those, rounds that failed (exception or unreachable server).")
    unreachable: int = Field(0, description="Samples rejected because the LLM endpoint could not be reached.")
    pending: list[str] = Field(default_factory=list, description="Seed ids of rounds still in flight afterwards.")
    waited_s: float = Field(0.0, description="Seconds the boundary waited for synthesis.")

    @property
    def acceptance(self) -> float:
        return len(self.accepted) / self.attempted if self.attempted else 0.0


Synthesizer = Callable[[list[Task], int], SynthesisOutcome]
"""One round ``f(seeds, epoch) -> SynthesisOutcome`` (``trainer.protocols.SynthesisRound``; the name is kept for
callers of the earlier API)."""


class SynthesisUnavailable(ConnectionError):
    """The synthesis server is unreachable (at start, or for too many rounds in a row).

    Raised at a boundary, it carries that boundary's ``outcome`` (what landed before the failures):
    the curriculum finishes the boundary with it, the checkpoint is written, then the run stops."""

    outcome: SynthesisOutcome | None = None


# ---------------------------------------------------------------------------------------------- settings
def backbone_of(args: Any) -> str:
    """``offline`` or ``llm`` (``openai`` is the deprecated spelling of ``llm``)."""
    b = getattr(args, "synthesis_backbone", "offline")
    return "llm" if b in ("llm", "openai") else b


def graph_context(args: Any, epoch: int) -> Any:
    """The graph's ``SynthesisContext`` from the RODS config.

    ``seed`` changes every epoch (it names the variants), so a seed chosen again later grows new
    variants instead of colliding with the ids of earlier ones. With the ``llm`` backbone the LLM
    takes over ``synthesis_llm_stages`` (default: every stage); ``concurrency`` bounds the samples
    (seed x variant) in flight.
    """
    from rods_agents.stages.state import SynthesisContext

    kwargs: dict[str, Any] = {
        "seed": args.seed * 100_003 + epoch, "variants_per_seed": args.variants_per_seed,
        "concurrency": args.synthesis_concurrency, "temperature": args.synthesis_temperature,
        "backbone": backbone_of(args),
    }
    if kwargs["backbone"] == "llm":
        if not args.synthesis_model:
            raise ValueError("synthesis_backbone=llm needs synthesis_model")
        kwargs["models"] = [args.synthesis_model]
        kwargs["base_url"] = args.synthesis_base_url
        stages = getattr(args, "synthesis_llm_stages", None)
        if stages:
            kwargs["llm_stages"] = list(stages)
    return SynthesisContext(**kwargs)


def preflight(base_url: str | None, timeout: float = 10.0, api_key: str | None = None) -> None:
    """One GET ``{base_url}/models`` (``rods_agents.llm.client.preflight``, no retries);
    :class:`SynthesisUnavailable` naming the URL when the synthesis server cannot be reached."""
    from rods_agents.llm.client import EndpointUnreachable
    from rods_agents.llm.client import preflight as endpoint_preflight

    try:
        endpoint_preflight(base_url, api_key, timeout)
    except EndpointUnreachable as exc:
        raise SynthesisUnavailable(f"synthesis server: {exc}; start it or pass --synthesis_backbone offline") from None


def check_synthesis_endpoint(args: Any) -> None:
    """Preflight the synthesis server of an ``llm``-backbone run (a no-op otherwise)."""
    if getattr(args, "mode", "rods") != "static" and backbone_of(args) == "llm":
        preflight(args.synthesis_base_url, timeout=float(getattr(args, "synthesis_preflight_timeout_s", 10.0)))


# ---------------------------------------------------------------------------------------------- one round
def round_db(args: Any, seeds: list[Task], epoch: int) -> Path:
    """The round's own checkpoint file: ``RUN_DIR/synthesis/round-e<epoch>-<digest>.sqlite``.

    Keyed by what defines its samples (epoch, seed ids, variants per seed, backbone, models, stages),
    so a resumed trainer that resubmits a saved round finds its file, and a round with other settings
    never continues someone else's samples."""
    ctx = graph_context(args, epoch)
    key = json.dumps([epoch, [s.id for s in seeds], ctx.variants_per_seed, ctx.seed, ctx.backbone,
                      list(getattr(ctx, "models", []) or []), sorted(getattr(ctx, "llm_stages", []) or [])])
    digest = hashlib.sha1(key.encode()).hexdigest()[:12]
    return Path(args.output_dir) / ROUNDS_DIR / f"round-e{epoch}-{digest}.sqlite"


class _GraphRound:
    """One round = one LangGraph run of the sample driver (``graphs.driver``) on the round's own checkpoint file.

    A round resubmitted after a restart calls the driver again on the same file: samples that finished
    are read back, samples in flight continue from their last node, none runs twice. ``stop`` (set by
    :meth:`BackgroundSynthesizer.close`) makes the samples in flight stop after their current node."""

    def __init__(self, args: Any):
        self.args = args
        self.stop = threading.Event()

    def __call__(self, seeds: list[Task], epoch: int) -> SynthesisOutcome:
        from graphs.driver import SamplesStopped, synthesize_resumable

        args = self.args
        start = time.perf_counter()
        try:
            result = synthesize_resumable(seeds, graph_context(args, epoch), round_db(args, seeds, epoch),
                                          stop=self.stop)
        except SamplesStopped as exc:  # closed while running: the file holds its progress for --resume
            return SynthesisOutcome(seeds=[s.id for s in seeds], seconds=time.perf_counter() - start,
                                    error=f"stopped ({exc}); resumes from its checkpoint")
        report = result.report
        attempted = int(report.get("samples", len(seeds) * args.variants_per_seed))
        unreachable = int((report.get("rejections_by_reason") or {}).get(UNREACHABLE_REASON, 0))
        out = SynthesisOutcome(seeds=[s.id for s in seeds], accepted=list(result.accepted), attempted=attempted,
                               seconds=time.perf_counter() - start, unreachable=unreachable)
        if not out.accepted and backbone_of(args) == "llm":
            reason = f"{unreachable} of {attempted} samples could not reach the server" if unreachable else None
            if reason is None:  # a graph that files transport errors elsewhere: ask the server directly
                try:
                    preflight(args.synthesis_base_url, timeout=5.0)
                except SynthesisUnavailable as exc:
                    reason = str(exc)
            if reason:
                out.error = f"synthesis server {args.synthesis_base_url}: {reason}"
        return out


def _graph_synthesizer(args: Any) -> _GraphRound:
    """The real graph, one checkpointed LangGraph run per round (:class:`_GraphRound`)."""
    return _GraphRound(args)


def make_synthesizer(args: Any, override: Synthesizer | None = None) -> Synthesizer:
    """One synchronous round ``f(seeds, epoch)``; never raises (errors are logged and reported)."""
    inner = override or _graph_synthesizer(args)

    def guarded(seeds: list[Task], epoch: int) -> SynthesisOutcome:
        if not seeds:
            return SynthesisOutcome(seeds=[], rounds=0)
        start = time.perf_counter()
        try:
            out = inner(seeds, epoch)
        except Exception as exc:  # noqa: BLE001 - a failed synthesis round must not end training by itself
            log.exception("synthesis failed for %d seeds", len(seeds))
            out = SynthesisOutcome(seeds=[s.id for s in seeds], attempted=len(seeds) * args.variants_per_seed,
                                   seconds=time.perf_counter() - start, error=f"{type(exc).__name__}: {exc}")
        if out.error:
            out.failed_rounds = 1
        return out

    guarded.stop = getattr(inner, "stop", None)  # type: ignore[attr-defined]
    return guarded


# ---------------------------------------------------------------------------------------------- background
class _Round(BaseModel):
    epoch: int
    seeds: list[Task]
    outcome: SynthesisOutcome | None = None
    _running: bool = PrivateAttr(False)


class BackgroundSynthesizer:
    """Synthesis rounds on daemon threads, side by side; the epoch boundary collects what has landed.

    Call it like a :data:`Synthesizer` at every boundary (also with no seeds: earlier rounds may
    have landed). ``wait_s=None`` waits for every round; otherwise at most ``wait_s`` seconds.

    **Side by side.** A round starts as soon as its samples (seeds x ``samples_per_seed``) fit under
    ``max_samples`` together with the samples of the rounds already running (the recipe's
    ``synthesis_concurrency``, the same bound the graph puts on one round); one round always runs,
    however large. With step dispatch every generation batch submits a small round, so an LLM
    round of minutes no longer holds back the rounds submitted after it. Rounds start and are
    handed over in submission order.
    """

    collects = True
    """The curriculum calls it at every boundary, seeds or not (identically on every rank)."""
    dispatches = True
    """It takes seeds during the epoch (:meth:`submit`, step dispatch)."""

    def __init__(self, round_fn: Synthesizer, wait_s: float | None, *, max_failures: int = 3,
                 on_failure: str = "stop", fallback: Callable[[], Synthesizer] | None = None, label: str = "synthesis",
                 max_samples: int = 0, samples_per_seed: int = 1):
        self.round_fn = round_fn
        self.wait_s = wait_s
        self.max_failures = max_failures
        self.on_failure = on_failure
        self.fallback = fallback
        self.label = label
        self.max_samples = max(0, int(max_samples))
        """Samples in flight across rounds (0: no bound)."""
        self.samples_per_seed = max(1, int(samples_per_seed))
        self.consecutive_failures = 0
        self.peak_in_flight = 0
        """Most rounds that ran at once (the overlap benchmark reports it)."""
        self._rounds: list[_Round] = []  # submitted, not yet handed over (in order)
        self._cv = threading.Condition()
        self._closed = False

    # -------------------------------------------------------------- workers
    def _size(self, r: _Round) -> int:
        return len(r.seeds) * self.samples_per_seed

    def _start_admissible(self) -> None:
        """Start every waiting round that fits under ``max_samples`` (oldest first; caller holds the lock)."""
        if self._closed:
            return
        running = [r for r in self._rounds if r._running and r.outcome is None]
        busy = sum(self._size(r) for r in running)
        for r in self._rounds:
            if r.outcome is not None or r._running:
                continue
            if running and self.max_samples and busy + self._size(r) > self.max_samples:
                break  # in submission order: a later small round does not overtake an earlier large one
            r._running = True
            running.append(r)
            busy += self._size(r)
            threading.Thread(target=self._work, args=(r,), name=f"rods-synthesis-e{r.epoch}", daemon=True).start()
        self.peak_in_flight = max(self.peak_in_flight, len(running))

    def _work(self, r: _Round) -> None:
        try:
            out = self.round_fn(r.seeds, r.epoch)  # make_synthesizer's rounds do not raise; others might
        except Exception as exc:  # noqa: BLE001 - the worker must hand a result back, or the boundary waits
            out = SynthesisOutcome(seeds=[s.id for s in r.seeds], error=f"{type(exc).__name__}: {exc}",
                                   failed_rounds=1)
        with self._cv:
            r.outcome = out
            r._running = False
            self._start_admissible()
            self._cv.notify_all()

    def submit(self, seeds: list[Task], epoch: int) -> None:
        """Queue one round (returns at once)."""
        if not seeds:
            return
        with self._cv:
            self._rounds.append(_Round(epoch=epoch, seeds=list(seeds)))
            self._start_admissible()
            self._cv.notify_all()

    # -------------------------------------------------------------- boundary
    def __call__(self, seeds: list[Task], epoch: int) -> SynthesisOutcome:
        """Submit ``seeds``, wait (bounded) and hand over every round that has landed, oldest first."""
        self.submit(seeds, epoch)
        start = time.perf_counter()
        deadline = None if self.wait_s is None else start + max(0.0, self.wait_s)
        with self._cv:
            while any(r.outcome is None and (r._running or not self._closed) for r in self._rounds):
                left = None if deadline is None else deadline - time.perf_counter()
                if left is not None and left <= 0:
                    break
                self._cv.wait(timeout=left)
            done = [r for r in self._rounds if r.outcome is not None]
            self._rounds = [r for r in self._rounds if r.outcome is None]
            pending = [s.id for r in self._rounds for s in r.seeds]
        merged = self._merge([r.outcome for r in done if r.outcome is not None], [s.id for s in seeds], pending,
                             time.perf_counter() - start)
        if pending:
            log.info("%s: %d round(s) still in flight (%d seeds); they land at a later boundary",
                     self.label, len(self._rounds), len(pending))
        try:
            self._account(done)
        except SynthesisUnavailable as exc:  # the boundary still takes what landed, then checkpoints and stops
            merged.pending = self.pending_seeds
            exc.outcome = merged  # type: ignore[attr-defined]
            raise
        return merged

    @staticmethod
    def _merge(outcomes: list[SynthesisOutcome], seeds: list[str], pending: list[str], waited: float) -> SynthesisOutcome:
        errors = [o.error for o in outcomes if o.error]
        return SynthesisOutcome(
            seeds=seeds, accepted=[t for o in outcomes for t in o.accepted], attempted=sum(o.attempted for o in outcomes),
            seconds=sum(o.seconds for o in outcomes), error="; ".join(errors) if errors else None,
            rounds=len(outcomes), failed_rounds=sum(o.failed_rounds or bool(o.error) for o in outcomes),
            unreachable=sum(o.unreachable for o in outcomes), pending=pending, waited_s=waited,
        )

    def _account(self, rounds: list[_Round]) -> None:
        """Consecutive failed rounds, in submission order; act at ``max_failures``."""
        failed: list[_Round] = []
        for r in rounds:
            o = r.outcome
            if o is None or not o.error:
                self.consecutive_failures = 0
                failed = []
                continue
            self.consecutive_failures += 1
            failed.append(r)
            log.error("%s round failed (%d in a row): %s", self.label, self.consecutive_failures, o.error)
            if self.max_failures and self.consecutive_failures >= self.max_failures:
                self._give_up(o.error, failed)
                failed = []

    def _give_up(self, error: str, failed: list[_Round]) -> None:
        msg = f"{self.label}: {self.consecutive_failures} synthesis rounds failed in a row (last: {error})"
        if self.on_failure == "offline" and self.fallback is not None:
            log.error("%s; switching to the offline backbone for the rest of the run", msg)
            self.round_fn = self.fallback()
            self.label = f"{self.label} (offline fallback)"
            self.consecutive_failures = 0
            return
        with self._cv:  # the failed rounds of this run of failures go back in flight: saved, retried on --resume
            self._closed = True
            for r in reversed(failed):
                r.outcome = None
                self._rounds.insert(0, r)
        raise SynthesisUnavailable(f"{msg}; stopping after this boundary's checkpoint (--resume retries the "
                                   f"{len(failed)} failed round(s); set synthesis_on_failure: offline to continue "
                                   "with the offline backbone instead)")

    # -------------------------------------------------------------- state
    def state_dict(self) -> dict[str, Any]:
        """Rounds not handed over yet: in flight (resubmitted on load) or landed (handed over next)."""
        with self._cv:
            return {"rounds": [r.model_dump(mode="json", include={"epoch", "seeds", "outcome"}) for r in self._rounds]}

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        with self._cv:
            for raw in (state or {}).get("rounds", []):
                self._rounds.append(_Round.model_validate(raw))
            self._start_admissible()  # each continues from its own graph checkpoint (_graph_synthesizer)
            self._cv.notify_all()
        if self._rounds:
            log.warning("%s: resumed %d round(s) from the checkpoint (%d still to run)", self.label,
                        len(self._rounds), sum(r.outcome is None for r in self._rounds))

    @property
    def pending_seeds(self) -> list[str]:
        with self._cv:
            return [s.id for r in self._rounds if r.outcome is None for s in r.seeds]

    def close(self, grace_s: float = 10.0) -> None:
        """Stop taking rounds; rounds running stop after their current graph node (checkpoint written, so a
        resumed run continues them). Where the rounds can be told to stop, waits up to ``grace_s`` for them to
        hand back: a run resumed in the same process (a notebook, the tests) must not find a killed run's round
        still writing the store it resumes from (the resumed trainer run's queue once differed from the
        uninterrupted run's under load)."""
        stop = getattr(self.round_fn, "stop", None)
        if isinstance(stop, threading.Event):
            stop.set()
        deadline = time.perf_counter() + (grace_s if isinstance(stop, threading.Event) else 0.0)
        with self._cv:
            self._closed = True
            self._cv.notify_all()
            while any(r._running for r in self._rounds) and (left := deadline - time.perf_counter()) > 0:
                self._cv.wait(timeout=left)


def background_synthesizer(args: Any, round_fn: Synthesizer) -> BackgroundSynthesizer:
    """The trainer's synthesizer from the config's ``synthesis_*`` settings."""
    wait = getattr(args, "synthesis_wait_s", -1.0)
    wait_s = None if wait is None or wait < 0 else float(wait)

    def offline() -> Synthesizer:
        import copy

        off = copy.copy(args)
        off.synthesis_backbone = "offline"
        return make_synthesizer(off)

    return BackgroundSynthesizer(round_fn, wait_s, max_failures=int(getattr(args, "synthesis_max_failures", 3)),
                                 on_failure=str(getattr(args, "synthesis_on_failure", "stop")), fallback=offline,
                                 label=f"synthesis ({backbone_of(args)})",
                                 max_samples=int(getattr(args, "synthesis_concurrency", 0) or 0),
                                 samples_per_seed=int(getattr(args, "variants_per_seed", 1) or 1))


# ---------------------------------------------------------------------------------------------- ranks
class on_main_process:  # noqa: N801 - used like a function
    """Synthesize on rank 0 only and broadcast the boundary's outcome (or its error) to every rank.

    An LLM backbone is not deterministic and every rank must queue the same variants; the other
    ranks wait in the broadcast only as long as rank 0's bounded boundary wait.
    """

    collects = True
    dispatches = True

    def __init__(self, synth: BackgroundSynthesizer, accelerator: Any):
        self.synth = synth
        self.accelerator = accelerator

    def __call__(self, seeds: list[Task], epoch: int) -> SynthesisOutcome:
        if self.accelerator.num_processes == 1:
            return self.synth(seeds, epoch)
        from accelerate.utils import broadcast_object_list

        box: list[Any] = [None]
        if self.accelerator.is_main_process:
            try:
                box = [self.synth(seeds, epoch)]
            except SynthesisUnavailable as exc:
                box = [exc]
        broadcast_object_list(box, from_process=0)
        if isinstance(box[0], BaseException):
            raise box[0]
        return box[0]

    def submit(self, seeds: list[Task], epoch: int) -> None:
        """Step dispatch: every rank makes the same choice; only rank 0 synthesizes (no collective here)."""
        if self.accelerator.is_main_process:
            self.synth.submit(seeds, epoch)

    def state_dict(self) -> dict[str, Any] | None:
        return self.synth.state_dict() if self.accelerator.is_main_process else None

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        if self.accelerator.is_main_process:
            self.synth.load_state_dict(state)

    @property
    def pending_seeds(self) -> list[str]:
        return self.synth.pending_seeds if self.accelerator.is_main_process else []

    def close(self) -> None:
        self.synth.close()


def for_training(args: Any, round_fn: Synthesizer, accelerator: Any, saved: dict[str, Any] | None = None) -> on_main_process:
    """The curriculum's synthesizer: background rounds (rank 0), the outcome broadcast, saved rounds resumed."""
    synth = on_main_process(background_synthesizer(args, round_fn), accelerator)
    if accelerator.num_processes > 1 and getattr(args, "synthesis_wait_s", -1) < 0:
        log.warning("synthesis_wait_s=-1 with %d processes: a synthesis round longer than ddp_timeout (%s s) "
                    "aborts every rank; set synthesis_wait_s (e.g. 60)", accelerator.num_processes,
                    getattr(args, "ddp_timeout", "?"))
    synth.load_state_dict(saved)
    return synth
