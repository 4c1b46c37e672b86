"""Where an argument's value comes from (rods_agents.analysis.value_sources): what the user says as itself.

What a user of the verdict relies on: a value counts as stated only where the text writes it as itself. A
ticker inside a company's name ('QUAS' in 'Quasar Ltd.') or an airport code inside a city's ('BOS' in 'Boston')
is a value the assistant must look up; read as stated, a variant that hands over the ticker would pass as no
easier than its seed, and a rewrite saying 'Boston' would be refused for stating the code.
"""

from __future__ import annotations

from envs.task import bfcl_task
from rods_agents.analysis.information_structure import information_structure
from rods_agents.analysis.profile import profile_task
from rods_agents.analysis.tracing import trace_task
from rods_agents.analysis.value_sources import classify_arguments, named_by_lookup, numbers_for, said_in
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
    variant = _worded(seed, 0, "Can you provide the latest trading details for QUAS?")
    reasons, _ = judge(variant, seed, profile_task(seed), trace_task(variant))
    assert any(r.startswith("information_structure:state_value_stated") for r in reasons), reasons


def _worded(task, turn: int, text: str):
    turns = [list(t) for t in task.turns]
    turns[turn] = [m.model_copy(update={"content": text}) for m in turns[turn]]
    return task.model_copy(update={"id": task.id + "__rods_test", "turns": turns})


def test_a_company_whose_name_holds_its_ticker_still_names_it_for_a_lookup():
    # multi_turn_base_107: 'Zeta Corp' read as stating ZETA (the word is the ticker), so every variant naming its own
    # company ('Can you show me how Tesla is performing?') read as a value picked from the state with no cue:
    # 8 of 8 variants of 5 TradingBot scenarios were refused
    assert named_by_lookup("ZETA", "shares in Zeta Corp") == "Zeta Corp" and named_by_lookup("TSLA", "how Tesla is doing")
    assert named_by_lookup("ZETA", "buy ZETA (Zeta Corp)") is None  # the ticker written as it is: stated
    assert named_by_lookup("LAX", "a flight to Los Angeles") == "Los Angeles"
    seed = bfcl_task("multi_turn_base_107")  # 'Before purchasing shares in Zeta Corp, ...'
    assert [a.source for a in classify_arguments(seed, trace_task(seed)) if a.param == "symbol"] == ["state", "state"]
    variant = _worded(seed, 0, "Can you show me how Zeta Corp is performing?")
    info = information_structure(variant)
    assert info.turns[0].unresolved_picks == 0, "a named company is one value, not a pick among the state's"
    reasons, _ = judge(variant, seed, profile_task(seed), trace_task(variant))
    assert not any("state_value" in r or "unobtainable" in r or "reference_unresolved" in r for r in reasons), reasons
    stated = _worded(seed, 0, "Can you show me how ZETA is performing?")
    reasons, _ = judge(stated, seed, profile_task(seed), trace_task(stated))
    assert any(r.startswith("information_structure:state_value_stated") for r in reasons), reasons


def test_a_number_is_found_in_the_state_only_under_a_key_of_its_kind():
    # LLM trial 3, multi_turn_miss_func_71: the fill to full (45.0) equalled the humidity (45.0), so the seed's fill
    # read as 'found in the state' and every variant's fill on another fuel level as a value stated
    assert numbers_for("fuelAmount", {45.0: {"humidityLevel"}, 5.0: {"fuelLevel"}}) == {5.0}
    assert numbers_for("price", {227.16: {"price"}, 45.0: {"humidityLevel"}}) == {227.16}
    seed = bfcl_task("multi_turn_base_71")
    fill = next(a for a in classify_arguments(seed, trace_task(seed)) if a.param == "fuelAmount")
    assert fill.source == "composed", fill


def test_one_as_a_pronoun_is_no_number_a_sentence_must_carry():
    """'one of the flights', 'one that catches my eye', 'in one go' say no count. Read as the number 1, they made
    every new wording of their turn lack a number the seed's words hold, so the turn kept the seed's sentence
    (base_109's 'dive into one that catches my eye', a 450-mile trip 'in one go', 'cancel one of the flights')."""
    from rods_agents.analysis.value_sources import _numbers
    from rods_agents.variation.saying import keeps_specifics

    for pronoun in ("Cancel one of the flights.", "Let's dive into one that catches my eye.", "450 miles in one go."):
        assert 1.0 not in _numbers(pronoun)
    for count in ("Buy one share.", "Set it to one.", "one"):
        assert 1.0 in _numbers(count)
    assert keeps_specifics("Get me the latest data on MSFT.",
                           "From the tech stocks available, let's dive into one that catches my eye.")
    assert not keeps_specifics("Get me the latest data on MSFT.", "Buy one share of it.")
