"""The information-structure detector on known seeds, and compare_structure on broken variants."""

from __future__ import annotations

import json
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envs.dataset import load_split, load_tasks
from envs.task import Message, Task
from rods_agents.analysis.catalog import build_catalog
from rods_agents.analysis.information_structure import LEXICON, compare_structure, information_structure
from rods_agents.analysis.profile import profile_task
from rods_agents.analysis.tracing import trace_task
from rods_agents.stages.verdict import judge

TRAIN = load_split("train")


def _seed(name: str) -> Task:
    return load_tasks(ids=[f"multi_turn_{name}"])[0]


def _edited(seed: Task, **turns: str) -> Task:
    """The seed with some turns' text replaced (``t2="..."``), ground truth and config unchanged."""
    task = seed.model_copy(deep=True)
    task.id = seed.id + "__edited"
    for key, text in turns.items():
        task.turns[int(key[1:])] = [Message(role="user", content=text)]
    return task


def _reasons(seed: Task, variant: Task) -> list[str]:
    return compare_structure(information_structure(seed), information_structure(variant))


def test_every_catalog_method_has_lexicon_phrases():
    methods = json.loads(LEXICON.read_text())["methods"]
    assert set(methods) == set(build_catalog().methods)
    for name, spec in methods.items():
        assert spec["phrases"], name
        for p in spec["phrases"]:
            re.compile(p)


def test_base_94_conditions_and_the_implicit_brake_press():
    s = information_structure(_seed("base_94"))
    t0, t1, t2 = s.turns
    assert [c.cue.startswith("Should the range fall short") for c in t0.conditions] == [True]
    assert t0.conditions[0].depends_on == ["estimate_drive_feasibility_by_mileage"]
    assert len(t1.conditions) == 1 and "40 PSI" in t1.conditions[0].cue
    assert "check_tire_pressure" in t1.conditions[0].depends_on
    assert [(c.method, c.explicit) for c in t2.calls] == [("pressBrakePedal", False), ("startEngine", True)]
    assert all(c.explicit for c in t0.calls + t1.calls)


def test_base_112_the_last_stock_on_the_list_is_a_position_reference():
    s = information_structure(_seed("base_112"))
    refs = s.turns[1].references
    assert [(r.kind, r.method, r.param) for r in refs] == [("position", "get_stock_info", "symbol")]
    assert "last stock" in refs[0].cue
    assert s.turns[0].references == [] and s.turns[1].unresolved_picks == 0


def test_base_34_rounding_is_a_transformation():
    s = information_structure(_seed("base_34"))
    tr = s.turns[1].transformations
    assert [(x.kind, x.method, x.param) for x in tr] == [("round", "echo", "content")]
    assert tr[0].cue.lower().startswith("round")
    assert [c.explicit for c in s.turns[1].calls] == [False, True, True, True]  # the cat nobody asked for


def test_miss_param_withheld_value_and_where_it_is_supplied():
    s = information_structure(_seed("miss_param_1"))
    w = s.turns[3].withheld
    assert w is not None and (w.method, w.param, w.supplied_at, w.stated_before) == ("tail", "lines", 4, False)
    assert [t.turn for t in s.turns if t.withheld] == [3]
    assert s.turns[4].calls[0].explicit  # asked for by the withholding turn's text


def test_a_withheld_city_is_the_lookup_the_text_leaves_out_not_its_twin():
    """miss_param_56 turn 0 says the departure city and leaves the destination out; the next turn's two zip lookups
    call one method. The withheld value is the second lookup's city (Rivermist), not yet said; reading the first
    lookup's (San Francisco, said) counted the withheld value as stated and left the turn to no new words."""
    from rods_agents.analysis.information_structure import withheld_value

    task = _seed("miss_param_56")
    trace = trace_task(task)
    w = information_structure(task, trace).turns[0].withheld
    assert w is not None and (w.method, w.param, w.index, w.stated_before) == ("get_zipcode_based_on_city", "city", 1, False)
    assert withheld_value(task, trace, w) == ["Rivermist"]


def test_a_date_said_in_words_is_not_the_withheld_value():
    """miss_param_173 turn 0 says 'in business class on November 15, 2026' and asks nothing: its date is said, so
    what it leaves out is the request, and a variant must not turn it into a question whose ground truth is empty.
    miss_param_156 says its date ('October 15, 2026') and withholds the route the next turn supplies."""
    w173 = information_structure(_seed("miss_param_173")).turns[0].withheld
    assert w173 is not None and w173.stated_before
    w156 = information_structure(_seed("miss_param_156")).turns[0].withheld
    assert w156 is not None and (w156.method, w156.param, w156.stated_before) == ("get_flight_cost", "travel_from",
                                                                                   False)


def test_miss_func_held_out_function_sits_on_the_turn_that_asks_for_it():
    s = information_structure(_seed("miss_func_0"))
    assert [(t.turn, t.held_out_function) for t in s.turns if t.held_out_function] == [(2, "sort")]
    assert s.turns[3].calls[0].method == "sort" and s.turns[3].calls[0].explicit
    assert [c.explicit for c in s.turns[0].calls] == [False, True, True]  # cd into 'document' is implicit


def test_compare_structure_names_each_break():
    b94, b112, b34, mp1 = _seed("base_94"), _seed("base_112"), _seed("base_34"), _seed("miss_param_1")
    assert _reasons(b94, b94) == [] and _reasons(b112, b112) == [] and _reasons(mp1, mp1) == []
    assert "information_structure:implicit_made_explicit" in _reasons(
        b94, _edited(b94, t2="Press the brake pedal all the way down, then start the engine."))
    assert "information_structure:condition_dropped" in _reasons(
        b94, _edited(b94, t1="Verify the tire pressures, pinpoint the nearest tire shop for me and set navigation."))
    vague = _reasons(b112, _edited(b112, t1="Could you provide a comprehensive breakdown of the stock from the "
                                            "earlier result?"))
    assert {"information_structure:reference_dropped", "information_structure:reference_unresolved"} <= set(vague)
    assert "information_structure:transformation_dropped" in _reasons(
        b34, _edited(b34, t1="According to the whole financial report, what's the mean of revenue and expense and "
                             "profit? Write it in a new file called statistics.txt."))
    assert "information_structure:withheld_stated" in _reasons(
        mp1, _edited(mp1, t3="Finally, show the last 20 lines of the file."))
    assert "information_structure:withheld_other_param" in _reasons(
        mp1, _edited(mp1, t3="Finally, show the last 20 lines of a file.", t4="I mean log.txt."))
    mf0 = _seed("miss_func_0")
    other = _edited(mf0)
    other.missed_function = {3: ["grep"]}
    assert _reasons(mf0, other) == ["information_structure:held_out_changed"]


def test_verdict_rejects_a_variant_that_spells_out_an_implicit_step():
    seed = _seed("base_94")
    variant = _edited(seed, t2="Press the brake pedal all the way down, then start the engine.")
    reasons, detail = judge(variant, seed, profile_task(seed), trace_task(variant))
    # the reason names the turn and the call (issue 13), not only the kind
    assert any(r.startswith("information_structure:implicit_made_explicit turn=2 call=pressBrakePedal(") for r in reasons)
    assert any(f["reason"] == "implicit_made_explicit" and f["turn"] == 2 for f in detail["information_structure"])


def test_detector_lands_near_the_hand_labelled_implicit_share():
    calls = implicit = 0
    for task in TRAIN:
        c = information_structure(task).counts()
        calls, implicit = calls + c["calls"], implicit + c["implicit"]
    # hand labels on 30 seeds: 20.5% implicit (docs/information-structure.md); the issue author measured ~13%
    assert 0.12 <= implicit / calls <= 0.24


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(0, len(TRAIN) - 1))
def test_every_seed_keeps_its_own_structure(index):
    s = information_structure(TRAIN[index])
    assert compare_structure(s, s) == []
    assert len(s.turns) == len(TRAIN[index].ground_truth)
    assert s.counts()["calls"] == sum(len(t) for t in TRAIN[index].ground_truth)


def test_a_vehicle_said_to_be_secured_as_a_premise_asks_for_no_lock():
    """'With the vehicle secured, start the engine' (base_71) states a premise: the locks stay an implicit step of the
    start, which a variant must leave implicit too ('lock up all the doors' made it easier, reads 13 and 14); 'make sure
    the doors are locked' still asks for them."""
    from envs.task import bfcl_task
    from rods_agents.analysis.information_structure import information_structure, lexicon

    calls = information_structure(bfcl_task("multi_turn_base_71")).turns[3].calls
    assert [(c.method, c.explicit) for c in calls if c.method in ("lockDoors", "startEngine")] == [
        ("lockDoors", False), ("startEngine", True)]
    lock = lexicon().methods["lockDoors"][0]
    assert any(p.search("Make sure the doors are locked, then start the engine.") for p in lock)


def test_a_threshold_the_condition_reads_cannot_be_dropped():
    # base_115: 'if AMZN appears promising, add it to my watchlist. By promising I mean the price is larger than 300.'
    # Without its second sentence 'promising' decides nothing the text pins down
    b115 = _seed("base_115")
    assert information_structure(b115).turns[1].limits == [300.0]
    kept = _edited(b115, t1="If 'AMZN' looks promising, meaning its price is larger than 300, put it on my watchlist.")
    assert "information_structure:limit_dropped" not in _reasons(b115, kept)
    dropped = _edited(b115, t1="Based on the insights gathered, if 'AMZN' appears promising, add it to my watchlist.")
    assert "information_structure:limit_dropped" in _reasons(b115, dropped)


def test_a_budget_the_user_sets_is_an_argument_not_a_threshold():
    # 'let's set a budget limit of $1500' hands 1500 to set_budget_limit (miss_param_182 hands it over a turn later):
    # saying it without 'limit of' keeps the task
    assert information_structure(_seed("base_192")).turns[2].limits == []
    assert all(not t.limits for t in information_structure(_seed("miss_param_182")).turns[1:3])
    assert information_structure(_seed("base_115")).turns[1].limits  # while a bar the condition reads is one


def test_a_call_the_seed_asks_for_by_its_goal_cannot_be_named_outright():
    # read of 2026-12-05, miss_func_177: the seed's 'confirm their flight booking's details' left the assistant to
    # see that retrieve_invoice is the step; the variant's 'Please pull up the invoice for the flight we booked.'
    # named it. Naming it is refused; other words for the goal are not, and the verdict names turn and call
    seed = _seed("base_177")
    call = information_structure(seed).turns[1].calls[0]
    assert call.method == "retrieve_invoice" and call.by_goal and not call.named
    named = _edited(seed, t1="Please pull up the invoice for the flight we booked.")
    assert "information_structure:goal_made_named" in _reasons(seed, named)
    assert _reasons(seed, _edited(seed, t1="Could you go over the details of the booking we made?")) == []
    reasons, _ = judge(named, seed, profile_task(seed), trace_task(named))
    assert any(r.startswith("information_structure:goal_made_named turn=1 call=retrieve_invoice(") for r in reasons)


def test_naming_a_call_the_seed_named_by_goal_words_is_recorded_not_refused():
    # the other way round is harder, not easier: the verdict records it, and the re-wording keeps seed's level
    seed = _seed("base_153")  # 'Could you generate an invoice for this latest purchase?'
    assert information_structure(seed).turns[4].calls[0].named
    goal = _edited(seed, t4="Finally, I'd like a summary of that booking for my records.")
    assert "information_structure:named_made_goal" in _reasons(seed, goal)
    reasons, _ = judge(goal, seed, profile_task(seed), trace_task(goal))
    assert not any("named_made_goal" in r for r in reasons)


def test_words_saying_what_is_not_done_name_no_call():
    """miss_func_160: 'without visible currency conversion, ensuring you're aligned with a 20,000 RMB equivalent
    allowance' leaves the conversion to the assistant, and read 40 marked a variant asking 'how many US dollars is that
    on exchange?' easier. The negated words name nothing, so the conversion is asked by its goal, and naming it is
    refused."""
    from rods_agents.analysis.information_structure import asked_by_goal, unnegated

    seed = _seed("miss_func_160")
    call = information_structure(seed).turns[0].calls[0]
    assert call.method == "compute_exchange_rate" and call.by_goal and not call.named
    assert "conversion" not in unnegated("Set it without visible currency conversion.")
    assert asked_by_goal("compute_exchange_rate", "Convert 20000 RMB to US dollars.") is False
    assert asked_by_goal("compute_exchange_rate", seed.turns[0][0].content) is True
