"""``rods plot RUN_DIR``: pool dynamics and reward distributions from ``RUN_DIR/curriculum.jsonl``.

Two PNGs (matplotlib, Agg backend, no display needed):

* ``pool_dynamics.png``: per epoch boundary, the active pool (seeds vs generated), the mastered /
  boundary / hard counts of the epoch just ended, injected variants, and retirements by reason
  (the paper's Fig. 3 left panel, for one run);
* ``reward_distributions.png``: per epoch, the histogram of group mean rewards (the detector's
  view) and the fraction of informative groups (non-zero reward variance).
"""

from __future__ import annotations

import json
from pathlib import Path

from trainer.curriculum import LOG_FILE, EpochReport


def read_reports(run_dir: str | Path) -> list[EpochReport]:
    path = Path(run_dir) / LOG_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path}: no curriculum log (is {run_dir} a `rods train` output_dir?)")
    reports = [EpochReport.model_validate(json.loads(ln)) for ln in path.read_text(encoding="utf-8").splitlines()
               if ln.strip()]
    if not reports:
        raise ValueError(f"{path} is empty: no epoch finished yet")
    return sorted(reports, key=lambda r: r.epoch)


def plot_run(run_dir: str | Path, out_dir: str | Path | None = None) -> list[Path]:
    """Draw both figures; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    reports = read_reports(run_dir)
    out = Path(out_dir) if out_dir else Path(run_dir)
    out.mkdir(parents=True, exist_ok=True)
    epochs = [r.epoch for r in reports]

    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    ax = axes[0]
    ax.stackplot(epochs, [r.pool_seeds for r in reports], [r.pool_generated for r in reports],
                 labels=["seeds", "generated"], alpha=0.7)
    ax.plot(epochs, [r.queue for r in reports], "k--", label="queue")
    ax.set(title="active pool after each boundary", xlabel="epoch", ylabel="tasks")
    ax.legend(loc="upper left")
    ax = axes[1]
    for key, color in (("mastered", "tab:green"), ("boundary", "tab:orange"), ("hard", "tab:red")):
        ax.plot(epochs, [getattr(r, key) for r in reports], marker="o", color=color, label=key)
    ax.set(title="zones of the epoch's pool", xlabel="epoch", ylabel="tasks")
    ax.legend()
    ax = axes[2]
    width = 0.15
    series = [("injected", [len(r.injected) for r in reports])] + [
        (f"retired: {reason}", [len(r.retired.get(reason, [])) for r in reports])
        for reason in ("burn_in", "mastered", "hard", "pruned")
    ]
    for i, (label, values) in enumerate(series):
        ax.bar([e + (i - 2) * width for e in epochs], values, width=width, label=label)
    ax.set(title="injection and retirement", xlabel="epoch", ylabel="tasks")
    ax.legend(fontsize=8)
    for a in axes:
        a.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.tight_layout()
    pool_png = out / "pool_dynamics.png"
    fig.savefig(pool_png, dpi=100)
    plt.close(fig)

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    ax = axes[0]
    bins = [i / 10 for i in range(11)]
    for r in reports:
        if r.group_means:
            ax.hist(r.group_means, bins=bins, histtype="step", linewidth=1.5, label=f"epoch {r.epoch}")
    lo, hi = reports[-1].alpha_minus, reports[-1].alpha_plus
    if lo is not None and hi is not None:
        ax.axvspan(lo, hi, color="orange", alpha=0.1)
    ax.set(title="group mean reward (K rollouts)", xlabel="mean progress reward", ylabel="groups")
    ax.legend(fontsize=8)
    ax = axes[1]
    ax.plot(epochs, [r.informative_frac for r in reports], marker="o", label="informative groups")
    ax.plot(epochs, [sum(r.rewards) / len(r.rewards) if r.rewards else 0.0 for r in reports], marker="s",
            label="mean reward")
    ax.set(title="signal per epoch", xlabel="epoch", ylim=(-0.05, 1.05))
    ax.legend()
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.tight_layout()
    reward_png = out / "reward_distributions.png"
    fig.savefig(reward_png, dpi=100)
    plt.close(fig)
    return [pool_png, reward_png]
