"""Every literal argument of an accepted variant is obtainable, and the offline turns read well."""

from __future__ import annotations

import re

import pytest

from envs.dataset import load_split, load_tasks
from envs.task import Message
from rods_agents.analysis.obtainability import recipe, state_hints
from rods_agents.analysis.profile import profile_task
from rods_agents.analysis.tracing import CallRecord, trace_task
from rods_agents.analysis.value_sources import _dates, _numbers
from rods_agents.run.runtime import rng_for
from rods_agents.stages.coherence_rewrite import build_variant, rewrite_plan
from rods_agents.stages.plan_sampling import sample_variant_plan
from rods_agents.stages.verdict import judge


def _variant(seed_id: str, variant: int = 0):
    seed = load_tasks(ids=[seed_id])[0]
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    plan = sample_variant_plan(seed, profile, trace, rng_for(0, seed.id, variant, 0))
    task = build_variant(seed, rewrite_plan(seed, profile, plan, rng_for(1, seed.id, variant))[0], plan, variant, 0)
    return seed, profile, task


def _with_turn_text(task, turn: int, text: str):
    task = task.model_copy(deep=True)
    task.turns[turn] = [Message(role="user", content=text)]
    return task


def test_numbers_and_dates_are_read_as_a_person_writes_them():
    assert {10000.0, 2000.0, 15.0, 0.15, 50.0, 1500.5} <= _numbers("Put $10,000 in, 2k out, 15% fee, fifty, $1,500.50")
    assert 3000.0 in _numbers("three thousand dollars")
    # 'one' standing for a thing is no count: a sentence leaving it out drops no number
    assert _numbers("Use my card, it's the one with id card_4206. Which one?") == set()
    assert 1.0 in _numbers("Buy one share") and 1.0 in _numbers("one more gallon")
    assert {"2026-11-10", "12/2025"} <= _dates("on November 10th, 2026 with a card expiring 12/25")
    assert "2026-12-24" in _dates("We start off on the 24th of December 2026")


def test_seed_amount_in_dollars_is_stated_not_composed():
    seed = load_tasks(ids=["multi_turn_base_116"])[0]
    fund = [a for a in profile_task(seed).arg_sources if a.method == "fund_account"]
    assert fund and all(a.source == "user" for a in fund)  # "$10,000" states 10000


def test_vague_amount_with_no_recipe_is_rejected_as_unobtainable():
    seed, profile, task = _variant("multi_turn_base_116")
    turn = next(t for t, calls in enumerate(task.ground_truth) if any(c.startswith("fund_account") for c in calls))
    vague = _with_turn_text(task, turn, "Next: put the amount you can work out from what we have so far into my "
                                        "trading account.")
    reasons, detail = judge(vague, seed, profile, trace_task(vague))
    # the reason names the turn, the call and the parameter (issue 13)
    assert any(r.startswith(f"unobtainable_value:no_recipe turn={turn} call=fund_account param=amount") for r in reasons), \
        (reasons, detail)
    assert any("fund_account.amount" in u for u in detail["unobtainable"])


def test_file_found_by_exploring_needs_a_unique_hint_in_the_text():
    seed, profile, task = _variant("multi_turn_base_17")
    trace = trace_task(task)
    reasons, _ = judge(task, seed, profile, trace)
    assert not [r for r in reasons if r.startswith("unobtainable_value")], reasons
    cat = next(r for r in trace.calls if r.name == "cat")
    text = task.turns[cat.turn][0].content
    hints = state_hints(cat.args["file_name"], cat, {}, "file")
    assert hints and any(h.phrase.lower() in text.lower() for h in hints), text  # the hint is in the turn
    vague = _with_turn_text(task, cat.turn, "Then go into the project folder and show me what is inside the right "
                                            "file (check what is there).")
    reasons, detail = judge(vague, seed, profile, trace_task(vague))
    assert any(r.startswith(f"unobtainable_value:no_hint turn={cat.turn} call=cat param=file_name") for r in reasons), \
        (reasons, detail)


def test_fs_hints_are_unique_among_siblings():
    rec = CallRecord(turn=0, index=0, call="cat(file_name='a_report.pdf')", name="cat", cls="GorillaFileSystem",
                     siblings={"a_report.pdf": "file", "b_report.txt": "file", "notes": "directory"})
    hints = state_hints("a_report.pdf", rec, {}, "file")
    kinds = {h.kind: h.phrase for h in hints}
    assert kinds.get("extension") == ".pdf"
    assert "report" not in kinds.values()  # 'report' also names b_report.txt: not a hint
    rec2 = rec.model_copy(update={"siblings": {"a_report.pdf": "file", "b_report.pdf": "file"}})
    assert all(h.kind != "extension" for h in state_hints("a_report.pdf", rec2, {}, "file"))


def test_the_alphabetically_first_file_and_both_files_of_a_pair_are_singled_out_and_renames_keep_the_order():
    # base_13: 'It's alphabetically first file in that directory' (report.txt beside summary.txt) and 'review both
    # files in this directory': without these hints the two files could never be renamed, and every sample of
    # scenario 13 was the seed again. A rename keeps the pick true: the new names keep the old names' order
    from rods_agents.analysis.obtainability import state_obtainable
    from rods_agents.variation.anchored_plan import anchored_plan, sibling_slot

    rec = CallRecord(turn=0, index=0, call="tail(file_name='report.txt')", name="tail", cls="GorillaFileSystem",
                     siblings={"report.txt": "file", "summary.txt": "file"})
    assert state_obtainable("report.txt", rec, {}, "It's the alphabetically first file in that directory.")
    assert not state_obtainable("summary.txt", rec, {}, "It's the alphabetically first file in that directory.")
    assert state_obtainable("summary.txt", rec, {}, "Review both files in this directory.")
    seed = load_tasks(ids=["multi_turn_base_13"])[0]
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    renamed = 0
    for v in range(6):
        plan = anchored_plan(seed, profile, trace, rng_for(3, seed.id, v, 0), 0, slot=sibling_slot(seed.category, v))
        first, second = re.findall(r"file_name\d='([^']+)'", plan["ground_truth"][1][0])
        assert re.search(rf"tail\(file_name='{re.escape(first)}'", plan["ground_truth"][0][1]) and first < second
        renamed += first != "report.txt"
    assert renamed >= 3


def test_composed_values_need_obtainable_pieces():
    assert recipe("Kelly Total Score: 96", "send Kelly her total score", ['{"content": "Score: 96"}'], {}, "send_message")
    assert recipe("Kelly Total Score: 96", "send Kelly her total score", ['{"content": "nothing"}'], {},
                  "send_message") is None
    r = recipe(40.0, "fill it up", ['{"fuelLevel": 10.0}'], {}, "fillFuelTank")  # 50 (tool doc) - 10 (result)
    assert r is not None and r.kind == "arithmetic"
    assert recipe("2026-11-10", "some day", [], {}, "book_flight") is None


_BAD = [re.compile(p, re.I) for p in (r"\b(\w+) \1\b", r"\ba the\b", r"\ban the\b", r"\{\w*\}", r"[{}]",
                                       r"check what is there", r"work out from what we have so far")]


@pytest.mark.slow  # plans and re-words all 400 train seeds: about a minute on one core, in four parts that the
@pytest.mark.parametrize("category", ["base", "miss_func", "miss_param", "long_context"])  # test workers share
def test_rendered_turns_read_well_for_every_train_seed(category):
    bad: list[str] = []
    for seed in [s for s in load_split("train") if s.category == category]:
        trace = trace_task(seed)
        profile = profile_task(seed, trace)
        plan = sample_variant_plan(seed, profile, trace, rng_for(0, seed.id, 0, 0))
        turns = rewrite_plan(seed, profile, plan, rng_for(1, seed.id, 0))[0]
        texts = [m.content for turn in turns for m in turn]
        for text in texts:
            # doubled numbers ('1 1') and quoted values may repeat legitimately; words may not
            scrubbed = re.sub(r"'[^']*'", "'v'", text)
            for pat in _BAD:
                m = pat.search(scrubbed)
                if m and not m.group(0).isdigit() and not re.fullmatch(r"(\d+) \1", m.group(0)):
                    bad.append(f"{seed.id}: {m.group(0)!r} in {text!r}")
        # seed-anchored: one variant turn per seed turn, empty exactly where the seed's is (miss_func reveals)
        assert [bool(t) for t in turns] == [bool(t) for t in seed.turns], seed.id
    assert not bad, bad[:10]
