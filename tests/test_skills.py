"""The skill-level profile and novelty in the verdict (issue 13): swaps inside a skill class pass, swaps
across classes and copies are rejected with reasons that name the turn, the call and the value."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from envs.dataset import load_tasks
from envs.task import Message, Task
from rods_agents.analysis.catalog import build_catalog
from rods_agents.analysis.contamination import fingerprint, same_substance, sibling_copy
from rods_agents.analysis.novelty import containment, near_copy, new_only_in_digits
from rods_agents.analysis.profile import profile_task
from rods_agents.analysis.skills import (
    call_kind,
    compare_skill_profiles,
    same_skill,
    skill_class,
    skill_mates,
    skill_profile,
)
from rods_agents.analysis.tracing import trace_task
from rods_agents.stages.verdict import category_violations, judge

ROOT = Path(__file__).resolve().parent.parent


def _seed(name: str) -> Task:
    return load_tasks(ids=[f"multi_turn_{name}"])[0]


def _msg(text: str) -> list[Message]:
    return [Message(role="user", content=text)]


def _garden(seed: Task) -> Task:
    """A new task on base_27's skills: other entities, state and wording; the seed's rename (mv) is a copy
    (cp) here, a function of the same skill class."""
    v = seed.model_copy(deep=True)
    v.id = seed.id + "__garden"
    v.initial_config = {
        "GorillaFileSystem": {"root": {"mia": {"type": "directory", "contents": {"studio": {
            "type": "directory", "contents": {
                "garden_layout.md": {"type": "file", "content": "Raised beds along the south fence."}}}}}}},
        "TicketAPI": {"ticket_queue": [{"id": 7, "description": "Greenhouse sensors offline.", "priority": 2}]}}
    v.turns = [
        _msg("My studio holds a markdown sketch, garden_layout.md. Leave it in place, but I want a duplicate beside "
             "it called garden_layout_v2.md."),
        _msg("Different matter: the greenhouse sensors quit reporting overnight and nobody noticed. Open a help-desk "
             "request titled 'sensor outage' at urgency 2, and for its description put exactly what the layout file "
             "says: 'Raised beds along the south fence.' My help-desk credentials: user plot_keeper, password "
             "Tomat0es!"),
        _msg("Turns out the irrigation timer failed too. File one more request under that same title, this time "
             "with description 'Timer fault found.' and urgency 4.")]
    v.ground_truth = [
        ["cd(folder='studio')", "cp(source='garden_layout.md',destination='garden_layout_v2.md')"],
        ["ticket_login(username='plot_keeper', password='Tomat0es!')",
         "create_ticket(title='sensor outage',description='Raised beds along the south fence.', priority=2)"],
        ["create_ticket(title='sensor outage',description='Timer fault found.', priority=4)"]]
    return v


def _judge(variant: Task, seed: Task, **kw) -> tuple[list[str], dict]:
    return judge(variant, seed, profile_task(seed), trace_task(variant), **kw)


# ----------------------------------------------------------------------------- skill classes (data)
def test_skill_classes_cover_every_method_and_group_the_documented_swaps():
    assert same_skill("cp", "mv") and same_skill("mean", "standard_deviation") and same_skill("wc", "du")
    assert same_skill("fund_account", "withdraw_funds") and same_skill("tail", "cat")
    assert not same_skill("cp", "rm") and not same_skill("cat", "wc") and not same_skill("mean", "add")
    assert "mv" in skill_mates("cp") and skill_class("GorillaFileSystem", "mv") == "GorillaFileSystem/relocate"
    assert (call_kind("cd"), call_kind("ticket_login"), call_kind("pressBrakePedal"), call_kind("get_user_id"),
            call_kind("place_order")) == ("navigation", "authentication", "precondition", "lookup", "action")
    # every BFCL method is in a class of its own environment, and a class never mixes kinds
    catalog = build_catalog()
    for name, spec in catalog.methods.items():
        if spec.cls in {"GorillaFileSystem", "MathAPI", "MessageAPI", "TwitterAPI", "TicketAPI", "TradingBot",
                        "TravelAPI", "VehicleControlAPI"}:
            assert skill_class(None, name).startswith(spec.cls + "/"), name
            assert {call_kind(m) for m in [name, *skill_mates(name)]} == {call_kind(name)}, name


def test_skill_profile_holds_calls_by_kind_data_flow_and_mechanics():
    seed = _seed("base_27")
    sp = skill_profile(seed)
    t0 = sp.turns[0]
    assert [c.skill for c in t0.calls] == ["GorillaFileSystem/navigate", "GorillaFileSystem/relocate"]
    assert t0.implicit_by_kind() == {"navigation": 1}  # nobody asks for the cd into 'workspace'
    assert "method" not in sp.summary()[0] and sp.summary()[0]["skills"] == ["navigate", "relocate"]
    assert compare_skill_profiles(sp, sp) == []
    mp = skill_profile(_seed("miss_param_1"))
    assert any(t.withheld for t in mp.turns) and mp.category == "miss_param"


# ----------------------------------------------------------------------------- swaps
def test_a_new_task_with_a_swap_inside_a_skill_class_is_accepted():
    seed = _seed("base_27")
    reasons, detail = _judge(_garden(seed), seed)
    assert reasons == [], reasons
    assert detail["seed_text_containment"] < 0.2


def test_a_swap_across_skill_classes_is_rejected_naming_turn_and_call():
    seed = _seed("base_27")
    v = _garden(seed)
    v.turns[0] = _msg("My studio holds a markdown sketch, garden_layout.md. Show me what it says.")
    v.ground_truth[0] = ["cd(folder='studio')", "cat(file_name='garden_layout.md')"]
    reasons, _ = _judge(v, seed)
    assert any(r.startswith("skill_profile:skill_changed turn=0 call=cat(file_name='garden_layout.md')")
               and "seed_skill='GorillaFileSystem/relocate'" in r for r in reasons), reasons


def test_an_implicit_step_spelled_out_names_the_turn_and_the_call():
    seed = _seed("base_27")
    v = _garden(seed)
    v.turns[1] = _msg(v.turns[1][0].content.replace("My help-desk credentials:", "Log in first with"))
    reasons, _ = _judge(v, seed)
    assert [r for r in reasons if r.startswith("information_structure:implicit_made_explicit turn=1 "
                                               "call=ticket_login(username='plot_keeper'")], reasons


# ----------------------------------------------------------------------------- copies
def test_the_seed_with_renamed_entities_is_rejected_as_a_copy():
    seed = _seed("base_27")
    v = seed.model_copy(deep=True)
    v.id = seed.id + "__renamed"
    old, new = "project_plan.md", "roadmap_draft.md"
    v.turns = [[Message(role=m.role, content=m.content.replace(old, new).replace("project_overview", "roadmap_final"))
                for m in turn] for turn in seed.turns]
    v.ground_truth = [[c.replace(old, new).replace("project_overview", "roadmap_final") for c in turn]
                      for turn in seed.ground_truth]
    ws = v.initial_config["GorillaFileSystem"]["root"]["alex"]["contents"]["workspace"]["contents"]
    ws[new] = ws.pop(old)
    reasons, detail = _judge(v, seed)
    assert any(r.startswith("novelty:seed_text_copy containment=") and "turn=" in r for r in reasons), reasons
    assert detail["seed_text_containment"] > 0.6


def test_a_variant_new_only_in_digits_is_rejected():
    seed = _seed("base_27")
    v = seed.model_copy(deep=True)
    v.id = seed.id + "__digits"
    v.turns[2] = _msg(seed.turns[2][0].content.replace("level 5", "level 4"))
    v.ground_truth[2] = [seed.ground_truth[2][0].replace("priority=5", "priority=4")]
    assert new_only_in_digits(v, seed)
    reasons, _ = _judge(v, seed)
    assert [r for r in reasons if r.startswith("novelty:digits_only turn=2 call=create_ticket(")], reasons


def test_a_near_copy_of_an_accepted_sibling_variant_is_rejected():
    seed, sibling_seed = _seed("base_27"), _seed("long_context_27")  # one scenario, two categories
    first = _garden(seed)
    first.id, first.category = "multi_turn_long_context_27__garden", "long_context"
    second = _garden(seed)
    second.turns[2] = _msg(second.turns[2][0].content.replace("irrigation timer", "watering clock"))
    assert near_copy(second, first) is not None and sibling_seed.scenario == seed.scenario
    reasons, _ = _judge(second, seed, siblings=[first])
    assert [r for r in reasons if r.startswith(f"novelty:sibling_copy of={first.id} scenario=27")], reasons
    # the run's dedupe (graphs.synthesis.Deduper) applies the same rule through same_substance
    assert same_substance(fingerprint(second), fingerprint(first), same_config=False)
    assert sibling_copy(fingerprint(second), fingerprint(first)).startswith("sibling text ")
    other_scenario = first.model_copy(update={"scenario": 28})
    assert not sibling_copy(fingerprint(second), fingerprint(other_scenario))  # the scenario rule is per scenario
    assert _judge(second, seed, siblings=[other_scenario])[0] == []


# ----------------------------------------------------------------------------- benchmark metrics
def _bench():
    spec = importlib.util.spec_from_file_location("synthesis_quality", ROOT / "benchmarks" / "synthesis_quality.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def _task(tid: str, scenario: int, text: str, calls: list[str], category: str = "base") -> Task:
    return Task(id=tid, category=category, scenario=scenario, turns=[_msg(text)], ground_truth=[calls],
                involved_classes=["GorillaFileSystem"], initial_config={})


def test_novelty_metrics_on_hand_made_tasks():
    bench = _bench()
    seed = _task("s", 1, "alpha beta gamma delta epsilon zeta", ["ls()"])
    # seed 5-grams: (alpha..epsilon), (beta..zeta). v1 "alpha beta gamma delta epsilon eta": grams
    # (alpha..epsilon) in the seed, (beta..eta) not -> 1/2 = 0.5; v2 is the seed's text -> 2/2 = 1.0
    v1 = _task("v1", 1, "alpha beta gamma delta epsilon eta", ["pwd()"])
    v2 = _task("v2", 1, "alpha beta gamma delta epsilon zeta", ["ls()"], category="miss_func")
    v3 = _task("v3", 2, "one two three four five six", ["cd(folder='x')"])
    assert containment(v1.turns[0][0].content, seed.turns[0][0].content) == 0.5
    # mean (0.5 + 1.0) / 2 = 0.75; above 0.8: only v2 -> 1/2 = 0.5
    assert bench.containment_stats([(v1, seed), (v2, seed)]) == {
        "containment_mean": 0.75, "containment_above_0_8": 0.5,
        "containment_masked_mean": 0.75, "containment_masked_above_0_8": 0.5}  # no entities in these texts
    # the seed's sentence with its entity renamed: new by raw 5-grams, the seed's once entities are masked
    named = _task("n", 1, "please move the file report.txt into the archive folder now", ["mv(source='report.txt',destination='archive')"])
    renamed = _task("r", 1, "please move the file notes.md into the backup folder now", ["mv(source='notes.md',destination='backup')"])
    stats = bench.containment_stats([(renamed, named)])
    assert stats["containment_mean"] < 0.2 and stats["containment_masked_mean"] == 1.0
    # scenario 1 holds v1, v2, v4 -> pairs (v1, v2), (v1, v4), (v2, v4); scenario 2 holds v3 alone -> none.
    # (v2, v4): the same text -> near-copy. (v1, v2) and (v1, v4): 1 of min(2, 2) 5-grams shared = 0.5, not above
    # SIBLING_TEXT_COPY (0.5), and pwd() vs ls() -> not near-copies. All: 3 pairs, 1 near-copy.
    v4 = _task("v4", 1, "alpha beta gamma delta epsilon zeta", ["ls()"])
    stats = bench.near_copy_stats([v1, v2, v3, v4])
    assert stats["all"] == {"pairs": 3, "near_copies": 1}
    assert stats["miss_func"] == {"pairs": 2, "near_copies": 1}  # the pairs with v2: (v1, v2) no, (v2, v4) yes
    assert stats["base"] == {"pairs": 3, "near_copies": 1}  # every pair has a base member
    # same calls once digits are masked is a near-copy whatever the text
    v5 = _task("v5", 2, "completely different words here today", ["cd(folder='x2')"])
    v3b = _task("v3b", 2, "one two three four five six", ["cd(folder='x7')"])
    assert near_copy(v5, v3b) == "calls" and near_copy(v5, v3) is None


def test_a_value_the_seed_leaves_to_find_in_the_state_stated_names_the_call_and_value():
    seed = _seed("base_5")  # turn 0: cd(folder='project'), a folder the user never names
    sp = skill_profile(seed)
    assert sp.turns[0].discovered == ["cd.folder='project'"]
    v = seed.model_copy(deep=True)
    v.turns[0] = _msg(seed.turns[0][0].content + " Use 'project'.")
    assert compare_skill_profiles(sp, skill_profile(v))[0].startswith(
        "information_structure:state_value_stated turn=0 call=cd.folder value=\"'project'\"")


def test_an_execution_error_names_the_turn_the_call_and_the_error():
    seed = _seed("base_1")
    v = seed.model_copy(deep=True)
    v.ground_truth[3] = ["tail(file_name='nope.txt',lines=20)"]
    reasons, _ = _judge(v, seed)
    assert reasons == ["execution_error:missing_entity turn=3 call=tail(file_name='nope.txt',lines=20) "
                       "error='tail: nope.txt: No such file or directory'"]


def test_a_held_out_function_used_early_names_the_turn_and_the_call():
    seed = _seed("miss_func_0")  # sort is revealed at turn 3
    v = seed.model_copy(deep=True)
    sort_call = next(c for t in seed.ground_truth for c in t if c.startswith("sort("))
    v.ground_truth[0] = [*seed.ground_truth[0], sort_call]
    found = category_violations(v, seed, profile_task(seed))
    assert f"category_rule:miss_func turn=0 call={sort_call} why='held out at this turn'" in found, found
