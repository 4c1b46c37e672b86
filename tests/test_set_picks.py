"""A turn that makes one call per member of a set it names keeps the set phrase inside new words.

What a user of the synthesized data relies on: 'I need to see the details of each stock in my watchlist' (base_113) is
re-worded around 'each stock in my watchlist', so the variant still leaves the assistant to read the watchlist and
look up every stock on it, in words that are not the seed's sentence. Before, such turns counted as picks no cue
explains and kept the seed's words, and no variant of scenario 113 was new enough to keep.
"""

from __future__ import annotations

import json

from rods_agents.analysis.information_structure import information_structure
from rods_agents.variation.set_picks import set_group, set_phrase
from rods_agents.variation.turn_bank import Slot
from tests.test_transplant import _variant


def _slot(i: int, param: str, value: object, source: str = "call") -> Slot:
    return Slot(i, param, json.dumps(value), source, False)


def test_the_set_phrase_is_the_one_noun_phrase_naming_every_member():
    assert set_phrase("I need to see the details of each stock in my watchlist to feel reassured.") == \
        "each stock in my watchlist"
    assert set_phrase("Copy all the text files of the 'Quarter1_Reports' directory and place it in a new directory") == \
        "all the text files of the 'Quarter1_Reports' directory"
    assert set_phrase("Could you compile a list of stock symbols and add all of them to my watchlist?") == "all of them"
    assert set_phrase("Show me the first two stocks in my watchlist.") == "the first two stocks in my watchlist"
    assert set_phrase("Show me the first stock in my watchlist.") is None  # a position pick, no set
    assert set_phrase("Add each stock to my watchlist and delete every message.") is None  # two sets: which one?


def test_the_set_is_a_run_of_one_method_differing_only_in_a_picked_value():
    calls = ("get_watchlist", "get_stock_info", "get_stock_info")
    picked = (_slot(1, "symbol", "NVDA"), _slot(2, "symbol", "QUAS"))
    assert set_group(calls, picked) == (1, ("symbol",))
    stated = (_slot(1, "symbol", "NVDA", "user"), _slot(2, "symbol", "QUAS", "user"))
    assert set_group(calls, stated) is None  # the user names each stock: no set to keep
    two_ways = ("mkdir", "cp", "cp")
    apart = (_slot(1, "source", "a.txt"), _slot(1, "destination", "x"), _slot(2, "source", "b.txt"),
             _slot(2, "destination", "y"))
    assert set_group(two_ways, apart) is None  # each copy goes elsewhere: no one set phrase says both
    assert set_group(("get_stock_info",), picked[:1]) is None
    both = (_slot(0, "file_name1", "report.txt", "state"), _slot(0, "file_name2", "summary.txt", "state"))
    assert set_group(("diff",), both) == (0, ("file_name1", "file_name2"))  # 'review both files in this directory'
    assert set_group(("diff",), (both[0], _slot(0, "file_name2", "summary.txt", "user"))) is None  # one is named


def test_both_members_of_a_one_call_set_are_left_to_the_set_phrase():
    seed, variant, _, _ = _variant("multi_turn_base_13")
    said = " ".join(m.content for m in variant.turns[1] if m.role == "user")
    assert "both files in this directory" in said and said != " ".join(m.content for m in seed.turns[1])
    assert "diff(" in variant.ground_truth[1][0]


def test_a_set_pick_turn_gets_new_words_around_its_set_phrase():
    seed, variant, _, donors = _variant("multi_turn_base_113")
    said = " ".join(m.content for m in variant.turns[1] if m.role == "user")
    assert "each stock in my watchlist" in said
    assert said != " ".join(m.content for m in seed.turns[1] if m.role == "user")
    assert any(d["turn"] == 1 for d in donors)
    # the same picks stay the words': the structure of the new turn is the seed's
    assert information_structure(variant).turns[1].unresolved_picks == information_structure(seed).turns[1].unresolved_picks
    assert len([c for c in variant.ground_truth[1] if c.startswith("get_stock_info")]) == 2  # one lookup per stock
