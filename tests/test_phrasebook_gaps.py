"""scripts/phrasebook_gaps.py: the empty phrasebook searches of a re-planned seed, grouped by calls and value sources."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from envs.dataset import load_tasks
from rods_agents.variation import donor_search

_SPEC = importlib.util.spec_from_file_location(
    "phrasebook_gaps", Path(__file__).resolve().parent.parent / "scripts" / "phrasebook_gaps.py")
phrasebook_gaps = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(phrasebook_gaps)


def test_the_searches_that_found_no_sentence_are_listed_by_calls_and_value_sources():
    """base_84 turn 0 asks for the fill, the parking brake, the locks and the start in one sentence; no phrasebook
    sentence asks for the brake and the locks together, which is the kind of gap the script exists to show. The
    observer is gone afterwards, so ordinary synthesis pays nothing for it."""
    found = phrasebook_gaps.gaps(load_tasks(ids=["multi_turn_base_84"]), seed=3, variants_per_seed=1)
    key = 'activateParkingBrake+lockDoors {"0.mode": "flag", "1.door": "flag", "1.unlock": "flag"}'
    assert key in found, sorted(found)
    assert {(sid, turn) for sid, turn, _ in found[key]} == {("multi_turn_base_84", 0)}
    assert donor_search.EMPTY_SEARCHES == []
