"""The second capable-model trial's waste (issue 13, item 3): text faults sent to the planner, validators
that contradict the prompt, prompt gaps, garbled drafts. One scripted-model test per fix; no network.

Each test fails on the code before its fix (named in its docstring).
"""

from __future__ import annotations

import json
import re

from langchain_core.messages import AIMessage

from envs.dataset import load_tasks
from graphs.synthesis import synthesize
from tests.test_synthesis_llm_backbone import ScriptedChatModel, _ctx, _tool, capable_rewrite, offline_accepted

ACCEPT = {"reasoning": "faithful, new", "faithfulness": 5, "coherence": 4, "naturalness": 4,
          "easier_than_seed": False, "substantively_new": True, "decision": "accept", "fault": "none", "critique": ""}


def _draft_plan(prompt: str) -> dict:
    return json.loads(prompt.split("\n## Draft plan", 1)[1].split("\n", 2)[1])


# ----------------------------------------------------------------------------- 1. text faults go to the rewrite
def test_a_text_fault_goes_back_to_the_rewrite_with_its_reasons_and_the_plan_is_kept():
    """Before: a verdict rejection of the words alone (here an old name left in the text: leftover_name:text)
    re-planned: the planner was asked again (it can only resend its plan) and the next rewrite got no reason
    (trial requests 0003/0004, 0025/0026, 0027/0028). Now the rewrite is asked again with the reasons and the
    plan is kept: plan 1, rewrite 2, judge 1."""
    olds: list[str] = []

    def script(prompt: str) -> AIMessage:
        if "## Draft plan" in prompt:
            draft = _draft_plan(prompt)
            olds[:] = [r["old"] for r in draft["renames"] if len(r["old"]) >= 3 and not r["old"].isdigit()]
            return _tool(draft, "PlanProposal")
        if "strict quality judge" in prompt:
            return _tool(ACCEPT, "JudgeVerdict")
        if "leftover_name:text" in prompt:  # told what was wrong with its words: it fixes exactly that
            return capable_rewrite(prompt.replace(f"Hello there, about {olds[0]}. ", ""))
        return capable_rewrite(prompt, prefix=f"Hello there, about {olds[0]}. " if olds else "Hello there. ")

    # the first seed whose draft plan renames a name and, echoed back, executes (some drafts add state, e.g. a
    # renamed default user, that the LLM plan path does not carry yet: see the issue 13 note)
    for seed in load_tasks(ids=list(offline_accepted(8))):
        model = ScriptedChatModel(messages=iter([]), script=script)
        result = synthesize([seed], _ctx(model, ["plan", "rewrite", "judge"], max_plan_attempts=3))
        if olds and result.accepted:
            break
    assert olds, "no draft plan renames anything"
    plans = [p for p in model.prompts if "## Draft plan" in p]
    rewrites = [p for p in model.prompts if "Drafts:" in p and "## Draft plan" not in p]
    assert len(plans) == 1, "a fault in the words re-planned"
    assert len(rewrites) == 2 and "leftover_name:text" in rewrites[1] and "the plan and its calls are fine" in rewrites[1]
    assert result.accepted, result.rejected
    assert result.accepted[0].provenance["llm_calls"] == 4


# ----------------------------------------------------------------------------- 2. validators that contradicted the prompt
def _seed(seed_id: str):
    from rods_agents.analysis.profile import profile_task
    from rods_agents.analysis.tracing import trace_task

    seed = load_tasks(ids=[seed_id])[0]
    trace = trace_task(seed)
    return seed, trace, profile_task(seed, trace)


def test_a_number_an_earlier_call_printed_is_not_a_value_to_state_after_a_swap():
    """Before: base_59's logarithm(value=<distance>) swapped for square_root(number=<distance>): 'number' has
    no source in the seed, and only strings were looked up in earlier results, so the rewrite had to state
    the distance turn 1 returns (trial 0038: an easier text, then data_flow_dropped)."""
    from rods_agents.analysis.tracing import trace_task
    from rods_agents.llm.prompting import values_by_turn

    seed, _, profile = _seed("multi_turn_base_59")
    gt = [list(t) for t in seed.ground_truth]
    gt[4] = ["square_root(number=980.0, precision=10)"]
    candidate = seed.model_copy(update={"ground_truth": gt})
    values = values_by_turn(profile, gt, trace_task(candidate), candidate)
    assert 980.0 not in values[4]["state"] and 980.0 in values[4]["unstated"], values[4]


def test_a_name_hint_is_not_offered_for_a_value_the_seed_picks_by_a_filter():
    """Before: long_context_13 picks the file to tail by its order ('the alphabetically first file'); the rewrite
    prompt offered "name those by: the file with 'report' in its name", which makes the task easier (trial 0023).
    The hint says to pick it the seed's way, by the seed's cue."""
    from rods_agents.analysis.tracing import trace_task
    from rods_agents.llm.prompting import values_by_turn

    seed, trace, profile = _seed("multi_turn_long_context_13")
    hints = values_by_turn(profile, seed.ground_truth, trace_task(seed), seed)[0]["hints"]
    assert not [h for h in hints if "in its name" in h], hints
    assert any("position reference" in h and "alphabetically first file" in h for h in hints), hints


def test_a_stale_quoted_value_a_date_in_words_and_a_plain_word_function_name():
    """Before: (a) a draft quoting the seed's old data made it a value to state (miss_param_15 lost, trial 0048);
    (b) 'must state 2026-11-20' refused 'November 20th, 2026' (the seed says dates in words); (c) 'comment'
    was refused as a leaked function name (trial 0013)."""
    from rods_agents.llm.backbone import validate_rewrite

    values = [{"state": [], "unstated": [], "new": []}]
    stale = ["Put 'Student | Math | Art' into the data file."]
    text = ["Put the crop table into the data file."]
    assert validate_rewrite({"narrative": "n", "turns": text}, stale,
                            [["echo(content='Crop | Yield', file_name='harvest.csv')"]], values, [0]) == text
    used = ["Put 'Crop | Yield' into the data file."]
    try:
        validate_rewrite({"narrative": "n", "turns": text}, used,
                         [["echo(content='Crop | Yield', file_name='harvest.csv')"]], values, [0])
        raise AssertionError("a quoted value the calls use must still be stated")
    except ValueError as exc:
        assert "Crop | Yield" in str(exc)
    dated = [{"state": ["2026-11-20"], "unstated": [], "new": []}]
    for said in ("Book it for Friday, November 20th, 2026.", "Book it for the 20th of Nov."):
        assert validate_rewrite({"narrative": "n", "turns": [said]}, ["Book it on 2026-11-20."],
                                [["book_flight(travel_date='2026-11-20')"]], dated, [0]) == [said]
    reply = ["Then add a reply under that post saying we loved it."]
    assert validate_rewrite({"narrative": "n", "turns": reply}, ["Then reply to it."],
                            [["comment(tweet_id=1, comment_content='we loved it')"]], values, [0]) == reply
    try:
        validate_rewrite({"narrative": "n", "turns": ["Use post_tweet for it."]}, ["Post it."],
                         [["post_tweet(content='x')"]], values, [0])
        raise AssertionError("an identifier-like function name is still a leak")
    except ValueError as exc:
        assert "post_tweet" in str(exc)


# ----------------------------------------------------------------------------- 3. what the plan prompt lacked
def _plan_prompt(seed_id: str) -> str:
    from rods_agents.llm.prompting import render_plan_prompt

    seed, trace, profile = _seed(seed_id)
    return render_plan_prompt(seed, profile, trace, seed.ground_truth, {})


def _swaps_of(prompt: str, method: str) -> str:
    line = next(x for x in prompt.splitlines() if re.match(rf"\s+\d+\.\d+ {method}\(", x))
    return line.split(";", 1)[1] if ";" in line else line


def test_the_plan_prompt_gives_the_tables_the_rules_and_only_swaps_that_keep_the_profile():
    """Before (trial 0001, 0006, 0030, 0035): no route table for get_flight_cost nor distance table for
    estimate_distance (the planner recalled BFCL's from memory); book_flight's rule "balance at least the
    budget limit" unsaid; "a rename applies everywhere" while renames never reach text inside a longer string;
    a failing call's outcome (a refused login) not required; get_outside_temperature_from_weather_com (always
    {"error": 404}) and get_booking_history (drops the booking id's data flow) offered as swaps."""
    travel = _plan_prompt("multi_turn_miss_param_177")
    assert re.search(r"get_flight_cost\(.*Only these values are known to its code: .*SFO -> LAX 200", travel)
    assert re.search(r"book_flight\(.*at least the budget limit", travel)
    assert "no other function of its skill" in _swaps_of(travel, "retrieve_invoice")
    assert "does NOT reach text inside a longer" in travel and "fails the same way" in travel
    assert "card id" in travel and "expiry" in travel
    vehicle = _plan_prompt("multi_turn_base_59")
    assert re.search(r"estimate_distance\(.*62947/47329 -> 1053\.0", vehicle)
    assert re.search(r"get_zipcode_based_on_city\(.*Silverpine -> \"62947\"", vehicle)
    assert "square_root" in _swaps_of(vehicle, "logarithm")  # its required 'number' takes the distance
    weather = _plan_prompt("multi_turn_base_91")
    assert "weather_com" not in _swaps_of(weather, "get_outside_temperature_from_google")
    tickets = _plan_prompt("multi_turn_long_context_125")
    assert "get_user_tickets" not in _swaps_of(tickets, "get_ticket")


# ----------------------------------------------------------------------------- 4. the drafts the LLM sees
def test_the_rewrite_prompt_says_the_drafts_are_mechanical_and_the_values_count():
    """Before: drafts garbled by value substitution ("between the business two airports", "San Francisco
    International (ORD)", "precision of 12.5") or taken from another task were shown as what each turn must
    ask; the model could not tell which to trust (trial 0012, 0020, 0036, 0046)."""
    from rods_agents.llm.prompting import render_rewrite_prompt

    seed, trace, profile = _seed("multi_turn_base_59")
    slots = [t for t, m in enumerate(seed.turns) if m]
    prompt = render_rewrite_prompt(seed, profile, trace, seed.ground_truth,
                                   [seed.turns[t][0].content for t in slots], slots)
    flat = " ".join(prompt.split())
    assert "substituted mechanically" in flat and "what counts" in flat and "required only where" in flat
    assert "keep its key words" in flat  # the lexical checks find a reference or transformation by its cue
    # trial 10 (requests 0017, 0024, 0031, 0032): a condition cue quotes the seed's whole sentence, and a model told
    # to keep the cue words kept the sentence, refused as seed_sentence_kept four times
    assert "keep only those few key words" in flat and "not words you must use" in flat
