"""``rods plot`` on synthetic run folders: both PNGs, the title, and an all-zero run that says so."""

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
        return real(self, *a, **kw)

    monkeypatch.setattr(plt.Figure, "savefig", savefig)
    return figs


def test_plot_writes_both_pngs_with_title_steps_and_labels(tmp_path, capture):
    history = [{"step": s, "reward": 0.25 * s, "loss": 0.01 * s, "kl": 0.001 * s, "epoch": s / 2} for s in range(1, 7)]
    run = _run(tmp_path, [_report(0, [0, 1, 0, 1], [0.5, 0.0], injected=["a"]),
                          _report(1, [1, 1, 0, 1], [1.0, 0.5], burned=["a"])], history)
    paths = plot_run(run)
    assert [p.name for p in paths] == ["pool_dynamics.png", "reward_distributions.png"]
    assert all(p.stat().st_size > 10_000 for p in paths)
    pool, rewards = capture
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
    pool, rewards = capture
    assert any(ZERO_NOTE in t for t in rewards)
    assert "nothing injected or retired" in pool
    assert "not logged (beta = 0: no reference model)" in rewards  # KL panel without a KL series


def test_plot_of_a_folder_without_a_log_is_one_clear_error(tmp_path):
    from typer.testing import CliRunner

    from rods_cli.main import app

    res = CliRunner().invoke(app, ["plot", str(tmp_path)])
    assert res.exit_code == 2 and "no curriculum log" in res.output and "Traceback" not in res.output
