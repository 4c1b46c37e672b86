"""The TRL subclasses: :class:`CurriculumGRPOTrainer` and :class:`CurriculumCallback`.

This module imports TRL and transformers at the top, so nothing imports it eagerly:
``trainer.grpo.build_trainer`` imports it when a run starts (``trainer.grpo.CurriculumGRPOTrainer``
resolves lazily too). Everything RODS adds to TRL's ``GRPOTrainer`` is here, in the order a
generation batch meets it:

1. ``_generate_and_score_completions`` keeps the rows behind the prompts (``rollout_func`` needs
   their task ids; TRL passes it only the prompts) and logs the rollout's ``rods/*`` metrics,
   **reduced across ranks** (:func:`reduce_rollout_stats`: rewards and fractions over every row of
   every rank, the step's rollout time as the slowest rank's).
2. ``_calculate_rewards`` hands the gathered rewards, in groups of K, to the curriculum
   (:meth:`trainer.curriculum.Curriculum.record`; step dispatch submits boundary seeds from there).
3. ``_prepare_inputs`` splits the generation batch into **length-aware micro-batches**
   (:func:`length_aware_split`): rows sorted by completion length, each micro-batch cut to its own
   widest row instead of TRL's random split padded to the widest episode of the whole batch.
4. :class:`CurriculumCallback` runs the epoch boundary (:meth:`trainer.curriculum.Curriculum.end_epoch`:
   detection, synthesis hand-over, the buffer's injection and retirement) and saves the curriculum
   with every checkpoint.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from accelerate.utils import gather_object
from transformers import Trainer, TrainerCallback
from transformers.trainer_callback import ProgressCallback
from trl import GRPOTrainer

from envs.task import atomic_write_text
from trainer.curriculum import STATE_FILE, Curriculum
from trainer.detection import scorable_groups
from trainer.rollout import RolloutResult

log = logging.getLogger(__name__)

TIME_FILE = "rods_time.json"
"""``checkpoint-N/rods_time.json``: training seconds up to that checkpoint (a resumed run's summary covers all)."""
PROMPT_KEYS = ("prompt_ids", "prompt_mask")
"""Left-padded prompt tensors: never trimmed (positions count from the left padding, as in the reference
and old log-probabilities computed over the whole generation batch)."""


# ---------------------------------------------------------------------------------------------- micro-batches
def length_aware_split(batch: dict[str, Any], n_chunks: int, pad_to_multiple_of: int | None = None,
                       tie_order: Sequence[int] | None = None) -> list[dict[str, Any]]:
    """Split a generation batch into ``n_chunks`` micro-batches of rows of similar completion length.

    TRL pads every completion to the widest one of the generation batch and splits it at random, so
    each micro-batch costs the widest episode of all (a 30k-token episode makes every micro-batch
    30k wide). Here rows are sorted by their completion length (longest first; rows of equal length
    in ``tie_order``, a permutation of the rows, else in batch order) and each micro-batch keeps only
    the columns its own rows use. Only
    right-padded completion columns are cut: a causal model's logits for earlier positions do not
    depend on trailing padding, so the loss is unchanged (the prompt's left padding is kept, see
    :data:`PROMPT_KEYS`). Per-row values (advantages), lists and scalars travel with their rows.
    """
    mask = batch["completion_mask"]
    n = mask.shape[0]
    if n % n_chunks:
        raise ValueError(f"{n} rows do not split into {n_chunks} micro-batches")
    width = mask.shape[1]
    lengths = _row_lengths(mask)
    rank = {row: r for r, row in enumerate(tie_order)} if tie_order is not None else {}
    order = sorted(range(n), key=lambda i: (-int(lengths[i]), rank.get(i, i)))
    size = n // n_chunks
    chunks = []
    for c in range(n_chunks):
        idx = order[c * size:(c + 1) * size]
        keep = max((int(lengths[i]) for i in idx), default=0)
        if pad_to_multiple_of:
            keep = -(-keep // pad_to_multiple_of) * pad_to_multiple_of
        keep = min(width, max(1, keep))
        index = torch.tensor(idx, device=mask.device)
        chunk: dict[str, Any] = {}
        for key, value in batch.items():
            if isinstance(value, torch.Tensor) and value.ndim >= 1 and value.shape[0] == n:
                value = value.index_select(0, index)
                if value.ndim >= 2 and key not in PROMPT_KEYS and value.shape[1] == width:
                    value = value[:, :keep]
            elif isinstance(value, list) and len(value) == n:
                value = [value[i] for i in idx]
            chunk[key] = value
        chunks.append(chunk)
    return chunks


def _row_lengths(mask: torch.Tensor) -> list[int]:
    """Columns each row uses: one past its last non-zero mask position (0 for an empty row)."""
    cols = torch.arange(1, mask.shape[1] + 1, device=mask.device)
    return (mask.ne(0) * cols).amax(dim=1).tolist()


def padded_fraction(chunks: Sequence[dict[str, Any]]) -> float:
    """Share of completion positions in ``chunks`` that are padding (what the loss forward computes for nothing)."""
    total = sum(c["completion_mask"].numel() for c in chunks)
    used = sum(int(c["completion_mask"].ne(0).sum()) for c in chunks)
    return 1.0 - used / total if total else 0.0


# ---------------------------------------------------------------------------------------------- metrics
ROLLOUT_STATS = ("seconds", "tokens", "calls", "truncated", "rows", "raw_sum")
"""One rank's rollout numbers, gathered as one row per rank (:func:`reduce_rollout_stats`)."""


def rollout_stats(result: RolloutResult) -> list[float]:
    """This rank's :data:`ROLLOUT_STATS` from a :class:`trainer.rollout.RolloutResult`."""
    return [float(result.seconds), float(result.generated_tokens), float(result.generate_calls),
            float(sum(t.truncated for t in result.traces)), float(len(result.traces)), float(sum(result.raw_rewards))]


def reduce_rollout_stats(per_rank: Sequence[Sequence[float]]) -> dict[str, float]:
    """The step's ``rods/*`` rollout metrics over every rank (one :data:`ROLLOUT_STATS` row per rank).

    Fractions and the raw reward are over every row of every rank (not rank 0's own rows); the step
    waits for the slowest rank, so ``rollout_s`` is the maximum and throughput is all tokens over it;
    ``generate_calls`` is the largest count of lock-step generate calls of any rank.
    """
    seconds = max(r[0] for r in per_rank)
    rows = sum(r[4] for r in per_rank)
    return {
        "rods/rollout_s": seconds,
        "rods/rollout_tokens_per_s": sum(r[1] for r in per_rank) / max(seconds, 1e-9),
        "rods/generate_calls": max(r[2] for r in per_rank),
        "rods/truncated_frac": sum(r[3] for r in per_rank) / max(rows, 1.0),
        # the checker's reward before any reward_shaping hook (equal to the reward without one)
        "rods/raw_reward": sum(r[5] for r in per_rank) / max(rows, 1.0),
    }


# ---------------------------------------------------------------------------------------------- trainer
def is_hub_id(name: str) -> bool:
    """``owner/model`` that is not a local path (a model card may link it to the hub)."""
    return name.count("/") == 1 and not name.startswith((".", "/", "~")) and not Path(name).exists()


def tied_weight_keys(model: Any) -> list[str]:
    """Parameter names a model ties to another (``lm_head.weight`` with ``tie_word_embeddings``); [] when untied."""
    cfg = getattr(model, "config", None)
    if not getattr(cfg, "tie_word_embeddings", False):
        return []
    keys = getattr(model, "_tied_weights_keys", None) or {}
    return list(keys)  # a dict (transformers 5: tied -> source) or a list of names


class CurriculumGRPOTrainer(GRPOTrainer):
    """GRPO whose rollouts are BFCL episodes and whose gathered rewards feed the RODS curriculum."""

    def __init__(self, *args: Any, curriculum: Curriculum, **kwargs: Any):
        self.curriculum = curriculum
        self._rollout_rows: list[dict] = []
        self._last_rollout = None
        super().__init__(*args, **kwargs)

    def create_model_card(self, model_name=None, dataset_name=None, tags=None):
        """TRL's card, with a base model and a quick-start path a reader can use.

        TRL links ``config._name_or_path`` to ``huggingface.co/<name>`` and writes ``model="<hub_model_id>"``
        (``"None"`` when nothing is pushed). Here the base model is linked only when it is a hub id
        (``Qwen/Qwen3-4B-Instruct-2507``; not the local ``rods-tiny`` or a folder), and the quick start
        loads the run's own output folder unless a ``hub_model_id`` is set.
        """
        cfg = self.model.config
        saved, saved_hub = getattr(cfg, "_name_or_path", ""), self.hub_model_id
        name = str(self.args.model_name_or_path)
        cfg._name_or_path = name if is_hub_id(name) else str(self.args.output_dir)  # a folder: TRL links nothing
        self.hub_model_id = self.args.hub_model_id or str(self.args.output_dir)
        try:
            super().create_model_card(model_name=model_name, tags=tags or ["rods", "bfcl-multi-turn"],
                                      dataset_name=dataset_name or "gorilla-llm/Berkeley-Function-Calling-Leaderboard")
        finally:
            cfg._name_or_path, self.hub_model_id = saved, saved_hub
        card = Path(self.args.output_dir) / "README.md"
        if not is_hub_id(name) and card.exists():  # TRL renders a missing base model as a link to hub page "None"
            text = card.read_text(encoding="utf-8")
            local = f"`{name}` (a local model, not on the Hugging Face Hub)"
            atomic_write_text(card, text.replace("[None](https://huggingface.co/None)", local))

    def _issue_warnings_after_load(self, load_result: Any) -> None:
        """No "missing keys ['lm_head.weight']" on resume: a model with tied embeddings saves the output
        head once (as the input embeddings) and is re-tied here; any other missing key is still reported."""
        tied = set(tied_weight_keys(self.model))
        missing = [k for k in load_result.missing_keys if k not in tied]
        if tied and len(missing) < len(load_result.missing_keys):
            self.model.tie_weights()
            load_result = load_result._replace(missing_keys=missing)
        super()._issue_warnings_after_load(load_result)

    def _generate_and_score_completions(self, inputs):
        self._rollout_rows = inputs
        out = super()._generate_and_score_completions(inputs)
        if self.model.training:
            self.curriculum.generations_in_epoch += 1
            r = self._last_rollout
            if r is not None:  # every rank gets here once per generation batch: the gather is matched
                local = torch.tensor([rollout_stats(r)], dtype=torch.float64, device=self.accelerator.device)
                gathered = self.accelerator.gather(local).tolist()
                for key, value in reduce_rollout_stats(gathered).items():
                    self._metrics["train"][key].append(value)
        return out

    def _prepare_inputs(self, generation_batch):
        """TRL's buffering, with :func:`length_aware_split` in place of its shuffle-and-split."""
        if not self.model.training:
            return super()._prepare_inputs(generation_batch)
        every = self.args.steps_per_generation * self.num_iterations
        if self._step % every == 0 or self._buffered_inputs is None:
            batch = self._generate_and_score_completions(generation_batch)
            if any(k in batch for k in ("pixel_values", "image_grid_thw")):  # images: TRL's own path
                from trl.trainer.utils import shuffle_sequence_dict, split_tensor_dict

                chunks = split_tensor_dict(shuffle_sequence_dict(batch), self.args.steps_per_generation)
            else:  # ties in a random order drawn as TRL's shuffle draws it (the same RNG stream as TRL's)
                ties = torch.randperm(batch["completion_mask"].shape[0]).tolist()
                chunks = length_aware_split(batch, self.args.steps_per_generation, self.pad_to_multiple_of, ties)
            self._metrics["train"]["rods/pad_frac"].append(padded_fraction(chunks))
            self._buffered_inputs = chunks
        return self._buffered_inputs[self._step % self.args.steps_per_generation]

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
        self.clock: tuple[float, float] | None = None
        """(perf_counter at this process's start of training, seconds trained before it: a resumed run's)."""

    def seconds(self) -> float:
        """Training seconds of the whole run so far, earlier runs of a resumed one included."""
        if self.clock is None:
            return 0.0
        start, before = self.clock
        return before + time.perf_counter() - start

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
            atomic_write_text(ckpt / TIME_FILE, json.dumps({"train_seconds": self.seconds()}))
        return control


# ---------------------------------------------------------------------------------------------- console
def step_line(logs: dict[str, Any], state: Any) -> str | None:
    """One short console line for a log event (the full dict goes to ``report_to`` and ``log_history.json``).

    A training step: its reward (and the checker's, when a shaping hook changed it), loss and time; an
    epoch boundary: the pool's change. Other events (the final ``train_runtime``): None, the summary follows.
    """
    if "loss" in logs:
        parts = [f"step {state.global_step}/{state.max_steps}", f"epoch {float(logs.get('epoch', state.epoch or 0)):.2f}"]
        if "reward" in logs:
            raw = logs.get("rods/raw_reward")
            shaped = raw is not None and abs(float(raw) - float(logs["reward"])) > 1e-9
            parts.append(f"reward {float(logs['reward']):.3f}" + (f" (checker {float(raw):.3f})" if shaped else ""))
        parts.append(f"loss {float(logs['loss']):.4f}")
        if "step_time" in logs:
            parts.append(f"{float(logs['step_time']):.1f} s")
        return "  ".join(parts)
    if "rods/pool_size" in logs:
        retired = sum(v for k, v in logs.items() if k.startswith("rods/retired/"))
        return (f"epoch {int(logs.get('rods/epoch', 0))} boundary: pool {int(logs['rods/pool_size'])} "
                f"(+{int(logs.get('rods/injected', 0))} injected, -{int(retired)} retired), "
                f"boundary tasks {int(logs.get('rods/boundary', 0))}, synthesized {int(logs.get('rods/synthesized', 0))}")
    return None


class CompactProgress(ProgressCallback):
    """HF's progress bar, with :func:`step_line` instead of the raw metrics dict printed at every step."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_world_process_zero and self.training_bar is not None and logs:
            line = step_line(logs, state)
            if line:
                self.training_bar.write(line)


def use_compact_progress(trainer: Any) -> None:
    """Swap the Trainer's progress callback for :class:`CompactProgress` (no bar with ``disable_tqdm``: nothing to do)."""
    if trainer.pop_callback(ProgressCallback) is not None:
        trainer.add_callback(CompactProgress)
