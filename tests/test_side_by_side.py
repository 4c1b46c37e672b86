"""scripts/side_by_side.py: the pairs the independent reads judge show the state each variant starts in."""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path

from envs.task import bfcl_task

_SPEC = importlib.util.spec_from_file_location("side_by_side", Path(__file__).resolve().parent.parent / "scripts" / "side_by_side.py")
side_by_side = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(side_by_side)


def test_a_pair_shows_the_balance_the_order_runs_against_after_the_patch():
    """Readers of 2026-12-05 judged two orders unaffordable from the plan's resampled balance, which the patch agent
    had since raised: the pair now prints the accepted task's own starting state where it differs from the seed's."""
    seed = bfcl_task("multi_turn_base_124")
    config = copy.deepcopy(seed.initial_config)
    old = config["TradingBot"]["account_info"]["balance"]
    config["TradingBot"]["account_info"]["balance"] = 43500.0
    variant = seed.model_copy(update={"id": seed.id + "__rods_test", "initial_config": config})
    text = side_by_side.example(variant, seed, 1)
    assert f"TradingBot.account_info.balance: {old} -> 43500.0" in text
    assert "State the variant starts in" not in side_by_side.example(seed, seed, 1)  # nothing changed, nothing shown


def test_a_pair_shows_what_the_environment_answers_each_ground_truth_call():
    """A reader judges whether a careful person could solve the variant from its text *and environment*: 'the folder
    that file lives in' is clear when the find returned one match, vague when it returned several. The variant's
    column shows each call's result; a turn BFCL does not score says so."""
    seed = bfcl_task("multi_turn_base_28")
    text = side_by_side.example(seed, seed, 1)
    assert '-> `{"matches": ["' in text
    assert "does not score" in side_by_side.example(bfcl_task("multi_turn_miss_param_28"),
                                                    bfcl_task("multi_turn_miss_param_28"), 1)


def test_a_pair_says_which_stated_values_fill_a_gap_of_the_seed():
    """miss_func_173 closes 'ticket_001', which no text, state hint or call gives: the variant states it (unsaid_ids),
    and read 56's reader counted that as a give-away. The pair now names such values as the seed's gap."""
    seed = bfcl_task("multi_turn_base_173")
    variant = seed.model_copy(update={"id": seed.id + "__rods_test",
                                      "provenance": {"stated_fallbacks": ["turn 3 close_ticket.ticket_id='ticket_001'"]}})
    assert "the seed's gap" in side_by_side.example(variant, seed, 1)
    assert "the seed's gap" not in side_by_side.example(seed, seed, 1)
