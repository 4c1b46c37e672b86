"""The six unfaithful classes found in the offline variants of the 400x2 run (issue 13), one test each.

Each test fails without its fix: a tank "filled completely" after a new starting level; a wc mode
swapped while a later turn still speaks of lines; a travel class swapped past a stated fare limit (kept
in tests/test_seed_anchored_rewrite.py::test_a_stated_limit_holds_in_the_variant); a balance patched to
a knife edge a dollar above the order's cost; a ticker the environment does not know; a card renamed with
its old digits left in its card number.
"""

from __future__ import annotations

import re

import pytest

from envs.task import Message, bfcl_task
from rods_agents.analysis.faithfulness import known_symbols
from rods_agents.analysis.profile import profile_task
from rods_agents.analysis.tracing import trace_task
from rods_agents.run.runtime import rng_for
from rods_agents.stages.plan_sampling import sample_variant_plan
from rods_agents.variation.config_rules import _add_balance
from rods_agents.variation.state_resample import resample_state
from rods_agents.variation.value_kinds import fresh


def _plans(seed, n: int = 12):
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    return [sample_variant_plan(seed, profile, trace, rng_for(5, seed.id, v, 0)) for v in range(n)]


def test_a_tank_filled_to_capacity_fills_what_a_new_level_leaves():
    """base_67 fills 39.5 gallons onto 10.5: "fill it completely". A new level with the old 39.5 filled part way: the
    general resample never moves such a level, and the plan's own fill-level draw re-derives the amount (scenarios 82
    and 84 had no other value to change)."""
    seed = bfcl_task("multi_turn_base_67")
    trace = trace_task(seed)
    for i in range(30):
        config = {k: dict(v) if isinstance(v, dict) else v for k, v in seed.initial_config.items()}
        changes = resample_state(config, trace, rng_for("fuel", i))
        assert "VehicleControlAPI.fuelLevel" not in changes
        assert config["VehicleControlAPI"]["fuelLevel"] == 10.5
    moved = 0
    for plan in _plans(seed, 12):
        level = plan.initial_config["VehicleControlAPI"]["fuelLevel"]
        fills = [float(re.search(r"fuelAmount=([\d.]+)", c).group(1)) for t in plan.ground_truth for c in t
                 if c.startswith("fillFuelTank")]
        assert fills and abs(level + sum(fills) - 50.0) < 0.51, (level, fills)
        moved += level != 10.5
    assert moved  # some plans start from another level


def test_a_wc_mode_is_not_swapped_while_a_later_turn_speaks_of_its_result_in_the_old_words():
    seed = bfcl_task("multi_turn_base_49")
    t = next(i for i, calls in enumerate(seed.ground_truth) if any(c.startswith("wc(") for c in calls))
    assert t + 1 < len(seed.turns)
    turns = [list(x) for x in seed.turns]
    turns[t + 1] = [Message(role="user", content=turns[t + 1][0].content + " Also remind me of the number of lines.")]
    seed = seed.model_copy(update={"turns": turns})
    for plan in _plans(seed, 16):
        assert "l" not in plan.swaps, plan.swaps


def test_a_patched_balance_is_round_and_well_above_the_cost():
    config = {"TradingBot": {"account_info": {"balance": 1000.0}}}
    rec = {"error": "Insufficient funds: required $1234.56 but only $1000.00 available."}
    patch = _add_balance(config, rec, None, None)
    balance = config["TradingBot"]["account_info"]["balance"]
    assert patch is not None and balance >= 1234.56 * 1.2
    assert balance % 100 == 0


def test_a_new_ticker_is_one_the_environment_knows():
    known = known_symbols(False)  # the TradingBot's market and sector lists
    for i in range(40):
        new = fresh("AAPL", "ticker", rng_for("ticker", i), {"AAPL"})
        assert new in known


@pytest.mark.parametrize("seed_id", ["multi_turn_base_169", "multi_turn_base_186", "multi_turn_base_177"])
def test_a_renamed_card_takes_its_digits_into_its_card_number(seed_id):
    seed = bfcl_task(seed_id)
    (old_id, old_card), = seed.initial_config["TravelAPI"]["credit_card_list"].items()
    old_run = re.findall(r"\d{4,}", old_id)[-1]
    renamed = 0
    for plan in _plans(seed):
        cards = plan.initial_config["TravelAPI"]["credit_card_list"]
        for card_id, card in cards.items():
            if card_id == old_id:
                continue
            renamed += 1
            run = re.findall(r"\d{4,}", card_id)[-1]
            number = re.sub(r"\D", "", str(card["card_number"]))
            assert number.endswith(run) and not number.endswith(old_run), (card_id, card["card_number"])
    assert renamed, "no plan renamed the card: the test would prove nothing"


def test_a_route_keeps_an_airport_the_text_calls_by_its_own_name_or_the_name_follows():
    """base_173: "from Los Angeles Internationa (LAX) to John F. Kennedy (JFK)": a new code for JFK would leave
    'John F. Kennedy' naming the old airport. JFK stays, or goes to another airport with a name of its own, which
    replaces 'John F. Kennedy'."""
    from rods_agents.variation.donor_fit import _AIRPORT_NAMES

    seed = bfcl_task("multi_turn_base_173")
    for plan in _plans(seed, 8):
        if "JFK" in plan.swaps:
            assert plan.swaps["John F. Kennedy"] == _AIRPORT_NAMES[plan.swaps["JFK"]][0], plan.swaps


def test_a_fare_the_text_quotes_stays_the_fare_of_the_flight_it_books():
    """base_193 books JFK -> MPC first class 'at a cost of 4700 dollars' (the environment's fare). A plan that moves
    the route to BOS -> RMS (fare 4000) while the sentence still says 4700 asks to 'double check the cost' of a flight
    that does not cost that (read 14): the verdict names the stale fare; the seed itself is clean."""
    from rods_agents.analysis.faithfulness import stale_fare

    seed = bfcl_task("multi_turn_base_193")
    assert stale_fare(seed, seed) == []
    swap = {"JFK": "BOS", "MPC": "RMS"}
    variant = seed.model_copy(deep=True)
    variant.ground_truth = [[re.sub(r"JFK|MPC", lambda m: swap[m.group(0)], c) for c in calls]
                            for calls in seed.ground_truth]
    variant.turns = [[Message(role=m.role, content=re.sub(r"JFK|MPC", lambda x: swap[x.group(0)], m.content))
                      for m in turn] for turn in seed.turns]
    reasons = stale_fare(variant, seed)
    assert reasons and "value=4700" in reasons[0] and "fare=4000" in reasons[0]
    fixed = variant.model_copy(deep=True)
    fixed.turns = [[Message(role=m.role, content=m.content.replace("4700", "4000")) for m in turn] for turn in variant.turns]
    assert stale_fare(fixed, seed) == []


def test_a_plan_that_moves_a_quoted_flight_quotes_its_new_fare():
    """The plan carries (seed fare, new fare) like a re-derived value, so the words follow the route (before, all of
    scenario 193's plans that moved the route were refused as stale fares). Fails without anchored_plan's
    quoted_fares pairs."""
    from rods_agents.analysis.faithfulness import _fares, quoted_fares, stale_fare
    from tests.test_transplant import _variant

    seed, variant, plan, _ = _variant("multi_turn_base_193")
    fares = [fare for _, _, fare in _fares(variant)]
    assert fares and fares != [4700.0]  # the draw moved the route or the class
    assert (4700.0, fares[0]) in [tuple(p) for p in plan.derived]
    said = " ".join(m.content for turn in variant.turns for m in turn if m.role == "user")
    assert "4700" not in said and f"{fares[0]:g}" in said
    assert stale_fare(variant, seed) == [] and quoted_fares(variant, seed) == [(4700.0, fares[0])]


def test_a_booking_capped_by_the_user_is_never_priced_over_the_cap():
    """miss_param_160 books JFK -> LAX in business class 'costing no more that $2500' (fare 2280); its ground truth
    never prices the flight, so no result shows a flip. A plan that reverses the route and flies first class (fare
    6000) books what the user ruled out (read of 2026-12-05): the verdict names the fare and the cap; the seed and a
    variant still under the cap are clean."""
    from rods_agents.analysis.faithfulness import fare_over_cap

    seed = bfcl_task("multi_turn_miss_param_160")
    assert fare_over_cap(seed, seed) == []

    def flown(frm: str, to: str, cls: str):
        variant = seed.model_copy(deep=True)
        variant.ground_truth = [[c.replace("travel_from='JFK'", f"travel_from='{frm}'").replace(
            "travel_to='LAX'", f"travel_to='{to}'").replace("travel_class='business'", f"travel_class='{cls}'")
            for c in calls] for calls in seed.ground_truth]
        return variant

    reasons = fare_over_cap(flown("LAX", "JFK", "first"), seed)
    assert reasons and "fare=6000" in reasons[0] and "cap=2500" in reasons[0]
    assert fare_over_cap(flown("LAX", "JFK", "economy"), seed) == []  # 600 x 1 x 2 = 1200, under the cap
    # a turn before the booking now read as stating a limit ('My budget limit should be worth 22000 RMB') shifted the
    # pairing of caps by position, and a fare over the $2500 passed (read 65, miss_func_160): caps pair by their turn
    worded = flown("LAX", "JFK", "first")
    worded.turns[0] = [Message(role="user", content="My budget limit should be worth 22000 RMB, please; my access "
                                                    "token is abc123xyz.")]
    reasons = fare_over_cap(worded, seed)
    assert reasons and "fare=6000" in reasons[0] and "cap=2500" in reasons[0]


def test_a_number_no_result_or_turn_gives_is_refused_even_where_the_seed_has_it():
    """miss_func_15 averages [3, 16, 62] where wc counts 60 characters: BFCL's own slip, which its variants copied (read
    61 #7, faithful=no). A careful person averages 3, 16 and 60, so no variant may keep it; the other categories of the
    scenario, which average what wc counts, pass."""
    from rods_agents.analysis.faithfulness import faithfulness_problems, unseen_numbers

    slip = bfcl_task("multi_turn_miss_func_15")
    assert unseen_numbers(slip, trace_task(slip)) == ["unfaithful:unseen_number turn=5 call=mean.numbers value=62"]
    for other in ("multi_turn_base_15", "multi_turn_miss_param_15", "multi_turn_long_context_15"):
        task = bfcl_task(other)
        assert unseen_numbers(task, trace_task(task)) == [], other
    trace = trace_task(slip)
    sources = profile_task(slip, trace).arg_sources
    # the verdict's faithfulness reasons hold it against a variant even where the seed has the same slip
    assert any(r.startswith("unfaithful:unseen_number") for r in faithfulness_problems(slip, slip, trace, sources, sources))
