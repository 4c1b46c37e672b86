"""Novelty by substance (parsed calls), leftover old names and filler arguments."""

from __future__ import annotations

import re

from envs.dataset import load_tasks
from envs.executor import parse_call
from envs.task import Message, Task
from rods_agents.analysis.contamination import fingerprint
from rods_agents.analysis.profile import profile_task
from rods_agents.analysis.tracing import trace_task
from rods_agents.analysis.variant_quality import filler_arguments, leftover_names, same_config, same_ground_truth
from rods_agents.stages.verdict import judge


def _seed(name: str) -> Task:
    return load_tasks(ids=[f"multi_turn_{name}"])[0]


def _copy(seed: Task, suffix: str = "__copy") -> Task:
    task = seed.model_copy(deep=True)
    task.id = seed.id + suffix
    return task


def test_a_copy_that_only_drops_the_spaces_after_commas_is_the_seed():
    seed = _seed("base_86")  # lockDoors(unlock=False, door=['driver', 'passenger', ...])
    variant = _copy(seed)
    # what the old rewrite did: the spaces after the commas between arguments and list items dropped
    variant.ground_truth = [[re.sub(r",\s+(?=\w+=|')", ",", c) for c in turn] for turn in seed.ground_truth]
    variant.turns = [[Message(role="user", content="Please take care of my car, step by step, as before.")]
                     for _ in seed.turns]
    assert variant.ground_truth != seed.ground_truth  # the strings differ...
    assert same_ground_truth(variant, seed) and same_config(variant, seed)  # ...the calls do not
    assert fingerprint(variant).calls == fingerprint(seed).calls
    reasons, detail = judge(variant, seed, profile_task(seed), trace_task(variant))
    assert "near_duplicate_seed" in reasons and detail["seed_copy"] == "ground_truth_and_config"


def test_positional_and_keyword_arguments_are_one_call():
    seed = _seed("miss_func_0")
    variant = _copy(seed)
    call = variant.ground_truth[3][0]
    assert parse_call(call).args  # sort('final_report.pdf')
    variant.ground_truth[3] = ["sort(file_name='final_report.pdf')"]
    assert same_ground_truth(variant, seed)
    variant.ground_truth[3] = ["sort(file_name='other.pdf')"]
    assert not same_ground_truth(variant, seed)


def test_same_ground_truth_with_a_new_config_is_still_a_seed_copy():
    seed = _seed("base_94")
    variant = _copy(seed)
    variant.initial_config = {**seed.initial_config, "VehicleControlAPI": {
        **seed.initial_config.get("VehicleControlAPI", {}), "fuelLevel": 3.5}}
    assert same_ground_truth(variant, seed) and not same_config(variant, seed)
    reasons, detail = judge(variant, seed, profile_task(seed), trace_task(variant))
    assert "near_duplicate_seed" in reasons and detail["seed_copy"] == "ground_truth"


def test_leftover_old_names_in_text_config_and_ground_truth():
    seed = _seed("miss_func_0")
    variant = _copy(seed, "__renamed")
    variant.ground_truth = [[c.replace("final_report.pdf", "falcon_audit.pdf") for c in turn] for turn in seed.ground_truth]
    assert leftover_names(variant, {"final_report.pdf": "falcon_audit.pdf"}) == ["text: 'final_report.pdf'",
                                                                               "initial_config: 'final_report.pdf'"]
    variant.turns = [[Message(role="user", content=m.content.replace("final_report.pdf", "falcon_audit.pdf"))
                      for m in turn] for turn in seed.turns]
    assert leftover_names(variant, {"final_report.pdf": "falcon_audit.pdf"}) == ["initial_config: 'final_report.pdf'"]
    assert leftover_names(variant, {}) == []


def test_filler_arguments_where_the_seed_had_a_name_title_or_option():
    seed = _seed("base_94")
    variant = _copy(seed)
    variant.ground_truth[1] = [*seed.ground_truth[1][:2],
                               "set_navigation(destination='Excited to kick off the atlas initiative with the crew.')"]
    found = filler_arguments(seed, variant)
    assert len(found) == 1 and "set_navigation.destination" in found[0] and "a sentence" in found[0]
    assert filler_arguments(seed, seed) == []
    travel = next(t for t in load_tasks(split="train") if any("authenticate_travel(" in c for turn in t.ground_truth
                                                              for c in turn))
    bad = _copy(travel)
    bad.ground_truth = [[re.sub(r"grant_type='[^']*'", "grant_type='cobalt_roadmap'", c) for c in turn]
                        for turn in travel.ground_truth]
    assert any("documented options" in f for f in filler_arguments(travel, bad))


def test_verdict_rejects_leftover_names_and_filler_with_reasons():
    seed = _seed("base_94")
    variant = _copy(seed, "__filler")
    variant.ground_truth[1] = [*seed.ground_truth[1][:2],
                               "set_navigation(destination='Excited to kick off the atlas initiative with the crew.')"]
    variant.initial_config = {**seed.initial_config, "VehicleControlAPI": {
        **seed.initial_config.get("VehicleControlAPI", {}), "fuelLevel": 3.5}}
    reasons, detail = judge(variant, seed, profile_task(seed), trace_task(variant),
                            renames={"tire shop": "garage"})
    # each reason is '<kind>[:<sub>]' then where it applies: the turn, the call, the value (issue 13)
    assert "filler_argument:sentence turn=1 call=set_navigation param=destination value='Excited" in " ".join(reasons)
    assert "set_navigation.destination" in detail["filler_arguments"][0]
    assert "leftover_name:text value='tire shop'" in reasons and detail["leftover_names"] == ["text: 'tire shop'"]
    assert all(re.fullmatch(r"[a-z_]+(:[a-z_,]+)?", r.split(" ", 1)[0]) for r in reasons)


def test_quality_benchmark_counts_copies_breaks_and_leftovers():
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "synthesis_quality", Path(__file__).resolve().parent.parent / "benchmarks" / "synthesis_quality.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    seed = _seed("base_94")
    copy = _copy(seed, "__v0")
    copy.provenance = {"seed_id": seed.id, "renames": {"tire shop": "garage"}, "patches": [{"path": "x"}]}
    spelled = _copy(seed, "__v1")
    spelled.turns[2] = [Message(role="user", content="Press the brake pedal all the way down, then start the engine.")]
    spelled.turns[1] = [Message(role="user", content="Verify the tire pressures, find the nearest tire shop, navigate.")]
    spelled.provenance = {"seed_id": seed.id, "renames": {}, "patches": []}
    m = bench.measure([seed], [copy, spelled], [{"seed_id": seed.id, "reasons": ["unobtainable_value"]}])["base"]
    assert (m["samples"], m["accepted"], m["acceptance"]) == (3, 2, round(2 / 3, 4))
    assert m["same_ground_truth"] == 2 and m["same_ground_truth_and_config"] == 2
    assert m["implicit_made_explicit"] == 0.5 and m["with_condition"] == 2 and m["conditions_kept"] == 0.5
    assert m["leftover_old_names"] == 1 and m["patch_share"] == 0.5
    assert m["rejections"] == {"unobtainable_value": 1}
    # novelty columns (issue 13): both variants keep the seed's ground truth, so both are new only in digits (none
    # at all) and neither changes a method; the copy is the seed's text (containment 1.0 > 0.8), spelled rewrites
    # two turns (below 0.8); the two variants of scenario 94 make one same-scenario pair, a near-copy (same calls)
    assert m["changed_methods"] == 0.0 and m["digits_only"] == 1.0 and m["containment_above_0_8"] == 0.5
    assert (m["scenario_pairs"], m["scenario_near_copies"], m["scenarios_covered"], m["scenarios_seeded"]) == (1, 1, 1, 1)
    assert m["gt_trace_check_failures"] == 0 and m["unfaithful_variants"] == 0
