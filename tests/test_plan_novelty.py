"""The offline plan makes a new task beyond digits (issue 13): dictated texts of its own, another stock, a
method of the same skill; the two variants of one seed differ. A plan new only in numbers and ids is what the
verdict rejects as ``novelty:digits_only``, so each case here checks the plan's masked ground truth too."""

from __future__ import annotations

import json
import random
import re
from functools import lru_cache

import pytest

from envs.dataset import load_split
from envs.executor import parse_call
from envs.task import bfcl_task
from rods_agents.analysis import knowledge
from rods_agents.analysis.profile import profile_task
from rods_agents.analysis.tracing import trace_task
from rods_agents.variation.anchored_plan import _masked, _parsed, anchored_plan, sibling_slot
from rods_agents.variation.entity_swaps import sectors_of
from rods_agents.variation.seed_anchor import Substitution


@lru_cache(maxsize=1)
def _train() -> dict:
    return {t.id: t for t in load_split("train")}


def _plans(seed_id: str) -> tuple:
    seed = _train()[seed_id]
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    plans = [anchored_plan(seed, profile, trace, random.Random(v), 0, slot=sibling_slot(seed.category, v))
             for v in range(2)]
    return seed, plans


def _scenario_plans(scenario: int) -> list[dict]:
    """The plans of a scenario's eight samples (four categories x two variants), each in its sibling slot."""
    return [plan for category in ("base", "miss_func", "miss_param", "long_context")
            for plan in _plans(f"multi_turn_{category}_{scenario}")[1]]


def _calls(gt: list[list[str]], name: str) -> list:
    return [parse_call(c) for turn in gt for c in turn if c.startswith(name + "(")]


def _new_beyond_digits(seed, plan) -> bool:
    return _masked(_parsed(plan["ground_truth"])) != _masked(_parsed(seed.ground_truth))


def test_dictated_message_gets_a_text_of_its_own():
    # base_51: the user dictates 'I am on my way to your place.'; ids and numbers are all else that can change
    seed, plans = _plans("multi_turn_base_51")
    old = _calls(seed.ground_truth, "send_message")[0].kwargs["message"]
    pool = knowledge.dictated()["sentences"][old]
    news = [_calls(p["ground_truth"], "send_message")[0].kwargs["message"] for p in plans]
    assert all(n in pool for n in news)
    assert news[0] != news[1]  # sibling variants send different texts
    assert all(_new_beyond_digits(seed, p) for p in plans)
    assert all(p["renames"].get(old) == n for p, n in zip(plans, news, strict=True))  # the text follows


def test_the_eight_samples_of_a_scenario_send_eight_texts():
    # scenario 51: every category dictates 'I am on my way to your place.' and nothing else can change beyond ids
    # and digits, so with three texts in the pool five of the eight samples were near-copies of the first three
    # (the same calls once digits are masked: the dedupe's sibling rejection)
    sent = [_calls(plan["ground_truth"], "send_message")[0].kwargs["message"] for plan in _scenario_plans(51)]
    assert len(set(sent)) == 8, sent


def test_the_samples_of_a_scenario_take_every_city_pair_the_tables_offer():
    # scenario 85 estimates the distance between two cities its text names. A pair and its reverse make the same
    # calls once zip codes are masked (a sibling copy), and the old slot formula left an option unused: the eight
    # samples held three distinct pairs
    from rods_agents.variation.draw import sibling_index

    pairs = [frozenset(c.args[0] if c.args else c.kwargs["city"]
                       for c in _calls(plan["ground_truth"], "get_zipcode_based_on_city")) for plan in _scenario_plans(85)]
    assert len(set(pairs)) == len(pairs) == 8, pairs  # no two samples drive between the same two cities
    assert len({sibling_index(s, 8) for s in range(8)}) == 8  # eight options: eight samples, eight options
    assert all(sibling_index(c, n) != sibling_index(c + 4, n) for n in (2, 3, 4, 5, 9) for c in range(4))


def test_a_flight_named_by_its_cities_flies_other_routes():
    # scenario 192 names both ends of its flight by city ('flying out of Rivermist ... to Los Angeles'): the assistant
    # looks the codes up. Only codes said as they are could move before, so the eight samples all flew RMS -> LAX
    # and five were refused as sibling copies. The new cities replace the old names, and the lookups find the codes
    from rods_agents.analysis.value_sources import airport_cities

    cities = airport_cities()
    routes = [{(c.kwargs["travel_from"], c.kwargs["travel_to"]) for c in _calls(plan["ground_truth"], "book_flight")}
              for plan in _scenario_plans(192)]
    assert all(len(r) == 1 for r in routes)
    assert len({next(iter(r)) for r in routes}) >= 4, routes
    for plan in _scenario_plans(192)[:4]:
        (src, dst), = {(c.kwargs["travel_from"], c.kwargs["travel_to"]) for c in _calls(plan["ground_truth"], "book_flight")}
        looked_up = [c.kwargs["location"] for c in _calls(plan["ground_truth"], "get_nearest_airport_by_city")]
        assert cities[src] in looked_up  # the city the user flies out of is the one whose airport was looked up


def test_a_route_the_text_names_by_a_city_alias_moves_and_the_alias_follows():
    # scenario 189 flies 'from NYC to Tokyo': an alias pinned the route, and all eight samples flew JFK -> HND. A
    # longer alias now follows the new city ('NYC' -> 'Chicago'), and routes with both ends new come first
    plans = [_plans_in_slot("multi_turn_base_189", v) for v in range(8)]
    moved = [p for p in plans if p["swaps"].get("JFK")]
    assert len(moved) >= 4, [p["swaps"] for p in plans]
    from rods_agents.analysis.value_sources import airport_cities

    for plan in moved:
        assert plan["swaps"]["NYC"] == airport_cities()[plan["swaps"]["JFK"]]
    assert any(plan["swaps"].get("HND") for plan in moved)  # both ends new where the table allows


def test_a_stock_only_the_watchlist_holds_is_taken_off_it_as_another_stock():
    # base_116 takes 'Zeta Corp' off a watchlist ['NVDA', 'OMEG', 'ZETA'] whose price table lacks ZETA: only stocks of
    # the table could be swapped, so all eight samples kept Zeta Corp (reads 62 and 63)
    plans = [_plans_in_slot("multi_turn_base_116", v) for v in range(8)]
    moved = [p for p in plans if p["swaps"].get("ZETA")]
    assert len(moved) >= 3, [p["swaps"] for p in plans]
    for plan in moved:
        new = plan["swaps"]["ZETA"]
        assert plan["swaps"]["Zeta Corp"] != "Zeta Corp"
        assert new in plan["initial_config"]["TradingBot"]["watch_list"]  # the list holds what the user removes
        assert _calls(plan["ground_truth"], "remove_stock_from_watchlist")[0].kwargs["symbol"] == new


def test_an_address_the_text_quotes_and_no_call_takes_becomes_another_street_of_its_town():
    # base_66: "If it is reachable, set navigation to '1914 7th St, Apt B, Berkeley, CA 94710'" (it is not, so no call
    # takes the address): it stayed in every sample (read 63)
    old = "1914 7th St, Apt B, Berkeley, CA 94710"
    _seed, plans = _plans("multi_turn_base_66")
    for plan in plans:
        new = plan["renames"].get(old)
        assert new and new.endswith("Berkeley, CA 94710") and not new.startswith("1914 7th St"), plan["renames"]


def test_an_airport_the_text_names_goes_to_another_airport_with_a_name_of_its_own():
    # base_173 flies 'to John F. Kennedy (JFK)': the airport's own name pinned the route in every sample (read 63).
    # It may now go to another named airport, whose name the text takes ("O'Hare (ORD)")
    from rods_agents.variation.donor_fit import _AIRPORT_NAMES

    plans = [_plans_in_slot("multi_turn_base_173", v) for v in range(8)]
    moved = [p for p in plans if p["swaps"].get("JFK")]
    assert moved, [p["swaps"] for p in plans]
    for plan in moved:
        assert plan["swaps"]["John F. Kennedy"] == _AIRPORT_NAMES[plan["swaps"]["JFK"]][0]


def test_a_folder_the_text_quotes_and_no_call_takes_is_renamed_in_the_state_too():
    # miss_func_42: "In my existing folder called 'Lectures', ..." (the folder the user works in; no call names it)
    # stayed in every sample (read 63)
    _seed, plans = _plans("multi_turn_miss_func_42")
    for plan in plans:
        new = plan["renames"].get("Lectures")
        assert new, plan["renames"]
        assert list(plan["initial_config"]["GorillaFileSystem"]["root"]) == [new]


def test_a_swapped_sector_brings_its_stocks_and_the_pick_by_place_follows_the_new_list():
    # base_131 lists the Technology stocks, then reads and buys 'the third stock in the list' (MSFT). TradingBot lists
    # F and GM under Automobile but prices neither, so every plan swapping the sector failed and Technology stayed
    # (14 of 19 variants that look a sector up; reads 62 and 63). The sector's stocks come into the state, and the
    # third stock of the new list is the one read and bought, in the text too
    from rods_agents.variation.entity_swaps import sector_lists

    plans = [_plans_in_slot("multi_turn_base_131", v) for v in range(8)]
    moved = [p for p in plans if p["swaps"].get("Technology")]
    assert moved, [p["swaps"] for p in plans]
    for plan in moved:
        third = sector_lists()[plan["swaps"]["Technology"]][2]
        assert plan["swaps"]["MSFT"] == third
        assert third in plan["initial_config"]["TradingBot"]["stocks"]
        assert _calls(plan["ground_truth"], "get_stock_info")[0].kwargs["symbol"] == third
        order = _calls(plan["ground_truth"], "place_order")[0].kwargs
        assert order["symbol"] == third
        assert order["price"] == plan["initial_config"]["TradingBot"]["stocks"][third]["price"]


def test_tweet_hashtags_follow_the_pool():
    seed, plans = _plans("multi_turn_base_68")
    tags = knowledge.dictated()["hashtags"]
    for plan in plans:
        tweet = _calls(plan["ground_truth"], "post_tweet")[0]
        assert all(t in tags["#Roadtrip"] + tags["#Adventure"] for t in tweet.kwargs["tags"])


def test_stock_outside_the_sector_lists_swaps_beside_a_sector_lookup():
    # base_105: 'Quasar Ltd.' and then the Technology sector's list; Quasar is no sector's, so it can change
    seed, plans = _plans("multi_turn_base_105")
    known = set(seed.initial_config["TradingBot"]["stocks"])
    for plan in plans:
        symbol = _calls(plan["ground_truth"], "get_stock_info")[0].kwargs.get("symbol") or \
            _calls(plan["ground_truth"], "get_stock_info")[0].args[0]
        assert symbol != "QUAS" and symbol in known and symbol not in sectors_of()
        assert plan["swaps"].get("Quasar Ltd.")  # the company's name follows the ticker
        # the sector's own stocks are still the ones added
        added = [c.kwargs.get("stock") or c.args[0] for c in _calls(plan["ground_truth"], "add_to_watchlist")]
        assert set(added) <= set(sectors_of())


def test_a_stock_a_sector_list_names_becomes_another_stock_of_that_sector():
    # base_128: the Technology sector's list, then 150 Microsoft shares; MSFT stayed in every plan, so all 8 variants
    # of the scenario were new only in digits. The list is the environment's: the new stock must be on it too
    seed, plans = _plans("multi_turn_base_128")
    bought = [_calls(p["ground_truth"], "place_order")[0].kwargs["symbol"] for p in plans]
    assert any(b != "MSFT" for b in bought), bought
    for plan, symbol in zip(plans, bought, strict=True):
        assert sectors_of()[symbol] == sectors_of()["MSFT"]  # what the Technology lookup lists
        if symbol != "MSFT":
            assert plan["swaps"].get("Microsoft")  # the text named the company: the new company's name follows


@pytest.mark.parametrize(("seed_id", "old", "new"), [("multi_turn_base_3", "cp", {"mv"}),
                                                     ("multi_turn_base_81", "mean", {"max_value", "min_value", "sum_values",
                                                                                     "standard_deviation"})])
def test_method_swapped_inside_its_skill_class(seed_id, old, new):
    seed, plans = _plans(seed_id)
    for plan in plans:
        names = {c.split("(")[0] for turn in plan["ground_truth"] for c in turn}
        assert old not in names and names & new
        assert any(s["from"] == old for s in plan["substitutions"])
        draft = seed.model_copy(update={"ground_truth": plan["ground_truth"], "initial_config": plan["initial_config"]})
        assert not trace_task(draft).errors  # the swapped ground truth still executes


def test_sector_swap_keeps_the_first_stock_of_a_shorter_list():
    # base_121: 'the initial stock symbol from that list' of the Technology sector (4 stocks); Automobile lists 3
    seed, plans = _plans("multi_turn_base_121")
    swapped = [p for p in plans if p["swaps"].get("Technology") == "Automobile"]
    assert swapped
    for plan in swapped:
        order = _calls(plan["ground_truth"], "place_order")[0].kwargs
        assert order["symbol"] == "TSLA"  # the Automobile list's first, re-derived by its position
        draft = seed.model_copy(update={"ground_truth": plan["ground_truth"], "initial_config": plan["initial_config"]})
        info = [r for r in trace_task(draft).calls if r.name == "get_stock_info"][0]
        assert str(order["price"]) in info.result  # the price the lookup printed


def test_default_user_becomes_another_person_in_the_state():
    # base_41: 'Forward it exactly to Bob'; the seed's state leaves MessageAPI's users to the environment's default
    seed, plans = _plans("multi_turn_base_41")
    for plan in plans:
        new = plan["renames"].get("Bob")
        assert new and new != "Bob"
        users = plan["initial_config"]["MessageAPI"]["user_map"]
        assert users[new] == "USR002" and "Bob" not in users  # the same id, another person the state knows
        assert _calls(plan["ground_truth"], "get_user_id")[0].kwargs["user"] == new
        draft = seed.model_copy(update={"ground_truth": plan["ground_truth"], "initial_config": plan["initial_config"]})
        assert not trace_task(draft).errors


def test_a_balance_the_task_says_is_never_resampled():
    # read 10, base_143: the dictated message says 'Current balance in my account is $10000.' after the account
    # lookup; a resampled balance of 9200 made the message wrong (a careful assistant would correct it)
    import copy

    from rods_agents.run.runtime import rng_for
    from rods_agents.variation.state_resample import resample_state

    seed = bfcl_task("multi_turn_base_143")
    trace = trace_task(seed)
    text = " ".join(m.content for t in seed.turns for m in t)
    for i in range(20):
        config = copy.deepcopy(seed.initial_config)
        resample_state(config, trace, rng_for("balance", i), text)
        assert config["TradingBot"]["account_info"]["balance"] == 10000.0


def test_another_stock_trades_near_the_old_ones_price():
    # read 10, long_context_142: 50 Zeta Corp shares ($7,500) became 50 Alpha Tech shares ($66,022) beside 'top up
    # $4,000 to make sure I've got enough cash'
    seed = _train().get("multi_turn_long_context_142")
    if seed is None:
        pytest.skip("not a train seed")
    stocks = seed.initial_config["TradingBot"]["stocks"]
    for v in range(4):
        plan = anchored_plan(seed, profile_task(seed, trace_task(seed)), trace_task(seed), random.Random(v), 0,
                             slot=sibling_slot(seed.category, v))
        symbol = _calls(plan["ground_truth"], "place_order")[0].kwargs["symbol"]
        assert 1 / 3 <= stocks[symbol]["price"] / stocks["ZETA"]["price"] <= 3, symbol


def test_a_story_without_sums_or_a_watchlist_may_trade_any_stock_of_its_sector():
    # scenario 128 buys '150 Microsoft shares at the going market rate' after the Technology lookup. The price band
    # (for stories that sum money) and the watchlist rule (for tasks that add to the list) left only AAPL, so the
    # eight samples made the same calls and seven were refused as sibling copies. Neither applies here
    bought = {_calls(plan["ground_truth"], "place_order")[0].kwargs["symbol"] for plan in _scenario_plans(128)}
    assert len(bought) >= 3 and bought <= {"AAPL", "GOOG", "NVDA"}, bought


def test_a_stock_picked_from_a_sector_list_by_its_place_stays():
    # read 11, miss_param_131: 'the third stock in the list' of the Technology lookup is MSFT; swapped for NVDA (same
    # sector) the ground truth looked up NVDA while the third stock listed is still MSFT
    seed = bfcl_task("multi_turn_miss_param_131")
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    from rods_agents.variation.entity_swaps import sector_lists

    for v in range(4):
        plan = anchored_plan(seed, profile, trace, random.Random(v), 0, slot=sibling_slot(seed.category, v))
        assert "MSFT" not in plan["renames"], plan["renames"]
        # it stays, or, where the sector is swapped, it is the third stock of the new sector's list
        new_sector = plan["swaps"].get("Technology")
        assert plan["swaps"].get("MSFT") == (sector_lists()[new_sector][2] if new_sector else None), plan["swaps"]


def test_a_stock_added_to_the_watchlist_never_becomes_one_already_on_it():
    """Read 18 (long_context_105): 'add AAPL, GOOG and MSFT to my watchlist' became AAPL -> NVDA where the list already
    held NVDA, so one add changed nothing. Over many draws, every stock a plan adds is still off the seed's list."""
    seed = _train()["multi_turn_long_context_105"]
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    watched = set(seed.initial_config["TradingBot"]["watch_list"])
    added = set()
    for v in range(16):
        plan = anchored_plan(seed, profile, trace, random.Random(v), 0, slot=sibling_slot(seed.category, v % 2))
        added |= {c.kwargs.get("stock") or c.args[0] for c in _calls(plan["ground_truth"], "add_to_watchlist")}
    assert added and not added & watched, added


def test_a_stock_a_dictated_tweet_names_is_swapped_in_the_tweet_too():
    # base_109 buys MSFT, then tweets '... a 100-share buy order for $MSFT ...': the tweet kept MSFT out of every
    # swap, so all eight samples of scenario 109 were new only in digits. The tweet now follows the stock
    seed = _train()["multi_turn_base_109"]
    trace = trace_task(seed)
    plans = [anchored_plan(seed, profile_task(seed, trace), trace, random.Random(v), 0,
                           slot=sibling_slot(seed.category, v % 2)) for v in range(6)]
    swapped = [p for p in plans if p["swaps"].get("MSFT")]
    assert swapped, [p["swaps"] for p in plans]
    for plan in swapped:
        new = plan["swaps"]["MSFT"]
        tweet = _calls(plan["ground_truth"], "post_tweet")[0].kwargs["content"]
        assert f"${new}" in tweet and "MSFT" not in tweet
        assert {c.kwargs["symbol"] for c in _calls(plan["ground_truth"], "place_order")} == {new}
        assert _new_beyond_digits(seed, plan)


def test_a_file_name_only_the_long_context_data_lists_is_renamed_outside_long_context():
    # 'file3.txt' is in BFCL's FILES_TAIL_USED, read only when a task loads with long_context=True: base_49 may
    # rename it (all eight samples of scenario 49 were new only in digits), long_context_49 may not
    seed, plans = _plans("multi_turn_base_49")
    assert any(p["renames"].get("file3.txt") for p in plans), [p["renames"] for p in plans]
    assert all(_new_beyond_digits(seed, p) for p in plans)
    _, long_plans = _plans("multi_turn_long_context_49")
    assert not any(p.get("renames", {}).get("file3.txt") for p in long_plans)


def test_a_stock_only_the_seeds_config_lists_becomes_one_the_environment_knows():
    # base_115 prices Amazon, which the seed's stock table holds but no lookup of the environment names; every one
    # of scenario 115's eight samples kept AMZN and was new only in digits. The new stock is a known one, and the
    # condition 'promising: a price larger than 300' still holds for it
    from rods_agents.analysis.faithfulness import known_symbols

    seed, plans = _plans("multi_turn_base_115")
    swapped = [p for p in plans if p["swaps"].get("AMZN")]
    assert swapped, [p["swaps"] for p in plans]
    stocks = seed.initial_config["TradingBot"]["stocks"]
    for plan in swapped:
        new = plan["swaps"]["AMZN"]
        assert new in known_symbols(seed.long_context) and stocks[new]["price"] > 300
        assert _calls(plan["ground_truth"], "add_to_watchlist")[0].kwargs["stock"] == new
        assert _new_beyond_digits(seed, plan)


def test_zip_codes_the_user_states_become_another_pair_and_the_tire_shop_stays_the_environments():
    # base_92 states the zip codes itself ('Rivermist (zip 83214) to Greenway (zip 74532)'): the codes and the
    # names beside them change together; the tire shop's address is read from find_nearest_tire_shop, whose answer
    # does not move with the trip, so it stays what the environment says (the swap once wrote the new city into it)
    from rods_agents.analysis.knowledge import zip_codes
    from rods_agents.analysis.novelty import new_only_in_digits

    seed = _train()["multi_turn_base_92"]
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    plans = [anchored_plan(seed, profile, trace, random.Random(v), 0, slot=sibling_slot(seed.category, v) + 16 * k)
             for v in range(2) for k in range(3)]
    swapped = [p for p in plans if p["swaps"].get("83214") or p["swaps"].get("74532")]
    assert swapped, [p["swaps"] for p in plans]
    cities = {z: c for c, z in zip_codes().items()}
    shop = json.loads(next(r.result for r in trace.calls if r.name == "find_nearest_tire_shop"))["shopLocation"]
    for plan in swapped:
        call = _calls(plan["ground_truth"], "estimate_distance")[0]
        pair = (call.kwargs["cityA"], call.kwargs["cityB"])
        assert pair != ("83214", "74532") and all(z in cities for z in pair)
        assert _calls(plan["ground_truth"], "set_navigation")[0].kwargs["destination"] == shop
        if plan["swaps"].get("83214"):
            assert plan["swaps"]["Rivermist"] == cities[plan["swaps"]["83214"]]
        if plan["swaps"].get("74532"):
            assert plan["swaps"]["Greenway"] == cities[plan["swaps"]["74532"]]
        variant = seed.model_copy(update={"ground_truth": plan["ground_truth"], "initial_config": plan["initial_config"],
                                          "turns": [[m.model_copy(update={"content": "new words"}) for m in t]
                                                    for t in seed.turns]})
        assert not new_only_in_digits(variant, seed)  # another trip, not the same one with other numbers


def test_a_renamed_folder_inside_a_found_path_is_followed():
    # base_28: find returns './data/analysis_report.txt' and the task then cds into 'data'. A rename of 'data' used
    # to end the plan (the folder is a middle part of the path, not a leaf), so scenario 28 kept every name
    seed, plans = _plans("multi_turn_base_28")
    renamed = [p for p in plans if p["renames"].get("data")]
    assert renamed, [p["renames"] for p in plans]
    for plan in renamed:
        assert _calls(plan["ground_truth"], "cd")[0].kwargs["folder"] == plan["renames"]["data"]
        assert _new_beyond_digits(seed, plan)


def test_a_company_name_ending_a_sentence_keeps_one_full_stop():
    # 'Pull up the stock info for {company}.' with 'Quasar Ltd.' read 'Quasar Ltd..'; 'cd ..' stays as it is
    from envs.task import Message
    from rods_agents.stages.coherence_rewrite import build_variant
    from rods_agents.variation.plan import Plan

    seed = _train()["multi_turn_base_115"]
    turns = [[Message(role="user", content="Pull up the stock info for Quasar Ltd.. Then go up with cd .. please. "
                                           "Pay with card card_0901.")]]
    plan = Plan(ground_truth=seed.ground_truth, initial_config=seed.initial_config)
    task = build_variant(seed, turns + seed.turns[1:], plan, 0, 0)
    assert task.turns[0][0].content == ("Pull up the stock info for Quasar Ltd. Then go up with cd .. please. "
                                        "Pay with card ID card_0901.")  # not 'card card_0901' (read 24)


def test_a_made_up_company_becomes_another_made_up_one():
    # read of 2026-12-05, pair 17: 'Quasar Ltd.' became 'Microsoft', whose ticker the assistant knows without the
    # get_symbol_by_name lookup the seed needs. A made-up company the text names by name stays made up
    from rods_agents.analysis.value_sources import household_tickers

    household = household_tickers()
    companies = knowledge.value_pools()["company_of_ticker"]
    swapped = []
    for scenario in (105, 107, 113, 134, 137, 142, 143):
        for plan in _scenario_plans(scenario):
            swapped += [(old, plan["swaps"].get(old)) for name, old in ((n, t) for t, n in companies.items())
                        if name in plan["swaps"] and old not in household]
    assert len(swapped) >= 8, swapped
    assert not [new for _, new in swapped if new in household], swapped


def test_a_stock_picked_by_what_its_company_makes_swaps_with_its_words_its_watchlist_place_and_its_price():
    # scenario 108: 'let's act on one that's making GPUs' picks NVDA from the watchlist; the stock named in neither
    # form never swapped, so all eight samples were new only in digits. The words, the watchlist entry and the
    # price read from the new stock's info follow the swap, in long context too, where a moving average in the
    # padded result happened to equal NVDA's price and the stale 220.34 was kept
    from rods_agents.analysis.value_sources import ticker_products

    products = ticker_products()
    plans = _scenario_plans(108)
    swapped = [p for p in plans if p["swaps"].get("NVDA")]
    assert len(swapped) >= 6, [p["swaps"] for p in plans]
    for plan in swapped:
        new = plan["swaps"]["NVDA"]
        assert plan["swaps"]["making GPUs"] == products[new]
        assert plan["initial_config"]["TradingBot"]["watch_list"] == [new]
        order = _calls(plan["ground_truth"], "place_order")[0].kwargs
        assert order["symbol"] == new
        assert order["price"] == plan["initial_config"]["TradingBot"]["stocks"][new]["price"]


def test_a_task_with_nothing_but_numbers_to_change_yields_one_variant_in_words_of_its_own():
    # base_94 (feasibility, refuel, tires, start): every string argument is an option or the environment's own tire
    # shop, so every variant of scenario 94 was refused as new only in digits and the scenario got nothing. One
    # variant with its own words, numbers and vehicle state is taken; a sibling with the same calls is a copy
    from graphs.synthesis import synthesize
    from rods_agents.analysis.novelty import _masked_calls, containment, masked_text
    from rods_agents.stages.state import SynthesisContext
    from rods_agents.variation.draw import numbers_only

    train = _train()
    assert numbers_only(train["multi_turn_base_94"]) and numbers_only(train["multi_turn_base_84"])
    assert not numbers_only(train["multi_turn_base_108"]) and not numbers_only(train["multi_turn_base_51"])
    seeds = [train[f"multi_turn_{c}_94"] for c in ("base", "miss_func")]
    result = synthesize(seeds, SynthesisContext(seed=3, variants_per_seed=2))
    assert len(result.accepted) == 1, [r["reasons"] for r in result.rejected]
    variant, seed = result.accepted[0], seeds[0]
    assert _masked_calls(variant) == _masked_calls(seed) and variant.ground_truth != seed.ground_truth
    assert containment(masked_text(variant), masked_text(seed), mask=True) <= 0.5
    assert all(any("sibling_copy" in x or "seed_text_copy" in x for x in r["reasons"]) for r in result.rejected)


def test_a_swap_or_a_new_hashtag_never_duplicates_what_the_state_already_holds():
    # read of 2026-12-05: MSFT -> NVDA left the watchlist ['NVDA', 'NVDA'] (scenario 128), and '#Adventure' ->
    # '#Explore' left a tweet tagged ['#explore', '#explore', '#travel'] (scenario 68)
    for plan in _scenario_plans(128):
        listed = plan["initial_config"]["TradingBot"].get("watch_list") or []
        assert len(listed) == len(set(listed)), (plan["swaps"], listed)
    for plan in _scenario_plans(68):
        state = json.dumps(_train()["multi_turn_base_68"].initial_config).lower()
        for old, new in plan["renames"].items():
            if old.startswith("#"):
                assert new.lower() not in state, (old, new)


def test_a_login_grant_the_later_calls_rely_on_is_never_swapped():
    """Read 26 (base_193): the plan swapped authenticate_travel's grant 'read_write' for 'read', so the user asked for
    'read access' and then booked and cancelled a flight with that token. The grant is listed as unswapped
    (offline_value_kinds.json) and every plan of the scenario keeps it (fails without method_swap's check)."""
    grants = {_calls(plan["ground_truth"], "authenticate_travel")[0].kwargs["grant_type"]
              for plan in _scenario_plans(193)}
    assert grants == {"read_write"}, grants
    assert "authenticate_travel.grant_type" in knowledge.value_pools()["unswapped"]


def test_a_seed_turn_kept_word_for_word_is_found_with_its_names_swapped():
    """kept_seed_turns names the turns that are the seed's sentences (names masked), the per-turn view of a copy the
    whole-text check lets through; a re-worded turn and a short answer are not counted."""
    from envs.task import bfcl_task
    from rods_agents.analysis.novelty import kept_seed_turns

    seed = bfcl_task("multi_turn_base_112")
    first = next(m.content for m in seed.turns[0] if m.role == "user")
    assert "Technology" in first
    turns = [list(t) for t in seed.turns]
    turns[0] = [m.model_copy(update={"content": m.content.replace("Technology", "Automobile")}) for m in turns[0]]
    gt = [[c.replace("Technology", "Automobile") for c in calls] for calls in seed.ground_truth]
    turns[1] = [m.model_copy(update={"content": "Could you show me what that stock is trading at?"})
                if m.role == "user" else m for m in turns[1]]
    variant = seed.model_copy(update={"turns": turns, "ground_truth": gt})
    assert kept_seed_turns(variant, seed) == [t for t in range(len(seed.turns)) if t != 1]  # untouched turns kept too
    assert kept_seed_turns(seed.model_copy(update={"turns": [[m.model_copy(update={"content": "Yes, do it."})
                                                               for m in t] for t in seed.turns]}), seed) == []


def test_a_turn_a_later_call_writes_down_is_kept_only_when_its_words_are_the_seeds():
    """base_29's turn 1 is the very text its echo writes ('Write my last question in it'): masked as an entity, the
    whole turn was '#' in seed and variant alike, so a re-worded turn counted as the seed's sentence kept."""
    from envs.task import bfcl_task
    from rods_agents.analysis.novelty import kept_seed_turns

    seed = bfcl_task("multi_turn_base_29")
    old = next(m.content for m in seed.turns[1] if m.role == "user")
    new = "Please create a file named according to the number of bytes used. Its format should match 'number.pdf'."
    turns = [list(t) for t in seed.turns]
    turns[1] = [m.model_copy(update={"content": new}) if m.role == "user" else m for m in turns[1]]
    gt = [[c.replace(old.replace("'", "\\'"), new.replace("'", "\\'")) for c in calls] for calls in seed.ground_truth]
    assert gt != seed.ground_truth
    variant = seed.model_copy(update={"turns": turns, "ground_truth": gt})
    assert 1 not in kept_seed_turns(variant, seed)
    assert 1 in kept_seed_turns(seed, seed)


def test_a_number_said_again_with_another_unit_keeps_it_while_the_argument_changes():
    """base_84 fills '30 gallons' and later checks for 'less than 30.0 psi': the number stayed in every plan (the
    second 30 is no argument), so all eight samples had the seed's ground truth and scenario 84 had no variant. The
    fill may now change where the other 30 has another unit, and only the gallons change in the words."""
    from rods_agents.variation.seed_anchor import number_for, substitute_numbers

    text = "Refuel it with 30 gallons. If it's below 30.0 psi, go to the shop. Thirty minutes later, call me."
    assert substitute_numbers(text, {"30|gallons": 25}) == text.replace("30 gallons", "25 gallons")
    assert substitute_numbers(text, {"30": 25}).count("25") == 3  # without a unit every 30 changes, as before
    assert number_for({"30|gallons": 25}, 30) == 25 and number_for({"30|gallons": 25}, 31) == 31
    changed = []
    for plan in _scenario_plans(84):
        fills = _calls(plan["ground_truth"], "fillFuelTank")
        changed.append(fills[0].kwargs["fuelAmount"] != 30)
        assert "psi" not in json.dumps(plan.get("numbers", {}))
    assert any(changed)


def test_a_dictated_text_a_search_finds_keeps_the_searched_word():
    """base_33 greps 'update' in a script and sends 'the first update you have found', dictated as 'update the
    system': the plan swapped in 'patch the system' (in the file too), which the grep finds no more, so 'the first
    update' pointed at another line (read 29). A new text now keeps every shorter argument it contains."""
    for plan in _scenario_plans(33):
        new = plan["renames"].get("update the system")
        if new is not None:
            assert "update" in new.lower(), new
        sent = _calls(plan["ground_truth"], "send_message")[0].kwargs["message"]
        assert "update" in sent.lower()


def test_people_the_text_names_from_the_user_map_get_other_names_of_their_gender():
    """miss_param_91 says 'Hi, I am Kelly' and sends to Michael ('He should know ...'), whose id the assistant finds in
    the user map: no call takes either name, so every sample kept both (read 29: 'every entity is still the seed's').
    They now get other first names of the same gender, in the map too, so finding the id stays the assistant's."""
    from rods_agents.variation.value_kinds import first_names, pools

    known = pools()["seed_name_genders"]
    renamed = 0
    for plan in _scenario_plans(91):
        users = plan["initial_config"]["MessageAPI"]["user_map"]
        assert len(users) == 4  # one entry per person: renamed, never added or lost
        for old, gender in (("Kelly", "she"), ("Michael", "he")):
            new = plan["renames"].get(old)
            if new is not None:
                renamed += 1
                assert old in known[gender] and new in first_names(gender)
                assert old not in users and new in users
    assert renamed >= 8


def test_most_plans_give_a_stated_amount_another_value():
    """'the acquisition of 150 Microsoft shares' (base_128): an amount the user states is an entity a reader sees; at
    one plan in two it stayed the seed's in half the scenario's samples (read 29: 'every entity is still the seed's').
    Four plans in five change it now where it may change."""
    changed = sum(bool(plan.get("numbers")) for plan in _scenario_plans(128))
    assert changed >= 6, changed


def test_a_household_company_the_text_names_becomes_another_household_company():
    """base_115 names Amazon, which a user may buy by name with no lookup; a plan swapped in 'Synex Solutions', whose
    ticker only get_symbol_by_name knows, and the ground truth makes no such lookup (read 30). A household name now
    becomes another household name."""
    from rods_agents.analysis.value_sources import household_tickers

    household = household_tickers()
    swapped = [plan["swaps"]["AMZN"] for plan in _scenario_plans(115) if "AMZN" in plan.get("swaps", {})]
    assert swapped and all(s in household for s in swapped), swapped


def test_a_mentioned_account_becomes_another_of_its_role_in_the_tweet_and_the_state():
    """base_188 mentions '@TravelBuddy' in its tweet, and the state's own tweet 0 (retweeted later) mentions it too:
    post_tweet.mentions was the seed's in all 46 accepted variants that mention someone. A plan mentions another
    travel friend from the pool, and the state's tweet follows the rename, so the retweet is of the same text."""
    seed, plans = _plans("multi_turn_base_188")
    friends = knowledge.dictated()["handles"]["@TravelBuddy"]
    for plan in plans:
        mentions = _calls(plan["ground_truth"], "post_tweet")[0].kwargs["mentions"]
        assert mentions != ["@TravelBuddy"] and set(mentions) <= set(friends), mentions
        state = json.dumps(plan["initial_config"]["TwitterAPI"])
        assert "@TravelBuddy" not in state and mentions[0] in state


def test_a_ticket_title_changes_its_head_noun_in_a_first_draw():
    """'Billing Concern' (base_190) and 'Platform Error' (base_148) were kept in 49 of the 56 accepted variants that
    file a ticket: a title changed only in a forced draw. Now most first draws give it another head noun, same
    subject ('Billing Complaint'), and the text says the new title."""
    titles = set()
    for seed_id in ("multi_turn_base_190", "multi_turn_base_148"):
        seed, plans = _plans(seed_id)
        old = _calls(seed.ground_truth, "create_ticket")[0].kwargs["title"]
        for plan in plans:
            new = _calls(plan["ground_truth"], "create_ticket")[0].kwargs["title"]
            titles.add(new)
            assert new.split()[0] == old.split()[0]  # the same subject
    assert titles - {"Billing Concern", "Platform Error"}, titles
    # base_148's description says 'a recent trading platform error': the title's words inside a dictated text stay
    seed, plans = _plans("multi_turn_base_148")
    for plan in plans:
        ticket = _calls(plan["ground_truth"], "create_ticket")[0].kwargs
        assert "platform error" in ticket["description"].lower() and ticket["title"] == "Platform Error"


def test_a_currency_said_in_words_follows_its_swap():
    """base_173 asks for the fare 'in pounds sterling': GBP, said only in words, was kept in 24 of the 26 exchange
    rate variants. A plan that swaps it says the new currency in words in that turn."""
    from rods_agents.variation.value_kinds import mode_words

    words = mode_words("compute_exchange_rate", "target_currency")
    seed = _train()["multi_turn_base_173"]
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    swapped = []
    for v in range(8):
        plan = anchored_plan(seed, profile, trace, random.Random(v), 0, slot=sibling_slot(seed.category, v))
        new = _calls(plan["ground_truth"], "compute_exchange_rate")[0].kwargs["target_currency"]
        if new != "GBP":
            swapped.append(new)
            said = [list(p) for entry in plan["phrases"] for p in entry["phrases"]]
            assert ["pounds sterling", words[new][1]] in said, said
    assert swapped


def test_most_draws_of_a_stated_route_fly_another_route():
    """book_flight's route was the seed's in 65 of 134 accepted variants that book one: a route swap was tried in 70%
    of draws only. Now nine in ten try it; of base_199's eight sibling draws, most fly another route the fare table
    prices."""
    seed = _train()["multi_turn_base_199"]
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    old = _calls(seed.ground_truth, "book_flight")[0].kwargs
    moved = 0
    for v in range(8):
        plan = anchored_plan(seed, profile, trace, random.Random(v), 0, slot=sibling_slot(seed.category, v))
        new = _calls(plan["ground_truth"], "book_flight")[0].kwargs
        moved += (new["travel_from"], new["travel_to"]) != (old["travel_from"], old["travel_to"])
    assert moved >= 6, moved


def test_a_dictated_tweet_holding_a_swapped_city_gets_a_text_of_its_own_with_the_new_city():
    # base_77 tweets 'Setting forth on an exciting quest from San Francisco to Stonebrook to uncover ancestral
    # stories!'; a tweet holding a value the plan changes had stayed the seed's sentence with the cities swapped
    # (read 40). It is now another text of the pool, with the plan's cities in it
    old = "Setting forth on an exciting quest from San Francisco to Stonebrook to uncover ancestral stories!"
    seed, plans = _plans("multi_turn_base_77")
    pool = knowledge.dictated()["sentences"][old]
    for plan in plans:
        tweet = _calls(plan["ground_truth"], "post_tweet")[0].kwargs["content"]
        cities = {old: plan["swaps"].get(old, old) for old in ("San Francisco", "Stonebrook")}
        assert all(c in tweet for c in cities.values()) and "exciting quest" not in tweet, tweet
        back = Substitution({new: old for old, new in cities.items()}).text(tweet)
        assert back in pool  # the pool's text, with the plan's cities in it
    assert any(p["swaps"].get("Stonebrook") for p in plans)
    # both ends new first: a pair keeping the seed's San Francisco keeps its trip (reads 59-61)
    assert any(set(p["swaps"]) >= {"San Francisco", "Stonebrook"} for p in plans)


def test_a_handle_the_text_names_without_its_at_sign_changes_in_the_text_too():
    # base_18 tweets a diff "mentioning Jerry" (mentions=['@Jerry']): the handle was kept in all eight samples of the
    # scenario, since only hashtags were looked for bare. The mention and the text's word for it change together
    seed, plans = _plans("multi_turn_base_18")
    for plan in plans:
        mentions = _calls(plan["ground_truth"], "post_tweet")[0].kwargs["mentions"]
        assert mentions != ["@Jerry"], mentions
        assert plan["renames"]["Jerry"] == mentions[0].lstrip("@")  # the text says the new name where it said Jerry


def test_hashtags_the_text_quotes_without_their_hash_change_in_the_text_too():
    # base_151: "add relevant hashtags 'TravelUpdate' and 'BusinessTrip'" kept both tags in all 8 samples
    seed, plans = _plans("multi_turn_base_151")
    for plan in plans:
        tags = _calls(plan["ground_truth"], "post_tweet")[0].kwargs["tags"]
        assert not {"#TravelUpdate", "#BusinessTrip"} & set(tags), tags
        assert all(plan["renames"][old.lstrip("#")] == new.lstrip("#")
                   for old, new in plan["renames"].items() if old in ("#TravelUpdate", "#BusinessTrip"))


def test_a_message_read_from_a_file_and_forwarded_changes_in_the_file_too():
    # base_41: 'Where is my notes? Forward it exactly to Bob': no turn says the message, the file holds it, and it
    # stayed 'Meeting notes and project details.' in 6 of 8 samples. The file and the message change together
    seed, plans = _plans("multi_turn_base_41")
    old = "Meeting notes and project details."
    sent = [_calls(p["ground_truth"], "send_message")[0].kwargs["message"] for p in plans]
    assert old not in sent and len(set(sent)) == 2, sent
    for plan, message in zip(plans, sent, strict=True):
        assert message in json.dumps(plan["initial_config"]) and old not in json.dumps(plan["initial_config"])


def test_a_name_inside_a_composed_message_is_renamed_there_and_in_the_file():
    # base_17 messages Kelly 'Kelly Total Score: 96', read from Kelly's report in the format the user gives: the name
    # fed a composed value and sat inside a file, so all 8 samples kept Kelly. A renamed person is renamed in all three
    seed, plans = _plans("multi_turn_base_17")
    for plan in plans:
        new = plan["renames"].get("Kelly")
        assert new, plan["renames"]
        assert _calls(plan["ground_truth"], "add_contact")[0].kwargs["user_name"] == new
        assert _calls(plan["ground_truth"], "send_message")[0].kwargs["message"] == f"{new} Total Score: 96"
        assert "Kelly" not in json.dumps(plan["initial_config"])


def test_a_number_a_dictated_text_repeats_changes_in_the_text_too():
    # base_110 buys 100 shares and later dictates a ticket 'a canceled buy order for 100 shares of AAPL': a number
    # inside a text argument stayed, so all 8 samples of scenario 110 bought 100 shares. The quoted text follows it
    amounts = []
    for v in range(4):
        seed = _train()["multi_turn_base_110"]
        trace = trace_task(seed)
        plan = anchored_plan(seed, profile_task(seed, trace), trace, random.Random(v), 0,
                             slot=sibling_slot(seed.category, v % 2))
        amount = _calls(plan["ground_truth"], "place_order")[0].kwargs["amount"]
        description = _calls(plan["ground_truth"], "create_ticket")[0].kwargs["description"]
        assert f"for {amount} shares" in description, (amount, description)
        amounts.append(amount)
    assert set(amounts) - {100}, amounts


def test_an_insurance_type_the_text_names_is_swapped_and_one_it_only_hints_at_stays():
    # 'comprehensive' was kept in every insurance purchase (26 of 26 variants): base_187 names it ('purchase
    # comprehensive travel insurance'), so another type may take its place there; base_197 only says the policy
    # 'should comprehensively cover the journey', words the swap cannot carry, so its type stays
    seed, plans = _plans("multi_turn_base_187")
    for plan in plans:
        new = plan["swaps"].get("comprehensive")
        assert new in ("premium", "standard", "basic"), plan["swaps"]
        assert [c.kwargs["insurance_type"] for c in _calls(plan["ground_truth"], "purchase_insurance")] == [new]
    seed, plans = _plans("multi_turn_base_197")
    assert all("comprehensive" not in p["swaps"] for p in plans)


def test_a_message_quoted_without_its_full_stop_gets_a_text_of_its_own():
    # scenario 184 quotes "'Hi Sam, my travel plans have changed. I'll update you soon'." and sends it with the full
    # stop: the text was not found as quoted, so the message stayed the seed's (read 41: 'the same message'), Sam
    # renamed. (base_184 writes "I\'ll" with its backslash, which no pool text matches: it keeps the seed's.)
    old = "Hi Sam, my travel plans have changed. I'll update you soon."
    seed, plans = _plans("multi_turn_miss_param_184")
    for plan in plans:
        sent = _calls(plan["ground_truth"], "send_message")[0].kwargs["message"]
        name = plan["renames"]["Sam"]
        assert sent != old.replace("Sam", name) and sent.startswith(f"Hi {name},"), sent
        assert plan["renames"][old.rstrip(".")] == sent.rstrip(".")  # the turn's quote, as it is written there


def test_a_dictated_tweet_takes_a_text_of_its_own_with_the_plans_stock_and_amount():
    # base_109's tweet 'Just made a move ... a 100-share buy order for $MSFT ...' kept its sentence with the symbol
    # swapped (reads 39 and 41); a pool text now takes its place, with the plan's stock and share count in it
    seed, plans = _plans("multi_turn_base_109")
    for plan in plans:
        tweet = _calls(plan["ground_truth"], "post_tweet")[0].kwargs["content"]
        amount = _calls(plan["ground_truth"], "place_order")[0].kwargs["amount"]
        symbol = _calls(plan["ground_truth"], "place_order")[0].kwargs["symbol"]
        assert "Just made a move" not in tweet and f"${symbol}" in tweet and f"{amount}-share" in tweet, tweet


def test_a_variant_keeping_one_long_seed_turn_is_refused():
    """A variant re-worded everywhere but one long turn passes the whole-text copy check; readers mark it 'partly new'
    (read 41: 'Could you kindly dispatch the message ... to my colleague' kept around a new message). The verdict now
    names that turn. (The ground truth here is the seed's, so ``digits_only`` is set aside: the text is what counts.)"""
    from envs.task import bfcl_task
    from rods_agents.analysis.novelty import containment, masked_text, seed_copy_reasons

    seed = bfcl_task("multi_turn_base_110")
    fresh = ["Which stocks am I following at the moment? List every symbol you find there for me, please.",
             "Buy a hundred of the last one at market.",
             "Now walk me through that trade: its status, its price and how many shares it covers.",
             "On second thought, I no longer want that purchase; please call it off and confirm.",
             "Next, I would love a quick look at my balance and whatever else the account page shows.",
             "Lastly, open a priority three support request about this whole episode on my behalf."]

    def with_turns(keep: int | None):
        return seed.model_copy(update={"turns": [
            [m.model_copy(update={"content": fresh[t]}) if m.role == "user" and t != keep else m for m in turn]
            for t, turn in enumerate(seed.turns)]})

    def text_reasons(variant):
        return [r.split(" text=")[0] for r in seed_copy_reasons(variant, seed) if not r.startswith("novelty:digits_only")]

    kept = with_turns(1)
    assert containment(masked_text(kept), masked_text(seed), mask=True) <= 0.6  # the whole-text check passes it
    assert text_reasons(kept) == ["novelty:seed_turn_kept turn=1"]
    assert text_reasons(with_turns(None)) == []


def _counter_read_back(plan, counter: str, readers: tuple[str, ...], param: str) -> int:
    """The plan's counter (class.key) after every call of ``readers`` was checked to read that id back."""
    cls, key = counter.split(".")
    value = plan.initial_config[cls][key]
    read = [c for t in plan.ground_truth for c in t if c.startswith(readers)]
    assert read and all(c.endswith(f"({param}={value})") for c in read), (value, read)
    return value


def _first_plans(seed_id: str, n: int = 4) -> tuple:
    """The seed and the first ``n`` offline plans run seed 3 draws for it (the benchmark's draws)."""
    from envs.task import bfcl_task
    from rods_agents.analysis.profile import profile_task
    from rods_agents.analysis.tracing import trace_task
    from rods_agents.run.runtime import rng_for
    from rods_agents.stages.plan_sampling import sample_variant_plan

    seed = bfcl_task(seed_id)
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    return seed, [sample_variant_plan(seed, profile, trace, rng_for(3, seed.id, k, 0)) for k in range(n)]


def test_a_ticket_id_the_plan_renumbers_is_renumbered_in_the_queue_too():
    """base_160 closes ticket 83912. A plan drawing a new id closed a ticket the queue did not hold, so every level of
    the plan with numbers failed and the 20,000 RMB and the $2500 cap stayed the seed's in all 8 samples."""
    renumbered = 0
    for plan in _first_plans("multi_turn_base_160")[1]:
        closed = int(plan.ground_truth[-1][0].split("=")[1].rstrip(")"))
        queue = [t["id"] for t in plan.initial_config["TicketAPI"]["ticket_queue"]]
        assert closed in queue, (closed, queue)
        renumbered += closed != 83912
    assert renumbered >= 2


def test_a_ticket_the_task_creates_gets_another_id_and_the_calls_reading_it_follow():
    """base_60 creates a ticket and reads its id back ('get_ticket(2)'): TicketAPI numbers tickets itself, so every
    variant kept id 2 until the plan moved the queue's counter."""
    counters = [_counter_read_back(plan, "TicketAPI.ticket_counter", ("get_ticket", "close_ticket"), "ticket_id")
                for plan in _first_plans("multi_turn_base_60")[1]]
    assert sum(c != 2 for c in counters) >= 2, counters


def test_an_order_a_buy_the_balance_cannot_cover_creates_gets_another_id_once_funded():
    """base_110 buys, then reads the order back by its id (12446, the TradingBot's counter). A plan's buy that the
    balance cannot cover creates its order only after the config patch agent funds it, so the new id is read off the
    repaired state; before, get_order_details kept 12446 in 91 of the accepted variants."""
    from rods_agents.analysis.tracing import trace_task
    from rods_agents.variation.plan_checks import repaired_config

    seed, plans = _first_plans("multi_turn_base_110")
    moved = 0
    for plan in plans:
        draft = seed.model_copy(update={"ground_truth": plan.ground_truth, "initial_config": plan.initial_config})
        fixed = repaired_config(draft)
        assert fixed is not None
        vtrace = trace_task(draft.model_copy(update={"initial_config": fixed}))
        assert not vtrace.errors, vtrace.errors[:1]
        counter = _counter_read_back(plan, "TradingBot.order_counter", ("get_order_details", "cancel_order"), "order_id")
        moved += counter != 12446
    assert moved >= 3


def test_a_booked_flight_gets_a_booking_id_of_its_own():
    """TravelAPI draws booking ids from its seeded generator, so every flight booked from the default seed was booking
    3426812: 122 of 126 accepted variants' invoices and cancellations kept it. A plan draws another random_seed, and
    the ids the later turns read back (the invoice's booking, the support message's) follow the new draw."""
    from rods_agents.analysis.tracing import trace_task

    seed, plans = _first_plans("multi_turn_base_199")
    booked = set()
    for plan in plans:
        vtrace = trace_task(seed.model_copy(update={"ground_truth": plan.ground_truth,
                                                    "initial_config": plan.initial_config}))
        assert not vtrace.errors, vtrace.errors[:1]
        booking = json.loads(next(r.result for r in vtrace.calls if r.name == "book_flight"))["booking_id"]
        readers = [c for t in plan.ground_truth for c in t if c.startswith(("retrieve_invoice", "contact_customer"))]
        assert readers and all(f"booking_id='{booking}'" in c for c in readers), (booking, readers)
        booked.add(booking)
    assert "3426812" not in booked and len(booked) > 1, booked


def test_a_default_users_id_the_user_states_gets_new_digits_in_the_text_and_the_user_map():
    """base_51 says 'my cousin (user id USR002) ... my user id is USR001' and leaves the user map to the
    environment's default, so both ids were kept in all 8 samples of scenarios 14, 17, 51 and 62. A plan now gives
    them new digits and writes the default map, renamed, into the state: the login and the message still work."""
    from rods_agents.analysis.tracing import trace_task

    seed, plans = _first_plans("multi_turn_base_51", 2)
    for plan in plans:
        assert {"USR001", "USR002"} <= set(plan.renames), plan.renames
        users = set(plan.initial_config["MessageAPI"]["user_map"].values())
        assert {plan.renames["USR001"], plan.renames["USR002"]} <= users and not {"USR001", "USR002"} & users
        vtrace = trace_task(seed.model_copy(update={"ground_truth": plan.ground_truth,
                                                    "initial_config": plan.initial_config}))
        assert not vtrace.errors, vtrace.errors[:1]
        assert f"message_login(user_id='{plan.renames['USR001']}')" in plan.ground_truth[3]


def test_a_stated_fill_changes_beside_the_same_number_in_another_unit():
    """base_75 fills 'an additional 30 gallons' and tweets 'Rear Left Tire: 30 PSI': the 30 inside the tweet kept the
    fill's 30 in every sample. The fill now changes where only the gallons say it; the tweet's PSI stay the state's."""
    seed, plans = _first_plans("multi_turn_base_75")
    fills = set()
    for plan in plans:
        fills.add(next(c for t in plan.ground_truth for c in t if c.startswith("fillFuelTank")))
        tweet = next(c for t in plan.ground_truth for c in t if c.startswith("post_tweet"))
        assert "Rear Left Tire: 30 PSI" in tweet, tweet
    assert fills - {"fillFuelTank(fuelAmount=30.0)"}, fills


def test_a_stated_ticket_priority_moves_one_step_inside_the_accepted_range():
    """create_ticket's priority is a numbered choice (1-5): it was kept in all 48 accepted variants that create a
    ticket. It now moves one step, never out of range (a 6 would fail the call), also where the text hyphenates it
    ('a priority-2 ticket', base_190)."""
    for seed_id, old in (("multi_turn_base_190", 2), ("multi_turn_base_193", 4)):
        news = set()
        for plan in _first_plans(seed_id)[1]:
            call = next(c for t in plan.ground_truth for c in t if c.startswith("create_ticket"))
            news.add(int(re.search(r"priority=(\d)", call).group(1)))
        assert news - {old} and news <= {old - 1, old, old + 1} and all(1 <= n <= 5 for n in news), news


def test_a_file_the_text_also_describes_in_words_keeps_its_name():
    """miss_param_34 asks 'According to the whole financial report, ...' about 'finance_report.txt'; renamed
    'travel_report.txt', the words named another file (read 51 #13). The other file of the task is still renamed."""
    for seed_id in ("multi_turn_miss_param_34", "multi_turn_base_34"):
        seed, plans = _plans(seed_id)
        for p in plans:
            assert "finance_report.txt" not in p["renames"], p["renames"]
            assert any(c.kwargs.get("file_name") == "finance_report.txt"
                       for c in _calls(p["ground_truth"], "cat"))
            assert p["renames"]  # the new file the mean goes into is named anew


def test_a_city_named_for_its_airport_never_becomes_a_city_of_several_airports():
    """Read 51 #25 and LLM trial 6 #4: 'leaving New York for Tokyo' with JFK in the ground truth and no lookup read as a
    guess (New York has LGA and EWR too), where the seed's 'Los Angeles' for LAX did not. A well-known airport the text
    names by its city becomes another well-known one of a one-airport city, unless the seed's city has several too."""
    from rods_agents.analysis.value_sources import airport_cities
    from rods_agents.variation.entity_swaps import _MULTI_AIRPORT_CITIES

    cities = airport_cities()
    multi = {cities[c] for c in _MULTI_AIRPORT_CITIES}
    moved = 0
    for scenario in (177, 190):
        for plan in _scenario_plans(scenario):
            for old, new in plan["swaps"].items():
                if old in cities.values() and old != new:
                    moved += 1
                    assert new not in multi or old in multi, (scenario, old, new)
    assert moved  # the routes still move


def test_a_plan_drawn_again_after_a_refusal_still_gives_stated_amounts_other_values():
    # base_142 buys 50 shares and funds $5,000: a sample the verdict sent back (a sibling copy, a kept sentence) was
    # drawn again with the seed's amounts, since numbers were drawn only on a first attempt (read 56)
    seed = _train()["multi_turn_base_142"]
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    amounts = [_calls(anchored_plan(seed, profile, trace, random.Random(v), 2, slot=sibling_slot(seed.category, v))
                      ["ground_truth"], "place_order")[0].kwargs["amount"] for v in range(4)]
    assert sum(a != 50 for a in amounts) >= 3


def test_credentials_and_labels_the_user_keys_by_words_get_values_of_their_own():
    # base_193 logs in with client id 'my_client_id' and secret 'my_client_secret'; base_158 pays with card 'primary':
    # every sample of both scenarios kept them (kind_of had no kind for a word-like credential or card id)
    seed, plans = _plans("multi_turn_base_193")
    for plan in plans:
        auth = _calls(plan["ground_truth"], "authenticate_travel")[0].kwargs
        assert auth["client_id"] != "my_client_id" and auth["client_id"].endswith("_id")
        assert auth["client_secret"] != "my_client_secret" and auth["client_secret"].endswith("_secret")
    seed, plans = _plans("multi_turn_base_158")
    for plan in plans:
        card = _calls(plan["ground_truth"], "book_flight")[0].kwargs["card_id"]
        assert card != "primary" and card in plan["initial_config"]["TravelAPI"]["credit_card_list"]


def test_a_sector_swapped_takes_the_stock_bought_to_a_stock_of_the_new_sector():
    # base_116 lists the Technology sector and buys AAPL: a plan swapping the sector kept a Technology stock, which the
    # list the variant reads does not hold (plan_checks.dangling), so 26 of 30 such variants kept 'Technology'
    seed = _train()["multi_turn_base_116"]
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    swapped = 0
    for v in range(8):
        plan = anchored_plan(seed, profile, trace, random.Random(v), 0, slot=v)
        sector = _calls(plan["ground_truth"], "get_available_stocks")[0].kwargs["sector"]
        bought = _calls(plan["ground_truth"], "place_order")[0].kwargs["symbol"]
        assert bought in sectors_of() and sector in sectors_of()[bought]
        swapped += sector != "Technology"
    assert swapped >= 4


def test_a_destination_named_by_place_city_and_state_becomes_another_place():
    # base_71: 'Set navigation directly to Crescent Hollow, Spring, TX' had no kind and stayed in all eight samples
    from rods_agents.variation.value_kinds import pools

    dests = [_calls(p["ground_truth"], "set_navigation")[0].kwargs["destination"]
             for v in range(4) for p in [_plans_in_slot("multi_turn_base_71", v)]]
    assert sum(d in pools()["places"] for d in dests) >= 2, dests


def _plans_in_slot(seed_id: str, v: int) -> dict:
    seed = _train()[seed_id]
    trace = trace_task(seed)
    return anchored_plan(seed, profile_task(seed, trace), trace, random.Random(v), 0, slot=v)
