"""Token traces of multi-turn episodes: what the loss trains on is exactly what the model wrote.

Uses the tiny model's real tokenizer and chat template (TRL's qwen3_instruct_2507, Hermes tool
calls) and a scripted generator that "generates" the token ids of given assistant texts, so the
trace can be compared with the conversation the runner recorded.
"""

from __future__ import annotations

import json

import pytest

from envs.dataset import load_split
from envs.runner import Episode
from trainer.rollout import (
    REWARD_SHAPERS,
    ChatTokenizer,
    Generated,
    TokenTrace,
    resolve_shaper,
    rods_reward,
    run_rollouts,
    synthetic_boundary,
)


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from trainer.tiny_model import ensure_tiny_model

    return AutoTokenizer.from_pretrained(ensure_tiny_model())


@pytest.fixture(scope="module")
def task():
    """A GorillaFileSystem base task with several user turns (small tool set, short prompts)."""
    tasks = [t for t in load_split("train", ["base"]) if t.involved_classes == ["GorillaFileSystem"]]
    return next(t for t in tasks if len(t.turns) >= 3)


class ScriptedGenerator:
    """Returns the tokens of scripted assistant texts, per episode in call order (lock-step batches)."""

    def __init__(self, tokenizer, texts: list[str], finish: bool = True):
        self.tok = tokenizer
        self.texts = texts
        self.finish = finish
        self.calls: list[int] = []
        self.per_prompt: dict[int, int] = {}

    def generate(self, prompts, max_new_tokens):
        self.calls.append(len(prompts))
        out = []
        for p, cap in zip(prompts, max_new_tokens, strict=True):
            i = self.per_prompt.get(len(p), 0)
            text = self.texts[min(len(self.calls) - 1, len(self.texts) - 1)]
            ids = self.tok.encode(text, add_special_tokens=False)
            if self.finish:
                ids = ids + [self.tok.eos_token_id]
            ids = ids[:cap]
            out.append(Generated(ids=ids, logprobs=None, finished=bool(ids) and ids[-1] == self.tok.eos_token_id))
            self.per_prompt[len(p)] = i + 1
        return out


def _tool_call(name: str, args: dict) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': args})}\n</tool_call>"


def _spans(trace: TokenTrace, tok) -> list[tuple[int, str]]:
    """Maximal runs of equal mask, decoded."""
    out, start = [], 0
    ids, mask = trace.completion_ids, trace.env_mask
    for i in range(1, len(ids) + 1):
        if i == len(ids) or mask[i] != mask[start]:
            out.append((mask[start], tok.decode(ids[start:i], skip_special_tokens=False)))
            start = i
    return out


def test_trace_equals_rendered_conversation_and_masks_injected_tokens(tokenizer, task):
    # turn 0: one tool call (ls), then a text answer; later turns: text answers only
    texts = [_tool_call("ls", {}), "Listed.", "Done.", "Done.", "Done.", "Done."]
    gen = ScriptedGenerator(tokenizer, texts)
    chat = ChatTokenizer(tokenizer)
    res = run_rollouts([task], gen, chat, budget=100_000, max_new_tokens_per_step=512, max_steps_per_turn=3)
    trace, episode = res.traces[0], res.episodes[0]
    assert episode.error is None
    assert episode.decoded[0] == [["ls()"]]

    # prompt + completion is token-for-token the conversation the runner recorded, rendered by the template
    from envs.policies import _for_template

    rendered = tokenizer.apply_chat_template(
        _for_template(episode.messages), tools=None, tokenize=False, add_generation_prompt=False
    )
    tools_prompt = tokenizer.apply_chat_template(
        _for_template(episode.messages[:1]), tools=__import__("envs.tools", fromlist=["x"]).tools_for_turn(task, 0),
        tokenize=False, add_generation_prompt=True,
    )
    assert tokenizer.decode(trace.prompt_ids, skip_special_tokens=False) == tools_prompt
    completion_text = tokenizer.decode(trace.completion_ids, skip_special_tokens=False)
    first_user = tokenizer.apply_chat_template(_for_template(episode.messages[:1]), tokenize=False,
                                               add_generation_prompt=True)
    assert rendered.startswith(first_user)
    assert rendered[len(first_user):].rstrip("\n") == completion_text

    # mask 1 spans are exactly the scripted model texts (each closed by EOS); mask 0 spans hold all injected text
    spans = _spans(trace, tokenizer)
    model_text = [s for m, s in spans if m == 1]
    injected = "".join(s for m, s in spans if m == 0)
    eos = tokenizer.eos_token
    assert model_text == [t + eos for t in texts[: len(model_text)]]
    assert len(trace.env_mask) == len(trace.completion_ids)
    for msg in episode.messages[1:]:
        if msg["role"] in ("user", "tool"):
            assert msg["content"] in injected, msg["role"]
            assert all(msg["content"] not in s for s in model_text)
    assert "<tool_response>" in injected and "<|im_start|>user" in injected
    assert all("<tool_response>" not in s and "<|im_start|>user" not in s for s in model_text)
    assert trace.logprobs is None  # transformers generation: no sampling logprobs


def test_budget_closes_the_episode_cleanly(tokenizer, task):
    texts = ["Thinking about it."] * 10
    gen = ScriptedGenerator(tokenizer, texts)
    chat = ChatTokenizer(tokenizer)
    budget = 30
    res = run_rollouts([task], gen, chat, budget=budget, max_new_tokens_per_step=512, max_steps_per_turn=3)
    trace, episode = res.traces[0], res.episodes[0]
    assert len(trace.completion_ids) <= budget
    assert trace.truncated
    assert episode.error is None
    assert len(episode.decoded) == len(task.turns)  # every turn was reached (and answered empty): a clean end
    assert res.rewards == [0.0]


def test_step_cap_adds_a_masked_end_of_turn(tokenizer, task):
    gen = ScriptedGenerator(tokenizer, ["a long rambling answer " * 10], finish=False)
    chat = ChatTokenizer(tokenizer)
    res = run_rollouts([task], gen, chat, budget=400, max_new_tokens_per_step=8, max_steps_per_turn=1)
    trace = res.traces[0]
    eos = tokenizer.eos_token_id
    # each model step is 8 tokens (mask 1) followed by one masked EOS before the next injected user turn
    first_zero = trace.env_mask.index(0)
    assert first_zero == 8 and trace.completion_ids[8] == eos
    assert all(trace.completion_ids[i] != eos for i in range(8))


def test_lockstep_batches_all_live_episodes(tokenizer, task):
    gen = ScriptedGenerator(tokenizer, ["Done."])
    chat = ChatTokenizer(tokenizer)
    res = run_rollouts([task] * 4, gen, chat, budget=2000, max_new_tokens_per_step=16, max_steps_per_turn=1,
                       group_size=4)
    assert gen.calls[0] == 4 and set(gen.calls) == {4}  # one batched call per turn for the 4 episodes
    assert res.generate_calls == len(task.turns)
    assert len({tuple(t.completion_ids) for t in res.traces}) == 1


def test_suffix_of_several_tool_results_and_a_user_turn(tokenizer):
    chat = ChatTokenizer(tokenizer)
    msgs = [{"role": "tool", "content": "r1"}, {"role": "tool", "content": "r2"}, {"role": "user", "content": "next"}]
    text = tokenizer.decode(chat.suffix_ids(msgs), skip_special_tokens=False)
    assert text.startswith("\n<|im_start|>user\n<tool_response>\nr1")
    assert "r2" in text and "next" in text and text.endswith("<|im_start|>assistant\n")


def test_reward_shaping_registry_and_reward_function(task):
    assert resolve_shaper(None) is None
    assert resolve_shaper("synthetic_boundary") is REWARD_SHAPERS["synthetic_boundary"]
    assert resolve_shaper("trainer.rollout:synthetic_boundary") is synthetic_boundary
    with pytest.raises(ValueError):
        resolve_shaper("nope")
    ep = Episode(task_id=task.id)
    shaped = [synthetic_boundary(task, k, 0.0, ep) for k in range(4)]
    assert shaped in ([0.0, 1.0, 0.0, 1.0], [1.0] * 4, [0.0] * 4)
    assert rods_reward(["c1", "c2"], rods_reward=[0.25, 1.0]) == [0.25, 1.0]
