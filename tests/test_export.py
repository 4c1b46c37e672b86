"""`rods export`: typed Hugging Face datasets a TRL or verl user trains on as they are, and BFCL's own files.

Must show: the export read back by ``datasets.load_from_disk`` with typed columns, and a TRL trainer
(``GRPOTrainer`` on the tiny model, and ``SFTTrainer``) built on it, consuming its ``prompt`` (and ``tools``) columns.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envs.checker import check
from envs.dataset import load_split
from envs.executor import to_call_string
from envs.policies import keyword_arguments
from envs.task import Task, write_tasks
from envs.tools import tools_for_turn
from rods_agents.run.outputs import first_turn_reward, load_dataset, task_from_row, tools_for_row
from rods_cli.main import app

runner = CliRunner()


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    """Two train tasks per category (miss_func reveals included), one of them dressed as a synthesized variant."""
    by_cat: dict[str, list[Task]] = {}
    for t in load_split("train"):
        if len(by_cat.setdefault(t.category, [])) < 2:
            by_cat[t.category].append(t)
    picked = [t for ts in by_cat.values() for t in ts]
    variant = picked[0].model_copy(deep=True)
    variant.id = picked[0].id + "__rods_0001"
    variant.provenance = {"seed_id": picked[0].id, "variant": 1, "backbone": "offline"}
    return [*picked, variant]


@pytest.fixture(scope="module")
def run_dir(tasks, tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("run")
    write_tasks(run / "accepted.jsonl", tasks)
    return run


def export(run: Path, out: Path, fmt: str, *extra: str):
    result = runner.invoke(app, ["export", str(run), "--format", fmt, "--out", str(out), *extra])
    assert result.exit_code == 0, result.output
    return result


def test_trl_export_loads_from_disk_with_typed_columns(run_dir, tasks, tmp_path):
    import datasets
    from datasets import Json, List, Value

    export(run_dir, tmp_path / "trl", "trl", "--system_prompt", "You are a careful agent.", "--parquet")
    ds = datasets.load_from_disk(str(tmp_path / "trl"))
    f = ds.features
    assert len(ds) == len(tasks)
    assert f["prompt"] == List({"role": Value("string"), "content": Value("string")})
    assert isinstance(f["tools"], List) and isinstance(f["tools"].feature["function"]["parameters"], Json)
    assert f["ground_truth"] == List(List(Value("string")))
    assert f["missed_function"] == List({"turn": Value("int32"), "functions": List(Value("string"))})
    assert isinstance(f["initial_config"], Json) and f["scenario"] == Value("int32")
    for row, task in zip(ds, tasks, strict=True):
        assert row["id"] == task.id
        assert row["prompt"] == [{"role": "system", "content": "You are a careful agent."}, *task.user_messages(0)]
        assert row["tools"] == tools_for_turn(task, 0)  # OpenAI function format, objects not strings
        assert [tools_for_row(row, t) for t in range(len(task.turns))] == [
            tools_for_turn(task, t) for t in range(len(task.turns))]
        names = [t["function"]["name"] for t in row["tools"]]
        names += [t["function"]["name"] for r in row["revealed_tools"] for t in r["tools"]]
        assert len(names) == len(set(names))  # each schema stored once per task
        assert len(row["user_turns"]) == len(task.turns) and isinstance(row["initial_config"], dict)
        rebuilt = task_from_row(row)
        assert rebuilt == task  # everything envs.checker.check needs, from the row alone
        assert check(rebuilt, [[gt] if gt else [] for gt in row["ground_truth"]]).passed
    assert ds[len(tasks) - 1]["seed_id"] == tasks[0].id and ds[0]["seed_id"] == ""
    reveal = next(r for r in ds if r["missed_function"])  # a reveal turn: BFCL's message, and more tools
    t = reveal["missed_function"][0]["turn"]
    assert reveal["user_turns"][t][0]["content"].startswith("I have updated some more functions")
    assert len(tools_for_row(reveal, t)) > len(reveal["tools"]) and reveal["revealed_tools"][0]["turn"] == t
    parquet = datasets.load_dataset("parquet", data_files=str(tmp_path / "trl" / "data.parquet"), split="train")
    assert parquet.features == ds.features and parquet[0]["tools"] == ds[0]["tools"]
    assert load_dataset(run_dir).features == datasets.load_from_disk(str(tmp_path / "trl")).features


def test_export_builds_trl_trainers_that_consume_the_prompt_column(run_dir, tmp_path):
    import datasets
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer, SFTConfig, SFTTrainer

    from trainer.tiny_model import ensure_tiny_model

    export(run_dir, tmp_path / "trl", "trl")
    plain = datasets.load_from_disk(str(tmp_path / "trl"))
    export(run_dir, tmp_path / "grpo-data", "trl", "--tools_in_system", "hermes")  # GRPO: tools inside the prompt
    ds = datasets.load_from_disk(str(tmp_path / "grpo-data"))
    model = str(ensure_tiny_model())
    tok = AutoTokenizer.from_pretrained(model)
    common = {"use_cpu": True, "bf16": False, "report_to": "none", "save_strategy": "no", "max_steps": 1}

    grpo = GRPOTrainer(model=model, reward_funcs=first_turn_reward, train_dataset=ds, processing_class=tok,
                       args=GRPOConfig(output_dir=str(tmp_path / "grpo"), per_device_train_batch_size=2,
                                       num_generations=2, max_completion_length=8, **common))
    batch = next(iter(grpo.get_train_dataloader()))  # the rows TRL hands to generation and the reward functions
    first = {r["id"]: r for r in ds}
    assert batch and all(row["prompt"] == first[row["id"]]["prompt"] for row in batch)
    # GRPOTrainer renders prompts with no per-row tools: the hermes system message makes that the rollout's prompt
    rendered = tok.apply_chat_template(batch[0]["prompt"], tokenize=False, add_generation_prompt=True)
    plain_row = next(r for r in plain if r["id"] == batch[0]["id"])
    assert rendered == tok.apply_chat_template(plain_row["prompt"], tools=plain_row["tools"], tokenize=False,
                                               add_generation_prompt=True)
    assert batch[0]["tools"][0]["function"]["name"] in rendered

    # the reward TRL would call: dataset columns as lists, conversational completions
    columns = {k: [row[k] for row in batch] for k in batch[0]}
    right, wrong = [], []
    for row in batch:
        task = task_from_row(row)
        blocks = []
        for call in task.ground_truth[0]:
            name, args = keyword_arguments(task, call)
            blocks.append("<tool_call>\n" + json.dumps({"name": name, "arguments": args}) + "\n</tool_call>")
        right.append([{"role": "assistant", "content": "\n".join(blocks)}])
        wrong.append([{"role": "assistant", "content": "I cannot help with that."}])
    assert first_turn_reward(right, **columns) == [1.0] * len(batch)
    assert first_turn_reward(wrong, **columns) == [0.0] * len(batch)

    export(run_dir, tmp_path / "sft", "trl", "--completion", "oracle")
    sft_ds = datasets.load_from_disk(str(tmp_path / "sft"))
    sft = SFTTrainer(model=model, train_dataset=sft_ds, processing_class=tok,
                     args=SFTConfig(output_dir=str(tmp_path / "sft-run"), per_device_train_batch_size=2,
                                    max_length=None, **common))
    rendered = tok.decode(sft.train_dataset[0]["input_ids"])  # prompt + tools + completion via the template
    first_call = sft_ds[0]["completion"][0]["tool_calls"][0]["function"]
    assert sft_ds[0]["tools"][0]["function"]["name"] in rendered and sft_ds[0]["prompt"][-1]["content"] in rendered
    assert "<tool_call>" in rendered and f'"name": "{first_call["name"]}"' in rendered and "<tool_response>" in rendered


def test_oracle_completion_replays_to_a_passing_episode(run_dir, tasks, tmp_path):
    import datasets

    export(run_dir, tmp_path / "sft", "trl", "--completion", "oracle")
    ds = datasets.load_from_disk(str(tmp_path / "sft"))
    assert isinstance(ds.features["completion"].feature["tool_calls"].feature["function"]["arguments"],
                      datasets.Json)
    for row in ds:
        task = task_from_row(row)
        decoded: list[list[list[str]]] = [[]]
        for m in row["completion"]:  # the completion alone, cut into turns at each user message
            if m["role"] == "user":
                decoded.append([])
            elif m["tool_calls"]:
                decoded[-1].append([to_call_string(c["function"]["name"], c["function"]["arguments"])
                                    for c in m["tool_calls"]])
        assert len(decoded) == len(task.turns) and check(task, decoded).passed, row["id"]
        tool_msgs = [m for m in row["completion"] if m["role"] == "tool"]
        assert all(m["tool_call_id"] for m in tool_msgs)


def test_verl_export_has_verl_columns_and_parquet(run_dir, tasks, tmp_path):
    import datasets

    export(run_dir, tmp_path / "verl", "verl")
    table = datasets.load_dataset("parquet", data_files=str(tmp_path / "verl" / "train.parquet"), split="train")
    row = table[0]
    assert row["data_source"] == f"rods/bfcl_multi_turn_{tasks[0].category}" and row["ability"]
    assert row["reward_model"] == {"style": "rule", "ground_truth": tasks[0].ground_truth}
    assert row["extra_info"]["task_id"] == tasks[0].id and row["extra_info"]["index"] == 0
    assert row["prompt"] == tasks[0].user_messages(0) and task_from_row(row) == tasks[0]


def test_bfcl_export_is_read_by_bfcl_eval(run_dir, tasks, tmp_path):
    from bfcl_eval.utils import (
        extract_test_category_from_id,
        load_file,
        populate_test_cases_with_predefined_functions,
        sort_key,
    )

    export(run_dir, tmp_path / "bfcl", "bfcl")
    out = tmp_path / "bfcl"
    id_map = json.loads((out / "id_map.json").read_text())
    assert sorted(id_map.values()) == sorted(t.id for t in tasks)
    by_id = {t.id: t for t in tasks}
    for cat in ("base", "miss_func", "miss_param", "long_context"):
        entries = load_file(out / f"BFCL_v4_multi_turn_{cat}.json", sort_by_id=True)
        answers = {a["id"]: a for a in load_file(out / "possible_answer" / f"BFCL_v4_multi_turn_{cat}.json")}
        assert [sort_key(e) for e in entries] == sorted(sort_key(e) for e in entries)
        for entry in entries:
            assert extract_test_category_from_id(entry["id"]) == f"multi_turn_{cat}"
            original = by_id[id_map[entry["id"]]]
            again = Task.from_bfcl(dict(entry), answers[entry["id"]]["ground_truth"])
            assert again.turns == original.turns and again.ground_truth == original.ground_truth
            assert again.missed_function == original.missed_function
        populate_test_cases_with_predefined_functions(entries)  # BFCL's own loader step takes them
        assert all(e["function"] for e in entries)


@pytest.mark.parametrize("fmt", ["trl", "verl", "bfcl"])
def test_every_export_has_a_dataset_card(run_dir, tasks, tmp_path, fmt):
    import yaml

    export(run_dir, tmp_path / fmt, fmt)
    card = (tmp_path / fmt / "README.md").read_text()
    front = yaml.safe_load(card.split("---")[1])  # Hugging Face card metadata
    assert front["license"] == "apache-2.0" and "tool-use" in front["tags"]
    assert f"{len(tasks)} tasks (1 synthesized variant, " in card and "| base | 3 |" in card
    assert "README.md" in json.loads((tmp_path / fmt / "rods_export.json").read_text())["files"]


def test_export_stores_tool_schemas_once_per_task(tmp_path):
    """The schemas were copied per turn (75% of a 33-task export's bytes): now turn 0's list plus reveals."""
    import datasets

    path = tmp_path / "t.jsonl"
    write_tasks(path, load_split("train", ["base"])[:20])
    export(path, tmp_path / "out", "trl")
    ds = datasets.load_from_disk(str(tmp_path / "out"))
    table = ds.data.table
    schema_bytes = sum(table[c].nbytes for c in ("tools", "revealed_tools"))
    assert schema_bytes < 1.2 * table["tools"].nbytes and "turn_tools" not in ds.column_names


def test_export_to_an_existing_file_is_one_line_and_exit_2(run_dir, tmp_path):
    target = tmp_path / "taken.txt"
    target.write_text("mine")
    result = runner.invoke(app, ["export", str(run_dir), "--out", str(target)])
    assert result.exit_code == 2 and result.output.count("\n") == 1 and "is a file" in result.output
    assert target.read_text() == "mine"


def test_export_refuses_a_non_empty_out_and_unknown_runs(run_dir, tmp_path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "keep.txt").write_text("mine")
    result = runner.invoke(app, ["export", str(run_dir), "--out", str(tmp_path / "busy")])
    assert result.exit_code == 2 and "--overwrite" in result.output
    assert (tmp_path / "busy" / "keep.txt").read_text() == "mine"
    result = runner.invoke(app, ["export", str(tmp_path / "nope"), "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and "no such run" in result.output and not (tmp_path / "x").exists()
