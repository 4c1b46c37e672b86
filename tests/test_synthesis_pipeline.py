"""Offline synthesis: accepted variants are executable, isomorphic to their seed and solvable."""

from __future__ import annotations

import json
import re

import pytest

from envs.checker import check
from envs.dataset import load_split, load_tasks
from envs.task import Task
from graphs.synthesis import graph, synthesize
from rods_agents.analysis.contamination import contamination_threshold, natural_baseline
from rods_agents.analysis.information_structure import information_structure
from rods_agents.analysis.lookups import without_lookups, write_lookups
from rods_agents.analysis.profile import profile_task
from rods_agents.analysis.skills import compare_skill_profiles, rejecting
from rods_agents.analysis.tracing import trace_task
from rods_agents.stages.state import SynthesisContext
from rods_agents.stages.verdict import (
    judge,
    obtainability_problems,
    seed_fails_strict,
    seed_unobtainable,
    slot,
)
from rods_cli.synthesize import select_seeds


@pytest.fixture(scope="module")
def run():
    # the main job's settings (README, `make demo`): 20 train seeds dealt over the four categories x 2, seed 0
    seeds = select_seeds("train", 20, seed=0)
    return seeds, synthesize(seeds, SynthesisContext(seed=0, variants_per_seed=2))


def test_most_samples_are_accepted_and_cover_categories(run):
    seeds, result = run
    assert result.report["samples"] == 40
    # Since the verdict rejects copies of the seed, entities masked, and a re-worded sentence must say exactly what the
    # seed's turn says (issue 13), the main job accepts 10 of 40 (0.25 at seed 0; the target, 0.60 over 400 x 2, is not
    # reached): this floor catches a collapse. Its one miss_param variant deleted "the last message to Alice" (the
    # user herself) for a message sent to Olga, a human turn's pick; refused since (read 7), so three categories yield
    # here and the miss_param mechanics are checked on seeds of their own (miss_param_run).
    assert result.report["acceptance_rate"] >= 0.2
    assert len({t.category for t in result.accepted}) >= 3
    assert result.report["accepted"] + result.report["rejected"] == 40


# ----------------------------------------------------------------------------- independent obtainability oracle
_NUM = re.compile(r"-?\d+(?:\.\d+)?")


def _numbers(text: str) -> set[float]:
    return {float(m) for m in _NUM.findall(text.replace(",", ""))}


def _literals(value) -> list:
    """Scalar literals of an argument value (lists and dicts walked; booleans and None are flags)."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, list | tuple):
        return [x for v in value for x in _literals(v)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _literals(v)]
    if isinstance(value, int | float):
        return [value]
    return [value] if isinstance(value, str) and len(value.strip()) > 2 else []


def _found(value, texts: list[str]) -> bool:
    if isinstance(value, str):
        return any(value.lower() in t.lower() for t in texts)
    return any(float(value) in _numbers(t) for t in texts)


def _lookups(env, text: str) -> list[str]:
    """What read-only lookup tools answer for names in ``text``: TravelAPI's nearest airport of every 1-3
    word phrase (the environment's own function, run on a fresh instance)."""
    if "TravelAPI" not in env.instances:
        return []
    from envs.bfcl_data import env_class

    api = env_class("TravelAPI")()
    words = re.findall(r"[A-Za-z]+", text)
    phrases = {" ".join(words[i:i + n]) for n in (1, 2, 3) for i in range(len(words) - n + 1)}
    codes = {api.get_nearest_airport_by_city(p).get("nearest_airport") for p in phrases if p[:1].isupper()}
    return sorted(c for c in codes if c and c != "Unknown")


def _fills_to_capacity(env, method: str, amount) -> bool:
    """A fill whose amount is what the tank lacks of the capacity fillFuelTank's documentation gives (50 gallons)."""
    car = env.instances.get("VehicleControlAPI")
    return (method == "fillFuelTank" and car is not None and isinstance(amount, int | float)
            and abs(float(getattr(car, "fuelLevel", 0)) + float(amount) - 50.0) < 0.01)


def _oracle_misses(task: Task, composed: set[tuple[int, int, str]]) -> tuple[dict[tuple[int, int, str], str], int]:
    """({(turn, index, param): message} of literal arguments the oracle cannot obtain, literals checked)."""
    from envs.executor import Environment, parse_call, serialize_result
    from rods_agents.analysis.obtainability import RECIPE_MARKERS
    from rods_agents.analysis.tracing import bind_args
    from rods_agents.analysis.value_sources import is_flag

    env = Environment(task.involved_classes, task.initial_config, task.long_context)
    # the readable initial state: public attributes of the loaded instances (class defaults included)
    state_text = json.dumps({cls: {k: v for k, v in vars(inst).items() if not k.startswith("_")}
                             for cls, inst in env.instances.items()}, default=str)
    results: list[str] = []
    misses: dict[tuple[int, int, str], str] = {}
    checked = 0
    for t, calls in enumerate(task.ground_truth):
        user = " ".join(m.content for turn in task.turns[: t + 1] for m in turn if m.role == "user")
        turn_text = " ".join(m.content for m in task.turns[t]).lower() if t < len(task.turns) else ""
        for i, call in enumerate(calls):
            parsed = parse_call(call)
            args = bind_args(env.owner(parsed.name), parsed.name, parsed.args, parsed.kwargs)
            for param, value in args.items():
                if is_flag(parsed.name, param, value):
                    continue
                for lit in _literals(value):
                    checked += 1
                    if _found(lit, [user, *results, state_text, *_lookups(env, user)]):
                        continue
                    if (t, i, param) in composed and _fills_to_capacity(env, parsed.name, lit):
                        continue  # what the tank lacks: its documented 50-gallon capacity less the level it reads
                    if not ((t, i, param) in composed and any(m in turn_text for m in RECIPE_MARKERS)):
                        misses[(t, i, param)] = f"{task.id} turn {t} {call}: {param}={lit!r} is not obtainable"
            results.append(serialize_result(env.call(parsed)))
    return misses, checked


def test_oracle_every_literal_argument_is_obtainable(run):
    """Independent of the verdict: execute each accepted task with the bare executor and check, per call,
    that every literal argument (strings > 2 chars, numbers; flags excluded) appears in the user text up
    to that turn, in the serialized result of an earlier call (same turn included), or in the serialized
    readable initial state — or is recorded as composed and the turn's text words a recipe for it. A slot
    the oracle cannot read in the seed's own human wording either ('12/25' for '12/2025') is not held
    against a variant that keeps that wording."""
    seeds, result = run
    by_id = {s.id: s for s in seeds}
    checked = 0
    for task in result.accepted:
        composed = {(a["turn"], a["index"], a["param"]) for a in task.provenance["profile"]["arg_sources"]
                    if a["source"] == "composed"}
        for w in task.provenance["lookups"]:  # positions judged before the lookups were written in
            composed = {(t, i + (t == w["turn"] and i >= w["index"]), p) for t, i, p in composed}
        misses, n = _oracle_misses(task, composed)
        checked += n
        seed = by_id[task.provenance["seed_id"]]
        seed_misses, _ = _oracle_misses(seed, {(a.turn, a.index, a.param) for a in profile_task(seed).arg_sources
                                               if a.source == "composed"})
        assert [m for k, m in misses.items() if k not in seed_misses] == []
    assert checked > 40  # not vacuous: the 10 accepted variants of the main job carry 61 literal arguments


def test_accepted_samples_reexecute_cleanly_and_match_their_seed(run):
    seeds, result = run
    by_id = {s.id: s for s in seeds}
    for task in result.accepted:
        assert task.id.startswith(f"multi_turn_{task.category}_{task.scenario}__rods_")
        seed = by_id[task.provenance["seed_id"]]
        assert check(task, [[gt] for gt in task.ground_truth], strict_tools=True).passed or seed_fails_strict(seed)
        assert not trace_task(task).errors
        # the verdict judged the task before its lookups were written in (rods_agents.analysis.lookups)
        judged = without_lookups(task)
        assert write_lookups(judged)[0].ground_truth == task.ground_truth
        trace = trace_task(judged)
        seed_profile, profile = profile_task(seed), profile_task(judged, trace)
        # only obtainable values: state values have a unique hint in the text, composed ones a recipe
        unobtainable, fallbacks = obtainability_problems(judged, trace, profile, seed_profile)
        # a slot the seed's own wording already leaves without a rule-recognised hint is not held against it
        assert [p for p in unobtainable if slot(p) not in seed_unobtainable(seed)] == []
        # the seed's skill-level profile holds (issue 13: functions may change inside a skill class, so exact
        # functions and per-turn value-source counts are no longer pinned); the one documented exception, a
        # stated fallback, is counted in provenance
        assert rejecting(compare_skill_profiles(seed_profile.skills, profile.skills, fallbacks)) == []
        assert fallbacks == task.provenance["stated_fallbacks"]
        assert task.ground_truth != seed.ground_truth or task.initial_config != seed.initial_config


def test_report_gives_value_sources_for_seeds_and_variants(run):
    _, result = run
    shares = result.report["value_sources"]
    for side in ("seeds", "variants"):
        assert set(shares[side]) == {"user", "call", "state", "composed"}
        assert abs(sum(shares[side].values()) - 1.0) < 1e-3
    # variants keep their seed's information structure, except the documented stated fallbacks (a state
    # value the variant's state gives no unique hint for is stated by the user; counted in the report)
    moved = result.report["stated_fallbacks"]["values"]
    seed_counts, var_counts = shares["seed_counts"], shares["variant_counts"]
    assert var_counts.get("user", 0) - moved == seed_counts.get("user", 0)
    assert var_counts.get("state", 0) + moved == seed_counts.get("state", 0)
    for src in ("call", "composed"):
        assert var_counts.get(src, 0) == seed_counts.get(src, 0)
    assert set(result.report["time_per_stage_s"]) >= {"profile", "plan", "rewrite", "execute", "patch", "verdict"}


def test_provenance_is_recorded(run):
    _, result = run
    for task in result.accepted:
        p = task.provenance
        assert {"seed_id", "backbone", "profile", "patches", "timings", "renames"} <= set(p)
        assert p["backbone"] == "offline"
        json.dumps(task.to_bfcl())  # serializable as a BFCL entry


@pytest.fixture(scope="module")
def miss_param_run():
    """Four miss_param train seeds x 2 (run seed 3, the benchmark's): most of their variants are accepted."""
    from envs.task import bfcl_task

    seeds = [bfcl_task(f"multi_turn_miss_param_{n}") for n in (5, 7, 14, 29)]
    return seeds, synthesize(seeds, SynthesisContext(seed=3, variants_per_seed=2))


def test_miss_param_withholds_a_literal_and_supplies_it_next_turn(miss_param_run):
    seeds, result = miss_param_run
    by_id = {s.id: s for s in seeds}
    tasks = [t for t in result.accepted if t.category == "miss_param"]
    assert tasks
    for task in tasks:
        seed = by_id[task.provenance["seed_id"]]
        seed_profile = profile_task(seed)
        variant_info = information_structure(task)
        for k in seed_profile.miss_param_turns:
            assert task.ground_truth[k] == [] and task.ground_truth[k + 1]
            # the same parameter withheld (rods_agents.analysis.information_structure), supplied by the next turn and
            # not said before it (unless the seed itself already says it)
            want, got = seed_profile.information.turns[k].withheld, variant_info.turns[k].withheld
            assert want is not None and got is not None and got.param == want.param
            assert got.supplied_at == k + 1 and task.turns[k + 1]
            assert not got.stated_before or want.stated_before


def test_miss_func_keeps_the_function_out_until_its_reveal(run):
    _, result = run
    tasks = [t for t in result.accepted if t.category == "miss_func"]
    assert tasks
    for task in tasks:
        for reveal, names in task.missed_function.items():
            assert task.turns[reveal] == []
            assert task.ground_truth[reveal - 1] == []
            used_before = {c.split("(")[0] for t in range(reveal) for c in task.ground_truth[t]}
            assert not used_before & set(names)


def test_contamination_guard_rejects_a_planted_near_copy_of_a_test_task():
    test_task = load_split("test", ["base"])[3]
    planted = test_task.model_copy(deep=True)
    planted.id = f"multi_turn_base_{planted.scenario}__rods_planted"
    planted.turns[0][0].content = planted.turns[0][0].content.replace("the", "a", 1)
    seed = load_tasks(ids=["multi_turn_base_0"])[0]
    reasons, detail = judge(planted, seed, profile_task(seed), trace_task(planted))
    assert "contamination" in reasons
    assert detail["nearest_test"] == test_task.id


def test_contamination_threshold_sits_above_the_natural_train_test_baseline():
    base = natural_baseline()
    assert contamination_threshold() > base["max"]
    # a real train task is never flagged against the test split
    for task in load_split("train", ["base"])[:20]:
        seed = task
        reasons, _ = judge(task, seed, profile_task(seed), trace_task(task))
        assert "contamination" not in reasons


def test_the_baseline_scores_every_train_task_as_the_pairwise_nearest_does():
    from rods_agents.analysis.contamination import Fingerprint, nearest, nearest_scores, test_index, text_print

    index = test_index()
    train = [text_print(t) for t in load_split("train")[::8]]
    # edge cases of similarity: no calls (call overlap counts 1.0), no words on either side (text counts 1.0)
    train += [Fingerprint("no_calls", train[0].text, frozenset()), Fingerprint("empty", frozenset(), frozenset())]
    index = (*index, Fingerprint("empty_test", frozenset(), frozenset({"cd(folder='x')"})))
    assert nearest_scores(train, index) == [nearest(fp, index)[0] for fp in train]


def test_runs_are_deterministic_given_the_seed():
    seeds = select_seeds("train", 2, seed=3)
    a = synthesize(seeds, {"seed": 7, "variants_per_seed": 1})
    b = synthesize(seeds, {"seed": 7, "variants_per_seed": 1})
    assert [t.to_bfcl() | {"provenance": None} for t in a.accepted] == \
        [t.to_bfcl() | {"provenance": None} for t in b.accepted]


def test_exported_graph_has_every_stage():
    inner = graph.get_graph(xray=1)
    names = set(inner.nodes)
    for stage in ("extract_profile", "sample_plan", "rewrite_turns", "execute_plan", "patch_config", "judge_variant"):
        assert any(n.endswith(stage) for n in names), stage
    assert json.load(open("langgraph.json"))["graphs"]["synthesis"] == "graphs.synthesis:graph"


def test_accepted_jsonl_loads_as_hf_dataset(tmp_path, run):
    from rods_agents.run.outputs import load_dataset, write_outputs

    _, result = run
    write_outputs(tmp_path, result.accepted, result.rejected, result.report)
    ds = load_dataset(tmp_path)
    assert len(ds) == len(result.accepted)
    assert {"id", "category", "question", "ground_truth", "provenance"} <= set(ds.column_names)
    reread = [Task.from_bfcl(json.loads(line)) for line in (tmp_path / "accepted.jsonl").read_text().splitlines()]
    assert [t.id for t in reread] == [t.id for t in result.accepted]
