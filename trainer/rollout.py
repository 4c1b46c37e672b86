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

Revealed tools (miss_func): the prompt carries turn 0's tools; when a later turn offers tools not shown
yet (BFCL reveals held-out functions at a turn), a system message with exactly the template's tool block
for those tools (:meth:`ChatTokenizer.tools_message`) is injected before that turn's user message, so
from the reveal turn on the trace shows the same tool set the evaluator offers (``envs.tools.tools_for_turn``);
re-rendering the whole prefix with the new list would change tokens already trained on.

Stops: a step is finished when it ends on any of the model's stop ids (:func:`stop_token_ids`: the
tokenizer's EOS plus ``generation_config.eos_token_id``, e.g. Qwen3's ``<|im_end|>`` and
``<|endoftext|>``); a stop other than the template's end-of-turn gets one masked end-of-turn token
after it, so the conversation stays well formed and its tool calls count.

Context: ``context_limit`` (vLLM's ``max_model_len``, the model's positions) caps each episode's budget at
``limit - len(prompt)``; a prompt that alone does not fit ends its episode at once (logged with the task
id, prompt cut to a short tail, one masked token), never a failed generate call. Such an episode is
*unscorable*, not a failure: its reward goes to TRL as ``None`` (NaN: advantage 0, left out of the reward
statistics) and the curriculum leaves its group out of the detector (:func:`trainer.detection.scorable_groups`),
so a task the context cannot hold is never ranked "hard", burned in or pruned on a score it never earned.

Per-request budgets: every model turn asks for at most its own episode's remaining budget
(``max_tokens`` per vLLM request; a per-row stop in transformers ``generate``).

Reward: the checker's progress reward, computed once per episode, optionally reshaped by a
registered hook (:mod:`trainer.reward_shaping`), passed through the extra rollout key ``rods_reward``
to :func:`rods_reward` (TRL hands extra rollout keys to reward functions as keyword arguments).

**Public entry point** (for a user's own TRL ``GRPOTrainer``)::

    from trainer.rollout import RolloutSettings, make_rollout_func, rods_reward
    from trainer.chat_tokens import ChatTokenizer
    from trainer.generators import HFGenerator

    settings = RolloutSettings(max_completion_length=4096, num_generations=8)   # or RolloutSettings.of(grpo_config)
    rollout_func = make_rollout_func(tasks_by_id.__getitem__, settings, ChatTokenizer(tok),
                                     lambda trainer: HFGenerator(trainer.model, tok),
                                     rows=lambda trainer: trainer._rollout_rows)
    GRPOTrainer(..., reward_funcs=[rods_reward], rollout_func=rollout_func)

``rows(trainer)`` returns the dataset rows behind the prompts TRL passes (one ``task_id`` per row,
K consecutive copies per task); TRL does not hand them to ``rollout_func``, so the trainer must
keep them (``trainer.trl_trainer.CurriculumGRPOTrainer`` does, in ``_generate_and_score_completions``).
The other pieces live by concern: chat-template tokens in :mod:`trainer.chat_tokens`, batched
generation in :mod:`trainer.generators`, the demo reward shaper in :mod:`trainer.reward_shaping`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from envs.checker import check
from envs.policies import parse_hermes
from envs.rewards import REWARDS
from envs.runner import AssistantMessage, Episode, StepContext, run_episode
from envs.task import Task
from trainer.chat_tokens import ChatTokenizer
from trainer.generators import Generated, Generator, HFGenerator, LockstepBatcher, VLLMGenerator, stop_token_ids
from trainer.reward_shaping import REWARD_SHAPERS, RewardShaper, resolve_shaper, synthetic_boundary

log = logging.getLogger(__name__)
__all__ = [  # the rollout's own names, and the pieces a user's trainer needs, importable from one place
    "REWARD_SHAPERS", "ChatTokenizer", "Generated", "Generator", "HFGenerator", "LockstepBatcher", "RewardShaper",
    "RolloutResult", "RolloutSettings", "TokenTrace", "TracingPolicy", "VLLMGenerator", "context_limit",
    "make_rollout_func", "resolve_shaper", "rods_reward", "run_rollouts", "stop_token_ids", "synthetic_boundary",
]


# ---------------------------------------------------------------------------------------------- settings
@dataclass
class RolloutSettings:
    """What one rollout needs from the run's config (a ``RODSConfig`` has every field; see :meth:`of`).

    A plain dataclass so a user's own GRPO script can roll out BFCL-style episodes without RODS's config.
    """

    max_completion_length: int = 4096
    """Budget of all completion tokens of one episode, model and injected alike (as TRL's)."""
    num_generations: int = 8
    """K: consecutive rows share one task (the shaper gets the rollout's index in its group)."""
    max_new_tokens_per_step: int = 1024
    max_steps_per_turn: int = 5
    strict_tools: bool = False
    system_prompt: str | None = None
    reward: str = "progress"
    reward_shaping: str | None = None
    use_vllm: bool = False
    vllm_max_model_length: int | None = None

    @classmethod
    def of(cls, config: Any) -> RolloutSettings:
        """The settings from a config that has these fields (``RODSConfig``); a missing field keeps its default
        (a plain ``GRPOConfig`` has no ``max_steps_per_turn``)."""
        if isinstance(config, cls):
            return config
        names = [f.name for f in fields(cls)]
        return cls(**{n: getattr(config, n) for n in names if hasattr(config, n)})


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
    overlong: bool = False
    """The first prompt alone did not fit the context: nothing was generated, the episode is unscorable."""

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


def _tool_name(tool: dict) -> str:
    return str(tool.get("function", tool).get("name", ""))


# ---------------------------------------------------------------------------------------------- policy
class TracingPolicy:
    """A :class:`~envs.runner.Policy` that generates through the batcher and records the token trace."""

    def __init__(self, batcher: LockstepBatcher, chat: ChatTokenizer, *, budget: int, max_new_tokens_per_step: int,
                 context_limit: int | None = None):
        self.batcher = batcher
        self.chat = chat
        self.budget = budget
        self.step_cap = max_new_tokens_per_step
        self.context_limit = context_limit
        self.trace = TokenTrace()
        self._seen = 0  # messages already represented in the trace (the last one is our own reply)
        self._shown: set[str] = set()  # tool names the trace has shown the model so far
        self._closed = False

    def _start(self, messages: list[dict], tools: list[dict], ctx: StepContext) -> bool:
        """Render the prompt; False when it alone leaves no room in the context (the episode ends at once)."""
        trace = self.trace
        trace.prompt_ids = self.chat.prompt_ids(messages, tools)
        self._shown = {_tool_name(t) for t in tools}
        if self.context_limit is None:
            return True
        self.budget = min(self.budget, self.context_limit - len(trace.prompt_ids))
        if self.budget >= 1:
            return True
        log.warning("task %s: prompt of %d tokens leaves no room in the context limit %d; episode ends unanswered",
                    ctx.task.id, len(trace.prompt_ids), self.context_limit)
        # a short tail: nothing trains on this row (mask 0, advantage 0), so TRL's logprob forward passes over
        # it (policy, old, reference; K copies) should cost nothing, not a full context each
        trace.prompt_ids = trace.prompt_ids[-max(1, min(16, self.context_limit - 1)):]
        trace.add_injected([self.chat.eos_token_id])  # one masked token: TRL needs a completion, nothing trains
        trace.overlong = True
        return False

    async def respond(self, messages: list[dict], tools: list[dict], ctx: StepContext) -> AssistantMessage:
        if self._closed:
            return AssistantMessage(content="")
        trace = self.trace
        if not trace.prompt_ids:
            if not self._start(messages, tools, ctx):
                return self._close()
        else:
            new = messages[self._seen:]
            revealed = [t for t in tools if _tool_name(t) not in self._shown]
            if revealed:  # miss_func reveal: show the new tools before the turn, as the evaluator offers them
                new = [self.chat.tools_message(revealed), *new]
                self._shown.update(_tool_name(t) for t in revealed)
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
        if out.finished:
            if out.ids[-1] != self.chat.eos_token_id:  # another stop id (<|endoftext|>): close the turn, masked
                if len(trace.completion_ids) < self.budget:
                    trace.add_injected([self.chat.eos_token_id])
            return parse_hermes(self.chat.decode(out.ids[:-1]), eos=self.chat.eos_token)
        text = self.chat.decode(out.ids)
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


def rods_reward(completions: list, rods_reward: list[float | None] | None = None,
                **kwargs: Any) -> list[float | None]:
    """GRPO reward function: the per-episode reward computed in the rollout (extra key ``rods_reward``).

    None (an unscorable episode) stays None: TRL turns it into NaN, advantage 0, outside the reward stats."""
    if rods_reward is None:
        raise ValueError("rods_reward needs the 'rods_reward' rollout key (use trainer.rollout.make_rollout_func)")
    return [None if r is None else float(r) for r in rods_reward]


# ---------------------------------------------------------------------------------------------- rollouts
@dataclass
class RolloutResult:
    traces: list[TokenTrace]
    episodes: list[Episode]
    rewards: list[float | None]
    """Per episode, as TRL gets it; None for an unscorable (over-long) episode."""
    raw_rewards: list[float]
    """The checker's reward before shaping, for logging (0.0 for an unscorable episode)."""
    seconds: float
    generate_calls: int
    generated_tokens: int


async def _run_all(tasks: list[Task], generator: Generator, chat: ChatTokenizer, *,
                   budget: int, step_cap: int, max_steps_per_turn: int, strict_tools: bool,
                   system_prompt: str | None, context_limit: int | None = None,
                   ) -> tuple[list[TracingPolicy], list[Episode], LockstepBatcher]:
    batcher = LockstepBatcher(generator, len(tasks))
    policies = [TracingPolicy(batcher, chat, budget=budget, max_new_tokens_per_step=step_cap,
                              context_limit=context_limit) for _ in tasks]

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
                 group_size: int = 1, context_limit: int | None = None) -> RolloutResult:
    """Run one episode per task (tasks repeat K times consecutively), score each once, trace each.

    ``context_limit``: most tokens (prompt + completion) one episode may hold (see the module doc).
    """
    start = time.perf_counter()
    group_index = [i % group_size for i in range(len(tasks))]
    policies, episodes, batcher = _run_sync(_run_all(
        tasks, generator, chat, budget=budget, step_cap=max_new_tokens_per_step,
        max_steps_per_turn=max_steps_per_turn, strict_tools=strict_tools, system_prompt=system_prompt,
        context_limit=context_limit,
    ))
    if batcher.error is not None:
        raise batcher.error
    reward_fn = REWARDS[reward]
    raw, shaped = [], []
    for task, k, episode, policy in zip(tasks, group_index, episodes, policies, strict=True):
        r = reward_fn(check(task, episode.decoded, inference_error=episode.error))
        raw.append(r)
        if policy.trace.overlong:  # never attempted: no score for TRL or the detector
            shaped.append(None)
        else:
            shaped.append(float(shaper(task, k, r, episode)) if shaper else r)
    return RolloutResult(
        traces=[p.trace for p in policies], episodes=episodes, rewards=shaped, raw_rewards=raw,
        seconds=time.perf_counter() - start, generate_calls=batcher.calls, generated_tokens=batcher.generated_tokens,
    )


def context_limit(settings: RolloutSettings, model: Any = None) -> int | None:
    """Most tokens one episode may hold: vLLM's ``vllm_max_model_length`` (with vLLM) and the model's
    ``max_position_embeddings``, whichever is smaller; None when neither is known."""
    limits = []
    if settings.use_vllm and settings.vllm_max_model_length:
        limits.append(int(settings.vllm_max_model_length))
    positions = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        limits.append(positions)
    return min(limits) if limits else None


def _rows_of(trainer: Any) -> list[dict]:
    return trainer._rollout_rows


def make_rollout_func(lookup: Callable[[str], Task], settings: RolloutSettings | Any, chat: ChatTokenizer,
                      generator_factory: Callable[[Any], Generator], *,
                      rows: Callable[[Any], list[dict]] = _rows_of) -> Callable[[list, Any], dict]:
    """Build TRL's ``rollout_func(prompts, trainer) -> dict`` (the module docstring shows a user's script).

    ``rows(trainer)`` gives the rows behind ``prompts`` (K consecutive copies per task; default
    ``trainer._rollout_rows``, set by :class:`trainer.trl_trainer.CurriculumGRPOTrainer`); ``lookup``
    maps their ``task_id`` to the task in the live pool. ``settings`` is a :class:`RolloutSettings`
    or a config holding its fields (``RODSConfig``). The result of the last call is kept on the
    trainer as ``trainer._last_rollout`` (the trainer logs its ``rods/*`` metrics from it).
    """
    settings = RolloutSettings.of(settings)
    shaper = resolve_shaper(settings.reward_shaping)

    def rollout_func(prompts: list, trainer: Any) -> dict:
        batch = rows(trainer)
        if len(batch) != len(prompts):
            raise RuntimeError(f"rollout rows ({len(batch)}) and prompts ({len(prompts)}) disagree")
        tasks = [lookup(r["task_id"]) for r in batch]
        result = run_rollouts(
            tasks, generator_factory(trainer), chat, budget=settings.max_completion_length,
            max_new_tokens_per_step=settings.max_new_tokens_per_step, max_steps_per_turn=settings.max_steps_per_turn,
            strict_tools=settings.strict_tools, system_prompt=settings.system_prompt, reward=settings.reward,
            shaper=shaper, group_size=settings.num_generations,
            context_limit=context_limit(settings, getattr(trainer, "model", None)),
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
