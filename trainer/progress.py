"""Truthful progress for a pool that changes size: the bar's total, ``state.max_steps`` and the logged epoch.

The training stream is an ``IterableDataset`` with no length, so HF's Trainer needs ``max_steps``
and RODS sets an upper bound (every epoch at seeds + P_max); the Trainer then shows that bound as
the bar's total (a finished run ends at ``42% 8/19``) and logs ``epoch = step / bound`` (2.158 for
a 3-epoch run, 0.19 after a resume). The pool is fixed within an epoch and known at each boundary,
so :class:`TruthfulProgress` recomputes the total after every step from the current epoch's
generation batches left and the current pool for the epochs after it, updates the bar, and logs
the curriculum's own epoch (``epoch index + fraction of its generation batches``): the last log
line of an N-epoch run says epoch N, and a finished run ends at 100%.

The bound stays the hard stop (``args.max_steps``): the estimate never stops training inside an
epoch (see :meth:`TruthfulProgress.on_step_end`).

**A synthesis stop** (``synthesis_on_failure: stop``) is deferred to the boundary's checkpoint: the
curriculum finishes the boundary and records the error; this callback asks the Trainer to save and
stop, and raises the error once the checkpoint (model, optimizer, curriculum with the failed round
back in flight) is written, so ``--resume`` loses no epoch.
"""

from __future__ import annotations

import math
from typing import Any

from transformers import TrainerCallback


def steps_per_generation_batch(args: Any) -> float:
    """Optimizer steps one generation batch feeds (TRL reuses it ``num_iterations`` times); a fraction when several
    generate calls feed one step (``steps_per_generation < gradient_accumulation_steps``, the GPU recipe)."""
    return args.steps_per_generation * args.num_iterations / args.gradient_accumulation_steps


def epoch_steps(generations: int, args: Any) -> int:
    """Optimizer steps of ``generations`` generation batches (the Trainer steps once more at an epoch's end)."""
    return math.ceil(max(0, generations) * steps_per_generation_batch(args)) if generations > 0 else 0


def generations_for(pool_size: int, args: Any) -> int:
    """Generation batches of an epoch over ``pool_size`` tasks (the stream wraps to whole batches)."""
    unique = max(1, args.generation_batch_size // args.num_generations)
    return math.ceil(pool_size / unique)


def planned_total(args: Any, curriculum: Any, global_step: int, epochs: int) -> int:
    """Steps the run will have taken at its end, as known now (never above ``args.max_steps``)."""
    pool = len(curriculum.buffer)
    started = curriculum.epoch_generations > 0 and curriculum.generations_in_epoch > 0
    left_now = (curriculum.epoch_generations - curriculum.generations_in_epoch) if started else generations_for(pool, args)
    later = max(0, epochs - curriculum.epoch - 1)
    total = global_step + epoch_steps(left_now, args) + later * epoch_steps(generations_for(pool, args), args)
    return min(int(args.max_steps), total) if args.max_steps > 0 else total


class TruthfulProgress(TrainerCallback):
    """Keeps ``state.max_steps``, the tqdm bar and ``state.epoch`` true to the curriculum (module docstring).

    Register it after the curriculum callback (it reads the boundary's result) and before the
    Trainer's progress callback (added last by the Trainer itself).
    """

    def __init__(self, curriculum: Any, epochs: int):
        self.curriculum = curriculum
        self.epochs = epochs
        self.trainer: Any = None

    def _bar(self) -> Any:
        if self.trainer is None:
            return None
        for cb in self.trainer.callback_handler.callbacks:
            bar = getattr(cb, "training_bar", None)
            if bar is not None:
                return bar
        return None

    def _set_total(self, state: Any, total: int) -> None:
        state.max_steps = max(total, state.global_step)
        bar = self._bar()
        if bar is not None and bar.total != state.max_steps:
            bar.total = state.max_steps
            bar.refresh()

    def _epoch(self) -> float:
        cur = self.curriculum
        frac = cur.generations_in_epoch / cur.epoch_generations if cur.epoch_generations else 0.0
        return round(cur.epoch + min(1.0, frac), 4)

    def on_train_begin(self, args, state, control, **kwargs):
        self._set_total(state, planned_total(args, self.curriculum, state.global_step, self.epochs))
        state.epoch = self._epoch()
        return control

    def on_step_end(self, args, state, control, **kwargs):
        cur = self.curriculum
        state.epoch = self._epoch()
        inside = cur.generations_in_epoch < cur.epoch_generations
        if control.should_training_stop and inside and state.global_step < args.max_steps:
            control.should_training_stop = False  # stopped by our estimate, not by the bound or the curriculum
        self._set_total(state, planned_total(args, cur, state.global_step, self.epochs))
        return control

    def on_epoch_end(self, args, state, control, **kwargs):
        cur = self.curriculum
        state.epoch = float(cur.epoch) if cur.generations_in_epoch == 0 else self._epoch()
        if getattr(cur, "stop_error", None) is not None:  # synthesis gave up: checkpoint this boundary, then stop
            control.should_save = True
            control.should_training_stop = True
        if control.should_training_stop or cur.epoch >= self.epochs:
            self._set_total(state, state.global_step)  # the run ends here: the bar ends full
        else:
            self._set_total(state, planned_total(args, cur, state.global_step, self.epochs))
        return control

    def on_save(self, args, state, control, **kwargs):
        """A synthesis stop raises here, after the Trainer and the curriculum wrote the boundary's checkpoint
        (the curriculum callback saves before this one), so ``--resume`` continues from this boundary."""
        err = getattr(self.curriculum, "stop_error", None)
        if err is not None:
            raise err
        return control
