"""GRPO rollouts as real BFCL episodes: several user turns, tool calls and tool results.

TRL's built-in tool loop cannot inject a new *user* turn, so RODS rolls out through
``rollout_func`` with the one episode runner (:func:`envs.runner.run_episode`). Each episode gets
a :class:`TracingPolicy` that answers ``respond()`` by generating tokens and keeps the token
trace TRL trains on:

* ``prompt_ids``: the first rendered prompt (system + tools + first user turn + generation prompt);
* ``completion_ids``: everything after it, model tokens *and* injected tokens (tool results, the
  next user turns, template glue), in order;
* ``env_mask``: 1 only for model-generated tokens. Injected tokens are computed by the same
  template prefix-diff as TRL's ``_get_tool_suffix_ids`` (render a dummy conversation with and
  without the new messages, cut at the last EOS) and masked 0, so the loss never trains on text
  the model did not write;
* ``logprobs``: vLLM's sampling logprobs (0.0 on injected tokens), or ``None`` on CPU.

The K*B episodes of one generation batch advance in lock-step: every episode that needs a
model turn submits its prompt to a :class:`LockstepBatcher`, which runs one batched
``generate`` (transformers on CPU, TRL's ``vllm_generation`` on GPU) once every live episode
has submitted or finished.

Budget: ``max_completion_length`` bounds all completion tokens of an episode, model and injected
alike (as in TRL). An injected suffix that would not fit is dropped and the episode is closed
cleanly: later ``respond`` calls answer an empty message at no cost, so the remaining turns
score as unanswered and the reward keeps the progress made so far. A step cut by
``max_new_tokens_per_step`` gets one masked EOS token so the template stays well formed; its
(incomplete) tool calls are dropped.

Reward: the checker's progress reward, computed once per episode, optionally reshaped by a
registered hook (:data:`REWARD_SHAPERS`), passed through the extra rollout key ``rods_reward``
to :func:`rods_reward` (TRL hands extra rollout keys to reward functions as keyword arguments).
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from envs.checker import check
from envs.policies import _for_template, parse_hermes
from envs.rewards import REWARDS
from envs.runner import AssistantMessage, Episode, StepContext, run_episode
from envs.task import Task

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------- token trace
@dataclass
class TokenTrace:
    """One episode's tokens as TRL consumes them (see the module docstring)."""

    prompt_ids: list[int] = field(default_factory=list)
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    logprobs: list[float] | None = field(default_factory=list)
    truncated: bool = False
    """The completion budget ran out (a suffix or a step did not fit)."""
    model_turns: int = 0

    def add_model(self, ids: Sequence[int], logprobs: Sequence[float] | None) -> None:
        self.completion_ids.extend(ids)
        self.env_mask.extend([1] * len(ids))
        if logprobs is None or self.logprobs is None:
            self.logprobs = None
        else:
            self.logprobs.extend(logprobs)

    def add_injected(self, ids: Sequence[int]) -> None:
        self.completion_ids.extend(ids)
        self.env_mask.extend([0] * len(ids))
        if self.logprobs is not None:
            self.logprobs.extend([0.0] * len(ids))


class ChatTokenizer:
    """Renders prompts and injected suffixes with the policy's chat template.

    ``suffix_ids`` is TRL's prefix diff generalised to any new messages (tool results, user
    turns): the dummy assistant turn before them is closed at its last EOS, exactly where a
    model turn that ended with EOS stops, so ``trace + suffix`` equals the rendered conversation.
    """

    def __init__(self, tokenizer: Any, chat_template: str | None = None, template_kwargs: dict | None = None):
        self.tokenizer = tokenizer
        self.chat_template = chat_template
        self.template_kwargs = dict(template_kwargs or {})
        self.eos_token_id = tokenizer.eos_token_id
        self.eos_token = tokenizer.eos_token

    def _render(self, messages: list[dict], tools: list[dict] | None, generation_prompt: bool) -> list[int]:
        ids = self.tokenizer.apply_chat_template(
            _for_template(messages), tools=tools or None, add_generation_prompt=generation_prompt, tokenize=True,
            return_dict=False, chat_template=self.chat_template, **self.template_kwargs,
        )
        return list(ids)

    def prompt_ids(self, messages: list[dict], tools: list[dict] | None) -> list[int]:
        return self._render(messages, tools, generation_prompt=True)

    def suffix_ids(self, new_messages: list[dict]) -> list[int]:
        """Tokens the template puts after a finished assistant turn for ``new_messages``."""
        first_tool = next((m for m in new_messages if m.get("role") == "tool"), None)
        calls = [{"type": "function", "function": {"name": first_tool.get("name", "tool"), "arguments": {}}}] \
            if first_tool is not None else None
        assistant: dict[str, Any] = {"role": "assistant", "content": ""}
        if calls and new_messages[0].get("role") == "tool":
            assistant["tool_calls"] = calls
        dummy = [{"role": "user", "content": "dummy"}, assistant]
        prefix = self._render(dummy, None, generation_prompt=False)
        full = self._render(dummy + list(new_messages), None, generation_prompt=True)
        eos = [i for i, t in enumerate(prefix) if t == self.eos_token_id]
        if eos:
            prefix = prefix[: eos[-1] + 1]
        if full[: len(prefix)] != prefix:
            raise ValueError("chat template is not prefix-preserving: cannot compute injected suffix tokens")
        return full[len(prefix):]

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=False)


# ---------------------------------------------------------------------------------------------- generation
@dataclass
class Generated:
    ids: list[int]
    logprobs: list[float] | None
    finished: bool
    """The step ended with EOS (not cut by a token cap)."""


class Generator(Protocol):
    """One batched generation call: prompts as token ids, a token cap per prompt."""

    def generate(self, prompts: list[list[int]], max_new_tokens: list[int]) -> list[Generated]: ...


def _cut(ids: Sequence[int], logprobs: Sequence[float] | None, cap: int, eos_id: int) -> Generated:
    ids = list(ids)
    if eos_id in ids:
        ids = ids[: ids.index(eos_id) + 1]
    ids = ids[:cap]
    lp = None if logprobs is None else list(logprobs)[: len(ids)]
    return Generated(ids=ids, logprobs=lp, finished=bool(ids) and ids[-1] == eos_id)


class HFGenerator:
    """transformers ``generate`` on the training model (CPU runs, tests); no logprobs.

    Sampling follows the GRPO config (temperature, top_p, top_k, min_p, repetition_penalty).
    """

    def __init__(self, model: Any, tokenizer: Any, *, temperature: float = 1.0, top_p: float = 1.0,
                 top_k: int | None = None, min_p: float | None = None, repetition_penalty: float = 1.0,
                 unwrap: Callable[[], Any] | None = None):
        self.model = model
        self.tokenizer = tokenizer
        self.unwrap = unwrap
        self.sampling: dict[str, Any] = {"do_sample": temperature > 0, "repetition_penalty": repetition_penalty}
        if temperature > 0:
            self.sampling.update(temperature=temperature, top_p=top_p)
            if top_k:
                self.sampling["top_k"] = top_k
            if min_p:
                self.sampling["min_p"] = min_p

    def generate(self, prompts: list[list[int]], max_new_tokens: list[int]) -> list[Generated]:
        """Prompts of equal length go through ``generate`` together, unpadded.

        A padded batch makes the attention fall back to an explicit L x L mask (about 3x slower for
        the ~4k-token BFCL prompts on CPU); the K copies of a task share a length at least on
        their first turn, so grouping keeps most of the batching.
        """
        import contextlib

        import torch

        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        eos = self.tokenizer.eos_token_id
        groups: dict[int, list[int]] = {}
        for i, p in enumerate(prompts):
            groups.setdefault(len(p), []).append(i)
        out: list[Generated | None] = [None] * len(prompts)
        ctx = self.unwrap() if self.unwrap is not None else contextlib.nullcontext(self.model)
        with ctx as model, torch.no_grad():
            device = next(model.parameters()).device
            for width, idx in groups.items():
                ids = torch.tensor([prompts[i] for i in idx], dtype=torch.long, device=device)
                gen = model.generate(
                    input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=max(max_new_tokens[i] for i in idx),
                    eos_token_id=eos, pad_token_id=pad, **self.sampling,
                )
                for row, i in zip(gen[:, width:].tolist(), idx, strict=True):
                    out[i] = _cut(row, None, max_new_tokens[i], eos)
        return out  # type: ignore[return-value]


class VLLMGenerator:
    """TRL's vLLM integration (``trainer.vllm_generation``): colocate by default, weights synced by TRL.

    vLLM generates up to ``max_completion_length`` tokens; each output is then cut to the
    episode's remaining budget (the sampling logprobs are cut with it).

    Server mode on several training processes, and colocate with tensor parallelism, run
    collectives inside ``generate`` that assume every rank calls it equally often with equally
    long lists; lock-step batches differ per rank, so use colocate with TP=1 on several ranks
    (server mode is fine with one training process). Keep ``vllm_enable_sleep_mode`` off: TRL
    puts vLLM to sleep after every ``generate`` call and re-syncs weights on wake-up, i.e. once
    per episode turn here.
    """

    def __init__(self, trainer: Any):
        self.trainer = trainer
        self.eos_id = trainer.processing_class.eos_token_id if hasattr(trainer.processing_class, "eos_token_id") \
            else trainer.processing_class.tokenizer.eos_token_id

    def generate(self, prompts: list[list[int]], max_new_tokens: list[int]) -> list[Generated]:
        vg = self.trainer.vllm_generation
        saved = vg.max_completion_length  # read per call as vLLM's max_tokens: cap it at this batch's largest need
        vg.max_completion_length = max(max_new_tokens)
        try:
            _, completion_ids, logprobs, _ = vg.generate(prompts=prompts, images=None, num_generations=1)
        finally:
            vg.max_completion_length = saved
        out = []
        for i, (ids, cap) in enumerate(zip(completion_ids, max_new_tokens, strict=True)):
            lp = None
            if logprobs is not None and logprobs[i] is not None:
                lp = [tok[0] if isinstance(tok, (list, tuple)) else tok for tok in logprobs[i]]
            out.append(_cut(ids, lp, cap, self.eos_id))
        return out


class LockstepBatcher:
    """Collects the model turns of concurrent episodes and serves them with one generate call.

    A batch is flushed when every live episode is waiting for a turn (or has finished), so the
    K*B episodes of a generation batch advance in lock-step. A generation error is kept and
    re-raised by :func:`run_rollouts` (the runner would otherwise turn it into a zero reward).
    """

    def __init__(self, generator: Generator, n_episodes: int):
        self.generator = generator
        self.live = n_episodes
        self.pending: list[tuple[list[int], int, asyncio.Future]] = []
        self.error: BaseException | None = None
        self.calls = 0
        self.batch_sizes: list[int] = []
        self.generated_tokens = 0

    async def submit(self, prompt: list[int], max_new_tokens: int) -> Generated:
        fut = asyncio.get_running_loop().create_future()
        self.pending.append((prompt, max_new_tokens, fut))
        self._maybe_flush()
        return await fut

    def finish(self) -> None:
        self.live -= 1
        self._maybe_flush()

    def _maybe_flush(self) -> None:
        if not self.pending or len(self.pending) < self.live:
            return
        batch, self.pending = self.pending, []
        try:
            outs = self.generator.generate([p for p, _, _ in batch], [n for _, n, _ in batch])
        except BaseException as exc:  # noqa: BLE001 - re-raised by run_rollouts
            self.error = exc
            for _, _, fut in batch:
                fut.set_exception(exc)
            return
        self.calls += 1
        self.batch_sizes.append(len(batch))
        for (_, _, fut), out in zip(batch, outs, strict=True):
            self.generated_tokens += len(out.ids)
            fut.set_result(out)


# ---------------------------------------------------------------------------------------------- policy
class TracingPolicy:
    """A :class:`~envs.runner.Policy` that generates through the batcher and records the token trace."""

    def __init__(self, batcher: LockstepBatcher, chat: ChatTokenizer, *, budget: int, max_new_tokens_per_step: int):
        self.batcher = batcher
        self.chat = chat
        self.budget = budget
        self.step_cap = max_new_tokens_per_step
        self.trace = TokenTrace()
        self._seen = 0  # messages already represented in the trace (the last one is our own reply)
        self._closed = False

    async def respond(self, messages: list[dict], tools: list[dict], ctx: StepContext) -> AssistantMessage:
        if self._closed:
            return AssistantMessage(content="")
        trace = self.trace
        if not trace.prompt_ids:
            trace.prompt_ids = self.chat.prompt_ids(messages, tools)
        else:
            new = messages[self._seen:]
            suffix = self.chat.suffix_ids(new)
            if len(trace.completion_ids) + len(suffix) >= self.budget:  # nothing left to generate with
                return self._close()
            trace.add_injected(suffix)
        self._seen = len(messages) + 1  # + the reply we are about to add
        remaining = self.budget - len(trace.completion_ids)
        cap = min(remaining, self.step_cap)
        out = await self.batcher.submit(trace.prompt_ids + trace.completion_ids, cap)
        trace.add_model(out.ids, out.logprobs)
        trace.model_turns += 1
        text = self.chat.decode(out.ids)
        if out.finished:
            return parse_hermes(text, eos=self.chat.eos_token)
        content = parse_hermes(text, eos=self.chat.eos_token).content or ""
        if len(trace.completion_ids) >= self.budget:
            self._close()
        else:  # cut by the per-step cap: close the turn with a masked EOS, keep the text, drop partial calls
            trace.add_injected([self.chat.eos_token_id])
        return AssistantMessage(content=content)

    def _close(self) -> AssistantMessage:
        self._closed = True
        self.trace.truncated = True
        return AssistantMessage(content="")


# ---------------------------------------------------------------------------------------------- reward shaping
RewardShaper = Callable[[Task, int, float, Episode], float]
"""``f(task, rollout_index_in_group, reward, episode) -> reward``."""


def _bucket(task_id: str, n: int) -> int:
    return int(hashlib.sha256(task_id.encode()).hexdigest(), 16) % n


def synthetic_boundary(task: Task, k: int, reward: float, episode: Episode) -> float:
    """Test hook: make a third of the tasks boundary (rewards 0/1 alternating over the group), a
    third mastered (1.0), and leave the rest as scored, by a hash of the task id.

    With an untrained model every reward is 0, so no task would ever sit on the boundary; this
    lets the end-to-end test drive detection, synthesis, injection and retirement through the
    production code path. Variants get their own hash, so some are retired and some stay.
    """
    bucket = _bucket(task.id, 3)
    if bucket == 0:
        return float(k % 2)
    if bucket == 1:
        return 1.0
    return reward


REWARD_SHAPERS: dict[str, RewardShaper] = {"synthetic_boundary": synthetic_boundary}


def resolve_shaper(name: str | None) -> RewardShaper | None:
    """A registered shaper name, or ``module:function``; None disables shaping."""
    if not name:
        return None
    if name in REWARD_SHAPERS:
        return REWARD_SHAPERS[name]
    if ":" in name:
        module, attr = name.split(":", 1)
        return getattr(importlib.import_module(module), attr)
    raise ValueError(f"unknown reward_shaping {name!r}; registered: {sorted(REWARD_SHAPERS)} (or module:function)")


def rods_reward(completions: list, rods_reward: list[float] | None = None, **kwargs: Any) -> list[float]:
    """GRPO reward function: the per-episode reward computed in the rollout (extra key ``rods_reward``)."""
    if rods_reward is None:
        raise ValueError("rods_reward needs the 'rods_reward' rollout key (use trainer.rollout.make_rollout_func)")
    return [float(r) for r in rods_reward]


# ---------------------------------------------------------------------------------------------- rollouts
@dataclass
class RolloutResult:
    traces: list[TokenTrace]
    episodes: list[Episode]
    rewards: list[float]
    raw_rewards: list[float]
    seconds: float
    generate_calls: int
    generated_tokens: int


async def _run_all(tasks: list[Task], generator: Generator, chat: ChatTokenizer, *,
                   budget: int, step_cap: int, max_steps_per_turn: int, strict_tools: bool,
                   system_prompt: str | None) -> tuple[list[TracingPolicy], list[Episode], LockstepBatcher]:
    batcher = LockstepBatcher(generator, len(tasks))
    policies = [TracingPolicy(batcher, chat, budget=budget, max_new_tokens_per_step=step_cap) for _ in tasks]

    async def one(task: Task, policy: TracingPolicy) -> Episode:
        try:
            return await run_episode(task, policy, max_steps=max_steps_per_turn, strict_tools=strict_tools,
                                     system_prompt=system_prompt)
        finally:
            batcher.finish()

    episodes = await asyncio.gather(*(one(t, p) for t, p in zip(tasks, policies, strict=True)))
    return policies, list(episodes), batcher


def _run_sync(coro: Any) -> Any:
    """``asyncio.run``, also from a thread that already runs an event loop (notebooks)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def run_rollouts(tasks: list[Task], generator: Generator, chat: ChatTokenizer, *, budget: int,
                 max_new_tokens_per_step: int, max_steps_per_turn: int = 5, strict_tools: bool = False,
                 system_prompt: str | None = None, reward: str = "progress", shaper: RewardShaper | None = None,
                 group_size: int = 1) -> RolloutResult:
    """Run one episode per task (tasks repeat K times consecutively), score each once, trace each."""
    start = time.perf_counter()
    group_index = [i % group_size for i in range(len(tasks))]
    policies, episodes, batcher = _run_sync(_run_all(
        tasks, generator, chat, budget=budget, step_cap=max_new_tokens_per_step,
        max_steps_per_turn=max_steps_per_turn, strict_tools=strict_tools, system_prompt=system_prompt,
    ))
    if batcher.error is not None:
        raise batcher.error
    reward_fn = REWARDS[reward]
    raw, shaped = [], []
    for task, k, episode in zip(tasks, group_index, episodes, strict=True):
        r = reward_fn(check(task, episode.decoded, inference_error=episode.error))
        raw.append(r)
        shaped.append(float(shaper(task, k, r, episode)) if shaper else r)
    return RolloutResult(
        traces=[p.trace for p in policies], episodes=episodes, rewards=shaped, raw_rewards=raw,
        seconds=time.perf_counter() - start, generate_calls=batcher.calls, generated_tokens=batcher.generated_tokens,
    )


def make_rollout_func(lookup: Callable[[str], Task], args: Any, chat: ChatTokenizer,
                      generator_factory: Callable[[Any], Generator]) -> Callable[[list, Any], dict]:
    """Build TRL's ``rollout_func(prompts, trainer) -> dict``.

    The rows behind ``prompts`` (K consecutive copies per task) come from
    ``trainer._rollout_rows`` (set by :class:`trainer.grpo.CurriculumGRPOTrainer`); ``lookup``
    maps their ``task_id`` to the task in the live pool.
    """
    shaper = resolve_shaper(getattr(args, "reward_shaping", None))

    def rollout_func(prompts: list, trainer: Any) -> dict:
        rows = trainer._rollout_rows
        if len(rows) != len(prompts):
            raise RuntimeError(f"rollout rows ({len(rows)}) and prompts ({len(prompts)}) disagree")
        tasks = [lookup(r["task_id"]) for r in rows]
        result = run_rollouts(
            tasks, generator_factory(trainer), chat, budget=args.max_completion_length,
            max_new_tokens_per_step=args.max_new_tokens_per_step, max_steps_per_turn=args.max_steps_per_turn,
            strict_tools=args.strict_tools, system_prompt=args.system_prompt, reward=args.reward, shaper=shaper,
            group_size=args.num_generations,
        )
        trainer._last_rollout = result
        traces = result.traces
        logprobs = None if any(t.logprobs is None for t in traces) else [t.logprobs for t in traces]
        return {
            "prompt_ids": [t.prompt_ids for t in traces],
            "completion_ids": [t.completion_ids for t in traces],
            "logprobs": logprobs,
            "env_mask": [t.env_mask for t in traces],
            "rods_reward": result.rewards,  # the unshaped reward is logged as rods/raw_reward from trainer._last_rollout
        }

    return rollout_func
