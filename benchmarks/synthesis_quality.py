"""Synthesis quality: do accepted variants keep their seed's difficulty and differ in substance?

    python benchmarks/synthesis_quality.py [--num_seeds 400] [--variants_per_seed 2] [--seed 3] [--out quality.json]

Runs the offline pipeline in process (``graphs.synthesis.synthesize``, what ``rods synthesize`` runs)
over train seeds and measures, per seed category:

- acceptance: accepted / samples;
- skeleton / ground-truth identity: accepted variants whose parsed method sequence / parsed ground
  truth (method + arguments bound to parameter names) equals the seed's; with the initial_config too;
- implicit-call share of all seeds, of the seeds of accepted variants (paired: each seed counted once
  per accepted variant) and of accepted variants (``rods_agents.analysis.information_structure``);
- conditions / references / transformations kept: of accepted variants whose seed has one, the share
  with no ``condition_dropped`` / ``reference_dropped`` / ``transformation_dropped`` mismatch;
- withheld-value rule (miss_param): variants that state the withheld value before its turn, or
  withhold another parameter;
- leftover old names: variants where a name the plan renamed (provenance ``renames``) is still in the
  text, config or ground truth;
- filler arguments: variants with a sentence where the seed had a short name, a value outside the
  documented options, a person's name given to a title or folder (``rods_agents.analysis.variant_quality``);
- patch share: accepted variants repaired by the config patch agent;
- ground truths failing the trace checks: accepted variants whose ground truth, executed again, errors or
  does not pass ``envs.checker.check(strict_tools=True)`` against itself (seeds that fail it themselves,
  e.g. miss_func_49, only count when the non-strict check fails too);
- lookups written: accepted variants whose ground truth gained the lookups its text leaves to the assistant
  (``rods_agents.analysis.lookups``: 'the alphabetically first file' gains its ``ls()``), with their count, and
  the variants that need fewer such lookups than their seed would (an easier task). Every other column measures
  the variant as judged, with those lookups taken out again; the trace checks run on the final ground truth;
- unfaithful variants: accepted variants with a problem :mod:`rods_agents.analysis.faithfulness` finds (a
  choice swapped with the old option's words left, 'fill it completely' not full, a knife-edge balance,
  a ticker the environment does not know, an id renamed with its old digits left, a round number made odd).

Novelty (``rods_agents.analysis.novelty``; issue 13), per seed category:

- word 5-gram containment of a variant's user text in its seed's: mean, and share above 0.8; the same with
  the entities of both (their calls' string values) and digits masked (:func:`rods_agents.analysis.novelty.masked_text`:
  the seed's sentences with every name swapped stay a copy there);
- new only in digits: the user text equals the seed's once digits are masked, or the method sequence and
  the parsed ground truth do (:func:`rods_agents.analysis.novelty.new_only_in_digits`);
- seed turns kept: accepted variants with a turn that keeps its seed's sentences (more than 0.8 of the turn's
  5-grams, entities masked, in the seed's same turn: :func:`rods_agents.analysis.novelty.kept_seed_turns`), and
  how many such turns; a variant new everywhere else still reads as partly its seed's there;
- rewords a seed sentence word for word: accepted variants with a sentence whose words, values masked, align with one
  of the seed's in order (:func:`rods_agents.analysis.novelty.kept_seed_sentence`): synonyms swapped into the seed's
  sentence, which the 5-gram measures miss;
- changed-method share: accepted variants whose method sequence differs from the seed's;
- near-copies among variants of one scenario: of the pairs of accepted variants that share a scenario
  (the four categories share scenarios, so sibling seeds' variants pair up), the share that are
  near-copies (:func:`rods_agents.analysis.novelty.near_copy`); a category's row counts the pairs with
  at least one member in it;
- scenarios covered: distinct scenarios with an accepted variant, of the distinct scenarios seeded.

Prints a table and one JSON line (also written to ``--out``).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from envs.checker import check
from envs.executor import parse_call
from envs.task import Task
from rods_agents.analysis.faithfulness import faithfulness_problems
from rods_agents.analysis.information_structure import InformationStructure, information_structure, structure_mismatches
from rods_agents.analysis.lookups import without_lookups, write_lookups
from rods_agents.analysis.novelty import (
    containment,
    kept_seed_sentence,
    kept_seed_turns,
    kept_stated_entities,
    masked_text,
    near_copy,
    new_only_in_digits,
    other_seed_sentences,
    user_text,
)
from rods_agents.analysis.profile import profile_task
from rods_agents.analysis.tracing import trace_task
from rods_agents.analysis.value_sources import classify_arguments
from rods_agents.analysis.variant_quality import (
    filler_arguments,
    leftover_names,
    same_config,
    same_ground_truth,
    skeleton,
)
from rods_agents.stages.verdict import gap_fallbacks

CATEGORIES = ("base", "miss_func", "miss_param", "long_context")
COPY_CONTAINMENT = 0.8  # the "share above 0.8": a text with 4 in 5 of its 5-grams from the seed is its seed's


def containment_stats(pairs: list[tuple[Task, Task]]) -> dict[str, float | None]:
    """Over (variant, seed) pairs: mean word 5-gram containment of the variant's user text in its seed's,
    and the share above :data:`COPY_CONTAINMENT`."""
    values = [containment(user_text(v), user_text(s)) for v, s in pairs]
    masked = [containment(masked_text(v), masked_text(s)) for v, s in pairs]
    if not values:
        return {"containment_mean": None, "containment_above_0_8": None, "containment_masked_mean": None,
                "containment_masked_above_0_8": None}
    return {"containment_mean": round(sum(values) / len(values), 4),
            "containment_above_0_8": round(sum(x > COPY_CONTAINMENT for x in values) / len(values), 4),
            "containment_masked_mean": round(sum(masked) / len(masked), 4),
            "containment_masked_above_0_8": round(sum(x > COPY_CONTAINMENT for x in masked) / len(masked), 4)}


def scenario_pairs(tasks: list[Task]) -> list[tuple[Task, Task]]:
    """Every unordered pair of ``tasks`` that share a scenario."""
    by: dict[int, list[Task]] = defaultdict(list)
    for t in tasks:
        by[t.scenario].append(t)
    return [(g[i], g[j]) for g in by.values() for i in range(len(g)) for j in range(i + 1, len(g))]


def near_copy_stats(tasks: list[Task]) -> dict[str, dict[str, int]]:
    """Per category and over all: same-scenario pairs of ``tasks`` and how many are near-copies (a pair
    counts for each category one of its members is in)."""
    out: dict[str, dict[str, int]] = {k: {"pairs": 0, "near_copies": 0} for k in (*CATEGORIES, "all")}
    for a, b in scenario_pairs(tasks):
        copy = near_copy(a, b) is not None
        for key in {a.category, b.category, "all"}:
            row = out.setdefault(key, {"pairs": 0, "near_copies": 0})
            row["pairs"] += 1
            row["near_copies"] += int(copy)
    return out


def unfaithful(task: Task, seed: Task) -> list[str]:
    """The faithfulness problems of ``task`` against ``seed`` (:mod:`rods_agents.analysis.faithfulness`)."""
    trace, seed_trace = trace_task(task), trace_task(seed)
    return faithfulness_problems(task, seed, trace, classify_arguments(task, trace), classify_arguments(seed, seed_trace),
                                 (task.provenance or {}).get("renames") or {})


def fails_trace_checks(task: Task, seed: Task) -> bool:
    """The ground truth, executed again, errors, or does not pass the strict self-check (the non-strict one
    where the seed itself fails the strict one)."""
    if trace_task(task).errors:
        return True
    answers = [[gt] for gt in task.ground_truth]
    if check(task, answers, strict_tools=True).passed:
        return False
    return check(seed, [[gt] for gt in seed.ground_truth], strict_tools=True).passed or not check(task, answers).passed


def _numeric_arguments(task: Task) -> set[tuple[str, str, float]]:
    """(method, parameter, value) of every number above 1 the ground truth's calls take (an amount, an id, a level)."""
    out = set()
    for calls in task.ground_truth:
        for call in calls:
            parsed = parse_call(call)
            for param, value in parsed.kwargs.items():
                if isinstance(value, int | float) and not isinstance(value, bool) and abs(value) > 1:
                    out.add((parsed.name, param, float(value)))
    return out


def _share(n: int, d: int) -> float | None:
    return round(n / d, 4) if d else None


def _gap_stated(m: Any, task: Task, seed: Task) -> bool:
    """A transformation with no cue that the variant states where its seed's value has no recipe and no lookup (the
    password base_188 logs in with, :func:`rods_agents.stages.verdict.gap_fallbacks`): the verdict takes it as
    filling the seed's gap, not as a dropped transformation, and so does this count."""
    if m.reason != "transformation_dropped" or not m.detail.endswith("(no cue)"):
        return False
    slot = f"turn {m.turn} {m.detail.split(' ', 1)[0]}"
    return any(k.startswith(slot + "=") for k in gap_fallbacks(seed, profile_task(task, trace_task(task))))


def measure(seeds: list[Task], accepted: list[Task], rejected: list[dict]) -> dict[str, Any]:
    """Every metric per category and over all, from a run's seeds, accepted tasks and rejection rows."""
    by_id = {s.id: s for s in seeds}
    seed_is: dict[str, InformationStructure] = {s.id: information_structure(s) for s in seeds}
    c: dict[str, Counter] = defaultdict(Counter)
    reasons: dict[str, Counter] = defaultdict(Counter)
    every: dict[str, Counter] = defaultdict(Counter)
    kept_entities: Counter = Counter()  # the seed's stated values accepted variants state again
    copies_by_class: Counter = Counter()  # seed copies (near_duplicate_seed) by the seed's involved classes
    for s in seeds:
        k = seed_is[s.id].counts()
        for cat in (s.category, "all"):
            c[cat]["seeds"] += 1
            c[cat]["seed_calls"] += k["calls"]
            c[cat]["seed_implicit"] += k["implicit"]
    for row in rejected:
        seed = by_id.get(row.get("seed_id") or "")
        cat = seed.category if seed else "unknown"
        for key in (cat, "all"):
            c[key]["samples"] += 1
            reasons[key][(row.get("reasons") or ["unknown"])[0].split(":")[0]] += 1
            # a reason's kind is the text before its first space (the rest names the turn, call and value)
            every[key].update(r.split(" ", 1)[0] for r in row.get("reasons") or ["unknown"])
            copy = (row.get("detail") or {}).get("seed_copy")
            if copy:
                every[key][f"near_duplicate_seed[{copy}]"] += 1
                if seed is not None and key == "all":
                    for cls in seed.involved_classes:
                        copies_by_class[cls] += 1
    pairs: dict[str, list[tuple[Task, Task]]] = defaultdict(list)
    for final in accepted:
        prov = final.provenance or {}
        seed = by_id[prov["seed_id"]]
        task = without_lookups(final)  # as judged; the written lookups are counted on their own
        seed_lookups = len(write_lookups(seed)[1])
        for key in (seed.category, "all"):
            pairs[key].append((task, seed))
        vis = information_structure(task)
        sis = seed_is[seed.id]
        kinds = {m.reason for m in structure_mismatches(sis, vis) if not _gap_stated(m, task, seed)}
        sk = sis.counts()
        vk = vis.counts()
        left = leftover_names(task, prov.get("renames") or {})
        filler = filler_arguments(seed, task)
        flags = {
            "samples": 1, "accepted": 1,
            "same_skeleton": skeleton(task) == skeleton(seed),
            "same_ground_truth": same_ground_truth(task, seed),
            "same_ground_truth_and_config": same_ground_truth(task, seed) and same_config(task, seed),
            "var_calls": vk["calls"], "var_implicit": vk["implicit"],
            "paired_seed_calls": sk["calls"], "paired_seed_implicit": sk["implicit"],
            "implicit_made_explicit": "implicit_made_explicit" in kinds,
            "with_condition": sk["conditions"] > 0,
            "condition_kept": sk["conditions"] > 0 and "condition_dropped" not in kinds,
            "with_reference": sk["references"] > 0,
            "reference_kept": sk["references"] > 0 and not kinds & {"reference_dropped", "reference_kind_changed"},
            "with_transformation": sk["transformations"] > 0,
            "transformation_kept": sk["transformations"] > 0 and "transformation_dropped" not in kinds,
            "miss_param": task.category == "miss_param",
            "withheld_stated": "withheld_stated" in kinds,
            "withheld_other": bool(kinds & {"withheld_other_param", "withheld_dropped"}),
            "leftover_names": bool(left), "leftover_count": len(left),
            "filler": bool(filler), "filler_count": len(filler),
            "patched": bool(prov.get("patches")),
            "digits_only": new_only_in_digits(task, seed),
            "kept_turns": len(kept := kept_seed_turns(task, seed)), "keeps_seed_turn": bool(kept),
            "keeps_seed_sentence": kept_seed_sentence(task, seed) is not None,
            "trace_check_failed": fails_trace_checks(final, seed),
            "lookups_written": bool(prov.get("lookups")), "lookup_count": len(prov.get("lookups") or []),
            "fewer_lookups_than_seed": len(prov.get("lookups") or []) < seed_lookups,
            "unfaithful": bool(unfaithful(task, seed)),
            "seed_numbers": len(nums := _numeric_arguments(seed)),
            "seed_numbers_kept": len(nums & _numeric_arguments(task)),
            "keeps_stated_entity": bool(entities := kept_stated_entities(task, seed)),
            "copies_other_seed": bool(other_seed_sentences(task)),
        }
        if entities:
            kept_entities.update(entities)
        for key in (seed.category, "all"):
            c[key].update({k: int(v) for k, v in flags.items()})
    copies = near_copy_stats([without_lookups(t) for t in accepted])
    seeded = {key: {s.scenario for s in seeds if key in (s.category, "all")} for key in (*CATEGORIES, "all")}
    out: dict[str, Any] = {}
    for key in (*CATEGORIES, "all"):
        x = c[key]
        acc = x["accepted"]
        covered = {t.scenario for t, s in pairs[key]}
        out[key] = {
            **containment_stats(pairs[key]),
            "digits_only": _share(x["digits_only"], acc),
            "keeps_seed_turn": _share(x["keeps_seed_turn"], acc), "seed_turns_kept": x["kept_turns"],
            "keeps_seed_sentence": _share(x["keeps_seed_sentence"], acc),
            "changed_methods": _share(acc - x["same_skeleton"], acc),
            "seed_numbers_kept": _share(x["seed_numbers_kept"], x["seed_numbers"]),
            "keeps_stated_entity": _share(x["keeps_stated_entity"], acc),
            "copies_other_seed": _share(x["copies_other_seed"], acc),
            "scenario_pairs": copies[key]["pairs"], "scenario_near_copies": copies[key]["near_copies"],
            "scenario_near_copy_share": _share(copies[key]["near_copies"], copies[key]["pairs"]),
            "scenarios_covered": len(covered), "scenarios_seeded": len(seeded[key]),
            "gt_trace_check_failures": x["trace_check_failed"],
            "lookups_written": _share(x["lookups_written"], acc), "lookup_count": x["lookup_count"],
            "fewer_lookups_than_seed": x["fewer_lookups_than_seed"],
            "unfaithful_variants": x["unfaithful"],
            "samples": x["samples"], "accepted": acc, "acceptance": _share(acc, x["samples"]),
            "same_skeleton": _share(x["same_skeleton"], acc),
            "same_ground_truth": x["same_ground_truth"],
            "same_ground_truth_and_config": x["same_ground_truth_and_config"],
            "implicit_share_seeds": _share(x["seed_implicit"], x["seed_calls"]),
            "implicit_share_paired_seeds": _share(x["paired_seed_implicit"], x["paired_seed_calls"]),
            "implicit_share_variants": _share(x["var_implicit"], x["var_calls"]),
            "implicit_made_explicit": _share(x["implicit_made_explicit"], acc),
            "conditions_kept": _share(x["condition_kept"], x["with_condition"]), "with_condition": x["with_condition"],
            "references_kept": _share(x["reference_kept"], x["with_reference"]), "with_reference": x["with_reference"],
            "transformations_kept": _share(x["transformation_kept"], x["with_transformation"]),
            "with_transformation": x["with_transformation"],
            "withheld_stated": x["withheld_stated"], "withheld_other_param": x["withheld_other"],
            "miss_param_accepted": x["miss_param"],
            "leftover_old_names": x["leftover_names"], "leftover_occurrences": x["leftover_count"],
            "filler_arguments": x["filler"], "filler_occurrences": x["filler_count"],
            "patch_share": _share(x["patched"], acc),
            "rejections": dict(reasons[key].most_common()),
            "rejection_reasons_all": dict(every[key].most_common()),
        }
    out["all"]["seed_copies_by_class"] = dict(copies_by_class.most_common())
    out["all"]["most_kept_stated_entities"] = dict(kept_entities.most_common(12))
    return out


ROWS = [("samples", "samples"), ("accepted", "accepted"), ("acceptance", "acceptance"),
        ("5-gram containment in seed text, mean", "containment_mean"),
        ("5-gram containment > 0.8 (share)", "containment_above_0_8"),
        ("5-gram containment, entities masked, mean", "containment_masked_mean"),
        ("5-gram containment, entities masked > 0.8 (share)", "containment_masked_above_0_8"),
        ("new only in digits (share)", "digits_only"),
        ("keeps a seed turn's sentences (share)", "keeps_seed_turn"), ("  seed turns kept", "seed_turns_kept"),
        ("rewords a seed sentence word for word (share)", "keeps_seed_sentence"),
        ("changed methods (share)", "changed_methods"),
        ("seed's numeric arguments kept (share)", "seed_numbers_kept"),
        ("states a seed's stated entity again (share)", "keeps_stated_entity"),
        ("says another BFCL scenario's sentence word for word (share)", "copies_other_seed"),
        ("same-scenario pairs", "scenario_pairs"), ("  near-copies among them (share)", "scenario_near_copy_share"),
        ("scenarios covered", "scenarios_covered"), ("  scenarios seeded", "scenarios_seeded"),
        ("same skeleton as seed", "same_skeleton"), ("same parsed ground truth", "same_ground_truth"),
        ("... and same config", "same_ground_truth_and_config"),
        ("implicit-call share, all seeds", "implicit_share_seeds"),
        ("implicit-call share, seeds of accepted", "implicit_share_paired_seeds"),
        ("implicit-call share, accepted variants", "implicit_share_variants"),
        ("an implicit call made explicit", "implicit_made_explicit"),
        ("conditions kept (seeds with one)", "conditions_kept"), ("  variants whose seed has a condition", "with_condition"),
        ("references kept (seeds with one)", "references_kept"), ("  variants whose seed has a reference", "with_reference"),
        ("transformations kept", "transformations_kept"), ("  variants whose seed has one", "with_transformation"),
        ("withheld value stated", "withheld_stated"), ("another parameter withheld", "withheld_other_param"),
        ("variants with leftover old names", "leftover_old_names"), ("variants with filler arguments", "filler_arguments"),
        ("repaired by the patch agent", "patch_share"),
        ("ground truths failing the trace checks", "gt_trace_check_failures"),
        ("lookups written into the ground truth (share)", "lookups_written"), ("  lookups written", "lookup_count"),
        ("  needs fewer lookups than its seed", "fewer_lookups_than_seed"),
        ("unfaithful (old choice words, knife-edge, unknown ticker, ...)", "unfaithful_variants")]


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def render(metrics: dict[str, Any], title: str) -> Table:
    table = Table(title=title)
    table.add_column("metric")
    for key in (*CATEGORIES, "all"):
        table.add_column(key, justify="right")
    for label, field in ROWS:
        table.add_row(label, *(_fmt(metrics[k][field]) for k in (*CATEGORIES, "all")))
    return table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--num_seeds", "--num-seeds", type=int, default=400)
    ap.add_argument("--variants_per_seed", "--variants-per-seed", type=int, default=2)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--out", default=None, help="also write the JSON metrics here")
    args = ap.parse_args()

    from graphs.synthesis import synthesize
    from rods_agents.stages.state import SynthesisContext
    from rods_cli.synthesize import select_seeds

    seeds = select_seeds("train", args.num_seeds, seed=args.seed)
    start = time.perf_counter()
    result = synthesize(seeds, SynthesisContext(seed=args.seed, variants_per_seed=args.variants_per_seed))
    synth_s = time.perf_counter() - start
    metrics = measure(seeds, result.accepted, result.rejected)
    measure_s = time.perf_counter() - start - synth_s
    console = Console(width=140)
    console.print(render(metrics, f"Synthesis quality: {len(seeds)} train seeds x {args.variants_per_seed}, "
                                  f"offline, --seed {args.seed}"))
    rej = metrics["all"]["rejections"]
    console.print("rejections (first reason): " + ", ".join(f"{k} {v}" for k, v in rej.items()))
    console.print(escape("all rejection reasons: " + ", ".join(
        f"{k} {v}" for k, v in metrics["all"]["rejection_reasons_all"].items())))
    console.print("seed copies (near_duplicate_seed) by involved class: " + ", ".join(
        f"{k} {v}" for k, v in metrics["all"]["seed_copies_by_class"].items()))
    console.print(f"synthesis {synth_s:.1f} s, measurement {measure_s:.1f} s")
    line = {"benchmark": "synthesis_quality", "num_seeds": len(seeds), "variants_per_seed": args.variants_per_seed,
            "seed": args.seed, "synthesis_s": round(synth_s, 2), "metrics": metrics}
    if args.out:
        Path(args.out).write_text(json.dumps(line, indent=1))
    print(json.dumps(line))  # noqa: T201 - the benchmark's one JSON line


if __name__ == "__main__":
    main()
