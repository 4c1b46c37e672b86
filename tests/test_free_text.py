"""Free texts a turn describes (rods_agents.variation.free_text) and the words other calls and turns depend on.

What a user of the synthesized data relies on: a turn that describes a message for the assistant to compose
('incorporate the concerns I have regarding my luggage restrictions') still gets new words, and the message in
the ground truth is the one those words describe; a turn whose words a later call writes down, or that says
who the user is, keeps those words.
"""

from __future__ import annotations

import json
import re

from envs.dataset import load_split, load_tasks
from envs.executor import parse_call
from graphs.synthesis import synthesize
from rods_agents.analysis.novelty import containment
from rods_agents.run.context import SynthesisContext
from rods_agents.variation.free_text import adopted_slots, quoted_later, tied_elsewhere, with_text
from rods_agents.variation.transplant import with_identity
from rods_agents.variation.turn_bank import Donor, Slot

METHODS = ("contact_customer_support",)
BOOKING = Slot(0, "booking_id", '"3426812"', "call", False, "retrieve_invoice")


def _message(value: str) -> Slot:
    return Slot(0, "message", json.dumps(value), "user", False)


def _donor(text: str, message: str) -> Donor:
    return Donor("multi_turn_base_179", 179, 3, text, METHODS, (BOOKING, _message(message)), "{}", frozenset())


SPAN = ("Would you be able to send an inquiry to customer support on my behalf? Please use my latest booking details "
        "and incorporate the concerns I have regarding my luggage restrictions.")
FAMILY = _donor("Given sudden itinerary conflicts, there's a pivot. Inform customer support of my potential adjustments "
                "or explore full refund possibilities because of a family emergency.",
                "Request for itinerary adjustments or refund due to family emergency.")


def test_a_described_message_takes_the_donors_own_message_with_its_words():
    target = (BOOKING, _message("Inquiry regarding luggage restrictions for my flight"))
    after = adopted_slots(METHODS, target, SPAN, FAMILY)
    assert after is not None
    assert json.loads(after[1].value) == "Request for itinerary adjustments or refund due to family emergency."
    assert after[0] == BOOKING  # only the free text moves


def test_a_dictated_message_is_never_replaced_by_another():
    """A quoted message is the user's own: the ordinary donors carry it, and adopting another would change it."""
    target = (BOOKING, _message("Inquiry regarding luggage restrictions"))
    quoted = "Please tell customer support: 'Inquiry regarding luggage restrictions'."
    assert adopted_slots(METHODS, target, quoted, FAMILY) is None
    dictating = _donor("Tell support 'My bag was lost on arrival.'", "My bag was lost on arrival.")
    assert adopted_slots(METHODS, (BOOKING, _message("Inquiry regarding luggage restrictions for my flight")),
                         SPAN, dictating) is None


def test_a_message_written_out_is_replaced_only_by_one_written_out():
    """'There were hiccups during the booking process' written out leaves less to compose than a concern described:
    one never stands in for the other."""
    written = "There were hiccups during the booking process. Reach out to customer support about them."
    target = (BOOKING, _message("There were hiccups during the booking process."))
    assert adopted_slots(METHODS, target, written, FAMILY) is None


def test_a_concern_a_later_turn_names_is_kept():
    assert tied_elsewhere("Inquiry regarding luggage restrictions for my flight",
                          "Open a ticket about the luggage problem too.")
    assert not tied_elsewhere("Inquiry regarding luggage restrictions for my flight",
                              "Please file a ticket about my flight booking.")


def test_the_adopted_message_is_written_into_its_call():
    gt = [["book_flight(access_token='a', card_id='c')"],
          ["contact_customer_support(booking_id='3426812', message='Inquiry regarding luggage')"]]
    out = with_text(gt, 1, "contact_customer_support", "message", "Inquiry regarding luggage", "Refund please now")
    assert out is not None and out[0] == gt[0]
    assert parse_call(out[1][0]).kwargs == {"booking_id": "3426812", "message": "Refund please now"}
    assert with_text(gt, 1, "contact_customer_support", "message", "not there", "x") is None


def test_a_support_turn_no_donor_describes_alike_gets_new_words_and_the_donors_message():
    """base_169's 'incorporate the concerns I have regarding my luggage restrictions': no other human turn describes
    that concern, so all eight samples of scenario 169 kept the sentence and were refused as copies (issue 13)."""
    seed = load_tasks(ids=["multi_turn_base_169"])[0]
    out = synthesize([seed], SynthesisContext(seed=3, variants_per_seed=1, concurrency=1))
    assert out.accepted, out.rejected
    variant = out.accepted[0]
    turn = next(t for t, calls in enumerate(variant.ground_truth) if any("contact_customer_support" in c for c in calls))
    words = " ".join(m.content for m in variant.turns[turn] if m.role == "user")
    seed_words = " ".join(m.content for m in seed.turns[turn] if m.role == "user")
    assert containment(words, seed_words) < 0.5 and "luggage" not in words.lower(), words
    message = next(parse_call(c).kwargs["message"] for c in variant.ground_truth[turn] if "contact_customer" in c)
    donors = {}  # message -> the train turn whose ground truth composed it
    for task in load_split("train"):
        for t, calls in enumerate(task.ground_truth):
            for c in calls:
                if c.startswith("contact_customer_support") and task.scenario != seed.scenario:
                    donors[parse_call(c).kwargs["message"]] = " ".join(m.content for m in task.turns[t] if m.role == "user")
    assert message in donors, message  # a message some human turn describes, never the seed's with another turn's words
    assert containment(words, donors[message]) > 0.5


def test_words_a_later_call_writes_down_are_kept():
    """miss_param_29: 'Create a file.' then 'Write my last question in it', whose echo writes 'Create a file name
    based on ...': re-wording the first turn ('Can you start an empty document?', read 15) left the echo
    writing words no turn said."""
    seed = load_tasks(ids=["multi_turn_miss_param_29"])[0]
    assert quoted_later("Create a file.", seed, 1)
    assert not quoted_later("Create a file.", seed, 3)  # only later calls count
    assert not quoted_later("Can you start an empty document?", seed, 1)
    assert not quoted_later("Write my last question.", seed, 1)
    out = synthesize([seed], SynthesisContext(seed=3, variants_per_seed=1, concurrency=1))
    for variant in out.accepted:
        assert [m.content for m in variant.turns[1]] == [m.content for m in seed.turns[1]]


def test_a_user_saying_who_they_are_still_says_it_in_new_words():
    """miss_func_137: 'I am Alice.' where the messaging state's current user is Jane; a phrasebook sentence for the
    send_message dropped it (read 15: the assistant no longer has to notice who is logged in)."""
    span = "I am Alice. Could you kindly help write a message 'Proceed.' to John? I always love insightful analysis."
    assert with_identity("Message John saying 'Proceed.'", span, {"alice", "john"}) == \
        "I am Alice. Message John saying 'Proceed.'"
    assert with_identity("Message John saying 'Proceed.'", span, {"john"}) == "Message John saying 'Proceed.'"
    long = "Hello, I'm Josephine, an academic specializing in cognitive science and finance. Buy it."
    assert with_identity("Buy it.", long, {"josephine"}) is None
    seed = load_tasks(ids=["multi_turn_miss_func_137"])[0]
    out = synthesize([seed], SynthesisContext(seed=3, variants_per_seed=1, concurrency=1))
    assert out.accepted
    for variant in out.accepted:
        said = " ".join(m.content for m in variant.turns[4] if m.role == "user")
        me = re.search(r"I am ([A-Z][a-z]+)", said)  # Alice, or the name the plan gave her in the user map too
        assert me and me.group(1) in variant.initial_config["MessageAPI"]["user_map"]


def test_phrasebook_sentences_describing_their_own_message_word_only_adoptions():
    """A phrasebook sentence describing a concern of its own ('I need a vegetarian meal on board') carries the message
    composed from it; offered for any call, its words would describe some other message than the call's."""
    from rods_agents.variation.phrasebook import parse_phrasing, phrase_donors

    target = (BOOKING, _message("Inquiry regarding luggage restrictions for my flight"))
    plain = phrase_donors("contact_customer_support", target, "{}")
    describing = phrase_donors("contact_customer_support", target, "{}", describing=True)
    assert plain and describing
    assert all(d.slots == target for d in plain)
    messages = {json.loads(d.slots[1].value) for d in describing}
    assert "Inquiry regarding luggage restrictions for my flight" not in messages and len(messages) >= 4
    for d in describing:
        assert adopted_slots(METHODS, target, SPAN, d) is not None or json.loads(d.slots[1].value).lower().strip(
            " .") in d.text.lower()  # a written-out one stands in only for a message written out
    try:
        parse_phrasing("TravelAPI", "contact_customer_support", 0,
                       {"text": "Tell support {message}.", "describes": {"message": "Lost bag."}})
    except ValueError as exc:
        assert "describes" in str(exc)
    else:
        raise AssertionError("a phrasing writing the value it claims to describe was accepted")
