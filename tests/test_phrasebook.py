"""The phrasebook words calls the train turns cannot (rods_agents.variation.phrasebook).

What a user of the synthesized data relies on: a phrasebook sentence states exactly what the seed's turn
states for its call (no value the seed leaves to the assistant, no option the call does not take), a value of
an implicit call is stated without asking for the call, the files are well-formed, and a turn worded from the
phrasebook keeps its seed's information structure while its words are new.
"""

from __future__ import annotations

import json
import re

import pytest

from envs.executor import parse_call
from envs.task import bfcl_task
from prompts import PROMPTS_DIR
from rods_agents.analysis.information_structure import information_structure, structure_mismatches
from rods_agents.analysis.novelty import containment
from rods_agents.analysis.tracing import CallRecord, Trace, trace_task
from rods_agents.analysis.value_sources import classify_arguments
from rods_agents.variation.phrasebook import check, context_sentences, parse_phrasing, phrase_donors, phrasebook, render
from rods_agents.variation.seed_anchor import date_words
from rods_agents.variation.turn_bank import Slot, donors_for, segment_signature, singled_producer
from tests.test_transplant import _variant


def _slot(param: str, value, source: str = "user", flag: bool = False, index: int = 0) -> Slot:
    return Slot(index, param, json.dumps(value), source, flag)


def test_a_lower_case_value_of_several_words_is_quoted_where_it_would_run_into_the_sentence():
    """Read 31, miss_func_190: 'I'd like comprehensive protection coverage for $50' reads as the type 'comprehensive'
    (the seed quoted 'comprehensive protection'). Such a value is quoted; a one-word value, a name or a value the
    phrasing already quotes is written as it is."""
    p = parse_phrasing("TravelAPI", "purchase_insurance", 0, "I'd like {insurance_type} coverage for ${insurance_cost}.")
    cost = _slot("insurance_cost", 50.0)
    assert render(p, (_slot("insurance_type", "comprehensive protection"), cost)) == \
        "I'd like 'comprehensive protection' coverage for $50."
    assert render(p, (_slot("insurance_type", "comprehensive"), cost)) == "I'd like comprehensive coverage for $50."
    q = parse_phrasing("GorillaFileSystem", "mv", 0, "Move '{source}' into {destination}.")
    assert render(q, (_slot("source", "old notes"), _slot("destination", "San Francisco"))) == \
        "Move 'old notes' into San Francisco."


def test_a_phrasing_fits_only_a_call_that_states_exactly_its_placeholders():
    p = parse_phrasing("GorillaFileSystem", "mv", 0, "Move '{source}' into '{destination}'.")
    both = (_slot("source", "notes.txt"), _slot("destination", "archive"))
    assert render(p, both) == "Move 'notes.txt' into 'archive'."
    # the destination comes from an earlier result: a sentence naming it would state what the seed leaves out
    assert render(p, (_slot("source", "notes.txt"), _slot("destination", "archive", source="call"))) is None
    # a call with a stated value the sentence does not carry
    one = parse_phrasing("GorillaFileSystem", "mv", 1, "Move '{source}' over, please.")
    assert render(one, both) is None


def test_an_option_is_worded_by_its_own_words_and_only_for_its_own_value():
    fixed = parse_phrasing("VehicleControlAPI", "startEngine", 0,
                           {"text": "Fire up the engine.", "when": {"ignitionMode": "START"}})
    assert render(fixed, (_slot("ignitionMode", "START", "flag", True),)) == "Fire up the engine."
    assert render(fixed, (_slot("ignitionMode", "STOP", "flag", True),)) is None
    choice = parse_phrasing("TradingBot", "place_order", 0,
                            "{order_type|Buy=Buy|Sell=Sell} {amount} shares of {symbol} at ${price}.")
    slots = (_slot("order_type", "Sell", "flag", True), _slot("amount", 100), _slot("symbol", "NVDA"),
             _slot("price", 220.5))
    assert render(choice, slots) == "Sell 100 shares of NVDA at $220.5."
    short = (_slot("order_type", "Short", "flag", True), *slots[1:])
    assert render(choice, short) is None  # an option the sentence has no words for


def test_values_are_written_the_way_a_user_writes_them():
    p = parse_phrasing("MathAPI", "mean", 0, "Average out {numbers} for me.")
    assert render(p, (_slot("numbers", [3.0, 4.5, 10.0]),)) == "Average out 3, 4.5 and 10 for me."


def test_a_value_of_an_implicit_call_is_stated_by_a_context_sentence_not_a_request():
    sentences = context_sentences((_slot("cd.folder", "reports", index=-1),))
    assert sentences and all("reports" in s for s in sentences)
    assert context_sentences((_slot("cd.folder", "..", index=-1),)) == []  # no sentence says 'the .. folder'


def test_every_phrasebook_file_is_well_formed_and_asks_for_its_call_without_structure_words():
    assert check() == []
    assert {"GorillaFileSystem", "TradingBot", "TravelAPI", "VehicleControlAPI"} <= {
        p.cls for ps in phrasebook().values() for p in ps}


def test_phrase_donors_carry_the_calls_own_values():
    slots = (_slot("source", "q3.csv"), _slot("destination", "backup"))
    donors = phrase_donors("mv", slots, segment_signature())
    assert len(donors) >= 4
    assert all("q3.csv" in d.text and "backup" in d.text and d.slots == slots for d in donors)


def _structure(task):
    trace = trace_task(task)
    return information_structure(task, trace, classify_arguments(task, trace))


def test_a_turn_worded_from_the_phrasebook_keeps_its_seeds_structure_with_new_words():
    seen = set()
    for v in range(4):  # turn 0 of base_0 states the folder of an implicit cd, then mkdir and mv
        seed, variant = _rewritten("multi_turn_base_0", v)
        first = next(m.content for m in variant.turns[0] if m.role == "user")
        seed_first = next(m.content for m in seed.turns[0] if m.role == "user")
        assert containment(first, seed_first, mask=True) < 0.3, first
        assert not structure_mismatches(_structure(seed), _structure(variant)), first
        seen.add(first)
    assert len(seen) >= 3  # siblings word the same calls differently


def _rewritten(seed_id: str, v: int = 0):
    """(seed, variant ``v``) drafted as run seed 3 (the benchmark's) drafts it."""
    return _variant(seed_id, v, run_seed=3)[:2]


def _user(task, t: int) -> str:
    return " ".join(m.content for m in task.turns[t] if m.role == "user")


def test_a_miss_param_answer_is_reworded_and_still_supplies_the_withheld_value_there():
    from rods_agents.analysis.information_structure import withheld_value

    seed, variant = _rewritten("multi_turn_miss_param_0")  # turn 4: 'The specific file is previous_report.pdf.'
    info = _structure(variant)
    w = next(x.withheld for x in info.turns if x.withheld is not None)
    assert _user(variant, w.supplied_at) != _user(seed, w.supplied_at)
    assert str(withheld_value(variant, trace_task(variant), w)[0]) in _user(variant, w.supplied_at)
    assert not structure_mismatches(_structure(seed), info)


def test_a_turn_kept_for_its_cue_drops_the_seeds_story_sentence_and_keeps_its_structure():
    seed, variant = _rewritten("multi_turn_base_112")  # turn 2 opens with an anecdote before its request
    story = "Turning to the horizon of future investments"
    assert story in _user(seed, 2) and story not in _user(variant, 2)
    said = _user(variant, 2)  # the cue stays, in the seed's words or its own (prompts/phrasebook/sentences.json)
    assert "pending order" in said and "most recent order" in said, said
    assert not structure_mismatches(_structure(seed), _structure(variant))


def test_a_sentence_that_says_how_a_value_is_built_is_never_trimmed_or_reworded_away():
    seed, variant = _rewritten("multi_turn_miss_func_44")  # turn 3: 'only rounded in nearest integer ... Just the number'
    said = _user(variant, 3)  # the rounding may take other words (rods_agents.variation.clause_words), never none
    assert re.search(r"rounded (?:off )?(?:in|to) (?:the )?(?:nearest integer|nearest whole number|a whole number)", said)
    assert "Just the number" in said


def test_double_check_is_no_transformation_but_doubling_is():
    from rods_agents.analysis.information_structure import lexicon

    lex = lexicon()
    assert not any(p.search("I need to double-check my details") for p in lex.transformations)
    assert any(p.search("Double the amount, please") for p in lex.transformations)


def test_a_sentence_never_repeats_a_value_the_seeds_turn_left_to_an_earlier_turn():
    from rods_agents.variation.saying import says_no_more

    slots = (_slot("card_id", "card_7"), _slot("access_token", "abc123"), _slot("travel_class", "first", "flag", True))
    full = parse_phrasing("TravelAPI", "book_flight", 0, "Book it in {travel_class} class with card {card_id}, token {access_token}.")
    short = parse_phrasing("TravelAPI", "book_flight", 1, "Go ahead and book it with card {card_id}.")
    # the seed's turn: 'book the flight as we discussed, with card card_7' (token and class said in earlier turns)
    unsaid = frozenset({"access_token", "travel_class"})
    assert render(full, slots, unsaid) is None
    assert render(short, slots, unsaid) == "Go ahead and book it with card card_7."
    assert render(short, slots) is None  # a turn that says the token needs a sentence that says it too
    span = "Let's book the flight as we discussed, with card card_7."
    assert says_no_more("Book it with card card_7.", slots, span)
    assert not says_no_more("Book it with card card_7 and token abc123.", slots, span)
    assert not says_no_more("Book it in first class with card card_7.", slots, span)


def test_an_option_the_seed_says_in_its_own_words_is_never_left_out():
    from rods_agents.variation.value_kinds import mode_words

    seed, variant = _rewritten("multi_turn_base_173")  # turn 1: 'I need that in pounds sterling' (target_currency='GBP')
    text = _user(variant, 1)
    target = re.search(r"target_currency='(\w+)'", " ".join(variant.ground_truth[1])).group(1)  # GBP, or its swap
    assert any(w.lower() in text.lower() for w in mode_words("compute_exchange_rate", "target_currency")[target]), text


def test_a_value_is_left_out_only_where_an_earlier_turn_says_it_as_it_is():
    from rods_agents.variation.donor_search import phrasebook_donors

    seed = bfcl_task("multi_turn_base_173")
    slots = (_slot("card_id", "card_7"), _slot("access_token", "abc123"), _slot("travel_date", "2026-11-15"),
             _slot("travel_from", "LAX"), _slot("travel_to", "JFK"),
             _slot("travel_class", "first", "flag", True))
    span = "Let's go ahead and book the flight as we discussed, with card card_7."
    told = "I'd fly from LAX to JFK in first class on 2026-11-15. My access token is abc123."
    short = phrasebook_donors(seed, 2, 0, ("book_flight",), slots, segment_signature(), set(), set(), span, told)
    assert short and all("abc123" not in d.text and "card_7" in d.text for d in short)
    # never said as it is before: the seed's turn must say it in words no lookup finds, so it is not left out
    untold = phrasebook_donors(seed, 2, 0, ("book_flight",), slots, segment_signature(), set(), set(), span, "")
    assert all("abc123" in d.text for d in untold)


def test_a_phrasebook_sentence_keeps_the_numbers_tags_and_quotes_of_the_words_it_replaces():
    from rods_agents.variation.saying import keeps_specifics

    assert not keeps_specifics("Let's get some gas in the car.", "Fill it so the tank ends with 50 gallons.")
    assert not keeps_specifics("Post it, please.", "Post it and tag #BusinessOnTheMove.")
    assert keeps_specifics("Post it with #BusinessOnTheMove, 50 of them.", "Tag #BusinessOnTheMove on 50 posts.")
    # a comma the seed put inside the quotes, and a quoted list said item by item, are kept
    assert keeps_specifics("Open a ticket titled Flight Cancellation Alert.", "A ticket named 'Flight Cancellation Alert,' now")
    assert keeps_specifics("Tweet it with #Journey, #SmoothRide and #Grateful.", "Tags '#Journey, #SmoothRide, #Grateful'")
    assert not keeps_specifics("Tweet it with #Journey.", "Tags '#Journey, #SmoothRide, #Grateful'")


def test_a_sentence_never_writes_the_ticker_for_a_company_or_words_for_a_result_the_seed_picks():
    from rods_agents.variation.donor_search import phrasebook_donors
    from rods_agents.variation.saying import says_no_more

    slots = (_slot("stock", "ZETA"),)
    assert not says_no_more("Add ZETA to my watchlist.", slots, "Add Zeta Corp's stock to my watchlist.")
    assert says_no_more("Put ZETA on my watchlist.", slots, "Add ZETA to my watchlist.")
    # the stock comes from a listed result: the seed's words say which one; no generic sentence replaces them
    seed = bfcl_task("multi_turn_base_173")
    picked = (_slot("stock", "ZETA", "call"),)
    assert phrasebook_donors(seed, 0, 0, ("add_to_watchlist",), picked, segment_signature(), set(), set(),
                              "Add the first stock on the list to my watchlist.") == []


def test_a_miss_param_answer_that_names_the_company_is_not_reworded_into_the_ticker():
    seed, variant = _rewritten("multi_turn_miss_param_142")  # turn 1: 'The company is named Zeta Corp'
    assert "Zeta" in _user(seed, 1)
    info = _structure(variant)
    w = next(x.withheld for x in info.turns if x.withheld is not None)
    from rods_agents.analysis.information_structure import withheld_value

    ticker = str(withheld_value(variant, trace_task(variant), w)[0])
    assert not re.search(rf"\b{ticker}\b", _user(variant, w.supplied_at)), _user(variant, w.supplied_at)


def _record(position: int, name: str, result: dict, **args) -> CallRecord:
    return CallRecord(turn=position, index=0, call=name, name=name, cls="TravelAPI", args=args, result=json.dumps(result))


def test_a_result_singles_out_a_value_only_while_no_other_result_holds_another_under_its_key():
    booked = _record(0, "book_flight", {"booking_id": "3426812", "transaction_id": "45451592", "booking_status": True})
    cancel = _record(1, "cancel_booking", {}, booking_id="3426812")
    assert singled_producer(Trace(calls=[booked, cancel]), 0, "3426812", 1) == "book_flight"
    # a second booking before the cancellation: 'the booking we made' no longer says which
    again = _record(1, "book_flight", {"booking_id": "5550001", "transaction_id": "1", "booking_status": True})
    assert singled_producer(Trace(calls=[booked, again, cancel]), 0, "3426812", 2) == ""
    # an item of a list (a booking history) is picked by the seed's words, never singled out
    history = _record(0, "get_booking_history", {"bookings": ["3426812", "5550001"]})
    assert singled_producer(Trace(calls=[history, cancel]), 0, "3426812", 1) == ""


def test_a_phrasing_points_at_a_result_only_for_a_call_that_reads_that_result():
    p = parse_phrasing("TravelAPI", "cancel_booking", 0, {"text": "Cancel the flight we booked; token {access_token}.",
                                                          "from": {"booking_id": ["book_flight"]}})
    token = _slot("access_token", "tok_1")
    read = Slot(0, "booking_id", json.dumps("3426812"), "call", False, "book_flight")
    assert render(p, (token, read)) == "Cancel the flight we booked; token tok_1."
    # read from another call's result (an invoice), or from one of several results: the words would lie or not say which
    assert render(p, (token, Slot(0, "booking_id", json.dumps("3426812"), "call", False, "retrieve_invoice"))) is None
    assert render(p, (token, Slot(0, "booking_id", json.dumps("3426812"), "call", False, ""))) is None
    # a booking id the user states is written, never pointed at
    assert render(p, (token, _slot("booking_id", "3426812"))) is None
    # and a sentence without 'from' never words a call that reads a result (it would leave the value unpointed)
    plain = parse_phrasing("TravelAPI", "cancel_booking", 1, "Please cancel my booking; my access token is {access_token}.")
    assert render(plain, (token, read)) is None


def test_a_code_the_seeds_turn_names_by_its_city_company_or_date_words_is_written_the_same_way():
    from rods_agents.variation.donor_search import phrasebook_donors
    from rods_agents.variation.saying import named_as, says_no_more

    assert named_as("LAX", "a seat from New York to Los Angeles") == "Los Angeles"
    assert named_as("JFK", "fly out of NYC tomorrow") == "NYC"
    assert named_as("ZETA", "track Zeta Corp's stock") == "Zeta Corp"
    assert named_as("2026-10-15", "this Thursday October 15th 2026") == "October 15th, 2026"
    assert named_as("2026-10-15", "on the 15th of October") == "October 15th"
    # a month cut short with its year ('next week Oct 10 2026', base_181): the year is written too, or the year the
    # turn states is missing from the new words and the turn kept the seed's sentence in all eight samples
    assert named_as("2026-10-10", "to the sun-drenched coast of Los Angeles next week Oct 10 2026.") == "October 10th, 2026"
    assert named_as("2026-10-10", "on Oct 10, sometime") == "October 10th"
    assert named_as("LAX", "fly to LAX") is None  # said as it is: a phrasing writes it as it is
    # a route the seed names by its cities (the codes read from the state): the phrasings write the cities and the
    # date in words, never the codes or the ISO date, which would hand the assistant its lookups
    seed = bfcl_task("multi_turn_miss_func_158")
    slots = (_slot("travel_from", "JFK", "state"), _slot("travel_to", "LAX", "state"),
             _slot("travel_date", "2026-10-15"), _slot("travel_class", "first", "flag", True))
    span = "I need a first-class seat from New York to Los Angeles for this upcoming Thursday October 15th 2026."
    donors = phrasebook_donors(seed, 1, 0, ("get_flight_cost",), slots, segment_signature(), set(), set(), span)
    assert donors
    for d in donors:
        assert "New York" in d.text and "Los Angeles" in d.text and "October 15th, 2026" in d.text, d.text
        assert not re.search(r"\b(JFK|LAX)\b|2026-10-15", d.text), d.text
    assert says_no_more(donors[0].text, slots, span)
    assert not says_no_more("How much is first class from JFK to LAX on October 15th, 2026?", slots, span)
    # without the words the turn names them by, a value read from the state has no phrasing
    p = parse_phrasing("TravelAPI", "get_flight_cost", 0, "What does {travel_from} to {travel_to} cost on {travel_date}?")
    route = slots[:3]
    assert render(p, route) is None
    assert render(p, route, named={"travel_from": "New York", "travel_to": "Los Angeles"}) == (
        "What does New York to Los Angeles cost on 2026-10-15?")


def test_a_sentence_giving_a_value_the_new_words_lack_stays_beside_them():
    from rods_agents.variation.saying import with_specifics

    span = "Could you kindly dispatch the message 'Hi there' to my colleague USR003? Your user id is 'USR001'."
    calls = "message_login(user_id='USR001') send_message(receiver_id='USR003',message='Hi there')"
    assert with_specifics("Please send USR003 the message 'Hi there'.", span, ("send_message",), calls) == (
        "Please send USR003 the message 'Hi there'. Your user id is 'USR001'.")
    # the sentence holding the missing value asks for the call again: no wording
    assert with_specifics("Post it, please.", "Post a tweet tagged #Travel.", ("post_tweet",), "post_tweet()") is None
    # a number no call takes is a budget or a threshold whose check lives in the words the new sentence dropped: a
    # threshold refuses; a spending cap is said again as a cap, so the check stays with the words (restated_numbers)
    threshold = "Check the price and add it if it looks promising. By promising I mean the price is larger than 300."
    assert with_specifics("What's the price?", threshold, ("get_stock_info",), "get_stock_info(symbol='AMZN')") is None
    budget = "Check the fare and make sure I can afford it. My max spending limit is 7000."
    capped = with_specifics("What's the fare?", budget, ("get_flight_cost",), "get_flight_cost(travel_class='first')")
    assert capped is not None and capped.startswith("What's the fare? ") and "7000" in capped
    # one that bounds nothing is context: base_189's CVV no call takes is said again in words of its own (the seed's
    # sentence, kept whole, was then dropped as the seed's story, and the CVV with it: read of 2026-12-05)
    cvv = "Check the fare for me. The cardholder's name matches mine, and I can give the CVV when needed, which is 456."
    assert with_specifics("What's the fare?", cvv, ("get_flight_cost",), "get_flight_cost(travel_class='first')") == (
        "What's the fare? The security code on the card is 456.")
    context = "Check the fare for me. My passport number ends in 4821, if that matters."
    assert with_specifics("What's the fare?", context, ("get_flight_cost",), "get_flight_cost(travel_class='first')") == (
        "What's the fare? My passport number ends in 4821, if that matters.")
    assert with_specifics("What's the fare?", "Check the fare. I have 300 dollars at most.", ("get_flight_cost",),
                          "get_flight_cost(travel_class='first')") is None
    # a sentence restating a value the new words already say belongs to their request: it would be said twice
    ticket = "Generate a ticket titled 'Urgent Change'? Details write 'I must cancel.', priority be level 4."
    calls = "create_ticket(priority=4,title='Urgent Change',description='I must cancel.')"
    assert with_specifics("Open a high-priority ticket 'Urgent Change': 'I must cancel.'", ticket, ("create_ticket",),
                          calls) is None
    seed, variant = _rewritten("multi_turn_base_101")  # turn 1 sends a message; its last sentence gives the login id
    assert _user(variant, 1) != _user(seed, 1) and "'USR001'" in _user(variant, 1)
    assert containment(_user(variant, 1), _user(seed, 1)) < 0.5


def test_words_picking_a_value_by_recency_give_way_to_a_sentence_pointing_at_the_one_result_that_holds_it():
    from rods_agents.variation.cues import cue_spans

    assert cue_spans("Would you mind canceling the flight reservation I just made?")
    assert cue_spans("Would you mind canceling the flight reservation I just made?", singled=True) == []
    # a position or a transformation still says which value or how it is built: those words stay
    assert cue_spans("Cancel the first booking on the list.", singled=True)
    assert cue_spans("Round the total to the nearest integer.", singled=True)
    seed, variant = _rewritten("multi_turn_miss_func_158")  # the last turn cancels the one booking made before it
    t = next(t for t in range(len(seed.turns)) if "I just made" in _user(seed, t))
    assert _user(variant, t) and "I just made" not in _user(variant, t), _user(variant, t)
    assert variant.ground_truth[t] == [c for c in variant.ground_truth[t] if c.startswith("cancel_booking(")]


def test_a_human_turn_never_brings_a_pick_the_words_it_replaces_lack():
    from rods_agents.variation.cues import brings_cues

    seed_words = "Please cd into project folder and find Kelly's test report somewhere in the directory and read it."
    assert brings_cues("For clarity, output the complete content of the first file you find on the terminal.", seed_words)
    assert not brings_cues("Read me Kelly's test report, please.", seed_words)
    assert not brings_cues("Show the last stock on the list.", "Give me the last stock on the list.")
    # recency words point at the call whose result the value sources already tie the value to
    assert not brings_cues("Please cancel that booking.", "I can't make the trip; call off my reservation.")
    # a claim of what was just done is the donor's story, unless a result singles the value out
    created = "Now, take the contents of 'a.pdf' that we just created and sort the lines alphabetically."
    assert brings_cues(created, "Sort 'a.pdf' by line.")
    assert not brings_cues(created, "Sort 'a.pdf' by line.", singled=True)


def test_a_miss_param_answer_saying_more_than_the_value_keeps_its_words():
    from rods_agents.analysis.information_structure import withheld_value

    seed, variant = _rewritten("multi_turn_miss_param_17")  # the answer gives the message's format, 'Kelly ...'
    info = _structure(variant)
    w = next(x.withheld for x in info.turns if x.withheld is not None)
    assert "'Kelly Total Score: total_score'" in _user(seed, w.supplied_at)
    name = next(parse_call(c).kwargs["user_name"] for calls in variant.ground_truth for c in calls
                if c.startswith("add_contact"))  # Kelly as the variant names her
    assert f"{name} Total Score" in _user(variant, w.supplied_at), _user(variant, w.supplied_at)
    assert withheld_value(variant, trace_task(variant), w)


def test_a_folder_entered_after_the_turns_first_request_is_never_stated_as_where_the_files_are():
    from rods_agents.variation.turn_bank import split_calls

    slots = (Slot(0, "folder", json.dumps(".."), "state", False), Slot(1, "source", json.dumps("a.pdf"), "user", False),
             Slot(2, "folder", json.dumps("exports"), "user", False), Slot(3, "file_name1", json.dumps("b.pdf"), "user", False))
    methods, target = split_calls({0, 2}, ("cd", "mv", "cd", "diff"), slots)
    assert methods == ("mv", "diff")
    hidden = [x for x in target if x.index < 0]
    assert [x.param for x in hidden] == ["cd.folder@after"]
    assert context_sentences(tuple(hidden)) == []  # 'What I need is inside the exports directory' would mislead
    _, early = split_calls({0}, ("cd", "mv"), (Slot(0, "folder", json.dumps("exports"), "user", False),))
    assert [x.param for x in early] == ["cd.folder"] and context_sentences(early)


def test_a_folder_an_earlier_turn_names_for_an_implicit_cd_is_not_said_again():
    seed, variant = _rewritten("multi_turn_base_0")  # turn 1 greps 'the file' inside the folder turn 0 created
    folder = next(c.split("'")[1] for c in variant.ground_truth[1] if c.startswith("cd("))
    assert _user(variant, 1) != _user(seed, 1)
    pattern = next(c.split("pattern='")[1].split("'")[0] for c in variant.ground_truth[1] if c.startswith("grep("))
    assert pattern in _user(variant, 1) and folder not in _user(variant, 1), _user(variant, 1)
    info, seed_info = _structure(variant), _structure(seed)
    assert [c.explicit for c in info.turns[1].calls] == [c.explicit for c in seed_info.turns[1].calls]


def test_words_that_ask_for_the_turns_own_call_are_no_stray_cue():
    from rods_agents.variation.cues import stray_cues

    mean = "I now need to compute the average amount spent in my last purchases, which are 45.99 and 78.25."
    assert stray_cues(mean, ("mean",)) == []  # 'average' asks for the mean
    invoice = "A neat summary of my booking would be amazing. Could you generate an invoice for this purchase?"
    assert stray_cues(invoice, ("retrieve_invoice",)) == []
    # a rounding, or a word of another kind, still says how a value is built: its sentence stays the seed's
    assert stray_cues("Round the total to the nearest integer.", ("mean",))
    assert stray_cues("What's the average of the numbers in the last file?", ("mean",))


def test_a_miss_param_turn_withholding_its_one_calls_value_gets_a_sentence_without_it():
    from rods_agents.variation.donor_search import _describes_withheld

    price = (Slot(0, "symbol", json.dumps("OMEG"), "user", False), Slot(0, "price", json.dumps(25.5), "withheld", False))
    assert _describes_withheld("Could you purchase 150 shares of OMEG at market price?", price)
    assert not _describes_withheld("Could you buy 150 shares of OMEG for me?", price)
    # cp's destination is required: 'Please make a copy of notes.txt' leaves the assistant to ask where (an optional
    # value, a tweet's tags, is not: test_transplant's bare-phrasebook test)
    seed, variant = _rewritten("multi_turn_miss_param_16")
    want = next(x.withheld for x in _structure(seed).turns if x.withheld is not None)
    got = next(x.withheld for x in _structure(variant).turns if x.withheld is not None)
    k = want.supplied_at - 1
    assert (got.method, got.param, got.supplied_at) == (want.method, want.param, want.supplied_at)
    assert _user(variant, k) != _user(seed, k) and containment(_user(variant, k), _user(seed, k)) < 0.5, _user(variant, k)


def test_the_seeds_words_for_a_pick_are_the_noun_phrase_around_its_cue():
    from rods_agents.variation.cues import pick_phrase

    report = "I need a detailed report on the first stock listed in my watchlist. This includes its price."
    assert pick_phrase("the first stock", report) == "the first stock listed in my watchlist"
    assert pick_phrase("most recent order", "my order associated with the most recent order ID?") == "the most recent order ID"
    assert pick_phrase("third file", "For that same third file, could you count its lines?") == "that same third file"
    assert pick_phrase("the first", "Opt to fly from the first airport to the second one") is None  # no head noun
    assert pick_phrase("recently acquired", "the invoice of my recently acquired flight and insurance") is None


def test_a_pick_phrasing_fits_only_a_picked_value_and_a_picked_value_only_a_pick_phrasing():
    pick = parse_phrasing("picks", "get_stock_info", 0, {"text": "Pull up the stock info for {symbol}.", "pick": "symbol"})
    plain = parse_phrasing("TradingBot", "get_stock_info", 0, "Pull up the stock info for {symbol}.")
    read = (Slot(0, "symbol", json.dumps("NVDA"), "call", False, "get_watchlist"),)  # singled out by the watchlist
    picks = {"symbol": "the first stock listed in my watchlist"}
    assert render(pick, read, picks=picks) == "Pull up the stock info for the first stock listed in my watchlist."
    assert render(plain, read, picks=picks) is None  # 'for NVDA' would hand over what the seed leaves to the assistant
    assert render(pick, (_slot("symbol", "NVDA"),)) is None  # a stated ticker is no pick
    with pytest.raises(ValueError):
        parse_phrasing("picks", "get_stock_info", 1, {"text": "Pull it up.", "pick": "symbol"})


def test_a_turn_picking_its_value_from_a_list_gets_new_words_around_the_seeds_pick():
    seed, variant = _rewritten("multi_turn_base_137")  # turn 2: 'a detailed report on the first stock listed in ...'
    before, after = _user(seed, 2), _user(variant, 2)
    assert re.search(r"the first (stock listed|of the stocks|entry) in my watchlist", after), after  # the pick, in any
    # of its words (phrasebook.reworded_pick)
    assert containment(after, before, mask=True) < 0.5, after
    assert not [m for m in structure_mismatches(_structure(seed), _structure(variant)) if m.turn == 2]


def test_a_booking_turn_leaving_date_and_class_to_an_earlier_turn_gets_new_words_without_them():
    seed, variant = _rewritten("multi_turn_long_context_159")  # turn 0 says the date and the economy class
    after = _user(variant, 1)
    assert containment(after, _user(seed, 1), mask=True) < 0.5, after
    assert "economy" not in after.lower() and not re.search(r"\d{4}-\d\d-\d\d", after)
    assert not [m for m in structure_mismatches(_structure(seed), _structure(variant)) if m.turn == 1]


def test_a_message_the_seeds_turn_leaves_the_assistant_to_write_is_never_quoted():
    """Read 13: quoting the support message where the seed says 'detail the challenges I faced' hands the assistant
    the text it was left to compose (easier), even though BFCL's checker never reads that message."""
    seed, variant = _rewritten("multi_turn_base_199")
    message = re.search(r"message='([^']+)'", variant.ground_truth[2][0]).group(1)
    assert message not in _user(seed, 2) and message not in _user(variant, 2), _user(variant, 2)
    assert not [m for m in structure_mismatches(_structure(seed), _structure(variant)) if m.turn == 2]


def test_a_frame_writes_exactly_the_values_a_call_states_and_points_at_the_results_it_reads():
    from rods_agents.variation.phrasebook import frame_phrasings

    # card and token said in an earlier turn, the booking read from the one flight just booked
    slots = (_slot("insurance_type", "comprehensive"), _slot("insurance_cost", 50.0),
             Slot(0, "booking_id", json.dumps("3426812"), "call", False, "book_flight"))
    texts = [d.text for d in phrase_donors("purchase_insurance", slots, segment_signature())]
    assert texts and all("comprehensive" in t and "$50" in t for t in texts)
    assert all("3426812" not in t and "card" not in t and "token" not in t for t in texts), texts
    assert len(set(texts)) >= 6  # siblings take other heads
    # a read from a result the frame has no words for: no sentence (never one that drops the pointer)
    assert not frame_phrasings("purchase_insurance", frozenset({"insurance_type"}), {"booking_id": "get_flight_cost"})


def test_a_phrasing_that_says_same_card_fits_only_where_the_card_and_token_were_said_before():
    """'... with the same card and token as before.' (base_179, base_190: the seed says 'the same credit card and
    token') points back at values an earlier turn said; where the turn says them now, or reads the card from a result,
    or no turn said them, the words would point at nothing or leave a value unsaid."""
    p = parse_phrasing("TravelAPI", "purchase_insurance", 0, {
        "text": "Buy travel insurance worth ${insurance_cost} for the flight we booked, with the same card and token.",
        "from": {"booking_id": ["book_flight"]}, "same": ["card_id", "access_token"]})
    slots = (_slot("insurance_type", "comprehensive", "flag", True), _slot("insurance_cost", 50.0),
             Slot(0, "booking_id", json.dumps("3426812"), "call", False, "book_flight"),
             _slot("card_id", "card_3456"), _slot("access_token", "abc123xyz"))
    earlier = frozenset({"card_id", "access_token", "insurance_type"})
    assert render(p, slots, earlier) == ("Buy travel insurance worth $50 for the flight we booked, with the same card "
                                         "and token.")
    assert render(p, slots, frozenset({"access_token", "insurance_type"})) is None  # the card is said in this turn
    in_state = slots[:3] + (_slot("card_id", "card_3456", "state"), slots[4])
    assert render(p, in_state, frozenset({"access_token", "insurance_type"})) is None  # no turn said the card
    read = slots[:3] + (Slot(0, "card_id", json.dumps("card_3456"), "call", False, "register_credit_card"), slots[4])
    assert render(p, read, earlier) is None  # the card comes from the card just registered
    with pytest.raises(ValueError, match="'same'"):
        parse_phrasing("TravelAPI", "purchase_insurance", 0, {"text": "Use card {card_id} again.", "same": ["card_id"]})


def test_a_pick_shared_by_an_implicit_price_lookup_is_written_once_in_new_words():
    """'... among the stocks listed, the last one ... acquiring 100 shares at the prevailing market rate' (base_110
    turn 1): the implicit get_stock_info and the order pick the same symbol by the same words, one pick; a pick
    phrasing of the order keeps those words and reads the price from the lookup, so the turn gets new words."""
    seed, variant = _rewritten("multi_turn_base_110")
    after = _user(variant, 1)
    assert containment(after, _user(seed, 1), mask=True) < 0.5, after
    assert "the last one" in after
    assert not [m for m in structure_mismatches(_structure(seed), _structure(variant)) if m.turn == 1]


def test_a_booking_that_leaves_token_route_and_class_to_earlier_turns_is_worded_without_them():
    """'Alright, it's time to take the plunge and book that flight for December 15th. Go ahead and charge it to my
    card ...' (base_167 turn 2): the token was given a turn before, the route and class priced in turn 0. A sentence
    stating the token again would make the turn easier; one saying only the date and the card keeps it."""
    seed, variant = _rewritten("multi_turn_base_167")
    after = _user(variant, 2)
    assert containment(after, _user(seed, 2), mask=True) < 0.5, after
    token = re.search(r"access_token='([^']+)'", variant.ground_truth[2][0]).group(1)
    day = re.search(r"travel_date='(\d{4}-\d{2}-\d{2})'", variant.ground_truth[2][0]).group(1)
    said = next(w for w in date_words(day) if re.fullmatch(r"[A-Z][a-z]+ \d+(st|nd|rd|th)", w))  # 'December 1st'
    assert said in after and token not in after, after  # its own date, as the seed says it
    assert not [m for m in structure_mismatches(_structure(seed), _structure(variant)) if m.turn == 2]


def test_a_turn_withholding_the_city_a_lookup_turns_into_a_distance_argument_gets_new_words():
    """miss_param_56 turn 0 ('my departure point is sunny San Francisco. Could you determine the distance ...?') leaves
    out the destination, whose zip code the next turn's lookup gives the distance as ``cityB``: that argument is as
    missing as the city, so a sentence for the distance from the departure alone words the turn, and the destination
    stays unsaid until the next turn supplies it."""
    seed, variant = _rewritten("multi_turn_miss_param_56")
    after = _user(variant, 0)
    assert containment(after, _user(seed, 0), mask=True) < 0.5, after
    destination = re.search(r"get_zipcode_based_on_city\(city='([^']+)'\)", variant.ground_truth[1][1]).group(1)
    assert destination not in after and destination in _user(variant, 1)
    assert not [m for m in structure_mismatches(_structure(seed), _structure(variant)) if m.turn in (0, 1)]


def test_numbers_gathered_from_the_last_results_are_asked_for_as_those_numbers():
    """'what's the total tire pressure?' after one ``check_tire_pressure`` (base_81 turn 3) and 'the average of the three
    numerical value obtained' after three ``wc`` counts (base_15 turn 4): the list's every number is a result of one
    method just before, so 'those numbers' points at them (``"from": {"numbers": ["*"]}``) and the turn gets new words.
    A list whose numbers no recent result holds has no producer: its words must say where it comes from."""
    from rods_agents.variation.turn_bank import gathered_producer

    seed = bfcl_task("multi_turn_base_81")
    trace = trace_task(seed)
    consumer = next(p for p, r in enumerate(trace.calls) if r.turn == 3)
    assert gathered_producer(trace, trace.calls[consumer].args["numbers"], consumer) == "check_tire_pressure"
    assert gathered_producer(trace, [12345.5, 32.0], consumer) == ""  # 12345.5 is no result's
    for seed_id, turn in (("multi_turn_base_81", 3), ("multi_turn_base_15", 4)):
        seed, variant = _rewritten(seed_id)
        after = _user(variant, turn)
        assert containment(after, _user(seed, turn), mask=True) < 0.5, after
        assert re.search(r"\b(?:those|them|the three values)\b", after), after
        assert not [m for m in structure_mismatches(_structure(seed), _structure(variant)) if m.turn == turn]


def test_the_first_words_of_a_task_point_back_at_nothing():
    """base_26 turn 0 names its folder 'the temporary directory' (``cd('tmp')``, the state's only folder): 'Please
    navigate over there for me.' or 'Go to that directory.' would open the task pointing at nothing. A pointer at a
    value the sentence itself writes is fine ('Show me the file 'notes' in full. Forward it ...', long_context_41)."""
    pointer = re.compile(r"\bover there\b|\b(?:that|these|those) (?:folder|directory)\b", re.I)
    for v in (0, 1):
        _, variant = _rewritten("multi_turn_base_26", v)
        assert not pointer.search(_user(variant, 0)), _user(variant, 0)
    seed, variant = _rewritten("multi_turn_long_context_41")
    assert "'notes'" in _user(variant, 0) and containment(_user(variant, 0), _user(seed, 0), mask=True) < 0.5


def test_a_fare_from_a_result_list_of_one_is_converted_by_pointing_at_it():
    """'Once I know the cost, I need that in pounds sterling' (base_173 turn 1): the fare comes back as
    ``{'travel_cost_list': [2400.0]}``, a list of one, which singles it out as a scalar would; 'exchange it ...' then
    points at it and the turn gets new words, the fare still read from the result."""
    from rods_agents.variation.turn_bank import singled_producer

    seed = bfcl_task("multi_turn_base_173")
    trace = trace_task(seed)
    consumer = next(p for p, r in enumerate(trace.calls) if r.name == "compute_exchange_rate")
    assert singled_producer(trace, 0, trace.calls[consumer].args["value"], consumer) == "get_flight_cost"
    seed, variant = _rewritten("multi_turn_base_173")
    after = _user(variant, 1)
    assert containment(after, _user(seed, 1), mask=True) < 0.5, after
    assert not [m for m in structure_mismatches(_structure(seed), _structure(variant)) if m.turn == 1]


def test_two_calls_that_share_the_values_said_once_are_asked_for_in_one_framed_request():
    seed, variant = _rewritten("multi_turn_base_184")  # turn 0: 'Schedule a first class flight ... from X to Y on ...'
    after = _user(variant, 0)
    assert containment(after, _user(seed, 0), mask=True) < 0.5, after
    assert not [m for m in structure_mismatches(_structure(seed), _structure(variant)) if m.turn == 0]
    from rods_agents.variation.phrasebook import own_slots

    shared = (_slot("travel_date", "2026-12-15", index=0), _slot("travel_date", "2026-12-15", index=1))
    assert own_slots(shared, "get_flight_cost+book_flight") is not None
    differ = (_slot("travel_date", "2026-12-15", index=0), _slot("travel_date", "2026-12-16", index=1))
    # two dates: each is keyed by its call ('{book_flight.travel_date}'), so no sentence writing one date fits
    assert set(own_slots(differ, "get_flight_cost+book_flight")) == {"get_flight_cost.travel_date",
                                                                     "book_flight.travel_date"}
    assert not phrase_donors("get_flight_cost+book_flight", differ, "{}")


def test_an_id_looked_up_by_a_name_the_turn_says_is_written_by_that_name():
    from rods_agents.variation.donor_search import lookup_names

    seed = bfcl_task("multi_turn_base_41")  # turn 0 looks Bob up for the message; turn 1: 'After Bob has received ...'
    aliases = lookup_names(trace_task(seed))
    assert aliases.get("USR002") == "Bob"
    seed, variant = _rewritten("multi_turn_base_41")
    after, name = _user(variant, 1), lookup_names(trace_task(variant))
    receiver = re.search(r"receiver_id='(\w+)'", variant.ground_truth[1][0]).group(1)
    assert name[receiver] in after and receiver not in after, after  # the name, never the id the lookup gives
    assert containment(after, _user(seed, 1), mask=True) < 0.5, after
    assert not structure_mismatches(_structure(seed), _structure(variant))


def test_an_idiom_is_no_cue_and_a_quoted_value_ends_its_sentence_once():
    from rods_agents.variation.cues import stray_cues

    assert not stray_cues("It would mean a lot if you could add Omega Industries to my watchlist.", ("add_to_watchlist",))
    assert stray_cues("Add the mean of those numbers to my watchlist.", ("add_to_watchlist",))
    p = parse_phrasing("TicketAPI", "create_ticket", 0, "Open a ticket with description '{description}'.")
    assert render(p, (_slot("description", "A surprise charge."),)) == "Open a ticket with description 'A surprise charge.'"


def test_an_id_the_state_maps_to_a_name_the_turn_says_is_written_by_that_name():
    from rods_agents.variation.donor_search import lookup_names

    seed = bfcl_task("multi_turn_base_91")  # 'update Michael ... with message ...': MessageAPI's user_map has Michael
    assert lookup_names(trace_task(seed), seed.initial_config)["USR006"] == "Michael"
    seed, variant = _rewritten("multi_turn_base_91")
    after = _user(variant, 0)
    receiver = re.search(r"receiver_id='(\w+)'", " ".join(variant.ground_truth[0])).group(1)
    name = lookup_names(trace_task(variant), variant.initial_config)[receiver]  # Michael, or the name the plan gave him
    assert name in after and receiver not in after, after
    assert containment(after, _user(seed, 0), mask=True) < 0.5, after
    assert not structure_mismatches(_structure(seed), _structure(variant))


def test_a_context_sentence_stands_on_its_own_in_a_first_turn():
    # context sentences state an implicit call's value and may open a conversation (read 17: a first turn began
    # 'The files I mean are in the 'templates' folder.', pointing back at nothing; read 29: 'The files for this are in
    # the proposals folder', where 'this' is nothing); none of them points back
    from rods_agents.variation.phrasebook import contexts

    back = re.compile(r"\b(I mean|I meant|as I said|mentioned|that one|those ones|the same|for (?:this|that|it))\b", re.I)
    pointing = [text for texts in contexts().values() for text in texts if back.search(text)]
    assert not pointing, pointing


def test_a_value_built_by_a_named_recipe_is_asked_for_only_by_words_for_that_recipe():
    """'Fill the fuel tank to completely full.' (multi_turn_base_71) leaves the amount to the assistant: read the
    level, subtract it from the capacity. A sentence marked ``composes`` for that recipe ('I'd like a full tank.')
    leaves it the same work; no other fits such a value, and it fits no other value (a fill of 30 that leaves 40)."""
    from rods_agents.analysis.faithfulness import fill_not_full
    from rods_agents.variation.turn_bank import recipe_of

    assert recipe_of("fillFuelTank", "fuelAmount", '{"fuelLevel": 50.0}') == "fill_to_capacity"
    assert recipe_of("fillFuelTank", "fuelAmount", '{"fuelLevel": 40.0}') == ""
    assert recipe_of("fillFuelTank", "fuelAmount", '{"error": "Cannot fill gas above the tank capacity."}') == ""
    full = parse_phrasing("VehicleControlAPI", "fillFuelTank", 0,
                          {"text": "I'd like a full tank.", "composes": {"fuelAmount": "fill_to_capacity"}})
    plain = parse_phrasing("VehicleControlAPI", "fillFuelTank", 1, "Please refuel the car.")
    built = (Slot(0, "fuelAmount", "45.0", "composed", False, "", "fill_to_capacity"),)
    partial = (Slot(0, "fuelAmount", "30.0", "composed", False, ""),)
    assert render(full, built) == "I'd like a full tank." and render(plain, built) is None
    assert render(full, partial) is None
    with pytest.raises(ValueError, match="composes"):
        parse_phrasing("VehicleControlAPI", "fillFuelTank", 2, {"text": "Add {fuelAmount} gallons.",
                                                                "composes": {"fuelAmount": "fill_to_capacity"}})
    seed, variant = _rewritten("multi_turn_miss_func_71")  # turn 3: 'Fill the fuel tank to completely full.'
    assert _user(variant, 3) != _user(seed, 3) and not fill_not_full(variant, seed)
    assert not structure_mismatches(_structure(seed), _structure(variant))


def test_a_date_the_turn_writes_in_words_leaves_it_open_to_new_words():
    """long_context_199 books 'on the morning of April 15th 2026': the date written in words counts as a value the
    assistant builds, which kept the whole turn in the seed's words. A phrasebook sentence writes it in words too
    ('on April 15th, 2026'), so the turn is re-worded and its structure (that transformation included) stays."""
    kept = 0
    for v in range(4):  # a draft whose structure breaks (another route, the date then read as said) the verdict refuses
        seed, variant = _rewritten("multi_turn_long_context_199", v)
        assert _user(variant, 0) != _user(seed, 0) and containment(_user(variant, 0), _user(seed, 0)) < 0.5
        day = re.search(r"travel_date='(\d{4}-\d{2}-\d{2})'", " ".join(variant.ground_truth[0])).group(1)
        assert date_words(day)[0] in _user(variant, 0) and day not in _user(variant, 0)  # its own ('April 22nd, 2026')
        kept += not structure_mismatches(_structure(seed), _structure(variant))
    assert kept


def test_a_phrasing_naming_its_parameter_as_the_tool_does_is_a_problem():
    """Read 18: 'Tail report.csv for me, with lines set to 15.' is the tool's wording, not a user's."""
    from rods_agents.variation.phrasebook import lint

    leak = parse_phrasing("GorillaFileSystem", "tail", 0, "Tail '{file_name}' for me, with lines set to {lines}.")
    plain = parse_phrasing("GorillaFileSystem", "tail", 1, "Tail '{file_name}' for me, just the last {lines} lines.")
    assert any("names its parameter 'lines'" in why for why in lint(leak))
    assert lint(plain) == []


def test_a_piece_cut_for_one_call_that_asks_for_another_is_no_donor():
    """base_106's 'Could you get its present stock performance for me and proceed with purchasing 100 shares ...' was
    cut as the order's sentence, and worded base_142's turn that only places an order (read 18: it asks for a lookup
    the ground truth never makes)."""
    from rods_agents.variation.turn_bank import asks_other_work, turn_bank

    piece = "Could you get its present stock performance for me and proceed with purchasing 100 shares?"
    assert asks_other_work(piece, ("get_stock_info", "place_order"), ("place_order",))
    assert not asks_other_work("Proceed with purchasing 100 shares.", ("get_stock_info", "place_order"), ("place_order",))
    assert not asks_other_work("In the documents folder, sort notes.txt.", ("cd", "sort"), ("sort",))  # a hidden value
    orders = [d.text for d in turn_bank().get(("place_order",), ())]
    assert orders and not any("stock performance" in t for t in orders)


def test_a_recipe_is_matched_by_donors_too_and_names_its_result(monkeypatch):
    """A review of the recipe change: a human turn building another amount ('I think 40 gallons in total') is no donor
    for a fill to capacity, and a recipe rule that names no result matches nothing (it would tag every value)."""
    from rods_agents.analysis import knowledge
    from rods_agents.variation.donor_fit import value_map
    from rods_agents.variation.turn_bank import Donor, recipe_of

    full = (Slot(0, "fuelAmount", "45.0", "composed", False, "", "fill_to_capacity"),)
    other = Donor("multi_turn_base_66", 66, 1, "I think 40 gallons in total should do. Can you handle the gas top-up?",
                  ("fillFuelTank",), (Slot(0, "fuelAmount", "30.0", "composed", False, ""),), "{}", frozenset())
    assert value_map(other, full) is None
    assert value_map(other, (Slot(0, "fuelAmount", "35.0", "composed", False, ""),)) is not None
    monkeypatch.setattr(knowledge, "value_recipes", lambda: {"fillFuelTank.fuelAmount": {"fill_to_capacity": {}}})
    assert recipe_of("fillFuelTank", "fuelAmount", '{"fuelLevel": 12.0}') == ""


def test_only_a_number_that_reads_as_context_follows_new_words_unbound():
    """The review's bound wordings all refuse; a code named as such, a date and a year pass."""
    from rods_agents.analysis.value_sources import _numbers
    from rods_agents.variation.saying import untaken_limit

    bounds = ["I can spend up to 300 dollars.", "By promising I mean the price is larger than 300.",
              "The most I will pay is 500.", "Keep it to 500 or less.", "My ceiling is 600.", "My max spending limit is 7000."]
    context = ["I can provide the CVV when needed, which is 456.", "We start off on December 24, 2026.",
               "My card number is 4660-1228-1278-3401.", "I was born in 1985."]
    assert all(untaken_limit(x, _numbers(x)) for x in bounds)
    assert not any(untaken_limit(x, _numbers(x)) for x in context)


def test_the_parameter_lint_reads_camel_case_and_equals_signs():
    from rods_agents.variation.phrasebook import lint

    for text in ("Refuel with fuel amount set to {fuelAmount}.", "Tail '{file_name}', lines = {lines}."):
        method = "fillFuelTank" if "fuel" in text else "tail"
        cls = "VehicleControlAPI" if "fuel" in text else "GorillaFileSystem"
        assert any("names its parameter" in why for why in lint(parse_phrasing(cls, method, 0, text))), text
    assert not any("names its parameter" in why for why in lint(parse_phrasing(
        "TravelAPI", "cancel_booking", 0, "Please cancel booking {booking_id}. Access token: {access_token}.")))


def test_the_first_words_of_a_task_withhold_a_value_without_pointing_back_at_it():
    """miss_param_142 opens by withholding the stock ('Let's get a company on my watchlist'); new words 'I'd like to
    keep an eye on it, so add it to the watchlist.' point at nothing said before (read of 2026-12-03). A sentence
    with 'a company' or 'a stock' withholds it as the seed does. After an earlier turn a pronoun still stands for the
    withheld value, which nothing before names (or names wrongly: read of 2026-12-04, miss_param_131's 'to them'), so
    no such sentence is offered there either; 'that stock' may still point back."""
    from rods_agents.variation.donor_search import _ANAPHOR, _PRONOUN, phrasebook_donors

    seed = bfcl_task("multi_turn_miss_param_142")
    held = (_slot("stock", "ZETA", "withheld"),)
    span = "Let's get a company on my watchlist, alright? I'd like to keep an eye on them."
    first = phrasebook_donors(seed, 0, 0, ("add_to_watchlist",), held, segment_signature(), set(), set(), span, "")
    assert first and not any(_ANAPHOR.search(d.text) for d in first)
    assert all("ZETA" not in d.text for d in first)  # the value stays withheld
    later = phrasebook_donors(seed, 0, 0, ("add_to_watchlist",), held, segment_signature(), set(), set(), span,
                              "I've been reading about Zeta Corp.")
    assert later and not any(_PRONOUN.search(d.text) for d in later)
    # 'Can you store that in the file 'CourseOutline1.csv' for me?' withheld the content the next turn gives with
    # 'that' pointing at nothing (miss_param_15, read of 2026-12-04, third session): no such sentence either
    seed = bfcl_task("multi_turn_miss_param_15")
    held = (_slot("content", "Student | Math", "withheld"), _slot("file_name", "DataSet1.csv"))
    span = "Infuse 'DataSet1.csv' with some preliminary numbers for our initial analytical exploration."
    echo = phrasebook_donors(seed, 1, 0, ("echo",), held, segment_signature(), set(), set(), span,
                             "Let's start by producing a file named 'DataSet1.csv'.")
    assert not [d.text for d in echo if re.search(r"\bthat (?:in|into)\b", d.text)]


def test_a_run_of_calls_taking_one_parameter_twice_writes_each_by_its_method():
    """'cp+mv' (copy a file into a folder under a new name): cp's and mv's destinations differ, so a sentence for the
    run writes ``{cp.destination}`` and ``{mv.destination}``; the shared source is written once. Before, such a run fit
    no sentence at all and the seed's words were kept (scenarios 2, 9 and 16)."""
    from rods_agents.variation.phrasebook import own_slots

    run = (_slot("source", "notes.txt"), _slot("destination", "Archive"),
           _slot("source", "notes.txt", index=1), _slot("destination", "notes_2024.txt", index=1))
    assert set(own_slots(run, "cp+mv")) == {"source", "cp.destination", "mv.destination"}
    p = parse_phrasing("GorillaFileSystem", "cp+mv", 0,
                       "Copy '{source}' into '{cp.destination}' and rename the copy to '{mv.destination}'.")
    assert render(p, run) == "Copy 'notes.txt' into 'Archive' and rename the copy to 'notes_2024.txt'."
    # a sentence writing the destination once cannot say both
    plain = parse_phrasing("GorillaFileSystem", "cp+mv", 1, "Copy '{source}' to '{destination}'.")
    assert render(plain, run) is None
    # two calls of one method: 'cp.source' would not say which
    twice = (_slot("source", "a.txt"), _slot("destination", "Archive"),
             _slot("source", "b.txt", index=1), _slot("destination", "Archive", index=1))
    assert own_slots(twice, "cp+cp") is None
    # the files name only catalog parameters, qualified ones included
    assert not [x for x in check() if "cp+mv" in x]


def test_a_copy_kept_under_a_new_name_gets_new_words_for_the_whole_request():
    # multi_turn_base_2 turn 3: "How about we copy it over to the archive directory under the name IdeasArchive.txt
    # while keeping the original intact?" kept the seed's words in every variant: no sentence asked for cp and mv at once
    sentences = {p.text for p in phrasebook()["cp+mv"]}
    words = [" ".join(m.content for m in _variant("multi_turn_base_2", v, 3)[1].turns[3] if m.role == "user")
             for v in range(2)]
    seed = " ".join(m.content for m in bfcl_task("multi_turn_base_2").turns[3] if m.role == "user")
    assert any(containment(w, seed, mask=True) < 0.5 for w in words), words
    assert any(re.sub(r"\{[^}]*\}", "X", s).split("X")[0] in w for w in words for s in sentences), words


def test_a_folder_the_user_named_in_an_earlier_turn_need_not_be_repeated():
    """multi_turn_base_9 turn 1 repeats where the file is ('... the 'Archives' directory inside the 'Documentation'
    folder') after turn 0 said it ('I should have a document called 'FinalReport.txt' in the 'Documentation'
    folder'): new words without the repeat were refused, and the seed's words were kept in all eight samples."""
    from rods_agents.variation.saying import with_specifics

    span = ("Make a copy of 'FinalReport.txt' to the 'Archives' directory inside the 'Documentation' folder, while "
            "ensuring the duplicate is preserved as 'ArchivedFinalReport2024.txt'.")
    text = "Copy 'FinalReport.txt' into 'Archives' and rename the copy to 'ArchivedFinalReport2024.txt'."
    earlier = "I remember I should have a document called 'FinalReport.txt' in the 'Documentation' folder."
    assert with_specifics(text, span, ("cp", "mv"), "", set()) is None  # said nowhere before: it must stay
    assert with_specifics(text, span, ("cp", "mv"), "", set(), earlier) == text
    # a number is never taken as said before: 'the last 10 lines' may differ from an earlier '10'
    lines = "Show me the last '10' lines of 'log.txt'."
    assert with_specifics("Show me the end of 'log.txt'.", lines, ("tail",), "", set(), "I saw '10' errors.") is None
    for v in range(2):
        seed, variant, _, _ = _variant("multi_turn_base_9", v, 3)
        words = " ".join(m.content for m in variant.turns[1] if m.role == "user")
        assert containment(words, " ".join(m.content for m in seed.turns[1] if m.role == "user"), mask=True) < 0.5, words


def test_a_quote_and_a_purchase_of_one_stock_said_once_get_new_words_for_both():
    # multi_turn_*_106 turn 0: 'Could you get its present stock performance for me and proceed with purchasing 100
    # shares at the prevailing market rate?' names AAPL once for both calls, so it is never cut between them, and no
    # sentence asked for both: all six samples kept the seed's words
    assert len(phrasebook()["get_stock_info+place_order"]) >= 8
    seed_text = " ".join(m.content for m in bfcl_task("multi_turn_long_context_106").turns[0] if m.role == "user")
    words = [" ".join(m.content for m in _variant("multi_turn_long_context_106", v, 3)[1].turns[0] if m.role == "user")
             for v in range(2)]
    assert all(containment(w, seed_text, mask=True) < 0.5 for w in words), words


# ----------------------------------------------------------------------------- numbers no call takes, said again
def test_a_spending_cap_in_the_request_sentence_is_said_again_on_its_own():
    """base_160: 'booking your flight from JFK to LAX on February 28, 2026 costing no more that $2500, through your
    go-to credit card with id 'card_3478'' asks for the booking and states a cap no call takes. New words for the
    booking used to be refused (the sentence holding the cap asks for the call too), so all eight samples of
    scenario 160 kept the seed's words. The cap now follows the new words in a sentence of its own."""
    from rods_agents.variation.saying import restated_numbers, with_specifics

    span = ("Switching gears, it's time to arrange your business-class journey. I'll take care of booking your flight "
            "from JFK to LAX on February 28, 2026 costing no more that $2500, through your go-to credit card with id "
            "'card_3478', but rest assured.")
    values = ("book_flight(access_token='abc123xyz', card_id='card_3478', travel_date='2026-02-28', travel_from='JFK', "
              "travel_to='LAX', travel_class='business')")
    text = "Book a flight from JFK to LAX on February 28th, 2026 in business class with card card_3478."
    out = with_specifics(text, span, ("book_flight",), values)
    assert out is not None and out.startswith(text) and "$2500" in out and "JFK" not in out[len(text):]
    # only an upper bound is said again: 'over $5000' (a cap only with "can't afford" before it) and an estimate are not
    assert restated_numbers("I really can't afford a ticket that is over $5000", {5000.0}, "k") is None
    assert restated_numbers("it runs over 300 miles", {300.0}, "k") is None  # no cap, card detail or estimate
    assert restated_numbers("My max spending limit is 7000.", {7000.0}, "k")[0].count("7000") == 1
    assert restated_numbers("with a cost under $1,200, please", {1200.0}, "k")[0].count("$1,200") == 1
    # a sentence that lacks a value a call takes besides the cap is no cap alone: refused as before
    assert with_specifics("Book a flight from JFK to LAX in business class with card card_3478.", span,
                          ("book_flight",), values) is None


# ----------------------------------------------------------------------------- a hashtag named without its sign
def test_a_hashtag_the_user_names_without_its_sign_is_stated_and_worded_that_way_again():
    """base_78 asks for 'the hashtag 'BusinessOnTheMove'' and the call takes '#BusinessOnTheMove'; base_151 'hashtags
    'TravelUpdate' and 'BusinessTrip''. The value counted as composed (78) or read from the state (151), so no sentence
    could word the turn and all sixteen samples of the two scenarios kept the seed's words. It is the user's value now;
    new words name it without the sign too (adding '#' stays the assistant's) and say it is a hashtag."""
    from rods_agents.analysis.value_sources import classify_arguments
    from rods_agents.variation.saying import named_as

    for sid, turn in (("multi_turn_base_78", 1), ("multi_turn_base_151", 2)):
        seed = bfcl_task(sid)
        tags = [a for a in classify_arguments(seed, trace_task(seed)) if a.turn == turn and a.param == "tags"]
        assert [a.source for a in tags] == ["user"], (sid, tags)
    span = "Let's post a tweet: 'Ensuring my wheels are well-maintained.' with the hashtag 'BusinessOnTheMove'."
    assert named_as(["#BusinessOnTheMove"], span) == "the hashtag 'BusinessOnTheMove'"
    assert named_as(["#TravelUpdate", "#BusinessTrip"], "hashtags 'TravelUpdate' and 'BusinessTrip'") == \
        "the hashtags 'TravelUpdate' and 'BusinessTrip'"
    assert named_as(["@Jerry"], "mentioning Jerry") == "Jerry"
    assert named_as(["#TravelUpdate"], "tag it #TravelUpdate") is None  # said with its sign: written as it is


def test_a_cards_cvv_and_expiry_and_an_estimate_in_the_request_sentences_are_said_again_on_their_own():
    """base_177: 'wants to book a flight using the card with id 'card_7629' and the access token 'abc123xyz', expiring
    on 10/2026, with CVV 456. They intend to fly ... in business class, estimated at $1,200.' Each number no call
    takes follows the new words in a sentence of its own, in the seed's order; all eight samples of scenario 177 had
    kept the seed's words."""
    from rods_agents.variation.saying import restated_numbers, with_specifics

    span = ("Consider this: A patient, a traveler in this context, wants to book a flight using the card with id "
            "'card_7629' and the access token 'abc123xyz', expiring on 10/2026, with CVV 456. They intend to fly from "
            "Los Angeles to Tokyo on December 15, 2026, in business class, estimated at $1,200.")
    values = ("book_flight(access_token='abc123xyz', card_id='card_7629', travel_date='2026-12-15', travel_from='LAX', "
              "travel_to='HND', travel_class='business')")
    text = ("Book a flight from Los Angeles to Tokyo on December 15th, 2026 in business class, using card card_7629 and "
            "access token abc123xyz.")
    out = with_specifics(text, span, ("book_flight",), values)
    assert out is not None and out.startswith(text), out
    tail = out[len(text):]
    assert tail.index("10/2026") < tail.index("456") < tail.index("$1,200") and "Tokyo" not in tail
    linked = "I've recently linked a credit card with the ID 'card_1886', set to expire in 2026, and it's under my name."
    assert restated_numbers(linked, {2026.0}, "k")[0].count("2026") == 1


def test_only_a_cap_on_money_a_cards_details_and_an_estimate_are_said_again():
    """Review of this session: a negated lower bound ('no less than $500') or a count ('up to 4 guests') read as a
    cap would tell the assistant the opposite; a passport's expiry is no card's. Each cap sentence of the table is read
    as a limit by the plan's limit check, so the cap it states is one the plan held the costs to."""
    from rods_agents.analysis.knowledge import table
    from rods_agents.analysis.tracing import stated_limits
    from rods_agents.analysis.value_sources import classify_scalar
    from rods_agents.variation.saying import named_as, restated_numbers

    assert restated_numbers("a price no less than $500", {500.0}, "k") is None
    assert restated_numbers("it must not go below $300", {300.0}, "k") is None
    assert restated_numbers("a room for up to 4 guests", {4.0}, "k") is None
    assert restated_numbers("My passport expires in 2030", {2030.0}, "k") is None
    assert all(stated_limits([x.format(value="$2500")]) == [(0, 2500.0)] for x in table("restated_numbers")["upper"])
    # a word inside a quoted text of its own names no hashtag; a two-letter tag is no word said ('AI' in 'said')
    assert named_as(["#Travel"], "Post 'Travel is fun' with a fitting hashtag.") is None
    assert classify_scalar("#AI", "Post what I said earlier", set(), [], [], set(), set(), [])[0] != "user"


def test_a_withholding_sentence_may_leave_the_value_open_but_never_name_it():
    """miss_param_121 asks for 'a sector' and says which one a turn later. A sentence saying 'a sector I have in
    mind' leaves it open as the seed does; one naming the sector, or 'the sector', answers the question the assistant
    must ask. Every word of the withheld parameter's name was refused, so no sentence worded the turn and the
    phrasebook's marked phrasings ('at a price I have in mind') were never used."""
    from rods_agents.analysis.value_sources import classify_arguments
    from rods_agents.variation.donor_search import _describes_withheld, phrasebook_donors
    from rods_agents.variation.turn_bank import withholding_calls

    held = (_slot("sector", "Technology", "withheld"),)
    assert not _describes_withheld("Please list the companies within a sector I have in mind.", held)
    assert not _describes_withheld("Pull up the tickers for one particular sector.", held)
    assert _describes_withheld("Show me the Technology sector.", held)
    assert _describes_withheld("List the sector's stocks.", held)
    assert _describes_withheld("Buy 5 shares at market price.", (_slot("price", 1.0, "withheld"),))
    seed = bfcl_task("multi_turn_miss_param_121")
    trace = trace_task(seed)
    sources = classify_arguments(seed, trace)
    methods, target, signature = withholding_calls(seed, trace, sources, information_structure(seed, trace, sources), 0)
    said = [d.text for d in phrasebook_donors(seed, 0, 0, methods, target, signature, set(), set(),
                                              seed.turns[0][0].content)]
    assert said and not any("technology" in t.lower() for t in said)


def test_new_words_point_back_where_the_seed_points_back_at_a_value_they_leave_out():
    """long_context_27: 'Please create a new ticket with same title and description ...' leaves the title to the
    ticket before. 'Create the ticket with the description ...' left it to nothing (read of 2026-12-05): the new
    words must say 'the same title' too."""
    for v in range(2):
        seed, variant, _, _ = _variant("multi_turn_long_context_27", v)
        assert "same title" in seed.turns[2][0].content
        said = variant.turns[2][0].content
        assert said != seed.turns[2][0].content and re.search(r"\bsame title\b", said)


def test_a_human_donor_reading_its_value_from_another_result_never_fits():
    """miss_param_59: 'could you perform a precise computation of 10 to determine the base 20 logarithm for the number
    of line?' (a turn whose value was wc's line count) worded the logarithm of the distance (read of 2026-12-05)."""
    from rods_agents.variation.donor_fit import value_map
    from rods_agents.variation.turn_bank import Donor

    def slots(producer: str) -> tuple[Slot, ...]:
        return (Slot(0, "value", json.dumps(290.0), "call", False, producer), Slot(0, "base", "20", "user", False))

    donor = Donor("multi_turn_base_0", 0, 0, "the base 20 logarithm for the number of line", ("logarithm",),
                  slots("wc"), "{}", frozenset())
    assert value_map(donor, slots("estimate_distance")) is None
    assert value_map(donor, slots("wc")) is not None


def test_a_supplied_city_says_which_end_of_the_trip_it_is():
    """miss_param_77 asks for the distance to Stonebrook and then supplies 'from San Francisco'. 'The city is San
    Francisco.' did not say it is the start (read of 2026-12-05); the answer says which end it is."""
    seed, variant, plan, _ = _variant("multi_turn_miss_param_77")
    assert "from San Francisco" in seed.turns[1][0].content
    said = variant.turns[1][0].content
    city = plan.swaps.get("San Francisco", "San Francisco")  # the start city may be another one too
    assert city in said and re.search(r"\b(starting|starts|leaving) (from|in)\b", said)


def test_every_withholding_phrasing_can_word_a_turn():
    """A phrasing marked ``withholds`` that names the withheld value ('in my usual class', 'the cabin class I prefer')
    is refused by the filter for sentences describing the value (``_describes_withheld``): it was dead data (the two
    book_flight ones, and miss_param_177 kept its seed's words in every sample). Each must leave the value open in
    words ('in a specific class')."""
    from rods_agents.variation.donor_search import _describes_withheld

    dead = [p.text for ps in phrasebook().values() for p in ps if p.withholds and _describes_withheld(
        re.sub(r"\{[^}]*\}", "Zed", p.text), (Slot(0, p.withholds, '"x"', "withheld", False),))]
    assert not dead, dead


def test_a_shop_lookup_and_the_route_to_it_and_a_grep_of_the_listed_file_get_new_words():
    """'kindly pinpoint the nearest tire shop for me and set navigation.' (base_94 turn 1, two calls, the route read
    from the lookup) and 'let's pinpoint every mention of 'update' in this script.' (base_33 turn 2, the file read from
    the listing) had no sentence pointing at those results, so every sample kept the seed's words."""
    for seed_id, turn in (("multi_turn_base_94", 1), ("multi_turn_base_33", 2)):
        seed, variant = _rewritten(seed_id)
        after = _user(variant, turn)
        assert containment(after, _user(seed, turn), mask=True) < 0.5, after
        assert not [m for m in structure_mismatches(_structure(seed), _structure(variant)) if m.turn == turn]


def test_a_booking_withholding_its_destination_leaves_a_token_said_before_unsaid():
    """miss_param_160 turn 1 leaves the destination out and the token to an earlier turn: every sentence withholding
    the destination stated the token again (says more than the seed's turn), so the turn kept the seed's words."""
    seed, variant = _rewritten("multi_turn_miss_param_160")
    after = _user(variant, 1)
    assert containment(after, _user(seed, 1), mask=True) < 0.5, after
    token = re.search(r"access_token='([^']+)'", variant.ground_truth[2][0]).group(1)
    assert token not in after
    assert not [m for m in structure_mismatches(_structure(seed), _structure(variant)) if m.turn in (1, 2)]


def test_a_pick_in_words_the_lexicon_reads_as_the_calls_own_gets_new_words_around_it():
    # long_context_7 turn 2 'output the complete content of the first file you find': 'the first' reads as cat's
    # own words, so no cue counted as stray and the sentence stayed whole in 6 accepted variants
    # the find has one match, so the new words may point at the file it found instead (turn_bank._only_path_holds)
    seed, variant = _rewritten("multi_turn_long_context_7")
    before, after = _user(seed, 2), _user(variant, 2)
    assert re.search(r"the first file|file (?:you (?:just )?found|the search found)", after, re.I)
    assert containment(after, before, mask=True) < 0.5, after
    assert not [m for m in structure_mismatches(_structure(seed), _structure(variant)) if m.turn == 2]


def test_a_person_named_with_their_id_keeps_the_id_in_new_words():
    # long_context_184 turn 3: 'inform my friend, Sam (id USR006) ... a concise message 'Hi Sam, ... soon'.'' (the seed
    # quotes the message without its closing stop). A sentence naming only 'Sam' leaves the id to a lookup the ground
    # truth never makes, so every sentence was refused and the turn stayed the seed's in 5 accepted variants
    seed, variant = _rewritten("multi_turn_long_context_184")
    after = _user(variant, 3)
    receiver = re.search(r"receiver_id='(USR\d+)'", variant.ground_truth[3][0]).group(1)
    name = next(n for n, i in variant.initial_config["MessageAPI"]["user_map"].items() if i == receiver)  # Sam or his new name
    message = re.search(r"message=(['\"])(.*)\1\)", variant.ground_truth[3][0]).group(2).replace("\\'", "'")
    # the message the call sends, greeting him by his name (a text of its own: offline_dictated.json)
    assert f"{name} (id {receiver})" in after and message.startswith(f"Hi {name},") and message.rstrip(".") in after
    assert "Subsequent to the cancellation" not in after and "concise message" not in after, after  # its own words
    assert not [m for m in structure_mismatches(_structure(seed), _structure(variant)) if m.turn == 3]


def test_an_invoice_wanted_as_a_summary_for_the_records_gets_new_words():
    # miss_param_192 turn 5: 'fetch the invoice ... I need a summary for my records': 'summary' read as a
    # transformation cue the structure tied to no call, so the sentence stayed whole in 6 accepted variants
    seed, variant = _rewritten("multi_turn_miss_param_192")
    after = _user(variant, 5)
    assert re.search(r"invoice|receipt|bill", after) and containment(after, _user(seed, 5), mask=True) < 0.5, after
    assert not [m for m in structure_mismatches(_structure(seed), _structure(variant)) if m.turn == 5]


def test_a_fuel_level_read_as_a_whole_number_is_singled_out_by_its_reading():
    # base_59 turn 1: displayCarStatus gives {"fuelLevel": 10.0}, gallon_to_liter takes gallon=10; 10 and 10.0 compared
    # as JSON text counted as two values, so no sentence could say 'that reading' and the turn stayed the seed's
    seed = bfcl_task("multi_turn_base_59")
    trace = trace_task(seed)
    at = next(i for i, r in enumerate(trace.calls) if r.name == "gallon_to_liter")
    assert singled_producer(trace, at - 1, 10, at) == "displayCarStatus"
    _, variant = _rewritten("multi_turn_base_59")
    assert containment(_user(variant, 1), _user(seed, 1), mask=True) < 0.5, _user(variant, 1)
    assert not [m for m in structure_mismatches(_structure(seed), _structure(variant)) if m.turn == 1]


def test_no_donor_speaks_of_the_user_in_the_second_person_or_asks_after_its_own_storys_work():
    # read 24: 'Post cancellation, you're driven to survey your financial standing.' (base_130's narrator voice) worded
    # a first-person task's turn, and 'What's left in the current directory including the hidden files?' opened one
    from rods_agents.variation.turn_bank import turn_bank

    texts = {d.text for donors in turn_bank().values() for d in donors}
    narrated = {t for t in texts if "you're driven" in t or "What's left in the current directory" in t}
    assert narrated  # the bank holds them (their own seeds keep their voice) ...
    for methods, donors in turn_bank().items():
        for signature in {d.signature for d in donors if d.text in narrated}:
            found = donors_for(methods, signature, -1)
            assert not {x.text for x in found} & narrated  # ... but no other task gets them as words


def test_a_branch_the_task_never_takes_stays_beside_new_words_with_its_own_quoted_value():
    # base_66: 'If it is reachable, set navigation to '1914 7th St, Apt B, Berkeley, CA 94710'.' The trip is not
    # reachable, so no call takes the address; new words for the feasibility check must keep the branch (the
    # assistant has to see it is not taken), and the address's own numbers are no bound on anything
    from rods_agents.variation.saying import with_specifics

    span = ("That's quite a stretch—450 miles in one go today. Is this something I could realistically pull off? "
            "If it is reachable, set navigation to '1914 7th St, Apt B, Berkeley, CA 94710'.")
    out = with_specifics("Check whether the car can handle 450 miles.", span,
                         ("estimate_drive_feasibility_by_mileage",), "estimate_drive_feasibility_by_mileage(distance=450.0)")
    assert out == ("Check whether the car can handle 450 miles. If it is reachable, set navigation to "
                   "'1914 7th St, Apt B, Berkeley, CA 94710'.")
    # a quoted value of no call and no branch is still another world's: no new words keep it
    assert with_specifics("Check whether the car can handle 450 miles.", "Drive 450 miles to 'Elm Court'.",
                          ("estimate_drive_feasibility_by_mileage",), "estimate_drive_feasibility_by_mileage(distance=450.0)") is None


def test_a_ticket_login_or_close_sentence_names_the_support_system():
    """Read 26: 'Could you authenticate me as user981 with password 12345?' beside a trading task left open which
    system to log into, and 'Can you shut the ticket for me?' beside a booked flight read as cancelling the flight.
    Every ticket_login sentence names the ticketing system and every close_ticket one a support ticket."""
    methods = json.loads((PROMPTS_DIR / "phrasebook" / "TicketAPI.json").read_text())["methods"]
    text = lambda p: p if isinstance(p, str) else p["text"]  # noqa: E731
    for p in methods["ticket_login"]:
        assert re.search(r"ticket|help ?desk|support", text(p), re.I), text(p)
    for p in methods["close_ticket"]:
        assert re.search(r"\bticket\b", text(p), re.I) and "shut" not in text(p), text(p)


def test_a_sentence_after_one_that_says_the_route_points_at_it_instead_of_saying_it_again():
    """Read 26 (long_context_189): 'Please estimate the airfare from NYC to Tokyo on December 24th, 2026 in economy
    class. Then could you book me from NYC to Tokyo on December 24th, 2026, economy class, ...' said the route, date
    and class twice in back-to-back sentences. Values the turn's new sentences already say (``before``) are left to
    them: every booking sentence then leaves the route, date and class out (fails without donor_search's ``before``)."""
    from rods_agents.variation.donor_search import phrasebook_donors

    seed = bfcl_task("multi_turn_long_context_189")
    slots = (_slot("access_token", "abc117xyz"), _slot("card_id", "card_5040"), _slot("travel_date", "2026-12-24"),
             _slot("travel_from", "JFK", "state"), _slot("travel_to", "HND", "state"),
             _slot("travel_class", "economy", "flag", True))
    span = " ".join(m.content for m in seed.turns[0] if m.role == "user").replace("first", "economy")
    said = "Please estimate the airfare from NYC to Tokyo on December 24th, 2026 in economy class."
    again = phrasebook_donors(seed, 0, 1, ("book_flight",), slots, segment_signature(), set(), set(), span)
    after = phrasebook_donors(seed, 0, 1, ("book_flight",), slots, segment_signature(), set(), set(), span,
                              before=said)
    assert after and all("Tokyo" not in d.text and "December" not in d.text and "economy" not in d.text
                         for d in after), [d.text for d in after]
    assert all(re.search(r"\b(it|that|the) ?(flight|booking)?\b", d.text) for d in after)  # and point back at it
    assert any("Tokyo" in d.text for d in again)  # without the sentence before, the route is said
    # a sentence that leaves the value out without pointing back is no fit: 'Next, go ahead and transfer
    # 'expense_report.pdf'.' after 'Could you create a directory called 'exports'?' says nowhere to move it
    mv = (_slot("source", "expense_report.pdf"), _slot("destination", "exports"))
    made = "Could you create a directory called 'exports'?"
    words = "Create a directory called 'exports' and move 'expense_report.pdf' to 'exports'."
    moved = phrasebook_donors(bfcl_task("multi_turn_base_0"), 0, 1, ("mv",), mv, segment_signature(), set(), set(),
                              words, before=made)
    assert all("exports" in d.text or re.search(r"\b(it|there|that)\b", d.text) for d in moved), [d.text for d in moved]


def test_a_grep_for_the_functions_a_script_defines_is_asked_for_by_what_it_finds():
    """base_33 asks 'Use grep to find out the name of the function of the script.' for grep(pattern='def'): the
    assistant composes 'def' from what is asked. No sentence asked for that recipe, so every sample kept the seed's
    sentence. A value recipe told by the value ('def' -> function_names) lets phrasings that leave 'def' unsaid word it."""
    from rods_agents.variation.turn_bank import recipe_of

    assert recipe_of("grep", "pattern", "{}", "def") == "function_names"
    assert recipe_of("grep", "pattern", "{}", "update") == ""
    seed, variant = _rewritten("multi_turn_base_33")
    said = _user(variant, 1)
    assert said != _user(seed, 1) and "def" not in said.lower() and "grep" in said.lower(), said
    assert [re.sub(r"file_name='[^']*',\s*", "", c) for c in variant.ground_truth[1]] == ["grep(pattern='def')"]


def test_a_withholding_sentence_leaves_the_value_unsaid_without_announcing_it():
    """Read 35 (miss_param_1): 'Show me some final lines of the file; I'll say how many.' tells the assistant outright
    that a value is missing and that it should wait for it, where the seed's 'show the last several lines the file'
    left it to notice; the reader marked the variant easier. No withholding sentence announces the value."""
    import json as _json
    from pathlib import Path

    announcing = re.compile(r"I'll (?:say|tell you|give you|let you know)|however many I|which I'll", re.I)
    def withholding(obj):
        if isinstance(obj, dict):
            if "withholds" in obj:
                yield obj.get("text", "")
            for v in obj.values():
                yield from withholding(v)
        elif isinstance(obj, list):
            for v in obj:
                yield from withholding(v)

    found = [(path.name, text) for path in sorted(Path("prompts/phrasebook").glob("*.json"))
             for text in withholding(_json.loads(path.read_text())) if announcing.search(text)]
    assert not found, found


def test_a_door_check_with_its_condition_gets_new_words_that_keep_both():
    # base_98: 'Would you be able to check the door locks and ensure they're secured if any are unlocked?': every
    # rewording dropped the check ('look at the locks') or the condition ('to make sure they're all secure if ...'),
    # so the turn stayed the seed's, and the verdict's seed_turn_kept left scenario 98 with no variant
    from rods_agents.analysis.novelty import SEED_TURN_COPY, kept_seed_turns

    for v in (0, 1):
        seed, variant = _rewritten("multi_turn_base_98", v)
        assert 0 not in kept_seed_turns(variant, seed, SEED_TURN_COPY), _user(variant, 0)
        assert not [m for m in structure_mismatches(_structure(seed), _structure(variant)) if m.turn == 0]


def test_no_withholding_sentence_points_back_at_words_never_said():
    # read 42, miss_param_68: 'mention the friend I told you about' withheld the handle by pointing at an earlier
    # mention no turn makes, which a reader marked misleading; 'the hashtags we talked about' did the same for tags.
    # A sentence that leaves a value out says it is missing, never that it was said before
    back = re.compile(r"\b(?:told you|talked about|we discussed|as discussed|I mentioned|we agreed)\b", re.I)
    offending = [(p.method, p.text) for phrasings in phrasebook().values() for p in phrasings
                 if p.withholds and back.search(p.text)]
    assert not offending, offending


def test_a_pick_by_position_takes_other_words_that_keep_its_position_cue():
    """'the third file displayed in that directory' (scenario 49) and 'the third stock in the list' (18) were in all
    eight variants of their scenarios: the pick's own words were written into every phrasing."""
    from rods_agents.analysis.information_structure import lexicon
    from rods_agents.variation.phrasebook import reworded_pick

    position = lexicon().references["position"]
    for phrase in ("the third file displayed in that directory", "the third stock in the list"):
        forms = {reworded_pick(phrase, key) for key in map(str, range(40))}
        assert phrase in forms and len(forms) == 3, forms
        assert all(any(p.search(f) for p in position) for f in forms), forms
    assert reworded_pick("the most recent order ID", "x") == "the most recent order ID"  # a pick by recency stays
    from graphs.synthesis import synthesize
    from rods_agents.stages.state import SynthesisContext

    seeds = [bfcl_task(f"multi_turn_{c}_49") for c in ("base", "miss_func", "miss_param", "long_context")]
    run = synthesize(seeds, SynthesisContext(seed=3, variants_per_seed=2))
    texts = " ".join(m.content for t in run.accepted for turn in t.turns for m in turn if m.role == "user")
    assert "the third of the files in that directory" in texts or "the third entry in that directory" in texts


def test_a_read_only_check_is_never_worded_as_making_sure_of_its_outcome():
    """Read 52 #25: 'Please see that the tires are in top condition.' asks the assistant to put the tires right, more than
    the ground truth's check_tire_pressure() does ('make sure my tires are in good shape' likewise). A sentence for a
    call that only reads the state asks to be told, not to see to it."""
    data = json.loads((PROMPTS_DIR / "phrasebook" / "VehicleControlAPI.json").read_text(encoding="utf-8"))
    for method in ("check_tire_pressure", "displayCarStatus"):
        for item in data["methods"][method]:
            text = item if isinstance(item, str) else item["text"]
            assert not re.search(r"\b(make sure|see that|see to it|ensure)\b", text, re.I), text
