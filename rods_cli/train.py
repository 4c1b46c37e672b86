"""``rods train`` and ``rods plot``.

Register with the extra-argument settings so recipe overrides pass through to ``TrlParser``::

    app.command("train", context_settings=TRAIN_CONTEXT_SETTINGS)(train_command)
    app.command("plot")(plot_command)

``rods train --config recipes/tiny-cpu.yaml --num_generations 8 --mode static [--resume]``
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from envs.task import InputError
from rods_cli.common import console, user_errors

TRAIN_CONTEXT_SETTINGS = {"allow_extra_args": True, "ignore_unknown_options": True}


def parse_recipe(config: Path, overrides: list[str]):
    """The recipe YAML plus ``--key value`` overrides, parsed into :class:`trainer.config.RODSConfig`."""
    from trl import TrlParser

    from trainer.config import RODSConfig

    if not config.exists():
        raise FileNotFoundError(f"{config}: no such recipe")
    parser = TrlParser((RODSConfig,))
    try:
        (args,) = parser.parse_args_and_config(["--config", str(config), *overrides])
    except SystemExit as exc:  # argparse reports the bad option itself
        raise typer.Exit(2) from exc
    except ValueError as exc:  # a recipe value the config refuses (RODSConfig.__post_init__ and GRPOConfig)
        raise InputError(f"{config}: {exc}") from None
    return args


def train_command(
    ctx: typer.Context,
    config: Path = typer.Option(..., "--config", "-c", help="Recipe YAML (recipes/tiny-cpu.yaml, recipes/qwen3-4b-rods.yaml)."),
    resume: bool = typer.Option(False, "--resume", help="Continue from the last checkpoint in output_dir (model, "
                                                        "optimizer, pool, queue and detector statistics). The "
                                                        "recipe and overrides given now win over the checkpoint's "
                                                        "settings; each changed value is logged as a warning."),
) -> None:
    """Closed-loop GRPO training with RODS. Any recipe field can be overridden: --key value."""
    with user_errors():
        args = parse_recipe(config, list(ctx.args))
        from trainer.grpo import train

        console.print(f"[bold]rods train[/] {config} -> {args.output_dir} (mode={args.mode}, K={args.num_generations}, "
                      f"epochs={args.num_train_epochs:g}{', resume' if resume else ''})")
        summary = train(args, resume=resume)
    table = Table(title="training summary")
    table.add_column("field")
    table.add_column("value", justify="right")
    for key, value in summary.items():
        table.add_row(key, f"{value:.3f}" if isinstance(value, float) else str(value))
    console.print(table)
    console.print(f"curriculum log: {Path(args.output_dir) / 'curriculum.jsonl'}  (plot it: rods plot {args.output_dir})")


def plot_command(
    run_dir: Path = typer.Argument(..., help="A `rods train` output_dir (holds curriculum.jsonl)."),
    out: Path = typer.Option(None, "--out", help="Folder for the PNGs (default: RUN_DIR)."),
) -> None:
    """Draw pool dynamics and reward distributions of a run to PNG."""
    with user_errors():
        from trainer.plot import plot_run

        paths = plot_run(run_dir, out)
    for p in paths:
        console.print(f"wrote {p}")
