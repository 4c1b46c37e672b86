"""Lookups a task's text leaves to the assistant are written into its ground truth (rods_agents.analysis.lookups).

Read 32 marked five of its eleven borderline pairs for a ground truth using a value nobody could know from the text
without looking ('the alphabetically first file', 'the most recent ticket', 'fill the tank up'): the seed's gap,
carried over. These tests hold the lookup that a careful person makes, and that nothing else changes."""

from __future__ import annotations

import pytest

from envs.executor import Environment
from envs.task import bfcl_task
from graphs.lanes import sibling_entry
from rods_agents.analysis.contamination import fingerprint
from rods_agents.analysis.lookups import prints, without_lookups, write_lookups


def _final_state(task):
    env = Environment(task.involved_classes, task.initial_config, task.long_context)
    for calls in task.ground_truth:
        env.run(calls)
    return env


@pytest.mark.parametrize(("seed_id", "turn", "lookup", "before"), [
    ("multi_turn_base_13", 0, "ls()", "tail("),  # 'the alphabetically first file in that directory'
    ("multi_turn_base_62", 0, "get_user_id(user='Bob')", "send_message("),  # 'message Bob about it'
    ("multi_turn_base_68", 0, "displayCarStatus(option='fuel')", "fillFuelTank("),  # 'fill it up' needs the level
    ("multi_turn_base_125", 3, "get_user_tickets()", "get_ticket("),  # 'the most recent ticket'
    # the same, where ticket 1 read as printed by an order's details only because an 'amount' there is 1 (read 36)
    ("multi_turn_long_context_125", 3, "get_user_tickets()", "get_ticket("),
    ("multi_turn_base_153", 1, "get_nearest_airport_by_city(location='Rivermist')", "get_flight_cost("),
    ("multi_turn_base_105", 0, "get_symbol_by_name(name='Quasar Ltd.')", "get_stock_info("),
    ("multi_turn_base_112", 2, "get_order_history()", "cancel_order("),
])
def test_the_lookup_a_person_makes_is_written_just_before_the_call_that_needs_it(seed_id, turn, lookup, before):
    seed = bfcl_task(seed_id)
    out, written = write_lookups(seed)
    assert [w.call for w in written] == [lookup], [w.describe() for w in written]
    calls = out.ground_truth[turn]
    at = calls.index(lookup)
    assert calls[at + 1].startswith(before), calls
    assert out.turns == seed.turns and out.initial_config == seed.initial_config
    assert not _final_state(out).state_diff(_final_state(seed))  # read-only: the same end state
    assert sum(map(len, out.ground_truth)) == sum(map(len, seed.ground_truth)) + 1
    assert seed.ground_truth[turn][0] != lookup  # the seed itself is not changed


def test_a_number_read_off_the_state_is_found_under_its_own_name_not_as_any_equal_number():
    """fillFuelTank(35.0) on a 15-gallon tank: displayCarStatus('fuel') prints fuelLevel 15, and nothing else that
    happens to print 15 (a temperature, a tire pressure) is written in its place."""
    assert prints('{"fuelLevel": 15.0}', 15.0, "fuel level")
    assert not prints('{"outsideTemperature": 15.0}', 15.0, "fuel level")
    assert prints('{"outsideTemperature": 15.0}', 15.0)
    assert not prints('{"current_directory_content": ["report.txt.bak"]}', "report.txt")
    assert prints("[{'id': 1, 'subject': 'Trading issue'}]", 1)  # a list result is Python's repr


@pytest.mark.parametrize("seed_id", ["multi_turn_base_151", "multi_turn_base_128"])
def test_what_a_model_knows_without_looking_gets_no_lookup(seed_id):
    """'from San Francisco to Los Angeles' (SFO, LAX) and 'Apple' (AAPL): a model knows them; requiring a lookup
    would make the variant stricter than BFCL's own ground truth for no reason."""
    seed = bfcl_task(seed_id)
    assert write_lookups(seed) == (seed, [])


def test_a_function_held_out_until_a_later_turn_is_never_written_before_it():
    seed = bfcl_task("multi_turn_base_13")
    held = seed.model_copy(update={"missed_function": {1: ["ls"]}, "category": "miss_func"}, deep=True)
    held.turns[1] = []  # the reveal turn of a miss_func task has no user message of its own
    out, written = write_lookups(held)
    assert all(not w.call.startswith("ls(") for w in written if w.turn < 1), [w.describe() for w in written]


def test_the_task_as_judged_comes_back_and_siblings_and_dedupe_compare_it():
    """The verdict judged the task before its lookups were written; the near-copy tests between siblings compare
    tasks as judged, so a shared ``ls()`` cannot make two different tasks look alike (nor hide a copy)."""
    seed = bfcl_task("multi_turn_base_13")
    out, written = write_lookups(seed)
    out.provenance = {"lookups": [w.model_dump() for w in written]}
    assert without_lookups(out).ground_truth == seed.ground_truth
    assert sibling_entry(out)["ground_truth"] == seed.ground_truth
    assert fingerprint(out).calls == fingerprint(seed).calls
    out.ground_truth[0].remove("ls()")
    with pytest.raises(ValueError, match="not at turn 0"):
        without_lookups(out)  # provenance that no longer matches its ground truth is an error, not a guess


def test_an_accepted_variant_carries_its_written_lookups_in_ground_truth_and_provenance():
    from graphs.synthesis import synthesize
    from rods_agents.stages.state import SynthesisContext

    seed = bfcl_task("multi_turn_base_13")
    run = synthesize([seed], SynthesisContext(seed=3, variants_per_seed=2))
    assert run.accepted, run.rejected
    for task in run.accepted:
        lookups = task.provenance["lookups"]
        assert [w["call"] for w in lookups] == ["ls()"], lookups
        assert task.ground_truth[0][lookups[0]["index"]] == "ls()"
        assert task.ground_truth[0][lookups[0]["index"] + 1].startswith("tail(")
