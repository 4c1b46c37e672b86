"""``rods plot`` on synthetic run folders: the three PNGs, the title, an all-zero run that says so, readable axes
and legends at any run length, synthetic rewards named as such, and variants against their seeds."""

from __future__ import annotations

import json

import pytest

from trainer.curriculum import LOG_FILE, EpochReport
from trainer.plot import ZERO_NOTE, plot_run


def _report(epoch: int, rewards: list[float], means: list[float], injected=(), burned=()) -> dict:
    return EpochReport(
        epoch=epoch, step=2 * (epoch + 1), mode="rods", alpha_minus=0.2, alpha_plus=0.85, pool_before=4,
        pool_size=4 + len(injected), pool_seeds=4, pool_generated=len(injected), queue=1, mastered=1,
        boundary=sum(0.2 <= m <= 0.85 for m in means), hard=1, unseen=0, groups=len(means),
        informative_frac=0.5, seeds=[], injected=list(injected),
        retired={"burn_in": list(burned), "mastered": [], "hard": [], "pruned": []},
        group_means=means, rewards=rewards,
    ).model_dump(mode="json")


def _run(tmp_path, reports, history):
    run = tmp_path / "my-run"
    run.mkdir()
    (run / LOG_FILE).write_text("\n".join(json.dumps(r) for r in reports) + "\n")
    ckpt = run / "checkpoint-6"
    ckpt.mkdir()
    (ckpt / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    return run


def _texts(fig) -> list[str]:
    out = [t.get_text() for t in fig.findobj(lambda o: hasattr(o, "get_text"))]
    return [t for t in out if t]


FIGURES: list = []
"""The figure objects of the last plot_run (the ``capture`` fixture fills it)."""


@pytest.fixture()
def capture(monkeypatch):
    """Keep the figures rods plot draws (their texts), alongside the PNGs it writes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figs = []
    real = plt.Figure.savefig

    def savefig(self, *a, **kw):
        figs.append(_texts(self))
        FIGURES.append(self)
        return real(self, *a, **kw)

    FIGURES.clear()

    monkeypatch.setattr(plt.Figure, "savefig", savefig)
    return figs


def test_plot_writes_both_pngs_with_title_steps_and_labels(tmp_path, capture):
    history = [{"step": s, "reward": 0.25 * s, "loss": 0.01 * s, "kl": 0.001 * s, "epoch": s / 2} for s in range(1, 7)]
    run = _run(tmp_path, [_report(0, [0, 1, 0, 1], [0.5, 0.0], injected=["a"]),
                          _report(1, [1, 1, 0, 1], [1.0, 0.5], burned=["a"])], history)
    paths = plot_run(run)
    assert [p.name for p in paths] == ["pool_dynamics.png", "reward_distributions.png", "variants_vs_seeds.png"]
    assert all(p.stat().st_size > 10_000 for p in paths)
    pool, rewards, _ = capture
    assert any("my-run" in t and "mode=rods" in t for t in pool)
    assert any("my-run" in t and "mode=rods" in t for t in rewards)
    assert "epoch 0 (2 groups)" in rewards and "epoch 1 (2 groups)" in rewards  # one panel per epoch: none hidden
    assert any(t.startswith("boundary zone [0.20, 0.85]") for t in rewards)
    assert "share of groups / mean reward" in rewards  # signal per epoch has a y label
    assert {"reward per step", "loss per step", "KL per step"} <= set(rewards)
    assert ZERO_NOTE not in " ".join(rewards)
    assert "retired: burn_in" in pool


def test_all_zero_run_says_so_in_the_figure(tmp_path, capture):
    history = [{"step": s, "reward": 0.0, "loss": 0.0} for s in range(1, 5)]
    run = _run(tmp_path, [_report(0, [0.0] * 8, [0.0, 0.0]), _report(1, [0.0] * 8, [0.0, 0.0])], history)
    plot_run(run)
    pool, rewards, _ = capture
    assert any(ZERO_NOTE in t for t in rewards)
    assert "nothing injected or retired" in pool
    assert "not logged (beta = 0: no reference model)" in rewards  # KL panel without a KL series


def test_plot_of_a_folder_without_a_log_is_one_clear_error(tmp_path):
    from typer.testing import CliRunner

    from rods_cli.main import app

    res = CliRunner().invoke(app, ["plot", str(tmp_path)])
    assert res.exit_code == 2 and "no curriculum log" in res.output and "Traceback" not in res.output


def _axes(fig):
    return [a for a in fig.get_axes() if a.get_title()]


def _ax(fig, title):
    return next(a for a in fig.get_axes() if a.get_title() == title)


def test_one_epoch_run_gets_one_epoch_tick_and_whole_counts(tmp_path, capture):
    """Before: x from -0.32 to 0.32 with five fractional epoch labels, task counts at 0.25 steps."""
    history = [{"step": 1, "reward": 0.5, "loss": 0.1}, {"step": 2, "reward": 0.5, "loss": 0.2}]
    run = _run(tmp_path, [_report(0, [0, 1, 0, 1], [0.5, 0.0], injected=["a"])], history)
    plot_run(run)
    pool = FIGURES[0]
    for ax in _axes(pool):
        assert list(ax.get_xticks()) == [0] and ax.get_xlim() == pytest.approx((-0.6, 0.6))
        ticks = [t for t in ax.get_yticks() if ax.get_ylim()[0] <= t <= ax.get_ylim()[1]]
        assert all(float(t).is_integer() for t in ticks), (ax.get_title(), ticks)
    loss = _ax(FIGURES[1], "loss per step")
    assert list(loss.get_xticks()) == [1, 2]
    assert "1 epoch," in " ".join(capture[0])  # "(mode=rods, 1 epoch, ...)", not "1 epochs"


def test_legends_leave_out_zero_series_and_sit_below_the_data(tmp_path, capture):
    history = [{"step": s, "reward": 0.5, "loss": 0.1} for s in range(1, 5)]
    run = _run(tmp_path, [_report(0, [0, 1, 0, 1], [0.5, 0.0], injected=["a"]),
                          _report(1, [1, 1, 0, 1], [1.0, 0.5], burned=["a"])], history)
    plot_run(run)
    pool = FIGURES[0]
    bars = _ax(pool, "injection and retirement at each boundary")
    labels = [t.get_text() for t in bars.get_legend().get_texts()]
    assert labels == ["injected", "retired: burn_in"]  # mastered, hard, pruned: 0 throughout, not listed
    assert any("0 throughout: retired: mastered, retired: hard, retired: pruned" in t for t in capture[0])
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(pool)  # the figure was closed after saving: give it a canvas again
    canvas.draw()
    renderer = canvas.get_renderer()
    for ax in _axes(pool):
        legend = ax.get_legend()
        if legend is not None:  # the legend's box is under the plotting area, never on it
            assert legend.get_window_extent(renderer).y1 <= ax.get_window_extent(renderer).y0 + 1


def test_shaped_rewards_are_called_synthetic(tmp_path, capture):
    history = [{"step": s, "reward": 0.5, "rods/raw_reward": 0.0, "loss": 0.1} for s in range(1, 3)]
    run = _run(tmp_path, [_report(0, [0, 1, 0, 1], [0.5, 0.0])], history)
    (run / "rods_summary.json").write_text(json.dumps({"reward_shaping": "synthetic_boundary"}))
    plot_run(run)
    rewards = " ".join(capture[1])
    assert "rewards are SYNTHETIC (reshaped by synthetic_boundary)" in rewards
    assert "checker reward (real)" in rewards and "reward (SYNTHETIC: synthetic_boundary)" in rewards
    (run / "rods_summary.json").unlink()  # no summary yet (a run still going): the log gives it away
    FIGURES.clear()
    capture.clear()
    plot_run(run)
    assert "reshaped by a reward_shaping hook" in " ".join(capture[1])


def test_variants_are_plotted_against_their_seeds_in_the_same_epoch(tmp_path, capture):
    from trainer.plot import variant_points

    run = _run(tmp_path, [_report(0, [0, 1], [0.5]), _report(1, [0, 1], [0.5], injected=["s__rods_a"])], [])
    hist = {"s": [[0, 2, 4, 0.75, 0.0], [1, 4, 4, 1.0, 0.0]], "s__rods_a": [[1, 4, 4, 0.25, 0.0]],
            "t": [[1, 4, 4, 0.5, 0.0]]}
    state = {
        "detector": {"tracks": {k: {"history": v} for k, v in hist.items()}},
        "known": [{"id": "s__rods_a", "provenance": {"seed_id": "s"}}],
        "buffer": {"seed_ids": ["s", "t"], "generated": {"s__rods_a": [1, 0, True]},
                   "events": [{"kind": "retired", "task_id": "t__rods_b", "seed": False, "mean": 0.0, "epoch": 1,
                               "reason": "burn_in"}]},
    }
    (run / "rods_curriculum.json").write_text(json.dumps(state))
    points = variant_points(run)
    assert [(p.variant, p.seed, p.epoch, p.variant_mean, p.seed_mean, p.retired) for p in points] == [
        ("s__rods_a", "s", 1, 0.25, 1.0, None), ("t__rods_b", "t", 1, 0.0, 0.5, "burn_in")]
    plot_run(run)
    assert any("2 variants, 2 evaluations: 2 harder than the seed" in t for t in capture[2])
