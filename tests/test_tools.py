"""Tool schemas are exactly what BFCL sends a model, turn by turn (incl. miss_func reveals)."""

from __future__ import annotations

import json

import pytest

from envs.bfcl_data import CATEGORIES
from envs.tools import held_out, tool_names, tools_for_turn

from .conftest import import_bfcl_model_utils


@pytest.fixture(scope="module")
def bfcl_tooling():
    """BFCL's own loader (functions per entry, held-out docs) and ``convert_to_tool``."""
    utils = import_bfcl_model_utils()
    from bfcl_eval.constants.enums import ModelStyle
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
    from bfcl_eval.utils import load_dataset_entry

    entries = {e["id"]: e for c in CATEGORIES for e in load_dataset_entry(f"multi_turn_{c}")}

    def convert(functions):
        return utils.convert_to_tool(functions, GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS)

    return entries, convert


def bfcl_functions_at(entry: dict, turn: int) -> list[dict]:
    """BFCL's ``entry["function"]`` during turn ``turn`` (held-out docs appended at their reveal)."""
    functions = list(entry["function"])
    for t in range(turn + 1):
        functions.extend(entry.get("missed_function", {}).get(str(t), []))
    return functions


def test_tools_equal_bfcl_convert_to_tool_before_any_reveal(bfcl_tasks, bfcl_tooling):
    entries, convert = bfcl_tooling
    for task in bfcl_tasks:
        first_reveal = min(task.missed_function, default=len(task.turns))
        for turn in range(first_reveal):
            assert tools_for_turn(task, turn) == convert(bfcl_functions_at(entries[task.id], turn)), (task.id, turn)


def test_tools_equal_bfcl_convert_to_tool_from_the_reveal_on(bfcl_tasks, bfcl_tooling):
    """BFCL appends the held-out docs at the reveal turn *without* the Python-3 hint.

    ``add_language_specific_hint_to_function_doc`` runs on ``entry["function"]`` after
    ``populate_test_cases_with_predefined_functions`` has moved the held-out docs into
    ``missed_function``, so those docs never get the hint.
    """
    entries, convert = bfcl_tooling
    bad = []
    for task in bfcl_tasks:
        for turn in range(min(task.missed_function, default=len(task.turns)), len(task.turns)):
            if tools_for_turn(task, turn) != convert(bfcl_functions_at(entries[task.id], turn)):
                bad.append((task.id, turn))
    assert not bad, f"{len(bad)} (task, turn) tool lists differ from BFCL's, e.g. {bad[:3]}"


def test_spec_example_fill_fuel_tank(bfcl_tasks):
    task = next(t for t in bfcl_tasks if t.category == "base" and "VehicleControlAPI" in t.involved_classes)
    tool = next(t for t in tools_for_turn(task, 0) if t["function"]["name"] == "fillFuelTank")
    fn = tool["function"]
    assert tool["type"] == "function"
    assert fn["description"].endswith("The fuel tank can hold up to 50 gallons. Note that the provided function is in Python 3 syntax.")
    assert fn["parameters"] == {
        "type": "object",
        "properties": {"fuelAmount": {
            "type": "number",
            "description": "The amount of fuel to fill in gallons; this is the additional fuel to add to the tank. "
                           "This is a float type value.",
            "format": "float"}},
        "required": ["fuelAmount"],
    }
    json.dumps(tool)  # plain JSON, sendable as is


def test_held_out_functions_absent_before_reveal_and_present_from_it(bfcl_tasks):
    miss = [t for t in bfcl_tasks if t.category == "miss_func"]
    assert len(miss) == 200
    for task in miss:
        (reveal, names), = task.missed_function.items()
        for turn in range(len(task.turns)):
            offered = tool_names(task, turn)
            schemas = {t["function"]["name"] for t in tools_for_turn(task, turn)}
            assert set(offered) == schemas and len(offered) == len(schemas)
            for name in names:
                if turn < reveal:
                    assert name not in offered and name in held_out(task, turn), (task.id, turn, name)
                else:
                    assert name in offered and name not in held_out(task, turn), (task.id, turn, name)
            if turn >= reveal:  # revealed ones come last, in BFCL's order
                assert offered[-len(names):] == names


def test_other_categories_offer_every_function_every_turn(bfcl_tasks):
    from envs.tools import class_function_names

    for task in bfcl_tasks:
        if task.category == "miss_func":
            continue
        everything = [n for c in task.involved_classes for n in class_function_names(c)]
        for turn in range(len(task.turns)):
            assert tool_names(task, turn) == everything
            assert not held_out(task, turn)


def test_tools_for_turn_is_a_fresh_list_of_cached_schemas(bfcl_tasks):
    # schemas are cached (deep-copying them every turn was 65% of eval time) and documented
    # read-only; the list itself is the caller's, so appending to it cannot leak
    task = bfcl_tasks[0]
    first = tools_for_turn(task, 0)
    first.append({"type": "function", "function": {"name": "extra"}})
    again = tools_for_turn(task, 0)
    assert again is not first and len(again) == len(first) - 1
    assert again[0] is first[0]
