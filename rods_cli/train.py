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
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table

from envs.task import InputError
from rods_cli.common import console, err_console, user_errors

if TYPE_CHECKING:
    from trainer.config import RODSConfig

TRAIN_CONTEXT_SETTINGS = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}
"""Overrides pass through to the recipe parser; ``--help`` is the command's own (the RODS fields)."""

TRACKERS = {"tensorboard": (("tensorboard", "tensorboardX"), "pip install -e '.[track]' (from the RODS checkout)"),
            "trackio": (("trackio",), "pip install -e '.[track]' (from the RODS checkout)"),
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


def parse_recipe(config: Path, overrides: list[str]) -> RODSConfig:
    """The recipe YAML plus ``--key value`` overrides, parsed into :class:`trainer.config.RODSConfig`."""
    from trl import TrlParser

    if not config.exists():
        raise FileNotFoundError(f"{config}: no such recipe")
    known = known_fields()
    check_recipe_keys(config, known)
    check_overrides(overrides, known)
    parser = TrlParser((_config_cls(),))

    def error(message: str):  # argparse's error(): one line instead of a usage of every TRL field
        raise InputError(f"{config}: {message}")

    parser.error = error  # type: ignore[method-assign]
    try:
        (args,) = parser.parse_args_and_config(["--config", str(config), *overrides])
    except InputError:
        raise
    except SystemExit as exc:  # argparse reports the bad option itself
        raise typer.Exit(2) from exc
    except ValueError as exc:  # a value the config refuses (RODSConfig.__post_init__ and GRPOConfig)
        raise InputError(f"{_source_of(str(exc), config, overrides)}: {exc}") from None
    return args


def _source_of(message: str, config: Path, overrides: list[str]) -> str:
    """Where a refused value came from: the command-line option it names (``--mode statc``), else the recipe."""
    for i, tok in enumerate(overrides):
        if not tok.startswith("--"):
            continue
        raw = tok[2:].split("=", 1)[0]
        name = raw.replace("-", "_")
        if re.search(rf"\b{re.escape(name)}\b", message):
            value = tok.split("=", 1)[1] if "=" in tok else next(
                (v for v in overrides[i + 1:i + 2] if not v.startswith("--")), "")
            return f"--{raw} {value}".rstrip()
    return str(config)


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
        "  --overwrite         Start over in an output_dir that holds another run (deletes its checkpoints).",
        "  --help-all          Also every TRL GRPOConfig / transformers TrainingArguments field (over 1,500 lines:",
        "                      pipe it to less).",
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
def _untrained_tiny(args: RODSConfig) -> bool:
    return args.model_name_or_path == "rods-tiny" and not args.reward_shaping and args.mode != "static"


TINY_BANNER = ("note: the tiny model is untrained, so every episode scores 0: no task reaches the boundary zone, no "
               "synthesis round runs and GRPO gets no signal. This run checks the machinery; add --reward_shaping "
               "synthetic_boundary to rehearse the whole loop (detection, synthesis, injection, retirement).")


def _run_totals(run_dir: Path) -> dict[str, Any]:
    """Rewards and loop events of the run, from its curriculum log (for the summary's honest last lines)."""
    path = run_dir / "curriculum.jsonl"
    reports = [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()] if path.exists() else []
    rewards = [r for rep in reports for r in rep.get("rewards", [])]
    history = json.loads((run_dir / "log_history.json").read_text(encoding="utf-8")) \
        if (run_dir / "log_history.json").exists() else []
    raw = [h["rods/raw_reward"] for h in history if isinstance(h.get("rods/raw_reward"), int | float)]
    return {"rewards": len(rewards), "nonzero": sum(1 for r in rewards if r),
            "raw_reward": sum(raw) / len(raw) if raw else None,
            "synthesized": sum(len(r.get("synthesized", [])) for r in reports),
            "injected": sum(len(r.get("injected", [])) for r in reports),
            "errors": [r["synthesis_error"] for r in reports if r.get("synthesis_error")]}


RUN_FILES = ("curriculum.jsonl", "rods_summary.json", "log_history.json", "rods_curriculum.json")
"""Files that mark a folder as holding a ``rods train`` run (with its ``checkpoint-*`` folders)."""
RUN_DIRS = ("synthesis",)
"""Folders of a run that ``--overwrite`` removes with its checkpoints (checkpointed synthesis rounds)."""


def existing_run(out: Path) -> str | None:
    """What of a training run ``out`` holds (for the refusal), or None for an empty or new folder."""
    if not out.is_dir():
        return None
    ckpts = sorted((p.name for p in out.glob("checkpoint-*") if p.is_dir()),
                   key=lambda n: int(n.rsplit("-", 1)[-1]) if n.rsplit("-", 1)[-1].isdigit() else -1)
    files = [n for n in RUN_FILES if (out / n).exists()]
    if not ckpts and not files:
        return None
    return ", ".join(([f"{len(ckpts)} checkpoint(s), last {ckpts[-1]}"] if ckpts else []) + files)


def check_output_dir(out: Path, resume: bool, overwrite: bool) -> None:
    """One line, before any model loads: a file in the way, or a folder holding another run (as ``rods synthesize``)."""
    if out.exists() and not out.is_dir():
        raise InputError(f"--output_dir {out} is a file, not a folder; choose another --output_dir")
    if resume:
        return
    held = existing_run(out)
    if held and not overwrite:
        raise InputError(f"{out} holds a training run ({held}); continue it with --resume, choose another "
                         "--output_dir, or pass --overwrite to start over (deletes its checkpoints)")
    if held:
        import shutil

        for folder in [*out.glob("checkpoint-*"), out / RUN_DIRS[0]]:  # the old run's synthesis rounds too: a
            if folder.is_dir():  # fresh run must not resume them
                shutil.rmtree(folder)
        for name in RUN_FILES:
            (out / name).unlink(missing_ok=True)
        console.print(f"--overwrite: removed the earlier run in {out} ({held})", markup=False, highlight=False)


def quiet_console() -> None:
    """What a user need not read: TRL's / transformers' deprecation ``FutureWarning`` s about their own
    settings, and the weight loading and shard writing bars (the training bar stays)."""
    import warnings

    warnings.filterwarnings("ignore", category=FutureWarning, module=r"(transformers|trl|accelerate)(\.|$)")
    warnings.filterwarnings("ignore", message=r".*is deprecated and will be removed in v6", category=FutureWarning)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()


def interrupted_message(exc: Any, config: Path, overrides: list[str]) -> str:
    """Where a Ctrl-C stopped training, what is lost, and the command that continues."""
    import shlex

    where = f"interrupted at step {exc.step}, in epoch {exc.epoch} ({exc.generations_done} of {exc.generations} " \
            "generation batches done)"
    cmd = shlex.join(["rods", "train", "--config", str(config), *[o for o in overrides if o != "--overwrite"],
                      "--resume"])
    if exc.checkpoint is None:
        return (f"{where}. No checkpoint yet (the first is written at the end of epoch 0): nothing to resume; "
                "run the same command again to start over.")
    return (f"{where}. Checkpoints are written at epoch boundaries: the work of epoch {exc.epoch} since "
            f"{exc.checkpoint.name} is lost. Continue from {exc.checkpoint.name} with:\n  {cmd}")


def train_command(
    ctx: typer.Context,
    config: Path = typer.Option(None, "--config", "-c", help="Recipe YAML (recipes/tiny-cpu.yaml, recipes/qwen3-4b-rods.yaml)."),
    resume: bool = typer.Option(False, "--resume", help="Continue from the last checkpoint in output_dir (model, "
                                                        "optimizer, pool, queue and detector statistics). The "
                                                        "recipe and overrides given now win over the checkpoint's "
                                                        "settings; each changed value is logged as a warning."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Start over in an output_dir holding another run."),
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
    quiet_console()
    overrides = list(ctx.args)
    with user_errors():
        if config is None:
            raise InputError("rods train needs --config RECIPE.yaml (rods train --help)")
        args = parse_recipe(config, overrides)
        check_trackers(args.report_to)
        check_output_dir(Path(args.output_dir), resume, overwrite)
        from trainer.grpo import TrainingInterrupted, load_seed_tasks, train

        load_seed_tasks(args)  # no seed left: one line naming the filter, before the model loads
        console.print(f"[bold]rods train[/] {config} -> {args.output_dir} (mode={args.mode}, K={args.num_generations}, "
                      f"epochs={args.num_train_epochs:g}{', resume' if resume else ''})", highlight=False)
        if _untrained_tiny(args):
            console.print(TINY_BANNER, markup=False, highlight=False)
        try:
            summary = train(args, resume=resume)
        except TrainingInterrupted as exc:
            err_console.print(interrupted_message(exc, config, overrides), markup=False, highlight=False, soft_wrap=True)
            raise typer.Exit(130) from None
        except KeyboardInterrupt:
            err_console.print("interrupted before the first training step: nothing to resume; run the same command "
                              "again to start", markup=False, highlight=False)
            raise typer.Exit(130) from None
    print_summary(args, summary)


def print_summary(args: RODSConfig, summary: dict) -> None:
    table = Table(title="training summary")
    table.add_column("field")
    table.add_column("value", justify="right")
    for key, value in summary.items():
        table.add_row(key, f"{value:.3f}" if isinstance(value, float) else str(value))
    console.print(table)
    run_dir = Path(args.output_dir)
    totals = _run_totals(run_dir)
    synthetic = f" (synthetic: reshaped by reward_shaping={args.reward_shaping}; the checker's own mean reward " \
                f"was {totals['raw_reward']:.3f})" if args.reward_shaping and totals["raw_reward"] is not None else ""
    console.print(f"rollout rewards: {totals['nonzero']} of {totals['rewards']} non-zero{synthetic}; variants "
                  f"synthesized {totals['synthesized']}, injected {totals['injected']}", markup=False, highlight=False)
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
