"""A choice the ground truth makes and the text never says is said (rods_agents.variation.unsaid_choices).

Reads 31 and 32: 'Buy travel insurance worth $450' with insurance_type='comprehensive' in the ground truth, three
pairs marked borderline for the seed's own gap carried over."""

from __future__ import annotations

from envs.task import Message, bfcl_task
from rods_agents.analysis.information_structure import Withheld, information_structure
from rods_agents.analysis.tracing import trace_task
from rods_agents.variation.unsaid_choices import say_unsaid_choices


def _user(turn):
    return " ".join(m.content for m in turn if m.role == "user")


def test_the_insurance_type_nobody_says_is_said_in_the_turn_that_buys_it():
    seed = bfcl_task("multi_turn_base_185")
    trace = trace_task(seed)
    turn = next(r.turn for r in trace.calls if r.name == "purchase_insurance")
    assert "comprehensive" not in " ".join(_user(t) for t in seed.turns[: turn + 1]).lower()
    turns, said = say_unsaid_choices(seed, seed.turns, trace, information_structure(seed), slot=0)
    assert said == [{"turn": turn, "donors": [["phrasebook:choices", turn]], "said": "purchase_insurance.insurance_type"}]
    assert "comprehensive" in _user(turns[turn]) and _user(turns[turn]).startswith(_user(seed.turns[turn]).rstrip())
    assert [_user(t) for i, t in enumerate(turns) if i != turn] == [_user(t) for i, t in enumerate(seed.turns) if i != turn]
    other, _ = say_unsaid_choices(seed, seed.turns, trace, information_structure(seed), slot=1)
    assert _user(other[turn]) != _user(turns[turn])  # siblings say it in other words


def test_a_said_choice_and_a_withheld_one_are_left_alone():
    seed = bfcl_task("multi_turn_base_185")
    trace = trace_task(seed)
    turn = next(r.turn for r in trace.calls if r.name == "purchase_insurance")
    told = [list(t) for t in seed.turns]
    told[turn] = [Message(role=m.role, content=m.content + " Comprehensive, please.") for m in told[turn]]
    assert say_unsaid_choices(seed, told, trace, information_structure(seed), slot=0) == (told, [])
    info = information_structure(seed)
    info.turns[turn].withheld = Withheld(turn=turn, method="purchase_insurance", param="insurance_type",
                                         supplied_at=turn + 1)  # a miss_param turn that leaves the type to the next
    assert say_unsaid_choices(seed, seed.turns, trace, info, slot=0) == ([list(t) for t in seed.turns], [])
