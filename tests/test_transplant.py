"""The offline rewrite words a variant with human turns of other train scenarios (rods_agents.variation.transplant).

What a user of the synthesized data relies on: the variant is new wording, not its seed's sentences; a
re-worded turn states the variant's values and nothing of the donor's world; nothing comes from the test
split; what the seed leaves to the assistant (an implicit cd, a condition's wording) stays left to it.
"""

from __future__ import annotations

import json
import random
import re

import pytest

from envs.dataset import load_split, split_scenarios
from envs.task import bfcl_task
from rods_agents.analysis.information_structure import information_structure, reads_as_condition
from rods_agents.analysis.novelty import containment, user_text
from rods_agents.analysis.profile import profile_task
from rods_agents.analysis.tracing import trace_task
from rods_agents.analysis.value_sources import airport_cities, classify_arguments
from rods_agents.run.runtime import rng_for
from rods_agents.stages.coherence_rewrite import build_variant, carry_plan, rewrite_plan
from rods_agents.stages.plan_sampling import sample_variant_plan
from rods_agents.variation.assembly import _compound_cuts, _units, drops_request
from rods_agents.variation.donor_fit import reinstantiate
from rods_agents.variation.saying import foreign_names, keeps_said, premise_free
from rods_agents.variation.turn_bank import (
    Donor,
    Slot,
    clean_piece,
    explicit_calls,
    mark_sole,
    piece_bounds,
    turn_bank,
    turn_slots,
)


def _donor(text: str, slots: list[Slot], entities: tuple[str, ...] = ()) -> Donor:
    return Donor("multi_turn_base_0", 0, 0, text, ("mv",), tuple(slots), "{}", frozenset(entities))


def _slot(param: str, value, source: str = "user", flag: bool = False) -> Slot:
    return Slot(0, param, json.dumps(value), source, flag)


def _variant(seed_id: str, v: int = 0, run_seed: int = 7):
    """(seed, variant, plan, re-worded turns' donors) as the offline pipeline drafts variant ``v`` of a run."""
    seed = bfcl_task(seed_id)
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    plan = sample_variant_plan(seed, profile, trace, rng_for(run_seed, seed.id, v, 0))
    turns, donors = rewrite_plan(seed, profile, plan, rng_for(run_seed, seed.id, v, "rewrite"))
    return seed, build_variant(seed, turns, plan, v, 0), plan, donors


def _seed_turn_cuts(seed_id: str, turn: int) -> tuple[str, tuple[str, ...], set[int]]:
    """A seed turn's text, its explicit calls and where its wording must not be cut between them."""
    seed = bfcl_task(seed_id)
    trace = trace_task(seed)
    sources = classify_arguments(seed, trace)
    info = information_structure(seed, trace, sources)
    methods, slots = explicit_calls(info, turn, *turn_slots(trace, sources, turn))
    text = " ".join(m.content for m in seed.turns[turn] if m.role == "user")
    return text, methods, _compound_cuts(text, info, turn, methods, slots)


def test_a_donor_turn_states_the_variants_values_in_its_own_words():
    donor = _donor("Please move 'draft.txt' over to the 'old' folder, I am done with it.",
                   [_slot("source", "draft.txt"), _slot("destination", "old")], ("draft.txt", "old"))
    target = (_slot("source", "budget_review.pdf"), _slot("destination", "archive"))
    text = reinstantiate(donor, target, {"budget_review.pdf", "archive"}, set(), "budget_review.pdf archive")
    assert text == "Please move 'budget_review.pdf' over to the 'archive' folder, I am done with it."


def test_a_donor_that_would_keep_a_name_or_a_number_of_its_own_world_is_not_used():
    target = (_slot("source", "budget_review.pdf"), _slot("destination", "archive"))
    world = {"budget_review.pdf", "archive"}
    leftover_name = _donor("Move 'draft.txt' to 'old', next to notes.md.",
                           [_slot("source", "draft.txt"), _slot("destination", "old")], ("draft.txt", "old", "notes.md"))
    assert reinstantiate(leftover_name, target, world, set(), "budget_review.pdf archive") is None
    leftover_number = _donor("Move 'draft.txt' to 'old' if it is over 40 lines.",
                             [_slot("source", "draft.txt"), _slot("destination", "old")], ("draft.txt", "old"))
    assert reinstantiate(leftover_number, target, world, set(), "budget_review.pdf archive") is None


def test_a_choice_said_in_words_is_taken_only_where_the_donor_names_it_once():
    target = (_slot("a", True, "flag", True),)
    other_choice = _donor("Show me everything here.", [_slot("a", False, "flag", True)])
    assert reinstantiate(other_choice, target, set(), set(), "") is None
    cls = _donor("What does a business class seat cost?", [_slot("travel_class", "business", "flag", True)])
    text = reinstantiate(cls, (_slot("travel_class", "economy", "flag", True),), set(), set(), "")
    assert text == "What does an economy class seat cost?"


def test_the_bank_holds_only_train_turns_and_a_value_named_for_an_implicit_call_is_carried_as_a_hidden_slot():
    train = split_scenarios("train")
    donors = [d for ds in turn_bank().values() for d in ds]
    assert len(donors) > 1000
    assert {d.scenario for d in donors} <= train
    # base_16: "In research directory, there is a file ..." leaves cd('research') implicit but names its folder:
    # the folder is a hidden slot of the implicit cd (re-instantiated on the variant's folder, never left as
    # the donor's), and the cd stays out of the calls the turn asks for
    research = [d for d in donors if d.text.startswith("In research directory")]
    assert research and all(any(x.index < 0 and x.param == "cd.folder" and json.loads(x.value) == "research"
                                    for x in d.slots) for d in research)
    assert all("cd" not in d.methods for d in research)


def test_variants_are_new_wording_from_other_scenarios():
    seeds = [s for s in load_split("train", ["base"])][::9][:10]
    contained, reworded = [], 0
    for seed in seeds:
        seed, task, plan, donors = _variant(seed.id)
        contained.append(containment(user_text(task), user_text(seed), mask=True))
        reworded += bool(donors)
        for d in donors:  # a human donor is another scenario's turn; the rest are phrasebook sentences
            assert all(bfcl_task(i).scenario != seed.scenario for i, _ in d["donors"] if not i.startswith("phrasebook:"))
    assert reworded >= 7
    # the carried seed sentences alone measure ~0.9; sentences holding a condition, reference or transformation cue
    # stay the seed's (their words decide the ground truth), so some drafts stay above the verdict's 0.6 and are rejected
    assert sum(contained) / len(contained) < 0.7, contained


def test_a_turn_with_a_condition_keeps_its_cue_clause_and_gets_new_words_for_the_rest():
    seed, task, plan, donors = _variant("multi_turn_base_94")
    carried = carry_plan(seed, plan)
    info = profile_task(seed).information
    mine = information_structure(task)
    reworded = 0
    for t, ts in enumerate(info.turns):
        if ts.conditions and task.turns[t]:
            text = task.turns[t][0].content
            # the carried condition ('Should any tire fall below the 40 PSI mark, ...') stays a condition up to its
            # comma, in words of its own (rods_agents.variation.clause_words)
            for c in mine.turns[t].conditions:
                clause = c.cue.split(",")[0]
                assert reads_as_condition(clause) and clause in text and clause not in carried[t][0].content
            assert len(mine.turns[t].conditions) == len(ts.conditions)
            reworded += text != carried[t][0].content
    assert any(ts.conditions for ts in info.turns)
    assert reworded >= 1  # 'verify the tire pressures.' before the condition is another scenario's sentence


def test_a_route_is_carried_with_its_cities_and_no_airport_of_the_donors_trip_stays():
    def flight(text: str) -> Donor:
        return Donor("multi_turn_base_0", 0, 0, text, ("get_flight_cost",),
                     (_slot("travel_from", "LAX"), _slot("travel_to", "JFK")), "{}", frozenset())

    target = (_slot("travel_from", "WLB"), _slot("travel_to", "PHV"))
    text = reinstantiate(flight("How much is a flight from Los Angeles (LAX) to JFK?"), target, set(), set(), "WLB PHV")
    assert text == "How much is a flight from Willowbend (WLB) to PHV?"
    assert reinstantiate(flight("Fly me from LAX to John F. Kennedy (JFK)."), target, set(), set(), "WLB PHV") is None
    # even where the variant's world knows New York (its airport list): the donor's airport name never stays
    assert reinstantiate(flight("Fly me from LAX to John F. Kennedy (JFK)."), target, {"new york"}, set(),
                         "WLB PHV") is None


def test_a_destination_naming_a_city_of_the_airport_table_is_the_variants_own_value():
    def nav(text: str, value: str) -> Donor:
        return Donor("multi_turn_base_60", 0, 0, text, ("set_navigation",), (_slot("destination", value),), "{}",
                     frozenset())

    target = (_slot("destination", "Crescent Hollow, Spring, TX"),)
    text = reinstantiate(nav("Set my destination to 7 Main St.", "7 Main St"), target, set(), set(),
                         "set_navigation(destination='Crescent Hollow, Spring, TX')")
    assert text == "Set my destination to Crescent Hollow, Spring, TX."
    # a city the donor names besides its value is still the donor's trip
    assert reinstantiate(nav("Drive me to 7 Main St, near Rivermist.", "7 Main St"), target, set(), set(),
                         "set_navigation(destination='Crescent Hollow, Spring, TX')") is None


def test_a_ticker_is_carried_in_its_own_case_only():
    donor = Donor("multi_turn_base_0", 0, 0, "Before buying Zeta Corp, show me ZETA.", ("get_stock_info",),
                  (_slot("symbol", "ZETA"),), "{}", frozenset({"zeta"}))
    assert reinstantiate(donor, (_slot("symbol", "GM"),), {"gm"}, set(), "GM") is None  # never 'GM Corp'
    plain = Donor("multi_turn_base_0", 0, 0, "Show me ZETA.", ("get_stock_info",), (_slot("symbol", "ZETA"),), "{}",
                  frozenset({"zeta"}))
    assert reinstantiate(plain, (_slot("symbol", "GM"),), {"gm"}, set(), "GM") == "Show me GM."


def test_a_donor_that_leaves_a_stated_value_to_an_earlier_turn_does_not_replace_words_that_state_it():
    """'Now book it with card_2306' (the donor's route and date were named a turn earlier) cannot word a turn
    whose own words name the date: the variant would lose the date."""
    target = (_slot("travel_date", "2026-11-12"), _slot("card_id", "card_2306"))
    span = "Book it for November 12th 2026 with card card_2306."
    assert keeps_said("Book it for Nov 12th, 2026, card card_2306 please.", target, span)
    assert not keeps_said("Now book it with card card_2306.", target, span)
    # an airport the replaced words name by its city stays named
    city = airport_cities()["LAX"]
    route = (_slot("travel_to", "LAX", source="state"),)
    assert not keeps_said("Book that flight.", route, f"Fly me to {city}.")
    assert keeps_said(f"Get me a seat to {city}.", route, f"Fly me to {city}.")


def test_pieces_are_cut_at_clause_hand_overs_but_never_inside_a_quoted_value():
    text = "Check the tire pressure, and then find the nearest shop. Post 'done; and then home' for me."
    bounds = [*piece_bounds(text), len(text)]
    pieces = [clean_piece(text[a:b]) for a, b in zip(bounds, bounds[1:], strict=False)]
    assert pieces == ["Check the tire pressure", "Find the nearest shop.", "Post 'done; and then home' for me."]


def test_a_value_named_for_an_implicit_call_is_a_hidden_slot_the_donor_must_carry():
    """'estimate the distance between Stonebrook and Rivermist' names the cities of two implicit zip-code lookups:
    they are hidden slots of the turn (a donor must name the same lookups' cities, which are re-instantiated on
    the variant's), never dropped (a donor naming none would leave the variant's cities unsaid)."""
    seed = bfcl_task("multi_turn_long_context_67")
    trace = trace_task(seed)
    info = profile_task(seed, trace).information
    sources = classify_arguments(seed, trace)
    methods, slots = explicit_calls(info, 0, *turn_slots(trace, sources, 0))
    assert methods == ("estimate_distance",)
    hidden = sorted(json.loads(x.value) for x in slots if x.index < 0)
    assert hidden and all(x.param == "get_zipcode_based_on_city.city" for x in slots if x.index < 0)
    assert all(city.lower() in user_text(seed).lower() for city in hidden)
    donor = Donor("multi_turn_base_0", 0, 0, "How far is Rivermist from Greenway?", ("estimate_distance",),
                  (Slot(0, "cityA", '"83214"', "call", False), Slot(0, "cityB", '"74532"', "call", False),
                   Slot(-1, "get_zipcode_based_on_city.city", '"Rivermist"', "user", False),
                   Slot(-2, "get_zipcode_based_on_city.city", '"Greenway"', "user", False)), "{}",
                  frozenset({"rivermist", "greenway"}))
    target = tuple(x for x in slots if x.index >= 0) + tuple(
        Slot(x.index, x.param, json.dumps(c), x.source, x.flag) for x, c in
        zip([x for x in slots if x.index < 0], ["Silverpine", "Maplecrest"], strict=True))
    text = reinstantiate(donor, target, {"silverpine", "maplecrest"}, set(), "Silverpine Maplecrest")
    assert text == "How far is Silverpine from Maplecrest?"


def test_a_miss_param_withholding_turn_is_worded_only_by_a_turn_withholding_the_same_value():
    bank = [d for ds in turn_bank().values() for d in ds if '"withheld"' in d.signature]
    assert bank and all(d.task_id.startswith("multi_turn_miss_param_") for d in bank)
    for d in bank:
        held = [x for x in d.slots if x.source == "withheld"]
        method, param = json.loads(d.signature)["withheld"].split(".")
        # the withheld value itself, or where an implicit lookup takes it (a city's zip code), the arguments it feeds
        assert held and all(x.param == param for x in held) or method not in d.methods, (d.task_id, held)
    # the withheld value is never carried: a donor and a target that both leave it out fit whatever the values
    donor = Donor("multi_turn_miss_param_0", 0, 3, "Show me the last lines of 'log.txt'.", ("tail",),
                  (_slot("file_name", "log.txt"), _slot("lines", 20, source="withheld")), "{}", frozenset({"log.txt"}))
    target = (_slot("file_name", "notes.md"), _slot("lines", 5, source="withheld"))
    assert reinstantiate(donor, target, {"notes.md"}, {5.0}, "notes.md 5") == "Show me the last lines of 'notes.md'."
    assert reinstantiate(donor, (_slot("file_name", "notes.md"), _slot("lines", 5)), {"notes.md"}, {5.0}, "") is None


def test_a_numeric_option_the_donor_writes_once_is_carried_as_a_number():
    """create_ticket's priority is a documented option: 'priority 4' in a donor becomes the variant's priority."""
    def ticket(text: str) -> Donor:
        return Donor("multi_turn_base_0", 0, 0, text, ("create_ticket",),
                     (_slot("title", "Flight delay"), _slot("priority", 4, flag=True)), "{}", frozenset({"flight delay"}))

    target = (_slot("title", "Lost bag"), _slot("priority", 2, flag=True))
    text = reinstantiate(ticket("Open a ticket 'Flight delay' at priority 4."), target, {"lost bag"}, {2.0}, "Lost bag 2")
    assert text == "Open a ticket 'Lost bag' at priority 2."
    assert reinstantiate(ticket("Open a ticket 'Flight delay', priority 4 of 4."), target, {"lost bag"}, {2.0}, "") is None


def test_a_human_turn_that_opens_on_its_own_premise_or_persona_is_never_a_donor():
    # leftovers the independent reads found in variants: each presupposes the donor's conversation, not the variant's
    for text in ("With the liters in mind, I'll need to top up the tank.", "Given this apprehension, check the tires.",
                 "Finally, book the flight.", "Now that the tank is full, start the engine.", "I am Alice, please send it.",
                 "As a seasoned real estate agent, I need a budget.", "Refuel it. Then start the engine.",
                 "Earlier today, I moved ahead with an order for tech stocks. Check my latest order.",
                 "you'd prefer to formally notify your travel agent about the abrupt change in your itinerary"):
        assert not premise_free(text), text
    for text in ("Could you fill the tank with 20 gallons?", "Please cancel my booking.",
                 "I'm planning a trip to Rivermist, could you check the distance?"):
        assert premise_free(text), text
    donors = [d for pool in turn_bank().values() for d in pool if d.scenario != "phrasebook"]
    assert 0 < sum(map(premise_free, (d.text for d in donors))) < len(donors)


def test_a_human_turn_naming_someone_or_something_outside_the_variants_world_is_never_kept():
    # read of 30 pairs: 'a comprehensive analysis of the stock with Amazon' carried into a task about Omega Industries
    world = {"omeg", "omega industries", "nvda", "bob"}
    assert foreign_names("Please list my watchlist. I require an analysis of the stock with Amazon, for my decision.",
                         world) == ["Amazon"]
    assert foreign_names("Send it to Bob on Friday. I'm sure Omega's shares are fine. Use the GPS.", world) == []


def test_a_sentence_asking_for_two_calls_is_not_reworded_as_one_of_them():
    # read 5, multi_turn_miss_param_69: 'fill the tank with 40 additional liters' re-worded as the conversion alone
    # left nobody asking for the fill ('Round the fill amount' later kept the fill 'explicit' for the measure)
    calls = ("liter_to_gallon", "fillFuelTank")
    span = "Afterwards, fill the tank with 40 additional liters of gasoline for my quick trip."
    assert drops_request(span, "How many gallons make up 40 liters?", calls, 0, 1)
    assert not drops_request("Convert 40 liters to gallons.", "How many gallons make up 40 liters?", calls, 0, 1)
    for v in range(4):
        seed, variant, _, _ = _variant("multi_turn_miss_param_69", v, 3)
        assert variant.ground_truth[0][-1].startswith("fillFuelTank")
        first = " ".join(m.content for m in variant.turns[0] if m.role == "user")
        assert re.search(r"\b(fill|top (it )?up|refuel)\w*\b[^.?!]*\b(tank|liters|gallons)", first, re.I), first


def test_a_copy_under_a_new_name_is_never_worded_as_a_copy_and_a_move_of_the_original():
    # read 5, multi_turn_base_2: "copy it over to the archive under the name IdeasArchive.txt" became "Could you copy
    # X over to Meetings? Can you transfer X over to ReleaseNotes.txt?" (the original renamed, the steps spelled out)
    text, methods, cuts = _seed_turn_cuts("multi_turn_base_2", 3)
    assert methods == ("cp", "mv") and cuts == {1}
    for v in range(2):
        words = " ".join(m.content for m in _variant("multi_turn_base_2", v, 3)[1].turns[3] if m.role == "user")
        assert not (re.search(r"\b(copy|clone|duplicate)\b", words, re.I) and re.search(r"\b(move|transfer)\w*", words, re.I)
                    and "under the name" not in words), words


def test_a_human_turn_naming_work_the_variant_never_does_is_never_kept():
    from rods_agents.variation.cues import names_other_work

    travel = {"travelapi", "ticketapi"}
    assert names_other_work("I need the invoice that details my recently acquired flight and insurance.", travel,
                            "retrieve_invoice(access_token='x',booking_id='1')")
    assert not names_other_work("I need the invoice for the insurance I bought.", travel,
                                "purchase_insurance(insurance_type='comprehensive') retrieve_invoice(booking_id='1')")
    assert names_other_work("Please close the ticket for me as the tire issue is resolved.", travel, "close_ticket(ticket_id=1)")
    assert not names_other_work("Please close ticket 1 for me.", travel, "close_ticket(ticket_id=1)")


def test_a_folder_the_text_also_names_in_the_singular_keeps_its_name():
    # miss_func_2 says "Make sure the Archived directory exists in document folder" for the folder 'documents': a
    # rename to 'invoices' would leave 'document folder' naming a folder that no longer exists (read 8)
    for v in range(2):
        seed, variant, _, _ = _variant("multi_turn_miss_func_2", v, run_seed=3)
        assert "document folder" in " ".join(m.content for t in seed.turns for m in t)
        assert any("folder='documents'" in c for c in variant.ground_truth[0]), variant.ground_truth[0]


def test_a_donor_naming_a_pair_against_its_own_calls_order_is_never_used():
    """Read 9, base_63: 'a trip from Silverpine to Oakendale' came from a human turn whose zip-code lookups ran the
    other way; re-instantiated slot by slot, the variant's text named its pair against its ground truth."""
    from rods_agents.variation.cues import said_out_of_order

    def donor(text: str) -> Donor:
        return Donor("multi_turn_base_0", 0, 0, text, ("estimate_distance",),
                     (Slot(0, "cityA", '"83214"', "call", False), Slot(0, "cityB", '"74532"', "call", False),
                      Slot(-1, "get_zipcode_based_on_city.city", '"Rivermist"', "user", False),
                      Slot(-2, "get_zipcode_based_on_city.city", '"Greenway"', "user", False)), "{}",
                     frozenset({"rivermist", "greenway"}))

    assert not said_out_of_order(donor("How far is it from Rivermist to Greenway?"))
    assert said_out_of_order(donor("I'm planning a trip from Greenway to Rivermist. How far is it?"))


def test_a_human_turn_picking_a_line_by_its_place_never_words_a_whole_file_call():
    """Read 9, base_0: 'sort the inaugural line of the report' (a BFCL train turn) worded a sort of a whole file."""
    from rods_agents.variation.cues import brings_cues

    assert brings_cues("Methodically sort the inaugural line of 'grant_proposal.pdf'.", "Sort 'report.pdf' for me.")
    assert brings_cues("Sort the first line of 'a.txt'.", "Sort 'a.txt', please.")
    assert not brings_cues("Show me the last 5 lines of 'a.txt'.", "Display the last 10 lines of 'a.txt'.")
    assert not brings_cues("Sort 'a.txt' alphabetically.", "Sort 'a.txt', please.")


def test_recency_words_for_the_one_order_so_far_are_no_pick_but_a_place_in_a_list_is():
    """'that last order I made' where one order exists (the value is singled out by its result) says what 'Cancel
    this order' says; base_126's cancel turn kept its seed's words in all 8 samples for it."""
    from rods_agents.variation.cues import cue_spans

    turn = "I might need to pull the plug on that last order I made. Can you nix it for me?"
    assert cue_spans(turn) and not cue_spans(turn, singled=True)
    assert cue_spans("Cancel the last order on the list, please.", singled=True)  # a place in a list stays a pick
    assert cue_spans("Show me the last stock in my watchlist.", singled=True)


def test_the_total_shares_of_an_order_is_a_field_not_a_sum_so_its_sentence_takes_new_words():
    """base_134 asks for an order's details, 'the total shares purchased' among them, then cancels it under a
    condition. 'total' read as a sum locked the details sentence beside the conditioned one, so the turn kept its
    seed's words in all eight samples and scenario 134 got no variant."""
    from rods_agents.variation.cues import cue_spans

    assert not cue_spans("I'd appreciate the details: which stock was involved and the total shares purchased.")
    assert not cue_spans("Tell me the total number of shares involved.")
    assert cue_spans("What is the total of the two prices?")  # a sum stays a transformation cue
    seed, variant, _, donors = _variant("multi_turn_base_134")
    assert any(d["turn"] == 1 for d in donors)  # the details sentence is new words; the condition's sentence stays
    said = next(m.content for m in variant.turns[1] if m.role == "user")
    # the condition stays a condition on that order, in the seed's words or a sentence form's
    assert re.search(r"(?:withdraw|cancel|call off|pull back) that order,? (?:if|provided|as long as) ", said), said
    assert "total shares purchased" not in said


def test_a_value_an_implicit_call_shares_with_the_asked_call_needs_no_sentence_of_its_own():
    """'snag 100 shares of XYZ at the market price' states the symbol of the implicit price lookup by stating the
    order's: a sentence for the order says it (base_126 turn 1 had no phrasebook sentence for want of one)."""
    from rods_agents.analysis.information_structure import information_structure
    from rods_agents.variation.assembly import _rebased
    from rods_agents.variation.donor_search import phrasebook_donors
    from rods_agents.variation.turn_bank import asked_turn, portable_signature

    seed = bfcl_task("multi_turn_base_126")
    trace = trace_task(seed)
    info = information_structure(seed, trace)
    g = asked_turn(seed, 1)
    methods, target = explicit_calls(info, g, *turn_slots(trace, classify_arguments(seed, trace), g))
    assert methods == ("place_order",) and any(x.index < 0 and x.param == "get_stock_info.symbol" for x in target)
    donors = phrasebook_donors(seed, 1, 0, methods, _rebased(target, 0, 1, True), portable_signature(info, g),
                                set(), set(), seed.turns[1][0].content)
    assert donors and all("XYZ" in d.text for d in donors)


def test_words_picking_a_value_the_lexicon_cannot_read_keep_the_seeds_wording():
    """Read 10, base_143: 'one with a substantial order value I remember initiating' picks order 12446 out of two;
    re-worded as 'my placed order' (a human turn of a task that had placed one), nothing picked it any more."""
    seed = bfcl_task("multi_turn_base_143")
    assert information_structure(seed).turns[1].unresolved_picks == 1
    for v in range(2):
        _, variant, _, _ = _variant("multi_turn_base_143", v)
        # the pick stays, in the seed's words or its own (prompts/phrasebook/sentences.json)
        assert re.search(r"\b(?:substantial|large|largest|sizable|hefty|big|biggest)(?:[- ]value| order value| by value)",
                         variant.turns[1][0].content)


def test_a_sentence_saying_a_file_is_somewhere_else_stays_beside_new_words():
    """Reads 9 and 10, miss_param_44: new words for the write dropped 'The file is somewhere inside the file system.',
    the only hint that an implicit cd comes first; an assistant would write the file in the current folder."""
    from rods_agents.variation.transplant import with_where_hints

    span = "Could you fill 'a.txt' with 'Q1: 5'? The file is somewhere inside the file system."
    assert with_where_hints("Write 'Q1: 5' to 'b.txt'.", span).endswith("The file is somewhere inside the file system.")
    assert with_where_hints("Write 'Q1: 5' to 'b.txt'.", "Could you fill 'a.txt' with 'Q1: 5'?") == "Write 'Q1: 5' to 'b.txt'."
    for v in range(2):
        seed, variant, _, _ = _variant("multi_turn_miss_param_44", v)
        if variant.turns[0][0].content != seed.turns[0][0].content:
            # the hint stays, in the seed's words or its own (prompts/phrasebook/clauses.json)
            assert re.search(r"\bsomeh?where (?:inside|in) the file system", variant.turns[0][0].content)


def test_a_route_an_earlier_turn_named_for_its_lookup_is_left_to_that_turn():
    """base_181: 'the nearest airport to New York City ... to Los Angeles' (turn 1), then 'arrange the flight using my
    card and token' (turn 2): the booking's airports are read from the state by the earlier turn's words, and a new
    sentence for the booking leaves them there, as the seed's does (it kept its seed's words in all 8 samples)."""
    from rods_agents.analysis.information_structure import information_structure
    from rods_agents.variation.assembly import _rebased
    from rods_agents.variation.donor_search import phrasebook_donors
    from rods_agents.variation.turn_bank import asked_turn, portable_signature

    seed = bfcl_task("multi_turn_base_181")
    trace = trace_task(seed)
    info = information_structure(seed, trace)
    g = asked_turn(seed, 2)
    methods, target = explicit_calls(info, g, *turn_slots(trace, classify_arguments(seed, trace), g))
    assert {x.param for x in target if x.source == "state"} >= {"travel_from", "travel_to"}
    earlier = " ".join(m.content for t in seed.turns[:2] for m in t)
    donors = phrasebook_donors(seed, 2, 0, methods, _rebased(target, 0, 1, True), portable_signature(info, g),
                                set(), set(), seed.turns[2][0].content, earlier)
    assert donors and not any(code in d.text for d in donors for code in ("JFK", "LAX", "New York", "Los Angeles"))


def test_consecutive_sentences_of_a_turn_open_differently_where_the_phrasebook_allows():
    """Read 10: 'Could you set the parking brake? Could you fire up the car?' (base_71 turn 3 read 'Could you make sure
    all the doors are locked? Could you fire up the car?' in every sample; base_86 opens with the same four calls)."""
    from rods_agents.variation.donor_search import _opener

    for v in range(2):
        seed, variant, _, _ = _variant("multi_turn_base_86", v)
        text = variant.turns[0][0].content
        assert text != seed.turns[0][0].content
        openers = [_opener(x) for x in re.split(r"(?<=[.?!])\s+", text) if x.strip()]
        assert len(openers) > 1 and all(a != b for a, b in zip(openers, openers[1:], strict=False)), text


def test_a_human_turn_naming_the_tech_sector_is_kept_only_where_the_task_looks_a_sector_up():
    """'Earlier today, I moved ahead with an order for tech stocks.' worded the order check of a Ford order."""
    from rods_agents.variation.cues import names_other_work

    trading = {"tradingbot"}
    text = "Earlier today, I moved ahead with an order for tech stocks. Could you check my latest order?"
    assert names_other_work(text, trading, "place_order(symbol='F') get_order_details(order_id=1)")
    assert not names_other_work(text, trading, "get_available_stocks(sector='Technology') get_order_details(order_id=1)")


def test_a_human_turn_claiming_work_done_in_its_own_story_never_words_a_value_no_result_singles_out():
    """Read 11: 'retrieve the details of the last service ticket you submitted' (base_60, where the assistant had
    filed one) worded a trading task's lookup of a ticket the user lodged before the conversation."""
    from rods_agents.variation.cues import brings_cues

    donor = "Could you please retrieve the details of the last service ticket you submitted?"
    assert brings_cues(donor, "Would you track down the ticket I lodged about trading system queries?")
    assert not brings_cues(donor, "Could you get the ticket you submitted for me?", singled=True)


def test_the_words_of_a_call_or_of_dictated_content_are_no_stray_cue():
    """'the last 4 lines' asks for tail (its 'the last' is tail's own words, not a pick), a quoted tweet or message
    is content to write ('Just made a move...'), and 'that first-class flight', a named file 'that we just created'
    and 'the one with id card_4206' pick nothing: such turns kept their seed's words in every sample (base_1,
    base_14, base_109, base_181, base_192, base_16, base_173)."""
    from rods_agents.variation.cues import cue_spans, stray_cues

    assert not stray_cues("Finally, show the last 20 lines the file.", ("tail",))
    assert stray_cues("Show me the last 5 lines of the first file you find.", ("tail",))  # a place among files: a pick
    tweet = "Could you also send out a tweet 'Just made a move in the tech sector! Always learning.' right away?"
    assert cue_spans(tweet) and not stray_cues(tweet, ("post_tweet",))
    assert stray_cues("Could you post a tweet about the order I just made?", ("post_tweet",))  # outside quotes: a pick
    assert not cue_spans("I'd like to book that first-class flight from Rivermist to Los Angeles.")
    assert cue_spans("I'd like to book that first flight from Rivermist to Los Angeles.")
    # a file the turn names, recalled by recency ('that we just created'), and a card 'the one with id card_4206'
    assert not stray_cues("Take the contents of '2024_backup.txt' that we just created and sort the lines.", ("sort",))
    assert stray_cues("Take the contents of the file that we just created and sort the lines.", ("sort",))
    assert not cue_spans("Use my card, it's the one with id card_4206.")
    assert cue_spans("Book the one that is cheapest.")


def test_words_are_measured_on_the_state_the_patch_agent_will_leave():
    """A plan whose order the balance cannot cover yet runs with errors until the patch agent tops the balance up
    after execution; measured on that broken run, the order id read as a value no order result singles out, so the
    cancel turn kept the seed's words ('annul the latest order I put in') or, at best, a sentence picking among
    several orders. Measured on the repaired state, the one order placed is the one cancelled ('Could you cancel
    this order for me?'), as the patched task will run."""
    from rods_agents.variation.anchored_plan import sibling_slot
    from rods_agents.variation.plan_checks import repaired_config

    seed = bfcl_task("multi_turn_long_context_124")
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    plan = sample_variant_plan(seed, profile, trace, rng_for(3, seed.id, 0, 0))
    plan.initial_config["TradingBot"]["account_info"]["balance"] = 10.0
    draft = build_variant(seed, carry_plan(seed, plan), plan, 0, 0)
    assert trace_task(draft).errors and repaired_config(draft) is not None
    turns, donors = rewrite_plan(seed, profile, plan, rng_for(3, seed.id, 0, 0, "rewrite"), sibling_slot(seed.category, 0))
    assert {d["turn"] for d in donors} == {0, 1, 2}
    assert all(containment(turns[t][0].content, seed.turns[t][0].content) < 0.5 for t in range(3))
    assert not [d for p in donors for d, _ in p["donors"] if d.startswith("phrasebook:picks")], donors


def test_a_pick_the_structure_tied_to_no_call_is_carried_as_a_pick_of_the_calls_one_unstated_value():
    """'annul the latest order I put in' where several results hold orders: the structure ties the recency words
    to no call, yet they say which order. A sentence for the cancel takes them as its order ('Please cancel the
    latest order.'); two unstated values, or cue words outside one noun phrase, keep the seed's words."""
    from rods_agents.variation.cues import stray_cues, stray_picks

    span = "Would you be so kind to annul the latest order I put in, since it's still pending?"
    order = Slot(0, "order_id", "12446", "call", False, "")
    stray = stray_cues(span, ("cancel_order",))
    assert stray_picks(span, stray, ("cancel_order",), (order,)) == {"order_id": "the latest order"}
    other = Slot(0, "symbol", '"NEPT"', "state", False, "")
    assert stray_picks(span, stray, ("cancel_order",), (order, other)) == {}
    assert stray_picks(span, stray, ("cancel_order", "get_order_details"), (order,)) == {}


def test_a_folder_made_and_then_filled_may_be_asked_for_call_by_call():
    """'Move hiring_plan.pdf to research. Make sure to create the directory' names 'research' once for the mkdir and
    the mv; unlike a copy renamed under a new name, 'Create a folder called research. Move hiring_plan.pdf into
    research.' says the same, so the turn may be worded call by call (scenario 0 kept its seed's words in every
    sample for want of a human turn asking for both calls)."""
    text, methods, cuts = _seed_turn_cuts("multi_turn_base_0", 0)
    assert methods == ("mkdir", "mv") and cuts == set()
    words = " ".join(m.content for m in _variant("multi_turn_base_0", 0, 3)[1].turns[0] if m.role == "user")
    assert containment(words, text) < 0.5, words


def test_a_traced_call_keeps_the_arguments_it_was_made_with():
    """BFCL's TwitterAPI keeps the mentions list a post_tweet hands it, and a later mention() extends that list: the
    trace read the post as mentioning @RoadsideAssistance too, a value no words state (composed), so its turn
    kept the seed's words in every sample of scenario 90."""
    seed = bfcl_task("multi_turn_miss_func_90")
    post = next(r for r in trace_task(seed).calls if r.name == "post_tweet")
    assert post.args["mentions"] == ["@TravelBuddy"]
    assert any(r.name == "mention" for r in trace_task(seed).calls)


def test_a_hashtag_at_the_end_of_a_sentence_is_kept_without_its_full_stop():
    from rods_agents.variation.saying import keeps_specifics

    span = "Post 'Off we go!', mentioning @TravelBuddy and using the hashtag #RoadAhead."
    assert keeps_specifics("Tweet 'Off we go!' with #RoadAhead, mentioning @TravelBuddy.", span)
    assert not keeps_specifics("Tweet 'Off we go!', mentioning @TravelBuddy.", span)


def test_words_of_recency_in_a_turn_that_reads_no_result_are_the_donors_story():
    """'I need to make sure I've got enough cash for that order.' funded an account after the variant's order was
    cancelled (my read of session 6): where the turn reads no value from a result, 'that order' points at nothing of
    the variant, so such a human turn is no donor; where it does, the words are left to the value sources."""
    from rods_agents.variation.cues import brings_cues

    donor = "I need to make sure I've got enough cash for that order. Could you please top up my trading account with $5,500?"
    seed = "Could you arrange a deposit of 5000 USD into my trading account for potential ventures ahead?"
    assert brings_cues(donor, seed, singled=False, reads_result=False)
    assert not brings_cues("Could you cancel that order for me?", "Please revoke the placed order.", singled=False)


def test_siblings_short_of_fitting_donors_share_a_donor_with_other_siblings_in_each_turn():
    """With fewer fitting donors than siblings, ``slot % fits`` sent slots 1 and 5 to one donor in every such turn (their
    texts ended as near-copies); a permutation per turn spreads the shared picks over other pairs."""
    from rods_agents.variation.donor_search import PICK, sibling_rank

    keys = [f"152|{t}|0|1" for t in range(12)]
    assert all(sorted(sibling_rank(s, k) for s in range(PICK)) == list(range(PICK)) for k in keys)  # 8 fits: all differ
    same = sum(sibling_rank(1, k) % 2 == sibling_rank(5, k) % 2 for k in keys)
    assert same < len(keys)  # two fits: not the same pair every turn
    assert sibling_rank(9, keys[0]) >= PICK  # a re-plan's slot ranks past the first plan's


def test_a_sentence_ending_in_a_quote_gets_no_second_full_stop():
    from rods_agents.variation.saying import as_sentence

    assert as_sentence('Tell them "Unexpected charge found."') == 'Tell them "Unexpected charge found."'
    assert as_sentence("Send it to support") == "Send it to support."


def test_filter_words_in_a_turn_whose_every_value_is_stated_pick_nothing():
    """'an inventory of files that are visible and hidden' (ls -a) reads as a filter cue, yet every argument of
    the turn is a flag or stated: there is no value for the words to single out, so a sentence for the same call
    may replace them. A turn with a value read from a result or the state keeps its cue words for that value."""
    from rods_agents.variation.cues import picks_something

    assert not picks_something((Slot(0, "a", "true", "flag", True, ""),))
    assert not picks_something((Slot(0, "name", '"test"', "user", False, ""),))
    assert picks_something((Slot(0, "order_id", "12446", "call", False, ""),))
    assert picks_something((Slot(0, "folder", '"tmp"', "state", False, ""),))
    seed = bfcl_task("multi_turn_base_17")
    assert "files that are currently visible and hidden" in " ".join(m.content for m in seed.turns[0])
    _, variant, _, donors = _variant("multi_turn_base_17", 0, run_seed=3)
    assert 0 in {d["turn"] for d in donors}, "the ls -a turn keeps the seed's words"
    assert "files that are currently visible" not in " ".join(m.content for m in variant.turns[0])


def test_a_withheld_text_is_supplied_in_quotes():
    """A miss_param answer that supplies dictated words (a comment 'Another successful task completed today!')
    writes them in quotes: "One more job done today!, please." reads as the user's exclamation, not the comment."""
    from rods_agents.variation.saying import dictated
    from rods_agents.variation.transplant import _supply_texts

    assert dictated("Another successful task completed today!") and dictated("Done!")
    assert not dictated("Los Angeles") and not dictated("notes.txt") and not dictated(5)
    seed = bfcl_task("multi_turn_miss_param_5")
    trace = trace_task(seed)
    info = information_structure(seed, trace, classify_arguments(seed, trace))
    turn = next(x.withheld.supplied_at for x in info.turns if x.withheld is not None)
    options = _supply_texts(seed, trace, info, turn)
    assert options and all("'Another successful task completed today!'" in o for o in options)


def test_an_option_no_turn_words_stays_unworded():
    """'secure travel insurance with a fee of $350' leaves the insurance type (comprehensive) unsaid: a donor sentence
    for the purchase must not bring a type of its own. The type is then said once, by
    :mod:`rods_agents.variation.unsaid_choices`, since no text, state or document gives it (read 33 on base_185:
    "supplies an insurance type that the seed never stated, which fixes a seed gap rather than making the task
    easier")."""
    from rods_agents.variation.donor_search import unworded_options
    from rods_agents.variation.phrasebook import phrase_donors

    slots = (Slot(0, "booking_id", '"b1"', "user", False, ""), Slot(0, "insurance_type", '"comprehensive"', "flag", True, ""),
             Slot(0, "insurance_cost", "350.0", "user", False, ""), Slot(0, "card_id", '"7062"', "user", False, ""))
    span = "I would like to secure travel insurance with a fee of $350 linked to booking b1, paid with card '7062'."
    assert unworded_options(("purchase_insurance",), list(slots), span, "") == {"insurance_type"}
    assert unworded_options(("purchase_insurance",), list(slots), span, "Make it comprehensive.") == frozenset()
    # miss_func_197: 'insurance ... which should comprehensively cover the journey' says the type; a sentence for the
    # purchase without it ('Buy travel insurance ...') left the assistant to guess 'comprehensive'
    covers = "Procure travel insurance worth $350 which should comprehensively cover the journey."
    assert unworded_options(("purchase_insurance",), list(slots), covers, "") == frozenset()
    sig = json.dumps({"conditions": 0, "references": [], "transformations": []})
    texts = [d.text for d in phrase_donors("purchase_insurance", slots, sig, frozenset({"insurance_type"}))]
    assert texts and not any("comprehensive" in t for t in texts)
    _, variant, _, donors = _variant("multi_turn_base_185", 0, run_seed=3)
    assert 1 in {d["turn"] for d in donors}
    said = " ".join(m.content for m in variant.turns[1])
    assert said.count("comprehensive") == 1 and said.rstrip().endswith(("cover.", "plan.", "insurance.", "please.")), said


def test_an_optional_or_defaultable_value_a_turn_withholds_is_missed_in_words():
    """miss_param_86 withholds the tweet's tags ('... with a few hashtags we previously discussed'): 'Go ahead and tweet
    ...' would be posted as it is, nothing asked, so only a phrasing marked ``withholds`` ('Post ... with the right
    hashtags.') words that turn. A required value (cp's destination) left out makes the ask by itself; a fuel amount
    is required but filled in unasked ('Please refuel the car.' fills it up), so it too must be missed in words."""
    from rods_agents.variation.donor_search import withholds_plainly
    from rods_agents.variation.phrasebook import phrase_donors

    tags = (Slot(0, "content", '"x"', "user", False, ""), Slot(0, "tags", '["#a"]', "withheld", False, ""))
    assert not withholds_plainly(("post_tweet",), tags)
    assert withholds_plainly(("cp",), (Slot(0, "source", '"a.txt"', "user", False, ""),
                                       Slot(0, "destination", '"d"', "withheld", False, "")))
    assert not withholds_plainly(("fillFuelTank",), (Slot(0, "fuelAmount", "30", "withheld", False, ""),))
    sig = json.dumps({"conditions": 0, "references": [], "transformations": []})
    marked = [d.text for d in phrase_donors("post_tweet", tags, sig, marked_only=True)]
    plain = [d.text for d in phrase_donors("post_tweet", tags, sig)]
    assert marked and all("hashtag" in t for t in marked) and any("hashtag" not in t for t in plain)
    for v in (0, 1):
        _, variant, _, _ = _variant("multi_turn_miss_param_86", v, run_seed=3)
        held = next(t for t, calls in enumerate(variant.ground_truth) if not calls and variant.turns[t])
        assert "hashtag" in " ".join(m.content for m in variant.turns[held]).lower()
    # a withholding turn of several calls (start the engine, then the tweet) is worded call by call
    _, variant, _, donors = _variant("multi_turn_miss_param_69", 0, run_seed=3)
    assert [len(d["donors"]) for d in donors if d["turn"] == 1] == [2]
    mention = re.search(r"mentions=\['(@\w+)'\]", " ".join(c for t in variant.ground_truth for c in t)).group(1)
    assert "hashtag" in variant.turns[1][0].content and mention in variant.turns[1][0].content  # the plan's account


def test_a_story_sentence_the_rest_points_back_at_is_never_trimmed():
    """'Word is, one sector is buzzing. Catalogue the stocks in this field' (miss_param_116): without the story
    sentence 'this field' points at nothing, so the trim keeps it; a phrase about time points at nothing."""
    from rods_agents.variation.transplant import points_back

    assert points_back("Catalogue the stocks in this field for me, as I'm scouting for new investment potential.")
    assert not points_back("Could you list the files this morning?")
    assert not points_back("Open the report and send that report to Bob.")
    for v in (0, 1):
        _, variant, _, _ = _variant("multi_turn_miss_param_116", v, run_seed=3)
        text = " ".join(m.content for m in variant.turns[3])
        assert "this field" not in text or text.index("this field") > text.index(".")


def test_a_call_with_a_twin_is_named_by_its_source_exactly_where_the_seed_names_it():
    """get_outside_temperature_from_google and ..._from_weather_com do the same thing: 'Could you get the outdoor
    temperature from Google?' for a turn asking 'What's the temp outside?' settles which one (read 14: easier)."""
    from rods_agents.variation.saying import source_as_said

    google = ("get_outside_temperature_from_google",)
    assert not source_as_said("Could you get the outdoor temperature from Google?", google, "What's the temp outside?")
    assert source_as_said("How warm is it outside?", google, "What's the temp outside?")
    assert source_as_said("Ask Google how warm it is.", google, "Check Google for the temperature outside.")
    assert not source_as_said("How warm is it outside?", google, "Check Google for the temperature outside.")
    _, variant, _, _ = _variant("multi_turn_miss_func_91", 0, run_seed=3)
    assert "google" not in variant.turns[0][0].content.lower()


def test_a_human_turn_naming_another_option_of_a_choice_never_words_the_call():
    """base_42's 'how many characters of text remain' (wc mode 'c') worded base_16's count of lines (mode 'l') in a
    fresh run: the one-letter option is no word the value map could carry, so the choice words decide."""
    from rods_agents.variation.saying import names_other_option

    lines = (Slot(0, "file_name", '"a.txt"', "user", False, ""), Slot(0, "mode", '"l"', "user", False, ""))
    assert names_other_option("Ascertain for me how many characters of text remain in 'a.txt'.", ("wc",), lines)
    assert not names_other_option("How many lines does 'a.txt' have?", ("wc",), lines)
    assert not names_other_option("Count what is in 'a.txt'.", ("wc",), lines)


def test_a_call_asked_for_only_by_its_value_is_not_named_in_new_words():
    """base_185: 'My travel funds should not exceed $2000' asks for set_budget_limit without naming it; the phrasebook's
    'Please cap my travel spending at $1500' named it (read 15: easier). Such a call keeps being asked by its value."""
    from rods_agents.variation.saying import asked_as_said

    span = "My travel funds should not exceed $2000, and I'll use my designated access code, 12345-67890."
    assert not asked_as_said("Please cap my travel spending at $1500 using access token 1.", ("set_budget_limit",), span)
    assert asked_as_said("I'd rather not spend over $1500 on this trip; access token 1.", ("set_budget_limit",), span)
    assert asked_as_said("Set my budget limit to $1500.", ("set_budget_limit",), "Set my travel budget to $2000.")
    seed, variant, _, _ = _variant("multi_turn_base_185", 0, 3)
    words = " ".join(m.content for m in variant.turns[0] if m.role == "user").lower()
    assert "$" in words and not re.search(r"\b(budget|cap|limit)\b", words), words


def test_a_turn_asking_for_its_calls_out_of_their_order_gets_new_words_around_its_cue_sentence():
    # base_63 turn 1 asks to start the engine (doors locked, brake on) and only then to 'round it to nearest
    # hundredth and fill that in', though the fill runs first: its units follow the text, not the calls
    seed, task, plan, _ = _variant("multi_turn_base_63", run_seed=3)
    text = task.turns[1][0].content
    # the transformation cue keeps its sentence, its rounding in words of its own
    assert re.search(r"round it (?:off )?to (?:two decimal places|(?:the )?nearest hundredth) and fill that in", text), text
    assert "Prior to commencing the drive" not in text  # the engine sentence is worded anew, a sentence per call
    info, mine = profile_task(seed).information.turns[1], information_structure(task).turns[1]
    assert [c.method for c in mine.calls if c.explicit] == [c.method for c in info.calls if c.explicit]
    assert len(mine.transformations) == len(info.transformations) == 1


def test_a_call_whose_words_recur_in_two_sentences_is_not_placed_out_of_order():
    # base_98 turn 0: 'I want to make sure all the car doors are locked tight. Would you be able to check the door
    # locks and ensure they're secured if any are unlocked?' asks for the locks under the condition of its last
    # sentence; placed at 'locked tight', the first sentence had become 'Please lock all the doors.', unconditional
    seed = bfcl_task("multi_turn_base_98")
    trace = trace_task(seed)
    sources = classify_arguments(seed, trace)
    info = information_structure(seed, trace, sources)
    methods, slots = explicit_calls(info, 0, *turn_slots(trace, sources, 0))
    text = seed.turns[0][0].content
    assert methods == ("displayCarStatus", "lockDoors") and info.turns[0].conditions
    units = _units(text, info, 0, methods, slots)
    assert units is None or all("unlocked" in text[lo:hi] for a, b, lo, hi in units if a <= 1 < b), units


def test_a_dictated_message_quoting_a_result_quotes_the_variants_result():
    # base_62's message quotes the distance ('The distance from Rivermist to Stonebrook is 750.0 km.'); a variant
    # with other cities must quote the new pair's distance, with the same one decimal, not the seed's 750.0
    _, task, _, _ = _variant("multi_turn_base_62", run_seed=3)
    calls = trace_task(task).calls
    distance = next(c for c in calls if c.name == "estimate_distance")
    message = next(c for c in calls if c.name == "send_message").args["message"]
    km = json.loads(distance.result)["distance"]
    assert distance.args != {"cityA": "83214", "cityB": "74532"} and km != 750.0  # another route, another distance
    assert f" is {km:.1f} km." in message and "750.0" not in message


def test_quoted_numbers_are_restated_once_each_and_never_rounded():
    from rods_agents.variation.rederive import rederive_embedded, restated

    assert restated("750.0", 780.0) == "780.0" and restated("750", 780.0) == "780"
    assert restated("750.0", 780.46) is None  # '780.5' would quote a distance the tool never returned
    assert restated("750", float("inf")) is None
    # two quoted distances whose new values chain (750 -> 780 and 780 -> 980): each is rewritten once, in one pass
    seed = bfcl_task("multi_turn_base_62")
    message = "send_message(receiver_id='USR002', message='A to B is 750.0 km, B to C is 780.0 km.')"
    gt = [["estimate_distance(cityA='83214', cityB='74532')", "estimate_distance(cityA='94016', cityB='62947')",
           message], *seed.ground_truth[1:]]
    seed = seed.model_copy(update={"ground_truth": gt})
    variant_gt = [["estimate_distance(cityA='94016', cityB='62947')", "estimate_distance(cityA='94016', cityB='83214')",
                   message], *gt[1:]]
    out = rederive_embedded(seed, trace_task(seed), variant_gt, seed.initial_config)
    assert "A to B is 780.0 km, B to C is 980.0 km." in out[0][2], out[0][2]


def test_a_sentence_naming_the_implicit_lookups_values_gets_no_context_sentence():
    """Read 18: 'There's a trip from Sunset Valley to Shadowridge on my mind. How far is it from Sunset Valley to
    Shadowridge?' named both cities twice. A sentence that names the cities of the implicit zip-code lookups itself
    needs no context sentence before it; the re-measure still finds them stated."""
    from rods_agents.variation.saying import says_all

    cities = (Slot(-1, "get_zipcode_based_on_city.city", '"Sunset Valley"', "user", False, ""),
              Slot(-2, "get_zipcode_based_on_city.city", '"Shadowridge"', "user", False, ""))
    assert says_all(cities, "How far is it from Sunset Valley to Shadowridge?")
    assert not says_all(cities, "How far is it from here to Shadowridge?")
    for v in range(2):
        seed, variant, _, _ = _variant("multi_turn_miss_func_67", v, run_seed=3)
        first = " ".join(m.content for m in variant.turns[0] if m.role == "user")
        for city in {"Sunset Valley", "Shadowridge", "Maplecrest", "Silverpine", "San Francisco"}:
            assert first.count(city) <= 1, first


def test_a_value_inside_a_file_name_is_not_said_as_a_folder():
    from rods_agents.variation.saying import says_all

    folder = (Slot(-1, "cd.folder", '"research"', "user", False, ""),)
    assert not says_all(folder, "Please back up 'research_notes.txt' somewhere.")
    assert says_all(folder, "The file is in the research folder.")


def test_a_folder_the_file_is_in_is_said_as_a_place_not_only_as_the_folder_to_delete():
    """miss_func_38: 'locating a file named findings_report within this SuperResearch ... remove it and the directory'.
    Worded call by call as 'Please get rid of the file contracts. Then erase the directory Minutes.', the text named
    the folder only as the rmdir's argument, and nothing said the file is inside it (the independent read of
    2026-12-03). A context sentence now places it."""
    from rods_agents.variation.assembly import located_only_as_argument

    hidden = (Slot(-1, "cd.folder", json.dumps("Minutes"), "user", False),)
    target = (_slot("file_name", "contracts"), Slot(1, "dir_name", json.dumps("Minutes"), "user", False), *hidden)
    assert located_only_as_argument(hidden, target, "Remove the file 'contracts'. Then erase the directory 'Minutes'.")
    assert not located_only_as_argument(hidden, target, "The file is in 'Minutes'. Remove 'contracts', then the "
                                        "directory 'Minutes'.")
    for v in range(2):
        seed, variant, _, _ = _variant("multi_turn_miss_func_38", v)
        said = next(m.content for m in variant.turns[0] if m.role == "user")
        folder = next(c.split("'")[1] for c in variant.ground_truth[1] if c.startswith("rmdir("))
        assert said.count(folder) >= 2, said  # once as the place of the file, once as the folder to delete


def _ticket_slots(seed, turn: int):
    trace = trace_task(seed)
    return trace, turn_slots(trace, classify_arguments(seed, trace), turn)[1]


def test_the_only_ticket_in_the_queue_needs_no_words_to_pick_it():
    """base_125 asks for 'the most recent ticket I opened' with one ticket in the queue: the value picks nothing, so a
    phrasebook sentence ('I'd like to check the details of my support ticket.') may ask for the same call. A second
    ticket in the queue makes the words pick again (fails without :func:`mark_sole`: every state value was refused)."""
    seed = bfcl_task("multi_turn_base_125")
    trace, slots = _ticket_slots(seed, 3)
    (ticket,) = [x for x in mark_sole(seed, trace, 3, slots) if x.param == "ticket_id"]
    assert ticket.source == "state" and ticket.sole
    config = json.loads(json.dumps(seed.initial_config))
    queue = config["TicketAPI"]["ticket_queue"]
    queue.append({**queue[0], "id": 2, "subject": "Login issue"})
    crowded = seed.model_copy(update={"initial_config": config})
    trace, slots = _ticket_slots(crowded, 3)
    assert not any(x.sole for x in mark_sole(crowded, trace, 3, slots))


def test_an_order_id_is_no_second_ticket():
    """base_125 resolves the ticket it just read after reading an order's details: both results hold an 'id', but only
    a ticket result counts against 'this ticket', so the resolve call's ticket id is read from get_ticket and a
    sentence may point at it ('Please mark this ticket resolved, ...'). Before, the order's id left it unsingled and
    the seed's sentence stayed in all eight samples of scenario 125."""
    seed = bfcl_task("multi_turn_base_125")
    _, slots = _ticket_slots(seed, 4)
    (ticket,) = [x for x in slots if x.param == "ticket_id"]
    assert (ticket.source, ticket.producer) == ("call", "get_ticket")
    _, variant, _, _ = _variant("multi_turn_base_125")
    for t in (3, 4):
        assert user_text(variant.model_copy(update={"turns": variant.turns[t:t + 1]})) != \
            user_text(seed.model_copy(update={"turns": seed.turns[t:t + 1]}))


def test_new_words_do_not_carry_the_seeds_story_sentence_for_a_handle_no_call_takes():
    """base_188 asks to retweet tweet 0 after 'Oh, I just noticed an amazing tweet from @TravelInsider about dream
    destinations.': no call takes the handle, yet the new request carried that sentence along (with_specifics keeps a
    turn's handles), so the turn stayed the seed's story in the seed's words in all eight samples. The sentence goes
    where the variant measures the same without it (fails without transplant._drop_carried_context)."""
    seed, variant, _, _ = _variant("multi_turn_base_188")
    said = " ".join(m.content for m in variant.turns[5] if m.role == "user")
    assert "retweet" in said.lower() and "@TravelInsider" not in said, said
    assert "@TravelInsider" in " ".join(m.content for m in seed.turns[5])


def test_a_carried_sentence_a_call_needs_stays():
    """The drop is measured: 'Your user id is USR001.' where an implicit login takes the id would move the id's source
    from the user's words to nowhere, so a sentence holding a value a call takes is never dropped."""
    from rods_agents.variation.transplant import _drop_carried_context, _measure, _mismatch_keys, _state_ok

    seed = bfcl_task("multi_turn_base_188")
    trace = trace_task(seed)
    sources = classify_arguments(seed, trace)
    info = information_structure(seed, trace, sources)
    per_turn, base_info, _ = _measure(seed, trace)
    measured = (per_turn, _mismatch_keys(info, base_info), _state_ok(seed, trace, sources, set(range(len(seed.turns)))),
                set(range(len(seed.turns))))
    turns = [list(t) for t in seed.turns]
    carried = {t: " ".join(m.content for m in turn if m.role == "user") for t, turn in enumerate(turns)}
    out, dropped = _drop_carried_context(info, seed, turns, trace, carried, set(range(len(turns))), measured)
    kept = " ".join(m.content for turn in out for m in turn if m.role == "user")
    for call in (c for calls in seed.ground_truth for c in calls):
        for value in re.findall(r"'([^']+)'", call):
            if value in " ".join(carried.values()):
                assert value in kept, (value, dropped)  # every value a call takes and the text said is still said


def test_a_dictated_message_is_never_cut_at_its_inner_full_stop():
    """The quoted message 'My strategy is shifting ... order. Current balance in my account is $10000.' (base_143)
    reads as two sentences; its second half must not count as a sentence to drop, or the user's words lose part of
    the text the ground truth sends (found in the 400 x 2 run before this landed)."""
    from rods_agents.variation.transplant import _cuts_a_quote

    text = "Log me in as USR001. Then text USR003: 'My strategy is shifting. Current balance in my account is $10000.'"
    pieces = re.split(r"(?<=[.?!])\s+", text)
    assert [_cuts_a_quote(x, text) for x in pieces] == [False, True, True]
    assert not _cuts_a_quote("Log me in as USR001.", text)


def test_one_request_to_show_and_sort_a_file_gets_new_words():
    """base_18 asks 'Within the 'MonthlySummary.docx' file, display the content and sort it alphabetically by line':
    one clause names the file for both calls, so a sentence per call cannot word it (it would name the file twice),
    and no other human turn asks for the pair. The phrasebook's cat+sort sentences do; before them the turn kept the
    seed's words in all eight samples."""
    seed, variant, _, _ = _variant("multi_turn_base_18")
    said = " ".join(m.content for m in variant.turns[1] if m.role == "user")
    file_name = re.search(r"cat\(file_name='([^']+)'\)", variant.ground_truth[1][0]).group(1)
    assert variant.ground_truth[1][1] == f"sort(file_name='{file_name}')"
    assert file_name in said and "display the content and sort it" not in said, said


def test_an_identity_sentence_after_a_quoted_text_is_carried_without_the_closing_quote():
    """miss_param_131's seed says "... 'I just executed another order. What do you think of it?' I am Jane." and the
    new words opened with "' I am Jane." (the quote closing the dictated text; the read of 2026-12-04)."""
    from rods_agents.variation.transplant import with_identity

    span = "Forward my latest trading summary 'I just executed another order. What do you think of it?' I am Jane."
    out = with_identity("I'd like to send this message: 'Placed yet another order.'", span, {"jane"})
    assert out is not None and out.startswith("I am Jane. "), out


def test_a_sentence_that_leaves_the_recipient_out_points_at_nobody():
    """miss_param_131 withholds the advisor a message goes to ('send to my financial advisor', then 'My advisor is
    Alice.'): 'Please pass along '...' to them.' pointed at nobody said before. A pronoun in a sentence that leaves a
    value out stands for that value, so such sentences are not offered there (the read of 2026-12-04); a sentence
    without one still is."""
    from rods_agents.analysis.information_structure import _QUOTED
    from rods_agents.variation.donor_search import phrasebook_donors
    from rods_agents.variation.turn_bank import withholding_calls

    seed = bfcl_task("multi_turn_miss_param_131")
    trace = trace_task(seed)
    sources = classify_arguments(seed, trace)
    info = information_structure(seed, trace, sources)
    methods, target, signature = withholding_calls(seed, trace, sources, info, 5)
    assert methods == ("send_message",) and any(x.source == "withheld" for x in target)
    span = " ".join(m.content for m in seed.turns[5] if m.role == "user")
    earlier = " ".join(m.content for t in seed.turns[:5] for m in t if m.role == "user")
    from rods_agents.variation.assembly import _rebased

    whole = _rebased(target, 0, len(methods), True)
    texts = [d.text for d in phrasebook_donors(seed, 5, 0, methods, whole, signature, set(), set(), span, earlier)]
    assert texts and not any(re.search(r"\b(?:them|they|it)\b", _QUOTED.sub("''", t)) for t in texts), texts


def test_a_call_asked_for_by_its_goal_gets_new_words_that_still_do_not_name_it():
    # read of 2026-12-05, miss_func_177: 'confirm their flight booking's details' became 'Please pull up the invoice
    # for the flight we booked.' New words for such a turn come from the goal phrasings, never the naming ones
    from rods_agents.analysis.information_structure import asked_by_goal

    reworded = 0
    for seed_id in ("multi_turn_base_177", "multi_turn_miss_func_177"):
        g = next(t for t, calls in enumerate(bfcl_task(seed_id).ground_truth) if any("retrieve_invoice" in c for c in calls))
        for v in range(4):
            seed, variant, _plan, donors = _variant(seed_id, v)
            t = g - 1 if variant.turns[g] == [] or not any(m.role == "user" for m in variant.turns[g]) else g
            text = " ".join(m.content for m in variant.turns[t] if m.role == "user")
            assert asked_by_goal("retrieve_invoice", text) is not False, text
            reworded += any(d["turn"] == t for d in donors)
    assert reworded >= 2


def test_a_detail_no_call_takes_stays_said_when_the_seeds_sentence_for_it_goes():
    # read of 2026-12-05, long_context_189: 'The cardholder's name matches mine, Michael Thompson, and I can provide
    # the CVV when needed, which is 456.' was not read as a CVV, so it was carried whole and then dropped as the seed's
    # story; the CVV the assistant had to leave aside went with it. The sentence goes, the CVV stays, in new words
    for v in range(2):
        seed, variant, _plan, donors = _variant("multi_turn_long_context_189", v, 3)
        text = " ".join(m.content for m in variant.turns[0] if m.role == "user")
        assert "456" in text and "Michael Thompson" not in text, text


def test_a_withholding_turn_never_takes_words_whose_pronoun_points_at_the_withheld_value():
    # read of 2026-12-05, miss_param_49: 'For a different file, could you determine the total number of lines it
    # holds?' (the assistant must ask which) took another seed's 'I need its length in lines, please.': 'its' is the
    # third file of the turn before, so the question was answered and the empty ground truth of the turn was wrong
    from rods_agents.variation.donor_search import says_withheld_by_pronoun

    assert says_withheld_by_pronoun("I need its length in lines, please.")
    assert not says_withheld_by_pronoun("How many lines does a file have? Post 'it works' too.")
    for v in range(4):
        seed, variant, _plan, _donors = _variant("multi_turn_miss_param_49", v, 3)
        text = " ".join(m.content for m in variant.turns[2] if m.role == "user")
        own = " ".join(m.content for m in seed.turns[2] if m.role == "user")  # 'it' is 'a different file' there
        assert not variant.ground_truth[2] and (text == own or not says_withheld_by_pronoun(text)), text


def test_a_value_withheld_from_an_implicit_lookup_is_withheld_from_the_call_it_feeds_too():
    # miss_param_124: 'acquire a hefty slice—say, 100 shares of the company at the prevailing market price' leaves out
    # AAPL, the symbol of the implicit price lookup and of the order alike. Only the lookup's was marked withheld, so
    # the turn (the order, its one explicit call) had nothing withheld and always kept the seed's words
    from rods_agents.variation.donor_search import _phrasebook_donors
    from rods_agents.variation.transplant import _measure
    from rods_agents.variation.turn_bank import withholding_calls

    seed = bfcl_task("multi_turn_miss_param_124")
    trace = trace_task(seed)
    _sources, info, sources = _measure(seed, trace)
    methods, target, signature = withholding_calls(seed, trace, sources, info, 0)
    assert methods == ("place_order",) and any(x.param == "symbol" and x.source == "withheld" for x in target)
    texts = [d.text for d in _phrasebook_donors(seed, 0, 0, methods, target, signature, set(), set(),
                                                seed.turns[0][0].content, "")]
    assert texts and all("AAPL" not in t and "Apple" not in t for t in texts), texts


def test_a_recipient_supplied_by_name_is_answered_by_name_and_keeps_who_they_are():
    """'My advisor is Alice.' supplies a receiver id the assistant looks up by the name: the new answer names Alice,
    never the id (which would spare the lookup), and keeps 'my advisor', which a later turn points back at ('the
    last message to my advisor'). Before, no answer fitted a named value and the seed's words stayed in all 8
    samples of scenario 131."""
    from rods_agents.analysis.obtainability import public_states
    from rods_agents.variation.donor_search import lookup_names
    from rods_agents.variation.transplant import _supply_texts

    seed = bfcl_task("multi_turn_miss_param_131")
    trace = trace_task(seed)
    info = information_structure(seed, trace, classify_arguments(seed, trace))
    turn = next(x.withheld.supplied_at for x in info.turns if x.withheld is not None)
    assert "My advisor is Alice" in " ".join(m.content for m in seed.turns[turn])
    assert _supply_texts(seed, trace, info, turn) == []  # without the names the value is looked up by
    options = _supply_texts(seed, trace, info, turn, lookup_names(trace, public_states(seed)))
    assert options and all("Alice" in o and "my advisor" in o and "USR" not in o for o in options)
    assert "My advisor is Alice." not in options


def test_the_booking_a_result_names_is_no_pick_from_the_history_beside_it():
    """book_flight returns the new booking_id and the whole booking history; 'Kindly cancel the flight' points at the
    booking just made. Counted as a pick with no cue, the turn kept its seed's words in every sample (long_context_181);
    a place in a list is still a pick."""
    seed = bfcl_task("multi_turn_long_context_181")
    trace = trace_task(seed)
    info = information_structure(seed, trace, classify_arguments(seed, trace))
    cancel = next(t for t, calls in enumerate(seed.ground_truth) if any(c.startswith("cancel_booking") for c in calls))
    assert info.turns[cancel].unresolved_picks == 0 and not info.turns[cancel].references
    _, variant, _, donors = _variant("multi_turn_long_context_181", 0, run_seed=3)
    assert cancel in {d["turn"] for d in donors}
    assert "sparing no time" not in " ".join(m.content for m in variant.turns[cancel])
    listed = bfcl_task("multi_turn_base_110")  # 'the last one' among the listed stocks
    ltrace = trace_task(listed)
    linfo = information_structure(listed, ltrace, classify_arguments(listed, ltrace))
    assert any(t.references or t.unresolved_picks for t in linfo.turns)


def test_an_order_at_the_going_market_price_asks_for_no_price_lookup_in_words():
    """'at today's market price' names the price an order takes, as 'at the current market price' does: the price
    lookup stays implicit. Read as asking for the lookup, the phrasebook's words failed the re-measure and the
    withholding turns of scenarios 126 and 148 kept their seed's words."""
    from rods_agents.analysis.information_structure import lexicon

    cues = lexicon().methods["get_stock_info"][0]
    for said in ("I'd like to pick up shares of OMEG at today's market price.",
                 "Snag 150 shares of MSFT at the going market price.", "Buy it at the current price."):
        assert not any(p.search(said) for p in cues), said
    assert any(p.search("What's the market price of NVDA today?") for p in cues)


def test_a_fill_to_capacity_turn_is_reworded_in_every_sibling_slot():
    """base_56's fill turn ('top up my vehicle to end with 50 gallons'): a sibling's first donor failed the re-measure
    and came back in every later assembly, and the phrasebook's fill-up sentences ('Top the tank off for me.') were
    refused for not saying 50, the capacity their words imply; the seed's words stayed in 5 of 8 samples. Words that
    failed are passed over in the next assembly, and a recipe's result need not be said as a number."""
    from rods_agents.variation.saying import with_specifics

    span = "Before embarking on this journey, please top up my vehicle to end with 50 gallons of fuel."
    assert with_specifics("Top the tank off for me.", span, ("fillFuelTank",), "fillFuelTank(fuelAmount=40)") is None
    assert with_specifics("Top the tank off for me.", span, ("fillFuelTank",), "fillFuelTank(fuelAmount=40)",
                          implied=frozenset({50.0})) == "Top the tank off for me."
    seed = bfcl_task("multi_turn_base_56")
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    fill = next(t for t, calls in enumerate(seed.ground_truth) if any(c.startswith("fillFuelTank") for c in calls))
    for slot in range(8):
        plan = sample_variant_plan(seed, profile, trace, rng_for(3, seed.id, slot, 0))
        turns, donors = rewrite_plan(seed, profile, plan, rng_for(3, seed.id, slot, "rewrite"), slot)
        assert fill in {d["turn"] for d in donors}, slot
        assert "end with 50 gallons" not in " ".join(m.content for m in turns[fill])


def test_a_conversation_never_opens_by_answering_something_unsaid():
    """'Go ahead and set the budget at $5000.' as the first words of a task answers nothing (read 26): a first turn
    asks plainly; later turns keep the words, where they answer what came before."""
    from rods_agents.variation.transplant import opening

    assert opening("Go ahead and set the budget at $5000.", "") == "Please set the budget at $5000."
    assert opening("Go ahead and set the budget at $5000.", "Book the flight.") == "Go ahead and set the budget at $5000."
    assert opening("Book it. Go ahead and pay.", "") == "Book it. Go ahead and pay."


def test_a_folder_the_turn_names_in_the_singular_is_named_so_by_the_new_words():
    """'Go into document folder' for the folder 'documents' (base_2): new words naming 'documents' said more than the
    seed, so every sample of scenario 2 kept the seed's sentence; they now name 'the document folder', and only
    sentences that keep it a folder fit ('Please navigate into document.' does not)."""
    from rods_agents.variation.saying import named_as

    span = "Go into document folder and Could you draft up a create a document titled 'TeamNotes.txt'?"
    assert named_as("documents", span) == "document"
    assert named_as("documents", "Open the documents folder.") is None  # said as it is
    assert named_as("reports", "Write a report about the folder.") is None  # not next to 'folder'
    seed, variant, _, donors = _variant("multi_turn_base_2", 0, run_seed=3)
    first = " ".join(m.content for m in variant.turns[0] if m.role == "user")
    assert 0 in {d["turn"] for d in donors} and "draft up a create" not in first
    assert re.search(r"\bdocument (?:folder|directory)\b", first)


def test_a_supplied_handle_or_hashtag_list_is_answered_as_the_seed_gives_it():
    """"His handle is 'huanzhimao01'." supplies a mention without its '@' (adding it stays the assistant's) and
    "I mean these: '#Journey, #SmoothRide, #Grateful'." a list of tags: both kept their seed's words in every sample
    (no answer took a list). The new answers write the tags as the seed's answer does."""
    from rods_agents.variation.transplant import _supply_texts

    for seed_id, want, never in (("multi_turn_miss_param_68", "'huanzhimao01'", "@huanzhimao01"),
                                 ("multi_turn_miss_param_86", "#SmoothRide", None)):
        seed = bfcl_task(seed_id)
        trace = trace_task(seed)
        info = information_structure(seed, trace, classify_arguments(seed, trace))
        turn = next(x.withheld.supplied_at for x in info.turns if x.withheld is not None)
        options = _supply_texts(seed, trace, info, turn)
        said = " ".join(m.content for m in seed.turns[turn] if m.role == "user")
        assert options and said not in options and all(want in o for o in options), options
        assert never is None or not any(never in o for o in options)


def test_joined_sentences_say_please_once_and_a_kept_lead_stays_with_its_condition():
    """Read 27: 'I'd like every door locked, please. Then engage the parking brake, please.' (a turn's phrasebook
    sentences say 'please' once), and 'Based on the insights gathered. If 'MSFT' appears promising, ...' (the kept
    words leading into a condition mid-sentence stay one sentence with it)."""
    from rods_agents.variation.assembly import _without_please

    assert _without_please("Then engage the parking brake, please.") == "Then engage the parking brake."
    assert _without_please("Please book it.") == "Book it."
    assert _without_please("Could you, please, lock it?") == "Could you lock it?"
    assert _without_please("Tweet 'please help' now.") == "Tweet 'please help' now."
    _, variant, _, _ = _variant("multi_turn_long_context_115", 0, run_seed=3)
    text = " ".join(m.content for m in variant.turns[1] if m.role == "user")
    assert text.startswith("Based on the insights gathered, if "), text


def test_a_withholding_turn_that_points_back_at_its_file_or_title_gets_new_words():
    """'Finally, show the last several lines the file.' (the file named before, the count withheld) and 'Please create
    a new ticket with same title and description 'X' but now with a different priority' (the title pointed back at,
    the priority withheld) had no phrasing leaving both unsaid, and kept their seed's words in every sample."""
    for seed_id, turn, seed_words in (("multi_turn_miss_param_1", 3, "last several lines the file"),
                                      ("multi_turn_miss_param_27", 2, "but now with a different priority")):
        seed, variant, _, donors = _variant(seed_id, 0, run_seed=3)
        text = " ".join(m.content for m in variant.turns[turn] if m.role == "user")
        assert turn in {d["turn"] for d in donors} and seed_words not in text, text
        info = information_structure(variant)
        assert info.turns[turn].withheld is not None  # still withheld there


def test_words_naming_a_dictated_text_right_before_it_pick_nothing():
    """'Forward my latest trading summary 'I just executed another order. ...'' names the message it dictates; read
    as a recency pick with no value to pick, it kept base_131's send turn in the seed's words in every sample."""
    from rods_agents.variation.cues import stray_cues

    text = "Forward my latest trading summary 'I just executed another order. What do you think of it?' I am Jane."
    assert stray_cues(text, ("send_message",)) == []
    assert stray_cues("Show me the latest order, then send 'Done with it all now.' to Bob.", ("send_message",))
    _, variant, _, donors = _variant("multi_turn_base_131", 0, run_seed=3)
    assert 5 in {d["turn"] for d in donors}
    said = " ".join(m.content for m in variant.turns[5] if m.role == "user")
    name = re.search(r"I am ([A-Z][a-z]+)", said)  # who the user is stays said (Jane, or the name the plan gave her)
    assert name and name.group(1) in variant.initial_config["MessageAPI"]["user_map"]


def test_an_address_whose_city_the_text_names_gets_another_street_and_an_untaken_branch_stays():
    """base_66 names 'this gorgeous little spot in Berkeley, California' beside the address it navigates to: the
    address was never renamed, so every sample was new only in digits. It now gets another street of the same city.
    The first turn's 'If it is reachable, set navigation to ...' governs no call (the trip is not reachable), so no
    measure saw it dropped; it stays beside the new words."""
    from rods_agents.variation.value_kinds import fresh

    assert fresh("2107 Channing Way, Berkeley, CA", "street", random.Random(1), set()).endswith(", Berkeley, CA")
    seed = bfcl_task("multi_turn_base_66")
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    plan = sample_variant_plan(seed, profile, trace, rng_for(3, seed.id, 0, 0))
    new = plan.renames.get("2107 Channing Way, Berkeley, CA", "")
    assert new.endswith(", Berkeley, CA") and not new.startswith("2107")
    turns, _ = rewrite_plan(seed, profile, plan, rng_for(3, seed.id, 0, "rewrite"), 0)
    said = " ".join(m.content for m in turns[0] if m.role == "user")
    assert re.search(r"\bif (?:it is reachable|that's within reach|it can make it|the trip is doable|we can reach it)\b",
                     said, re.I) and re.search(r"\bnavigat", said, re.I), said


def test_a_turn_saying_where_a_file_is_gets_new_words_that_still_say_both():
    """'I remember I should have a document called 'X' in the 'Y' folder.' asks for no call: it names the folder an
    implicit cd enters and the file the next turn copies. No donor words a turn without calls, so every sample of
    scenario 9 kept it; a context sentence naming both replaces it, and the cd stays implicit."""
    seed = bfcl_task("multi_turn_base_9")
    assert "I remember I should have a document called" in seed.turns[0][0].content
    _, variant, _, donors = _variant("multi_turn_base_9", 0, run_seed=3)
    first = " ".join(m.content for m in variant.turns[0] if m.role == "user")
    assert 0 in {d["turn"] for d in donors} and "I remember I should have" not in first
    folder = re.search(r"cd\(folder='([^']+)'\)", variant.ground_truth[0][0]).group(1)
    assert f"'{folder}'" in first and re.search(r"'[\w]+\.txt'", first)
    info = information_structure(variant)
    assert not any(c.explicit for c in info.turns[0].calls)  # the cd is still left to the assistant


def test_words_naming_a_ticket_nobody_spoke_of_give_way_to_words_that_say_which():
    """'Can you check on the ticket?' after turns about stocks (read 28): 'the ticket' points at nothing said before.
    Where a sentence names the thing by itself ('the support ticket I opened'), it goes first; a tweet's tags are
    never said to go 'at the end' of its text (read 28: that reads as part of the content)."""
    from rods_agents.variation.donor_search import _dangling
    from rods_agents.variation.phrasebook import phrasebook

    assert _dangling("Can you check on the ticket?", "Show me my watchlist. Buy 50 shares of F.")
    assert not _dangling("Can you check on the ticket?", "I opened a support ticket last week.")
    assert not _dangling("Could you pull up the support ticket I opened?", "Show me my watchlist.")
    assert not any("at the end" in p.text for p in phrasebook().get("post_tweet", ()))


def test_a_date_spread_over_a_clause_is_repeated_and_the_turn_gets_new_words():
    """base_190 books 'a flight on the 15th of next month, which is November of 2026': no form a reader takes at a
    glance, so putting the date together is the assistant's (a transformation of the text). No phrasing could write
    it, so every sample of scenario 190 kept the seed's whole first turn and its siblings were copies. The clause is
    now repeated as it stands inside new words, and the date is still left to the assistant."""
    from rods_agents.variation.saying import named_as

    assert named_as("2026-11-15", "a flight on the 15th of next month, which is November of 2026. I'll pay") == \
        "the 15th of next month, which is November of 2026"
    assert named_as("2026-11-15", "a journey on the 15th of the year 2026's eleventh month.") == \
        "the 15th of the year 2026's eleventh month"
    assert named_as("2026-11-15", "Post 'Off on the 15th!' in November 2026.") is None  # a quoted text dates nothing
    assert named_as("2026-11-15", "the 15th, or the 15th of next month, in November 2026?") is None  # which 15th?
    for slot in range(2):
        _, _, turns, donors = _rewrite("multi_turn_base_190", slot)
        text = " ".join(m.content for m in turns[0] if m.role == "user")
        assert 0 in {d["turn"] for d in donors}, slot
        assert "the 15th of next month, which is November of 2026" in text
        assert "quest to escape" not in text


def test_a_price_the_user_expects_is_said_again_beside_new_words_for_the_booking():
    """base_193 books a flight 'at a cost of 4700 dollars', a price no call takes: new words for the booking lacked it
    and could not carry its sentence (it asks for the booking itself), so all eight samples kept the seed's turn. The
    expected price is now said again on its own, as an estimate, with the plan's price."""
    from rods_agents.variation.saying import restated_numbers

    said = restated_numbers("book your journey for December 25th, 2026, travelling first class, at a cost of 4700 dollars.",
                            {4700.0}, "k")
    assert said is not None and len(said) == 1 and "4700 dollars" in said[0]
    assert restated_numbers("a trip at a cost of my own choosing, for 3 people", {3.0}, "k") is None
    seed, plan, turns, donors = _rewrite("multi_turn_base_193")
    text = " ".join(m.content for m in turns[1] if m.role == "user")
    assert 1 in {d["turn"] for d in donors}
    assert "idyllic escape" not in text and "dollars" in text


def test_a_value_given_in_two_parts_is_given_so_by_the_new_words():
    """base_153 gives the passport as 'P followed by 12345678': joining the parts is the assistant's (a
    transformation). No phrasing could say it, and 'followed by' read as a cue no call held, so every sample kept the
    seed's first turn whole. The new words now say the value in the same two parts."""
    from rods_agents.variation.saying import named_as

    assert named_as("P12345678", "the number on my passport is P followed by 12345678. My name") == "P followed by 12345678"
    assert named_as("P12345678", "my passport is P12345678") is None  # said as it is: written as it is
    assert named_as("P12345678", "Q followed by 12345678") is None
    seed, plan, turns, donors = _rewrite("multi_turn_base_153")
    text = " ".join(m.content for m in turns[0] if m.role == "user")
    assert 0 in {d["turn"] for d in donors}
    assert "P followed by 12345678" in text and "packing my bags" not in text


def test_a_route_picked_from_the_airport_list_keeps_its_pick_words_inside_new_words():
    """base_185 prices a flight 'from the first to the second airport in your inventory' and caps the budget in the
    same turn: both ends are picked by position from the airport list, which read as one phrase for two values, so
    no sentence fit and all eight samples kept the seed's first turn. A phrasing marked ``pick`` for both ends now
    takes the seed's words for each, and the turn's other unit keeps its own words."""
    from rods_agents.variation.cues import route_picks

    assert route_picks("Opt to fly from the first airport to the second one in the system's list. Could you") == {
        "travel_from": "the first airport", "travel_to": "the second one in the system's list"}
    assert route_picks("a fare from the first to the second airport in your inventory, all set") == {
        "travel_from": "the first", "travel_to": "the second airport in your inventory"}
    assert route_picks("a flight from SFO to LAX") == {}
    seed, plan, turns, donors = _rewrite("multi_turn_base_185")
    text = " ".join(m.content for m in turns[0] if m.role == "user")
    assert 0 in {d["turn"] for d in donors}
    assert re.search(r"from the (?:airport listed )?first (?:airport )?(?:in your inventory )?to the (?:one listed )?second"
                     r"(?: airport| one)?(?: in your inventory)?", text), text
    assert "mapping out the logistics" not in text


def test_a_vague_miss_param_turn_gets_new_words_as_vague_as_the_seeds():
    """miss_param_151 says 'Oh no, something unforeseen circumstances happened' and leaves the next turn to ask for
    the cancellation: the turn asks for no call, so no donor fit and every sample kept the seed's sentence. It now
    gets a request as vague as the seed's, naming no call and no value, and the next turn still says what to do."""
    from rods_agents.analysis.information_structure import information_structure
    from rods_agents.variation.phrasebook import vague_requests

    texts = vague_requests()["cancel_booking.booking_id"]
    assert texts and not any(re.search(r"\bcancel|\bbooking", t, re.I) for t in texts)
    seed, plan, turns, donors = _rewrite("multi_turn_miss_param_151")
    said = " ".join(m.content for m in turns[1] if m.role == "user")
    assert said in texts and {"turn": 1, "donors": [["phrasebook:vague", 1]]} in donors
    variant = build_variant(seed, turns, plan, 0, 3)
    assert information_structure(variant).turns[1].withheld == information_structure(seed).turns[1].withheld


def test_a_kept_lead_keeps_the_conjunction_and_a_turn_says_please_once():
    """Read 29: '... for budgeting purposes, if the cost is under 2000, book the flight' lost the seed's 'and' that
    handed the condition over, and 'Let me peek at the file 'notes', please. Forward it exactly to Farid please.' said
    please twice. The conjunction stays, and new words drop their 'please' where kept words have one."""
    def first_turn(seed_id: str) -> str:
        turns = _rewrite(seed_id)[2]
        return " ".join(m.content for m in turns[0] if m.role == "user")

    text = first_turn("multi_turn_base_151")
    assert re.search(r"budget(?:ing purposes)?, and (?:if|as long as|provided) [^,]* 2000,",
                     text), text
    assert len(re.findall(r"\bplease\b", first_turn("multi_turn_miss_func_41"), re.I)) <= 1


def _rewrite(seed_id: str, slot: int = 0) -> tuple:
    """(seed, plan, turns, donors): the offline plan and rewrite of ``seed_id`` in sibling ``slot`` at run seed 3."""
    seed = bfcl_task(seed_id)
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    plan = sample_variant_plan(seed, profile, trace, rng_for(3, seed.id, slot, 0))
    turns, donors = rewrite_plan(seed, profile, plan, rng_for(3, seed.id, slot, "rewrite"), slot)
    return seed, plan, turns, donors


def test_an_order_for_a_stock_an_earlier_turn_named_points_back_at_it():
    """Read 30, base_109: 'Pick up 100 shares of a stock I've had my eye on' for the stock the turn before looked up
    reads as another, unnamed stock: a careful assistant would ask which. Such words now word only a miss_param turn
    that withholds the symbol ('withholds'); the order points back at the stock ('Buy 100 shares of it')."""
    for slot in range(8):
        said = " ".join(m.content for m in _rewrite("multi_turn_base_109", slot)[2][2] if m.role == "user")
        assert not re.search(r"\ba (?:stock|company)\b", said), said


def test_a_human_turn_asking_for_a_fuel_check_words_only_a_task_that_checks_the_fuel():
    """Read 30, long_context_67: base_68's 'Can you confirm there's enough fuel, and ensure the engine's primed for a
    seamless start?' (its own ground truth checks nothing: an earlier turn had) worded a start with no fuel check, so
    the text asked for a call the ground truth never makes. It now words only a task whose calls read the fuel."""
    from rods_agents.variation.cues import names_other_work

    text = "Can you confirm there's enough fuel, and ensure the engine's primed for a seamless start?"
    assert names_other_work(text, {"vehiclecontrolapi"}, "startEngine(ignitionMode='START')")
    assert not names_other_work(text, {"vehiclecontrolapi"}, "displayCarStatus(option='fuel') startEngine()")
    for slot in range(4):
        said = " ".join(m.content for turn in _rewrite("multi_turn_long_context_67", slot)[2] for m in turn)
        assert "enough fuel" not in said


def test_a_re_planned_sample_still_takes_a_whole_turn_wording():
    """Slots past the scenario's eight (a re-plan, a later assembly) read their sibling rank past the eight fitting
    donors a slot picks among, and every whole-turn wording was refused: base_5's 'display the contents of
    'archive_summary.txt' ... Sort the contents alphabetically' stayed the seed's in every re-planned sample."""
    for slot in (12, 13, 14):
        said = " ".join(m.content for m in _rewrite("multi_turn_base_5", slot)[2][1] if m.role == "user")
        assert "archive_summary.txt" in said and "Sort the contents alphabetically" not in said, said


def test_a_pick_two_calls_of_a_unit_share_gets_new_words_around_it():
    """base_49 sorts 'the third file displayed in that directory' and then tails it: both calls read that one pick,
    so the sort's unit counted a reference of another call and kept the seed's sentence in every sample. The pick's
    words stay, or take others with the same position cue; the request around them is new."""
    seed = bfcl_task("multi_turn_base_49")
    first = seed.turns[1][0].content.split(". ")[0]
    for slot in (0, 1):
        said = " ".join(m.content for m in _rewrite(seed.id, slot)[2][1] if m.role == "user")
        assert re.search(r"the third (file displayed|of the files|entry) in that directory", said) and first not in said, said


def test_an_id_no_call_takes_is_said_again_beside_new_words():
    """base_199 gives a sender id no call takes ('using my sender id 'MichaelTpss'') beside the message it dictates:
    new words dropping it were refused, so all eight samples kept 'Loggin in as USR001 for messaging ...'. The id
    is now said again in a sentence of its own."""
    for slot in (0, 5):
        said = " ".join(m.content for m in _rewrite("multi_turn_base_199", slot)[2][3] if m.role == "user")
        assert "'MichaelTpss'" in said and "Loggin in" not in said, said


def test_a_folder_a_one_match_find_singles_out_is_pointed_at_by_new_words():
    """base_28 finds 'analysis' (one match, './data/analysis_report.txt') and then asks 'Naviagte to that first
    analysis and identify any line with error in it': the folder and the file are parts of the one path found, so
    'that first' picks nothing and a sentence pointing at where the file turned up says the same. Every sample kept
    the seed's sentence; the cd stays the assistant's to infer from the find's result."""
    from rods_agents.variation.turn_bank import _only_path_holds

    assert _only_path_holds('{"matches": ["./data/analysis_report.txt"]}', "data")
    assert not _only_path_holds('{"matches": ["./data/a.txt", "./b/a.txt"]}', "data")
    for slot in (0, 1):
        _seed, plan, turns, _donors = _rewrite("multi_turn_base_28", slot)
        said = " ".join(m.content for m in turns[1] if m.role == "user")
        pattern = plan.ground_truth[1][1].split("pattern='")[1].split("'")[0]  # 'error' or its search-term rename
        folder = plan.ground_truth[1][0].split("'")[1]
        assert "Naviagte" not in said and f"'{pattern}'" in said and folder not in said, said
        assert plan.ground_truth[1][0].startswith("cd(")


def test_a_support_message_the_assistant_composes_is_described_anew():
    """base_186 asks 'Kindly contact customer support on my behalf, emphasizing the smooth facilitation of my travel
    arrangements' and the assistant composes the message: a composed free text counted as a pick, so no sentence
    describing a message of its own fitted and every sample kept the seed's words. The variant now describes another
    concern, and its ground truth's message is that concern's."""
    from envs.executor import parse_call

    seed, _plan, turns, donors = _rewrite("multi_turn_base_186")
    said = " ".join(m.content for m in turns[3] if m.role == "user")
    adopted = next(d["adopted"] for d in donors if d["turn"] == 3 and d.get("adopted"))
    assert "smooth facilitation" not in said, said
    assert adopted[0]["from"] == parse_call(seed.ground_truth[3][0]).kwargs["message"] != adopted[0]["to"]


def test_a_message_a_turn_writes_into_its_words_is_written_unquoted_again():
    """base_190 writes the message into its words ('... contact customer support with the details to hopefully solve
    this unexpected charge found on the invoice?'): every phrasing quoted it, which the seed does not, so the turn
    stayed the seed's. Phrasings that write the message unquoted after a colon word it."""
    said = " ".join(m.content for m in _rewrite("multi_turn_base_190")[2][3] if m.role == "user")
    assert "popped up on the invoice" not in said and "Unexpected charge found on the invoice." in said, said
    assert "'Unexpected charge" not in said


def test_a_ticket_picked_by_its_description_keeps_the_description_in_new_words():
    """base_106: 'There seems to be a glitch with a ticket I lodged recently regarding trading system queries. Would
    you be able to track down that ticket for me?' picks the ticket by its description; 'that ticket' is written as
    the ticket the words before introduce, inside a new sentence. long_context_125's 'the most recent ticket I opened'
    keeps its pick the same way."""
    said = " ".join(m.content for m in _rewrite("multi_turn_base_106")[2][2] if m.role == "user")
    assert re.search(r"the ticket\b[^.]{0,40}\btrading system", said), said
    assert "recent" in said and "glitch" not in said, said
    said = " ".join(m.content for m in _rewrite("multi_turn_long_context_125")[2][3] if m.role == "user")
    assert "the most recent ticket" in said and "alert about a support inquiry" not in said, said


def test_an_airport_named_by_its_city_stays_as_well_known_as_it_was():
    """Read 32: 'from Crescent Hollow to Autumnville' where the seed said 'to Los Angeles' and the ground truth writes
    LAX with no lookup: a careful person knows LAX, not ATV, so the variant asked for a lookup its ground truth never
    makes (four such pairs). A well-known airport the text names by its city now becomes another well-known one, and
    a made-up city's (Rivermist: the assistant looks RMS up, and the lookup is written in) another made-up one: 'from
    Los Angeles' would spare the variant a lookup its seed needs."""
    from rods_agents.analysis.value_sources import WELL_KNOWN_AIRPORTS, airport_cities

    moved = {True: 0, False: 0}
    for seed_id in ("multi_turn_base_167", "multi_turn_long_context_199", "multi_turn_miss_func_179",
                    "multi_turn_base_153", "multi_turn_base_190"):
        for slot in range(4):
            _seed, plan, _turns, _donors = _rewrite(seed_id, slot)
            said = " ".join(m.content for t in _seed.turns for m in t)
            for old, new in plan.swaps.items():
                if old in airport_cities() and airport_cities()[old] in said and new != old:
                    assert (new in WELL_KNOWN_AIRPORTS) == (old in WELL_KNOWN_AIRPORTS), (seed_id, slot, old, new)
                    moved[old in WELL_KNOWN_AIRPORTS] += 1
    assert moved[True] and moved[False], moved


def test_a_dictated_template_follows_its_own_calls_words_not_a_later_calls():
    """Read 32, miss_func_17: '... message my new contact about it. Can you pull up my sent messages? Write the message
    in the format of 'Kelly Total Score: total_score'.' put the format after the request to view sent messages, as if
    it were about that. The template now follows the words asking for the message, and the later call's words follow
    it."""
    for slot in (0, 1, 4):
        _seed, plan, turns, _donors = _rewrite("multi_turn_base_17", slot)
        said = " ".join(m.content for m in turns[2] if m.role == "user")
        name = plan.renames.get("Kelly", "Kelly")  # renamed in the template too
        fmt, sent = said.find(f"'{name} Total Score"), said.lower().rfind("sent")
        assert 0 <= fmt < sent, said


def test_a_withholding_turn_naming_its_call_only_vaguely_gets_a_request_as_vague():
    """miss_param_189: 'Can you amplify some messages?' withholds which tweet to retweet and names the call only
    vaguely; no donor withholds the same way, and the vague requests were tried only for turns naming no call, so
    every sample kept the seed's sentence. It now takes one of them where the re-measure reads the same withholding."""
    from rods_agents.variation.phrasebook import vague_requests

    seed, plan, turns, donors = _rewrite("multi_turn_miss_param_189")
    said = " ".join(m.content for m in turns[2] if m.role == "user")
    assert said in vague_requests()["retweet.tweet_id"] and {"turn": 2, "donors": [["phrasebook:vague", 2]]} in donors
    variant = build_variant(seed, turns, plan, 0, 3)
    assert information_structure(variant).turns[2].withheld == information_structure(seed).turns[2].withheld


def test_a_check_the_seed_leaves_to_its_condition_stays_unnamed_in_new_words():
    """Read 36, base_92 and base_68: 'I must verify that my vehicle is in excellent shape. If any tire pressure is under
    35 PSI, ...' names the pressure only as what the condition tests, which leaves the check to the assistant; three
    readers marked 'What are my tire pressure readings? If one of the tires is lower than 35 PSI, ...' mild easier.
    New words ask for the check no more plainly than the seed: outside the condition they do not name it."""
    from rods_agents.analysis.information_structure import asked_by_goal, outside_conditions

    seed_turn = ("Lastly, I must verify that my vehicle is in excellent shape. If any tire pressure is under 35 PSI, "
                 "could you direct me to the closest tire shop to rectify this promptly?")
    assert "pressure" not in outside_conditions(seed_turn) and asked_by_goal("check_tire_pressure", seed_turn) is True
    assert asked_by_goal("check_tire_pressure", "What are my tire pressure readings? If one is low, find a shop.") is False
    for seed_id, g in (("multi_turn_base_92", 4), ("multi_turn_base_68", 2)):
        for slot in range(4):
            text = " ".join(m.content for m in _rewrite(seed_id, slot)[2][g] if m.role == "user")
            assert asked_by_goal("check_tire_pressure", text) is not False, text


def test_a_donor_turn_lends_its_words_without_its_slips():
    """Read 37: 'My curiosity peaks regarding the specifics of my placed order. Would you be able to retrieve these
    details, ensuring the transaction progresses smoothly as envisioned?' worded 11 variants of one run, slip and all,
    and four pairs of the read named it (one just before the order is cancelled). A donor's words come with
    prompts/bfcl/donor_edits.json's slips mended; the seed itself keeps its words."""
    from rods_agents.variation.turn_bank import turn_bank

    texts = [d.text for donors in turn_bank().values() for d in donors]
    assert not [t for t in texts if "curiosity peaks" in t or "progresses smoothly as envisioned" in t]
    assert any("I'm curious about the specifics of my placed order" in t for t in texts)
    assert "My curiosity peaks" in " ".join(m.content for m in bfcl_task("multi_turn_base_128").turns[2])


def test_a_reading_the_seed_asks_for_only_as_a_tweets_topic_stays_unnamed():
    """Reads 37, 38 and 39, base_75 and miss_func_75: 'share a quick update about the tire pressures on Twitter, using
    the format ... where 'XXX' is the actual values for the tire pressure' leaves the reading to the assistant (the
    pressures are what the tweet is about), and 'Can you see whether the tires are properly inflated? Next, put it out
    as a tweet.' was marked mild easier in three reads in a row. What a message is about names no call."""
    from rods_agents.analysis.information_structure import asked_by_goal, outside_topics

    seed = bfcl_task("multi_turn_base_75")
    turn = " ".join(m.content for m in seed.turns[1])
    assert "pressures on Twitter" not in outside_topics(turn)
    assert asked_by_goal("check_tire_pressure", turn) is True
    assert outside_topics("Check the tire pressures.") == "Check the tire pressures."  # no message: still named
    for slot in range(4):
        text = " ".join(m.content for m in _rewrite("multi_turn_base_75", slot)[2][1] if m.role == "user")
        assert asked_by_goal("check_tire_pressure", text) is not False, text


def test_a_supplying_answer_that_names_its_call_keeps_naming_it():
    """miss_param_75 withholds what to do with the tweet ('it'd be awesome if you could that tweet') and the next turn
    answers 'I mean comment that tweet, something like ...'. The generic answer 'Write this: ...' left a comment, a
    reply and a new tweet open (read 49 #27); the answer now comes from the comment's own sentences."""
    from graphs.synthesis import synthesize
    from rods_agents.stages.state import SynthesisContext

    result = synthesize([bfcl_task("multi_turn_miss_param_75")], SynthesisContext(seed=3, variants_per_seed=2))
    assert result.accepted
    for task in result.accepted:
        answer = " ".join(m.content for m in task.turns[4] if m.role == "user")
        assert re.search(r"\bcomment", answer, re.I), answer


def test_a_supplied_number_keeps_the_word_it_is_counted_in():
    """miss_param_126 answers the withheld share count with 'I want 100 shares.'; the generic 'Use 50 for that.'
    left 50 shares or $50 open (read 50 #23). Every new answer says 'shares' after the number."""
    from rods_agents.variation.transplant import _supply_texts

    seed = bfcl_task("multi_turn_miss_param_126")
    trace = trace_task(seed)
    info = information_structure(seed, trace, classify_arguments(seed, trace))
    turn = next(x.withheld.supplied_at for x in info.turns if x.withheld is not None)
    options = _supply_texts(seed, trace, info, turn)
    assert options
    assert all(re.search(r"\b100 shares\b", o) for o in options), options


def test_a_withheld_place_is_never_pointed_back_at():
    """miss_param_66 leaves the destination out ('take me there' to 'this gorgeous little spot', named a turn later),
    while turn 0 states another address: 'Set the navigation to that address.' took that one (read 59 borderline)."""
    from rods_agents.variation.donor_search import points_back_at_place

    assert points_back_at_place("Set the navigation to that address.") and points_back_at_place("Navigate me there.")
    assert not points_back_at_place("I'm visiting this little spot in my hometown; take me there.")
    for slot in range(6):
        _seed, _plan, turns, _donors = _rewrite("multi_turn_miss_param_66", slot)
        said = " ".join(m.content for m in turns[3] if m.role == "user")
        assert not points_back_at_place(said), said


@pytest.mark.slow
def test_siblings_do_not_say_another_scenarios_sentence_where_other_words_fit():
    # read 62: 'May I have the details of the most recent order I've placed to verify the transaction?' and three
    # more human turns of other scenarios were taken whole: 103 of 553 accepted variants held one, 25 of the 46 of
    # scenarios 125 and 131. The phrasebook's sentences a sibling already says had been passed over for them
    from graphs.synthesis import synthesize
    from rods_agents.analysis.novelty import other_seed_sentences
    from rods_agents.stages.state import SynthesisContext

    seeds = [bfcl_task(f"multi_turn_{c}_{n}") for n in (125, 131) for c in ("base", "miss_func", "miss_param")]
    result = synthesize(seeds, SynthesisContext(seed=3, variants_per_seed=2))
    assert len(result.accepted) >= 6
    copying = {v.id: other_seed_sentences(v) for v in result.accepted if other_seed_sentences(v)}
    assert len(copying) <= 1, copying
