"""Seed-anchored offline synthesis: variants are written from their seed's own turns.

A variant keeps what makes its seed hard (implicit calls, conditions, references by position, the
withheld value) because its text *is* the seed's text with the plan's changes carried in; its
values keep their kind, no old name survives anywhere, and its ground truth is new in substance.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envs.dataset import load_split, load_tasks
from envs.executor import parse_call
from envs.task import Task
from rods_agents.analysis.execution import error_report, flag_outcome_flips
from rods_agents.analysis.profile import profile_task
from rods_agents.analysis.tracing import trace_task
from rods_agents.run.runtime import rng_for
from rods_agents.stages.coherence_rewrite import build_variant, carry_plan
from rods_agents.stages.plan_sampling import sample_variant_plan
from rods_agents.variation.anchored_plan import anchored_plan
from rods_agents.variation.config_rules import propose_patch
from rods_agents.variation.plan import Plan
from rods_agents.variation.seed_anchor import Substitution, leftovers, substitute_numbers
from rods_agents.variation.state_resample import resample_state
from rods_agents.variation.value_kinds import fresh, kind_of, pools

TRAIN = load_split("train")


def _variant(seed_id: str, variant: int = 0, attempt: int = 0) -> tuple[Task, Task, Plan]:
    seed = load_tasks(ids=[seed_id])[0]
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    plan = sample_variant_plan(seed, profile, trace, rng_for(0, seed.id, variant, attempt), attempt)
    return seed, build_variant(seed, carry_plan(seed, plan), plan, variant, 0), plan


def _parsed(task: Task) -> list:
    return [[(p.name, p.args, sorted(p.kwargs.items())) for p in map(parse_call, turn)] for turn in task.ground_truth]


def _texts(task: Task) -> list[str]:
    return [m.content for turn in task.turns for m in turn]


def _no_leftovers(plan: Plan, task: Task) -> list[str]:
    return leftovers(list(plan.renames), _texts(task), task.initial_config, task.ground_truth)


# ----------------------------------------------------------------------------- known seeds
def test_conditions_and_the_implicit_brake_survive_and_numbers_are_carried_in_the_seeds_form():
    seed, task, plan = _variant("multi_turn_base_94")
    texts = _texts(task)
    limit = str(plan.numbers.get("40.0", 40)).removesuffix(".0")  # the user's tire limit may move (stated_limits)
    assert "Should the range fall short" in texts[0] and f"Should any tire fall below the {limit} PSI mark" in texts[1]
    assert "brake pedal" not in texts[2].lower() and "ignite the engine" in texts[2]  # pressBrakePedal stays implicit
    assert plan.numbers and _parsed(task) != _parsed(seed)
    for old, new in plan.numbers.items():  # '300 miles' -> '<new> miles': written as the seed wrote it
        assert re.search(rf"(?<![\d.]){re.escape(str(new).removesuffix('.0'))}(?![\d])", " ".join(texts)), (old, new)
    assert not trace_task(task).errors


def test_a_reference_by_position_picks_the_same_position_in_the_new_result():
    seed, task, plan = _variant("multi_turn_base_112")
    assert "the last stock on the list" in _texts(task)[1]
    trace = trace_task(task)
    listed = json.loads(trace.calls[0].result)["stock_list"]
    assert trace.calls[1].args["symbol"] == listed[-1]
    assert _parsed(task) != _parsed(seed)


def test_the_implicit_cd_stays_implicit_and_every_rename_is_carried_everywhere():
    seed, task, plan = _variant("multi_turn_base_0")
    assert plan.renames
    seed_text, text = " ".join(_texts(seed)), " ".join(_texts(task))
    for old, new in plan.renames.items():
        if old in seed_text:
            assert new in text, (old, new)
    assert not re.search(r"\bcd\b|\bgo into\b|\bnavigate\b", text, re.I)
    assert not _no_leftovers(plan, task)
    folders = {n for c in task.ground_truth[0] if c.startswith(("cd(", "mkdir(")) for n in re.findall(r"'([^']+)'", c)}
    assert folders and all(f.lower() in {x.lower() for x in pools()["folders"]} for f in folders)
    assert _parsed(task) != _parsed(seed)


def test_miss_param_keeps_the_value_withheld_until_the_turn_that_supplies_it():
    checked = 0
    for seed in [t for t in TRAIN if t.category == "miss_param"][:15]:
        _, task, plan = _variant(seed.id)
        for k in (t for t, gt in enumerate(seed.ground_truth) if not gt and t + 1 < len(seed.ground_truth)):
            assert task.ground_truth[k] == [] and task.ground_truth[k + 1]
            before_seed, before = " ".join(_texts(seed)[: k + 1]), " ".join(_texts(task)[: k + 1])
            for call in seed.ground_truth[k + 1]:
                for value in re.findall(r"'([^']{3,})'", call):
                    if value in before_seed or value not in _texts(seed)[k + 1]:
                        continue
                    new = Substitution(plan.renames).text(value)  # renamed whole or in part
                    assert new not in before and new in _texts(task)[k + 1], (seed.id, value, new)
                    checked += 1
    assert checked >= 5


def test_miss_func_keeps_its_reveal_turn_empty():
    seed, task, plan = _variant("multi_turn_miss_func_38")
    for reveal in seed.missed_function:
        assert task.turns[reveal] == [] and seed.turns[reveal] == []
    assert _parsed(task) != _parsed(seed) and not _no_leftovers(plan, task)


def test_a_person_is_one_person_everywhere():
    seed, task, plan = _variant("multi_turn_long_context_181")
    assert plan.renames.get("Carlos") and plan.renames.get("Martinez")
    new_first, new_last = plan.renames["Carlos"], plan.renames["Martinez"]
    assert f"{new_first} {new_last}" in " ".join(_texts(task))
    login = next(c for turn in task.ground_truth for c in turn if c.startswith("ticket_login"))
    assert (new_first[0] + new_last).lower() in login  # the handle 'cmartinez' follows the person
    assert not _no_leftovers(plan, task)


def test_an_option_is_swapped_only_for_another_documented_option_where_every_mention_names_it():
    from rods_agents.analysis.value_sources import CITY_ALIASES, airport_cities
    from rods_agents.variation.donor_fit import _AIRPORT_NAMES

    airports = airport_cities()
    swaps = []
    for seed in [t for t in TRAIN if "TravelAPI" in t.involved_classes][:20]:
        _, task, plan = _variant(seed.id)
        text, new_text = " ".join(_texts(seed)), " ".join(_texts(task))
        for old, new in plan.swaps.items():
            swaps.append((old, new))
            named = (*CITY_ALIASES.values(), *_AIRPORT_NAMES.values())
            if old in airports.values() or any(old in names for names in named):
                continue  # a route's city (or its alias) goes with its code (checked next)
            if old in airports:  # a route: the new code or its city is said
                forms = [new, airports[new]]
                assert any(re.search(rf"(?<![A-Za-z0-9]){re.escape(f)}(?![A-Za-z0-9])", new_text) for f in forms)
                continue
            mentions = list(re.finditer(rf"(?<![A-Za-z0-9]){re.escape(old)}(?![A-Za-z0-9])", text, re.I))
            # 'business class' may become 'first class'; 'business meeting' never does
            assert len(mentions) == 1 or all(re.match(r"\s*-?\s*class", text[m.end():]) for m in mentions)
            # said as it is, or in the words the old one was said in ('pounds sterling' -> 'Australian dollars')
            said = [new, *(w for table in pools()["mode_words"].values() for w in table.get(new, []))]
            assert any(re.search(rf"(?<![A-Za-z0-9]){re.escape(f)}(?![A-Za-z0-9])", new_text, re.I) for f in said)
    # documented options, or airports the travel environment prices (a new route)
    aliases = {a for names in CITY_ALIASES.values() for a in names}  # 'NYC' follows its city's new name
    documented = {o for opts in pools()["swappable"].values() for o in opts} | set(airports) | set(airports.values())
    documented |= aliases | {n for names in _AIRPORT_NAMES.values() for n in names}  # a named airport's name follows
    assert swaps and all(old in documented and new in documented for old, new in swaps)


# ----------------------------------------------------------------------------- value kinds and forms
def test_new_values_keep_their_kind():
    rng = rng_for("kinds")
    assert kind_of("temp", "mkdir", "dir_name") == "folder" and fresh("temp", "folder", rng, set()) in pools()["folders"]
    new = fresh("final_report.pdf", "file", rng, set())
    assert new.endswith(".pdf") and "_" in new
    assert re.fullmatch(r"([A-Z][a-z]+)+\.txt", fresh("TeamNotes.txt", "file", rng, set()))  # CamelCase stays
    # a one-word name gets a word a file goes by alone, never the head of a two-word stem ('user.txt', read 23)
    assert {fresh("usage.txt", "file", rng_for("kinds", i), set()) for i in range(20)} <= {
        f"{w}.txt" for w in pools()["file_words"]}
    # a report stays a report, notes stay notes: the new name still says what the file holds (read 23: quarterly
    # revenue in 'test_results.txt', study notes in 'TravelPlans2023.txt')
    assert all(fresh("finance_report.txt", "file", rng_for("kinds", i), set()).endswith("_report.txt") for i in range(10))
    assert all(re.fullmatch(r"[A-Z][a-z]+Notes2023\.txt", fresh("Notes2023.txt", "file", rng_for("kinds", i), set()))
               for i in range(10))
    assert fresh("Michael Thompson", "person", rng, set()).count(" ") == 1
    assert kind_of("Tire Pressure Issue", "create_ticket", "title") == "title"
    assert re.fullmatch(r"card_\d{4}", fresh("card_4455", "id", rng, set()))
    assert kind_of("2026-11-10", "book_flight", "travel_date") == "date"
    import datetime as dt
    delta = dt.date.fromisoformat(fresh("2026-11-10", "date", rng, set())) - dt.date(2026, 11, 10)
    assert delta.days % 7 == 0 and delta.days != 0  # 'next Tuesday' stays a Tuesday


def test_values_are_found_in_every_form_the_text_uses():
    sub = Substitution({"final_report.pdf": "sales_figures.pdf", "Temp": "Drafts"})
    assert sub.text("Move 'final_report.pdf' into temp, then open the final report") == \
        "Move 'sales_figures.pdf' into drafts, then open the sales figures"
    assert substitute_numbers("add $10,000 and 30.0 gallons, thirty more", {"10000": 12500, "30.0": 27.4}) == \
        "add $12,500 and 27.4 gallons, 27.4 more"
    assert substitute_numbers("order 150 shares, not 1500", {"150": 429}) == "order 429 shares, not 1500"


# ----------------------------------------------------------------------------- invariants over the train split
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(0, len(TRAIN) - 1), variant=st.integers(0, 3))
def test_no_renamed_value_survives_in_text_config_or_ground_truth(index, variant):
    seed = TRAIN[index]
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    plan = Plan(**anchored_plan(seed, profile, trace, rng_for(0, seed.id, variant, 0)))
    task = build_variant(seed, carry_plan(seed, plan), plan, variant, 0)
    assert not _no_leftovers(plan, task)
    assert len(task.turns) == len(seed.turns)
    for st_, vt in zip(seed.turns, task.turns, strict=True):  # one message per seed message, same roles
        assert [m.role for m in st_] == [m.role for m in vt]


def test_a_short_balance_is_repaired_by_the_patch_agent():
    seed = load_tasks(ids=["multi_turn_base_142"])[0]
    trace = trace_task(seed)
    for n in range(40):
        config = json.loads(json.dumps(seed.initial_config))
        if resample_state(config, trace, rng_for("short", n)) and (draft := seed.model_copy(
                update={"initial_config": config})) and trace_task(draft).errors:
            break
    else:
        pytest.fail("no draw missed the balance precondition")
    vtrace = trace_task(draft)
    err = error_report(vtrace.errors[0])
    assert err["kind"] == "insufficient_funds"
    patch = propose_patch(draft.initial_config, err, vtrace)
    assert patch is not None and patch.rule == "trading.add_balance"
    assert not trace_task(draft).errors  # the repaired state runs the seed's plan
    assert draft.initial_config != seed.initial_config


def test_a_flipped_yes_no_outcome_is_an_error_no_patch_repairs():
    seed = load_tasks(ids=["multi_turn_base_94"])[0]
    seed_trace = trace_task(seed)
    flipped = seed.model_copy(deep=True)
    flipped.initial_config["VehicleControlAPI"]["fuelLevel"] = 45.0  # the range no longer falls short
    flipped.ground_truth[0] = ["estimate_drive_feasibility_by_mileage(distance=300.0)", "fillFuelTank(fuelAmount=5.0)"]
    trace = trace_task(flipped)
    assert not trace.errors
    errors = flag_outcome_flips(trace, seed_trace)
    assert errors and errors[0]["kind"] == "outcome_flip" and trace.errors
    assert propose_patch(json.loads(json.dumps(flipped.initial_config)), errors[0], trace) is None


def test_a_city_pair_becomes_another_pair_the_environment_knows_and_the_distance_follows():
    # (a plan whose new fuel level would flip the range check keeps one city: the first variant with both)
    seed, task, plan = next(x for x in (_variant("multi_turn_base_85", v) for v in range(6))
                            if set(x[2].swaps) == {"San Francisco", "Rivermist"})
    trace = trace_task(task)
    assert not trace.errors
    distance = json.loads(trace.calls[2].result)["distance"]
    assert trace.calls[3].args["distance"] == distance != 980.0  # read from the new result, not the seed's
    assert all(new in _texts(task)[0] for new in plan.swaps.values())


def _numbers_in_args(gt_turn: list[str]) -> set[float]:
    out: set[float] = set()
    for call in gt_turn:
        parsed = parse_call(call)
        for v in [*parsed.args, *parsed.kwargs.values()]:
            vals = v if isinstance(v, list | tuple) else [v]
            out |= {float(x) for x in vals if isinstance(x, int | float) and not isinstance(x, bool)}
    return out


def _strings_in_args(gt_turn: list[str]) -> set[str]:
    return {v for call in gt_turn for v in parse_call(call).kwargs.values() if isinstance(v, str)}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(TRAIN), st.integers(0, 3))
def test_a_changed_number_is_an_argument_wherever_the_text_says_it(seed, variant):
    """'display the last 10 lines' over tail(file) (10 is tail's default) must keep its 10: a number changes only
    where each turn that says it has a call of that turn (or the next, for a withheld value) taking it; a number
    changed only before one unit ('30|gallons') counts only where the text says it with that unit. A threshold the
    user sets and no call takes ('if it falls under 37.5 PSI') may change where the text says it only as a limit."""
    from rods_agents.variation.seed_anchor import has_number, number_matches, unit_after
    from rods_agents.variation.stated_limits import _only_as_limit

    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    plan = sample_variant_plan(seed, profile, trace, rng_for(0, seed.id, variant, 0), 0)
    texts = [" ".join(m.content for m in turn) for turn in seed.turns]
    for old in plan.numbers:
        key, _, unit = old.partition("|")
        value = float(key)
        for t, text in enumerate(texts):
            said = has_number(text, value) if not unit else any(
                unit_after(text, m.end()) == unit for m in number_matches(text, value))
            if said:
                nearby = set().union(*(_numbers_in_args(seed.ground_truth[k]) for k in (t, t + 1) if k < len(seed.ground_truth)))
                # or a text the turn dictates word for word holding it ('a 100-share buy order', which changes with it)
                quoted = any(has_number(x, value) and x in text for k in (t, t + 1) if k < len(seed.ground_truth)
                             for x in _strings_in_args(seed.ground_truth[k]))
                # or a limit the user sets, said only as a limit (rods_agents.variation.stated_limits)
                assert value in nearby or quoted or _only_as_limit(texts, value), (seed.id, old, t, text)


def test_a_stock_the_text_never_names_keeps_its_ticker():
    """base-style 'act on the one that's making GPUs' picks NVDA by what it does: a new ticker would make the text
    point at nothing, so the plan renames only tickers the text spells out."""
    seed = load_tasks(ids=["multi_turn_miss_param_108"])[0]
    text = " ".join(m.content for turn in seed.turns for m in turn)
    assert "NVDA" not in text
    for variant in range(4):
        trace = trace_task(seed)
        plan = sample_variant_plan(seed, profile_task(seed, trace), trace, rng_for(0, seed.id, variant, 0), 0)
        assert "NVDA" not in plan.renames, plan.renames


def test_a_stated_limit_holds_in_the_variant():
    """'business class, with a cost of below $1200' (miss_param_169): a new date may change the fare, but never past
    the limit the user states (its own or, where the plan sets another, the new one), or the ground truth (which books
    the flight) no longer follows from the text."""
    seed = load_tasks(ids=["multi_turn_miss_param_169"])[0]
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    for variant in range(8):
        plan = sample_variant_plan(seed, profile, trace, rng_for(0, seed.id, variant, 0), 0)
        draft = seed.model_copy(update={"ground_truth": plan.ground_truth, "initial_config": plan.initial_config})
        invoices = [json.loads(r.result) for r in trace_task(draft).calls if r.name == "retrieve_invoice"]
        limit = _plan_limit(seed, plan)  # the user's own limit, which the plan may set anew (stated_limits.py)
        assert invoices and all(inv["invoice"]["travel_cost"] < limit for inv in invoices), (variant, invoices, limit)


def _plan_limit(seed, plan) -> float:
    """The one limit the seed's text states, as the plan's numbers write it."""
    from rods_agents.analysis.tracing import stated_limits
    from rods_agents.variation.seed_anchor import substitute_numbers

    (limit,) = {n for _t, n in stated_limits([substitute_numbers(" ".join(m.content for m in turn), plan.numbers)
                                                for turn in seed.turns])}
    return limit


def test_limits_pair_up_turn_by_turn_when_a_turn_is_reworded():
    """base_94 turn 0 'a stretch of over 300 miles' re-worded as 'Would the vehicle make it 250 miles on what's left?'
    states no limit; paired across turns, the seed's 300 met turn 1's '40 PSI' and a fuel level of 45 counted as a
    flipped outcome (every sample of scenario 94 was refused as an execution error). A limit a turn keeps still holds."""
    from rods_agents.analysis.tracing import limit_flips

    seed = load_tasks(ids=["multi_turn_base_94"])[0]
    texts = [" ".join(m.content for m in turn) for turn in seed.turns]
    fuller = seed.model_copy(update={"initial_config": {**seed.initial_config, "VehicleControlAPI": {
        **seed.initial_config["VehicleControlAPI"], "fuelLevel": 15.0}}})
    reworded = ["Would the vehicle make it 300 miles on what's left? Should the range fall short, put 30 gallons in.",
                *texts[1:]]
    assert limit_flips(trace_task(seed), trace_task(fuller), texts, reworded) == []
    softer = seed.model_copy(update={"initial_config": {**seed.initial_config, "VehicleControlAPI": {
        **seed.initial_config["VehicleControlAPI"], "frontLeftTirePressure": 45.0, "frontRightTirePressure": 45.0,
        "rearLeftTirePressure": 45.0, "rearRightTirePressure": 45.0}}})
    assert limit_flips(trace_task(seed), trace_task(softer), texts, reworded)  # turn 1's 40 PSI is still held


def test_a_ticker_whose_company_the_text_names_keeps_its_ticker():
    """'Apple, with symbol AAPL' (miss_param_124): a new ticker next to the old company name names two stocks."""
    seed = load_tasks(ids=["multi_turn_miss_param_124"])[0]
    text = " ".join(m.content for turn in seed.turns for m in turn)
    assert "AAPL" in text and "Apple" in text
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    for variant in range(4):
        plan = sample_variant_plan(seed, profile, trace, rng_for(0, seed.id, variant, 0), 0)
        assert "AAPL" not in plan.renames, plan.renames


def _plans(seed_id: str, n: int = 6):
    seed = load_tasks(ids=[seed_id])[0]
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    return seed, [sample_variant_plan(seed, profile, trace, rng_for(0, seed.id, v, 0), 0) for v in range(n)]


def test_a_number_inside_a_text_built_from_results_is_not_changed():
    """base_75 tweets 'Front Left Tire: XXX PSI, ...' with the values check_tire_pressure returned: a fuel amount that
    happens to equal a pressure must not rewrite the tweet, or the tweet no longer matches the result."""
    seed, plans = _plans("multi_turn_base_75")
    tweets = [c for turn in seed.ground_truth for c in turn if c.startswith("post_tweet")]
    assert tweets
    for plan in plans:
        assert [c for turn in plan.ground_truth for c in turn if c.startswith("post_tweet")] == tweets


def test_a_stated_limit_holds_when_the_call_comes_turns_later():
    """miss_func_169 states 'under $1200' before the booking function is even offered: the limit still binds."""
    seed, plans = _plans("multi_turn_miss_func_169", 8)
    for plan in plans:
        draft = seed.model_copy(update={"ground_truth": plan.ground_truth, "initial_config": plan.initial_config})
        costs = [json.loads(r.result)["invoice"]["travel_cost"] for r in trace_task(draft).calls if r.name == "retrieve_invoice"]
        assert all(c < _plan_limit(seed, plan) for c in costs), costs


@pytest.mark.parametrize("seed_id,word", [("multi_turn_base_125", "Alphabet"), ("multi_turn_base_66", "Berkeley"),
                                          ("multi_turn_miss_param_5", "archive")])
def test_a_value_the_text_also_names_in_other_words_keeps_it(seed_id, word):
    """'Alphabet with symbol ALPH', 'a spot in Berkeley' next to its street address, 'Managed to archive ...' next
    to a folder called archive: renaming the value would leave the other words pointing at the old one. (An
    address keeps the city the text names and gets another street: 'a spot in Berkeley' still holds.)"""
    seed, plans = _plans(seed_id, 4)
    text = " ".join(m.content for turn in seed.turns for m in turn)
    assert word.lower() in text.lower()
    for plan in plans:
        assert not any((word.lower() in old.lower() and word.lower() not in new.lower()) or old.lower() in word.lower()
                       for old, new in plan.renames.items() if len(old) >= 4), plan.renames


def test_a_new_name_agrees_with_the_pronoun_the_text_uses():
    """'message my colleague, John Levy, add him as new contact' (base_14): the new colleague is a 'him' too."""
    he = set(pools()["first_name_pronouns"]["he"])
    seed, plans = _plans("multi_turn_base_14", 6)
    renamed = [new for plan in plans for old, new in plan.renames.items() if old == "John Levy"]
    assert renamed, "expected John Levy to be renamed in some variant"
    assert all(new.split()[0] in he for new in renamed), renamed


def test_a_hidden_file_or_folder_stays_hidden_when_renamed():
    # read 5, multi_turn_base_1: '.hidden_file' renamed 'photos' left the task's hidden file visible
    import random

    for i in range(10):
        new = fresh(".hidden_file", kind_of(".hidden_file", None, None, "file"), random.Random(i), set())
        assert new and new.startswith(".") and not new.startswith(".."), new
    assert not fresh("Documents", "folder", random.Random(0), set()).startswith(".")


def test_a_password_made_of_digits_is_not_renamed_where_a_record_has_that_id():
    # read 6, multi_turn_long_context_110: the password '12345' renamed '75431' re-keyed the old order 12345
    from tests.test_transplant import _variant

    for v in range(4):
        _, variant, plan, _ = _variant("multi_turn_long_context_110", v, 3)
        assert "12345" in variant.initial_config["TradingBot"]["orders"], plan.renames


def test_an_article_follows_the_value_it_stands_before_in_text_and_dictated_values_alike():
    # read 10, base_148: the dictated ticket description read 'the cancellation of an GM order' after AAPL -> GM
    from rods_agents.variation.seed_anchor import Substitution

    sub = Substitution({"AAPL": "GM", "business": "economy"})
    assert sub.text("the cancellation of an AAPL order") == "the cancellation of a GM order"
    assert sub.text("An AAPL trade in a business class mood") == "A GM trade in an economy class mood"
    assert Substitution({"ZETA": "NVDA"}).text("a ZETA order") == "an NVDA order"
    assert sub.text("a AAPL order") == "a GM order"  # an article the old value did not take is left as it was


def test_a_cap_said_again_by_new_words_is_a_limit_the_plan_holds_costs_to():
    """New words say a cap of the seed's request sentence again on its own (saying.restated_numbers); the plan's
    limit check must have read it as a limit in the seed's words, the seed's typo included, or a new route could cost
    more than the cap the variant states."""
    from rods_agents.analysis.tracing import stated_limits

    texts = ["booking your flight from JFK to LAX on February 28, 2026 costing no more that $2500, through your card",
             "Just double check the flight cost for me. My max spending limit is 7000.",
             "with a cost under $1200", "My travel funds should not exceed $2000"]
    assert stated_limits(texts) == [(0, 2500.0), (1, 7000.0), (2, 1200.0), (3, 2000.0)]


def test_a_dictated_value_whose_quote_the_seed_never_closes_is_closed_where_it_ends():
    """base_110's last turn opens the ticket's description with a quote and never closes it ('... with the
    description 'There is an issue ... an account summary. My username is user123 ...'): nothing said where the
    description stops (read 31, borderline). The variant closes the quote where the description ends."""
    from envs.executor import parse_call
    from tests.test_transplant import _rewrite

    for slot in range(2):
        _seed, plan, turns, _donors = _rewrite("multi_turn_base_110", slot)
        said = " ".join(m.content for m in turns[5] if m.role == "user")
        create = next(parse_call(c) for c in plan.ground_truth[5] if c.startswith("create_ticket"))
        description = create.kwargs["description"]
        assert f"'{description}'" in said or description not in said, said


def test_a_value_quoted_open_straight_and_closed_curly_is_quoted_straight():
    """base_193 titles a ticket 'Urgent Change in Travel Plans’ (a straight quote opening, a curly one closing): the
    quotes paired wrongly, the turn read as holding other values and every sample kept the seed's words. The quote
    closes as it opened, and the turn takes new words that keep the title."""
    from rods_agents.variation.anchored_plan import _closed_quotes
    from tests.test_transplant import _rewrite

    assert _closed_quotes("a ticket titled 'Urgent Change’ now", ["Urgent Change"]) == "a ticket titled 'Urgent Change' now"
    said = " ".join(m.content for m in _rewrite("multi_turn_base_193")[2][3] if m.role == "user")
    assert "'Urgent Change in Travel Plans'" in said and "In light of these new developments" not in said, said


def test_a_login_of_the_users_own_gets_a_new_username_and_its_password_follows_it():
    """Read 36, miss_func_189: 'I post as john; password john1234.' was kept in all 28 variants that log in to Twitter
    (the code's default username 'john' read as a name the environment knows, though the seed's state sets it). A
    variant's user is someone else: a new username everywhere the state has it, a password made of it, and the login
    still succeeds; no 'john' is left in the text or the state."""
    from tests.test_transplant import _variant

    for seed_id in ("multi_turn_base_151", "multi_turn_miss_func_189"):
        for v in range(2):
            _, variant, plan, _ = _variant(seed_id, v, 3)
            new = plan.renames.get("john")
            assert new and re.fullmatch(r"[a-z]+", new), plan.renames
            twitter = variant.initial_config["TwitterAPI"]
            assert twitter["username"] == new and re.fullmatch(rf"{new}\d{{4}}", twitter["password"]), twitter
            assert "john" not in json.dumps(variant.initial_config) + json.dumps(variant.ground_truth)
            text = " ".join(m.content for t in variant.turns for m in t if m.role == "user")
            assert not re.search(r"\bjohn", text, re.I) and twitter["password"] in text, text
            trace = trace_task(variant)
            login = next(r for r in trace.calls if r.name == "authenticate_twitter")
            assert json.loads(login.result) == {"authentication_status": True}


def test_a_travel_date_the_user_states_moves_in_the_text_and_the_calls_alike():
    """Read 36: 'The trip is still the seed's (LAX to JFK on November 15th, 2026)'; 148 of 150 dates the seeds state were
    kept. A stated date now moves by whole weeks within its year, written in the seed's own form ('July 14th, 2026' ->
    'July 7th, 2026'), and the calls take the new date; a date named by its holiday ('on Christmas') stays."""
    import datetime as dt

    from rods_agents.variation.seed_anchor import date_words
    from tests.test_transplant import _variant

    moved = 0
    for seed_id, old in (("multi_turn_base_182", "2026-07-14"), ("multi_turn_base_151", "2026-11-10")):
        for v in range(3):
            _, variant, plan, _ = _variant(seed_id, v, 3)
            new = plan.renames.get(old)
            if new is None:
                continue
            moved += 1
            a, b = dt.date.fromisoformat(old), dt.date.fromisoformat(new)
            assert a.year == b.year and (b - a).days % 7 == 0, new
            text = " ".join(m.content for t in variant.turns for m in t if m.role == "user")
            assert date_words(new)[0] in text and date_words(old)[0] not in text, text
            assert old not in json.dumps(variant.ground_truth) and new in json.dumps(variant.ground_truth)
    assert moved >= 4
    for v in range(3):
        _, variant, plan, _ = _variant("multi_turn_miss_param_198", v, 3)
        assert "2026-12-25" not in plan.renames and "2026-12-25" in json.dumps(variant.ground_truth)


def test_an_option_swap_leaves_the_new_numbers_in_place_and_takes_the_stock_along():
    """Read 37, base_116: the sector swap (Technology -> Automobile) broke the plan, and the next level dropped the new
    numbers along with the resampled state, so '$10000' and '50 shares at $150 apiece' stayed the seed's in every
    sibling that lost its sector swap. The option swap now goes first, and the numbers stay where they still run; the
    swap itself holds now, the stock bought coming from the new sector's list (entity_swaps._swapped_sectors)."""
    from rods_agents.variation.entity_swaps import sectors_of
    from tests.test_transplant import _rewrite

    kept_numbers = 0
    for slot in range(3):
        _, plan, _, _ = _rewrite("multi_turn_base_116", slot)
        bought = next(c for turn in plan.ground_truth for c in turn if c.startswith("place_order("))
        symbol = parse_call(bought).kwargs["symbol"]
        assert plan.swaps.get("Technology", "Technology") in sectors_of()[symbol]
        kept_numbers += bool(plan.numbers)
    assert kept_numbers >= 2


def test_a_message_users_id_changes_with_the_state_that_holds_it():
    """Read 37: 'USR001/USR002' were the seed's in 75 of 91 variants that message someone (BFCL's code writes the ids
    in its default state, so they read as names the environment knows). An id changes now: in the user map, the
    inbox's senders and every call alike, a default map and inbox written into the variant's state; where a later
    call takes the id back from a result ("Message sent to 'USR003' successfully."), it takes the new one."""
    from tests.test_transplant import _variant

    for seed_id in ("multi_turn_base_33", "multi_turn_miss_func_131"):
        seed, variant, plan, _ = _variant(seed_id, 0, 3)
        new = plan.renames.get("USR003")
        assert new and re.fullmatch(r"USR\d{3}", new), plan.renames
        message = variant.initial_config["MessageAPI"]
        assert new in message["user_map"].values() and "USR003" not in json.dumps(message)
        assert any(new in entry for entry in message["inbox"])
        calls = json.dumps(variant.ground_truth)
        assert "USR003" not in calls and new in calls
        assert not trace_task(variant).errors


def test_a_limit_in_psi_is_never_held_against_a_fuel_level():
    """LLM trial 9, miss_func_94: the seed fills 10 + 30 = 40 gallons and its next turn says 'below the 40 PSI mark';
    a plan filling 12 + 25 = 37 gallons was refused as 'fillFuelTank.fuelLevel: 40.0 vs limit 40.0 -> 37.0 vs 40.0'
    and the patch agent was asked to raise the fuel. A limit stated in PSI is held against tire pressures only."""
    from rods_agents.analysis.tracing import limit_flips

    seed = load_tasks(ids=["multi_turn_miss_func_94"])[0]
    texts = [" ".join(m.content for m in turn) for turn in seed.turns]
    car = seed.initial_config["VehicleControlAPI"]
    less_fuel = seed.model_copy(update={"initial_config": {**seed.initial_config,
                                                           "VehicleControlAPI": {**car, "fuelLevel": 7.0}}})
    assert limit_flips(trace_task(seed), trace_task(less_fuel), texts, texts) == []
    softer = seed.model_copy(update={"initial_config": {**seed.initial_config, "VehicleControlAPI": {
        **car, **{f"{w}TirePressure": 45.0 for w in ("frontLeft", "frontRight", "rearLeft", "rearRight")}}}})
    assert limit_flips(trace_task(seed), trace_task(softer), texts, texts)  # the tires still answer to 40 PSI


def test_a_pressure_limit_reads_whether_any_tire_is_below_it():
    """LLM trial 10, requests 0052-0054: base_92 asks 'If any tire pressure is under 35 PSI' and the check held each of
    the four pressures to its seed's side of the limit, so three patch calls moved tires one by one. The condition
    reads one outcome: whether any tire is below. Another tire below instead still counts as the same outcome; all
    tires above is a flip."""
    from rods_agents.analysis.tracing import limit_flips

    seed = load_tasks(ids=["multi_turn_miss_func_94"])[0]
    texts = [" ".join(m.content for m in turn) for turn in seed.turns]
    car = seed.initial_config["VehicleControlAPI"]
    names = ("frontLeft", "frontRight", "rearLeft", "rearRight")
    one_soft = seed.model_copy(update={"initial_config": {**seed.initial_config, "VehicleControlAPI": {
        **car, **{f"{w}TirePressure": 45.0 for w in names}, "rearRightTirePressure": 33.0}}})
    assert limit_flips(trace_task(seed), trace_task(one_soft), texts, texts) == []
    all_firm = seed.model_copy(update={"initial_config": {**seed.initial_config, "VehicleControlAPI": {
        **car, **{f"{w}TirePressure": 45.0 for w in names}}}})
    assert limit_flips(trace_task(seed), trace_task(all_firm), texts, texts)


def test_a_date_written_day_first_with_a_short_month_moves_with_the_plan():
    # base_188: 'Planning to leave next Friday 19th Sept 2026': the date had no form the rewrite could carry, so it
    # stayed 2026-09-19 in every sample (read 63)
    from rods_agents.variation.seed_anchor import Substitution

    moved = Substitution({"2026-09-19": "2026-10-03"}).text("next Friday 19th Sept 2026, or 19 Sep 2026")
    assert moved == "next Friday 3rd Oct 2026, or 3 Oct 2026"
    renamed = [plan.renames.get("2026-09-19") for _seed, _task, plan in (_variant("multi_turn_base_188", v) for v in range(2))]
    assert all(renamed), renamed
