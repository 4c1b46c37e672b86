"""The defects a capable model met in the LLM trial (issue 13, item 3), one scripted-model test each.

Every test reads only what the prompts say or calls the validators as data; no network. Each fails on
the code before its fix (the fix is named in the test's docstring).
"""

from __future__ import annotations

import json
import re

import pytest
from langchain_core.messages import AIMessage

from envs.dataset import load_tasks
from envs.task import Message, bfcl_task
from graphs.synthesis import synthesize
from rods_agents.analysis.profile import profile_task
from rods_agents.analysis.tracing import trace_task
from rods_agents.llm.backbone import ask_validated, validate_judge, validate_plan, validate_rewrite
from rods_agents.llm.prompting import (
    plan_json,
    renamable_values,
    render_judge_prompt,
    render_plan_prompt,
    render_rewrite_prompt,
    values_by_turn,
)
from rods_agents.variation.plan import Plan
from tests.test_synthesis_llm_backbone import ScriptedChatModel, _ctx, _tool, capable_rewrite, offline_accepted


def _seed(seed_id: str):
    seed = load_tasks(ids=[seed_id])[0]
    trace = trace_task(seed)
    return seed, trace, profile_task(seed, trace)


def _swap(ground_truth: list[list[str]], turn: int, index: int, call: str) -> list[list[str]]:
    out = [list(t) for t in ground_truth]
    out[turn][index] = call
    return out


# ----------------------------------------------------------------------------- 1. the profile the verdict checks
def test_a_planner_reading_the_prompt_finds_the_allowed_swap_and_the_verdict_accepts_it():
    """Before: the verdict pinned each turn's count of value sources and data-flow edges, and the prompt
    said nothing of it. Now the prompt renders the skill-level profile the verdict checks, naming for each
    call the functions it may be swapped for; a planner that swaps one (mv -> cp) gets through the verdict."""
    seed = load_tasks(ids=["multi_turn_base_0"])[0]
    swapped: list[tuple[str, str]] = []

    def script(prompt: str) -> AIMessage:
        if "## Draft plan" in prompt:
            profile = prompt.split("## The profile the verdict checks", 1)[1].split("\n## ", 1)[0]
            draft = json.loads(prompt.split("\n## Draft plan", 1)[1].split("\n", 2)[1])
            for line in profile.splitlines():  # "  1.3 mv(...): skill relocate (...); may be swapped for cp"
                m = re.match(r"\s+(\d+)\.(\d+) (\w+)\(.*may be swapped for (\w+)$", line)
                if m and m.group(3) == "mv":
                    t, i = int(m.group(1)) - 1, int(m.group(2)) - 1
                    draft["turns"][t][i]["name"] = m.group(4)
                    swapped.append((m.group(3), m.group(4)))
                    break
            return _tool(draft, "PlanProposal")
        return capable_rewrite(prompt.replace("Move", "Copy"))

    model = ScriptedChatModel(messages=iter([]), script=script)
    result = synthesize([seed], _ctx(model, ["plan", "rewrite"], max_plan_attempts=1))
    assert swapped == [("mv", "cp")], "the plan prompt does not say which functions a call may be swapped for"
    reasons = [] if result.accepted else result.rejected[0]["reasons"]
    assert not [r for r in reasons if r.startswith(("skill_profile", "profile_mismatch"))], reasons
    assert result.accepted, reasons
    assert any(c.startswith("cp(") for turn in result.accepted[0].ground_truth for c in turn)


# ----------------------------------------------------------------------------- 2. apostrophes are not quotes
def test_apostrophes_are_not_values_the_rewrite_must_state():
    """Before: ``_QUOTED`` read "I'm sure ... I'm" as the quoted value "m sure ... I" and refused every
    rewrite of such a draft (10 of 11 trial refusals). A real quoted value is still required."""
    draft = "I'm sure the file is there, and I'm in a hurry: open 'notes.txt' for me."
    values = [{"state": [], "unstated": []}]
    gt = [["cat(file_name='notes.txt')"]]  # the quoted value is one the variant's calls use
    ok = validate_rewrite({"narrative": "n", "turns": ["I am certain the file exists and I am in a hurry, so "
                                                        "please open notes.txt for me."]}, [draft], gt, values, [0])
    assert ok and "notes.txt" in ok[0]
    with pytest.raises(ValueError, match="notes.txt"):
        validate_rewrite({"narrative": "n", "turns": ["I am certain the file exists and I am in a hurry, "
                                                      "please open it."]}, [draft], gt, values, [0])


# ----------------------------------------------------------------------------- 3. the rewrite follows the plan's swaps
def test_after_a_swap_the_structure_block_and_the_drafts_name_the_new_function():
    """Before: the information-structure block of the rewrite prompt named the seed's mv with its cue
    'Move' after the plan swapped in cp, and nothing told the rewriter the draft was stale."""
    seed, trace, profile = _seed("multi_turn_base_0")
    gt = _swap(seed.ground_truth, 0, 2, "cp(source='final_report.pdf', destination='temp')")
    slots = [t for t, m in enumerate(seed.turns) if m]
    prompt = render_rewrite_prompt(seed, profile, trace, gt, [seed.turns[t][0].content for t in slots], slots)
    structure = prompt.split("## Implicit steps, conditions, references and transformations to keep", 1)[1]
    turn1 = next(x for x in structure.splitlines() if x.startswith("Turn 1: "))
    assert "cp (was mv in the seed" in turn1
    changes = prompt.split("## What the plan changed from the seed", 1)[1].split("\n## ", 1)[0]
    assert "the seed's mv is now cp" in changes
    drafts = prompt.split("Drafts:", 1)[1]
    assert "the variant does mv -> cp" in drafts


def test_a_swapped_in_functions_new_argument_must_be_stated_and_is_enforced():
    """Before: values_by_turn listed only the seed's argument positions, so after du -> wc the file wc
    counts was never in "must state" (and the prompt's rule forbade stating it)."""
    seed, trace, profile = _seed("multi_turn_base_28")
    gt = _swap(seed.ground_truth, 2, 0, "wc(file_name='project_summary.txt', mode='w')")
    candidate = seed.model_copy(update={"ground_truth": gt})
    values = values_by_turn(profile, gt, trace_task(candidate))
    assert "project_summary.txt" in values[2]["state"]
    slots = [t for t, m in enumerate(seed.turns) if m]
    prompt = render_rewrite_prompt(seed, profile, trace, gt, [seed.turns[t][0].content for t in slots], slots,
                                   trace=trace_task(candidate))
    assert re.search(r'^Turn 3: must state \[[^\]]*"project_summary.txt"', prompt, re.M)
    drafts = ["Where is my analysis? Locate any file with analysis in it.",
              "Go to that first analysis and identify any line with error in it.",
              "Count the words of the summary and log the count followed by the word bytes to usage.txt."]
    with pytest.raises(ValueError, match="project_summary.txt"):
        validate_rewrite({"narrative": "n", "turns": drafts}, drafts, gt, values, slots)
    said = [*drafts[:2], drafts[2].replace("the summary", "project_summary.txt")]
    assert validate_rewrite({"narrative": "n", "turns": said}, drafts, gt, values, slots) == said


# ----------------------------------------------------------------------------- 4. verdict feedback reaches the planner whole
def test_a_located_verdict_reason_and_its_detail_reach_the_next_plan_prompt_whole():
    """Before: each detail value of a rejection was cut at 500 characters in the next plan prompt."""
    seed, trace, profile = _seed("multi_turn_base_14")
    reason = ("skill_profile:data_flow_dropped turn=3 call=send_message(receiver_id='USR001',message='x') "
              "param='receiver_id' from_turn=3 from_call=\"add_contact(user_name='John Levy')\" seed_value=\"'USR005'\"")
    critique = "Turn 4: " + "say whom to message by the contact just added, not by id; " * 15
    rejection = {"attempt": 0, "reasons": [reason], "detail": {"judge": {"critique": critique}}}
    prompt = render_plan_prompt(seed, profile, trace, seed.ground_truth, {}, [rejection])
    previous = prompt.split("previous plans were rejected", 1)[1]
    assert reason in previous and critique.strip() in previous
    assert len(critique) > 500


# ----------------------------------------------------------------------------- 5. results, options, padding
def test_the_plan_prompt_shows_every_result_a_later_value_derives_from_the_options_and_the_padding():
    """Before: only list- and id-carrying results were shown (wc's count feeding a mean was not), option
    lists in parameter docs ('l' for lines) were dropped, and the long-context padding was invisible."""
    seed, trace, profile = _seed("multi_turn_base_15")
    prompt = render_plan_prompt(seed, profile, trace, seed.ground_truth, {})
    wc = next(r for r in trace.calls if r.name == "wc")
    assert f"{wc.call}  -> {wc.result}  [a later value derives from this]" in prompt
    docs = prompt.split("## Functions", 1)[1]
    assert re.search(r"^wc\(.*'l' for lines", docs, re.M)
    long_seed, long_trace, long_profile = _seed("multi_turn_long_context_0")
    long_prompt = render_plan_prompt(long_seed, long_profile, long_trace, long_seed.ground_truth, {})
    assert "extra entries at load time" in long_prompt.split("## The initial state", 1)[1]


# ----------------------------------------------------------------------------- 6. refusals whole
def test_a_long_refusal_is_fed_back_whole_on_the_retry():
    """Before: refusals were cut at 300 characters, so a reason naming several values lost its end."""
    refusal = "turn 2 drops values the user must state: " + ", ".join(f"'file_{i}.txt'" for i in range(40))
    prompts: list[str] = []

    def script(prompt: str) -> AIMessage:
        prompts.append(prompt)
        return _tool({"narrative": "n", "turns": ["x"]})

    def validate(out):
        if len(prompts) < 2:
            raise ValueError(refusal)
        return out

    model = ScriptedChatModel(messages=iter([]), script=script)
    from rods_agents.llm.schemas import RewrittenTurns

    ask_validated(model, RewrittenTurns, "write it", validate, stage="rewrite", retries=1, budget=2)
    assert len(refusal) > 300 and refusal in prompts[1]


# ----------------------------------------------------------------------------- 7. the judge and novelty
def test_the_judge_sees_the_seed_the_states_the_results_and_measured_novelty():
    """Before: the judge prompt held neither state, nor the results of non-list calls, nor any novelty
    question, and an accept of a copy passed validation."""
    seed, trace, profile = _seed("multi_turn_base_15")
    candidate = seed.model_copy(deep=True)  # a copy of the seed: its state is told identical
    prompt = render_judge_prompt(seed, profile, trace, candidate, trace)
    assert "## The seed's initial state" in prompt and json.dumps(seed.initial_config, sort_keys=True)[:200] in prompt
    assert "(identical to the seed's initial state)" in prompt
    wc = next(r for r in trace.calls if r.name == "wc")
    assert wc.result in prompt.split("## The candidate's ground truth", 1)[1]
    novelty = json.loads(prompt.split("## Novelty (measured)", 1)[1].strip().splitlines()[0])
    assert novelty["text_identical"] and novelty["text_5gram_containment_in_seed"] == 1.0
    verdict = {"reasoning": "r", "faithfulness": 5, "coherence": 5, "naturalness": 5, "easier_than_seed": False,
               "substantively_new": False, "decision": "accept", "fault": "none", "critique": ""}
    with pytest.raises(ValueError, match="substantively new"):
        validate_judge(verdict)
    with pytest.raises(ValueError, match="critique"):
        validate_judge({**verdict, "decision": "reject", "fault": "query_fixable"})


def test_a_measured_copy_is_rejected_with_a_critique_without_a_judge_call():
    """A candidate whose text is the seed's with only digits changed never reaches the LLM judge: it is
    rejected as a copy with a critique the refine round is given."""
    from rods_agents.stages.judge import copy_verdict

    seed = load_tasks(ids=["multi_turn_base_108"])[0]
    candidate = seed.model_copy(deep=True)
    candidate.turns = [[Message(role=m.role, content=re.sub(r"\d", "7", m.content)) for m in t] for t in seed.turns]
    entry = copy_verdict(seed, candidate)
    assert entry and entry["decision"] == "reject" and not entry["substantively_new"]
    assert "only digits changed" in entry["critique"] and entry["fault"] == "gt_unfixable"
    fresh = seed.model_copy(deep=True)
    fresh.turns = [[Message(role=m.role, content=f"Something else entirely, number {i} of my own errands today.")
                    for m in t] for i, t in enumerate(seed.turns)]
    assert copy_verdict(seed, fresh) is None


# ----------------------------------------------------------------------------- 8. renamable: the task's entities
def test_renamable_lists_name_the_tasks_entities_and_no_schema_keys():
    """Before: 'entity_keys' held record field names (num_shares, created_at) and left out the ticker and
    files the task is about; a ticker could be renamed into a stock nobody lists."""
    seed = load_tasks(ids=["multi_turn_base_101"])[0]
    ren = renamable_values(seed)
    assert not {"num_shares", "created_at", "order_type"} & set(ren["entity_keys"])
    ticker = next(e for e in ren["task_entities"] if e["value"] == "XTC")
    assert ticker["renamable"] is False and "NVDA" in ticker["others_of_its_kind"]
    plan = {"turns": plan_json(seed.ground_truth), "renames": [{"old": "XTC", "new": "QZX"}], "new_values": []}
    with pytest.raises(ValueError, match="knows it by name"):
        validate_plan(plan, seed, Plan(ground_truth=seed.ground_truth, initial_config=seed.initial_config))
    files = {e["value"] for e in renamable_values(load_tasks(ids=["multi_turn_base_0"])[0])["task_entities"]}
    assert {"final_report.pdf", "previous_report.pdf"} <= files


# ----------------------------------------------------------------------------- budget
def test_a_capable_model_needs_three_calls_per_accepted_variant():
    """Plan, rewrite and judge once each: the prompts carry what a capable model needs the first time."""
    def script(prompt: str) -> AIMessage:
        if "## Draft plan" in prompt:
            return _tool(json.loads(prompt.split("\n## Draft plan", 1)[1].split("\n", 2)[1]), "PlanProposal")
        if "strict quality judge" in prompt:
            return _tool({"reasoning": "faithful, new", "faithfulness": 5, "coherence": 4, "naturalness": 4,
                          "easier_than_seed": False, "substantively_new": True, "decision": "accept",
                          "fault": "none", "critique": ""}, "JudgeVerdict")
        return capable_rewrite(prompt)

    model = ScriptedChatModel(messages=iter([]), script=script)
    # the scripted "capable" rewrite is a mechanical stand-in (it re-words the drafts it is given); it cannot word a
    # long-context task's padded state, so it is tried on the other categories
    ids = [i for i in offline_accepted(6) if "long_context" not in i][:2]
    result = synthesize(load_tasks(ids=ids), _ctx(model, ["plan", "rewrite", "judge"]))
    assert result.accepted
    assert all(t.provenance["llm_calls"] == 3 for t in result.accepted), [t.provenance["llm_calls"] for t in result.accepted]


# ----------------------------------------------------------------------------- found rehearsing with the queue
def test_a_file_content_can_be_set_by_its_dotted_name_after_a_rename():
    """A capable planner gives a renamed file new content at 'Class.root.folder.contents.billing.py.content';
    before, the dot inside the file name made every such path 'no such field'."""
    seed = load_tasks(ids=["multi_turn_long_context_33"])[0]
    draft = Plan(ground_truth=seed.ground_truth, initial_config=seed.initial_config)
    turns = json.loads(json.dumps(plan_json(seed.ground_truth)).replace("deploy.py", "billing_sync.py"))
    content = "def sync_invoices():    # refresh the ledger    pass# refresh the cache# final audit"
    plan = validate_plan({"turns": turns, "renames": [{"old": "deploy.py", "new": "billing_sync.py"}],
                          "new_values": [{"path": "GorillaFileSystem.root.project.contents.billing_sync.py.content",
                                          "value_json": json.dumps(content)}]}, seed, draft)
    assert plan.initial_config["GorillaFileSystem"]["root"]["project"]["contents"]["billing_sync.py"]["content"] == content


def test_a_word_the_draft_uses_is_no_leak_and_a_value_inside_a_word_is_not_said():
    """Rehearsal refusals: 'function' (the seed's user asks for the name of a script's function) was a
    scaffold leak with no turn named, and 'def' counted as said inside 'defines'."""
    drafts = ["Use grep to find out the name of the function of the script."]
    values = [{"state": [], "unstated": ["def"]}]
    ok = ["Search the script so I learn what its function is called and what it defines."]
    assert validate_rewrite({"narrative": "n", "turns": ok}, drafts, [["grep(file_name='a.py', pattern='def')"]],
                            values, [0]) == ok
    with pytest.raises(ValueError, match=r"turn 1 leaks .*tool call"):
        validate_rewrite({"narrative": "n", "turns": ["Make a tool call to search the script for its function."]},
                         drafts, [[]], values, [0])
    with pytest.raises(ValueError, match="def"):
        validate_rewrite({"narrative": "n", "turns": ["Search the script for def and its function."]},
                         drafts, [[]], values, [0])


def test_the_plan_prompt_shows_what_the_environment_adds_to_initial_config():
    """Rehearsal: 'buzz Catherine' is sent to USR003, but the user map lives in MessageAPI's code and the
    starting folder in the file system's: neither was in any prompt."""
    seed, trace, profile = _seed("multi_turn_long_context_33")
    state = render_plan_prompt(seed, profile, trace, seed.ground_truth, {}).split("## The initial state", 1)[1]
    assert '"Catherine": "USR003"' in state and "the session starts in the folder 'project'" in state


def test_a_changed_argument_the_state_still_holds_is_no_leftover_rename_and_a_found_value_gets_its_name():
    """Rehearsal: the planner changed grep's pattern 'update' -> 'refresh' and the receiver USR003 -> USR004;
    the plan recorded both as renames, so the verdict called the inbox's 'Thanks for the update!' and
    USR003 leftover names; and the rewrite prompt forbade naming Daniel, the only way to find USR004."""
    from rods_agents.analysis.variant_quality import leftover_names

    seed, trace, profile = _seed("multi_turn_long_context_33")
    turns = json.loads(json.dumps(plan_json(seed.ground_truth)).replace('\\"update\\"', '\\"final\\"')
                       .replace("USR003", "USR004").replace("update the system", "final checks"))
    plan = validate_plan({"turns": turns, "renames": [], "new_values": []}, seed,
                         Plan(ground_truth=seed.ground_truth, initial_config=seed.initial_config))
    assert plan.swaps.get("USR003") == "USR004" and "USR003" not in plan.renames
    candidate = seed.model_copy(update={"ground_truth": plan.ground_truth, "initial_config": plan.initial_config})
    assert not leftover_names(candidate.model_copy(update={"turns": [[] for _ in seed.turns]}), plan.renames)
    values = values_by_turn(profile, plan.ground_truth, trace_task(candidate), candidate)
    assert "USR004 -> Daniel" in values[3]["hints"]
    slots = [t for t, m in enumerate(seed.turns) if m]
    prompt = render_rewrite_prompt(seed, profile, trace, plan.ground_truth, [seed.turns[t][0].content for t in slots],
                                   slots, trace=trace_task(candidate), task=candidate)
    assert re.search(r'^Turn 4: .*name those by \["USR004 -> Daniel"\]', prompt, re.M)


def test_a_turn_whose_function_the_plan_swapped_may_be_written_without_the_drafts_words():
    """Rehearsal: after view_messages_sent -> get_message_stats, 'shares no word with its draft' refused
    the faithful new wording of that turn. The second trial met the same refusal on turns whose function
    was not swapped (3 refusals, contradicting "do not reuse the seed's sentences"): the check is gone."""
    drafts = ["Could you double check if the message is sent?"]
    text = ["Finally, pull up my messaging statistics so I can see where things stand."]
    values = [{"state": [], "unstated": []}]
    assert validate_rewrite({"narrative": "n", "turns": text}, drafts, [[]], values, [0]) == text
    assert validate_rewrite({"narrative": "n", "turns": text}, drafts, [[]], values, [0], swapped={0}) == text


def test_a_class_swap_is_an_option_swap_so_the_first_airport_is_no_leftover():
    """Trial 2, 0011: a plan that swapped first -> economy class could never be written with 'the first airport'
    (a position cue): the class change was a rename, and 'first' anywhere in the text a leftover name."""
    from rods_agents.analysis.variant_quality import leftover_names
    from rods_agents.llm.backbone import positional_changes

    seed = ["book_flight(access_token='t', card_id='c', travel_date='2026-01-01', travel_from='SFO', travel_to='ORD', "
            "travel_class='first')"]
    plan = [seed[0].replace("'first'", "'economy'")]
    renames, _, swaps, _ = positional_changes([seed], [plan])
    assert swaps == {"first": "economy"} and renames == {}
    seed_task = bfcl_task("multi_turn_base_152")
    text = [[Message(role="user", content="Fly me from the first airport on the list, economy class.")]]
    variant = seed_task.model_copy(update={"turns": text, "ground_truth": [plan]})
    assert leftover_names(variant, renames) == []


def test_only_results_a_later_value_derives_from_are_marked():
    """Trial 3: every call was marked 'a later value derives from this' where a composed value matched no result."""
    from rods_agents.llm.prompting import ground_truth_text

    text = ground_truth_text(bfcl_task("multi_turn_base_18"))  # nine calls, a tweet composed in the user's words
    assert "[a later value derives from this]" not in text
    marked = [line for line in ground_truth_text(bfcl_task("multi_turn_base_90")).splitlines() if "derives" in line]
    # the zip codes estimate_distance reads, the tweet whose id mention reads
    assert [line.split("(")[0].strip() for line in marked] == ["get_zipcode_based_on_city", "get_zipcode_based_on_city",
                                                                "post_tweet"]


def test_the_fare_rule_the_prompt_states_is_the_environments():
    """Trial 3: the prompt's fare rule left out the date factor, so planned fares missed by a factor of two."""
    from envs.executor import Environment
    from rods_agents.analysis import knowledge

    rule = json.dumps(knowledge.table("preconditions"))
    assert "digits of the travel date add up to an even number" in rule
    env = Environment(["TravelAPI"], {})
    fare = {d: json.loads(env.execute(f"get_flight_cost(travel_from='SFO', travel_to='LAX', travel_date='{d}', "
                                      "travel_class='first')"))["travel_cost_list"][0] for d in ("2026-11-15", "2026-11-16")}
    assert fare["2026-11-15"] == 2 * fare["2026-11-16"]  # digit sums 18 (even) and 19 (odd)


def test_the_drafts_own_plan_keeps_the_drafts_state():
    """long_context_41: the offline draft renames Bob, whom only MessageAPI's default user map knows, and writes the
    renamed map into its config. A model answering the draft's own plan got the seed's config with the rename
    applied, which has no user map: get_user_id(user='Nikhil') failed, and every sample went to the patch agent."""
    from rods_agents.run.runtime import rng_for
    from rods_agents.stages.plan_sampling import sample_variant_plan

    seed, trace, profile = _seed("multi_turn_long_context_41")
    draft = sample_variant_plan(seed, profile, trace, rng_for(0, seed.id, 0, 0))
    moved = [o for o in draft.renames if o not in json.dumps(seed.initial_config)]
    assert moved, draft.renames  # a rename of a default the seed's config does not list
    answer = {"turns": plan_json(draft.ground_truth), "new_values": [],
              "renames": [{"old": o, "new": n} for o, n in draft.renames.items()]}
    plan = validate_plan(answer, seed, draft)
    assert plan.initial_config == draft.initial_config
    assert not trace_task(seed.model_copy(update={"ground_truth": plan.ground_truth,
                                                  "initial_config": plan.initial_config})).errors


# ----------------------------------------------------------------------------- trial 4 (seeds drawn with --seed 2027)
def test_the_seeds_own_argument_type_passes_where_the_schema_says_another():
    """Trial 4, requests 0014-0016: base_173 closes ticket 'ticket_001' through ``close_ticket(ticket_id: int)``, and
    the plan validator refused the seed's own call ('str is not integer') three times, so the scenario yielded nothing.
    A value of the type the seed's own call passes there is accepted; another type still is not."""
    seed = bfcl_task("multi_turn_base_173")
    draft = Plan(ground_truth=seed.ground_truth, initial_config=seed.initial_config)
    plan = validate_plan({"turns": plan_json(seed.ground_truth), "renames": [], "new_values": []}, seed, draft)
    assert any("close_ticket(ticket_id='ticket_001')" in c.replace(" ", "") or "ticket_001" in c
               for t in plan.ground_truth for c in t if c.startswith("close_ticket"))
    turns = json.loads(json.dumps(plan_json(seed.ground_truth)).replace('\\"ticket_001\\"', "[1]"))
    with pytest.raises(ValueError, match="close_ticket.ticket_id: list is not integer"):
        validate_plan({"turns": turns, "renames": [], "new_values": []}, seed, draft)


def test_a_list_entry_and_a_key_with_parentheses_can_be_given_new_values():
    """Trial 4, requests 0015, 0019-0023 and 0034: 'TicketAPI.ticket_queue.0.id' was 'no such field' and 'crosses a
    non-object', and 'TradingBot.stocks.NVDA.MA(5)' not a path at all, so neither the planner nor the patch agent could
    change a ticket or a moving average. A number indexes a list; a key is written as it is."""
    import copy

    from rods_agents.llm.backbone import _apply_new_value, apply_proposal
    from rods_agents.llm.schemas import ConfigPatchProposal

    seed = bfcl_task("multi_turn_base_173")
    config = copy.deepcopy(seed.initial_config)
    queue = config["TicketAPI"]["ticket_queue"]
    _apply_new_value(config, "TicketAPI.ticket_queue.0.status", "In Progress", seed.involved_classes)
    apply_proposal(config, ConfigPatchProposal(cls="TicketAPI", path="ticket_queue.0.priority", value=5),
                   seed.involved_classes)
    assert queue[0]["status"] == "In Progress" and queue[0]["priority"] == 5
    with pytest.raises(ValueError, match="no such"):
        apply_proposal(config, ConfigPatchProposal(cls="TicketAPI", path=f"ticket_queue.{len(queue)}.id", value=5),
                       seed.involved_classes)
    trading = bfcl_task("multi_turn_base_108")
    config = copy.deepcopy(trading.initial_config)
    symbol = next(s for s, v in config["TradingBot"]["stocks"].items() if "MA(5)" in v)
    _apply_new_value(config, f"TradingBot.stocks.{symbol}.MA(5)", 101.5, trading.involved_classes)
    assert config["TradingBot"]["stocks"][symbol]["MA(5)"] == 101.5
    # the planner is told so up front, and that paths are read after its renames (request 0001 learnt it by refusal)
    _, trace, profile = _seed("multi_turn_base_173")
    prompt = " ".join(render_plan_prompt(seed, profile, trace, seed.ground_truth, {}).split())
    assert "a number indexes a list entry" in prompt and "a renamed entry is addressed by its new name" in prompt


def test_a_free_text_the_llm_planned_is_not_replaced_by_an_offline_drafts_own():
    """Trial 4, requests 0002-0006: the LLM planned base_197's support message ('a lost bag in Boston'), and the
    offline drafts' donor describing a text of its own ('seats next to each other') replaced it in the ground truth,
    so both variants of the seed asked support for the same seat request. The plan's texts stay the LLM's."""
    seed = bfcl_task("multi_turn_base_197")
    message = "My checked bag never arrived in Boston; please trace it for me."

    def script(prompt: str) -> AIMessage:
        if "## Draft plan" in prompt:
            draft = json.loads(prompt.split("\n## Draft plan", 1)[1].split("\n", 2)[1])
            for call in (c for turn in draft["turns"] for c in turn if c["name"] == "contact_customer_support"):
                for arg in call["arguments"]:
                    if arg["name"] == "message":
                        arg["value_json"] = json.dumps(message)
            return _tool(draft, "PlanProposal")
        return capable_rewrite(prompt)

    model = ScriptedChatModel(messages=iter([]), script=script)
    synthesize([seed], _ctx(model, ["plan", "rewrite"], variants_per_seed=2, max_plan_attempts=1))
    rewrites = [p for p in model.prompts if "Drafts:" in p]  # each shows the ground truth the words are written for
    support = [m.group(0) for p in rewrites for m in re.finditer(r"contact_customer_support\(.*", p)]
    assert len(rewrites) >= 2 and support and all(message in c for c in support), support


def test_the_plan_prompt_says_which_airports_a_booking_takes():
    """Trial 4, request 0018: the planner priced JFK -> PVG (get_flight_cost's fare table prices it), and book_flight
    refused it ('Invalid destination airport code: PVG'): the booking checks its codes against list_all_airports(),
    which the prompt never showed. The catalog line of a method that checks against another method's literal list
    now lists it."""
    seed, trace, profile = _seed("multi_turn_base_173")
    prompt = render_plan_prompt(seed, profile, trace, seed.ground_truth, {})
    line = next(x for x in prompt.splitlines() if x.startswith("book_flight("))
    airports = line.split("checked against list_all_airports():", 1)[1]
    assert "PEK" in airports and "JFK" in airports and "PVG" not in airports


def test_the_judge_is_not_told_a_long_context_task_is_not_one():
    """Trial 5, requests 0006 and 0034: long_context_68's loader adds nothing to VehicleControlAPI's or TwitterAPI's
    state, and the judge read '(no padding: not a long-context task)' for a task of that category."""
    seed, trace, profile = _seed("multi_turn_long_context_68")
    prompt = render_judge_prompt(seed, profile, trace, seed, trace)
    assert "not a long-context task" not in prompt and "a long-context task whose loader adds nothing" in prompt
    base, base_trace, base_profile = _seed("multi_turn_base_68")
    assert "not a long-context task" in render_judge_prompt(base, base_profile, base_trace, base, base_trace)


def test_the_plan_prompt_states_the_rules_trial_5_learnt_from_refusals():
    """Trial 5, requests 0036/0037 and 0064/0066 (42.5 gallons and 12 shares refused as round_made_odd) and 0001-0005
    (a tire check's healthy flag that flipped): the verdict's rules, stated in the plan prompt up front."""
    seed, trace, profile = _seed("multi_turn_long_context_68")
    prompt = " ".join(render_plan_prompt(seed, profile, trace, seed.ground_truth, {}).split())
    assert "A round number the user states stays as round" in prompt and "tire check's healthy flag" in prompt


def test_the_planner_is_told_the_company_of_each_stock_it_may_use():
    """Trial 5, request 0064: base_107 names its stock by company ('Zeta Corp'), and the planner had to guess what the
    user would call QUAS, which only the rewrite prompt was told ('QUAS -> Quasar Ltd.'). The plan prompt's renamable
    values give the company of the seed's stock and of each other one it may use."""
    seed, trace, profile = _seed("multi_turn_base_107")
    ticker = next(e for e in renamable_values(seed)["task_entities"] if e["value"] == "ZETA")
    assert ticker["company_names"]["ZETA"] == "Zeta Corp" and ticker["company_names"]["QUAS"] == "Quasar Ltd."
    assert set(ticker["others_of_its_kind"]) <= set(ticker["company_names"])
    assert "Quasar Ltd." in render_plan_prompt(seed, profile, trace, seed.ground_truth, {})


def test_the_rewrite_is_told_which_call_the_seed_asks_for_only_by_its_goal():
    """Trial 6, requests 0064-0077: miss_param_82 asks for the tire check only by its goal ('tires need to be in top-notch
    condition'). Only the plan prompt's keep line said so ('asked_by_goal_only'); the rewrite wrote 'check whether my
    tires are in top-notch condition', the verdict refused it as goal_made_named three times, and the sample was lost
    after 8 calls. The rewrite prompt's structure block now names the call and says to keep it a goal."""
    seed, trace, profile = _seed("multi_turn_miss_param_82")
    slots = [t for t, m in enumerate(seed.turns) if m]
    prompt = render_rewrite_prompt(seed, profile, trace, seed.ground_truth, [seed.turns[t][0].content for t in slots],
                                   slots)
    line = next(x for x in prompt.splitlines() if x.startswith("Turn 1: asked for"))
    assert re.search(r"only by its goal, never by words naming the step[^;]*: check_tire_pressure", line), line
    assert "find_nearest_tire_shop" not in line.split("only by its goal", 1)[1].split(";", 1)[0]


def test_a_result_rounded_up_for_the_file_still_flows_from_the_result():
    """Trial 6, request 0058: a mean of 301.67 written to a file as '302' was refused as data_flow_dropped, since only a
    value whose digits stand in the result counted as read off it (the seed's '3333' from 3333.33 did); the planner had
    to pick numbers whose rounding truncates. A whole number the result rounds to (half up) now reads as that call's."""
    from rods_agents.analysis.value_sources import _numbers, classify_scalar

    results = ['{"result": 301.6666666666667}']
    def source(v):
        return classify_scalar(v, "", set(), results, [_numbers(r) for r in results], set(), set(), [])
    assert source("302") == ("call", 0)
    assert source("301") == ("call", 0)  # its digits stand in the result
    assert source("303") == ("composed", None)


def test_a_sentence_kept_from_the_seed_is_a_fault_of_the_words():
    """Trial 6, requests 0026 and 0058-0059: 'novelty:seed_sentence_kept' (a sentence the seed's reworded word for word)
    went to the planner, who cannot change words, and the rewrite after the re-plan was not told of it. It is a text
    fault now: alone it goes back to the rewrite with the plan kept, and beside a plan fault the next rewrite hears it."""
    from rods_agents.stages.replan import is_text_fault, text_faults_only, text_feedback

    kept = "novelty:seed_sentence_kept turn=1 text='round it to the nearest whole number and write it into a new file'"
    assert is_text_fault(kept) and is_text_fault("novelty:seed_turn_kept turn=2 text='...'")
    assert text_faults_only([kept])
    mixed = ["skill_profile:data_flow_dropped turn=1 call=echo.content", kept]
    assert not text_faults_only(mixed)
    feedback = text_feedback(mixed)
    assert kept in feedback and "data_flow_dropped" not in feedback and "words and an order of your own" in feedback


def test_the_plan_prompt_says_the_drafts_own_renames_may_stay_and_the_validator_agrees():
    """Trial 6 (requests 0001, 0005, 0018, 0044): the draft renamed values the prompt's table marks renamable=false
    (USR003 in base_33), and the answerer could not tell which to follow. The prompt now says a draft rename may stay
    as it is; the validator takes exactly that rename and refuses any other rename of the value."""
    seed, trace, profile = _seed("multi_turn_base_33")
    fixed = {e["value"] for e in renamable_values(seed)["task_entities"] if not e["renamable"]}
    assert "USR003" in fixed
    draft = Plan(ground_truth=seed.ground_truth, initial_config=seed.initial_config, renames={"USR003": "USR009"})
    prompt = render_plan_prompt(seed, profile, trace, draft.ground_truth, draft.renames)
    assert "a rename it makes may be kept as it is, even of a value listed as\nrenamable=false" in prompt
    turns = json.loads(json.dumps(plan_json(seed.ground_truth)).replace("USR003", "USR009"))
    plan = validate_plan({"turns": turns, "renames": [{"old": "USR003", "new": "USR009"}], "new_values": []}, seed, draft)
    assert plan.renames.get("USR003") == "USR009"
    other = json.loads(json.dumps(plan_json(seed.ground_truth)).replace("USR003", "USR010"))
    with pytest.raises(ValueError, match="knows it by name"):
        validate_plan({"turns": other, "renames": [{"old": "USR003", "new": "USR010"}], "new_values": []}, seed, draft)


def test_a_login_no_text_or_lookup_gives_is_a_value_the_rewrite_must_state():
    """Trial 7, requests 0063-0084: miss_param_188 logs in to Twitter with a password neither its text nor its state
    gives. The rewrite was told to leave it unsaid while the offline draft stated it (variation/unsaid_ids.py), and an
    honest judge refused every candidate as underivable: 22 calls, both variants lost. The seed's gap slots are now
    values the rewrite must state, with no 'name it by' hint, and the verdict takes them as filling the gap."""
    from rods_agents.analysis.seed_gaps import seed_gaps

    seed, trace, profile = _seed("multi_turn_miss_param_188")
    gaps = seed_gaps(seed)
    assert gaps == {"turn 5 authenticate_twitter.username", "turn 5 authenticate_twitter.password"}
    # trial 8: a value the rules find no recipe for but a reader works out is no gap (a fill in gallons from liters, a
    # date said as 'the 15th of next month', a message the user describes): stating it would be easier
    for other in ("multi_turn_long_context_81", "multi_turn_base_190", "multi_turn_base_187", "multi_turn_long_context_33"):
        assert seed_gaps(_seed(other)[0]) == frozenset(), other
    values = values_by_turn(profile, seed.ground_truth, trace, seed, gaps)
    assert {"michael_smith", "michael_cant_smith_smith"} <= set(values[5]["state"])
    assert not {"michael_smith", "michael_cant_smith_smith"} & set(values[5]["unstated"])
    assert not any("michael_smith" in h for h in values[5].get("hints", []))
    slots = [t for t, m in enumerate(seed.turns) if m]
    prompt = render_rewrite_prompt(seed, profile, trace, seed.ground_truth, [seed.turns[t][0].content for t in slots],
                                   slots)
    assert re.search(r"^Turn 6: .*must state.*michael_cant_smith_smith", prompt, re.M), prompt[-3000:]


def test_an_llm_plan_keeps_the_drafts_drawn_ids():
    """Trial 7 (requests 0003-0006, 0011-0014, 0035-0038, 0043-0046): the draft plan books and cancels with the booking
    id its own TravelAPI seed draws (state_resample.shift_counters); an LLM plan that changes anything else was built
    from the seed's config, so the same booking came out 3426812 and the draft's cancel failed: 16 patch calls that
    could not mend it. An LLM plan now starts from the draft's counters and TravelAPI seed too."""
    from rods_agents.run.runtime import rng_for
    from rods_agents.stages.plan_sampling import sample_variant_plan
    from rods_agents.variation.state_resample import drawn_id_changes

    seed, trace, profile = _seed("multi_turn_base_181")
    draft = next(p for a in range(8) if "TravelAPI.random_seed" in drawn_id_changes(
        (p := sample_variant_plan(seed, profile, trace, rng_for(3, seed.id, a, 0))).state_changes))
    booked = next(c for turn in draft.ground_truth for c in turn if c.startswith("cancel_booking("))
    turns = plan_json(draft.ground_truth)
    # the LLM changes one thing the draft did not: the ticket's title, keeping every other value of the draft
    for call in (c for turn in turns for c in turn if c["name"] == "create_ticket"):
        for arg in call["arguments"]:
            if arg["name"] == "title":
                arg["value_json"] = json.dumps("Refund for a cancelled flight")
    renames = [{"old": o, "new": n} for o, n in draft.renames.items()]
    plan = validate_plan({"turns": turns, "renames": renames, "new_values": []}, seed, draft)
    assert booked in [c for turn in plan.ground_truth for c in turn]
    assert plan.initial_config["TravelAPI"]["random_seed"] == draft.initial_config["TravelAPI"]["random_seed"]
    probe = seed.model_copy(update={"ground_truth": plan.ground_truth, "initial_config": plan.initial_config})
    assert not trace_task(probe).errors, [e.error for e in trace_task(probe).errors]


def test_the_judge_is_told_which_stated_values_fill_the_seeds_gaps():
    """Trial 8, requests 0015-0024: the rewrite stated miss_param_173's ticket id, which it must (the seed leaves no way
    to find it), and the judge refused it as easier four times, both variants lost. The judge prompt now lists the
    seed's gaps and says stating one is not easier."""
    seed, trace, profile = _seed("multi_turn_miss_param_173")
    prompt = render_judge_prompt(seed, profile, trace, seed, trace)
    gaps = prompt.split("## The seed's gaps", 1)[1].split("\n## ", 1)[0]
    assert "close_ticket.ticket_id = \"ticket_001\"" in gaps, gaps
    assert "fills the seed's gap: that is\n   not easier" in prompt
    other, other_trace, other_profile = _seed("multi_turn_base_75")
    assert "(none)" in render_judge_prompt(other, other_profile, other_trace, other, other_trace).split(
        "## The seed's gaps", 1)[1].split("\n## ", 1)[0]


def test_the_judge_is_told_when_the_environment_fixes_every_entity():
    """Trial 9, requests 0011-0029: miss_func_94's car has no entity a plan may change (the tire shop, doors and
    ignition modes are the environment's code), and the judge refused all six candidates as 'changes only in digits'
    (19 calls, both variants lost). The novelty facts say when the environment fixes every entity, and the prompt
    says that there new numbers told in new words are new; a seed with entities to change is not marked."""
    seed, trace, profile = _seed("multi_turn_miss_func_94")
    prompt = render_judge_prompt(seed, profile, trace, seed, trace)
    novelty = json.loads(prompt.split("## Novelty (measured)", 1)[1].strip())
    assert novelty["entities_fixed_by_environment"] is True
    assert "there the numbers\n   are the entities" in prompt
    other, other_trace, other_profile = _seed("multi_turn_base_143")
    other_prompt = render_judge_prompt(other, other_profile, other_trace, other, other_trace)
    assert json.loads(other_prompt.split("## Novelty (measured)", 1)[1].strip())[
        "entities_fixed_by_environment"] is False


def test_the_draft_in_the_plan_prompt_shows_the_counters_it_drew():
    """Trial 9, requests 0001, 0004, 0007: the draft placed order 12475 while the state showed order_counter 12446 and
    the draft's new_values were empty, so the planner could not tell where the id came from and set counters of its
    own. The draft's new_values now hold the counters it drew, which every LLM plan keeps."""
    from rods_agents.run.runtime import rng_for
    from rods_agents.stages.plan_sampling import sample_variant_plan
    from rods_agents.variation.state_resample import drawn_id_changes

    seed, trace, profile = _seed("multi_turn_base_128")
    draft = next(p for a in range(8) if drawn_id_changes(
        (p := sample_variant_plan(seed, profile, trace, rng_for(3, seed.id, a, 0))).state_changes))
    prompt = render_plan_prompt(seed, profile, trace, draft.ground_truth, draft.renames, None, draft.state_changes)
    shown = json.loads(prompt.split("## Draft plan", 1)[1].split("\n", 2)[1])
    counters = {v["path"]: json.loads(v["value_json"]) for v in shown["new_values"]}
    assert counters == drawn_id_changes(draft.state_changes) and counters, counters
    order = counters["TradingBot.order_counter"]
    assert any(f"order_id={order}" in c for turn in draft.ground_truth for c in turn)


def test_a_stock_the_llm_plan_changes_takes_its_company_name_along():
    """Trial 9, requests 0002, 0005, 0008: the plan bought TSLA where base_128 buys MSFT, and the drafts kept '150
    Microsoft shares' (MSFT is a stock the environment knows, so no rename carries it). A changed stock's company name
    is swapped into the seed's words as the offline plan's stock swaps are."""
    from rods_agents.run.runtime import rng_for
    from rods_agents.stages.coherence_rewrite import carry_plan
    from rods_agents.stages.plan_sampling import sample_variant_plan

    seed, trace, profile = _seed("multi_turn_base_128")
    draft = sample_variant_plan(seed, profile, trace, rng_for(3, seed.id, 0, 0))
    turns = plan_json(seed.ground_truth)
    for call in (c for turn in turns for c in turn):
        for arg in call["arguments"]:
            if arg["name"] == "symbol":
                arg["value_json"] = json.dumps("TSLA")
            if arg["name"] == "price":
                arg["value_json"] = json.dumps(667.92)
    plan = validate_plan({"turns": turns, "renames": [], "new_values": [
        {"path": "TradingBot.account_info.balance", "value_json": "150000.0"}]}, seed, draft)
    assert plan.swaps.get("Microsoft") == "Tesla", plan.swaps
    words = " ".join(m.content for turn in carry_plan(seed, plan) for m in turn)
    assert "Tesla" in words and "Microsoft" not in words


def test_a_changed_fill_leaves_a_threshold_of_the_same_number_alone():
    """Trial 9, requests 0056-0060: base_84 fills '30 gallons' and checks 'less than 30.0 psi'; a plan filling 25
    gallons drafted 'less than 25 psi' too, a threshold the tires then no longer fail. The LLM plan's numbers are keyed
    by the unit the calls' turn says them with, as the offline plan's are."""
    from rods_agents.run.runtime import rng_for
    from rods_agents.stages.coherence_rewrite import carry_plan
    from rods_agents.stages.plan_sampling import sample_variant_plan

    seed, trace, profile = _seed("multi_turn_base_84")
    draft = sample_variant_plan(seed, profile, trace, rng_for(3, seed.id, 0, 0))
    turns = plan_json(seed.ground_truth)
    for arg in turns[0][0]["arguments"]:
        arg["value_json"] = "25"
    plan = validate_plan({"turns": turns, "renames": [], "new_values": []}, seed, draft)
    words = [" ".join(m.content for m in turn) for turn in carry_plan(seed, plan)]
    assert "25 gallons" in words[0] and "30.0 psi" in words[1], words


def test_the_structure_block_quotes_the_seeds_cues_with_the_plans_values():
    """Trial 9, requests 0002, 0008, 0012: the rewrite was told to keep the cue '150' for a plan buying 100 shares, and
    the condition cue 'top off the fuel tank with 30 gallons' for a fill of 25. The cues now carry the plan's values;
    a number the seed also states as a limit ('less than 30.0 psi' beside '30 gallons') stays."""
    from rods_agents.llm.prompting import information_structure_of, structure_text

    seed, trace, profile = _seed("multi_turn_base_128")
    plan = _swap(seed.ground_truth, 1, 1, "place_order(order_type='Buy',symbol='MSFT',price=310.23,amount=100)")
    block = structure_text(information_structure_of(seed, trace), profile, seed.ground_truth, plan)
    assert "(cue: '100')" in block and "'150'" not in block, block
    seed, trace, profile = _seed("multi_turn_miss_func_94")
    plan = _swap(seed.ground_truth, 0, 1, "fillFuelTank(fuelAmount=25.0)")
    block = structure_text(information_structure_of(seed, trace), profile, seed.ground_truth, plan)
    assert "with 25 gallons" in block and "below the 40 PSI mark" in block and "limits: [40.0]" in block, block


def test_the_function_a_miss_func_task_holds_out_is_never_offered_or_taken_as_a_swap():
    """Trial 10, requests 0055-0067: miss_func_115's profile offered remove_stock_from_watchlist for add_to_watchlist,
    the function the task holds out until turn 3; the swapped plan left turn 2 answerable and the judge refused it
    (gt_unfixable). The profile says the held-out function stays, and a plan that swaps it is refused at once."""
    from rods_agents.llm.prompting import profile_text
    from rods_agents.run.runtime import rng_for
    from rods_agents.stages.plan_sampling import sample_variant_plan

    seed, trace, profile = _seed("multi_turn_miss_func_115")
    text = profile_text(seed, profile, trace)
    line = next(x for x in text.splitlines() if "add_to_watchlist" in x)
    assert "holds out: keep it" in line and "may be swapped" not in line, line
    draft = sample_variant_plan(seed, profile, trace, rng_for(3, seed.id, 0, 0))
    turns = plan_json(seed.ground_truth)
    turns[2][0]["name"] = "remove_stock_from_watchlist"
    turns[2][0]["arguments"] = [{"name": "symbol", "value_json": json.dumps("AMZN")}]
    with pytest.raises(ValueError, match="holds out"):
        validate_plan({"turns": turns, "renames": [], "new_values": []}, seed, draft)
