"""A variant's conditions, limits and rounding instructions are its own words (rods_agents.variation.clause_words).

What a user of the synthesized data relies on: a clause that decides the ground truth ('Should the range fall
short,', 'round it to nearest hundredth') says the same thing in the variant, with the same number, but not in the
seed's words; siblings of one scenario say it differently; a rewording that would read as another structure is
never kept.
"""

from __future__ import annotations

import re

import pytest

from envs.task import bfcl_task
from rods_agents.analysis.information_structure import _ROUND_CUE, information_structure, reads_as_condition
from rods_agents.analysis.novelty import user_text
from rods_agents.analysis.profile import profile_task
from rods_agents.analysis.tracing import stated_limits, trace_task
from rods_agents.run.runtime import rng_for
from rods_agents.stages.coherence_rewrite import build_variant, rewrite_plan
from rods_agents.stages.plan_sampling import sample_variant_plan
from rods_agents.variation.clause_words import SLOT, clause_forms, clauses_in, reworded
from rods_agents.variation.free_text import apply_adoptions
from rods_agents.variation.phrasebook import clause_rewordings

_FILL = {"n": "40", "q": "'AMZN'", "w": "Jerry", "c": "Crescent Hollow", "x": "card_1234"}


def _filled(words: str) -> str:
    return SLOT.sub(lambda m: _FILL[m.group(1)], words)


def _cues(words: str) -> tuple[bool, list[float], bool]:
    """What a clause's words decide: whether they read as a condition, the limits they state, a rounding cue."""
    return reads_as_condition(words), [n for _t, n in stated_limits([words])], bool(_ROUND_CUE.search(words))


@pytest.mark.parametrize("form", sorted(clause_rewordings()))
def test_every_rewording_keeps_its_clauses_kind_of_cue_and_number(form):
    """A rewording that lost the condition cue, stated another limit or dropped the rounding would change what the
    task asks: the file is checked clause by clause, so a careless addition fails here and not in a read."""
    says = clause_rewordings()[form]
    assert len(says) >= 2, "siblings need more than one rewording"
    for say in says:
        assert _cues(_filled(say)) == _cues(_filled(form)), (form, say)
        assert sorted(SLOT.findall(say)) == sorted(SLOT.findall(form)), (form, say)  # every value written back once
        assert say.lower() != form.lower()


def test_every_form_is_found_in_the_seed_words_it_was_written_for():
    """The forms are written from the train seeds' turns: each must match at least one (a typo would leave it
    matching nothing, and the clause would silently stay the seed's)."""
    from envs.dataset import load_split

    texts = [m.content for s in load_split("train") for turn in s.turns for m in turn if m.role == "user"]
    for form in clause_forms():
        assert any(form.pattern.search(t) for t in texts), form.form


def test_a_reworded_clause_writes_back_its_number_and_takes_the_case_of_its_place():
    text = ("Check the stats for me, would you? Should the range fall short, add 35 gallons. "
            "Before booking, I really can't afford a ticket that is over $4200.")
    said = next(reworded(text, "94|0", 0))
    assert "Should the range fall short" not in said and "can't afford a ticket that is over" not in said
    assert "$4200" in said and "add 35 gallons." in said
    assert re.search(r"\? [A-Z]", said), said  # a sentence's opening clause opens it again
    assert re.search(r"Before booking, (?:[a-z]|I\b)", said), said  # one inside a sentence goes on in small letters


def test_siblings_say_a_clause_in_different_words():
    text = "If any tire pressure is under 35 PSI, could you direct me to the closest tire shop?"
    firsts = {next(reworded(text, "92|4", slot)) for slot in range(3)}
    assert len(firsts) == 3 and all("35 PSI" in t for t in firsts)


def test_a_sentence_form_writes_back_each_of_its_numbered_slots():
    """A kept sentence holds several values ('Please cd into {x} folder and find {w}'s {x2} report ...'): each slot
    is its own group, so the rewording writes each value back where it belongs."""
    from rods_agents.variation.clause_words import ClauseForm, _compiled, _written

    form = "Please cd into {x} folder and find {w}'s {x2} report somewhere in the directory and read the content to me."
    text = "Please cd into photos folder and find Kelly's lab report somewhere in the directory and read the content to me."
    m = _compiled(form).search(text)
    assert m is not None and ClauseForm(form, _compiled(form), ()).pattern.pattern
    said = _written("Head into {x}, look for {w}'s {x2} report somewhere inside, and tell me what it says.", m, text)
    assert said == "Head into photos, look for Kelly's lab report somewhere inside, and tell me what it says."
    assert _compiled("a flight from {c} to {c2}").search("a flight from Crescent Hollow to New York").group("c2") == "New York"


def test_clauses_do_not_overlap_and_unknown_words_are_left_alone():
    assert clauses_in("Please book the flight to Boston.") == []
    assert list(reworded("Please book the flight to Boston.", "1|0", 0)) == []
    found = clauses_in("Round it to the nearest integer and fill that amount.")
    assert len(found) == 1


def _variant_text(seed_id: str, slot: int) -> tuple[str, object, object]:
    seed = bfcl_task(seed_id)
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    plan = sample_variant_plan(seed, profile, trace, rng_for(3, seed.id, slot, 0))
    turns, donors = rewrite_plan(seed, profile, plan, rng_for(3, seed.id, slot, "rewrite"), slot)
    plan = plan.model_copy(update={"ground_truth": apply_adoptions(plan.ground_truth, donors)})  # as the graph does
    variant = build_variant(seed, turns, plan, slot, 3)
    return user_text(variant), variant, seed


@pytest.mark.parametrize("seed_id, seed_words", [
    ("multi_turn_base_94", "Should the range fall short"),
    ("multi_turn_base_90", "Round it to the nearest integer"),
    ("multi_turn_base_152", "I really can't afford a ticket that is over"),
])
def test_a_variant_says_its_seeds_deciding_clause_in_other_words_with_the_same_structure(seed_id, seed_words):
    """Reads 29/30 marked pairs 'partly new' for the seed's condition or rounding clause kept inside new words
    (base_94's 'Should the range fall short,', base_90's 'Round it to the nearest integer'). The variant now says
    it another way, and its conditions, transformations and limits measure as the seed's."""
    text, variant, seed = _variant_text(seed_id, 0)
    assert seed_words.lower() not in text.lower(), text
    mine, theirs = information_structure(variant), information_structure(seed)
    assert [len(t.conditions) for t in mine.turns] == [len(t.conditions) for t in theirs.turns]
    assert [[x.kind for x in t.transformations] for t in mine.turns] == \
        [[x.kind for x in t.transformations] for t in theirs.turns]
    assert [len(t.limits) for t in mine.turns] == [len(t.limits) for t in theirs.turns]


def test_a_turn_a_later_call_writes_down_takes_new_words_and_the_call_writes_them():
    """base_29 asks 'Create a file name based on the number of byte used. It should be in 'number.pdf' format.' and
    later 'Write my last question in it': the echo writes that turn down. The turn kept the seed's sentence in 7 of
    8 samples (read 40: 'keeps the seed's sentence word for word'); it now takes new words, with its transformation
    cue, and the echo writes exactly the new words."""
    from envs.executor import parse_call

    seed_words = " ".join(m.content for m in bfcl_task("multi_turn_base_29").turns[1] if m.role == "user")
    for slot in (0, 1):
        _text, variant, seed = _variant_text("multi_turn_base_29", slot)
        said = " ".join(m.content for m in variant.turns[1] if m.role == "user")
        echo = next(parse_call(c) for c in variant.ground_truth[2] if c.startswith("echo"))
        assert echo.kwargs["content"] == said, (said, echo.kwargs["content"])
        assert said != seed_words and "number.pdf" in said
        assert [[x.kind for x in t.transformations] for t in information_structure(variant).turns] == \
            [[x.kind for x in t.transformations] for t in information_structure(seed).turns]


def test_words_inside_a_dictated_quote_are_never_reworded():
    """base_109 dictates a tweet ('Just made a move ... I initiated and then canceled a 100-share buy order for
    $MSFT. ...'); a sentence form matching inside it reworded the tweet the ground truth posts, and the verdict
    refused all eight samples of the scenario (unfaithful:dictated_cut). Words inside quotes stay as they are."""
    text = ("Could you also compose and send out a tweet 'Just made a move in the tech sector! I initiated and then "
            "canceled a 100-share buy order for $MSFT. Always staying sharp with my investment decisions!' to my followers?")
    assert not any("I initiated" in m.group(0) for m, _ in clauses_in(text))
    quoted = "Before setting off, I want to make sure all the car doors are locked tight."
    assert clauses_in(quoted) and not clauses_in(f"Post 'Note to self: {quoted}' for me.")


@pytest.mark.parametrize("form", sorted(f for f in clause_rewordings() if re.search(r"\b(?:before|after) I\b", f)))
def test_what_the_user_does_stays_the_users_in_every_rewording(form):
    """Read 40, miss_param_75: 'before I turn on the ignition using the 'START' mode' was re-worded 'before starting the
    engine up in 'START' mode', which asks the assistant to start it (the ground truth only fills the tank; a reader
    marked it unfaithful). A step the user says they take keeps the user as the one who takes it."""
    for say in clause_rewordings()[form]:
        assert re.search(r"\b(?:before|after) I\b", say), (form, say)


def test_no_rewording_of_a_request_to_check_before_booking_tells_the_assistant_not_to_book():
    """'Before booking, just check the flight cost to be safe.' was reworded 'Don't book yet; look at the flight cost
    first' (read 44 #5): the turn's ground truth checks the cost and books, so the new words contradicted it. A
    sentence that orders two steps keeps both asked for in its rewordings."""
    import json

    from prompts import PROMPTS_DIR

    table = json.loads((PROMPTS_DIR / "phrasebook" / "sentences.json").read_text())["sentences"]
    keys = [key for key in table if re.search(r"\bbefore booking\b", key, re.I)]
    assert keys  # the sentence is in the table: the test reads it
    for key in keys:
        for form in table[key]:
            assert re.search(r"\bbook", form, re.I) and not re.search(r"\b(don't|do not) book|\bnot book", form, re.I), form


def test_a_cost_the_user_already_has_is_never_asked_for_again():
    """'After ascertaining the flight costs, secure a booking ...' (long_context_186) and 'After figuring out the flight
    expenses, could you tweak my budget?' (167) look back at a fare an earlier turn found: their turns' ground truths
    book or budget without a cost call. They were reworded 'Work out the flight costs first. Then book it' and 'First
    the flight costs, then a small change to my budget' (read 48 #5, #13), which ask for a cost call the ground truth
    does not make. A step the seed says is done stays done in its rewordings."""
    import json

    from prompts import PROMPTS_DIR

    table = json.loads((PROMPTS_DIR / "phrasebook" / "sentences.json").read_text())["sentences"]
    keys = [key for key in table if re.match(r"After (ascertaining|figuring out) the flight (costs|expenses)", key)]
    assert len(keys) == 2
    asks = re.compile(r"\b(work out|find out|get|check|first)\b[^.;?]*\b(costs?|expenses|fare|price)\b", re.I)
    for key in keys:
        for form in table[key]:
            assert not asks.search(form), form


def test_a_clause_inside_an_overlapping_one_is_reworded_too():
    """base_78: 'If it falls under 37.5 PSI, perhaps we could swing by the nearest tire shop?' holds two known clauses
    that share the number; the longer one was reworded and the condition 'If it falls under 37.5 PSI,' stayed the
    seed's words in every variant (read 51 #29). A second pass rewords it too."""
    from graphs.synthesis import synthesize
    from rods_agents.stages.state import SynthesisContext

    result = synthesize([bfcl_task("multi_turn_base_78")], SynthesisContext(seed=3, variants_per_seed=2))
    assert result.accepted
    for task in result.accepted:
        text = " ".join(m.content for m in task.turns[0] if m.role == "user")
        assert "PSI" in text and not re.search(r"\bfalls under\b", text, re.I), text


def test_a_clause_opening_with_a_participle_never_follows_a_verb_of_going():
    # read 66, miss_param_193: 'from ORD to PHV on December 11th' reworded 'flying ORD to PHV ...' after 'I'd like to
    # fly' read "I'd like to fly flying ORD to PHV"; after a noun it may ('my journey leaving ORD for PHV')
    said = "Now that I'm authenticated, I'd like to fly from ORD to PHV on December 11th, 2026, first class."
    assert all(" fly leaving" not in t and " fly flying" not in t and " fly departing" not in t
               for t in reworded(said, "k", 0))
    assert any("leaving ORD for PHV" in t for t in reworded("Book my journey from ORD to PHV on December 11th.", "k", 0))
