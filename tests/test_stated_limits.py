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
    seed_limit = [n for _t, n in stated_limits([m.content for turn in seed.turns for m in turn if m.role == "user"])]
    assert seed_limit == [40.0] and _pressures(seed.id)
    limits = set()
    for slot in range(4):
        _seed, plan, turns, _donors = _rewrite(seed.id, slot)
        said = [n for _t, n in stated_limits([m.content for turn in turns for m in turn if m.role == "user"])]
        assert len(said) == 1
        limits.add(said[0])
        old = seed.initial_config["VehicleControlAPI"]
        new = plan.initial_config["VehicleControlAPI"]  # the tires may move with the limit
        assert all((new[k] < said[0]) == (old[k] < 40.0) for k in old if k.endswith("TirePressure"))
        assert [c.split("(")[0] for c in plan.ground_truth[2]] == [c.split("(")[0] for c in seed.ground_truth[2]]
    assert limits - {40.0}, limits


def test_a_limit_moves_past_a_number_that_other_results_print_under_another_name():
    """base_68 says 'If any of my car's tires are showing pressure below 40' (tires at 35): the full tank's 50 that
    the engine start prints in the turn before sat between 40 and every new value, so the limit never moved. Only
    results of the limit's turn and the next, or named in its words ('pressure'), bound it now; it stays above every
    tire's pressure."""
    _assert_the_tire_limit_moves_above_the_tires("multi_turn_base_68")


def test_tires_move_with_their_limit_and_keep_the_cars_verdict():
    """Scenario 82 says 'If any tire falls short of 30.0 psi' with tires at 30, 30, 28 and 28: no new limit left every
    tire on its side, so all its variants said 30.0 psi (read 38). The tires now move by the limit's own move; a tire
    the seed put at the limit stays at it, and a shift that would change the car's own 'healthy' verdict is refused."""
    from rods_agents.variation.tire_pressures import fits

    tires = {"frontLeftTirePressure": 30.0, "frontRightTirePressure": 30.0, "rearLeftTirePressure": 28.0,
             "rearRightTirePressure": 28.0}
    assert fits(tires, -5.0, [(30.0, 25.0)])  # 25, 25, 23, 23 against 25: the same tires short as before
    assert not fits(tires, -5.0, [(30.0, 30.0)])  # the tires moved under a limit that stayed: 25 < 30 now
    healthy = dict.fromkeys(tires, 31.0)
    assert not fits(healthy, -2.0, [])  # a mean of 29 psi is no longer 'healthy' to the car
    assert fits(healthy, 2.0, [])


def test_a_tire_limit_of_scenario_82_moves_with_the_tires_in_the_variants_state():
    from rods_agents.analysis.profile import profile_task
    from rods_agents.analysis.tracing import trace_task
    from rods_agents.run.runtime import rng_for
    from rods_agents.stages.plan_sampling import sample_variant_plan
    from rods_agents.variation.tire_pressures import pressures

    seed = bfcl_task("multi_turn_base_82")
    assert stated_limits([m.content for turn in seed.turns for m in turn]) == [(0, 30.0)]
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    old = pressures(seed.initial_config)
    moved = 0
    for slot in range(8):
        plan = sample_variant_plan(seed, profile, trace, rng_for(3, seed.id, slot, 0))
        limit = float(plan.numbers.get("30.0", 30.0))
        new = pressures(plan.initial_config)
        assert all((new[k] < limit) == (old[k] < 30.0) for k in old), (limit, new)
        moved += limit != 30.0 and all(new[k] - old[k] == limit - 30.0 for k in old)
    assert moved, "no variant moved the limit with the tires"


def test_a_tire_limit_moves_past_a_fuel_level_of_the_next_turn():
    """base_94 says 'Should any tire fall below the 40 PSI mark' (tires at 35), and the next turn's engine start
    prints a fuel level of 40 gallons: a tire limit compares with the tires only, so it moves (it was the seed's 40 in
    all eight samples, read 63), and the tires stay below it."""
    _assert_the_tire_limit_moves_above_the_tires("multi_turn_base_94")


def _assert_the_tire_limit_moves_above_the_tires(seed_id: str) -> None:
    """The seed's tire limit of 40 moves in some of four plans, and stays above every tire of the variant's own state
    (the tires may move with the limit)."""
    from rods_agents.analysis.profile import profile_task
    from rods_agents.analysis.tracing import trace_task
    from rods_agents.run.runtime import rng_for
    from rods_agents.stages.plan_sampling import sample_variant_plan

    seed = bfcl_task(seed_id)
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    plans = [sample_variant_plan(seed, profile, trace, rng_for(3, seed.id, slot, 0)) for slot in range(4)]
    moved = [(p.numbers.get("40.0"), p.initial_config) for p in plans]
    assert any(new for new, _config in moved), moved
    for new, config in moved:
        tires = [v for k, v in config["VehicleControlAPI"].items() if k.endswith("TirePressure")]
        assert new is None or new > max(tires)
