"""Unit and property tests of the synthesis stages (catalog, profile, plan, templates, patches)."""

from __future__ import annotations

import json
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envs.checker import check
from envs.dataset import load_split, load_tasks
from envs.executor import Environment
from prompts import load_prompt, placeholders
from rods_agents.analysis.catalog import build_catalog
from rods_agents.analysis.profile import profile_task
from rods_agents.analysis.skills import compare_skill_profiles, rejecting, skill_profile
from rods_agents.analysis.tracing import trace_task
from rods_agents.run.runtime import rng_for
from rods_agents.stages.coherence_rewrite import build_variant, rewrite_plan
from rods_agents.stages.plan_sampling import sample_variant_plan
from rods_agents.stages.verdict import judge, seed_fails_strict

TRAIN = load_split("train")


def test_prompt_placeholders_are_all_filled():
    template = load_prompt("llm_rewrite.txt")
    text = template.format(**{name: "x" for name in placeholders(template)})
    assert not re.search(r"\{\w+\}", text)


def test_catalog_roles_and_role_preserving_alternatives():
    c = build_catalog()
    assert c.spec("mkdir").role == "write" and c.spec("cat").role == "read" and c.spec("add").role == "compute"
    assert "tail" in c.alternatives("cat") and "rm" not in c.alternatives("cat")
    for name in c.methods:
        for alt in c.alternatives(name):
            assert c.spec(alt).role == c.spec(name).role and c.spec(alt).cls == c.spec(name).cls


def test_profile_of_a_known_seed():
    task = load_tasks(ids=["multi_turn_base_0"])[0]
    p = profile_task(task)
    assert p.turn_shape == [3, 2, 1, 4]
    assert p.classes == ["GorillaFileSystem", "TwitterAPI"]
    assert p.edge_counts["state"] > 0 and p.longest_path >= 4
    assert sum(sum(t.values()) for t in p.sources_by_turn) == len(p.arg_sources)
    assert {a.source for a in p.arg_sources} <= {"user", "call", "state", "composed"}


def test_information_structure_sees_discovered_values():
    # seeds whose values must be discovered by exploring: some come from results or the state
    counts = {"call": 0, "state": 0, "composed": 0}
    for task in TRAIN[:100]:
        for a in profile_task(task).arg_sources:
            if a.source in counts:
                counts[a.source] += 1
    assert all(v > 0 for v in counts.values())


def test_withheld_value_is_never_stated_before_its_turn_in_miss_param_variants():
    for task in [t for t in TRAIN if t.category == "miss_param"][:10]:
        trace = trace_task(task)
        profile = profile_task(task, trace)
        plan = sample_variant_plan(task, profile, trace, rng_for(0, task.id, 0, 0))
        variant = build_variant(task, rewrite_plan(task, profile, plan, rng_for(1, task.id))[0], plan, 0, 0)
        for k in profile.miss_param_turns:
            assert variant.ground_truth[k] == [] and variant.ground_truth[k + 1]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(0, len(TRAIN) - 1), variant=st.integers(0, 5), attempt=st.integers(0, 2))
def test_accepted_candidates_always_pass_the_checker_and_keep_the_profile(index, variant, attempt):
    seed = TRAIN[index]
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    plan = sample_variant_plan(seed, profile, trace, rng_for(0, seed.id, variant, attempt), attempt)
    task = build_variant(seed, rewrite_plan(seed, profile, plan, rng_for(1, seed.id, variant))[0], plan, variant, 0)
    vtrace = trace_task(task)
    reasons, detail = judge(task, seed, profile, vtrace)
    if not reasons:
        assert check(task, [[gt] for gt in task.ground_truth], strict_tools=True).passed or seed_fails_strict(seed)
        # the skill-level profile holds (functions may change inside a skill class; the one documented change:
        # a state value with no unique hint, stated), measured afresh on the variant
        found = compare_skill_profiles(skill_profile(seed, trace), skill_profile(task, vtrace),
                                       detail.get("stated_fallbacks") or [])
        assert rejecting(found) == [], found
    assert all(re.fullmatch(r"[a-z_]+(:[a-z_,]+)?", r.split(" ", 1)[0]) for r in reasons)  # kind, then located detail


def test_verdict_rechecks_with_strict_tools_and_tolerates_only_the_seeds_own_violations():
    from envs.tools import held_out

    def early_use(seed):
        """The seed with one of its held-out calls moved before the reveal, when that still executes."""
        reveal = min(seed.missed_function)
        first = next((t for t in range(reveal) if seed.ground_truth[t]), None)
        if first is None:
            return None
        for t in range(reveal, len(seed.ground_truth)):
            for call in seed.ground_truth[t]:
                if call.split("(", 1)[0] in held_out(seed, 0):
                    task = seed.model_copy(deep=True)
                    task.id = seed.id + "__rods_strict"
                    task.ground_truth[first] = [call, *task.ground_truth[first]]
                    if not trace_task(task).errors:
                        return task
        return None

    seed, task = next((s, v) for s in TRAIN if s.category == "miss_func" and min(s.missed_function) > 0
                      and not seed_fails_strict(s) and (v := early_use(s)) is not None)
    assert check(task, [[gt] for gt in task.ground_truth]).passed  # BFCL's executor would run it anyway
    reasons, _ = judge(task, seed, profile_task(seed), trace_task(task))
    assert "recheck_failed" in reasons
    # BFCL's miss_func_49 already calls a held-out function early: its own ground truth is not held against it
    bfcl = load_tasks(ids=["multi_turn_miss_func_49"])[0]
    assert seed_fails_strict(bfcl)
    reasons, _ = judge(bfcl, bfcl, profile_task(bfcl), trace_task(bfcl))
    assert "recheck_failed" not in reasons


def test_no_variant_turn_opens_on_the_seeds_stray_full_stop():
    """miss_param_110's turn 1 opens on '. I'm contemplating ...' (a typo of the dataset); read 50 found
    '. 50 shares at the going market price' in a variant. A variant's user turn starts with a word."""
    seed = next(t for t in TRAIN if t.id == "multi_turn_miss_param_110")
    assert seed.turns[1][0].content.startswith(". ")
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    for variant in range(4):
        plan = sample_variant_plan(seed, profile, trace, rng_for(0, seed.id, variant, 0))
        task = build_variant(seed, rewrite_plan(seed, profile, plan, rng_for(1, seed.id, variant))[0], plan, variant, 0)
        opening = [m.content[:1] for turn in task.turns for m in turn if m.role == "user" and m.content]
        assert all(c.isalnum() or c in "'\"$#@" for c in opening), opening


def _variants_of(seed_id: str, n: int = 4) -> list:
    seed = next(t for t in TRAIN if t.id == seed_id)
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    out = []
    for variant in range(n):
        plan = sample_variant_plan(seed, profile, trace, rng_for(0, seed.id, variant, 0))
        out.append(build_variant(seed, rewrite_plan(seed, profile, plan, rng_for(1, seed.id, variant))[0], plan,
                                 variant, 0))
    return out


def test_an_asking_turn_withholding_several_cities_asks_for_several_airports():
    """miss_param_192 withholds two cities ('which airports are around cities?'); read 52 found 'What's the nearest
    airport to me?' answered by 'Cities such as Rivermist and Stonebrook'. The asking turn asks for airports of
    cities, never for the one airport nearest the user."""
    for task in _variants_of("multi_turn_miss_param_192"):
        asking = task.turns[0][0].content.lower()
        assert "cities" in asking and "to me" not in asking and "where i am" not in asking, asking


def test_the_order_picked_by_its_value_is_named_the_biggest():
    """base_143 picks the order of the biggest value (12446: 5 x 2840.56 against 10 x 210.65) from 'one with a
    substantial order value'; read 50 found 'a big-value order' vague with two orders listed. The variant names
    the pick by a superlative, and the ground truth's order is indeed the biggest by value."""
    for task in _variants_of("multi_turn_base_143", 2):
        text = " ".join(m.content for turn in task.turns for m in turn).lower()
        assert "biggest" in text or "largest" in text, text
        env = Environment(task.involved_classes, task.initial_config)
        values = {i: d["price"] * d["amount"] for i in (12345, 12446)
                  for d in [json.loads(env.execute(f"get_order_details(order_id={i})"))]}
        assert max(values, key=values.get) == 12446


def test_an_order_the_seed_picks_by_recency_is_still_picked_by_recency():
    """base_134 asks for 'an investment order I submitted not too long ago' with two orders in the history; read 53 #18
    found the donor's 'the specifics of my placed order' with nothing saying which. The variant says the most recent
    one, and the verdict refuses a variant whose words drop the pick."""
    from rods_agents.analysis.faithfulness import recency_dropped
    from rods_agents.analysis.value_sources import classify_arguments

    seed = next(t for t in TRAIN if t.id == "multi_turn_base_134")
    seed_sources = classify_arguments(seed, trace_task(seed))
    for task in _variants_of("multi_turn_base_134"):
        words = " ".join(m.content for m in task.turns[1]).lower()
        assert re.search(r"recent|latest|not (too )?long ago|just", words), words
        assert recency_dropped(task, seed, classify_arguments(task, trace_task(task)), seed_sources) == []
    dropped = task.model_copy(update={"turns": [task.turns[0], [task.turns[1][0].model_copy(update={
        "content": "Show me the details of my placed order, and cancel it if it hasn't gone through."})],
        *task.turns[2:]]})
    assert recency_dropped(dropped, seed, classify_arguments(dropped, trace_task(dropped)), seed_sources)
