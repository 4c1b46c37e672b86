"""Oracle evaluation speed: RODS vs bfcl-eval's own multi-turn checker on the same entries.

Every contender scores the ground-truth trajectory of each selected entry (800 by default) and
must pass all of them. The baseline is BFCL's ``multi_turn_checker`` (its ``eval``-based executor
on a model side and a GT side, as ``bfcl evaluate`` runs it). The RODS rows are

* ``ours: check``  - ``envs.checker.check`` on the decoded GT (the same work as the baseline);
* ``ours: oracle eval`` - the full ``rods eval --policy oracle`` path: episode runner (tool calls,
  tool messages, one executor) plus the checker, i.e. one execution more than the baseline.

Contenders run interleaved (order rotated each repeat) in one process; the ratio reported is the
median over repeats of (contender time / baseline time in the same repeat). Goal: <= 1.5.
Add a row by adding an entry to ``contenders()``.

    .venv/bin/python benchmarks/eval_speed.py [--repeats 5] [--categories base long_context]
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import statistics
import time
from collections.abc import Callable, Sequence

from rich.console import Console
from rich.table import Table

from envs.bfcl_data import CATEGORIES
from envs.checker import check
from envs.dataset import load_bfcl_tasks
from envs.task import Task

BASELINE = "bfcl-eval: multi_turn_checker"
GOAL = 1.5
_run_ids = itertools.count()


def _decoded_gt(task: Task) -> list[list[list[str]]]:
    return [[list(calls)] if calls else [] for calls in task.ground_truth]


def bfcl_checker(tasks: Sequence[Task]) -> int:
    """BFCL's checker over the entries, one model name per run as ``bfcl evaluate`` uses."""
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    model_name = f"rods_bench_{next(_run_ids)}"
    passed = 0
    for task in tasks:
        entry = {"id": task.id, "initial_config": task.initial_config, "involved_classes": task.involved_classes}
        result = multi_turn_checker(_decoded_gt(task), task.ground_truth, entry, task.id.rsplit("_", 1)[0], model_name)
        passed += result["valid"]
    registry = vars(multi_turn_utils)  # BFCL never frees its instances; do it outside the entries loop
    for key in [k for k in registry if k.startswith(model_name + "_")]:
        del registry[key]
    return passed


def ours_check(tasks: Sequence[Task]) -> int:
    return sum(check(task, _decoded_gt(task)).passed for task in tasks)


def ours_oracle_eval(tasks: Sequence[Task]) -> int:
    from envs.evaluate import evaluate
    from envs.policies import OraclePolicy

    return evaluate(tasks, OraclePolicy()).overall.passed


def contenders() -> dict[str, Callable[[Sequence[Task]], int]]:
    return {BASELINE: bfcl_checker, "ours: check": ours_check, "ours: oracle eval": ours_oracle_eval}


def measure(tasks: Sequence[Task], repeats: int) -> dict[str, dict]:
    runs = contenders()
    names = list(runs)
    times: dict[str, list[float]] = {n: [] for n in names}
    ratios: dict[str, list[float]] = {n: [] for n in names}
    for name in names:  # warm-up: imports, lru caches, class loading
        if runs[name](tasks[:8]) != len(tasks[:8]):
            raise SystemExit(f"{name} failed the ground truth in warm-up")
    for r in range(repeats):
        order = names[r % len(names):] + names[: r % len(names)]
        this: dict[str, float] = {}
        for name in order:
            gc.collect()
            start = time.perf_counter()
            passed = runs[name](tasks)
            this[name] = time.perf_counter() - start
            if passed != len(tasks):
                raise SystemExit(f"{name}: only {passed}/{len(tasks)} ground-truth entries passed")
        for name in names:
            times[name].append(this[name])
            ratios[name].append(this[name] / this[BASELINE])
    return {n: {"median_s": statistics.median(times[n]), "min_s": min(times[n]),
                "ratio": statistics.median(ratios[n]), "passed": len(tasks)} for n in names}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--categories", nargs="+", default=list(CATEGORIES), choices=list(CATEGORIES))
    args = parser.parse_args()

    tasks = load_bfcl_tasks(args.categories)
    results = measure(tasks, args.repeats)

    table = Table(title=f"Oracle evaluation of {len(tasks)} BFCL entries, {args.repeats} interleaved repeats")
    for col in ("contender", "passed", "median s", "min s", "ratio vs BFCL (median)", f"goal <= {GOAL}"):
        table.add_column(col, justify="left" if col == "contender" else "right")
    for name, row in results.items():
        ok = "-" if name == BASELINE else ("yes" if row["ratio"] <= GOAL else "NO")
        table.add_row(name, f"{row['passed']}/{len(tasks)}", f"{row['median_s']:.3f}", f"{row['min_s']:.3f}",
                      f"{row['ratio']:.2f}", ok)
    Console(width=140).print(table)
    print(json.dumps({"benchmark": "eval_speed", "entries": len(tasks), "repeats": args.repeats, "goal_ratio": GOAL,
                      "baseline": BASELINE, "results": results}))


if __name__ == "__main__":
    main()
