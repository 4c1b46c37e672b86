"""Studio: `langgraph dev` serves the graph with typed input and context schemas, runs it, and every
stage shows up in the thread; the server's state goes to its working directory, not the package."""

from __future__ import annotations

import re
import shutil
import socket
import tempfile
import time
from pathlib import Path

import pytest

from rods_cli.studio import ROOT, start_studio


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# seeds whose offline variant 0 (run seed 0) draws a state its plan cannot run on, so the patch agent runs
PATCH_CANDIDATES = ["multi_turn_base_108", "multi_turn_miss_param_66", "multi_turn_long_context_124",
                    "multi_turn_miss_func_148", "multi_turn_miss_param_110"]


def _seed_that_gets_patched() -> str:
    from envs.dataset import load_tasks
    from graphs.synthesis import synthesize

    for seed_id in PATCH_CANDIDATES:
        result = synthesize(load_tasks(ids=[seed_id]), {"seed": 0, "variants_per_seed": 1})
        patched = result.accepted[0].provenance["patches"] if result.accepted else result.rejected[0]["patches"]
        if patched:  # the sample runs the patch agent (accepted or not: the stages are what is checked)
            return seed_id
    pytest.fail(f"none of {PATCH_CANDIDATES} is patched offline")


@pytest.mark.slow
def test_langgraph_dev_runs_the_graph_and_history_shows_every_stage(tmp_path):
    httpx = pytest.importorskip("httpx")
    sdk = pytest.importorskip("langgraph_sdk")
    seed_id = _seed_that_gets_patched()
    port = _free_port()
    log = tmp_path / "studio.log"
    api_dir_existed = (ROOT / ".langgraph_api").exists()
    workdir = Path(tempfile.mkdtemp(prefix="rods-studio-"))  # the server writes .langgraph_api/ here, not in the repo
    proc = start_studio(port, log_path=log, workdir=workdir)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.time() + 120
        while time.time() < deadline:
            m = re.search(r"http://127\.0\.0\.1:(\d+)", log.read_text()) if log.exists() else None
            if m and m.group(1) != str(port):  # langgraph dev silently moves to another port
                url = f"http://127.0.0.1:{m.group(1)}"
            try:
                if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, log.read_text()[-2000:]
            time.sleep(0.5)
        else:
            pytest.fail("langgraph dev did not come up:\n" + log.read_text()[-2000:])
        client = sdk.get_sync_client(url=url)
        # Studio's forms: a non-null input schema with the graph's input fields, a typed context form
        (assistant,) = client.assistants.search(graph_id="synthesis")
        schemas = client.assistants.get_schemas(assistant["assistant_id"])
        assert schemas["input_schema"] is not None, log.read_text()[-2000:]
        assert {"seeds", "seed_ids", "variants_per_seed"} <= set(schemas["input_schema"]["properties"])
        context = schemas.get("context_schema") or {}
        props = context.get("properties", {})
        assert props["backbone"]["enum"] == ["offline", "llm"] and props["variants_per_seed"]["type"] == "integer"
        assert "chat_models" not in props  # the live slot is not a form field
        assert "Failed to get input schema" not in log.read_text()
        thread = client.threads.create()
        stages: set[str] = set()
        inner_updates: dict[str, object] = {}
        for part in client.runs.stream(thread["thread_id"], "synthesis",
                                       input={"seed_ids": [seed_id], "variants_per_seed": 1},
                                       stream_mode=["updates", "custom"], stream_subgraphs=True):
            if part.event.startswith("updates") and isinstance(part.data, dict):
                stages.update(part.data)
                if "|" in part.event:  # an inner node of the per-sample subgraph
                    inner_updates.update(part.data)
            if part.event.startswith("custom") and isinstance(part.data, dict):
                stages.add(part.data.get("stage", ""))
        history = client.threads.get_history(thread["thread_id"], limit=50)
        final = history[0]["values"]
        assert final["report"]["samples"] == 1
        result = final["results"][0]
        assert set(result["timings"]) >= {"profile", "plan", "rewrite", "execute", "patch", "verdict"}
        assert result["patches"]
        assert {"extract_profile", "sample_plan", "rewrite_turns", "execute_plan", "patch_config",
                "judge_variant"} <= stages
        # every inner node's update arrives (it was null for all of them with a narrowed output schema)
        assert all(isinstance(v, dict) and v for v in inner_updates.values()), inner_updates
        assert "trace" in inner_updates["execute_plan"] and "patches" in inner_updates["patch_config"]
        assert {"load_seeds", "synthesize_sample", "collect_results"} <= {n for h in history for n in (h.get("next") or [])} | stages
        assert (ROOT / ".langgraph_api").exists() == api_dir_existed
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except Exception:  # noqa: BLE001
            proc.kill()
            proc.wait(timeout=20)
        wrote_to_workdir = (workdir / ".langgraph_api").exists()
        shutil.rmtree(workdir, ignore_errors=True)
    assert wrote_to_workdir  # its state went to the scratch dir


def test_studio_config_after_a_wheel_install_serves_the_same_graphs(tmp_path, monkeypatch):
    """A wheel has no checkout (no root langgraph.json): `rods studio` writes the same graphs into
    ./.langgraph_api/, so Studio still finds graphs.synthesis:graph."""
    import json

    from rods_cli import studio

    repo = json.loads((studio.ROOT / "langgraph.json").read_text())
    monkeypatch.setattr(studio, "ROOT", tmp_path / "site-packages")
    path = studio.studio_config(tmp_path)
    assert path == tmp_path / ".langgraph_api" / "langgraph.json"
    assert json.loads(path.read_text())["graphs"] == repo["graphs"]
