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
registered hook (:data:`REWARD_SHAPERS`), passed through the extra rollout key ``rods_reward``
to :func:`rods_reward` (TRL hands extra rollout keys to reward functions as keyword arguments).
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import importlib
import json
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

    def _text(self, messages: list[dict], tools: list[dict] | None) -> str:
        return self.tokenizer.apply_chat_template(
            messages, tools=tools or None, add_generation_prompt=False, tokenize=False,
            chat_template=self.chat_template, **self.template_kwargs,
        )

    def tools_message(self, tools: list[dict]) -> dict:
        """A system message whose content is the template's own tool block for ``tools``.

        Rendered generically: the text the template puts before the first user message with
        ``tools``, minus the template's system-message frame (found by rendering a marker system
        message). For Qwen3 that is ``# Tools ... <tools>{schemas}</tools> ...``, the block of the
        first prompt.
        """
        user = [{"role": "user", "content": "\x00u"}]
        with_tools = self._text(user, tools)
        marked = self._text([{"role": "system", "content": "\x00s"}, *user], None)
        tail = len(_common_suffix(with_tools, marked))
        block, frame = with_tools[: len(with_tools) - tail], marked[: len(marked) - tail]
        head, _, foot = frame.partition("\x00s")
        if not (block.startswith(head) and block.endswith(foot)) or len(block) <= len(head) + len(foot):
            schemas = "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)
            return {"role": "system", "content": f"More functions are available:\n<tools>\n{schemas}\n</tools>"}
        return {"role": "system", "content": block[len(head): len(block) - len(foot)]}

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


def _common_suffix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[len(a) - 1 - n] == b[len(b) - 1 - n]:
        n += 1
    return a[len(a) - n:]


def _tool_name(tool: dict) -> str:
    return str(tool.get("function", tool).get("name", ""))


def stop_token_ids(tokenizer: Any, model: Any = None) -> frozenset[int]:
    """Every id that ends a model turn: the tokenizer's EOS plus the model's ``generation_config.eos_token_id``
    (an int or a list; Qwen3 stops on ``<|im_end|>`` and ``<|endoftext|>``), as vLLM and ``generate`` stop."""
    ids: set[int] = set()
    tok = getattr(tokenizer, "tokenizer", tokenizer)  # a processor wraps the tokenizer
    if getattr(tok, "eos_token_id", None) is not None:
        ids.add(int(tok.eos_token_id))
    gen = getattr(model, "generation_config", None)
    eos = getattr(gen, "eos_token_id", None)
    for i in (eos if isinstance(eos, (list, tuple, set)) else [eos]):
        if i is not None:
            ids.add(int(i))
    return frozenset(ids)


def _cut(ids: Sequence[int], logprobs: Sequence[float] | None, cap: int,
         stop_ids: int | Sequence[int] | frozenset[int]) -> Generated:
    stops = {stop_ids} if isinstance(stop_ids, int) else set(stop_ids)
    ids = list(ids)[:cap]
    end = next((i for i, t in enumerate(ids) if t in stops), None)
    if end is not None:
        ids = ids[: end + 1]
    lp = None if logprobs is None else list(logprobs)[: len(ids)]
    return Generated(ids=ids, logprobs=lp, finished=bool(ids) and ids[-1] in stops)


class HFGenerator:
    """transformers ``generate`` on the training model (CPU runs, tests); no logprobs.

    Sampling follows the GRPO config (temperature, top_p, top_k, min_p, repetition_penalty). Each row
    stops at its own cap (a per-row stopping criterion), so rows near their budget stop decoding
    instead of running to the batch's largest cap.
    """

    def __init__(self, model: Any, tokenizer: Any, *, temperature: float = 1.0, top_p: float = 1.0,
                 top_k: int | None = None, min_p: float | None = None, repetition_penalty: float = 1.0,
                 unwrap: Callable[[], Any] | None = None):
        self.model = model
        self.tokenizer = tokenizer
        self.unwrap = unwrap
        self.stop_ids = stop_token_ids(tokenizer, model)
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
        eos = sorted(self.stop_ids)
        groups: dict[int, list[int]] = {}
        for i, p in enumerate(prompts):
            groups.setdefault(len(p), []).append(i)
        out: list[Generated | None] = [None] * len(prompts)
        ctx = self.unwrap() if self.unwrap is not None else contextlib.nullcontext(self.model)
        with ctx as model, torch.no_grad():
            device = next(model.parameters()).device
            for width, idx in groups.items():
                ids = torch.tensor([prompts[i] for i in idx], dtype=torch.long, device=device)
                caps = [max_new_tokens[i] for i in idx]
                gen = model.generate(
                    input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=max(caps),
                    eos_token_id=eos, pad_token_id=pad, stopping_criteria=_row_caps(width, caps, device),
                    **self.sampling,
                )
                for row, i in zip(gen[:, width:].tolist(), idx, strict=True):
                    out[i] = _cut(row, None, max_new_tokens[i], self.stop_ids)
        return out  # type: ignore[return-value]


def _row_caps(width: int, caps: list[int], device: Any) -> Any:
    """A stopping criterion that ends each row of a ``generate`` batch at its own new-token cap."""
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    limit = torch.tensor(caps, device=device)

    class RowCaps(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            return (input_ids.shape[1] - width) >= limit

    return StoppingCriteriaList([RowCaps()])


def _with_max_tokens(params: Any, n: int) -> Any:
    p = params.clone() if hasattr(params, "clone") else copy.copy(params)
    p.max_tokens = int(n)
    return p


class VLLMGenerator:
    """TRL's vLLM integration (``trainer.vllm_generation``): colocate by default, weights synced by TRL.

    Colocate with TP=1 (the recipe): one ``SamplingParams`` per request, each with its episode's
    remaining budget as ``max_tokens`` (vLLM's ``LLM.generate`` takes a list; TRL builds one, so its
    ``llm.generate`` is wrapped for the call). Other modes get the batch's largest cap. Every output is
    cut to its cap and at the first stop id (the sampling logprobs are cut with it).

    Server mode on several training processes, and colocate with tensor parallelism, run
    collectives inside ``generate`` that assume every rank calls it equally often with equally
    long lists; lock-step batches differ per rank, so use colocate with TP=1 on several ranks
    (server mode is fine with one training process). Keep ``vllm_enable_sleep_mode`` off: TRL
    puts vLLM to sleep after every ``generate`` call and re-syncs weights on wake-up, i.e. once
    per episode turn here.
    """

    def __init__(self, trainer: Any):
        self.trainer = trainer
        self.stop_ids = stop_token_ids(trainer.processing_class, getattr(trainer, "model", None))

    def generate(self, prompts: list[list[int]], max_new_tokens: list[int]) -> list[Generated]:
        vg = self.trainer.vllm_generation
        saved = vg.max_completion_length  # read per call as vLLM's max_tokens: cap it at this batch's largest need
        vg.max_completion_length = max(max_new_tokens)
        llm = getattr(vg, "llm", None) if getattr(vg, "mode", None) == "colocate" \
            and getattr(vg, "tensor_parallel_size", 1) == 1 else None
        if llm is not None:
            batch_generate = llm.generate

            def per_request(requests: Any, sampling_params: Any = None, **kwargs: Any) -> Any:
                if sampling_params is not None and not isinstance(sampling_params, (list, tuple)) \
                        and len(requests) == len(max_new_tokens):
                    sampling_params = [_with_max_tokens(sampling_params, n) for n in max_new_tokens]
                return batch_generate(requests, sampling_params=sampling_params, **kwargs)

            own = vars(llm).get("generate")  # an instance attribute someone set before us: put it back after
            llm.generate = per_request  # an instance attribute shadows the method for this call only
        try:
            _, completion_ids, logprobs, _ = vg.generate(prompts=prompts, images=None, num_generations=1)
        finally:
            vg.max_completion_length = saved
            if llm is not None:
                if own is None:
                    del llm.generate
                else:
                    llm.generate = own
        out = []
        for i, (ids, cap) in enumerate(zip(completion_ids, max_new_tokens, strict=True)):
            lp = None
            if logprobs is not None and logprobs[i] is not None:
                lp = [tok[0] if isinstance(tok, (list, tuple)) else tok for tok in logprobs[i]]
            out.append(_cut(ids, lp, cap, self.stop_ids))
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


def context_limit(args: Any, model: Any = None) -> int | None:
    """Most tokens one episode may hold: vLLM's ``vllm_max_model_length`` (with vLLM) and the model's
    ``max_position_embeddings``, whichever is smaller; None when neither is known."""
    limits = []
    if getattr(args, "use_vllm", False) and getattr(args, "vllm_max_model_length", None):
        limits.append(int(args.vllm_max_model_length))
    positions = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        limits.append(positions)
    return min(limits) if limits else None


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
            group_size=args.num_generations, context_limit=context_limit(args, getattr(trainer, "model", None)),
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
