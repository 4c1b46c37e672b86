"""What a seed's words leave to the assistant stays left to it, in plain words (read 42's mild 'easier' findings).

Two wordings made variants easier without changing their profile: a budget set to '20,000 RMB equivalent' (the
assistant knows a budget is kept in US dollars) became 'What is 20000 euros in US dollars?', naming the conversion's
target; and a booking that never mentions its class (miss_param_177, supplied a turn later) became a booking 'in a
certain cabin class', which tells the assistant something is missing before it has to notice."""

from __future__ import annotations

import re

from tests.test_phrasebook import _rewritten, _user

_US_DOLLARS = re.compile(r"\bUSD\b|\b(?:US|U\.S\.|American) dollars?\b|\$", re.I)


def test_a_conversion_the_seed_leaves_implicit_does_not_name_its_target_currency():
    for v in range(3):
        seed, variant = _rewritten("multi_turn_base_160", v)
        assert not _US_DOLLARS.search(_user(seed, 0))
        first = _user(variant, 0)
        assert not _US_DOLLARS.search(first), first
        assert "target_currency='USD'" in variant.ground_truth[0][0].replace(" ", "")


def test_a_conversion_the_seed_names_its_target_for_still_names_it():
    seed, variant = _rewritten("multi_turn_miss_param_167")
    turn = next(t for t, calls in enumerate(variant.ground_truth) if any("compute_exchange_rate" in c for c in calls))
    assert _US_DOLLARS.search(" ".join(_user(seed, t) for t in range(turn + 1)))
    assert _US_DOLLARS.search(" ".join(_user(variant, t) for t in range(turn + 1)))


def test_a_travel_class_the_seed_withholds_silently_is_withheld_silently():
    for v in range(2):
        seed, variant = _rewritten("multi_turn_miss_param_177", v)
        assert not re.search(r"\bclass\b", _user(seed, 0))
        first = _user(variant, 0)
        assert not re.search(r"\b(?:class|cabin)\b", first), first
        assert re.search(r"\b(?:economy|business|first)\b", _user(variant, 1), re.I)
