"""An id or a login the ground truth uses that no text, hint or result gives is said (rods_agents.variation.unsaid_ids).

Read 50: miss_func_173's variant closed ticket 'ticket_001' after 'Can you close out my support ticket?' (no call
lists that ticket), and long_context_188's logged in to Twitter with credentials no turn states; both pairs were
borderline for the seed's own gap carried over. The verdict takes the stated value as a stated fallback."""

from __future__ import annotations

from envs.task import bfcl_task
from rods_agents.analysis.information_structure import information_structure
from rods_agents.analysis.profile import profile_task
from rods_agents.analysis.tracing import trace_task
from rods_agents.stages.verdict import gap_fallbacks, judge
from rods_agents.variation.unsaid_ids import say_unsaid_ids


def _user(turn):
    return " ".join(m.content for m in turn if m.role == "user")


def _said(seed_id: str, slot: int = 0):
    seed = bfcl_task(seed_id)
    trace = trace_task(seed)
    turns, said = say_unsaid_ids(seed, seed, seed.turns, trace, information_structure(seed), slot)
    return seed, trace, turns, said


def test_a_ticket_no_call_lists_is_named_in_the_turn_that_closes_it():
    seed, trace, turns, said = _said("multi_turn_base_173")
    turn = next(r.turn for r in trace.calls if r.name == "close_ticket")
    assert said == [{"turn": turn, "donors": [["phrasebook:ids", turn]], "said": "close_ticket.ticket_id"}]
    assert "ticket_001" in _user(turns[turn]) and "ticket_001" not in _user(seed.turns[turn])
    assert _user(turns[turn]).startswith(_user(seed.turns[turn]).rstrip())
    assert [_user(t) for i, t in enumerate(turns) if i != turn] == [_user(t) for i, t in enumerate(seed.turns) if i != turn]
    # the verdict reads the stated id as filling the seed's gap, not as a state value made easier
    variant = seed.model_copy(update={"turns": turns})
    profile = profile_task(variant, trace)
    assert gap_fallbacks(seed, profile)
    reasons, _ = judge(variant, seed, profile_task(seed, trace), trace)
    assert not [r for r in reasons if "state_value_stated" in r or "unobtainable" in r], reasons


def test_a_twitter_login_no_turn_states_is_stated_with_its_password():
    seed, trace, turns, said = _said("multi_turn_base_188")
    rec = next(r for r in trace.calls if r.name == "authenticate_twitter")
    assert [s["said"] for s in said] == ["authenticate_twitter.username+authenticate_twitter.password"]
    text = _user(turns[said[0]["turn"]])
    assert rec.args["username"] in text and rec.args["password"] in text
    variant = seed.model_copy(update={"turns": turns})
    reasons, _ = judge(variant, seed, profile_task(seed, trace), trace)
    assert not [r for r in reasons if "information_structure" in r or "unobtainable" in r], reasons


def test_an_id_a_call_finds_or_the_text_names_is_left_alone():
    for seed_id in ("multi_turn_base_106", "multi_turn_base_125", "multi_turn_base_181"):
        seed, _, turns, said = _said(seed_id)  # a ticket get_user_tickets lists; a ticket created, then read back
        assert said == [] and turns == [list(t) for t in seed.turns], seed_id


def test_a_value_a_lookup_finds_is_no_gap_to_state():
    """base_5's folder 'project' has no hint in the text, but ls() shows it (the lookup a careful person makes): a
    variant stating it hands the assistant that lookup, so the verdict does not take it as filling a gap."""
    from envs.task import Message

    seed = bfcl_task("multi_turn_base_5")
    turns = [list(t) for t in seed.turns]
    turns[0] = [Message(role=m.role, content=m.content + " It's in the 'project' folder.") for m in turns[0]]
    variant = seed.model_copy(update={"turns": turns})
    profile = profile_task(variant, trace_task(variant))
    assert any(a.source == "user" and a.param == "folder" for a in profile.arg_sources)
    assert gap_fallbacks(seed, profile) == []
