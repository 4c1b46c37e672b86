"""``rods show RUN [ID]``: a synthesized variant beside its seed, turn by turn, with the changes highlighted; a
rejected sample's reasons; without ID, every sample of the run in one table.

ID is a variant id (``<seed>__rods_<hash>``), a sample id (``<seed>#v<n>``, as ``rejected.jsonl`` names them) or a
seed id (all its samples). Words the variant changed are shown in bold green, the seed's words it replaced in red
(struck through); the plan's recorded changes (renames, numbers, swaps, derived values, state changes, patches) follow
each pair. Seeds are looked up among the shipped BFCL tasks, or in ``--seeds FILE`` for a run made from a file.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from envs.task import InputError, Task
from rods_cli.common import console, user_errors

CHANGES = ("renames", "numbers", "swaps", "derived", "substitutions", "state_changes", "patches")


def _read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def sample_id(variant: Task) -> str:
    prov = variant.provenance or {}
    return f"{prov.get('seed_id')}#v{prov.get('variant')}"


CALL_TOKENS = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[\w.\-]+|\n|[^\s\w]")


def _call_text(tokens: list[str]) -> str:
    return "".join(t + " " if t == "," else t for t in tokens)


def diff_words(old: str, new: str, calls: bool = False) -> tuple[Text, Text]:
    """Both texts with the parts that differ marked: removed (seed side) red and struck, added (variant side) green.

    Text is compared word by word; call strings token by token (names, literals, punctuation), so spacing does not
    count as a change."""
    a, b = (CALL_TOKENS.findall(old), CALL_TOKENS.findall(new)) if calls else (old.split(" "), new.split(" "))

    def join(parts: list[str]) -> str:
        return _call_text(parts) if calls else " ".join(parts)

    sep = "" if calls else " "
    left, right = Text(), Text()
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        seed_part, variant_part = join(a[i1:i2]), join(b[j1:j2])
        if op == "equal":
            left.append(seed_part + sep)
            right.append(variant_part + sep)
            continue
        if seed_part:
            left.append(seed_part, style="bold red strike")
            left.append(sep)
        if variant_part:
            right.append(variant_part, style="bold green")
            right.append(sep)
    left.rstrip()
    right.rstrip()
    return left, right


def _turn_text(turn: list) -> str:
    return " ".join(m.content if hasattr(m, "content") else str(m.get("content", "")) for m in turn).strip()


def pair_table(seed: Task, variant: Task) -> Table:
    """Seed and variant side by side: each turn's user text, then its ground-truth calls, changes highlighted."""
    table = Table(title=f"{seed.id}  ->  {variant.id}", show_lines=True, expand=True)
    table.add_column("turn", justify="right", no_wrap=True)
    table.add_column(f"seed {seed.id}", overflow="fold", ratio=1)
    table.add_column(f"variant {sample_id(variant)}", overflow="fold", ratio=1)
    for t in range(max(len(seed.turns), len(variant.turns))):
        s_text = _turn_text(seed.turns[t]) if t < len(seed.turns) else ""
        v_text = _turn_text(variant.turns[t]) if t < len(variant.turns) else ""
        table.add_row(str(t), *diff_words(s_text or "(empty turn)", v_text or "(empty turn)"))
        s_gt = "\n".join(seed.ground_truth[t]) if t < len(seed.ground_truth) else ""
        v_gt = "\n".join(variant.ground_truth[t]) if t < len(variant.ground_truth) else ""
        left, right = diff_words(s_gt, v_gt, calls=True)
        table.add_row("", Text("calls: ", style="dim") + left, Text("calls: ", style="dim") + right)
    return table


def changes_text(variant: Task) -> str:
    prov = variant.provenance or {}
    lines = [f"[bold]{k}[/]: {escape(json.dumps(prov[k], ensure_ascii=False, default=str))}"
             for k in CHANGES if prov.get(k) not in (None, "", [], {}, "[]", "{}")]
    return "\n".join(lines) or "[dim]no recorded changes[/]"


def _seed_lookup(ids: set[str], seeds_file: Path | None) -> dict[str, Task]:
    from envs.dataset import load_split
    from envs.task import read_tasks

    pool = read_tasks(seeds_file) if seeds_file else load_split("all")
    return {t.id: t for t in pool if t.id in ids}


def show_rejected(record: dict[str, Any], seed: Task | None) -> None:
    console.print(f"[bold red]rejected[/] {escape(record['sample_id'])} (seed {escape(record['seed_id'])})")
    for reason in record.get("reasons", []):
        console.print(f"  - {escape(str(reason))}", soft_wrap=True, highlight=False)
    for n, attempt in enumerate((record.get("detail") or {}).get("earlier_attempts") or [], 1):
        console.print(f"  earlier attempt {n}: {escape('; '.join(map(str, attempt.get('reasons', []))))}",
                      soft_wrap=True, highlight=False)
    if seed is not None:
        table = Table(title=f"seed {seed.id}", show_lines=True, expand=True)
        table.add_column("turn", justify="right", no_wrap=True)
        table.add_column("user", overflow="fold", ratio=2)
        table.add_column("calls", overflow="fold", ratio=1)
        for t, turn in enumerate(seed.turns):
            table.add_row(str(t), escape(_turn_text(turn) or "(empty turn)"), escape("\n".join(seed.ground_truth[t])))
        console.print(table)


def overview(run: Path, accepted: list[Task], rejected: list[dict]) -> Table:
    table = Table(title=f"{run}: {len(accepted)} accepted, {len(rejected)} rejected")
    table.add_column("sample", no_wrap=True, overflow="fold")
    table.add_column("variant id", overflow="fold")
    table.add_column("status")
    table.add_column("reasons (`rods show RUN SAMPLE` for details)", overflow="fold", ratio=1)
    rows = [(sample_id(v), v.id, "[green]accepted[/]", "") for v in accepted]
    rows += [(r["sample_id"], "", "[red]rejected[/]", escape(", ".join(dict.fromkeys(
        str(x).split(" ")[0] for x in r.get("reasons") or [])))) for r in rejected]
    for row in sorted(rows):
        table.add_row(escape(row[0]), escape(row[1]), row[2], row[3])
    return table


def show_command(
    run: Annotated[Path, typer.Argument(help="A `rods synthesize` run folder (accepted.jsonl, rejected.jsonl).")],
    task_id: Annotated[str | None, typer.Argument(metavar="[ID]", help="Variant id, sample id (seed#v0) or seed id; "
                                                                        "omitted: list every sample.")] = None,
    seeds: Annotated[Path | None, typer.Option("--seeds", help="The seed file the run was made from (default: the "
                                                               "shipped BFCL tasks).")] = None,
) -> None:
    """Show a variant beside its seed (changes highlighted), or a rejected sample's reasons."""
    from envs.task import read_tasks

    with user_errors():
        if not (run / "accepted.jsonl").exists() and not (run / "rejected.jsonl").exists():
            raise InputError(f"{run}: no accepted.jsonl or rejected.jsonl (expected a `rods synthesize` run folder)")
        accepted = read_tasks(run / "accepted.jsonl") if (run / "accepted.jsonl").exists() else []
        rejected = _read_jsonl(run / "rejected.jsonl")
        if task_id is None:
            console.print(overview(run, accepted, rejected))
            return
        hits_acc = [v for v in accepted if task_id in (v.id, sample_id(v), (v.provenance or {}).get("seed_id"))]
        hits_rej = [r for r in rejected if task_id in (r.get("sample_id"), r.get("seed_id"))]
        if not hits_acc and not hits_rej:
            known = sorted({sample_id(v) for v in accepted} | {r["sample_id"] for r in rejected})
            close = difflib.get_close_matches(task_id, known + [v.id for v in accepted], n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else f" ({len(known)} samples: `rods show {run}`)"
            raise InputError(f"{task_id}: no such variant, sample or seed in {run}{hint}")
        wanted = {(v.provenance or {}).get("seed_id") for v in hits_acc} | {r["seed_id"] for r in hits_rej}
        seeds_by_id = _seed_lookup({str(s) for s in wanted}, seeds)
    for variant in hits_acc:
        seed = seeds_by_id.get(str((variant.provenance or {}).get("seed_id")))
        if seed is None:
            console.print(f"[yellow]seed {escape(str((variant.provenance or {}).get('seed_id')))} not found "
                          "(pass --seeds FILE for a run made from a file)[/]")
            continue
        console.print(pair_table(seed, variant))
        console.print(changes_text(variant), soft_wrap=True, highlight=False)
    for record in hits_rej:
        show_rejected(record, seeds_by_id.get(record["seed_id"]))
