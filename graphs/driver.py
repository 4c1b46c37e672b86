"""The one sample driver: run (seed, variant) samples through the per-sample graph, checkpointed and resumable.

``rods synthesize`` and the trainer's synthesis rounds both run samples through :func:`run_samples`
(or :func:`synthesize_resumable`, which adds de-duplication and the report). The contract:

- **Storage.** One SQLite file (``db_path``) holds LangGraph's checkpoints (``SqliteSaver``, one
  thread per sample, ``thread_id`` = :func:`rods_agents.stages.state.sample_id` = ``'<seed id>#v<n>'``)
  and a ``rods_samples`` table: per finished sample its :class:`~rods_agents.run.outcome.SampleResult`
  (JSON) and its node-by-node updates (zlib-compressed JSON, what ``rods trace`` shows). Checkpoints
  are written with ``durability="sync"``: a hard kill loses at most the node that was running.
- **Bounded.** When a sample finishes, its row is written first, then its checkpoints are deleted
  (``keep_checkpoints=False``, the default); only samples in flight hold checkpoints. With
  ``keep_checkpoints=True`` every checkpoint stays (``get_state_history`` works on every thread).
- **Resume.** Calling again with the same ``db_path``, seeds and ``ctx`` continues: a finished
  sample is read back (its graph does not run again), an unfinished one continues from its last
  checkpoint, a new one starts. Nothing is ever run twice to completion. The caller keeps the
  settings equal (the CLI checks a manifest; a trainer round keys its file by round).
- **Order.** Samples are issued in issue order (seed order, then variant) and ``on_result`` is
  called in that order, from the calling thread, so a caller can de-duplicate and flush outputs
  incrementally. ``ctx.concurrency`` samples run at once on worker threads.
- **Siblings** (:mod:`graphs.lanes`). A sample starts knowing the variants its scenario already
  has (the lane's earlier accepted samples, plus ``known``: tasks published before); the verdict
  refuses a near-copy of one and the graph re-plans. The samples of one scenario run one after
  another in issue order; lanes run side by side. The list is written into the sample's first
  checkpoint, so a resumed sample judges against the same siblings.
- **Stopping.** ``stop`` (a :class:`threading.Event`) is checked between nodes: set, every sample in
  flight stops after its current node (its checkpoint written) and :class:`SamplesStopped` is
  raised, carrying the count finished. A ``KeyboardInterrupt`` in the calling thread sets it, waits
  for the workers the same way, and propagates. Either way a later call resumes.
- **Thread safety.** Each call opens its own connection; two calls on *different* files run side by
  side (the trainer's parallel rounds). Two calls on the same file at once are not supported.

``interrupt_after`` / ``on_interrupt`` are a test hook: the graph pauses after that node (its
checkpoint written) and ``on_interrupt(n)`` is called at the n-th pause, then the sample continues.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envs.task import Task
from graphs.lanes import Siblings, lanes
from graphs.results import Deduper, RunTally, SynthesisResult
from graphs.synthesis import build_sample_graph, warm_caches
from rods_agents.run.context import SynthesisContext
from rods_agents.stages.state import sample_id

SAMPLES_TABLE = "rods_samples"
RECURSION_LIMIT = 200


class SamplesStopped(Exception):  # noqa: N818 - a stop, not an error
    """The run was stopped (``stop`` set, or Ctrl-C) after ``finished`` samples; a later call resumes it."""

    def __init__(self, finished: int, total: int) -> None:
        super().__init__(f"stopped after {finished} of {total} samples")
        self.finished, self.total = finished, total


@dataclass(frozen=True)
class SampleSpec:
    """One (seed, variant) sample and its checkpoint thread."""

    sample_id: str
    seed: Task
    variant: int


def sample_specs(seeds: Sequence[Task], variants_per_seed: int) -> list[SampleSpec]:
    """Every (seed, variant) in issue order."""
    return [SampleSpec(sample_id(s.id, v), s, v) for s in seeds for v in range(variants_per_seed)]


# ----------------------------------------------------------------------------- the store
class SampleStore:
    """The run's SQLite file: LangGraph checkpoints plus a row per finished sample (result, node updates)."""

    def __init__(self, db_path: str | Path) -> None:
        from langgraph.checkpoint.sqlite import SqliteSaver

        self.path = Path(db_path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
        self.saver = SqliteSaver(self.conn)
        self.saver.setup()
        with self.saver.cursor() as cur:
            cur.execute(f"CREATE TABLE IF NOT EXISTS {SAMPLES_TABLE} (thread_id TEXT PRIMARY KEY, result TEXT NOT NULL,"
                        " steps BLOB, finished_at REAL)")

    def close(self) -> None:
        self.conn.close()

    def finished(self, thread_id: str) -> dict | None:
        """The stored result of a finished sample, or None."""
        with self.saver.cursor(transaction=False) as cur:
            row = cur.execute(f"SELECT result FROM {SAMPLES_TABLE} WHERE thread_id = ?", (thread_id,)).fetchone()
        return json.loads(row[0]) if row else None

    def steps(self, thread_id: str) -> list[dict] | None:
        """The node-by-node updates stored for a finished sample, or None."""
        with self.saver.cursor(transaction=False) as cur:
            row = cur.execute(f"SELECT steps FROM {SAMPLES_TABLE} WHERE thread_id = ?", (thread_id,)).fetchone()
        return json.loads(zlib.decompress(row[0])) if row and row[0] else None

    def finished_ids(self) -> list[str]:
        with self.saver.cursor(transaction=False) as cur:
            return [r[0] for r in cur.execute(f"SELECT thread_id FROM {SAMPLES_TABLE} ORDER BY finished_at")]

    def checkpointed_ids(self) -> list[str]:
        with self.saver.cursor(transaction=False) as cur:
            return [r[0] for r in cur.execute("SELECT DISTINCT thread_id FROM checkpoints")]

    def record(self, thread_id: str, result: dict, steps: list[dict], keep_checkpoints: bool) -> None:
        """Store a finished sample, then (unless ``keep_checkpoints``) drop its checkpoints."""
        blob = zlib.compress(json.dumps(steps, default=str).encode(), 6)
        with self.saver.cursor() as cur:
            cur.execute(f"INSERT OR REPLACE INTO {SAMPLES_TABLE} VALUES (?, ?, ?, ?)",
                        (thread_id, json.dumps(result, default=str), blob, time.time()))
        if not keep_checkpoints:
            self.saver.delete_thread(thread_id)


def node_steps(graph: Any, config: dict) -> list[dict]:
    """A thread's history as ``[{step, node, update}]`` in run order: which node ran and what it wrote."""
    steps = []
    for snap in reversed(list(graph.get_state_history(config))):
        for task in snap.tasks:
            if task.name.startswith("__") or task.result is None and not task.error:
                continue
            steps.append({"step": snap.metadata.get("step") if snap.metadata else None, "node": task.name,
                          "update": task.result, **({"error": str(task.error)} if task.error else {})})
    return steps


# ----------------------------------------------------------------------------- the driver
@contextmanager
def _store(db_path: str | Path) -> Iterator[SampleStore]:
    store = SampleStore(db_path)
    try:
        yield store
    finally:
        store.close()


def run_samples(seeds: Sequence[Task], ctx: SynthesisContext, db_path: str | Path, *,
                on_result: Callable[[dict], None] | None = None, on_event: Callable[[dict], None] | None = None,
                keep_checkpoints: bool = False, stop: threading.Event | None = None, known: Sequence[Task] = (),
                interrupt_after: str | None = None, on_interrupt: Callable[[int], None] | None = None) -> list[dict]:
    """Run every (seed, variant) sample of ``seeds`` (module docstring: storage, resume, order, siblings, stopping).

    Returns the samples' results (:class:`~rods_agents.run.outcome.SampleResult` dicts, not yet
    de-duplicated) in issue order; ``on_result`` gets each as soon as it (and all before it) finished;
    ``on_event`` gets the nodes' progress events and ``{'stage': 'done', 'status': 'resumed'}`` for
    a sample read back. Raises :class:`SamplesStopped` when ``stop`` is set.
    """
    specs = sample_specs(seeds, ctx.variants_per_seed)
    stop = stop or threading.Event()
    warm_caches()
    results: list[dict] = []
    with _store(db_path) as store, _quiet_after(stop):
        graph = build_sample_graph().compile(checkpointer=store.saver,
                                             interrupt_after=[interrupt_after] if interrupt_after else None)
        paused = [0]
        pause_lock = threading.Lock()

        siblings = Siblings(known)

        def one(spec: SampleSpec) -> dict | None:
            result = _one(spec)
            if result is not None:
                siblings.add(spec.seed, result)
            return result

        def _one(spec: SampleSpec) -> dict | None:
            done = store.finished(spec.sample_id)
            config = {"configurable": {"thread_id": spec.sample_id}, "recursion_limit": RECURSION_LIMIT}
            if done is not None:
                if not keep_checkpoints and graph.get_state(config).created_at is not None:
                    store.saver.delete_thread(spec.sample_id)  # killed between record and prune
                if on_event:
                    on_event({"sample_id": spec.sample_id, "stage": "done", "status": "resumed"})
                return done
            if stop.is_set():
                return None
            snapshot = graph.get_state(config)
            if snapshot.values.get("results") and not snapshot.next:  # finished under an older driver
                return _finish(store, graph, config, spec, snapshot.values["results"][-1], keep_checkpoints)
            payload = None if snapshot.next else {"sample_id": spec.sample_id, "seed": spec.seed.model_dump(),
                                                  "variant": spec.variant, "siblings": siblings.before(spec.seed)}
            while True:
                # A stop is honoured only at a "checkpoints" event: a node's update is streamed before its
                # superstep is saved, and leaving the stream there would drop that superstep (the sample would
                # then restart from scratch on resume instead of continuing after its last node).
                for mode, event in graph.stream(payload, config, context=ctx, durability="sync",
                                                stream_mode=["custom", "updates", "checkpoints"]):
                    if mode == "custom" and on_event:
                        on_event(event)
                    if mode == "checkpoints" and stop.is_set():
                        return None  # this superstep is saved; the next call continues after it
                state = graph.get_state(config)
                if not state.next:
                    return _finish(store, graph, config, spec, state.values["results"][-1], keep_checkpoints)
                with pause_lock:  # only interrupt_after pauses: stopped after its node, checkpoint written
                    paused[0] += 1
                    n = paused[0]
                if on_interrupt is not None:
                    on_interrupt(n)
                payload = None

        def deliver(r: dict | None) -> None:
            if r is None:
                raise SamplesStopped(len(results), len(specs))
            results.append(r)
            if on_result:
                on_result(r)

        pool = ThreadPoolExecutor(ctx.concurrency) if ctx.concurrency > 1 else None
        try:
            if pool is None:
                for spec in specs:
                    deliver(one(spec))
            else:
                futures = _run_lanes(pool, lanes(specs, lambda spec: spec.seed), one, stop)
                for spec in specs:  # results come back in issue order
                    deliver(futures[spec.sample_id].result())
        except BaseException:
            stop.set()  # Ctrl-C, a stop, or a failing callback: samples in flight stop after their node
            raise
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
        if not keep_checkpoints and not store.checkpointed_ids():
            store.conn.execute("VACUUM")  # give the pruned pages back once nothing is in flight
    return results


def _run_lanes(pool: ThreadPoolExecutor, lanes_: list[list[SampleSpec]],
               one: Callable[[SampleSpec], dict | None], stop: threading.Event) -> dict[str, Future]:
    """Submit each lane to ``pool``; its samples run in order. One future per sample: its result, None once the
    lane stopped, or the exception that ended the lane (given to the rest of the lane too, so no one waits). A
    failing lane sets ``stop``: the other lanes stop after their node instead of running on until the caller
    reaches the failure in issue order."""
    futures = {spec.sample_id: Future() for lane in lanes_ for spec in lane}

    def run(lane: list[SampleSpec]) -> None:
        for i, spec in enumerate(lane):
            try:
                result = one(spec)
            except BaseException as exc:
                stop.set()
                for rest in lane[i:]:
                    futures[rest.sample_id].set_exception(exc)
                return
            futures[spec.sample_id].set_result(result)
            if result is None:  # stopped: the rest of the lane never starts
                for rest in lane[i + 1:]:
                    futures[rest.sample_id].set_result(None)
                return

    for lane in lanes_:
        pool.submit(run, lane)
    return futures


class _AfterStop(logging.Filter):
    """Drops concurrent.futures' 'exception calling callback' records once the run is stopping: a sample stopped at a
    checkpoint leaves LangGraph's stream with a node still running, and that node's done-callback (committing writes
    into the stream it no longer has) fails. Its superstep was never saved, so the resumed sample runs that node
    again; the traceback (printed after Ctrl-C's one-line summary, under load) said nothing a user can act on."""

    def __init__(self, stop: threading.Event) -> None:
        super().__init__()
        self.stop = stop

    def filter(self, record: logging.LogRecord) -> bool:
        return not (self.stop.is_set() and record.getMessage().startswith("exception calling callback"))


@contextmanager
def _quiet_after(stop: threading.Event) -> Iterator[None]:
    logger, quiet = logging.getLogger("concurrent.futures"), _AfterStop(stop)
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)


def _finish(store: SampleStore, graph: Any, config: dict, spec: SampleSpec, result: dict, keep: bool) -> dict:
    store.record(spec.sample_id, result, node_steps(graph, config), keep)
    return result


def synthesize_resumable(seeds: Sequence[Task], ctx: SynthesisContext, db_path: str | Path, *,
                         dedupe: Deduper | None = None, on_result: Callable[[SynthesisResult], None] | None = None,
                         on_event: Callable[[dict], None] | None = None, keep_checkpoints: bool = False,
                         stop: threading.Event | None = None, **hooks: Any) -> SynthesisResult:
    """:func:`run_samples`, de-duplicated in issue order, with the report: what a trainer round needs.

    ``dedupe`` may be pre-loaded with tasks already published (:meth:`Deduper.keep`): they are the samples'
    first siblings too;
    ``on_result(result_so_far)`` is called after every sample (the CLI rewrites its outputs there).
    Same resume and stop contract as :func:`run_samples`.
    """
    tally = RunTally(dedupe)
    start = time.perf_counter()

    def admit(r: dict) -> None:
        tally.admit(r)
        if on_result:
            on_result(tally.result(time.perf_counter() - start))

    run_samples(seeds, ctx, db_path, on_result=admit, on_event=on_event, keep_checkpoints=keep_checkpoints,
                stop=stop, known=tally.dedupe.preloaded_tasks(), **hooks)
    return tally.result(time.perf_counter() - start)


__all__ = ["SampleSpec", "SampleStore", "SamplesStopped", "node_steps", "run_samples", "sample_specs",
           "synthesize_resumable"]
