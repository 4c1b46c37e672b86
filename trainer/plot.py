"""``rods plot RUN_DIR``: pool dynamics, reward distributions and training curves of one run, as PNG.

Reads ``RUN_DIR/curriculum.jsonl`` (one line per epoch boundary) and the trainer's log history
(``RUN_DIR/log_history.json``, else the newest ``checkpoint-*/trainer_state.json``). Two PNGs
(matplotlib, Agg backend, no display needed), each titled with the run's name, mode and zone:

* ``pool_dynamics.png``: per epoch boundary, the active pool (seeds and generated, stacked) with
  the candidate queue; the mastered / boundary / hard counts of the epoch just ended (distinct
  markers and line styles, offset so equal counts stay visible); injected variants and
  retirements by reason (legend outside the bars).
* ``reward_distributions.png``: one small histogram of group mean rewards per epoch (the
  detector's view; the boundary zone shaded and labelled), the signal per epoch (share of
  informative groups and mean rollout reward), and per optimizer step the reward, loss and KL
  from the trainer's log. A run whose rewards are all 0 says so in the figure.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trainer.curriculum import LOG_FILE, EpochReport

RETIRE_REASONS = ("burn_in", "mastered", "hard", "pruned")
ZERO_NOTE = "all rewards are 0: nothing to learn from"
MAX_HIST_PANELS = 8


def read_reports(run_dir: str | Path) -> list[EpochReport]:
    path = Path(run_dir) / LOG_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path}: no curriculum log (is {run_dir} a `rods train` output_dir?)")
    reports = [EpochReport.model_validate(json.loads(ln)) for ln in path.read_text(encoding="utf-8").splitlines()
               if ln.strip()]
    if not reports:
        raise ValueError(f"{path} is empty: no epoch finished yet")
    return sorted(reports, key=lambda r: r.epoch)


def read_log_history(run_dir: str | Path) -> list[dict[str, Any]]:
    """The trainer's per-step log: ``log_history.json`` (written at the end) or the newest checkpoint's state."""
    run = Path(run_dir)
    if (run / "log_history.json").exists():
        return list(json.loads((run / "log_history.json").read_text(encoding="utf-8")))
    ckpts = sorted(run.glob("checkpoint-*/trainer_state.json"), key=lambda p: int(p.parent.name.split("-")[-1])
                   if p.parent.name.split("-")[-1].isdigit() else -1)
    if ckpts:
        return list(json.loads(ckpts[-1].read_text(encoding="utf-8")).get("log_history", []))
    return []


def all_zero(reports: list[EpochReport]) -> bool:
    rewards = [r for rep in reports for r in rep.rewards]
    return bool(rewards) and not any(rewards)


def _title(run_dir: Path, reports: list[EpochReport], what: str) -> str:
    last = reports[-1]
    zone = f", boundary zone [{last.alpha_minus:.2f}, {last.alpha_plus:.2f}]" if last.alpha_minus is not None else ""
    return f"{run_dir.resolve().name}: {what} (mode={last.mode}, {len(reports)} epochs{zone})"


def _note(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=10, color="0.25",
            bbox={"boxstyle": "round", "fc": "#fff6d5", "ec": "0.6"}, wrap=True)


# ---------------------------------------------------------------------------------------------- pool figure
def _pool_figure(plt: Any, run_dir: Path, reports: list[EpochReport]) -> Any:
    from matplotlib.ticker import MaxNLocator

    epochs = [r.epoch for r in reports]
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.8), gridspec_kw={"width_ratios": [1, 1, 1.25]})
    zero = all_zero(reports)
    fig.suptitle(_title(run_dir, reports, "pool dynamics") + (f": {ZERO_NOTE}" if zero else ""), fontsize=12,
                 color="firebrick" if zero else "black")

    ax = axes[0]
    seeds, gen = [r.pool_seeds for r in reports], [r.pool_generated for r in reports]
    ax.bar(epochs, seeds, width=0.6, color="tab:blue", label="seed tasks")
    ax.bar(epochs, gen, width=0.6, bottom=seeds, color="tab:cyan", label="generated (injected)")
    ax.plot(epochs, [r.queue for r in reports], "k--", marker="D", label="candidate queue")
    ax.set(title="active pool after each boundary", xlabel="epoch (boundary after it)", ylabel="tasks")
    ax.set_ylim(0, max(1, max(s + g for s, g in zip(seeds, gen, strict=True)), max(r.queue for r in reports)) * 1.3)
    ax.legend(loc="upper left", fontsize=8)

    ax = axes[1]
    styles = (("mastered", "tab:green", "o", "-", -0.06), ("boundary", "tab:orange", "s", "--", 0.0),
              ("hard", "tab:red", "^", ":", 0.06))
    for key, color, marker, ls, dx in styles:
        ax.plot([e + dx for e in epochs], [getattr(r, key) for r in reports], color=color, marker=marker, ls=ls,
                lw=2, ms=8, mfc="white" if key == "mastered" else color, label=key)
    ax.set(title="zones of the epoch's pool (by mean reward)", xlabel="epoch", ylabel="tasks")
    ax.set_ylim(-0.3, max(1, max(max(r.mastered, r.boundary, r.hard) for r in reports)) * 1.25)
    ax.legend(loc="upper left", fontsize=8)

    ax = axes[2]
    series = [("injected", [len(r.injected) for r in reports], "tab:purple")] + [
        (f"retired: {reason}", [len(r.retired.get(reason, [])) for r in reports], color)
        for reason, color in zip(RETIRE_REASONS, ("tab:brown", "tab:green", "tab:red", "tab:gray"), strict=True)
    ]
    width = 0.8 / len(series)
    for i, (label, values, color) in enumerate(series):
        ax.bar([e + (i - (len(series) - 1) / 2) * width for e in epochs], values, width=width, label=label, color=color)
    top = max(max(v) for _, v, _ in series)
    ax.set_ylim(0, max(1, top) * 1.2)
    ax.set(title="injection and retirement at each boundary", xlabel="epoch", ylabel="tasks")
    if top == 0:
        _note(ax, "nothing injected or retired")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, borderaxespad=0)
    for a in axes:
        a.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------------- reward figure
def _hist_epochs(reports: list[EpochReport]) -> list[EpochReport]:
    if len(reports) <= MAX_HIST_PANELS:
        return reports
    idx = sorted({round(i * (len(reports) - 1) / (MAX_HIST_PANELS - 1)) for i in range(MAX_HIST_PANELS)})
    return [reports[i] for i in idx]


def _histograms(fig: Any, reports: list[EpochReport], zero: bool) -> None:
    shown = _hist_epochs(reports)
    axes = fig.subplots(1, len(shown), sharey=True, squeeze=False)[0]
    bins = [i / 10 for i in range(11)]
    top = max([1] + [max((sum(1 for m in r.group_means if lo <= m < hi or (hi == 1.0 and m == 1.0))
                          for lo, hi in zip(bins, bins[1:], strict=False)), default=0) for r in shown])
    for ax, r in zip(axes, shown, strict=True):
        lo, hi = r.alpha_minus, r.alpha_plus
        if lo is not None and hi is not None:
            ax.axvspan(lo, hi, color="orange", alpha=0.15, label=f"boundary zone [{lo:.2f}, {hi:.2f}]")
        ax.hist(r.group_means, bins=bins, color="tab:blue", edgecolor="white")
        ax.set(title=f"epoch {r.epoch} ({len(r.group_means)} groups)", xlabel="group mean reward", xlim=(0, 1),
               ylim=(0, top * 1.15))
        if not r.group_means:
            _note(ax, "no groups")
    axes[0].set_ylabel("groups (K rollouts each)")
    axes[0].legend(loc="upper right", fontsize=7)
    fig.suptitle("group mean reward per epoch (the detector's view)" + (f": {ZERO_NOTE}" if zero else ""),
                 fontsize=10, color="firebrick" if zero else "black")


def _series(history: list[dict[str, Any]], key: str) -> tuple[list[float], list[float]]:
    pts = [(h["step"], h[key]) for h in history if key in h and "step" in h and isinstance(h[key], int | float)]
    return [p[0] for p in pts], [float(p[1]) for p in pts]


def _curves(fig: Any, reports: list[EpochReport], history: list[dict[str, Any]], zero: bool) -> None:
    from matplotlib.ticker import MaxNLocator

    ax_sig, ax_r, ax_l, ax_kl = fig.subplots(1, 4)
    epochs = [r.epoch for r in reports]
    ax_sig.plot(epochs, [r.informative_frac for r in reports], marker="o", label="informative groups (reward std > 0)")
    ax_sig.plot(epochs, [sum(r.rewards) / len(r.rewards) if r.rewards else 0.0 for r in reports], marker="s", ls="--",
                label="mean rollout reward")
    ax_sig.set(title="signal per epoch", xlabel="epoch", ylabel="share of groups / mean reward", ylim=(-0.05, 1.05))
    ax_sig.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax_sig.legend(fontsize=7, loc="upper left")
    if zero:
        _note(ax_sig, ZERO_NOTE)

    for ax, keys, title, ylabel in (
        (ax_r, (("reward", "reward (GRPO's, after any shaping)"), ("rods/raw_reward", "checker reward (raw)")), "reward per step",
         "mean reward"),
        (ax_l, (("loss", "loss"),), "loss per step", "GRPO loss"),
        (ax_kl, (("kl", "KL to reference"),), "KL per step", "KL"),
    ):
        drawn = False
        for i, (key, label) in enumerate(keys):
            x, y = _series(history, key)
            if x:
                ax.plot(x, y, marker="o" if i == 0 else "x", ms=4, ls="-" if i == 0 else ":", label=label)
                drawn = True
        ax.set(title=title, xlabel="optimizer step", ylabel=ylabel)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if drawn:  # epoch boundaries: where the pool changed
            for j, r in enumerate(reports):
                ax.axvline(r.step + 0.5, color="0.6", ls=":", lw=1, label="epoch boundary" if j == 0 else None)
        if drawn:
            ax.legend(fontsize=7)
        if not drawn:
            _note(ax, "no training log found" if not history else
                  ("not logged (beta = 0: no reference model)" if keys[0][0] == "kl" else "not logged"))
        elif all(v == 0 for key, _ in keys for v in _series(history, key)[1]):
            ax.set_ylim(-0.05, 1.05)  # not a -0.04..0.04 axis around nothing
            _note(ax, f"{keys[0][0]} is 0 at every step" + ("\n(no group had reward variance)"
                                                              if keys[0][0] == "loss" else ""))


def _reward_figure(plt: Any, run_dir: Path, reports: list[EpochReport], history: list[dict[str, Any]]) -> Any:
    zero = all_zero(reports)
    fig = plt.figure(figsize=(17, 8.5), layout="constrained")
    fig.suptitle(_title(run_dir, reports, "rewards and training signal"), fontsize=12)
    top, bottom = fig.subfigures(2, 1, height_ratios=[1, 1.05])
    _histograms(top, reports, zero)
    _curves(bottom, reports, history, zero)
    return fig


def plot_run(run_dir: str | Path, out_dir: str | Path | None = None) -> list[Path]:
    """Draw both figures; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run = Path(run_dir)
    reports = read_reports(run)
    history = read_log_history(run)
    out = Path(out_dir) if out_dir else run
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, fig in (("pool_dynamics.png", _pool_figure(plt, run, reports)),
                      ("reward_distributions.png", _reward_figure(plt, run, reports, history))):
        path = out / name
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(path)
    return paths
