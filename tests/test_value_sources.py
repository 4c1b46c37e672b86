"""Where an argument's value comes from (rods_agents.analysis.value_sources): what the user says as itself.

What a user of the verdict relies on: a value counts as stated only where the text writes it as itself. A
ticker inside a company's name ('QUAS' in 'Quasar Ltd.') or an airport code inside a city's ('BOS' in 'Boston')
is a value the assistant must look up; read as stated, a variant that hands over the ticker would pass as no
easier than its seed, and a rewrite saying 'Boston' would be refused for stating the code.
"""

from __future__ import annotations

from envs.task import bfcl_task
from rods_agents.analysis.profile import profile_task
from rods_agents.analysis.tracing import trace_task
from rods_agents.analysis.value_sources import classify_arguments, numbers_for, said_in
from rods_agents.stages.verdict import judge


def test_a_value_is_said_only_as_itself():
    assert said_in("QUAS", "Please buy QUAS now") and said_in("QUAS", "ticker 'quas'.")
    assert not said_in("QUAS", "the latest trading details for Quasar Ltd.")
    assert not said_in("BOS", "a flight to Boston") and not said_in("ORD", "place the order")
    assert said_in("report.txt", "open 'report.txt', please") and not said_in("card_14", "card card_1496")
    assert said_in("l", "count the lines")  # a one-letter option code: its words decide, as before


def test_a_ticker_named_by_its_company_is_looked_up_and_a_variant_stating_it_is_easier():
    seed = bfcl_task("multi_turn_base_105")  # 'Can you provide the latest trading details for Quasar Ltd.?'
    sources = classify_arguments(seed, trace_task(seed))
    assert next(a.source for a in sources if a.turn == 0 and a.param == "symbol") == "state"
    turns = [list(t) for t in seed.turns]
    turns[0] = [m.model_copy(update={"content": "Can you provide the latest trading details for QUAS?"}) for m in turns[0]]
    variant = seed.model_copy(update={"id": seed.id + "__rods_test", "turns": turns})
    reasons, _ = judge(variant, seed, profile_task(seed), trace_task(variant))
    assert any(r.startswith("information_structure:state_value_stated") for r in reasons), reasons


def test_a_number_is_found_in_the_state_only_under_a_key_of_its_kind():
    # LLM trial 3, multi_turn_miss_func_71: the fill to full (45.0) equalled the humidity (45.0), so the seed's fill
    # read as 'found in the state' and every variant's fill on another fuel level as a value stated
    assert numbers_for("fuelAmount", {45.0: {"humidityLevel"}, 5.0: {"fuelLevel"}}) == {5.0}
    assert numbers_for("price", {227.16: {"price"}, 45.0: {"humidityLevel"}}) == {227.16}
    seed = bfcl_task("multi_turn_base_71")
    fill = next(a for a in classify_arguments(seed, trace_task(seed)) if a.param == "fuelAmount")
    assert fill.source == "composed", fill
