"""OpenAI-format tool schemas, built from BFCL's function docs exactly as BFCL builds them.

A user's own class (``package.module:ClassName``) offers its public methods, with schemas derived from their
type hints and docstrings (:func:`envs.classes.openai_tool`); the order and the miss_func rules below apply to
it unchanged. For BFCL's classes, per entry: the docs of the involved classes, concatenated in order; for miss_func the held-out
functions are removed and appear only from their reveal turn on (without the hint, as in BFCL);
every other description gets BFCL's Python hint; then ``convert_to_tool(..., GORILLA_TO_OPENAPI, OPENAI_COMPLETIONS)``.
"""

from __future__ import annotations

import copy
from functools import cache, lru_cache

from envs.bfcl_data import function_docs
from envs.classes import openai_tool, resolve
from envs.task import Task

PYTHON_HINT = " Note that the provided function is in Python 3 syntax."

GORILLA_TO_OPENAPI = {
    "integer": "integer", "number": "number", "float": "number", "string": "string",
    "boolean": "boolean", "bool": "boolean", "array": "array", "list": "array",
    "dict": "object", "object": "object", "tuple": "array", "any": "string",
}


def _cast(properties: dict) -> dict:
    """BFCL's ``_cast_to_openai_type`` for the Gorilla types used by multi-turn docs."""
    for value in properties.values():
        if "type" not in value:
            value["type"] = "string"
        else:
            var_type = value["type"]
            if var_type == "float":
                value["format"] = "float"
                value["description"] += " This is a float type value."
            value["type"] = GORILLA_TO_OPENAPI.get(var_type, "string")
        if value["type"] in ("array", "object"):
            if "properties" in value:
                value["properties"] = _cast(value["properties"])
            elif "items" in value:
                items = value["items"]
                items["type"] = GORILLA_TO_OPENAPI[items["type"]]
                if items["type"] == "array" and "items" in items:
                    items["items"]["type"] = GORILLA_TO_OPENAPI[items["items"]["type"]]
                elif items["type"] == "object" and "properties" in items:
                    items["properties"] = _cast(items["properties"])
    return properties


@cache
def _tool(class_name: str, function_name: str, hint: bool = True) -> dict:
    if not resolve(class_name).bfcl:
        return openai_tool(class_name, function_name)
    doc = next(d for d in function_docs(class_name) if d["name"] == function_name)
    item = copy.deepcopy(doc)
    if hint:
        item["description"] += PYTHON_HINT
    item["name"] = item["name"].replace(".", "_")
    item["parameters"]["type"] = "object"
    item["parameters"]["properties"] = _cast(item["parameters"]["properties"])
    return {"type": "function", "function": item}


def class_function_names(class_name: str) -> list[str]:
    """A class's tools in the order they are offered: BFCL's doc-file order, a user class's method order."""
    env = resolve(class_name)
    return [d["name"] for d in function_docs(class_name)] if env.bfcl else list(env.methods)


def held_out(task: Task, turn: int) -> set[str]:
    """Functions of a miss_func task that are still hidden at ``turn``."""
    return {f for reveal, names in task.missed_function.items() if turn < reveal for f in names}


def tool_names(task: Task, turn: int) -> list[str]:
    """Names of the tools offered at ``turn``, in BFCL's order (revealed ones appended last)."""
    hidden_now = held_out(task, turn)
    base = [n for c in task.involved_classes for n in class_function_names(c)
            if n not in {f for names in task.missed_function.values() for f in names}]
    revealed = [f for reveal in sorted(task.missed_function) if reveal <= turn
                for f in task.missed_function[reveal] if f not in hidden_now]
    return base + revealed


def tools_for_turn(task: Task, turn: int) -> list[dict]:
    """OpenAI tool schemas offered at ``turn``: a fresh list of cached, shared schemas (read-only).

    Revealed miss_func tools carry no Python hint: BFCL adds the hint to the entry's function
    list after moving the held-out docs out of it, so the docs appended at the reveal lack it.
    """
    missed = tuple(sorted((k, tuple(v)) for k, v in task.missed_function.items()))
    return list(_tools(tuple(task.involved_classes), missed, tuple(tool_names(task, turn))))


@lru_cache(maxsize=4096)
def _tools(classes: tuple[str, ...], missed: tuple, names: tuple[str, ...]) -> list[dict]:
    owner = {n: c for c in classes for n in class_function_names(c)}
    hidden = {f for _, fs in missed for f in fs}
    return [_tool(owner[n], n, n not in hidden) for n in names if n in owner]
