"""The one sample driver (graphs.driver): bounded checkpoint storage, resume after a stop, node
updates that stream, typed state accessors, and `rods trace` stepping through a run's samples."""

from __future__ import annotations

import re
import sqlite3
import threading

import pytest
from typer.testing import CliRunner

from envs.dataset import load_tasks
from graphs.driver import SamplesStopped, SampleStore, run_samples, synthesize_resumable
from graphs.synthesis import build_sample_graph, graph, synthesize
from rods_agents.stages.state import SynthesisContext, count, items, seed_of, verdict_of
from rods_cli.main import app

SEEDS = ["multi_turn_base_98", "multi_turn_miss_func_17"]  # quick seeds


def _rows(db, sql: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchone()[0]
    finally:
        conn.close()


def test_finished_samples_keep_their_result_and_steps_but_not_their_checkpoints(tmp_path):
    seeds = load_tasks(ids=SEEDS)
    ctx = SynthesisContext(seed=0, variants_per_seed=2)
    pruned = run_samples(seeds, ctx, tmp_path / "pruned.sqlite")
    kept = run_samples(seeds, ctx, tmp_path / "kept.sqlite", keep_checkpoints=True)
    def outcome(rs: list[dict]) -> list[tuple]:
        return [(r["sample_id"], r["accepted"], r["reasons"], (r.get("task") or {}).get("id")) for r in rs]

    assert outcome(pruned) == outcome(kept) and len(pruned) == 4  # pruning changes storage, not results
    assert _rows(tmp_path / "pruned.sqlite", "select count(*) from checkpoints") == 0
    assert _rows(tmp_path / "kept.sqlite", "select count(*) from checkpoints") > 4 * 5
    assert _rows(tmp_path / "pruned.sqlite", "select count(*) from rods_samples") == 4
    # bounded: what stays per sample is far smaller than its checkpoints (measured ~1/20)
    assert (tmp_path / "pruned.sqlite").stat().st_size * 4 < (tmp_path / "kept.sqlite").stat().st_size
    store = SampleStore(tmp_path / "pruned.sqlite")
    try:
        steps = store.steps("multi_turn_base_98#v0")
    finally:
        store.close()
    assert steps[0]["node"] == "extract_profile" and steps[-1]["node"] == "finalize_sample"
    assert "profile" in steps[0]["update"] and steps[-1]["update"]["results"][0]["sample_id"] == "multi_turn_base_98#v0"


@pytest.mark.parametrize("concurrency", [1, 2])
def test_a_stopped_run_resumes_without_running_a_finished_sample_again(tmp_path, concurrency):
    seeds = load_tasks(ids=SEEDS)
    ctx = SynthesisContext(seed=0, variants_per_seed=2, concurrency=concurrency)
    db = tmp_path / "run.sqlite"
    stop = threading.Event()
    first: list[dict] = []

    def on_result(r: dict) -> None:
        first.append(r)
        stop.set()  # as a Ctrl-C would: samples in flight stop after their node

    with pytest.raises(SamplesStopped) as info:
        run_samples(seeds, ctx, db, on_result=on_result, stop=stop)
    assert info.value.finished == len(first) >= 1 and info.value.total == 4
    events: list[dict] = []
    again = synthesize_resumable(seeds, ctx, db, on_event=events.append)
    resumed = [e["sample_id"] for e in events if e.get("status") == "resumed"]
    # results come back in issue order; with 2 workers the "resumed" events of finished samples may interleave
    assert {r["sample_id"] for r in first} <= set(resumed)
    assert not [e for e in events if e["sample_id"] in resumed and e.get("stage") == "profile"]  # not re-run
    fresh = synthesize(seeds, ctx)
    assert [t.id for t in again.accepted] == [t.id for t in fresh.accepted]
    assert again.report["samples"] == 4 and _rows(db, "select count(*) from checkpoints") == 0


def test_a_sample_stopped_mid_run_continues_after_its_last_node(tmp_path):
    """A stop leaves the stream only once a superstep is saved: the stopped sample resumes at its next node
    (before: its update was streamed, the stream closed before the save, and it re-ran from profile)."""
    seeds = load_tasks(ids=SEEDS[:1])
    ctx = SynthesisContext(seed=0, variants_per_seed=2, concurrency=1)
    db, stop = tmp_path / "run.sqlite", threading.Event()
    with pytest.raises(SamplesStopped):
        run_samples(seeds, ctx, db, stop=stop, interrupt_after="execute_plan",
                    on_interrupt=lambda n: stop.set() if n == 2 else None)  # v1 stops after its execution
    events: list[dict] = []
    run_samples(seeds, ctx, db, on_event=events.append)
    v1 = [e["stage"] for e in events if e.get("sample_id") == f"{SEEDS[0]}#v1"]
    # it continues at the verdict on the plan it had executed (a re-plan may follow: v0 is its sibling)
    assert v1 and v1[0] == "verdict" and "profile" not in v1, v1


def test_inner_node_updates_stream_instead_of_null():
    """LangGraph streams only output channels as ``updates``: a narrowed output schema on the per-sample
    graph made every inner node's update ``None`` (Studio, the SDK)."""
    inner: dict[str, object] = {}
    for ns, part in graph.stream({"seed_ids": ["multi_turn_base_98"], "variants_per_seed": 1}, stream_mode="updates",
                                 subgraphs=True):
        if ns:
            inner.update(part)
    assert {"extract_profile", "sample_plan", "rewrite_turns", "execute_plan", "judge_variant"} <= set(inner)
    assert all(isinstance(v, dict) and v for v in inner.values()), inner
    assert "profile" in inner["extract_profile"] and "trace" in inner["execute_plan"]


def test_state_accessors_default_and_validate():
    seed = load_tasks(ids=["multi_turn_base_98"])[0]
    state = {"seed": seed.model_dump(), "plan_attempt": None, "verdict": None}
    assert seed_of(state).id == seed.id and count(state, "plan_attempt") == 0 and count(state, "llm_calls") == 0
    assert items(state, "patches") == [] and verdict_of(state) is None
    with pytest.raises(KeyError, match="'plan'"):
        from rods_agents.stages.state import plan_of

        plan_of(state)


def test_run_graph_and_sample_graph_share_one_result_shape():
    seed = load_tasks(ids=["multi_turn_base_98"])[0]
    out = build_sample_graph().compile().invoke({"sample_id": "multi_turn_base_98#v0", "seed": seed.model_dump(),
                                                 "variant": 0}, context=SynthesisContext())
    via_run = synthesize([seed], {"variants_per_seed": 1})
    mine = out["results"][-1]
    if mine["accepted"]:
        assert [t.id for t in via_run.accepted] == [mine["task"]["id"]]
    else:
        assert [r["reasons"] for r in via_run.rejected] == [mine["reasons"]]


# ----------------------------------------------------------------------------- rods trace
runner = CliRunner()


def test_rods_trace_lists_samples_and_steps_through_one_node_by_node(tmp_path):
    out = tmp_path / "run"
    res = runner.invoke(app, ["synthesize", "--id", "multi_turn_base_98", "--variants_per_seed", "1", "--out", str(out)])
    assert res.exit_code == 0, res.output
    listing = runner.invoke(app, ["trace", str(out)])
    assert listing.exit_code == 0 and re.search(r"multi_turn_base_98#v0\t(accepted|rejected)\t", listing.output)
    shown = runner.invoke(app, ["trace", str(out), "multi_turn_base_98"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    nodes = [line.split()[1] for line in lines if line[:3].strip().isdigit()]
    assert nodes[0] == "extract_profile" and nodes[-1] == "finalize_sample" and "execute_plan" in nodes
    assert any("profile: {" in line for line in lines) and any("verdict: " in line for line in lines)
    step = runner.invoke(app, ["trace", str(out), "multi_turn_base_98#v0", "--step", "1"])
    assert '"node": "extract_profile"' in step.output
    bad = runner.invoke(app, ["trace", str(out), "multi_turn_base_99#v0"])
    assert bad.exit_code == 2 and "did you mean multi_turn_base_98#v0" in bad.output
    assert len([x for x in bad.output.splitlines() if x.strip()]) == 1


def test_rods_trace_shows_a_sample_in_flight_from_its_checkpoints(tmp_path):
    seeds = load_tasks(ids=["multi_turn_base_98"])
    db = tmp_path / "checkpoints.sqlite"

    def die(_n: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_samples(seeds, SynthesisContext(variants_per_seed=1), db, interrupt_after="execute_plan", on_interrupt=die)
    shown = runner.invoke(app, ["trace", str(tmp_path), "multi_turn_base_98#v0"])
    assert shown.exit_code == 0, shown.output
    assert "in flight: resumes at judge_variant" in shown.output and "execute_plan" in shown.output


def test_a_stopping_run_prints_no_traceback_of_the_node_it_left_running(caplog):
    """Ctrl-C under load printed concurrent.futures' 'exception calling callback' traceback after the one-line
    summary (a clean clone's make test): the node a stopped sample left running cannot commit into the stream it
    left. Those records are dropped once the run is stopping, and only then."""
    import logging
    import threading

    from graphs.driver import _quiet_after

    stop, logger = threading.Event(), logging.getLogger("concurrent.futures")
    with caplog.at_level(logging.ERROR, logger="concurrent.futures"), _quiet_after(stop):
        logger.error("exception calling callback for %s", "<Future at 0x1 state=finished returned dict>")
        stop.set()
        logger.error("exception calling callback for %s", "<Future at 0x2 state=finished returned dict>")
        logger.error("something else went wrong")
    assert [r.getMessage()[-33:] for r in caplog.records] == ["0x1 state=finished returned dict>",
                                                              "something else went wrong"[-33:]]
    assert not logger.filters
