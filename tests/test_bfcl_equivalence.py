"""Our checker agrees with bfcl-eval's own executor + multi-turn checker on every entry.

For each of the 800 BFCL entries we build the ground-truth trajectory and a set of deterministic
perturbations of it, score each with ``envs.checker.check`` and with BFCL's
``multi_turn_checker`` (which runs BFCL's ``execute_multi_turn_func_call`` on both sides), and
require the same pass/fail everywhere, and the same failure kind wherever BFCL fails.

BFCL's executor keeps instances in a process-global registry keyed by model name and entry id,
so every BFCL check gets a fresh model name and its registry entries are deleted afterwards.

Known BFCL quirk that can make verdicts differ (our executor fixes it on purpose):
``TwitterAPI.post_tweet(tags=[], mentions=[])`` stores its *shared default list* in every
tweet posted without mentions; ``mention()`` extends that list in place, so the names leak
into every default-mention tweet of every instance in the process, including the other side of
the same check. ``_reset_bfcl_shared_state`` clears those default lists before every BFCL
check, so each BFCL check sees the state a fresh process would; within one check the aliasing
stays (see ``test_twitter_default_aliasing_is_the_only_cause``).
"""

from __future__ import annotations

import itertools
import random
import zlib
from collections.abc import Callable

import pytest

from envs.checker import check
from envs.executor import parse_call
from envs.task import Task

multi_turn_utils = pytest.importorskip("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils")
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker  # noqa: E402

Decoded = list[list[list[str]]]

INVALID_CALL = "nonexistent_function(x=1)"
# One read-only call per class: no state change, no RNG draw (so it cannot shift later results).
READ_ONLY = {
    "GorillaFileSystem": "pwd()",
    "MathAPI": "add(a=1, b=2)",
    "MessageAPI": "message_get_login_status()",
    "TwitterAPI": "posting_get_login_status()",
    "TicketAPI": "ticket_get_login_status()",
    "TradingBot": "get_current_time()",
    "TravelAPI": "travel_get_login_status()",
    "VehicleControlAPI": "get_zipcode_based_on_city(city='Rivermist')",
}

_names = itertools.count()


def _reset_bfcl_shared_state() -> None:
    """Clear TwitterAPI.post_tweet's mutable default lists (BFCL leaks them across checks)."""
    from bfcl_eval.eval_checker.multi_turn_eval.func_source_code.posting_api import TwitterAPI

    for default in TwitterAPI.post_tweet.__defaults__:
        default.clear()


def bfcl_verdict(task: Task, decoded: Decoded) -> tuple[bool, str | None]:
    """BFCL's verdict: eval_runner's force-termination pre-check, then ``multi_turn_checker``."""
    if len(decoded) != len(task.ground_truth):
        return False, "multi_turn:force_terminated"
    _reset_bfcl_shared_state()
    model_name = f"rodseq{next(_names)}"
    entry = {"id": task.id, "initial_config": task.initial_config, "involved_classes": task.involved_classes}
    try:
        result = multi_turn_checker(decoded, task.ground_truth, entry, task.id.rsplit("_", 1)[0], model_name)
    finally:
        registry = vars(multi_turn_utils)
        for key in [k for k in registry if k.startswith(model_name + "_")]:
            del registry[key]
    return result["valid"], result.get("error_type")


# ------------------------------------------------------------------ trajectory builders
def _rng(task: Task, kind: str) -> random.Random:
    return random.Random(zlib.crc32(f"{task.id}/{kind}".encode()))


def _render(name: str, args: tuple, kwargs: dict) -> str:
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return f"{name}({', '.join(parts)})"


def _one_step(turns: list[list[str]]) -> Decoded:
    """Decoded form: one step per turn holding the calls, no steps for an empty turn."""
    return [[list(calls)] if calls else [] for calls in turns]


def _gt(task: Task) -> list[list[str]]:
    return [list(c) for c in task.ground_truth]


def traj_gt(task: Task) -> Decoded:
    return _one_step(_gt(task))


def traj_gt_steps(task: Task) -> Decoded:
    """Every call in its own step (the usual FC shape)."""
    return [[[c] for c in calls] for calls in task.ground_truth]


def traj_drop_call(task: Task) -> Decoded:
    rng = _rng(task, "drop")
    turns = _gt(task)
    t = rng.choice(task.scored_turns)
    del turns[t][rng.randrange(len(turns[t]))]
    return _one_step(turns)


def _mutate(value, rng: random.Random):
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 1.5
    if isinstance(value, str):
        return value + "_x" if value else "x"
    if isinstance(value, list | tuple):
        return list(value[:-1]) if value else ["x"]
    if isinstance(value, dict):
        return {**value, "x": 1}
    return "x"


def traj_change_arg(task: Task) -> Decoded:
    rng = _rng(task, "change")
    turns = _gt(task)
    sites = [(t, i) for t, calls in enumerate(turns) for i, c in enumerate(calls)
             if (p := parse_call(c)).args or p.kwargs]
    if not sites:  # no call with arguments: replace one call by an invalid one instead
        t = rng.choice(task.scored_turns)
        turns[t][0] = INVALID_CALL
        return _one_step(turns)
    t, i = rng.choice(sites)
    p = parse_call(turns[t][i])
    args, kwargs = list(p.args), dict(p.kwargs)
    slot = rng.randrange(len(args) + len(kwargs))
    if slot < len(args):
        args[slot] = _mutate(args[slot], rng)
    else:
        key = list(kwargs)[slot - len(args)]
        kwargs[key] = _mutate(kwargs[key], rng)
    turns[t][i] = _render(p.name, tuple(args), kwargs)
    return _one_step(turns)


def traj_extra_readonly(task: Task) -> Decoded:
    """A harmless read-only call of an involved class appended to every scored turn."""
    rng = _rng(task, "extra")
    call = READ_ONLY[rng.choice(task.involved_classes)]
    return _one_step([calls + [call] if calls else [] for calls in task.ground_truth])


def traj_extra_invalid(task: Task) -> Decoded:
    """An undefined function in every scored turn: BFCL lets extra (error) results through."""
    return _one_step([[INVALID_CALL] + calls if calls else [] for calls in task.ground_truth])


def _early_turn(task: Task) -> int:
    """The scored turn whose work is done one turn early."""
    scored = task.scored_turns
    if task.category in ("miss_func", "miss_param"):
        # the turn right after the first empty-GT turn (the reveal / the value-supplying turn)
        return next(t + 1 for t, gt in enumerate(task.ground_truth) if not gt and t + 1 in scored)
    later = [t for t in scored if t > 0]
    return _rng(task, "early").choice(later) if later else scored[0]


def traj_early(task: Task) -> Decoded:
    """Do turn k's work in turn k-1, then nothing in turn k."""
    turns = _gt(task)
    k = _early_turn(task)
    if k > 0:
        turns[k - 1] = turns[k - 1] + turns[k]
    turns[k] = []
    return _one_step(turns)


def traj_early_junk(task: Task) -> Decoded:
    """As ``traj_early`` but with a decodable (invalid) call in turn k."""
    turns = _gt(task)
    k = _early_turn(task)
    if k > 0:
        turns[k - 1] = turns[k - 1] + turns[k]
    turns[k] = [INVALID_CALL]
    return _one_step(turns)


def _floatify(value):
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, list | tuple):
        return [_floatify(v) for v in value]
    if isinstance(value, dict):
        return {k: _floatify(v) for k, v in value.items()}
    return value


def traj_ints_as_floats(task: Task) -> Decoded:
    out = []
    for calls in task.ground_truth:
        new = []
        for c in calls:
            p = parse_call(c)
            new.append(_render(p.name, tuple(_floatify(a) for a in p.args),
                               {k: _floatify(v) for k, v in p.kwargs.items()}))
        out.append(new)
    return _one_step(out)


def traj_nothing(task: Task) -> Decoded:
    return [[] for _ in task.ground_truth]


def traj_first_half(task: Task) -> Decoded:
    half = len(task.ground_truth) // 2
    return _one_step([calls if t < half else [] for t, calls in enumerate(_gt(task))])


def traj_shuffled(task: Task) -> Decoded:
    rng = _rng(task, "shuffle")
    turns = _gt(task)
    for calls in turns:
        rng.shuffle(calls)
    return _one_step(turns)


def traj_truncated(task: Task) -> Decoded:
    """One turn short: BFCL's force-termination."""
    return traj_gt(task)[:-1]


TRAJECTORIES: dict[str, Callable[[Task], Decoded]] = {
    "gt": traj_gt,
    "gt_steps": traj_gt_steps,
    "drop_call": traj_drop_call,
    "change_arg": traj_change_arg,
    "extra_readonly": traj_extra_readonly,
    "extra_invalid": traj_extra_invalid,
    "early": traj_early,
    "early_junk": traj_early_junk,
    "ints_as_floats": traj_ints_as_floats,
    "nothing": traj_nothing,
    "first_half": traj_first_half,
    "shuffled": traj_shuffled,
    "truncated": traj_truncated,
}


@pytest.mark.parametrize("kind", list(TRAJECTORIES))
def test_same_verdict_as_bfcl(bfcl_tasks, kind):
    build = TRAJECTORIES[kind]
    mismatches = []
    n_passed = 0
    for task in bfcl_tasks:
        decoded = build(task)
        ours = check(task, decoded)
        ok, error_type = bfcl_verdict(task, decoded)
        n_passed += ok
        if ours.passed != ok or (not ok and ours.failure != error_type):
            mismatches.append((task.id, ours.passed, ours.failure, ok, error_type))
        if len(decoded) == len(task.ground_truth):
            assert (ours.progress == 1.0) == ours.passed, (task.id, ours.progress, ours.passed)
    assert not mismatches, f"{len(mismatches)} entries differ from BFCL, e.g. {mismatches[:5]}"
    expected = {"gt": 800, "gt_steps": 800, "extra_invalid": 800, "nothing": 0, "first_half": 0, "truncated": 0}
    if kind in expected:
        assert n_passed == expected[kind]
