"""A text the user dictates as a template keeps its words; the request around it gets new ones.

What a user of the synthesized data relies on: 'forward this info to my cousin Bob via text, in the format 'The
distance from A to B is xxx km.'' is re-worded without losing the template, how to fill it, who gets it, or that
the assistant must build the text (rods_agents.variation.templates). Before, the whole sentence kept the seed's
words, and no variant of scenarios 62 and 75 was new enough to keep.
"""

from __future__ import annotations

import json

from envs.task import bfcl_task
from rods_agents.analysis.information_structure import information_structure
from rods_agents.analysis.tracing import trace_task
from rods_agents.analysis.value_sources import classify_arguments
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
    cut = detached_template(span, (message,), 0, 2)
    assert cut == (span.index(", in the format"), (1, "message"))
    assert detached_template(span, (message,), 0, 1) is None  # not a value of the calls these words ask for
    sentence = template_sentence(span[cut[0]:] + ")?", "62|0|0")
    assert sentence.endswith("distance value.") and "format 'The distance from Rivermist" in sentence


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
    assert "Bob" in text  # the default user map names the receiver, so the id stays the assistant's to find
    template = next(q for q in text.split("'") if "xxx km." in q)
    assert template.replace(" to ", "|").count("|") == 1 and "where xxx is replaced by the distance value" in text
    mine, theirs = information_structure(variant), information_structure(bfcl_task(seed.id))
    assert [len(t.transformations) for t in mine.turns] == [len(t.transformations) for t in theirs.turns]

    def sources(task):
        return sorted((a.turn, a.method, a.param, a.source) for a in classify_arguments(task, trace_task(task)))

    assert sources(variant) == sources(seed)
