"""The unfaithful classes found in accepted variants (issue 13) are verdict rejections naming turn, call, value."""

from __future__ import annotations

from envs.dataset import load_tasks
from envs.task import Message, Task
from rods_agents.analysis.faithfulness import (
    dictated_cut,
    fill_not_full,
    is_round,
    knife_edge_balance,
    old_choice_words,
    old_digits_left,
    round_made_odd,
    unknown_symbols,
)
from rods_agents.analysis.profile import profile_task
from rods_agents.analysis.tracing import trace_task
from rods_agents.analysis.value_sources import classify_arguments
from rods_agents.stages.verdict import judge


def _seed(name: str) -> Task:
    return load_tasks(ids=[f"multi_turn_{name}"])[0]


def _copy(seed: Task, suffix: str) -> Task:
    task = seed.model_copy(deep=True)
    task.id = seed.id + suffix
    return task


def test_a_wc_mode_swap_that_leaves_the_number_of_lines_in_the_text_is_rejected():
    seed = _seed("base_49")  # wc(mode='l') at turn 2, "the total number of lines"; turn 3 "the number of line"
    v = _copy(seed, "__words")
    v.ground_truth[2] = ["wc(file_name='file3.txt',mode='w')"]
    found = old_choice_words(v, seed)
    assert found and found[0].startswith("unfaithful:old_choice_words turn=2 call=wc(file_name='file3.txt',mode='w') "
                                         "value='w' seed_value='l'")
    v.turns[2] = [Message(role="user", content="For that same third file, how many words does it hold?")]
    later = old_choice_words(v, seed)  # turn 3 still asks for the logarithm of "the number of line"
    assert later and later[0].startswith("unfaithful:old_choice_words turn=3 ")
    v.turns[3] = [Message(role="user", content="Could you compute the base 10 logarithm of that word count, to 2 "
                                               "decimal places?")]
    assert old_choice_words(v, seed) == []
    swapped = _copy(seed, "__w2")
    swapped.ground_truth[2] = ["wc(file_name='file3.txt',mode='w')"]
    reasons, _ = judge(swapped, seed, profile_task(seed), trace_task(swapped))
    assert [r for r in reasons if r.startswith("unfaithful:old_choice_words turn=2")], reasons


def test_fill_it_completely_must_fill_the_tank():
    seed = _seed("base_67")  # fuelLevel 10.5, fillFuelTank(fuelAmount=39.5): 50 gallons, the capacity
    turn = next(t for t, calls in enumerate(seed.ground_truth) if any(c.startswith("fillFuelTank") for c in calls))
    seed.turns[turn] = [Message(role="user", content="Please fill the tank completely before we go.")]
    assert fill_not_full(seed, seed) == []
    v = _copy(seed, "__fuel")
    v.initial_config = {**v.initial_config, "VehicleControlAPI": {**v.initial_config["VehicleControlAPI"],
                                                                  "fuelLevel": 8.0}}
    found = fill_not_full(v, seed)  # 8 + 39.5 = 47.5 gallons: the old amount kept, the tank not full
    assert found == [f"unfaithful:fill_not_full turn={turn} call=fillFuelTank(fuelAmount=39.5) value=47.5 capacity=50"]


def test_a_balance_patched_to_just_above_the_order_is_rejected():
    seed = _seed("base_107")  # place_order(Buy ZETA 150.75 x 50) = 7537.5
    v = _copy(seed, "__edge")
    bot = v.initial_config["TradingBot"]
    bot["account_info"] = {**bot.get("account_info", {}), "balance": 7539.0}
    found = knife_edge_balance(v, seed, trace_task(v))
    assert found and found[0].startswith("unfaithful:knife_edge_balance turn=1 call=place_order(") and "value=7539" in found[0]
    bot["account_info"]["balance"] = 12000.0
    assert knife_edge_balance(v, seed, trace_task(v)) == []


def test_a_ticker_the_environment_does_not_know_is_rejected():
    seed = _seed("base_107")
    assert unknown_symbols(seed, seed) == []
    v = _copy(seed, "__ticker")
    v.ground_truth[0] = ["get_stock_info(symbol='NVDA')"]
    assert unknown_symbols(v, seed) == []  # the environment lists NVDA
    v.ground_truth[0] = ["get_stock_info(symbol='OHDP')"]
    assert unknown_symbols(v, seed) == ["unfaithful:unknown_symbol turn=0 call=get_stock_info(symbol='OHDP') value='OHDP'"]


def test_a_renamed_card_id_with_its_old_digits_in_the_card_number_is_rejected():
    seed = _seed("base_159")  # card_3456 whose number ends in 3456
    v = _copy(seed, "__card")
    found = old_digits_left(v, {"card_3456": "card_8219"})
    assert found and found[0].startswith("unfaithful:old_digits_left value='card_8219' old='card_3456'")
    assert old_digits_left(v, {"card_3456": "card_3456x"}) == []  # the new id keeps the digits: consistent


def test_a_round_stated_number_made_odd_is_rejected():
    assert all(is_round(x) for x in (10000, 2500, 150, 45, 20, 7)) and not any(is_round(x) for x in (9267, 2537, 45.99, 18.5))
    seed = _seed("base_1")  # "show the last 20 lines"
    v = _copy(seed, "__odd")
    v.turns[3] = [Message(role="user", content="Finally, show the last 17 lines the file.")]
    v.ground_truth[3] = ["tail(file_name='log.txt',lines=17)"]
    found = round_made_odd(v, seed, classify_arguments(v, trace_task(v)), classify_arguments(seed, trace_task(seed)))
    assert found == ["unfaithful:round_made_odd turn=3 call=tail param=lines value=17 seed_value=20"]
    v.turns[3] = [Message(role="user", content="Finally, show the last 15 lines the file.")]
    v.ground_truth[3] = ["tail(file_name='log.txt',lines=15)"]
    assert round_made_odd(v, seed, classify_arguments(v, trace_task(v)), classify_arguments(seed, trace_task(seed))) == []


def test_a_renamed_card_number_only_ties_its_last_four_digits_not_a_flight_code_that_shares_a_run():
    """LLM trial 3, request 0016: renaming a card number whose digits '1234' also sat in an existing booking's
    flight number 'LA1234' was refused as old digits left behind; only the card id takes the number's tail."""
    seed = _seed("base_159")  # card_3456, number '6754 9823 6519 3456'
    v = _copy(seed, "__flight")
    travel = v.initial_config["TravelAPI"]
    card = travel["credit_card_list"].pop("card_3456")
    travel["credit_card_list"]["card_7781"] = {**card, "card_number": "4417 2038 9921 7781"}
    travel["booking_record"] = {"booking_1": {"flight_number": "LA6519", "card_id": "card_7781"}}
    both = {"6754 9823 6519 3456": "4417 2038 9921 7781", "card_3456": "card_7781"}
    assert old_digits_left(v, both) == []  # 'LA6519' shares a run of the old number, but ties nothing to it
    travel["credit_card_list"]["card_3456"] = travel["credit_card_list"].pop("card_7781")
    found = old_digits_left(v, {"6754 9823 6519 3456": "4417 2038 9921 7781"})
    assert found and "state_value='card_3456'" in found[0]  # the id still ends in the old tail: refused


def test_a_dictated_message_said_only_in_part_is_rejected():
    """base_143 dictates 'My strategy is shifting ... order. Current balance in my account is $10000.'. Words that
    keep its first sentence only still read as the user's (most of its words are there), so only this check sees
    that the assistant cannot send the whole text (two variants of the 400 x 2 run, before the quote guard)."""
    seed = _seed("base_143")
    assert dictated_cut(seed, seed) == []
    v = _copy(seed, "__cut")
    said = v.turns[3][0].content
    assert "Current balance in my account is $10000." in said
    v.turns[3] = [Message(role="user", content=said.replace(" Current balance in my account is $10000.", ""))]
    assert [r.split(" value=")[0] for r in dictated_cut(v, seed)] == [
        "unfaithful:dictated_cut turn=3 call=send_message param=message"]


def test_an_option_the_seed_names_must_be_named_in_the_variant():
    # read 23: base_187 asks for 'comprehensive travel insurance'; a donor sentence of base_185 (a seed that never names
    # the type) stood for that turn, and the variant left the insurance type to a guess
    from rods_agents.analysis.faithfulness import option_unsaid

    seed = _seed("base_187")
    assert option_unsaid(seed, seed) == []
    v = _copy(seed, "__insurance")
    v.turns[0] = [Message(role="user", content=(
        "Relating to the travel itinerary I'm arranging, I would like to secure travel insurance with a fee of $1500 "
        "linked to booking code insurance_12345. I'd prefer to utilize the payment method associated with card ID "
        "'card_4893'. Kindly finalize this with my access code token_abc123."))]
    found = option_unsaid(v, seed)
    assert found == ["unfaithful:option_unsaid turn=0 call=purchase_insurance param=insurance_type "
                     "value='comprehensive'"]
    reasons, _ = judge(v, seed, profile_task(seed), trace_task(v))
    assert found[0] in reasons
    v.turns[0] = [Message(role="user", content=v.turns[0][0].content.replace("secure travel insurance",
                                                                             "secure comprehensive travel insurance"))]
    assert option_unsaid(v, seed) == []
