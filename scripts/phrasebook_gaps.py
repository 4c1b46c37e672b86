"""Which sentences the phrasebook lacks: re-plan a run's refused seeds and list the phrasebook searches that found none.

Usage::

    .venv/bin/python scripts/phrasebook_gaps.py runs/train400 [--seed 3] [--variants_per_seed 2] [--top 40]
    .venv/bin/python scripts/phrasebook_gaps.py runs/mine --tasks my_seeds.jsonl   # seeds of your own environment

A refused sample often keeps a seed turn because no phrasebook sentence states exactly what that turn states for its
calls (a booking that leaves the token to an earlier turn, a price an earlier lookup read, a withheld destination).
This re-runs synthesis over the seeds of ``RUN/rejected.jsonl`` with an observer on every empty phrasebook search
(:data:`rods_agents.variation.donor_search.EMPTY_SEARCHES`) and prints, most scenarios first, each run of calls with
where each of its values comes from (``user``, ``flag``, ``state``, ``call<producer``, ``withheld``, ``composed~recipe``)
and two of the turns it came from. Each line is a phrasing (or a rule) to add to ``prompts/phrasebook/``; the
session of 2026-12-05 took 396 -> 413 accepted of 800 that way.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from envs.dataset import load_tasks  # noqa: E402
from envs.task import Task  # noqa: E402
from rods_agents.variation import donor_search  # noqa: E402
from rods_agents.variation.turn_bank import Slot  # noqa: E402


def pattern(methods: tuple[str, ...], target: tuple[Slot, ...]) -> str:
    """'book_flight {"0.access_token": "user", "0.travel_to": "withheld", ...}': the calls and each value's source."""
    own = {f"{x.index}.{x.param}": x.source + (f"<{x.producer}" if x.producer else "") + (f"~{x.recipe}" if x.recipe else "")
           for x in target if 0 <= x.index < len(methods)}
    return "+".join(methods) + " " + json.dumps(own, sort_keys=True)


def gaps(seeds: list[Task], seed: int, variants_per_seed: int) -> dict[str, set[tuple[str, int, str]]]:
    """Pattern -> {(seed id, turn, the replaced words)} of every empty phrasebook search while synthesizing ``seeds``."""
    from graphs.synthesis import synthesize
    from rods_agents.stages.state import SynthesisContext

    found: dict[str, set[tuple[str, int, str]]] = defaultdict(set)

    def observe(task: Task, turn: int, methods: tuple[str, ...], target: tuple[Slot, ...], span: str) -> None:
        found[pattern(methods, target)].add((task.id, turn, " ".join(span.split())[:140]))

    donor_search.EMPTY_SEARCHES.append(observe)
    try:
        synthesize(seeds, SynthesisContext(seed=seed, variants_per_seed=variants_per_seed))
    finally:
        donor_search.EMPTY_SEARCHES.remove(observe)
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path, help="a synthesis run folder (holds rejected.jsonl)")
    ap.add_argument("--seed", type=int, default=3, help="the run's --seed")
    ap.add_argument("--variants_per_seed", "--variants-per-seed", type=int, default=2)
    ap.add_argument("--top", type=int, default=40, help="patterns to print")
    ap.add_argument("--tasks", type=Path, default=None, help="the seeds' BFCL JSONL file (default: BFCL's own tasks)")
    args = ap.parse_args()
    path = args.run / "rejected.jsonl"
    if not path.exists():
        sys.exit(f"{path}: no such file (run `rods synthesize ... --out {args.run}` first)")
    ids = sorted({json.loads(line)["seed_id"] for line in path.read_text().splitlines() if line.strip()})
    if not ids:
        sys.exit(f"{path}: no refused samples")
    seeds = load_tasks("all", None, str(args.tasks) if args.tasks else None, ids)
    scenario_of = {t.id: t.scenario for t in seeds}  # BFCL's four categories share one; a task of yours is its own
    found = gaps(seeds, args.seed, args.variants_per_seed)
    scenarios = {k: {scenario_of.get(i, i) for i, _, _ in v} for k, v in found.items()}
    for key in sorted(found, key=lambda k: (-len(scenarios[k]), -len(found[k]), k))[:args.top]:
        print(f"{len(scenarios[key]):3d} scenarios {len(found[key]):3d} searches  {key}")
        for sid, turn, words in sorted(found[key])[:2]:
            print(f"      {sid} turn {turn}: {words}")


if __name__ == "__main__":
    main()
