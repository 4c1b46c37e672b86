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

import copy
import itertools
import json
import random
import zlib
from collections.abc import Callable

import pytest

from envs.checker import check
from envs.executor import parse_call
from envs.task import Task

multi_turn_utils = pytest.importorskip("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils")
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import (  # noqa: E402
    multi_turn_checker,
    response_checker,
    state_checker,
)

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

    for default in TwitterAPI.post_tweet.__defaults__ or ():
        if isinstance(default, list):
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


def bfcl_turn_passes(task: Task, decoded: Decoded) -> list[bool | None]:
    """Per-turn verdicts from BFCL's own executor, ``state_checker`` and ``response_checker``.

    ``multi_turn_checker``'s loop without the short-circuit (spec §5.6): None for an unscored
    (empty-GT) turn, False for an unreached one.
    """
    _reset_bfcl_shared_state()
    model_name = f"rodseq{next(_names)}"
    run = dict(initial_config=task.initial_config, involved_classes=task.involved_classes, test_entry_id=task.id,
               long_context="long_context" in task.id, is_evaL_run=True)
    all_model_results: list[str] = []
    out: list[bool | None] = []
    try:
        for t, gt_calls in enumerate(task.ground_truth):
            if t >= len(decoded):
                out.append(False if gt_calls else None)
                continue
            model_instances = None
            for step in decoded[t]:
                results, model_instances = multi_turn_utils.execute_multi_turn_func_call(
                    func_call_list=step, model_name=model_name, **run)
                all_model_results.extend(results)
            gt_results, gt_instances = multi_turn_utils.execute_multi_turn_func_call(
                func_call_list=gt_calls, model_name=model_name + "_ground_truth", **run)
            if not gt_calls:
                out.append(None)
            elif multi_turn_utils.is_empty_execute_response(decoded[t]):
                out.append(False)
            else:
                out.append(state_checker(model_instances, gt_instances)["valid"]
                           and response_checker(all_model_results, gt_results, t)["valid"])
    finally:
        registry = vars(multi_turn_utils)
        for key in [k for k in registry if k.startswith(model_name + "_")]:
            del registry[key]
    return out


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


def traj_duplicate_call(task: Task) -> Decoded:
    """One GT call made twice in a row (mutations applied twice, reads answered twice)."""
    rng = _rng(task, "dup")
    turns = _gt(task)
    t = rng.choice(task.scored_turns)
    i = rng.randrange(len(turns[t]))
    turns[t].insert(i, turns[t][i])
    return _one_step(turns)


def traj_act_in_empty_turns(task: Task) -> Decoded:
    """In every empty-GT turn, also do the next scored turn's calls (so they run twice)."""
    turns = _gt(task)
    for t, calls in enumerate(task.ground_truth):
        if not calls:
            following = next((task.ground_truth[u] for u in range(t + 1, len(turns)) if task.ground_truth[u]), [])
            turns[t] = list(following)
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
    "duplicate_call": traj_duplicate_call,
    "act_in_empty_turns": traj_act_in_empty_turns,
    "truncated": traj_truncated,
}


# Mean progress of "first half, then silence" per category, computed in the spec (§5.6) with
# BFCL's own state_checker / response_checker.
SPEC_FIRST_HALF_PROGRESS = {"base": 0.43, "miss_func": 0.335, "miss_param": 0.391, "long_context": 0.43}


# Kinds also compared turn by turn against BFCL's pieces (each adds one more BFCL execution).
PER_TURN_KINDS = {"drop_call", "change_arg", "early", "ints_as_floats", "first_half"}


@pytest.mark.parametrize("kind", list(TRAJECTORIES))
def test_same_verdict_as_bfcl(bfcl_tasks, kind):
    """Same pass/fail as BFCL's ``multi_turn_checker`` on all 800 entries, same failure kind.

    For ``PER_TURN_KINDS`` also the same per-turn verdicts (hence progress) as BFCL's
    executor + ``state_checker`` + ``response_checker`` without the short-circuit.
    """
    build = TRAJECTORIES[kind]
    mismatches, turn_mismatches = [], []
    n_passed = 0
    progress: dict[str, list[float]] = {}
    ours_passed: dict[str, bool] = {}
    for task in bfcl_tasks:
        decoded = build(task)
        ours = check(task, decoded)
        ours_passed[task.id] = ours.passed
        ok, error_type = bfcl_verdict(task, decoded)
        n_passed += ok
        if ours.passed != ok or (not ok and ours.failure != error_type):
            mismatches.append((task.id, ours.passed, ours.failure, ok, error_type))
        if len(decoded) == len(task.ground_truth):
            assert (ours.progress == 1.0) == ours.passed, (task.id, ours.progress, ours.passed)
        progress.setdefault(task.category, []).append(ours.progress)
        if kind in PER_TURN_KINDS:
            mine = [v.passed if v.scored else None for v in ours.turns]
            theirs = bfcl_turn_passes(task, decoded)
            if mine != theirs:
                turn_mismatches.append((task.id, mine, theirs))
            scored = [p for p in theirs if p is not None]
            assert ours.progress == pytest.approx(sum(scored) / len(scored))
    assert not mismatches, f"{len(mismatches)} entries differ from BFCL, e.g. {mismatches[:5]}"
    assert not turn_mismatches, f"{len(turn_mismatches)} entries differ turn by turn, e.g. {turn_mismatches[:3]}"
    expected = {"gt": 800, "gt_steps": 800, "extra_invalid": 800, "extra_readonly": 800, "nothing": 0,
                "first_half": 0, "truncated": 0, "early": 0}
    if kind in expected:
        assert n_passed == expected[kind]
    if kind == "first_half":
        for category, values in progress.items():
            assert sum(values) / len(values) == pytest.approx(SPEC_FIRST_HALF_PROGRESS[category], abs=5e-4)
    if kind == "nothing":
        assert all(p == 0.0 for values in progress.values() for p in values)
    if kind == "early_junk":  # spec §5.5: BFCL doesn't penalize acting early on miss_func / miss_param
        early = [ours_passed[t.id] for t in bfcl_tasks if t.category in ("miss_func", "miss_param")]
        assert sum(early) == 400


# ------------------------------------------------------------------ BFCL aliasing quirks, isolated
def _result_of(task: Task, turn: int, index: int) -> str:
    from envs.executor import Environment

    env = Environment(task.involved_classes, task.initial_config, task.long_context)
    for calls in task.ground_truth[:turn]:
        env.run(calls)
    return env.run(task.ground_truth[turn])[index]


def test_twitter_default_aliasing_is_the_only_cause(bfcl_tasks, monkeypatch):
    """Mentioning users on a tweet posted with the default ``mentions`` one turn later.

    BFCL: the model's and the GT's tweet share ``post_tweet``'s default list, so the GT tweet
    "gets" the mention too and the state check passes. Ours: the tweets differ, so the turn fails
    with a state mismatch. With BFCL's default list made per call, BFCL agrees with us.
    """
    from bfcl_eval.eval_checker.multi_turn_eval.func_source_code.posting_api import TwitterAPI

    task = next(t for t in bfcl_tasks if t.id == "multi_turn_base_5")
    turn, index = 2, next(i for i, c in enumerate(task.ground_truth[2]) if c.startswith("post_tweet("))
    assert "mentions" not in task.ground_truth[turn][index]
    tweet_id = json.loads(_result_of(task, turn, index))["id"]
    decoded = traj_gt(task)
    decoded[turn + 1] = [[f"mention(tweet_id={tweet_id}, mentioned_usernames=['@rods_probe'])",
                          *task.ground_truth[turn + 1]]]

    ours = check(task, decoded)
    assert not ours.passed and ours.failure == "multi_turn:instance_state_mismatch"
    assert ours.failure_turn == turn + 1 and "TwitterAPI" in ours.detail and "tweets" in ours.detail
    assert bfcl_verdict(task, decoded) == (True, None)  # the quirk

    original = TwitterAPI.post_tweet

    def post_tweet(self, content, tags=None, mentions=None):
        return original(self, content, [] if tags is None else tags, [] if mentions is None else mentions)

    monkeypatch.setattr(TwitterAPI, "post_tweet", post_tweet)
    assert bfcl_verdict(task, decoded) == (False, "multi_turn:instance_state_mismatch")


def test_long_context_travel_aliasing_is_the_only_cause(bfcl_tasks, monkeypatch):
    """Under long_context BFCL puts the *same* extension-card dicts into both sides of a check.

    A model that charges an extension card the GT never touches: BFCL sees the GT's card charged
    too (shared dict) and passes; ours fails on ``credit_card_list``. With BFCL's merge made to
    copy the dicts, BFCL agrees with us.
    """
    from bfcl_eval.eval_checker.multi_turn_eval.func_source_code import travel_booking
    from bfcl_eval.eval_checker.multi_turn_eval.func_source_code.long_context import (
        BOOKING_RECORD_EXTENSION,
        CREDIT_CARD_EXTENSION,
    )

    real = next(t for t in bfcl_tasks if t.category == "long_context" and t.involved_classes == ["TravelAPI"])
    config = real.initial_config.get("TravelAPI", {})
    card = next(c for c in CREDIT_CARD_EXTENSION if c not in config.get("credit_card_list", {}))
    booking = next(b for b in BOOKING_RECORD_EXTENSION if b not in config.get("booking_record", {}))
    login = ("authenticate_travel(client_id='c', client_secret='s', refresh_token='r', grant_type='read_write', "
             "user_first_name='A', user_last_name='B')")
    task = real.model_copy(update={"turns": [[real.turns[0][0]]], "ground_truth": [[login]], "missed_function": {}})
    token = json.loads(_result_of(task, 0, 0))["access_token"]
    charge = (f"purchase_insurance(access_token={token!r}, insurance_type='comprehensive', booking_id={booking!r}, "
              f"insurance_cost=1.0, card_id={card!r})")
    decoded = [[[login, charge]]]
    assert '"insurance_status": true' in _charge_result(task, decoded)

    ours = check(task, decoded)
    assert not ours.passed and ours.failure == "multi_turn:instance_state_mismatch"
    assert "TravelAPI" in ours.detail and "credit_card_list" in ours.detail

    snapshot = copy.deepcopy(CREDIT_CARD_EXTENSION)
    try:
        assert bfcl_verdict(task, decoded) == (True, None)  # the quirk
        original = travel_booking.TravelAPI._add_credit_cards

        def add_credit_cards(self):
            original(self)
            self.credit_card_list = copy.deepcopy(self.credit_card_list)

        monkeypatch.setattr(travel_booking.TravelAPI, "_add_credit_cards", add_credit_cards)
        assert bfcl_verdict(task, decoded) == (False, "multi_turn:instance_state_mismatch")
    finally:  # BFCL's charge landed in the module-level dict; undo it for later checks
        for key, value in snapshot.items():
            CREDIT_CARD_EXTENSION[key].clear()
            CREDIT_CARD_EXTENSION[key].update(value)


def _charge_result(task: Task, decoded: Decoded) -> str:
    from envs.executor import Environment

    env = Environment(task.involved_classes, task.initial_config, task.long_context)
    return env.run(decoded[0][0])[1]
