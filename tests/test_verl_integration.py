"""verl on `rods export --format verl`: the interaction, tools and reward function the export names exist and play a
BFCL episode the way verl's ``ToolAgentLoop`` drives them (verl itself is not installed here).

Before: the rows named an interaction ``rods_bfcl`` and a tool agent that were not shipped, and ``data_source`` values
verl's default reward raises on.
"""

from __future__ import annotations

import asyncio
import importlib
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from envs.dataset import load_split
from envs.policies import keyword_arguments
from envs.task import write_tasks
from rods_cli.main import app


@dataclass
class AgentData:  # the two fields of verl's AgentData the tools read
    request_id: str
    assistant_turns: int = 0


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory) -> Path:
    tasks = [load_split("train", ["base"])[0], load_split("train", ["miss_func"])[0]]
    root = tmp_path_factory.mktemp("verl")
    write_tasks(root / "tasks.jsonl", tasks)
    result = CliRunner().invoke(app, ["export", str(root / "tasks.jsonl"), "--format", "verl", "--out",
                                      str(root / "out")])
    assert result.exit_code == 0, result.output
    return root / "out"


def _load(class_path: str):
    module, name = class_path.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


def _pieces(export_dir: Path):
    import datasets

    rows = datasets.load_dataset("parquet", data_files=str(export_dir / "train.parquet"), split="train")
    interactions = yaml.safe_load((export_dir / "verl_interaction_config.yaml").read_text())["interaction"]
    tools = yaml.safe_load((export_dir / "verl_tool_config.yaml").read_text())["tools"]
    interaction_map = {i["name"]: _load(i["class_name"])({"name": i["name"], **i["config"]}) for i in interactions}
    tool_map = {t["tool_schema"]["function"]["name"]: _load(t["class_name"])(t["config"], t["tool_schema"])
                for t in tools}
    return rows, interaction_map, tool_map


def test_export_names_only_shipped_pieces(export_dir):
    rows, interactions, tools = _pieces(export_dir)
    for row in rows:
        assert row["agent_name"] == "tool_agent"  # verl's built-in ToolAgentLoop
        assert row["extra_info"]["interaction_kwargs"]["name"] in interactions
        offered = {t["function"]["name"] for t in row["tools"]}
        offered |= {t["function"]["name"] for r in row["revealed_tools"] for t in r["tools"]}
        assert offered <= set(tools)


async def _play(row, interaction, tools, task, policy: str) -> tuple[list[float], list[str]]:
    """What ToolAgentLoop does: start the interaction, run tool calls per assistant message, ask the interaction
    after a message without calls, until it terminates."""
    request = "traj-" + policy
    await interaction.start_interaction(request, **row["extra_info"]["interaction_kwargs"])
    scores, user_turns, agent = [], [], AgentData(request)
    done, turn = False, 0
    while not done:
        if policy == "oracle":
            for step in task.ground_truth[turn]:
                agent.assistant_turns += 1
                for call in [step]:
                    name, args = keyword_arguments(task, call)
                    instance, _ = await tools[name].create()
                    response, _, _ = await tools[name].execute(instance, args, agent_data=agent)
                    assert response.text is not None
                    await tools[name].release(instance)
        agent.assistant_turns += 1  # the message that ends the turn: no tool call
        done, text, score, _ = await interaction.generate_response(request, [{"role": "assistant", "content": ""}])
        scores.append(score)
        user_turns.append(text)
        turn += 1
    await interaction.finalize_interaction(request)
    return scores, user_turns


@pytest.mark.parametrize("policy", ["oracle", "silent"])
def test_interaction_and_tools_play_a_bfcl_episode_and_the_reward_scores_it(export_dir, policy):
    from rods_agents.run.outputs import task_from_row
    from trainer.integrations.verl import compute_score

    rows, interactions, tools = _pieces(export_dir)
    for row in rows:
        task = task_from_row(row)
        interaction = interactions[row["extra_info"]["interaction_kwargs"]["name"]]
        scores, user_turns = asyncio.run(_play(row, interaction, tools, task, policy))
        assert len(scores) == len(task.turns)  # one model turn per BFCL turn, then the interaction ends it
        assert user_turns[:-1] == ["\n".join(m["content"] for m in task.user_messages(t))
                                   for t in range(1, len(task.turns))]
        reward = compute_score(row["data_source"], "", row["reward_model"]["ground_truth"], {"turn_scores": scores})
        assert reward == (1.0 if policy == "oracle" else 0.0), (row["id"], scores)


def test_compute_score_refuses_other_sources_and_a_missing_interaction():
    from trainer.integrations.verl import compute_score

    with pytest.raises(NotImplementedError):
        compute_score("openai/gsm8k", "", "42", {"turn_scores": [1.0]})
    with pytest.raises(ValueError, match="interaction"):
        compute_score("rods/bfcl_multi_turn_base", "", [], {})
