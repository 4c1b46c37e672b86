"""Step dispatch: boundary seeds go to background synthesis as soon as detection sees them (paper App. N).

With ``synthesis_dispatch: step`` the curriculum calls :func:`step_seeds` after every generation
batch: tasks of that batch whose group mean lies in the boundary zone are chosen by the detector's
own ranking (nearest 0.5 first, class balance) under what is left of the epoch's per-category
quotas, and submitted at once, so a variant is usually ready long before the boundary (seed to
variant takes about one training step in the paper, then waits for the boundary). The choice is a
deterministic function of the gathered rewards, identical on every rank; only rank 0 synthesizes.
Nothing is dispatched during the last epoch (no epoch would be left to train a variant).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from trainer.detection import even_quotas

DISPATCH_MODES = ("step", "boundary")


def dispatches_in_epoch(curriculum: Any) -> bool:
    """Step dispatch is on: the setting asks for it, the mode grows variants from detected seeds, and the
    synthesizer accepts submissions (a plain function, as in unit tests, synthesizes at the boundary)."""
    args = curriculum.args
    return (getattr(args, "synthesis_dispatch", "boundary") == "step" and curriculum.mode in ("rods", "no-retirement")
            and args.seeds_per_epoch > 0 and curriculum.synthesizer is not None and curriculum.synthesizer.dispatches)


def _remaining_quotas(curriculum: Any) -> dict[str, int]:
    args = curriculum.args
    quotas = {k: int(v) for k, v in (args.seed_quotas or even_quotas(args.seeds_per_epoch)).items()}
    used = Counter(curriculum.task(t).category for t in curriculum.dispatched)
    return {k: q - used.get(k, 0) for k, q in quotas.items() if q - used.get(k, 0) > 0}


def step_seeds(curriculum: Any, batch_task_ids: Sequence[str]) -> list[str]:
    """Seeds to submit after one generation batch (possibly none); the caller records and submits them."""
    if not dispatches_in_epoch(curriculum):
        return []
    if curriculum.epoch + 1 >= math.ceil(curriculum.args.num_train_epochs):
        return []
    quotas = _remaining_quotas(curriculum)
    if not quotas:
        return []
    taken = set(curriculum.dispatched)
    active = set(curriculum.buffer.active_ids())
    candidates = [t for t in dict.fromkeys(batch_task_ids) if t not in taken and t in active]
    if not candidates:
        return []
    sel = curriculum.detector.select_seeds(n=sum(quotas.values()), quotas=quotas, by="category",
                                           balance_classes=bool(curriculum.args.quota_by_class),
                                           task_ids=candidates, epoch=curriculum.epoch)
    return list(sel.task_ids)
