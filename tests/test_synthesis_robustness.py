"""A bad seed, a bad config patch or a raising stage rejects one sample; the run goes on.

Also: the one retry helper feeds the refusal reason back to the LLM, and accepted samples are
de-duplicated incrementally in issue order (a published sample is never evicted).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from envs.dataset import load_tasks
from graphs.results import Deduper, dedupe_results, issue_key
from graphs.synthesis import synthesize
from rods_agents.analysis.tracing import CONFIG_ERROR, trace_task
from rods_agents.llm.backbone import LLMBackbone, LLMOutputError
from rods_agents.stages.state import SynthesisContext
from tests.test_synthesis_llm_backbone import ScriptedChatModel, _drafts, _tool

ERROR = {"error": "No such file or directory: x", "call": "cat(file_name='x')", "class": "GorillaFileSystem",
         "kind": "other"}


def _patch_answer(args: dict) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": "ConfigPatchProposal", "args": args, "id": "c1"}])


# ----------------------------------------------------------------------------- item 1: no crash on bad data
def test_a_config_the_environment_cannot_load_is_an_error_record_not_an_exception():
    task = load_tasks(ids=["multi_turn_base_0"])[0]
    task.initial_config["GorillaFileSystem"]["root"]["workspace"]["contents"]["zzz"] = 5
    trace = trace_task(task)
    (record,) = trace.calls
    assert record.error.startswith(CONFIG_ERROR) and record.call == "<initial_config>"


def test_llm_patch_that_breaks_the_environment_is_refused_and_retried_with_the_reason():
    task = load_tasks(ids=["multi_turn_base_0"])[0]
    prompts: list[str] = []
    answers = iter([
        {"cls": "GorillaFileSystem", "path": "root.workspace.contents.zzz", "value": 5},  # Environment() raises
        {"cls": "TwitterAPI", "path": "username", "value": "alice"},                      # loads
    ])

    def script(prompt: str) -> AIMessage:
        prompts.append(prompt)
        return _patch_answer(next(answers))

    model = ScriptedChatModel(messages=iter([]), script=script)
    backbone = LLMBackbone(SynthesisContext(backbone="llm", llm_stages=["patch"], chat_models=[model], models=["m"]))
    patch, config, usage = backbone.propose_patch(task, ERROR, {"sample_id": "s"})
    assert usage.calls == 2 and patch.path == "username" and config["TwitterAPI"]["username"] == "alice"
    assert "does not load" not in prompts[0]
    assert "refused" in prompts[1] and "does not load" in prompts[1]


def test_llm_patch_budget_is_shared_and_the_last_error_is_recorded():
    task = load_tasks(ids=["multi_turn_base_0"])[0]
    model = ScriptedChatModel(messages=iter([]), script=lambda p: _patch_answer({"cls": "Nope", "path": "x", "value": 1}))
    backbone = LLMBackbone(SynthesisContext(backbone="llm", llm_stages=["patch"], chat_models=[model], models=["m"],
                                            llm_retries=5, max_llm_calls_per_sample=6))
    with pytest.raises(LLMOutputError) as info:
        backbone.propose_patch(task, ERROR, {"sample_id": "s", "llm_calls": 4})  # 2 calls left
    assert info.value.calls == 2 == model.calls
    assert "not involved" in info.value.last and info.value.detail("patch")["llm_last_error"] == info.value.last


def test_rewrite_retry_feeds_the_first_error_into_the_second_prompt():
    prompts: list[str] = []

    def script(prompt: str) -> AIMessage:
        prompts.append(prompt)
        drafts = _drafts(prompt)
        if len(prompts) == 1:
            return _tool({"narrative": "x", "turns": drafts[:1] + drafts})  # wrong count
        return _tool({"narrative": "x", "turns": drafts})

    model = ScriptedChatModel(messages=iter([]), script=script)
    ctx = SynthesisContext(seed=0, variants_per_seed=1, backbone="llm", llm_stages=["rewrite"], chat_models=[model],
                           models=["m"], llm_retries=2, max_llm_calls_per_sample=6)
    result = synthesize(load_tasks(ids=["multi_turn_base_0"]), ctx)
    assert len(prompts) >= 2
    first_error = f"expected {len(_drafts(prompts[0]))} turns, got {len(_drafts(prompts[0])) + 1}"
    assert first_error not in prompts[0] and first_error in prompts[1]
    assert result.report["llm_calls"] == model.calls


def test_plan_and_rewrite_rejections_record_the_last_error():
    model = ScriptedChatModel(messages=iter([]), script=lambda p: AIMessage(content=""))
    ctx = SynthesisContext(seed=0, variants_per_seed=1, backbone="llm", llm_stages=["rewrite"], chat_models=[model],
                           models=["m"], llm_retries=1)
    (rej,) = synthesize(load_tasks(ids=["multi_turn_base_0"]), ctx).rejected
    assert rej["reasons"] == ["llm_invalid_output"] and rej["detail"]["stage"] == "rewrite"
    assert rej["detail"]["llm_last_error"] == rej["detail"]["llm_errors"][-1] and rej["llm_calls"] == 2


def test_a_seed_with_a_malformed_initial_config_is_rejected_and_the_run_continues():
    bad, good = load_tasks(ids=["multi_turn_base_0", "multi_turn_base_98"])
    bad = bad.model_copy(deep=True)
    bad.initial_config["GorillaFileSystem"]["root"]["workspace"]["contents"]["zzz"] = 5
    result = synthesize([bad, good], {"seed": 0, "variants_per_seed": 1})
    (rej,) = [r for r in result.rejected if r["seed_id"] == bad.id]
    assert rej["reasons"] == ["seed_invalid_config"] and rej["detail"]["error"].startswith(CONFIG_ERROR)
    # the run continued: the good seed went through the whole pipeline (accepted or judged on its merits)
    assert result.report["samples"] == 2
    assert all(not r["reasons"][0].startswith(("seed_", "pipeline_exception")) for r in result.rejected
               if r["seed_id"] == good.id)


def test_a_stage_that_raises_becomes_a_pipeline_exception_rejection(monkeypatch):
    import graphs.synthesis as gs

    calls = {"n": 0}
    real = gs.execute_plan

    def flaky(state: dict, runtime: Any = None) -> dict:
        calls["n"] += 1
        if state["seed"]["id"] == "multi_turn_base_0":
            raise KeyError("garbage")
        return real(state, runtime)

    monkeypatch.setattr(gs, "execute_plan", flaky)
    graph = gs.build_sample_graph().compile()
    seeds = load_tasks(ids=["multi_turn_base_0", "multi_turn_base_98"])
    results = []
    for seed in seeds:
        out = graph.invoke({"sample_id": f"{seed.id}#v0", "seed": seed.model_dump(), "variant": 0},
                           context=SynthesisContext(), config={"recursion_limit": 200})
        results += out["results"]
    bad, good = results
    assert bad["reasons"] == ["pipeline_exception:KeyError"] and bad["detail"]["stage"] == "execute"
    assert good["accepted"] or not good["reasons"][0].startswith("pipeline_exception")  # judged on its merits
    assert "execute" in good["timings"]


# ----------------------------------------------------------------------------- item 2: incremental dedupe
def _fake_result(task, sid: str, seed_id: str, variant: int) -> dict:
    return {"sample_id": sid, "seed_id": seed_id, "variant": variant, "accepted": True, "reasons": [], "detail": {},
            "task": task.to_bfcl()}


def test_issue_order_compares_variants_and_seed_positions_as_numbers():
    rows = [{"sample_id": f"s#v{v}", "seed_id": "s", "variant": v} for v in (10, 2, 1)]
    assert [r["variant"] for r in sorted(rows, key=issue_key)] == [1, 2, 10]
    idx = {"multi_turn_base_10": 0, "multi_turn_base_9": 1}
    a = {"sample_id": "multi_turn_base_9#v0", "seed_id": "multi_turn_base_9", "variant": 0}
    b = {"sample_id": "multi_turn_base_10#v0", "seed_id": "multi_turn_base_10", "variant": 0}
    assert sorted([a, b], key=lambda r: issue_key(r, idx)) == [b, a]
    assert sorted([b, a], key=issue_key) == [a, b]  # without positions: natural order of ids


def test_a_published_sample_is_never_evicted_by_a_later_near_duplicate():
    task = load_tasks(ids=["multi_turn_base_0"])[0]
    first = task.model_copy(deep=True)
    first.id = "multi_turn_base_0__rods_a"
    twin = first.model_copy(deep=True)
    twin.id = "multi_turn_base_0__rods_b"
    # '#v10' sorts before '#v2' as a string; the sample issued first (v2) must win
    r2, r10 = _fake_result(first, "x#v2", "x", 2), _fake_result(twin, "x#v10", "x", 10)
    accepted, rejected, _ = dedupe_results([r10, r2])
    assert [t.id for t in accepted] == [first.id]
    assert rejected[0]["sample_id"] == "x#v10" and rejected[0]["reasons"] == ["near_duplicate_accepted"]
    # incremental: once kept (e.g. reloaded from accepted.jsonl), a twin arriving later is the one rejected
    d = Deduper()
    d.keep(first)
    kept, r = d.admit(r10)
    assert kept is None and r["detail"]["duplicate_of"] == first.id
    assert r["detail"]["duplicate_why"] == "sibling text 1.00"  # the row says why, so a sibling clash is told apart
    kept, r = d.admit(r2)  # the published sample itself is re-admitted on resume
    assert kept is not None and r["accepted"]


def test_accepted_file_only_grows_across_flushes(tmp_path, monkeypatch):
    import rods_agents.run.outputs as outputs
    from rods_cli.synthesize import run_samples, select_seeds

    snapshots: list[list[str]] = []
    real = outputs.write_outputs

    def spy(out_dir, accepted, rejected, report):
        real(out_dir, accepted, rejected, report)
        snapshots.append([json.loads(line)["id"] for line in (tmp_path / "accepted.jsonl").read_text().splitlines()])

    monkeypatch.setattr(outputs, "write_outputs", spy)
    seeds = select_seeds("train", 4, seed=0)
    ctx = SynthesisContext(seed=0, variants_per_seed=3)
    result = run_samples(seeds, ctx, tmp_path)
    assert len(snapshots) == 4 * 3 + 1
    for before, after in zip(snapshots, snapshots[1:], strict=False):
        assert after[: len(before)] == before  # nothing once published is dropped or reordered
    assert snapshots[-1] == [t.id for t in result.accepted]


def test_near_duplicate_rows_never_touch_input_results():
    task = load_tasks(ids=["multi_turn_base_0"])[0]
    r = _fake_result(task, "x#v0", "x", 0)
    copy_before = copy.deepcopy(r)
    dedupe_results([r, {**r, "sample_id": "x#v1", "variant": 1}])
    assert r == copy_before


def test_llm_backbone_is_cached_per_run_context_and_dies_with_it():
    import gc
    import weakref

    import rods_agents.llm.backbone as lb

    model = ScriptedChatModel(messages=iter([]), script=lambda p: AIMessage(content=""))
    ctx = SynthesisContext(backbone="llm", llm_stages=["rewrite"], chat_models=[model], models=["m"])

    class _Rt:
        context = ctx

    first = lb.stage_backbone(_Rt(), "rewrite")
    assert first is lb.stage_backbone(_Rt(), "rewrite") and lb.stage_backbone(_Rt(), "plan") is None
    assert not hasattr(lb, "_CACHE")  # no module-level registry
    ref = weakref.ref(first)
    del first, _Rt, ctx
    gc.collect()
    assert ref() is None
