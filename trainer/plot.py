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
* ``variants_vs_seeds.png``: each injected variant's mean reward against its seed's in the same
  epoch (the diagonal: as hard as its seed; below it: harder), from the final curriculum state.

Readable at any length: count axes have integer ticks only; a 1-epoch run gets one labelled tick,
not a -0.32..0.32 axis; series that are 0 throughout are left out of plot and legend (named in a
note); legends sit outside the data. When a ``reward_shaping`` hook reshaped the rewards (the loop
rehearsal's ``synthetic_boundary``), every reward panel says they are **synthetic** and shows the
checker's own reward next to them (``rods/raw_reward``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from trainer.curriculum import LOG_FILE, STATE_FILE, EpochReport

RETIRE_REASONS = ("burn_in", "mastered", "hard", "pruned")
ZERO_NOTE = "all rewards are 0: nothing to learn from"
MAX_HIST_PANELS = 8
VARIANT_SEP = "__rods_"
"""A synthesized variant's id is its seed's id, this separator and a suffix (when provenance lacks ``seed_id``)."""


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


def shaping_of(run_dir: str | Path, history: list[dict[str, Any]]) -> str | None:
    """The reward-shaping hook the run used (``rods_summary.json``), or ``"a reward_shaping hook"`` when the
    log shows GRPO's reward differing from the checker's; None for real rewards."""
    summary = Path(run_dir) / "rods_summary.json"
    if summary.exists():
        name = json.loads(summary.read_text(encoding="utf-8")).get("reward_shaping")
        if name:
            return str(name)
    for h in history:
        if isinstance(h.get("reward"), int | float) and isinstance(h.get("rods/raw_reward"), int | float) \
                and abs(h["reward"] - h["rods/raw_reward"]) > 1e-9:
            return "a reward_shaping hook"
    return None


def synthetic_note(shaping: str | None) -> str:
    return f"rewards are SYNTHETIC (reshaped by {shaping}), not the checker's" if shaping else ""


def _title(run_dir: Path, reports: list[EpochReport], what: str) -> str:
    last = reports[-1]
    zone = f", boundary zone [{last.alpha_minus:.2f}, {last.alpha_plus:.2f}]" if last.alpha_minus is not None else ""
    n = len(reports)
    return f"{run_dir.resolve().name}: {what} (mode={last.mode}, {n} epoch{'s' if n != 1 else ''}{zone})"


def _epoch_axis(ax: Any, epochs: list[int]) -> None:
    """Integer epoch ticks with half an epoch of room each side (one epoch: one tick, not -0.32..0.32)."""
    from matplotlib.ticker import MaxNLocator

    ax.set_xlim(min(epochs) - 0.6, max(epochs) + 0.6)
    if len(epochs) <= 12:
        ax.set_xticks(epochs)
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _count_axis(ax: Any) -> None:
    """Counts (tasks, groups) get integer ticks only."""
    from matplotlib.ticker import MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(integer=True))


def _legend_below(ax: Any, hidden: list[str] | None = None, ncol: int = 2) -> None:
    """The legend under the axes (never over the data), and a note naming series left out as 0 throughout."""
    handles, labels = ax.get_legend_handles_labels()
    if hidden:
        ax.text(0.99, 0.98, "0 throughout: " + ", ".join(hidden), transform=ax.transAxes, ha="right", va="top",
                fontsize=7, color="0.35")
    if handles:
        ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=ncol, fontsize=8,
                  frameon=False)


def _note(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=10, color="0.25",
            bbox={"boxstyle": "round", "fc": "#fff6d5", "ec": "0.6"}, wrap=True)


# ---------------------------------------------------------------------------------------------- pool figure
def _pool_figure(plt: Any, run_dir: Path, reports: list[EpochReport]) -> Any:
    epochs = [r.epoch for r in reports]
    fig, axes = plt.subplots(1, 3, figsize=(17, 5.4), layout="constrained")
    zero = all_zero(reports)
    fig.suptitle(_title(run_dir, reports, "pool dynamics") + (f": {ZERO_NOTE}" if zero else ""), fontsize=12,
                 color="firebrick" if zero else "black")

    ax = axes[0]
    seeds, gen = [r.pool_seeds for r in reports], [r.pool_generated for r in reports]
    ax.bar(epochs, seeds, width=0.6, color="tab:blue", label="seed tasks")
    hidden = []
    if any(gen):
        ax.bar(epochs, gen, width=0.6, bottom=seeds, color="tab:cyan", label="generated (injected)")
    else:
        hidden.append("generated")
    if any(r.queue for r in reports):
        ax.plot(epochs, [r.queue for r in reports], "k--", marker="D", label="candidate queue")
    else:
        hidden.append("queue")
    ax.set(title="active pool after each boundary", xlabel="epoch (boundary after it)", ylabel="tasks")
    ax.set_ylim(0, max(1, max(s + g for s, g in zip(seeds, gen, strict=True)), max(r.queue for r in reports)) * 1.15)
    _legend_below(ax, hidden, ncol=3)

    ax = axes[1]
    styles = (("mastered", "tab:green", "o", "-", -0.06), ("boundary", "tab:orange", "s", "--", 0.0),
              ("hard", "tab:red", "^", ":", 0.06))
    hidden = []
    for key, color, marker, ls, dx in styles:
        values = [getattr(r, key) for r in reports]
        if not any(values):
            hidden.append(key)
            continue
        ax.plot([e + dx for e in epochs], values, color=color, marker=marker, ls=ls,
                lw=2, ms=8, mfc="white" if key == "mastered" else color, label=key)
    ax.set(title="zones of the epoch's pool (by mean reward)", xlabel="epoch", ylabel="tasks")
    ax.set_ylim(-0.3, max(1, max(max(r.mastered, r.boundary, r.hard) for r in reports)) * 1.15)
    _legend_below(ax, hidden, ncol=3)

    ax = axes[2]
    series = [("injected", [len(r.injected) for r in reports], "tab:purple")] + [
        (f"retired: {reason}", [len(r.retired.get(reason, [])) for r in reports], color)
        for reason, color in zip(RETIRE_REASONS, ("tab:brown", "tab:green", "tab:red", "tab:gray"), strict=True)
    ]
    shown = [s for s in series if any(s[1])]
    hidden = [label for label, values, _ in series if not any(values)]
    width = 0.8 / max(1, len(shown))
    for i, (label, values, color) in enumerate(shown):
        ax.bar([e + (i - (len(shown) - 1) / 2) * width for e in epochs], values, width=width, label=label, color=color)
    top = max(max(v) for _, v, _ in series)
    ax.set_ylim(0, max(1, top) * 1.15)
    ax.set(title="injection and retirement at each boundary", xlabel="epoch", ylabel="tasks")
    if top == 0:
        _note(ax, "nothing injected or retired")
        hidden = []
    _legend_below(ax, hidden, ncol=3)
    for a in axes:
        _epoch_axis(a, epochs)
        _count_axis(a)
    return fig


# ---------------------------------------------------------------------------------------------- reward figure
def _hist_epochs(reports: list[EpochReport]) -> list[EpochReport]:
    if len(reports) <= MAX_HIST_PANELS:
        return reports
    idx = sorted({round(i * (len(reports) - 1) / (MAX_HIST_PANELS - 1)) for i in range(MAX_HIST_PANELS)})
    return [reports[i] for i in idx]


def _histograms(fig: Any, reports: list[EpochReport], zero: bool, shaping: str | None = None) -> None:
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
    _count_axis(axes[0])
    handles, labels = axes[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles[:1], labels[:1], loc="upper right", fontsize=7, frameon=False)
    what = "group mean reward per epoch (the detector's view" + ("; synthetic rewards)" if shaping else ")")
    fig.suptitle(what + (f": {ZERO_NOTE}" if zero else ""), fontsize=10,
                 color="firebrick" if zero or shaping else "black")


def _series(history: list[dict[str, Any]], key: str) -> tuple[list[float], list[float]]:
    pts = [(h["step"], h[key]) for h in history if key in h and "step" in h and isinstance(h[key], int | float)]
    return [p[0] for p in pts], [float(p[1]) for p in pts]


def _step_axis(ax: Any, xs: list[float]) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if xs and max(xs) - min(xs) < 4:  # a short run: room either side, whole steps only
        ax.set_xlim(min(xs) - 0.6, max(xs) + 0.6)
        ax.set_xticks(sorted({int(x) for x in xs}))


def _curves(fig: Any, reports: list[EpochReport], history: list[dict[str, Any]], zero: bool,
            shaping: str | None = None) -> None:
    ax_sig, ax_r, ax_l, ax_kl = fig.subplots(1, 4)
    epochs = [r.epoch for r in reports]
    ax_sig.plot(epochs, [r.informative_frac for r in reports], marker="o", label="informative groups (reward std > 0)")
    ax_sig.plot(epochs, [sum(r.rewards) / len(r.rewards) if r.rewards else 0.0 for r in reports], marker="s", ls="--",
                label="mean rollout reward" + (" (synthetic)" if shaping else ""))
    ax_sig.set(title="signal per epoch", xlabel="epoch", ylabel="share of groups / mean reward", ylim=(-0.05, 1.05))
    _epoch_axis(ax_sig, epochs)
    _legend_below(ax_sig, ncol=1)
    if zero:
        _note(ax_sig, ZERO_NOTE)

    reward_label = f"reward (SYNTHETIC: {shaping})" if shaping else "reward (GRPO's)"
    for ax, keys, title, ylabel in (
        (ax_r, (("reward", reward_label), ("rods/raw_reward", "checker reward (real)")), "reward per step",
         "mean reward"),
        (ax_l, (("loss", "loss"),), "loss per step", "GRPO loss"),
        (ax_kl, (("kl", "KL to reference"),), "KL per step", "KL"),
    ):
        drawn: list[float] = []
        for i, (key, label) in enumerate(keys):
            x, y = _series(history, key)
            if x and (i == 0 or shaping or any(y)):  # the checker's line: when it differs, or is not all 0
                ax.plot(x, y, marker="o" if i == 0 else "x", ms=4, ls="-" if i == 0 else ":", label=label)
                drawn += x
        ax.set(title=title, xlabel="optimizer step", ylabel=ylabel)
        _step_axis(ax, drawn)
        if drawn:  # epoch boundaries: where the pool changed
            for j, r in enumerate(reports):
                ax.axvline(r.step + 0.5, color="0.6", ls=":", lw=1, label="epoch boundary" if j == 0 else None)
            _legend_below(ax, ncol=1)
        if not drawn:
            _note(ax, "no training log found" if not history else
                  ("not logged (beta = 0: no reference model)" if keys[0][0] == "kl" else "not logged"))
        elif all(v == 0 for key, _ in keys for v in _series(history, key)[1]):
            ax.set_ylim(-0.05, 1.05)  # not a -0.04..0.04 axis around nothing
            _note(ax, f"{keys[0][0]} is 0 at every step" + ("\n(no group had reward variance)"
                                                              if keys[0][0] == "loss" else ""))


def _reward_figure(plt: Any, run_dir: Path, reports: list[EpochReport], history: list[dict[str, Any]],
                   shaping: str | None = None) -> Any:
    zero = all_zero(reports)
    fig = plt.figure(figsize=(17, 9.5), layout="constrained")
    title = _title(run_dir, reports, "rewards and training signal")
    fig.suptitle(title + (f"\n{synthetic_note(shaping)}" if shaping else ""), fontsize=12,
                 color="firebrick" if shaping else "black")
    top, bottom = fig.subfigures(2, 1, height_ratios=[1, 1.15])
    _histograms(top, reports, zero, shaping)
    _curves(bottom, reports, history, zero, shaping)
    return fig


# ---------------------------------------------------------------------------------------------- variants vs seeds
class VariantPoint(BaseModel):
    """One evaluation of an injected variant next to its seed's in the same epoch."""

    variant: str
    seed: str
    epoch: int
    variant_mean: float
    seed_mean: float
    retired: str | None = None


def seed_of(task: dict[str, Any] | None, task_id: str) -> str:
    """A variant's seed: ``provenance.seed_id``, else its id before the variant suffix."""
    prov = (task or {}).get("provenance") or {}
    return str(prov.get("seed_id") or task_id.split(VARIANT_SEP)[0])


def variant_points(run_dir: str | Path) -> list[VariantPoint]:
    """Every epoch mean of every generated task the final curriculum state remembers, with its seed's mean
    in the same epoch (skipped when the seed has none); retired variants by their mean when retired."""
    path = Path(run_dir) / STATE_FILE
    if not path.exists():
        return []
    state = json.loads(path.read_text(encoding="utf-8"))
    tracks = state["detector"]["tracks"]
    tasks = {t["id"]: t for t in state.get("known", [])}
    seeds = set(state["buffer"].get("seed_ids", []))

    def seed_mean(seed: str, epoch: int) -> float | None:
        hist = (tracks.get(seed) or {}).get("history", [])
        return next((float(e[3]) for e in hist if int(e[0]) == epoch), None)

    out: list[VariantPoint] = []
    for tid in state["buffer"].get("generated", {}):
        seed = seed_of(tasks.get(tid), tid)
        for e in (tracks.get(tid) or {}).get("history", []):
            sm = seed_mean(seed, int(e[0]))
            if sm is not None:
                out.append(VariantPoint(variant=tid, seed=seed, epoch=int(e[0]), variant_mean=float(e[3]), seed_mean=sm))
    for ev in state["buffer"].get("events", []):
        if ev.get("kind") == "retired" and not ev.get("seed") and ev.get("mean") is not None:
            seed = seed_of(tasks.get(ev["task_id"]), ev["task_id"])
            sm = seed_mean(seed, int(ev["epoch"])) if seed in seeds or seed in tracks else None
            if sm is not None:
                out.append(VariantPoint(variant=ev["task_id"], seed=seed, epoch=int(ev["epoch"]),
                                        variant_mean=float(ev["mean"]), seed_mean=sm, retired=ev["reason"]))
    return out


def _variants_figure(plt: Any, run_dir: Path, reports: list[EpochReport], shaping: str | None) -> Any:
    points = variant_points(run_dir)
    fig, ax = plt.subplots(figsize=(7.5, 7), layout="constrained")
    title = _title(run_dir, reports, "variants against their seeds")
    fig.suptitle(title + (f"\n{synthetic_note(shaping)}" if shaping else ""), fontsize=11,
                 color="firebrick" if shaping else "black")
    ax.plot([0, 1], [0, 1], color="0.6", ls="--", lw=1, label="as hard as its seed")
    last = reports[-1]
    if last.alpha_minus is not None and last.alpha_plus is not None:
        ax.axhspan(last.alpha_minus, last.alpha_plus, color="orange", alpha=0.12,
                   label=f"boundary zone [{last.alpha_minus:.2f}, {last.alpha_plus:.2f}]")
    live = [p for p in points if p.retired is None]
    gone = [p for p in points if p.retired is not None]
    if live:
        ax.scatter([p.seed_mean for p in live], [p.variant_mean for p in live], s=60, c=[p.epoch for p in live],
                   cmap="viridis", edgecolors="k", label="variant in the pool (colour: epoch)")
    if gone:
        ax.scatter([p.seed_mean for p in gone], [p.variant_mean for p in gone], s=70, marker="x", color="firebrick",
                   label="variant when retired")
    ax.set(xlim=(-0.05, 1.05), ylim=(-0.05, 1.05), xlabel="seed's mean reward (same epoch)",
           ylabel="variant's mean reward", title="below the diagonal: the variant is harder than its seed")
    if not points:
        _note(ax, "no injected variant was evaluated in an epoch\nin which its seed was too")
    else:
        harder = sum(p.variant_mean < p.seed_mean - 1e-9 for p in points)
        easier = sum(p.variant_mean > p.seed_mean + 1e-9 for p in points)
        ax.text(0.02, 0.98, f"{len({p.variant for p in points})} variants, {len(points)} evaluations: {harder} harder "
                f"than the seed, {easier} easier, {len(points) - harder - easier} equal", transform=ax.transAxes,
                va="top", fontsize=8)
    _legend_below(ax, ncol=2)
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
    shaping = shaping_of(run, history)
    paths = []
    for name, fig in (("pool_dynamics.png", _pool_figure(plt, run, reports)),
                      ("reward_distributions.png", _reward_figure(plt, run, reports, history, shaping)),
                      ("variants_vs_seeds.png", _variants_figure(plt, run, reports, shaping))):
        path = out / name
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(path)
    return paths
