"""The ``rods`` command line: evaluate, list tasks, synthesize, train, plot, open Studio."""

from __future__ import annotations

import logging
from importlib import metadata

import typer

from rods_cli.eval import eval_command, tasks_command
from rods_cli.export import export_command
from rods_cli.show import show_command
from rods_cli.studio import studio
from rods_cli.synthesize import synthesize
from rods_cli.trace import trace_command
from rods_cli.train import TRAIN_CONTEXT_SETTINGS, plot_command, train_command

app = typer.Typer(
    name="rods",
    help="RODS: reward-driven online data synthesis for multi-turn tool-use RL on BFCL v3 multi-turn.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.command("eval")(eval_command)
app.command("tasks")(tasks_command)
app.command("synthesize")(synthesize)
app.command("train", context_settings=TRAIN_CONTEXT_SETTINGS)(train_command)
app.command("plot")(plot_command)
app.command("studio")(studio)
app.command("export")(export_command)
app.command("show")(show_command)
app.command("trace")(trace_command)


def _version(value: bool) -> None:
    if value:
        try:
            version = metadata.version("rods")
        except metadata.PackageNotFoundError:  # a checkout used without `pip install -e .`
            version = "unknown (not installed)"
        typer.echo(f"rods {version}")
        raise typer.Exit()


@app.callback()
def _main(verbose: bool = typer.Option(False, "--verbose", "-v", help="Log at DEBUG level."),
          version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")


if __name__ == "__main__":  # pragma: no cover
    app()
