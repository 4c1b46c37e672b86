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


# ---------------------------------------------------------------------------------------------- miss_func tools
def _visible_tools(text: str) -> list[dict]:
    """Every tool schema shown in ``<tools>`` blocks of a rendered text, in order."""
    import re

    return [json.loads(line) for block in re.findall(r"<tools>\n(.*?)\n</tools>", text, flags=re.S)
            for line in block.splitlines() if line.strip()]


@pytest.mark.parametrize("task_id", ["multi_turn_miss_func_0", "multi_turn_miss_func_1", "multi_turn_miss_func_2"])
def test_miss_func_trace_shows_the_tools_the_evaluator_offers_at_every_turn(tokenizer, task_id):
    from envs.dataset import load_tasks
    from envs.tools import tools_for_turn

    task = load_tasks("all", ["miss_func"], None, [task_id])[0]
    assert task.missed_function, "a miss_func task reveals tools at a later turn"
    gen = ScriptedGenerator(tokenizer, ["Done."])
    res = run_rollouts([task], gen, ChatTokenizer(tokenizer), budget=1_000_000, max_new_tokens_per_step=16,
                       max_steps_per_turn=1)
    trace = res.traces[0]
    ids = trace.prompt_ids + trace.completion_ids
    mask = [0] * len(trace.prompt_ids) + trace.env_mask
    starts = [i for i in range(len(ids)) if mask[i] == 1 and mask[i - 1] == 0]  # one model step per turn here
    assert len(starts) == len(task.turns)
    for turn, start in enumerate(starts):
        seen = _visible_tools(tokenizer.decode(ids[:start], skip_special_tokens=False))
        offered = tools_for_turn(task, turn)
        # what the model saw before answering turn t: exactly the evaluator's tools for turn t (schemas and all)
        assert sorted(map(json.dumps, seen)) == sorted(map(json.dumps, offered)), (task_id, turn)
    reveal = min(task.missed_function)
    revealed = {n for names in task.missed_function.values() for n in names}
    before = tokenizer.decode(ids[: starts[reveal - 1]], skip_special_tokens=False)
    assert not revealed & {t["function"]["name"] for t in _visible_tools(before)}  # hidden until the reveal turn
    injected = tokenizer.decode([t for t, m in zip(trace.completion_ids, trace.env_mask, strict=True) if m == 0])
    assert all(f'"name": "{n}"' in injected for n in revealed)  # the reveal is masked (injected, never trained on)


# ---------------------------------------------------------------------------------------------- stops, budgets
class FakeLLM:
    """vLLM's ``LLM.generate`` shape: one SamplingParams or a list, one output per request."""

    def __init__(self, script: list[int]):
        self.script = script
        self.max_tokens: list[list[int]] = []

    def generate(self, requests, sampling_params=None, use_tqdm=False):
        from types import SimpleNamespace

        params = sampling_params if isinstance(sampling_params, list) else [sampling_params] * len(requests)
        self.max_tokens.append([p.max_tokens for p in params])
        return [SimpleNamespace(prompt_token_ids=r["prompt_token_ids"],
                                outputs=[SimpleNamespace(token_ids=self.script[: p.max_tokens])])
                for r, p in zip(requests, params, strict=True)]


class FakeVLLMGeneration:
    """TRL's ``VLLMGeneration.generate`` in colocate mode: ONE SamplingParams with max_tokens=max_completion_length."""

    mode, tensor_parallel_size = "colocate", 1

    def __init__(self, llm: FakeLLM):
        self.llm = llm
        self.max_completion_length = 10_000

    def generate(self, prompts, images, num_generations):
        from types import SimpleNamespace

        params = SimpleNamespace(max_tokens=self.max_completion_length, temperature=1.0)
        outs = self.llm.generate([{"prompt_token_ids": p} for p in prompts], sampling_params=params, use_tqdm=False)
        comp = [o.outputs[0].token_ids for o in outs]
        return prompts, comp, [[[0.0]] * len(c) for c in comp], None


def _fake_trainer(tokenizer, script, eos_ids):
    from types import SimpleNamespace

    llm = FakeLLM(script)
    model = SimpleNamespace(generation_config=SimpleNamespace(eos_token_id=eos_ids))
    return SimpleNamespace(processing_class=tokenizer, model=model, vllm_generation=FakeVLLMGeneration(llm)), llm


def test_each_vllm_request_gets_its_own_remaining_budget(tokenizer):
    from trainer.rollout import VLLMGenerator

    trainer, llm = _fake_trainer(tokenizer, list(range(3, 40)), [tokenizer.eos_token_id])
    out = VLLMGenerator(trainer).generate([[1, 2], [1, 2, 3]], [5, 9])
    assert llm.max_tokens == [[5, 9]]  # not [[9, 9]]: the near-budget request stops decoding at its own cap
    assert [len(o.ids) for o in out] == [5, 9]
    assert trainer.vllm_generation.max_completion_length == 10_000 and "generate" not in vars(llm)  # restored


def test_a_turn_ending_on_endoftext_is_finished_and_keeps_its_tool_calls(tokenizer, task):
    from trainer.rollout import VLLMGenerator

    endoftext = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    assert endoftext != tokenizer.eos_token_id
    script = tokenizer.encode(_tool_call("ls", {}), add_special_tokens=False) + [endoftext]
    trainer, _ = _fake_trainer(tokenizer, script, [tokenizer.eos_token_id, endoftext])  # Qwen3's generation_config
    res = run_rollouts([task], VLLMGenerator(trainer), ChatTokenizer(tokenizer), budget=2000,
                       max_new_tokens_per_step=len(script) + 5, max_steps_per_turn=1)
    episode, trace = res.episodes[0], res.traces[0]
    assert episode.decoded[0][0] == ["ls()"]  # the call ran: the turn counted as finished
    first_zero = trace.env_mask.index(0)
    assert trace.completion_ids[first_zero - 1] == endoftext  # the model's own stop, trained on
    assert trace.completion_ids[first_zero] == tokenizer.eos_token_id  # + a masked end-of-turn: well-formed template


def test_transformers_generate_stops_each_row_at_its_own_cap(tokenizer):
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from trainer.rollout import HFGenerator

    torch.manual_seed(0)
    cfg = Qwen3Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, head_dim=16, max_position_embeddings=256,
                      tie_word_embeddings=False)
    model = Qwen3ForCausalLM(cfg).eval()
    stops = [tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids("<|endoftext|>"), tokenizer.pad_token_id]
    with torch.no_grad():  # stop/pad ids get logit 0, below the best of ~2k random logits: only the caps end rows
        model.lm_head.weight[stops] = 0.0
    raw = []
    real = model.generate

    def spy(**kw):
        out = real(**kw)
        raw.append(out[:, kw["input_ids"].shape[1]:].tolist())
        return out

    model.generate = spy
    gen = HFGenerator(model, tokenizer, temperature=0.0)
    out = gen.generate([[5, 6, 7], [8, 9, 10]], [2, 8])
    assert [len(o.ids) for o in out] == [2, 8] and not any(o.finished for o in out)
    pad = tokenizer.pad_token_id
    assert pad not in raw[0][1] and pad not in raw[0][0][:2]  # greedy never picks a stop/pad id by itself here
    assert raw[0][0][2:] and all(t == pad for t in raw[0][0][2:]), raw  # row 0 stopped after its 2 tokens


# ---------------------------------------------------------------------------------------------- context limit
class LengthCheckingGenerator(ScriptedGenerator):
    """Refuses a request whose prompt + max_tokens exceeds the context, as vLLM refuses one."""

    def __init__(self, tokenizer, texts, limit):
        super().__init__(tokenizer, texts)
        self.limit = limit

    def generate(self, prompts, max_new_tokens):
        for p, cap in zip(prompts, max_new_tokens, strict=True):
            if len(p) + cap > self.limit:
                raise ValueError(f"prompt {len(p)} + max_tokens {cap} > max_model_len {self.limit}")
        return super().generate(prompts, max_new_tokens)


def test_an_over_long_prompt_ends_its_episode_not_the_step(tokenizer, task, caplog):
    from envs.dataset import load_tasks

    long_task = load_tasks("all", ["miss_func"], None, ["multi_turn_miss_func_0"])[0]
    chat = ChatTokenizer(tokenizer)
    short_len = len(chat.prompt_ids(task.user_messages(0), __import__("envs.tools", fromlist=["x"]).tools_for_turn(task, 0)))
    limit = short_len + 60
    gen = LengthCheckingGenerator(tokenizer, ["Done."], limit)
    with caplog.at_level("WARNING", logger="trainer.rollout"):
        res = run_rollouts([task, long_task], gen, chat, budget=500, max_new_tokens_per_step=32, max_steps_per_turn=1,
                           context_limit=limit)
    short, long_ = res.traces
    assert len(short.prompt_ids) + len(short.completion_ids) <= limit and short.model_turns >= 1
    assert len(long_.prompt_ids) <= 16 and long_.model_turns == 0  # a short tail: TRL's forward passes cost nothing
    assert long_.truncated and set(long_.env_mask) == {0} and long_.overlong and not short.overlong
    # unscorable, not a failure: None reaches TRL (NaN: advantage 0, outside the reward stats), not a 0.0
    assert res.rewards[1] is None and res.rewards[0] is not None
    assert rods_reward([None, None], rods_reward=res.rewards) == [res.rewards[0], None]
    assert long_task.id in caplog.text


def test_unscorable_groups_stay_out_of_the_detector():
    import math

    from trainer.detection import BoundaryDetector, scorable_groups

    nan = math.nan
    ids = ["multi_turn_base_0"] * 2 + ["multi_turn_base_1"] * 2
    kept_ids, kept, dropped = scorable_groups(ids, [nan, nan, 0.0, 1.0], 2)
    assert (kept_ids, kept, dropped) == (ids[2:], [0.0, 1.0], ["multi_turn_base_0"])
    det = BoundaryDetector()
    det.record(1, 0, kept_ids, kept, 2)  # the detector itself refuses NaN: the filter is what lets the batch in
    assert det.latest_mean("multi_turn_base_0") is None and det.latest_mean("multi_turn_base_1") == 0.5


def test_context_limit_is_the_smaller_of_vllm_and_model_positions():
    from types import SimpleNamespace

    from trainer.rollout import context_limit

    model = SimpleNamespace(config=SimpleNamespace(max_position_embeddings=40_960))
    assert context_limit(SimpleNamespace(use_vllm=True, vllm_max_model_length=32_768), model) == 32_768
    assert context_limit(SimpleNamespace(use_vllm=False, vllm_max_model_length=32_768), model) == 40_960
    assert context_limit(SimpleNamespace(use_vllm=False, vllm_max_model_length=None), None) is None


def test_per_request_budgets_reach_the_llm_through_trls_real_colocate_generate(tokenizer, monkeypatch):
    """TRL 1.16's own ``VLLMGeneration.generate`` (colocate, TP=1) with a stand-in ``LLM``: each request reaches
    ``llm.generate`` with its own ``max_tokens``, and the sampling logprobs stay aligned with the cut token ids."""
    from types import SimpleNamespace

    import trl.generation.vllm_generation as vgm

    from trainer.rollout import VLLMGenerator

    class Params(SimpleNamespace):  # vLLM's SamplingParams: keyword fields, clone()
        def clone(self):
            return Params(**vars(self))

    monkeypatch.setattr(vgm, "SamplingParams", Params, raising=False)
    eos = tokenizer.eos_token_id
    script = [11, 12, 13, eos, 14, 15, 16, 17, 18, 19]

    class LLM:
        def __init__(self):
            self.max_tokens = []

        def generate(self, requests, sampling_params=None, use_tqdm=True):
            params = sampling_params if isinstance(sampling_params, list) else [sampling_params] * len(requests)
            self.max_tokens.append([p.max_tokens for p in params])
            outs = []
            for r, p in zip(requests, params, strict=True):
                ids = script[len(r["prompt_token_ids"]) - 2:][: p.max_tokens]  # prompt length picks a script offset
                lps = [{t: SimpleNamespace(logprob=-t / 100, rank=1)} for t in ids]
                outs.append(SimpleNamespace(prompt_token_ids=r["prompt_token_ids"],
                                            outputs=[SimpleNamespace(token_ids=ids, logprobs=lps)]))
            return outs

    vg = object.__new__(vgm.VLLMGeneration)
    llm = LLM()
    vars(vg).update(mode="colocate", tensor_parallel_size=1, enable_sleep_mode=False, _llm_weights_sleeping=False,
                    temperature=1.0, top_p=1.0, top_k=0, min_p=None, repetition_penalty=1.0, max_completion_length=999,
                    logprobs=0, generation_kwargs={}, structured_outputs_regex=None, llm=llm, model=object(),
                    accelerator=SimpleNamespace())
    model = SimpleNamespace(generation_config=SimpleNamespace(eos_token_id=[eos]))
    trainer = SimpleNamespace(processing_class=tokenizer, model=model, vllm_generation=vg)
    out = VLLMGenerator(trainer).generate([[1, 2], [1, 2, 3], [1, 2, 3, 4, 5]], [8, 2, 5])
    assert llm.max_tokens == [[8, 2, 5]]
    assert [o.ids for o in out] == [[11, 12, 13, eos], [12, 13], [eos]]
    assert [o.finished for o in out] == [True, False, True]
    for o in out:
        assert o.logprobs == [-t / 100 for t in o.ids]
    assert vg.max_completion_length == 999 and "generate" not in vars(llm)


def test_the_public_rollout_func_runs_a_users_own_trainer(tokenizer, task):
    """The entry point a user's own GRPOTrainer gets: RolloutSettings (no RODSConfig), its own rows hook."""
    from types import SimpleNamespace

    from trainer.chat_tokens import ChatTokenizer
    from trainer.rollout import RolloutSettings, make_rollout_func

    settings = RolloutSettings(max_completion_length=64, num_generations=2, max_new_tokens_per_step=16,
                               max_steps_per_turn=1, reward_shaping="synthetic_boundary")
    gen = ScriptedGenerator(tokenizer, ["I will look.", "Done."])
    trainer = SimpleNamespace(my_rows=[{"task_id": task.id}] * 2)
    func = make_rollout_func({task.id: task}.__getitem__, settings, ChatTokenizer(tokenizer), lambda t: gen,
                             rows=lambda t: t.my_rows)
    out = func(["p", "p"], trainer)
    assert set(out) == {"prompt_ids", "completion_ids", "logprobs", "env_mask", "rods_reward"}
    assert len(out["completion_ids"]) == 2 and out["logprobs"] is None
    assert all(len(c) == len(m) <= 64 for c, m in zip(out["completion_ids"], out["env_mask"], strict=True))
    assert out["rods_reward"] == [synthetic_boundary(task, k, 0.0, None) for k in range(2)]  # shaper by name
    assert trainer._last_rollout.raw_rewards == [0.0, 0.0]
    with pytest.raises(RuntimeError, match="disagree"):
        func(["p"], trainer)


def test_rollout_settings_come_from_any_config_with_the_fields():
    from types import SimpleNamespace

    from trainer.rollout import RolloutSettings

    grpo_like = SimpleNamespace(max_completion_length=100, num_generations=4, use_vllm=True, vllm_max_model_length=512,
                                learning_rate=1e-6)  # a plain GRPOConfig has no max_steps_per_turn: default kept
    s = RolloutSettings.of(grpo_like)
    assert (s.max_completion_length, s.num_generations, s.use_vllm, s.max_steps_per_turn) == (100, 4, True, 5)
    assert RolloutSettings.of(s) is s
