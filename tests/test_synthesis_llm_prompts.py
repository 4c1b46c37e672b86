"""The LLM prompts carry what a capable model needs to succeed, and every answer schema is strict-valid.

One seed per category: the plan prompt shows the seed's words, its ground truth with the results of
list- and id-producing calls, one-line function docs with preconditions and options, the initial
state as JSON with the renamable values apart, what the category means for this task, and the
reason a previous attempt was rejected; the rewrite prompt shows the seed's turns, the variant's
ground truth per turn, the values to state and to leave unsaid, and the structure to keep.
"""

from __future__ import annotations

import json
import re

import pytest

from envs.dataset import load_split
from prompts import load_prompt, placeholders
from rods_agents.analysis.profile import profile_task
from rods_agents.analysis.tracing import trace_task
from rods_agents.llm.prompting import (
    _worth_showing,
    render_judge_prompt,
    render_plan_prompt,
    render_rewrite_prompt,
    values_by_turn,
)
from rods_agents.llm.schemas import LLM_OUTPUT_SCHEMAS
from rods_agents.run.runtime import rng_for
from rods_agents.stages.plan_sampling import sample_variant_plan

TRAIN = {t.id: t for t in load_split("train")}
# one seed per category; base_14 looks a user id up and messages it (a value from an earlier result)
SEEDS = ["multi_turn_base_14", next(i for i in TRAIN if "miss_func" in i), next(i for i in TRAIN if "miss_param" in i),
         next(i for i in TRAIN if "long_context" in i)]


def _norm(text: str) -> str:
    return " ".join(text.split())


def _setup(seed_id: str):
    seed = TRAIN[seed_id]
    trace = trace_task(seed)
    profile = profile_task(seed, trace)
    plan = sample_variant_plan(seed, profile, trace, rng_for(0, seed.id, 0, 0), 0)
    return seed, trace, profile, plan


@pytest.mark.parametrize("seed_id", SEEDS)
def test_plan_prompt_holds_what_a_capable_planner_needs(seed_id):
    seed, trace, profile, plan = _setup(seed_id)
    rejection = {"attempt": 0, "reasons": ["information_structure:implicit_made_explicit"],
                 "detail": {"information_structure": [{"reason": "implicit_made_explicit", "turn": 1}]}}
    prompt = render_plan_prompt(seed, profile, trace, plan.ground_truth, plan.renames, [rejection])
    flat = _norm(prompt)
    for turn in seed.turns:  # the seed's own words, every turn
        for m in turn:
            assert _norm(m.content) in flat
    for turn in seed.ground_truth:  # its ground truth
        for call in turn:
            assert call in prompt
    shown = [r for r in trace.calls if not r.error and _worth_showing(r.result)]
    for rec in shown:  # results of list- and id-producing calls
        assert _norm(f"{rec.call} -> {rec.result}")[:120] in flat
    docs = prompt.split("## Functions", 1)[1].split("\n## ", 1)[0]
    for name in {c.split("(", 1)[0] for turn in seed.ground_truth for c in turn}:
        assert re.search(rf"^{name}\(", docs, re.M), name  # one line per function
    if "GorillaFileSystem" in seed.involved_classes:
        assert re.search(r"^cd\(folder\*: string\).*Needs: ", docs, re.M)  # preconditions
    state = prompt.split("## The initial state", 1)[1]
    assert json.dumps(seed.initial_config, sort_keys=True, default=str)[:300] in state  # structured JSON
    renamable = json.loads(state.split("renamable: ", 1)[1].split("\n", 1)[0])
    assert set(renamable) == {"task_entities", "entity_keys", "values"}
    assert renamable["task_entities"] + renamable["entity_keys"] + renamable["values"]
    category = prompt.split("## What the category means for this task", 1)[1].split("\n## ", 1)[0]
    if seed.category == "miss_param":
        (k,) = profile.miss_param_turns
        assert f"turn {k + 1} leaves out" in category and f"turn {k + 2} supplies it" in category
    elif seed.category == "miss_func":
        for reveal, names in seed.missed_function.items():
            assert all(n in category for n in names) and f"not offered before turn {reveal + 1}" in category
            assert f"Turn {reveal + 1}: (no user message: the held-out function" in prompt
    else:
        assert category.strip().startswith(seed.category)
    assert "previous plans were rejected" in prompt and "information_structure:implicit_made_explicit" in prompt
    assert "implicit_made_explicit" in prompt.split("previous plans were rejected", 1)[1]


@pytest.mark.parametrize("seed_id", SEEDS)
def test_rewrite_and_judge_prompts_hold_the_seed_reference_and_the_values(seed_id):
    seed, trace, profile, plan = _setup(seed_id)
    slots = [t for t, msgs in enumerate(seed.turns) if msgs]
    drafts = [seed.turns[t][0].content for t in slots]
    prompt = render_rewrite_prompt(seed, profile, trace, plan.ground_truth, drafts, slots)
    flat = _norm(prompt)
    for t in slots:
        assert _norm(seed.turns[t][0].content) in flat  # the seed's turns as the reference
    for t, calls in enumerate(plan.ground_truth):  # the variant's ground truth per turn
        assert f"Turn {t + 1}: " + (", ".join(calls) if calls else "(no calls)") in prompt
    values = values_by_turn(profile, plan.ground_truth)
    for t in slots:
        line = next(x for x in prompt.splitlines() if x.startswith(f"Turn {t + 1}: must state "))
        assert json.dumps(values[t]["state"], default=str) in line and json.dumps(values[t]["unstated"], default=str) in line
    assert any(v["state"] for v in values)
    structure = prompt.split("## Implicit steps, conditions, references and transformations to keep", 1)[1]
    assert re.search(r"^Turn 1: ", structure, re.M)
    if seed_id == "multi_turn_base_14":  # the looked-up id must stay unsaid
        assert any(v["unstated"] for v in values)
    # the judge sees the seed and the candidate side by side
    judge = render_judge_prompt(seed, profile, trace, seed, trace)
    seed_part, candidate_part = judge.split("## The candidate's user turns", 1)
    assert _norm(seed.turns[slots[0]][0].content) in _norm(seed_part)
    assert _norm(seed.turns[slots[0]][0].content) in _norm(candidate_part)
    assert all(c in judge for turn in seed.ground_truth for c in turn)


def test_implicit_steps_from_the_detector_are_in_the_rewrite_prompt():
    pytest.importorskip("rods_agents.analysis.information_structure")
    from rods_agents.llm.prompting import information_structure_of

    for seed_id in TRAIN:
        seed = TRAIN[seed_id]
        trace = trace_task(seed)
        data = information_structure_of(seed, trace)
        dumped = data.model_dump() if hasattr(data, "model_dump") else data
        if dumped and any(c.get("explicit") is False for t in dumped.get("turns", []) for c in t.get("calls", [])):
            break
    else:
        pytest.fail("no train seed with an implicit call")
    profile = profile_task(seed, trace)
    slots = [t for t, msgs in enumerate(seed.turns) if msgs]
    prompt = render_rewrite_prompt(seed, profile, trace, seed.ground_truth, [seed.turns[t][0].content for t in slots], slots)
    assert "implicit (left to the assistant, keep unsaid)" in prompt


@pytest.mark.parametrize("name", ["llm_plan.txt", "llm_rewrite.txt", "llm_judge.txt", "llm_config_patch.txt"])
def test_every_placeholder_of_a_prompt_template_is_filled(name):
    seed, trace, profile, plan = _setup(SEEDS[0])
    slots = [t for t, msgs in enumerate(seed.turns) if msgs]
    rendered = {
        "llm_plan.txt": lambda: render_plan_prompt(seed, profile, trace, plan.ground_truth, plan.renames, []),
        "llm_rewrite.txt": lambda: render_rewrite_prompt(seed, profile, trace, plan.ground_truth,
                                                         [seed.turns[t][0].content for t in slots], slots),
        "llm_judge.txt": lambda: render_judge_prompt(seed, profile, trace, seed, trace),
        "llm_config_patch.txt": lambda: __import__("rods_agents.llm.prompting", fromlist=["x"]).render_patch_prompt(
            seed, {"error": "Market is closed.", "call": "cd(folder='x')", "class": "GorillaFileSystem"}),
    }[name]()
    names = placeholders(load_prompt(name))
    assert names
    for field in names:
        assert "{" + field + "}" not in rendered


def _objects(schema: dict, defs: dict) -> list[tuple[str, dict]]:
    """Every object schema reachable from ``schema`` (following $refs), with its path."""
    out: list[tuple[str, dict]] = []
    seen: set[str] = set()

    def walk(node: object, path: str) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                key = ref.rsplit("/", 1)[-1]
                if key not in seen:
                    seen.add(key)
                    walk(defs[key], key)
                return
            if node.get("type") == "object" or "properties" in node or "additionalProperties" in node:
                out.append((path, node))
            for k, v in node.items():
                if k != "$defs":
                    walk(v, f"{path}.{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{path}[{i}]")

    walk(schema, "$")
    return out


@pytest.mark.parametrize("model", LLM_OUTPUT_SCHEMAS, ids=lambda m: m.__name__)
def test_every_llm_output_schema_works_under_strict_structured_output(model):
    """OpenAI strict mode (and vLLM's guided decoding of it): every object closed, every property required,
    no free-form maps. The open ``dict[str, Any]`` schemas of before were refused by strict endpoints."""
    schema = model.model_json_schema()
    objects = _objects(schema, schema.get("$defs", {}))
    assert objects
    for path, obj in objects:
        assert obj.get("additionalProperties") is False, path
        assert sorted(obj.get("required", [])) == sorted(obj.get("properties", {})), path
        for name, prop in obj.get("properties", {}).items():
            assert "default" not in prop, f"{path}.{name}"
    from openai.lib._pydantic import to_strict_json_schema

    assert to_strict_json_schema(model)  # the OpenAI client's own strict conversion accepts it
