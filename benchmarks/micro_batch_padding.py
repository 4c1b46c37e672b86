"""Padding in the loss's micro-batches: TRL's shuffle-and-split against RODS's length-aware split.

TRL pads every completion of a generation batch to the widest one, shuffles the rows and splits them
into ``steps_per_generation`` micro-batches, so every micro-batch is as wide as the widest episode of
all; ``trainer.trl_trainer.length_aware_split`` sorts rows by length and cuts each micro-batch to its
own widest row. The loss's forward pass costs about (rows x width) completion positions per
micro-batch, so the table compares those sums (and the share that is padding) for one rank's
generation batch of 64 episodes, at the GPU recipe's layout (1 row x 64 micro-batches) and two others.

Episode lengths are drawn (seeded) to look like multi-turn BFCL rollouts under the recipe's 24,576-token
budget: log-normal around 6k completion tokens, clipped to [512, 24576], so a few episodes run into
the budget. Real runs log the figure as ``rods/pad_frac``. Prints a table and one JSON line.

    python benchmarks/micro_batch_padding.py
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trl.trainer.utils import shuffle_sequence_dict, split_tensor_dict  # noqa: E402

from trainer.trl_trainer import length_aware_split, padded_fraction  # noqa: E402

BUDGET = 24_576
EPISODES = 64
LAYOUTS = ((1, 64), (2, 32), (8, 8))  # (rows per micro-batch, micro-batches per generation batch)


def lengths(seed: int = 0) -> list[int]:
    rng = random.Random(seed)
    return [min(BUDGET, max(512, int(rng.lognormvariate(8.7, 0.8)))) for _ in range(EPISODES)]


def batch(lens: list[int]) -> dict[str, torch.Tensor]:
    width = max(lens)
    mask = torch.zeros(len(lens), width, dtype=torch.int8)
    for i, n in enumerate(lens):
        mask[i, :n] = 1
    return {"completion_mask": mask, "advantages": torch.zeros(len(lens))}


def positions(chunks: list[dict[str, torch.Tensor]]) -> int:
    return sum(c["completion_mask"].numel() for c in chunks)


def main() -> None:
    lens = lengths()
    torch.manual_seed(0)
    rows = []
    for per_device, steps in LAYOUTS:
        trl_chunks = split_tensor_dict(shuffle_sequence_dict(batch(lens)), steps)
        ours = length_aware_split(batch(lens), steps)
        rows.append({"rows_per_micro_batch": per_device, "micro_batches": steps,
                     "trl_positions": positions(trl_chunks), "rods_positions": positions(ours),
                     "trl_pad_frac": round(padded_fraction(trl_chunks), 3),
                     "rods_pad_frac": round(padded_fraction(ours), 3),
                     "ratio": round(positions(trl_chunks) / positions(ours), 2)})
    print(f"one rank's generation batch: {EPISODES} episodes, completion tokens {sum(lens):,} "
          f"(min {min(lens):,}, median {sorted(lens)[len(lens) // 2]:,}, max {max(lens):,})")
    print(f"{'layout':>10} | {'TRL positions':>14} | {'length-aware':>13} | {'TRL pad':>8} | {'ours pad':>8} | ratio")
    for r in rows:
        print(f"{r['rows_per_micro_batch']:>3} x {r['micro_batches']:<4} | {r['trl_positions']:>14,} | "
              f"{r['rods_positions']:>13,} | {r['trl_pad_frac']:>8.3f} | {r['rods_pad_frac']:>8.3f} | {r['ratio']:.2f}x")
    print(json.dumps({"benchmark": "micro_batch_padding", "episodes": EPISODES, "tokens": sum(lens), "layouts": rows}))


if __name__ == "__main__":
    main()
