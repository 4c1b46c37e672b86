"""Print N seeded-random (seed turn vs variant turn) pairs from a run folder's accepted.jsonl, as Markdown.

Usage::

    .venv/bin/python scripts/side_by_side.py RUN_DIR [-n 10] [--seed 0]

Each example shows, per turn, the seed's user text and the variant's, with both ground truths (the variant's with
what the environment answers each call), and
the plan's changes (renames, numbers, swapped options, re-derived values, state changes and patches, and
where the provenance has them the train turns the wording came from) from the variant's provenance. The draw is ``random.Random(seed).sample`` over the accepted variants in file
order (with ``--one_per_scenario``, over one variant per scenario chosen by the same generator first), so the same
folder and seed give the same examples.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from envs.dataset import load_tasks  # noqa: E402
from envs.executor import Environment  # noqa: E402
from envs.task import Task  # noqa: E402


def _text(turn: list) -> str:
    return " ".join(m.content for m in turn).strip() or "*(empty turn)*"


def _calls(calls: list[str], results: list[str] | None = None) -> str:
    """The calls of a turn, each with what the environment answered when ``results`` is given (cut to 200
    characters): a reader judges from the text *and the environment* whether a careful person could make them."""
    if not calls:
        return "*(none: BFCL does not score this turn)*"
    if results is None:
        return "<br>".join(f"`{c}`" for c in calls)
    return "<br>".join(f"`{c}` -> `{r[:200]}{'...' if len(r) > 200 else ''}`" for c, r in zip(calls, results,
                                                                                            strict=True))


def ground_truth_results(task: Task) -> list[list[str]]:
    """Each ground-truth call's result, run turn by turn on the task's own starting state."""
    env = Environment(task.involved_classes, task.initial_config, long_context=task.long_context)
    return [env.run(calls) for calls in task.ground_truth]


def _cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def _leaves(obj: object, path: str = "") -> dict[str, object]:
    """Every scalar of a config by its dotted path (lists as one value)."""
    if isinstance(obj, dict):
        out: dict[str, object] = {}
        for k, v in obj.items():
            out.update(_leaves(v, f"{path}.{k}" if path else str(k)))
        return out
    return {path: obj}


def state_diff(seed: Task, variant: Task, limit: int = 12) -> str:
    """The state the variant starts in where it differs from its seed's, as the accepted task holds it: after the
    plan's state changes *and* the patch agent's repairs ('TradingBot.account_info.balance: 10000.0 -> 43500.0'),
    so a reader sees the balance an order runs against, not the resampled one a patch replaced."""
    old, new = _leaves(seed.initial_config), _leaves(variant.initial_config)
    changed = [f"{k}: {json.dumps(old.get(k))[:60]} -> {json.dumps(new.get(k))[:60]}"
               for k in sorted(old.keys() | new.keys()) if old.get(k) != new.get(k)]
    more = f" (and {len(changed) - limit} more)" if len(changed) > limit else ""
    return "; ".join(changed[:limit]) + more


def example(variant: Task, seed: Task, index: int) -> str:
    prov = variant.provenance or {}
    lines = [f"### {index}. `{seed.id}` -> `{variant.id}`", ""]
    changes = {k: prov.get(k) for k in ("renames", "numbers", "swaps", "derived", "substitutions", "state_changes",
                                        "patches", "donors") if prov.get(k)}
    if changes:
        lines += ["Changes: " + "; ".join(f"**{k}** `{json.dumps(v)[:300]}`" for k, v in changes.items()), ""]
    if prov.get("lookups"):
        lines += ["Lookups written into the variant's ground truth (a careful person makes them; the seed's own ground "
                  "truth leaves them out): " + "; ".join(f"turn {w['turn']}: `{w['call']}`" for w in prov["lookups"]), ""]
    if prov.get("stated_fallbacks"):  # read 56 took 'It's the one with ID ticket_001' for a give-away: no call lists it
        lines += ["Values the variant states that its seed's text, state and tools never give (the seed's gap: "
                  "stated so a careful person can solve it, not a give-away): "
                  + "; ".join(f"`{s}`" for s in prov["stated_fallbacks"]), ""]
    if diff := state_diff(seed, variant):
        lines += [f"State the variant starts in (changed from the seed's, patches applied): `{diff}`", ""]
    lines += ["| turn | seed | variant (ground-truth calls -> what the environment answers) |", "|---|---|---|"]
    results = ground_truth_results(variant)
    for t, (st, vt) in enumerate(zip(seed.turns, variant.turns, strict=False)):
        lines.append(f"| {t} | {_cell(_text(st))} | {_cell(_text(vt))} |")
        lines.append(f"| | {_cell(_calls(seed.ground_truth[t]))} "
                     f"| {_cell(_calls(variant.ground_truth[t], results[t]))} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path, help="a synthesis run folder (holds accepted.jsonl)")
    ap.add_argument("-n", type=int, default=10, help="examples to print")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random draw")
    ap.add_argument("--one_per_scenario", "--one-per-scenario", action="store_true",
                    help="draw from one variant per scenario (itself drawn at random), as the issue-13 read does")
    args = ap.parse_args()
    rows = [json.loads(line) for line in (args.run / "accepted.jsonl").read_text().splitlines() if line.strip()]
    if not rows:
        sys.exit(f"{args.run / 'accepted.jsonl'}: no accepted variants")
    rng = random.Random(args.seed)
    if args.one_per_scenario:
        by: dict = {}
        for r in rows:
            by.setdefault(Task.from_bfcl(r).scenario, []).append(r)
        rows = [rng.choice(group) for _, group in sorted(by.items(), key=lambda kv: str(kv[0]))]
    picked = rng.sample(rows, min(args.n, len(rows)))
    variants = [Task.from_bfcl(r) for r in picked]
    seeds = {t.id: t for t in load_tasks(ids=sorted({v.provenance["seed_id"] for v in variants}))}
    out = [f"# {len(variants)} side-by-side examples (seeded draw {args.seed} from {args.run})", ""]
    out += [example(v, seeds[v.provenance["seed_id"]], i + 1) for i, v in enumerate(variants)]
    sys.stdout.write("\n".join(out))


if __name__ == "__main__":
    main()
