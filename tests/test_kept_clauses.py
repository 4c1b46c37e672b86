"""A clause that decides the ground truth keeps its words; the request around it gets new ones.

What a user of the synthesized data relies on: 'forward this info to my cousin Bob via text, in the format 'The
distance from A to B is xxx km.'' is re-worded without losing the template, how to fill it, who gets it, or that
the assistant must build the text (rods_agents.variation.templates); 'Should the range fall short, go ahead and top
off the fuel tank with 30 gallons' keeps its condition and the call it governs in one sentence
(rods_agents.variation.condition_clauses). Before, such sentences kept the seed's words whole, and no variant of
scenarios 62, 75 and 94 was new enough to keep.
"""

from __future__ import annotations

import json
import re

from envs.executor import parse_call
from envs.task import bfcl_task
from rods_agents.analysis.information_structure import information_structure, reads_as_condition
from rods_agents.analysis.tracing import trace_task
from rods_agents.analysis.value_sources import classify_arguments
from rods_agents.variation.condition_clauses import condition_cut, leading_condition, trailing_condition
from rods_agents.variation.phrasebook import phrase_donors
from rods_agents.variation.templates import detached_template, fills_template, left_to_template, template_sentence
from rods_agents.variation.turn_bank import Slot, segment_signature
from tests.test_transplant import _variant


def test_a_template_is_filled_only_in_its_placeholders():
    template = "The distance from Rivermist to Stonebrook is xxx km."
    assert fills_template(template, "The distance from Rivermist to Stonebrook is 750.0 km.")
    assert fills_template("Front Left Tire: XXX PSI, Rear Left Tire: XXX PSI", "Front Left Tire: 32 PSI, Rear Left Tire: 30 PSI")
    assert not fills_template(template, "The distance from Rivermist to Greenway is 750.0 km.")  # a kept word changed
    assert not fills_template(template, "The trip from Rivermist to Stonebrook is 750.0 km.")
    assert not fills_template("Trip done.", "Trip done.")  # no placeholder: a text to write as it is, no template


def test_the_template_clause_is_cut_from_the_request_that_comes_before_it():
    span = ("Could you provide an estimate of the distance and forward this info to my cousin Bob via text, in the "
            "format 'The distance from Rivermist to Stonebrook is xxx km.', where xxx is replaced by the distance value")
    message = Slot(1, "message", json.dumps("The distance from Rivermist to Stonebrook is 750.0 km."), "user", False)
    cut = detached_template(span + ")?", (message,), 0, 2)
    assert cut == (span.index(", in the format"), len(span) + 1, (1, "message"))  # the explanation belongs to it
    assert detached_template(span, (message,), 0, 1) is None  # not a value of the calls these words ask for
    sentence = template_sentence((span + ")?")[cut[0]:cut[1]], "62|0|0")
    assert sentence.endswith("distance value.") and "format 'The distance from Rivermist" in sentence
    assert template_sentence(span[cut[0]:], "62|0|0", "message").split(" in the format")[0] in (
        "Write the message", "Please word the message", "Compose the message")


def test_a_template_in_mid_sentence_leaves_the_words_after_it_to_the_request():
    """base_17: 'Please dispatch of the report to Kelly, I need to add her contact (Kelly), in the format of 'Kelly
    Total Score: total_score', I'd appreciate a list of all the communications I've sent until now.' The clause ends
    with its quote; the list of sent messages after it is asked for by new words after the template, and the
    template's sentence follows the words asking for the message it shapes (scenario 17 had no variant)."""
    seed, variant, _, _ = _variant("multi_turn_base_17")
    text = variant.turns[2][0].content
    # Kelly as the variant names her (renamed in the template too)
    name = next(parse_call(c).kwargs["user_name"] for c in variant.ground_truth[2] if c.startswith("add_contact"))
    # the template, in the seed's words or its own (prompts/phrasebook/sentences.json)
    fmt = text.find(f"'{name} Total Score: total_score'")
    assert fmt > 0, text
    assert "I'd appreciate a list of all the communications" not in text
    # right after the words asking for the message the template says 'it'; after other words it names the message
    assert re.search(r"\b(?:the message|it)\b[^.']{0,40}$", text[:fmt]), text
    assert text.index(name) < fmt < text.lower().rindex("sent")  # before the later request


def test_only_a_sentence_leaving_the_text_to_the_template_words_a_templated_value():
    slots = (Slot(0, "receiver_id", json.dumps("USR002"), "user", False),
             Slot(0, "message", json.dumps("The distance from Rivermist to Stonebrook is 750.0 km."), "user", False))
    plain = [d.text for d in phrase_donors("send_message", slots, segment_signature())]
    left = [d.text for d in phrase_donors("send_message", left_to_template(slots, (0, "message")), segment_signature())]
    assert plain and all("750.0 km" in t for t in plain)  # a stated text is written out
    assert left and not any("750" in t or "'" in t for t in left)  # the template's clause says it instead
    assert not set(plain) & set(left)


def test_a_request_with_a_template_gets_new_words_and_keeps_what_the_template_decides():
    seed, variant, _, _ = _variant("multi_turn_base_62")
    seed_text, text = seed.turns[0][0].content, variant.turns[0][0].content
    assert "forward this info to my cousin Bob via text" in seed_text
    assert "forward this info" not in text  # the request is new words
    # the default user map names the receiver (Bob, or the name the plan gave him there), so the id stays the
    # assistant's to find
    users = variant.initial_config.get("MessageAPI", {}).get("user_map") or {"Bob": "USR002"}
    assert any(re.search(rf"\b{name}\b", text) for name in users)
    template = next(q for q in text.split("'") if "xxx km." in q)
    # the template's clause says how xxx is filled, in the seed's words or its own (prompts/phrasebook/sentences.json)
    around = text.replace(f"'{template}'", "")
    assert template.replace(" to ", "|").count("|") == 1, text
    assert "xxx" in around and "distance" in around and "one decimal place" in around, text  # how xxx is filled
    mine, theirs = information_structure(variant), information_structure(bfcl_task(seed.id))
    assert [len(t.transformations) for t in mine.turns] == [len(t.transformations) for t in theirs.turns]

    def sources(task):
        return sorted((a.turn, a.method, a.param, a.source) for a in classify_arguments(task, trace_task(task)))

    assert sources(variant) == sources(seed)


def test_a_condition_opening_its_sentence_is_cut_from_the_request_it_governs():
    text = ("Check the stats for me, would you? Should the range fall short, go ahead and top off the fuel tank with 30 "
            "gallons to ensure we're in the clear.")
    methods = ("estimate_drive_feasibility_by_mileage", "fillFuelTank")
    cut = condition_cut(text, methods, 0, 2)
    assert text[slice(*cut.clause)].strip() == "Should the range fall short," and cut.first == 1 and cut.leading
    assert text[slice(*cut.head)] == "Check the stats for me, would you?"  # the words asking for the first call
    assert text[slice(*cut.request)].startswith("go ahead and top off") and cut.tail == (len(text), len(text))
    assert cut.joined(text, "Add 30 gallons of fuel.") == "Should the range fall short, add 30 gallons of fuel."
    assert cut.joined(text, "I'd like 30 gallons.") == "Should the range fall short, I'd like 30 gallons."
    # politeness is no condition, and a sentence only asking whether something holds has no clause to keep
    assert leading_condition("If you need, my user_id is 'USR002'. Send it.") is None
    assert leading_condition("Please verify if my car can make it, then fill the tank.") is None
    # the words before the condition ask for the conditioned call too: new words after it would ask twice
    assert condition_cut("Fill up the fuel tank. If it is low, fill the fuel tank with 30 gallons.",
                         ("fillFuelTank",), 0, 1) is None


def test_a_condition_closing_its_sentence_stays_after_the_new_words():
    text = ("Moreover, could you set up the GPS to guide me directly to the nearest shop if my tires aren't up to the "
            "mark, so I'm not wandering off course?")
    cut = condition_cut(text, ("set_navigation",), 0, 1)
    assert not cut.leading and text[slice(*cut.clause)].startswith("if my tires aren't up to the mark")
    assert cut.joined(text, "Please navigate to the shop.") == "Please navigate to the shop if my tires aren't up to the mark."
    assert cut.joined(text, "Take me to the shop, please.").startswith("Take me to the shop if my tires")
    assert cut.joined(text, "Could you route me to the shop?").endswith("up to the mark?")
    assert cut.tail == (len(text), len(text))  # the purpose after the condition is the seed's story and goes
    assert trailing_condition("Let me know if you need anything.") is None  # politeness again


def test_a_condition_handed_over_mid_sentence_opens_a_sentence_of_its_own():
    text = ("Once the cost is known, please convert the estimate from USD to EUR for budgeting purposes, and if the cost "
            "is under 2000, proceed to book the flight using card 1234 and access token abc.")
    cut = condition_cut(text, ("compute_exchange_rate", "book_flight"), 0, 2)
    assert cut.first == 1 and text[slice(*cut.head)].endswith("for budgeting purposes")
    assert cut.joined(text, "Book it on card 1234 with token abc.") == ("If the cost is under 2000, book it on card 1234 "
                                                                         "with token abc.")


def test_a_conditioned_request_gets_new_words_and_the_condition_still_governs_it():
    seed, variant, _, _ = _variant("multi_turn_base_94")
    seed_text, text = seed.turns[0][0].content, variant.turns[0][0].content
    assert "go ahead and top off the fuel tank" in seed_text and "go ahead and top off" not in text
    # the fill is asked for in the conditioned sentence itself, after its condition (in words of its own since
    # rods_agents.variation.clause_words)
    sentence = next(s for s in text.split(". ") if "gallons" in s)
    assert reads_as_condition(sentence.split(",")[0]), sentence
    mine, theirs = information_structure(variant), information_structure(bfcl_task(seed.id))
    assert [len(t.conditions) for t in mine.turns] == [len(t.conditions) for t in theirs.turns]


def _first_turn_units(seed_id: str):
    """(the seed's first user text, its information structure, the units ``mixed_turn`` cuts that turn into)."""
    from rods_agents.analysis.tracing import trace_task
    from rods_agents.variation.assembly import _units
    from rods_agents.variation.transplant import _measure
    from rods_agents.variation.turn_bank import explicit_calls, turn_slots

    seed = bfcl_task(seed_id)
    trace = trace_task(seed)
    _, info, sources = _measure(seed, trace)
    methods, target = explicit_calls(info, 0, *turn_slots(trace, sources, 0))
    text = seed.turns[0][0].content
    return text, info, _units(text, info, 0, methods, target)


def test_a_condition_holding_a_quoted_value_is_found_in_its_turn():
    """base_152's condition ('If everything is good, then please proceed to book it using ... access token
    'secureAccessToken12345'.') is read with its quoted value blanked; looked up in the turn as written it was not
    found, and the whole turn kept the seed's words."""
    from rods_agents.variation.assembly import _locked

    text, info, units = _first_turn_units("multi_turn_base_152")
    assert "'secureAccessToken12345'" in text and info.turns[0].conditions
    assert _locked(text, info, 0, units) is not None


def test_a_turn_of_paragraphs_is_cut_into_one_unit_per_errand():
    """base_198's first turn is three paragraphs (price and book a flight; cancel it; tweet about it) whose words ask
    for their calls out of order inside a paragraph ('share a tweet ... authenticate using ...'), so no unit was cut
    and the whole turn kept the seed's words."""
    text, _, units = _first_turn_units("multi_turn_base_198")
    assert [(a, b) for a, b, _, _ in units] == [(0, 2), (2, 3), (3, 5)]
    assert all("\n\n" not in text[lo:hi] for _, _, lo, hi in units)
    assert "cancel" in text[units[1][2]:units[1][3]] and "tweet" in text[units[2][2]:units[2][3]]


def test_a_sentence_naming_its_second_call_first_is_one_unit_and_its_rounding_sentence_stays():
    """long_context_69 turn 0: 'Afterwards, fill the tank with 40 additional liters of gasoline ... Round the fill
    amount to two decimal places.' The fill is asked for before the liters are named, so it was placed at the next
    'fill' (the rounding sentence) and the fill's request was cut from the conversion's; now both calls are one unit,
    the rounding sentence keeps the seed's words and the request before it gets new ones."""
    from rods_agents.analysis.information_structure import structure_mismatches
    from rods_agents.analysis.novelty import containment

    text, info, units = _first_turn_units("multi_turn_long_context_69")
    assert [(a, b) for a, b, _, _ in units] == [(0, 1), (1, 3)]
    seed, variant, _, _ = _variant("multi_turn_long_context_69")
    after = variant.turns[0][0].content
    last = after.split(". ")[-1]  # the rounding sentence stays last, in words of its own
    liters = re.search(r"\b(\d+) liters", after)
    assert re.search(r"two decimal|hundredth", last) and "Round the fill amount" not in last and liters
    fill = next(c for c in variant.ground_truth[0] if c.startswith("fillFuelTank"))
    assert fill == f"fillFuelTank(fuelAmount={round(int(liters.group(1)) * 0.264172, 2)})"  # the liters may change
    assert containment(after, text, mask=True) < 0.5, after
    mine, theirs = information_structure(variant), information_structure(bfcl_task(seed.id))
    assert not [m for m in structure_mismatches(theirs, mine) if m.turn == 0]


def test_a_clause_holding_the_turns_specifics_follows_the_new_words():
    """base_75's 'top it up with an additional 30 gallons before I turn on the ignition using the 'START' mode.' asks
    for the fill and names a mode no call takes, so it could not follow new words whole and the turn kept the seed's
    sentences in all eight samples. The time clause is carried after the new request, a leading place before it; a
    clause naming a value neither the task nor the catalog knows is not (fails without saying._with_clauses)."""
    from rods_agents.variation.saying import with_specifics

    span = ("I'm planning ahead for our big trip and realized our car's fuel tank is running low. It would be great if "
            "you could top it up with an additional 30 gallons before I turn on the ignition using the 'START' mode.")
    out = with_specifics("Add 30 gallons of fuel to the tank.", span, ("fillFuelTank",), "fillFuelTank(fuelAmount=30.0)")
    assert out == "Add 30 gallons of fuel to the tank before I turn on the ignition using the 'START' mode."
    place = "In my existing folder called 'Lectures', I'd like to set up a new file called 'Notes2023.txt'."
    out = with_specifics("Create a file named 'Notes2023.txt'.", place, ("touch",), "touch(file_name='Notes2023.txt')",
                         {"lectures"})
    assert out == "In my existing folder called 'Lectures', create a file named 'Notes2023.txt'."
    assert with_specifics("Create a file named 'Notes2023.txt'.", place, ("touch",),
                          "touch(file_name='Notes2023.txt')", set()) is None  # 'Lectures': a folder of no state
    stale = span.replace("'START'", "'Turbo'")
    assert with_specifics("Add 30 gallons of fuel to the tank.", stale, ("fillFuelTank",),
                          "fillFuelTank(fuelAmount=30.0)") is None


def test_siblings_words_are_passed_over_where_another_wording_fits():
    """The eight samples of a scenario drew the same sentence where few fit, and the verdict refused the later ones
    as near-copies after the whole plan had run. Inside avoiding_siblings, find_wording takes a fitting wording no
    accepted sibling says, and a sibling's only where nothing else fits (fails without donor_search.said_by_sibling)."""
    from rods_agents.variation.donor_search import avoiding_siblings, find_wording, said_by_sibling
    from rods_agents.variation.phrasebook import phrase_donors as donors_of

    target = (Slot(0, "fuelAmount", json.dumps(30.0), "user", False),)
    span = "Please add 30 gallons of fuel."
    phrases = donors_of("fillFuelTank", target, segment_signature())
    found = find_wording([], target, set(), {30.0}, "fillFuelTank(fuelAmount=30.0)", span, 0, phrases, True)
    assert found is not None
    with avoiding_siblings([f"Hello. {found[0]} Thanks."]):
        assert said_by_sibling(found[0])
        other = find_wording([], target, set(), {30.0}, "fillFuelTank(fuelAmount=30.0)", span, 0, phrases, True)
        assert other is not None and other[0] != found[0] and not said_by_sibling(other[0])
        only = find_wording([], target, set(), {30.0}, "fillFuelTank(fuelAmount=30.0)", span, 0,
                            [d for d in phrases if d.text == found[1].text], True)
        assert only is not None and only[0] == found[0]
    assert not said_by_sibling(found[0])
