"""A user's own TRL trainers on `rods export` data: GRPO on whole multi-turn episodes, SFT on the assistant's turns.

Must show: TRL's own ``GRPOTrainer`` (no RODS subclass) rolling out every user turn of the task behind each row, even
where tasks share a first prompt, with the checker's reward and the loss masked to the model's tokens; the README's
SFT settings supervising assistant tokens only.
"""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path

import pytest

from envs.checker import check
from envs.dataset import load_split
from envs.rewards import REWARDS
from rods_agents.run.outputs import to_dataset

README = Path(__file__).resolve().parents[1] / "README.md"


def _readme_call_keywords(name: str) -> dict:
    """The literal keyword arguments of ``name(...)`` in the README's export snippet (parsed, never executed)."""
    section = README.read_text().split("## Export: train on the data elsewhere")[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == name:
            return {k.arg: ast.literal_eval(k.value) for k in node.keywords}
    raise AssertionError(f"no {name}(...) in the README's export snippet")


@pytest.fixture(scope="module")
def tiny():
    from transformers import AutoTokenizer

    from trainer.tiny_model import ensure_tiny_model

    path = str(ensure_tiny_model())
    return path, AutoTokenizer.from_pretrained(path)


@pytest.mark.slow
def test_users_own_grpo_trainer_plays_whole_episodes_of_the_row_task(tiny, tmp_path):
    from trl import GRPOConfig, GRPOTrainer

    from trainer.integrations.trl import BFCLEpisode, bfcl_rollout_func, rods_reward

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    base = next(t for t in load_split("train", ["base"]) if len(t.turns) > 1)
    twin = next(t for t in load_split("all", ["long_context"]) if t.user_messages(0) == base.user_messages(0))
    ds = to_dataset([base, twin], "trl")  # the same first prompt, different tasks (state, tools)
    assert ds[0]["prompt"] == ds[1]["prompt"]
    model, tok = tiny
    config = GRPOConfig(output_dir=str(tmp_path), max_steps=1, per_device_train_batch_size=4, num_generations=2,
                        max_completion_length=160, use_cpu=True, bf16=False, report_to="none", save_strategy="no",
                        shuffle_dataset=False, seed=0)
    trainer = GRPOTrainer(model=model, processing_class=tok, args=config, train_dataset=ds,
                          environment_factory=BFCLEpisode, reward_funcs=rods_reward,
                          rollout_func=bfcl_rollout_func(tok, config, max_new_tokens_per_step=8, max_steps_per_turn=1))
    calls = []
    inner = trainer.rollout_func

    def spy(prompts, trl_trainer):
        out = inner(prompts, trl_trainer)
        calls.append((out, trl_trainer._last_rollout))
        return out

    trainer.rollout_func = spy
    trainer.train()
    out, result = calls[0]
    tasks = {base.id: base, twin.id: twin}
    assert sorted(e.task_id for e in result.episodes) == sorted([base.id, base.id, twin.id, twin.id])
    for episode, reward, mask in zip(result.episodes, out["rods_reward"], out["env_mask"], strict=True):
        task = tasks[episode.task_id]
        turns = [m["content"] for m in episode.messages if m["role"] == "user"]
        if len(turns) == len(task.turns):  # every user turn reached (the budget can end an episode early)
            assert turns == [m["content"] for t in range(len(task.turns)) for m in task.user_messages(t)]
        assert len(turns) > 1  # multi-turn: at least the second user turn was injected
        assert reward == REWARDS["progress"](check(task, episode.decoded, inference_error=episode.error))
        assert 0 in mask and 1 in mask  # injected user turns and template glue are masked out of the loss


def test_rollout_without_the_environment_factory_says_what_to_pass(tiny):
    from trl import GRPOConfig

    from trainer.integrations.trl import bfcl_rollout_func

    _, tok = tiny
    func = bfcl_rollout_func(tok, GRPOConfig(output_dir="unused", use_cpu=True, bf16=False))

    class Plain:
        environments = None

    with pytest.raises(RuntimeError, match="environment_factory=BFCLEpisode"):
        func([[{"role": "user", "content": "hi"}]], Plain())


def test_readme_sft_settings_supervise_only_the_assistant(tiny, tmp_path):
    """Before: TRL's default prompt-completion loss trained on tool results and later user turns as well."""
    from trl import SFTConfig, SFTTrainer

    tasks = [t for t in load_split("train", ["base"]) if len(t.turns) > 1][:2]
    ds = to_dataset(tasks, "trl", completion=True)  # rods export --completion oracle
    model, tok = tiny
    kwargs = {k: v for k, v in _readme_call_keywords("SFTConfig").items() if k != "output_dir"}
    assert kwargs.get("assistant_only_loss") is True
    counts = {}
    for label, extra in (("readme", kwargs), ("default", {"max_length": None})):
        sft = SFTTrainer(model=model, train_dataset=ds, processing_class=tok,
                         args=SFTConfig(output_dir=str(tmp_path / label), per_device_train_batch_size=1, max_steps=1,
                                        use_cpu=True, bf16=False, report_to="none", save_strategy="no", **extra))
        batch = next(iter(sft.get_train_dataloader()))
        ids, labels = batch["input_ids"][0].tolist(), batch["labels"][0].tolist()
        counts[label] = _by_role(tok, ds, ids, labels)
        if label == "readme":
            assert sft.train().global_step == 1  # the README's settings train
    assert set(counts["readme"]) == {"assistant"} and counts["readme"]["assistant"] > 50, counts
    assert counts["default"].get("tool", 0) > 0 and counts["default"].get("user", 0) > 0, counts  # what it fixes
    print(json.dumps(counts))


def _by_role(tok, ds, ids, labels) -> dict:
    """Supervised tokens per role of the batch's example (whichever row it is: the loader shuffles)."""
    from trainer.integrations.trl import supervised_tokens_by_role

    for row in ds:
        messages = row["prompt"] + [_plain(m) for m in row["completion"]]
        try:
            return supervised_tokens_by_role(tok, messages, ids, labels, tools=row["tools"])
        except ValueError:
            continue
    raise AssertionError("the batch's example is none of the rows")


def _plain(m: dict) -> dict:
    """A completion message as a chat template takes it (tool-call arguments as objects, empty fields dropped)."""
    out = {"role": m["role"], "content": m["content"]}
    if m.get("tool_calls"):
        out["tool_calls"] = m["tool_calls"]
    if m.get("tool_call_id"):
        out["tool_call_id"] = m["tool_call_id"]
    return out
