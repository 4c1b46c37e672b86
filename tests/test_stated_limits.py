"""A limit the user sets may change in a variant, on the same side of every result (rods_agents.variation.stated_limits).

What a user of the synthesized data relies on: 'If it's below 40, point me to the nearest tire shop' may become
'below 50' in a variant, but only where every tire pressure the task reads compares with 50 as it did with 40, with
a margin; a number a call takes, or one the text also says as something else, is never touched as a limit.
"""

from __future__ import annotations

import json

from envs.task import bfcl_task
from rods_agents.analysis.tracing import stated_limits
from rods_agents.variation.stated_limits import _only_as_limit, _same_side, _step
from tests.test_transplant import _rewrite


def test_a_new_limit_keeps_every_result_on_its_side_with_a_margin():
    pressures = [32.0, 32.0, 30.5, 31.0]
    assert _same_side(40, 50, pressures) and _same_side(40, 35, pressures)
    assert not _same_side(40, 30, pressures)  # 30.5 and 31 would now be above the limit
    assert not _same_side(40, 33, pressures)  # 32 is under 33 still, but within a knife's edge of it


def test_a_limit_moves_by_its_own_roundness():
    assert [_step(x) for x in (2000, 5000, 300, 40, 35, 37.5, 7)] == [100, 500, 50, 5, 5, 2.5, 1.0]


def test_a_tire_limit_stays_a_tire_pressure_someone_sets():
    """Read 36: base_68's 'below 40' PSI became 'lower than 60', which no driver sets; every new limit stays within a
    quarter of the seed's (40 -> 35, 45 or 50 here), still above every tire's pressure."""
    from rods_agents.analysis.profile import profile_task
    from rods_agents.analysis.tracing import trace_task
    from rods_agents.run.runtime import rng_for
    from rods_agents.stages.plan_sampling import sample_variant_plan

    seed = bfcl_task("multi_turn_base_68")
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    moved = {sample_variant_plan(seed, profile, trace, rng_for(s, seed.id, slot, 0)).numbers.get("40.0")
             for s in range(6) for slot in range(4)} - {None}
    assert moved and all(30 <= new <= 50 for new in moved), moved


def test_a_number_said_also_as_something_else_is_not_a_limit_to_change():
    assert _only_as_limit(["If it's below 40, find a tire shop."], 40)
    assert not _only_as_limit(["Add 40 gallons.", "If it's below 40, find a tire shop."], 40)


def _pressures(seed_id: str) -> list[float]:
    from rods_agents.analysis.tracing import trace_task

    out = []
    for rec in trace_task(bfcl_task(seed_id)).calls:
        if rec.name == "check_tire_pressure":
            result = json.loads(rec.result)
            out += [float(v) for k, v in result.items() if k.endswith("_tire_pressure")]
    return out


def test_a_variant_may_set_another_tire_limit_and_asks_for_the_same_calls():
    """base_51 asks for the nearest tire shop if the pressure is below 40: across sibling slots some variants state
    another limit, each on the seed's side of every pressure, and each still asks for the shop as the seed does."""
    seed = bfcl_task("multi_turn_base_51")
    pressures = _pressures(seed.id)
    seed_limit = [n for _t, n in stated_limits([m.content for turn in seed.turns for m in turn if m.role == "user"])]
    assert seed_limit == [40.0] and pressures
    limits = set()
    for slot in range(4):
        _seed, plan, turns, _donors = _rewrite(seed.id, slot)
        said = [n for _t, n in stated_limits([m.content for turn in turns for m in turn if m.role == "user"])]
        assert len(said) == 1
        limits.add(said[0])
        assert all((p < said[0]) == (p < 40.0) for p in pressures)
        assert [c.split("(")[0] for c in plan.ground_truth[2]] == [c.split("(")[0] for c in seed.ground_truth[2]]
    assert limits - {40.0}, limits


def test_a_limit_moves_past_a_number_that_other_results_print_under_another_name():
    """base_68 says 'If any of my car's tires are showing pressure below 40' (tires at 35): the full tank's 50 that
    the engine start prints in the turn before sat between 40 and every new value, so the limit never moved. Only
    results of the limit's turn and the next, or named in its words ('pressure'), bound it now; it stays above every
    tire's pressure."""
    from rods_agents.analysis.profile import profile_task
    from rods_agents.analysis.tracing import trace_task
    from rods_agents.run.runtime import rng_for
    from rods_agents.stages.plan_sampling import sample_variant_plan

    seed = bfcl_task("multi_turn_base_68")
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    moved = [sample_variant_plan(seed, profile, trace, rng_for(3, seed.id, slot, 0)).numbers.get("40.0")
             for slot in range(4)]
    assert any(moved), moved
    tires = [v for k, v in seed.initial_config["VehicleControlAPI"].items() if k.endswith("TirePressure")]
    assert all(new > max(tires) for new in moved if new)
