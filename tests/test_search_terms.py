"""What the user searches the files for, and the files around it, change with the variant (issue 13).

Before, nine file-system scenarios kept their search term and its files in all eight samples: base_0's 'budget
analysis' and 'final_report.pdf', base_7's 'goal', base_18's 'History101.txt', base_28's 'error'. Each case here
runs the offline plan and the environment on the variant, so the new term is found where the old one was."""

from __future__ import annotations

import json
import random
from functools import lru_cache

from envs.dataset import load_split
from envs.executor import Environment, parse_call
from rods_agents.analysis.profile import profile_task
from rods_agents.analysis.tracing import trace_task
from rods_agents.variation.anchored_plan import anchored_plan, sibling_slot
from rods_agents.variation.seed_anchor import Substitution
from rods_agents.variation.value_kinds import pools


@lru_cache(maxsize=1)
def _train() -> dict:
    return {t.id: t for t in load_split("train")}


@lru_cache(maxsize=32)
def _plans(seed_id: str) -> tuple:
    seed = _train()[seed_id]
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    return seed, [anchored_plan(seed, profile, trace, random.Random(v), 0, slot=sibling_slot(seed.category, v))
                  for v in range(2)]


def _calls(gt: list[list[str]], name: str) -> list:
    return [parse_call(c) for turn in gt for c in turn if c.startswith(name + "(")]


def _results(seed, plan) -> list[list[str]]:
    env = Environment(seed.involved_classes, plan["initial_config"], long_context=seed.long_context)
    return [env.run(turn) for turn in plan["ground_truth"]]


def _group_of(term: str) -> list[str]:
    return next(g for g in pools()["search_terms"]["groups"] if term in g)


def test_a_searched_phrase_changes_in_the_file_that_holds_it_and_is_still_found():
    seed, plans = _plans("multi_turn_base_0")
    for plan in plans:
        pattern = _calls(plan["ground_truth"], "grep")[0].kwargs["pattern"]
        assert pattern != "budget analysis" and pattern in _group_of("budget analysis")
        state = json.dumps(plan["initial_config"])
        assert "budget analysis" not in state and pattern in state
        found = json.loads(_results(seed, plan)[1][-1])["matching_lines"]
        assert found and all(pattern in line for line in found)


def test_a_name_searched_for_renames_the_files_holding_it_inside_a_word():
    # base_7: find(name='goal') finds 'goals.txt', which the next turn reads; the whole-word substitution alone
    # would have renamed 'goal' and left 'goals.txt', so the search would find nothing
    seed, plans = _plans("multi_turn_miss_param_7")
    for plan in plans:
        name = _calls(plan["ground_truth"], "find")[0].kwargs["name"]
        assert name != "goal" and name in _group_of("goal")
        read = _calls(plan["ground_truth"], "cat")[0].kwargs["file_name"]
        assert read == f"{name}s.txt"
        results = [r for turn in _results(seed, plan) for r in turn]
        assert f"./{read}" in json.loads(results[[c for t in plan["ground_truth"] for c in t].index(
            next(c for t in plan["ground_truth"] for c in t if c.startswith("find(")))])["matches"]


def test_a_search_term_inside_a_dictated_message_is_left_to_the_message_swap():
    # base_33 sends 'update the system' after grepping for 'update': renaming the word inside the message kept the
    # seed's sentence (novelty:seed_sentence_kept) and lost the scenario's variants
    _, plans = _plans("multi_turn_base_33")
    assert all(_calls(p["ground_truth"], "grep")[-1].kwargs["pattern"] == "update" for p in plans)


def test_a_search_term_beside_a_reported_size_keeps_its_length():
    # base_28 writes du's '205 bytes' down: a longer word in the file would change the size the task records
    seed, plans = _plans("multi_turn_base_28")
    for plan in plans:
        pattern = _calls(plan["ground_truth"], "grep")[0].kwargs["pattern"]
        assert pattern != "error" and len(pattern) == len("error")
        assert _calls(plan["ground_truth"], "echo")[0].kwargs["content"] == "205 bytes"


def test_a_file_the_text_names_in_the_words_of_its_stem_is_renamed_with_them():
    # base_0: 'having final report also there' beside 'final_report.pdf'
    _, plans = _plans("multi_turn_base_0")
    for plan in plans:
        new = plan["renames"].get("final_report.pdf")
        assert new and new.endswith(".pdf")
        said = Substitution(plan["renames"]).text("and having final report also there")
        assert new.rsplit(".", 1)[0].replace("_", " ") in said


def test_files_a_turn_points_at_by_kind_are_renamed_and_stay_of_that_kind():
    # base_18: 'Copy all the text files of the 'Quarter1_Reports' directory' copies History101.txt and History202.txt
    _, plans = _plans("multi_turn_base_18")
    for plan in plans:
        copied = [c.kwargs["source"] for c in _calls(plan["ground_truth"], "cp")]
        assert "History101.txt" not in copied and "History202.txt" not in copied
        assert len(copied) == 4 and all(name.endswith(".txt") for name in copied)


def test_a_file_renamed_never_keeps_its_old_name_inside_the_new_one():
    # base_18: 'report1.txt' -> 'sales_report1.txt' left the old name inside the new (a leftover the verdict and the
    # rewrite read as the old file), once files a turn points at by kind were renamed
    seed = _train()["multi_turn_base_18"]
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    for v in range(12):
        plan = anchored_plan(seed, profile, trace, random.Random(v), 0, slot=v % 8)
        for old, new in plan.get("renames", {}).items():
            assert not Substitution({old: "\0"}).found(new), (old, new)
