"""Task <-> BFCL entry format: lossless round trips and clear errors for bad files."""

from __future__ import annotations

import ast
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envs.bfcl_data import CATEGORIES, raw_answers, raw_entries
from envs.task import REVEAL_MESSAGE, Task, TaskFileError, category_of, read_tasks, write_tasks

KEPT = ("id", "question", "initial_config", "involved_classes", "missed_function")


def test_from_bfcl_to_bfcl_round_trips_all_800():
    n = 0
    for category in CATEGORIES:
        for entry, answer in zip(raw_entries(category), raw_answers(category), strict=True):
            task = Task.from_bfcl(entry, answer["ground_truth"])
            out = task.to_bfcl()
            assert {k: entry[k] for k in KEPT if k in entry} == {k: out[k] for k in KEPT if k in out}, entry["id"]
            assert out["ground_truth"] == answer["ground_truth"]
            assert set(out) <= set(KEPT) | {"ground_truth"}  # path / excluded_function are unused metadata
            assert Task.from_bfcl(out) == task
            assert (task.category, task.scenario, task.long_context) == (
                category, int(entry["id"].rsplit("_", 1)[1]), category == "long_context")
            n += 1
    assert n == 800


def test_jsonl_file_round_trip(tmp_path, bfcl_tasks):
    path = tmp_path / "sub" / "tasks.jsonl"
    write_tasks(path, bfcl_tasks)
    assert read_tasks(path) == bfcl_tasks
    lines = path.read_text().splitlines()
    assert len(lines) == 800 and json.loads(lines[0])["id"] == bfcl_tasks[0].id
    assert [p.name for p in path.parent.iterdir()] == ["tasks.jsonl"]  # no temp files left


def test_task_properties(bfcl_tasks):
    by_id = {t.id: t for t in bfcl_tasks}
    base, miss = by_id["multi_turn_base_0"], by_id["multi_turn_miss_func_0"]
    assert base.scored_turns == [t for t, gt in enumerate(base.ground_truth) if gt]
    assert base.user_messages(0) == [m.model_dump() for m in base.turns[0]]
    (reveal, names), = miss.missed_function.items()
    assert miss.turns[reveal] == [] and miss.user_messages(reveal) == [{"role": "user", "content": REVEAL_MESSAGE}]
    assert sum(len(t.scored_turns) for t in bfcl_tasks) == 2924  # spec §1.3


@settings(max_examples=30, deadline=None)
@given(suffix=st.text("0123456789abcdef", min_size=8, max_size=8),
       provenance=st.none() | st.dictionaries(st.text(max_size=5), st.recursive(
           st.none() | st.booleans() | st.integers() | st.text(max_size=5),
           lambda x: st.lists(x, max_size=3) | st.dictionaries(st.text(max_size=3), x, max_size=3), max_leaves=5),
           max_size=3))
def test_synthesized_tasks_round_trip(suffix, provenance):
    seed = Task.from_bfcl(raw_entries("miss_func")[12], raw_answers("miss_func")[12]["ground_truth"])
    task = seed.model_copy(update={"id": f"{seed.id}__rods_{suffix}", "provenance": provenance})
    assert category_of(task.id) == "miss_func"
    with tempfile.TemporaryDirectory() as folder:  # one per example, removed at once
        path = Path(folder) / "t.jsonl"
        write_tasks(path, [task])
        (back,) = read_tasks(path)
    assert back == task and back.scenario == 12 and back.category == "miss_func"


def test_ids_outside_bfcl_naming_keep_category_and_scenario(tmp_path, bfcl_tasks):
    task = bfcl_tasks[0].model_copy(update={"id": "custom-task"})
    out = task.to_bfcl()
    assert (out["category"], out["scenario"]) == ("base", 0)
    path = tmp_path / "t.jsonl"
    write_tasks(path, [task])
    assert read_tasks(path) == [task]


def _line(task: Task, **change) -> str:
    entry = task.to_bfcl()
    entry.update(change)
    return json.dumps(entry)


@pytest.mark.parametrize(("bad_line", "needle"), [
    ("{not json", "malformed JSON"),
    ("[1, 2]", "expected a JSON object"),
    ("GOOD:ground_truth=DROP", "has no ground_truth"),
    ("GOOD:involved_classes=['NoSuchAPI']", "unknown environment class 'NoSuchAPI'"),
    ("GOOD:involved_classes=['no_such_pkg.crm:CrmAPI']", "cannot import no_such_pkg.crm"),
    ("GOOD:missed_function={'1': ['no_such_tool']}", "no involved class defines"),
    ("GOOD:ground_truth=[[]]", "ground-truth turns"),
    ("GOOD:missed_function={'99': ['ls']}", "out of range"),
    ("GOOD:question=7", "turns"),
])
def test_malformed_files_name_file_and_line(tmp_path, bfcl_tasks, bad_line, needle):
    good = bfcl_tasks[0]
    if bad_line.startswith("GOOD:"):
        key, value = bad_line[5:].split("=", 1)
        entry = good.to_bfcl()
        if value == "DROP":
            del entry[key]
        else:
            entry[key] = ast.literal_eval(value)
        bad_line = json.dumps(entry)
    path = tmp_path / "bad.jsonl"
    path.write_text(_line(good) + "\n\n" + bad_line + "\n" + _line(good) + "\n")
    with pytest.raises(TaskFileError) as info:
        read_tasks(path)
    message = str(info.value)
    assert message.startswith(f"{path}:3: ") and needle in message, message


def test_missing_file_is_named(tmp_path):
    with pytest.raises(TaskFileError, match="no such file"):
        read_tasks(tmp_path / "nope.jsonl")


def test_failed_write_leaves_the_old_file(tmp_path, bfcl_tasks):
    path = tmp_path / "tasks.jsonl"
    write_tasks(path, bfcl_tasks[:2])
    before = path.read_bytes()
    broken = bfcl_tasks[2].model_copy(update={"provenance": {"x": {1, 2}}})  # a set is not JSON
    with pytest.raises(TypeError):
        write_tasks(path, [bfcl_tasks[0], broken])
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["tasks.jsonl"]


def test_listing_rows_resolve_to_shipped_tasks_next_to_full_entries(tmp_path, bfcl_tasks):
    """`rods tasks --format jsonl` rows name BFCL tasks by id; they read as those tasks, full entries as themselves."""
    variant = bfcl_tasks[1].model_copy(update={"id": bfcl_tasks[1].id + "__rods_x", "provenance": {"seed_id": "s"}})
    listing = {"id": bfcl_tasks[0].id, "category": bfcl_tasks[0].category, "turns": len(bfcl_tasks[0].turns)}
    path = tmp_path / "mixed.jsonl"
    path.write_text(json.dumps(listing) + "\n" + _line(variant) + "\n")
    assert read_tasks(path) == [bfcl_tasks[0], variant]
    path.write_text(_line(variant) + "\n" + json.dumps({"id": "multi_turn_base_123456"}) + "\n")
    with pytest.raises(TaskFileError, match=r"mixed.jsonl:2: .*not a BFCL task id"):
        read_tasks(path)


def test_envs_modules_import_one_way():
    """No import cycle inside envs/, function-level imports included (task <-> dataset once was one)."""
    import networkx as nx

    from tests.test_repo_hygiene import _imports, _modules

    mods = _modules("envs")
    g = nx.DiGraph()
    g.add_nodes_from(mods)
    for name, path in mods.items():
        g.add_edges_from((name, t) for t, _ in _imports(path) if t in mods and t != name)
    assert not list(nx.simple_cycles(g))
