"""``rods train`` and ``rods plot``.

Register with the extra-argument settings so recipe overrides pass through to ``TrlParser``::

    app.command("train", context_settings=TRAIN_CONTEXT_SETTINGS)(train_command)
    app.command("plot")(plot_command)

``rods train --config recipes/tiny-cpu.yaml --num_generations 8 --mode static [--resume]``

Recipe fields and command-line options share one name (``--num_generations`` or
``--num-generations``). A mistyped option is one line with the nearest field name, not argparse's
usage wall; ``rods train --help`` lists the RODS fields by group, ``--help-all`` every TRL and
transformers field as well.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib.util
import inspect
import json
import re
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from envs.task import InputError
from rods_cli.common import console, user_errors

TRAIN_CONTEXT_SETTINGS = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}
"""Overrides pass through to the recipe parser; ``--help`` is the command's own (the RODS fields)."""

TRACKERS = {"tensorboard": (("tensorboard", "tensorboardX"), "pip install 'rods[track]'"),
            "trackio": (("trackio",), "pip install 'rods[track]'"),
            "wandb": (("wandb",), "pip install wandb"),
            "mlflow": (("mlflow",), "pip install mlflow"),
            "comet_ml": (("comet_ml",), "pip install comet_ml")}
"""report_to backend -> (modules that provide it, how to install one)."""


# ---------------------------------------------------------------------------------------------- fields
def _config_cls() -> Any:
    from trainer.config import RODSConfig

    return RODSConfig


def known_fields() -> set[str]:
    return {f.name for f in dataclasses.fields(_config_cls())}


def _suggest(name: str, known: set[str]) -> str:
    match = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return f"; did you mean --{match[0]}?" if match else " (rods train --help lists the fields)"


def check_overrides(overrides: list[str], known: set[str]) -> None:
    """Every ``--key`` is a config field (dashes or underscores; ``--no_<bool>``), else one clear error."""
    for tok in overrides:
        if not tok.startswith("--") or tok == "--":
            continue
        raw = tok[2:].split("=", 1)[0]
        name = raw.replace("-", "_")
        if name in known or (name.startswith("no_") and name[3:] in known):
            continue
        raise InputError(f"unknown option --{raw}{_suggest(name, known)}")


def check_recipe_keys(config: Path, known: set[str]) -> None:
    import yaml

    try:
        data = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise InputError(f"{config}: not valid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise InputError(f"{config}: a recipe is a YAML mapping of field: value")
    for key in data:
        if key not in known and key != "env":
            match = difflib.get_close_matches(str(key), sorted(known), n=1, cutoff=0.6)
            hint = f"; did you mean {match[0]}?" if match else " (rods train --help lists the fields)"
            raise InputError(f"{config}: unknown field {key}{hint}")


def check_trackers(report_to: Any) -> None:
    """A ``report_to`` backend that is not installed is one line naming the install command."""
    names = [report_to] if isinstance(report_to, str) else list(report_to or [])
    for name in names:
        if name in TRACKERS:
            modules, how = TRACKERS[name]
            if not any(importlib.util.find_spec(m) for m in modules):
                raise InputError(f"report_to={name} needs `{how}`")


def parse_recipe(config: Path, overrides: list[str]):
    """The recipe YAML plus ``--key value`` overrides, parsed into :class:`trainer.config.RODSConfig`."""
    from trl import TrlParser

    if not config.exists():
        raise FileNotFoundError(f"{config}: no such recipe")
    known = known_fields()
    check_recipe_keys(config, known)
    check_overrides(overrides, known)
    parser = TrlParser((_config_cls(),))

    def error(message: str):  # argparse's error(): one line instead of the usage of ~400 fields
        raise InputError(f"{config}: {message}")

    parser.error = error  # type: ignore[method-assign]
    try:
        (args,) = parser.parse_args_and_config(["--config", str(config), *overrides])
    except InputError:
        raise
    except SystemExit as exc:  # argparse reports the bad option itself
        raise typer.Exit(2) from exc
    except ValueError as exc:  # a recipe value the config refuses (RODSConfig.__post_init__ and GRPOConfig)
        raise InputError(f"{config}: {exc}") from None
    return args


# ---------------------------------------------------------------------------------------------- help
def field_groups() -> dict[str, list[dataclasses.Field]]:
    """RODS's own fields by the ``# ---- group`` comments of ``trainer/config.py`` (in source order)."""
    cls = _config_cls()
    own = {f.name: f for f in dataclasses.fields(cls) if f.name in cls.__dict__.get("__annotations__", {})}
    groups: dict[str, list[dataclasses.Field]] = {}
    current = "other"
    for line in inspect.getsource(cls).splitlines():
        head = re.match(r"\s*#\s*-{3,}\s*(.+?)\s*$", line)
        if head:
            current = head.group(1)
            continue
        m = re.match(r"\s{4}(\w+)\s*:", line)
        if m and m.group(1) in own:
            groups.setdefault(current, []).append(own.pop(m.group(1)))
    if own:
        groups.setdefault("other", []).extend(own.values())
    return groups


def _one_line(text: str, width: int = 150) -> str:
    """The first sentence (an abbreviation such as "e.g." does not end one), cut at a word to ``width``."""
    text = " ".join(text.split())
    m = re.search(r"(?<!e\.g)(?<!i\.e)(?<!vs)\.\s+(?=[A-Z(])", text)
    first = text[: m.start() + 1] if m else text
    return first if len(first) <= width else first[: width].rsplit(" ", 1)[0] + " …"


def _default(f: dataclasses.Field) -> str:
    if f.default is not dataclasses.MISSING:
        return repr(f.default)
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return repr(f.default_factory())  # type: ignore[misc]
    return "required"


def rods_help() -> str:
    """``rods train --help``: usage, the command's options, and the RODS recipe fields by group."""
    lines = [
        "Usage: rods train --config RECIPE.yaml [--resume] [--FIELD VALUE ...]",
        "",
        "Closed-loop GRPO training with RODS. Every recipe field is also an option: the same name, with",
        "underscores (--num_generations 8) or dashes (--num-generations 8); the command line wins over the recipe.",
        "",
        "Options:",
        "  --config, -c PATH   Recipe YAML (recipes/tiny-cpu.yaml, recipes/qwen3-4b-rods.yaml).",
        "  --resume            Continue from the last checkpoint in output_dir (model, optimizer, pool, queue,",
        "                      statistics, synthesis rounds in flight); values given now win, each change is logged.",
        "  --help, -h          This help.",
        "  --help-all          Also every TRL GRPOConfig / transformers TrainingArguments field (~400 lines).",
    ]
    for group, fields in field_groups().items():
        lines += ["", f"RODS fields: {group}"]
        for f in fields:
            lines.append(f"  --{f.name} (default {_default(f)})")
            lines.append(f"      {_one_line(f.metadata.get('help', ''))}")
    lines += ["", "TRL's own fields (num_generations, learning_rate, use_vllm, report_to, ...): rods train --help-all",
              "or https://huggingface.co/docs/trl/grpo_trainer#trl.GRPOConfig"]
    return "\n".join(lines)


def all_help() -> str:
    from trl import TrlParser

    return TrlParser((_config_cls(),), prog="rods train --config RECIPE.yaml").format_help()


# ---------------------------------------------------------------------------------------------- commands
def _untrained_tiny(args: Any) -> bool:
    return args.model_name_or_path == "rods-tiny" and not args.reward_shaping and args.mode != "static"


TINY_BANNER = ("note: the tiny model is untrained, so every episode scores 0: no task reaches the boundary zone, no "
               "synthesis round runs and GRPO gets no signal. This run checks the machinery; add --reward_shaping "
               "synthetic_boundary to rehearse the whole loop (detection, synthesis, injection, retirement).")


def _run_totals(run_dir: Path) -> dict[str, Any]:
    """Rewards and loop events of the run, from its curriculum log (for the summary's honest last lines)."""
    path = run_dir / "curriculum.jsonl"
    reports = [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()] if path.exists() else []
    rewards = [r for rep in reports for r in rep.get("rewards", [])]
    return {"rewards": len(rewards), "nonzero": sum(1 for r in rewards if r), "synthesized": sum(len(r.get("synthesized", [])) for r in reports),
            "injected": sum(len(r.get("injected", [])) for r in reports),
            "errors": [r["synthesis_error"] for r in reports if r.get("synthesis_error")]}


def train_command(
    ctx: typer.Context,
    config: Path = typer.Option(None, "--config", "-c", help="Recipe YAML (recipes/tiny-cpu.yaml, recipes/qwen3-4b-rods.yaml)."),
    resume: bool = typer.Option(False, "--resume", help="Continue from the last checkpoint in output_dir (model, "
                                                        "optimizer, pool, queue and detector statistics). The "
                                                        "recipe and overrides given now win over the checkpoint's "
                                                        "settings; each changed value is logged as a warning."),
    show_help: bool = typer.Option(False, "--help", "-h", help="The RODS recipe fields, grouped."),
    help_all: bool = typer.Option(False, "--help-all", help="Also every TRL and transformers field."),
) -> None:
    """Closed-loop GRPO training with RODS. Any recipe field can be overridden: --key value (rods train --help)."""
    if show_help or help_all:
        typer.echo(rods_help())
        if help_all:
            typer.echo("\nEvery field (TRL GRPOConfig, transformers TrainingArguments and RODS):\n")
            typer.echo(all_help())
        raise typer.Exit(0)
    with user_errors():
        if config is None:
            raise InputError("rods train needs --config RECIPE.yaml (rods train --help)")
        args = parse_recipe(config, list(ctx.args))
        check_trackers(args.report_to)
        from trainer.grpo import train

        console.print(f"[bold]rods train[/] {config} -> {args.output_dir} (mode={args.mode}, K={args.num_generations}, "
                      f"epochs={args.num_train_epochs:g}{', resume' if resume else ''})", highlight=False)
        if _untrained_tiny(args):
            console.print(TINY_BANNER, markup=False, highlight=False)
        summary = train(args, resume=resume)
    table = Table(title="training summary")
    table.add_column("field")
    table.add_column("value", justify="right")
    for key, value in summary.items():
        table.add_row(key, f"{value:.3f}" if isinstance(value, float) else str(value))
    console.print(table)
    run_dir = Path(args.output_dir)
    totals = _run_totals(run_dir)
    console.print(f"rollout rewards: {totals['nonzero']} of {totals['rewards']} non-zero; variants synthesized "
                  f"{totals['synthesized']}, injected {totals['injected']}", markup=False, highlight=False)
    if totals["rewards"] and not totals["nonzero"]:
        hint = " (the tiny model is untrained: --reward_shaping synthetic_boundary rehearses the loop)" \
            if _untrained_tiny(args) else ""
        console.print(f"all rewards were 0: nothing to learn from, no boundary task, no synthesis{hint}",
                      markup=False, highlight=False)
    for err in totals["errors"]:
        console.print(f"synthesis error: {err}", markup=False, highlight=False, style="red")
    console.print(f"curriculum log: {run_dir / 'curriculum.jsonl'}  (plot it: rods plot {run_dir})",
                  markup=False, highlight=False)


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
