"""Synthesis overlapped with training: bounded boundary waits, late rounds, failures, resume, preflight."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from envs.dataset import load_split
from rods_cli.train import parse_recipe
from trainer.curriculum import Curriculum
from trainer.synthesis_bridge import (
    BackgroundSynthesizer,
    SynthesisOutcome,
    SynthesisUnavailable,
    background_synthesizer,
    make_synthesizer,
    preflight,
)

RECIPE = Path(__file__).resolve().parents[1] / "recipes" / "tiny-cpu.yaml"


@pytest.fixture(scope="module")
def seeds():
    return [t for t in load_split("train", ["base"]) if t.involved_classes == ["GorillaFileSystem"]][:4]


@pytest.fixture()
def args(tmp_path):
    return parse_recipe(RECIPE, ["--output_dir", str(tmp_path)])


def _variant(task, suffix):
    t = task.model_copy(deep=True)
    t.id = f"{task.id}__rods_{suffix}"
    return t


class SlowSynth:
    """A synthesis round that blocks until released (the LLM server's latency), one variant per seed."""

    def __init__(self):
        self.release = threading.Event()
        self.started = threading.Event()
        self.calls: list[tuple[list[str], int]] = []

    def __call__(self, seeds, epoch):
        self.calls.append(([s.id for s in seeds], epoch))
        self.started.set()
        assert self.release.wait(30), "never released"
        return SynthesisOutcome(seeds=[s.id for s in seeds], accepted=[_variant(s, f"e{epoch}") for s in seeds],
                                attempted=len(seeds))


def _wait_until(cond, timeout=10.0):
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


def _boundary_seeds(cur, seeds, step=1):
    """Record one generation batch in which every seed is a boundary task (rewards 0/1 over K=4)."""
    ids = [s.id for s in seeds for _ in range(4)]
    cur.record(step, ids, [0.0, 1.0, 0.0, 1.0] * len(seeds), 4)
    cur.generations_in_epoch = cur.epoch_generations = 1


def test_boundary_returns_within_the_wait_while_synthesis_continues(seeds, args):
    slow = SlowSynth()
    bg = BackgroundSynthesizer(make_synthesizer(args, slow), wait_s=0.3)
    cur = Curriculum(seeds, args, bg)
    _boundary_seeds(cur, seeds)
    t0 = time.perf_counter()
    rep0 = cur.end_epoch(1)
    took = time.perf_counter() - t0
    assert took < 2.0, f"the boundary waited {took:.1f} s for a blocked synthesis round (bound 0.3 s)"
    assert rep0.seeds and slow.started.is_set()
    assert rep0.synthesized == [] and rep0.injected == [] and sorted(rep0.synthesis_pending) == sorted(rep0.seeds)
    assert rep0.synthesis_wait_seconds >= 0.25

    slow.release.set()  # the round lands during epoch 1 ...
    _wait_until(lambda: not bg.pending_seeds)
    variants = {f"{s}__rods_e0" for s in rep0.seeds}
    rows = {r["task_id"] for r in cur.epoch_rows(2)}
    assert not rows & variants, "a variant that landed mid-epoch entered the running epoch"
    assert not variants & set(cur.buffer.queued_ids())

    _boundary_seeds(cur, seeds, step=2)  # ... and is queued and injected at the next boundary
    rep1 = cur.end_epoch(2)
    assert variants <= set(rep1.synthesized) and rep1.synthesis_rounds >= 1  # (+ this boundary's own fast round)
    assert rep1.injected and set(rep1.injected) <= variants
    assert set(rep1.injected) <= {r["task_id"] for r in cur.epoch_rows(2)}
    bg.close()


def test_wait_for_completion_is_synchronous_and_deterministic(seeds, args):
    slow = SlowSynth()
    slow.release.set()
    cur = Curriculum(seeds, args, BackgroundSynthesizer(make_synthesizer(args, slow), wait_s=None))
    _boundary_seeds(cur, seeds)
    rep = cur.end_epoch(1)
    assert rep.synthesized == [f"{s}__rods_e0" for s in rep.seeds] and not rep.synthesis_pending
    assert rep.injected  # injected at the same boundary, as the synchronous loop did


def test_in_flight_rounds_survive_a_restart(seeds, args):
    slow = SlowSynth()
    bg = BackgroundSynthesizer(make_synthesizer(args, slow), wait_s=0.0)
    cur = Curriculum(seeds, args, bg)
    _boundary_seeds(cur, seeds)
    rep0 = cur.end_epoch(1)
    assert rep0.synthesis_pending
    state = cur.state_dict()  # the checkpoint written at this boundary
    assert [s["id"] for r in state["synthesis"]["rounds"] for s in r["seeds"]] == rep0.synthesis_pending
    bg.close(grace_s=0.0)  # the run is killed: the round never lands (and nothing waits for it)

    fresh = SlowSynth()
    fresh.release.set()
    cur2 = Curriculum(seeds, args)
    cur2.load_state_dict(state, 2)
    bg2 = BackgroundSynthesizer(make_synthesizer(args, fresh), wait_s=None)
    bg2.load_state_dict(cur2.synthesis_state)
    cur2.synthesizer = bg2
    _boundary_seeds(cur2, seeds, step=2)
    rep1 = cur2.end_epoch(2)
    assert fresh.calls[0] == (rep0.synthesis_pending, 0)  # resubmitted with its original epoch (same variant ids)
    assert {f"{s}__rods_e0" for s in rep0.synthesis_pending} <= set(rep1.synthesized)
    slow.release.set()  # the killed run's thread would die with its process: never left running into later tests


def _failing(calls):
    def run(seeds, epoch):
        calls.append(epoch)
        raise ConnectionError("Connection refused")

    return run


def test_failed_rounds_are_loud_and_stop_after_n(seeds, args):
    calls: list[int] = []
    bg = BackgroundSynthesizer(make_synthesizer(args, _failing(calls)), wait_s=None, max_failures=2, on_failure="stop")
    cur = Curriculum(seeds, args, bg)
    _boundary_seeds(cur, seeds)
    rep = cur.end_epoch(1)
    assert rep.synthesis_errors == 1 and "Connection refused" in rep.synthesis_error
    assert rep.metrics()["rods/synthesis_errors"] == 1.0
    _boundary_seeds(cur, seeds, step=2)
    rep1 = cur.end_epoch(2)  # the boundary is finished (and checkpointed by the trainer) before the stop
    assert cur.epoch == 2 and rep1.synthesis_errors == 1
    assert isinstance(cur.stop_error, SynthesisUnavailable) and "2 synthesis rounds failed in a row" in str(cur.stop_error)
    saved = cur.state_dict()["synthesis"]["rounds"]  # the failed round is back in flight: --resume retries it
    assert [r["epoch"] for r in saved] == [1] and all(r["outcome"] is None for r in saved)


def test_failed_rounds_fall_back_to_offline_when_asked(seeds, args, caplog):
    calls: list[int] = []
    args.synthesis_max_failures, args.synthesis_on_failure, args.synthesis_wait_s = 1, "offline", -1
    bg = background_synthesizer(args, make_synthesizer(args, _failing(calls)))
    fallback_calls: list[int] = []

    def offline_fallback():
        def run(seeds, epoch):
            fallback_calls.append(epoch)
            return SynthesisOutcome(seeds=[s.id for s in seeds], accepted=[_variant(s, "off") for s in seeds],
                                    attempted=len(seeds))

        return run

    bg.fallback = offline_fallback
    cur = Curriculum(seeds, args, bg)
    _boundary_seeds(cur, seeds)
    with caplog.at_level("ERROR"):
        rep0 = cur.end_epoch(1)
    assert rep0.synthesis_errors == 1 and any("offline backbone" in r.message for r in caplog.records)
    _boundary_seeds(cur, seeds, step=2)
    rep1 = cur.end_epoch(2)
    assert fallback_calls == [1] and rep1.synthesized and rep1.synthesis_errors == 0


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_preflight_names_the_unreachable_url():
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    with pytest.raises(SynthesisUnavailable, match=url.replace(".", r"\.")):
        preflight(url, timeout=2.0)


def test_a_round_against_a_dead_server_is_an_error_not_an_empty_success(args, seeds, monkeypatch):
    """The graph files unreachable samples as rejections; the round must report an error naming the server."""
    import graphs.synthesis as gs
    from trainer.synthesis_bridge import _graph_synthesizer

    class Result:
        accepted: list = []
        report = {"samples": 2, "rejections_by_reason": {"llm_invalid_output": 2}}  # even when misfiled

    monkeypatch.setattr(gs, "synthesize", lambda s, ctx: Result())
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    args.synthesis_backbone, args.synthesis_model, args.synthesis_base_url = "llm", "m", url
    out = make_synthesizer(args, _graph_synthesizer(args))(seeds[:1], 0)
    assert out.error and url in out.error and out.failed_rounds == 1


def test_train_refuses_an_unreachable_synthesis_server_in_one_line(tmp_path):
    from typer.testing import CliRunner

    from rods_cli.main import app

    url = f"http://127.0.0.1:{_closed_port()}/v1"
    res = CliRunner().invoke(app, ["train", "--config", str(RECIPE), "--output_dir", str(tmp_path / "run"),
                                   "--synthesis_backbone", "llm", "--synthesis_model", "m",
                                   "--synthesis_base_url", url])
    assert res.exit_code == 2, res.output
    errors = [ln for ln in res.output.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and url in errors[0], res.output
    assert not (tmp_path / "run" / "checkpoint-1").exists()


@pytest.mark.slow
def test_a_server_that_dies_mid_run_is_reported_at_the_boundary(seeds, args, tmp_path):
    """The real graph against a closed loopback port: the boundary's report carries the error and the metric."""
    import json

    from trainer.curriculum import LOG_FILE
    from trainer.synthesis_bridge import _graph_synthesizer

    url = f"http://127.0.0.1:{_closed_port()}/v1"
    args.synthesis_backbone, args.synthesis_model, args.synthesis_base_url = "llm", "m", url
    args.variants_per_seed, args.seed_quotas, args.seeds_per_epoch = 1, {"base": 1}, 1
    bg = background_synthesizer(args, make_synthesizer(args, _graph_synthesizer(args)))
    cur = Curriculum(seeds, args, bg, run_dir=tmp_path)
    _boundary_seeds(cur, seeds)
    rep = cur.end_epoch(1)
    cur.append_log(rep)
    assert rep.synthesis_errors == 1 and url in rep.synthesis_error and rep.synthesized == []
    assert rep.metrics()["rods/synthesis_errors"] == 1.0
    logged = json.loads((tmp_path / LOG_FILE).read_text().splitlines()[-1])
    assert url in logged["synthesis_error"]


def test_step_dispatch_submits_seeds_during_the_epoch_and_injects_at_the_boundary(seeds, args):
    """synthesis_dispatch=step: a boundary task found by batch 1 is synthesizing before batch 2 is recorded."""
    args.synthesis_dispatch, args.num_train_epochs = "step", 3
    slow = SlowSynth()
    cur = Curriculum(seeds, args, BackgroundSynthesizer(make_synthesizer(args, slow), wait_s=None))
    first, second = seeds[:2], seeds[2:]
    cur.record(1, [s.id for s in first for _ in range(4)], [0.0, 1.0, 0.0, 1.0] + [1.0] * 4, 4)  # first[0]: boundary
    assert slow.started.wait(10) and slow.calls == [([first[0].id], 0)]  # submitted mid-epoch, not at the boundary
    assert cur.dispatched == [first[0].id]
    cur.record(2, [s.id for s in second for _ in range(4)], [1.0, 0.0, 1.0, 0.0] + [0.0] * 4, 4)  # second[0]
    assert cur.dispatched == [first[0].id, second[0].id]  # quota base: 2, now used up
    cur.record(3, [s.id for s in first for _ in range(4)], [0.0, 1.0, 0.0, 1.0] * 2, 4)
    assert len(cur.dispatched) == 2, "dispatched beyond the epoch's quota"
    assert not {r["task_id"] for r in cur.epoch_rows(2)} & {f"{s.id}__rods_e0" for s in seeds}
    slow.release.set()
    rep = cur.end_epoch(3)
    assert rep.seeds == [first[0].id, second[0].id]
    assert sorted(c[0][0] for c in slow.calls) == sorted(rep.seeds) and len(slow.calls) == 2  # never resubmitted
    assert set(rep.synthesized) == {f"{first[0].id}__rods_e0", f"{second[0].id}__rods_e0"} and rep.injected
    assert cur.dispatched == []


def test_step_dispatch_sends_nothing_during_the_last_epoch(seeds, args):
    args.synthesis_dispatch, args.num_train_epochs = "step", 1
    slow = SlowSynth()
    cur = Curriculum(seeds, args, BackgroundSynthesizer(make_synthesizer(args, slow), wait_s=0.0))
    cur.record(1, [seeds[0].id] * 4, [0.0, 1.0, 0.0, 1.0], 4)
    assert cur.dispatched == [] and slow.calls == []


def test_a_raising_round_never_leaves_the_boundary_waiting(seeds):
    def boom(seeds, epoch):
        raise RuntimeError("bug in a synthesizer")

    bg = BackgroundSynthesizer(boom, wait_s=None, max_failures=0)
    out = bg(seeds[:1], 0)
    assert out.failed_rounds == 1 and "bug in a synthesizer" in out.error and not out.pending


class Gate:
    """Rounds that block until ``n`` of them run at the same time (or a timeout): side by side or not."""

    def __init__(self, n: int):
        self.barrier = threading.Barrier(n)
        self.together = 0

    def __call__(self, seeds, epoch):
        try:
            self.barrier.wait(timeout=3.0)
            self.together += 1
        except threading.BrokenBarrierError:
            pass
        return SynthesisOutcome(seeds=[s.id for s in seeds], accepted=[_variant(s, f"e{epoch}") for s in seeds],
                                attempted=len(seeds))


def test_rounds_run_side_by_side_up_to_the_concurrency_bound(seeds):
    """Three rounds submitted one after another are in flight at once (one worker ran them one by one)."""
    gate = Gate(3)
    bg = BackgroundSynthesizer(gate, wait_s=None, max_samples=8, samples_per_seed=2)  # 3 rounds x 2 samples fit
    for i in range(3):
        bg.submit(seeds[i:i + 1], 0)
    out = bg([], 0)
    assert gate.together == 3 and bg.peak_in_flight == 3, "rounds ran one after another"
    assert [t.id for t in out.accepted] == [f"{s.id}__rods_e0" for s in seeds[:3]]  # handed over in submission order
    assert out.rounds == 3 and not out.pending
    bg.close()

    bounded = BackgroundSynthesizer(Gate(3), wait_s=None, max_samples=4, samples_per_seed=2)  # only 2 rounds fit
    for i in range(3):
        bounded.submit(seeds[i:i + 1], 0)
    bounded([], 0)
    assert bounded.peak_in_flight == 2
    bounded.close()


def test_the_last_boundary_neither_waits_for_nor_queues_synthesis(seeds, args):
    """Variants handed over at the last boundary could never train: it takes none and does not wait."""
    args.num_train_epochs = 2
    slow = SlowSynth()
    slow.release.set()
    bg = BackgroundSynthesizer(make_synthesizer(args, slow), wait_s=None)
    cur = Curriculum(seeds, args, bg)
    _boundary_seeds(cur, seeds)
    rep0 = cur.end_epoch(1, last=False)
    assert rep0.synthesized and not rep0.synthesis_pending
    bg.submit(seeds[2:3], 1)  # a round landing before the last boundary ...
    _wait_until(lambda: not bg.pending_seeds)
    queue_before = list(cur.buffer.queued_ids())
    _boundary_seeds(cur, seeds, step=2)
    t0 = time.perf_counter()
    rep1 = cur.end_epoch(2, last=True)
    assert time.perf_counter() - t0 < 2.0
    assert rep1.synthesized == [] and rep1.synthesis_rounds == 0  # ... is not queued there
    assert f"{seeds[2].id}__rods_e1" not in set(cur.buffer.queued_ids()) | set(cur.buffer.active_ids())
    assert set(rep1.injected) <= set(queue_before)
    bg.close()


@pytest.mark.slow
def test_a_resumed_round_continues_from_its_own_checkpoint(seeds, args, tmp_path, monkeypatch):
    """A round in flight at the checkpoint, killed mid-way: resubmitted, its finished sample is read back and
    its interrupted sample continues after its last node (no stage runs twice); same variants as uninterrupted."""
    import graphs.driver as driver
    import graphs.synthesis as gs
    from trainer.synthesis_bridge import _graph_synthesizer

    args.variants_per_seed, args.synthesis_concurrency, args.synthesis_wait_s = 2, 1, -1
    profiles: list[str] = []
    real_profile = gs.extract_profile

    def counting_profile(state, runtime=None):  # LangGraph passes runtime by the signature it sees
        profiles.append(state["sample_id"])
        return real_profile(state, runtime)

    monkeypatch.setattr(gs, "extract_profile", counting_profile)
    real_run = driver.synthesize_resumable

    class Killed(Exception):
        pass

    def die(n):  # at the first pause of the second sample (the first may execute more than one plan)
        if f"{seeds[0].id}#v1" in profiles:
            raise Killed("the trainer process dies here")

    def killed_mid_round(seeds_, ctx, db, **kw):  # the trainer dies while sample 2 stands after execute_plan
        return real_run(seeds_, ctx, db, interrupt_after="execute_plan", on_interrupt=die, **kw)

    monkeypatch.setattr(driver, "synthesize_resumable", killed_mid_round)
    bg = background_synthesizer(args, make_synthesizer(args, _graph_synthesizer(args)))
    bg.submit(seeds[:1], 0)
    state = bg.state_dict()  # the checkpoint written while the round is in flight
    _wait_until(lambda: bg._rounds[0].outcome is not None, timeout=120)
    bg.close()
    assert profiles == [f"{seeds[0].id}#v0", f"{seeds[0].id}#v1"], "the round was not killed mid-way"

    monkeypatch.setattr(driver, "synthesize_resumable", real_run)
    profiles.clear()
    resumed = background_synthesizer(args, make_synthesizer(args, _graph_synthesizer(args)))
    resumed.load_state_dict(state)
    out = resumed([], 1)
    assert out.rounds == 1 and not out.error and profiles == [], f"the resumed round re-ran {profiles}"

    ref_args = parse_recipe(RECIPE, ["--output_dir", str(tmp_path / "ref"), "--variants_per_seed", "2"])
    reference = make_synthesizer(ref_args, _graph_synthesizer(ref_args))(seeds[:1], 0)
    assert [t.id for t in out.accepted] == [t.id for t in reference.accepted]

    def content(t):  # everything but the wall-clock stage timings
        d = t.model_dump(mode="json")
        d["provenance"].pop("timings", None)
        return d

    assert [content(t) for t in out.accepted] == [content(t) for t in reference.accepted]


def test_close_waits_for_a_stoppable_round_to_hand_back_before_a_resume_in_the_same_process():
    """A killed run's round still writing its store while a run resumed in the same process reads it: the resumed
    trainer run's candidate queue once differed from the uninterrupted run's under load. ``close`` now waits (up to its
    grace) for rounds that can be told to stop; one that cannot be told is not waited for."""
    from trainer.synthesis_bridge import BackgroundSynthesizer

    finished: list[str] = []

    class Round:
        def __init__(self) -> None:
            self.stop = threading.Event()

        def __call__(self, seeds, epoch):
            self.stop.wait(5)
            time.sleep(0.3)  # the node in flight finishes and writes its checkpoint
            finished.append("round")
            return SynthesisOutcome(seeds=[s.id for s in seeds])

    bg = BackgroundSynthesizer(Round(), wait_s=None)
    bg.submit(load_split("train")[:1], 0)
    time.sleep(0.1)
    bg.close()
    assert finished == ["round"], "close returned while the round was still writing"

    plain = BackgroundSynthesizer(lambda seeds, epoch: time.sleep(1.0) or SynthesisOutcome(seeds=[]), wait_s=None)
    plain.submit(load_split("train")[:1], 0)
    t0 = time.perf_counter()
    plain.close()
    assert time.perf_counter() - t0 < 0.5  # nothing tells it to stop: Ctrl-C does not wait for it
