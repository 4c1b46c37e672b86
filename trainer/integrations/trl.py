"""Multi-turn BFCL episodes in your own TRL ``GRPOTrainer``, and what an SFT row supervises.

TRL 1.16's tool loop cannot add a *user* turn, and its ``rollout_func`` receives only the prompts, not the rows
(several BFCL tasks share a first prompt: 800 tasks have 292 distinct ones). Two documented TRL hooks together fix
both: ``environment_factory=BFCLEpisode`` makes TRL call ``reset(**row)`` on one instance per rollout, in the
prompts' order, so each instance knows its task (:func:`rods_agents.run.outputs.task_from_row`); the instance
exposes no tools, so TRL's own tool loop stays off. ``rollout_func=bfcl_rollout_func(tokenizer, config)`` then runs
each rollout as a whole BFCL episode with the rollout ``rods train`` uses (:func:`trainer.rollout.make_rollout_func`:
every user turn, tool results from the task's own environment, injected tokens masked out of the loss) and hands the
checker's progress reward to :func:`trainer.rollout.rods_reward`::

    from datasets import load_from_disk
    from trl import GRPOConfig, GRPOTrainer
    from trainer.integrations.trl import BFCLEpisode, bfcl_rollout_func, rods_reward

    config = GRPOConfig(output_dir="out/grpo", max_completion_length=4096)
    trainer = GRPOTrainer(model=model, processing_class=tok, args=config,
                          train_dataset=load_from_disk("exports/demo"),   # rods export RUN --format trl
                          environment_factory=BFCLEpisode, reward_funcs=rods_reward,
                          rollout_func=bfcl_rollout_func(tok, config, max_steps_per_turn=5))

``scripts/trl_grpo_multiturn.py`` runs it on the tiny CPU model. :func:`supervised_tokens_by_role` counts which
messages an ``SFTTrainer`` batch trains on (``assistant_only_loss=True`` keeps tool results and user turns out).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from envs.task import Task
from rods_agents.run.outputs import HERMES_TOOLS_HEAD, task_from_row
from trainer.chat_tokens import ChatTokenizer
from trainer.generators import HFGenerator, VLLMGenerator
from trainer.rollout import RolloutSettings, make_rollout_func, rods_reward

__all__ = ["BFCLEpisode", "bfcl_rollout_func", "rods_reward", "supervised_tokens_by_role"]


class BFCLEpisode:
    """TRL ``environment_factory`` class: one instance per rollout, told its task by ``reset(**row)``.

    It has no public methods besides ``reset``, so TRL exposes no tools and runs no tool loop of its own: the
    episode (all turns, tool calls executed in the task's environment) is played by :func:`bfcl_rollout_func`."""

    def __init__(self) -> None:
        self.task: Task | None = None
        self.system_prompt: str | None = None

    def reset(self, **row: Any) -> None:
        """Rebuild the row's task (a ``rods export --format trl`` row) and its system prompt; the prompt is unchanged
        (returns None)."""
        self.task = task_from_row(row)
        self.system_prompt = _system_prompt(row.get("prompt") or [])


def _system_prompt(prompt: Sequence[dict]) -> str | None:
    """The row's own system text, without a ``--tools_in_system hermes`` block (the rollout renders the tools through
    the chat template, turn by turn, as the evaluator offers them)."""
    if not prompt or prompt[0].get("role") != "system":
        return None
    text = prompt[0].get("content") or ""
    cut = text.find(HERMES_TOOLS_HEAD)
    return (text[:cut].rstrip("\n") or None) if cut >= 0 else text


def _default_generator(tokenizer: Any, config: Any) -> Callable[[Any], Any]:
    """transformers ``generate`` on the trainer's model, or TRL's vLLM when the config uses it."""

    def make(trainer: Any) -> Any:
        if getattr(config, "use_vllm", False):
            return VLLMGenerator(trainer)
        from trl.models import unwrap_model_for_generation

        def unwrap() -> Any:
            return unwrap_model_for_generation(trainer.model_wrapped, trainer.accelerator,
                                               gather_deepspeed3_params=getattr(config, "ds3_gather_for_generation",
                                                                                True))

        return HFGenerator(trainer.model, tokenizer, temperature=getattr(config, "temperature", 1.0),
                           top_p=getattr(config, "top_p", 1.0), top_k=getattr(config, "top_k", None),
                           min_p=getattr(config, "min_p", None),
                           repetition_penalty=getattr(config, "repetition_penalty", 1.0), unwrap=unwrap)

    return make


def bfcl_rollout_func(tokenizer: Any, config: Any, *, max_new_tokens_per_step: int = 1024,
                      max_steps_per_turn: int = 5, strict_tools: bool = False, reward: str = "progress",
                      chat_template: str | None = None,
                      generator_factory: Callable[[Any], Any] | None = None) -> Callable[[list, Any], dict]:
    """TRL's ``rollout_func`` playing whole BFCL episodes for a trainer built with ``environment_factory=BFCLEpisode``.

    ``config`` is the ``GRPOConfig`` (its ``max_completion_length``, ``num_generations``, sampling and vLLM fields);
    the other arguments are the episode limits ``rods train`` takes from its recipe. Rewards reach TRL through
    :func:`rods_reward` (pass it as ``reward_funcs``)."""
    tasks: dict[str, Task] = {}
    system: list[str | None] = []

    def rows(trainer: Any) -> list[dict]:
        envs = getattr(trainer, "environments", None) or []
        if not envs or not all(isinstance(e, BFCLEpisode) and e.task is not None for e in envs):
            raise RuntimeError("bfcl_rollout_func needs GRPOTrainer(..., environment_factory=BFCLEpisode): TRL gives "
                               "rollout_func only the prompts, and several BFCL tasks share one")
        prompts = {e.system_prompt for e in envs}
        if len(prompts) != 1:
            raise ValueError(f"one system prompt per batch expected, got {len(prompts)} different ones")
        system[:] = list(prompts)
        settings.system_prompt = system[0]
        for e in envs:
            tasks[e.task.id] = e.task  # type: ignore[union-attr]
        return [{"task_id": e.task.id} for e in envs]  # type: ignore[union-attr]

    settings = RolloutSettings.of(config)
    settings.max_new_tokens_per_step = max_new_tokens_per_step
    settings.max_steps_per_turn = max_steps_per_turn
    settings.strict_tools = strict_tools
    settings.reward = reward
    settings.reward_shaping = None
    template_kwargs = getattr(config, "chat_template_kwargs", None)
    chat = ChatTokenizer(tokenizer, chat_template=chat_template, template_kwargs=template_kwargs)
    return make_rollout_func(tasks.__getitem__, settings, chat,
                             generator_factory or _default_generator(tokenizer, config), rows=rows)


def supervised_tokens_by_role(tokenizer: Any, messages: list[dict], input_ids: Sequence[int],
                              labels: Sequence[int], *, tools: list[dict] | None = None,
                              chat_template: str | None = None) -> dict[str, int]:
    """How many supervised tokens (``labels != -100``) fall in each role's messages of one SFT example.

    Each message's span is found by rendering the conversation up to it and taking the longest common prefix with
    the whole rendering (template glue before a message belongs to it; tool results grouped into one block by the
    template still split per message). ``input_ids`` must be the example's tokens as the trainer saw them (padding
    after them is ignored)."""
    full = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False, chat_template=chat_template)
    ends = []
    for i in range(1, len(messages) + 1):
        part = tokenizer.apply_chat_template(messages[:i], tools=tools, tokenize=False, chat_template=chat_template)
        ends.append(_common_prefix(full, part))
    enc = tokenizer(full, add_special_tokens=False, return_offsets_mapping=True)
    ids = list(enc["input_ids"])
    if list(input_ids[:len(ids)]) != ids:
        raise ValueError("input_ids are not this conversation's tokens (other messages, tools or template?)")
    counts: dict[str, int] = {}
    for (start, _), label in zip(enc["offset_mapping"], labels[:len(ids)], strict=True):
        if label == -100:
            continue
        index = next((i for i, end in enumerate(ends) if start < end), len(messages) - 1)
        role = messages[index]["role"]
        counts[role] = counts.get(role, 0) + 1
    return counts


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i
