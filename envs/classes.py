"""Environment classes: BFCL's eight multi-turn classes and a user's own, resolved by the name a task gives.

A task's ``involved_classes`` holds, per class, either a BFCL class name (``"GorillaFileSystem"``) or the import
path of the user's own class (``"my_pkg.crm:CrmAPI"``). Everything that builds, executes, describes or checks
an environment goes through :func:`resolve`, so a user's class works wherever a BFCL class does:

* the class is built with no arguments and loaded with ``_load_scenario(config, long_context=...)``, where
  ``config`` is ``initial_config[<class name>]`` (keyed by the class name, as BFCL keys its configs);
* its public methods are the tools; their OpenAI schemas come from type hints and docstrings (BFCL's classes
  keep BFCL's JSON docs, converted exactly as BFCL converts them, see :mod:`envs.tools`);
* its state is its public instance attributes, compared with ``!=`` (BFCL's checker).

Tool calls name a bare method (BFCL's call strings), so a method name may belong to one class only: a user
class whose public method is also a method of a BFCL class or of another class in use is refused at load
with the names to rename. The contract a user follows is written up in ``docs/environments.md``.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from envs.bfcl_data import CLASS_MODULES, STATELESS_CLASSES
from envs.bfcl_data import env_class as bfcl_env_class
from envs.bfcl_data import function_docs as bfcl_function_docs

BFCL_CLASSES: tuple[str, ...] = tuple(CLASS_MODULES)
_SPEC = re.compile(r"^(?P<module>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*):(?P<name>[A-Za-z_]\w*)$")

# JSON-schema type -> the Gorilla type names BFCL's docs use (the synthesis reads docs in that vocabulary)
_TO_GORILLA = {"string": "string", "number": "float", "integer": "integer", "boolean": "boolean",
               "array": "array", "object": "dict", "null": "string"}


class EnvironmentClassError(ValueError):
    """An ``involved_classes`` entry that cannot be used: unknown, not importable, or not following the contract."""


@dataclass(frozen=True)
class EnvClass:
    """One resolved environment class."""

    spec: str
    """As written in ``involved_classes``: a BFCL class name or ``package.module:ClassName``."""
    name: str
    """The class name: the key of its entry in ``initial_config``."""
    cls: type
    bfcl: bool
    methods: tuple[str, ...]
    """Public methods, i.e. the tools: BFCL's sorted by name, a user class's in definition order."""

    @property
    def stateless(self) -> bool:
        """BFCL never loads a scenario into MathAPI; every other class gets ``_load_scenario``."""
        return self.bfcl and self.name in STATELESS_CLASSES


_USER: dict[str, EnvClass] = {}  # spec -> class, in the order first resolved in this process


def is_bfcl(spec: str) -> bool:
    return spec in CLASS_MODULES


def class_name(spec: str) -> str:
    """The class name of a spec (``"pkg.mod:CrmAPI"`` -> ``"CrmAPI"``; a BFCL name is itself)."""
    return spec.rsplit(":", 1)[-1]


def _public_methods(cls: type) -> tuple[str, ...]:
    return tuple(n for n, _ in inspect.getmembers(cls, predicate=inspect.isfunction) if not n.startswith("_"))


def _definition_order(cls: type, methods: tuple[str, ...]) -> tuple[str, ...]:
    """A user class's tools in the order its source defines them (the class's own first, then its bases')."""
    order = [n for klass in cls.__mro__ for n in vars(klass) if n in methods]
    return tuple(dict.fromkeys(order))


@cache
def _bfcl(spec: str) -> EnvClass:
    cls = bfcl_env_class(spec)
    return EnvClass(spec=spec, name=spec, cls=cls, bfcl=True, methods=_public_methods(cls))


@cache
def _bfcl_method_owner() -> dict[str, str]:
    return {m: c for c in BFCL_CLASSES for m in _bfcl(c).methods}


def _import(module_name: str, spec: str) -> Any:
    """Import the module of a user class; the current directory counts as importable, as ``python -m`` makes it."""
    cwd = str(Path.cwd())
    for attempt in range(2):
        try:
            return importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            own = module_name == exc.name or module_name.startswith(f"{exc.name}.")
            if not own:  # the module imports something missing: that is the user's error to see
                raise EnvironmentClassError(f"{spec}: importing {module_name} failed: {exc}") from None
            if attempt or cwd in sys.path:
                raise EnvironmentClassError(
                    f"{spec}: cannot import {module_name} ({exc}); the module must be importable from the Python "
                    "environment running rods: installed (pip install -e .), on PYTHONPATH, or a package under the "
                    "current directory") from None
            sys.path.append(cwd)  # appended: never shadows an installed package
        except Exception as exc:  # noqa: BLE001 - any error in the user's module becomes one clear line
            raise EnvironmentClassError(f"{spec}: importing {module_name} failed: {type(exc).__name__}: {exc}") \
                from None
    raise AssertionError("unreachable")


def _check_contract(spec: str, cls: Any) -> tuple[str, ...]:
    if not inspect.isclass(cls):
        raise EnvironmentClassError(f"{spec}: {class_name(spec)} is not a class")
    try:
        required = [p.name for p in inspect.signature(cls).parameters.values()
                    if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    except (TypeError, ValueError):
        required = []
    if required:
        raise EnvironmentClassError(f"{spec}: the constructor must take no arguments (it requires {required})")
    if not callable(getattr(cls, "_load_scenario", None)):
        raise EnvironmentClassError(f"{spec}: the class needs a method _load_scenario(self, config, long_context=False)")
    methods = _public_methods(cls)
    if not methods:
        raise EnvironmentClassError(f"{spec}: the class has no public method, so it offers no tool")
    return methods


def _check_names(spec: str, name: str, methods: tuple[str, ...]) -> None:
    if name in CLASS_MODULES:
        raise EnvironmentClassError(f"{spec}: the class name {name} is a BFCL class name; initial_config is keyed by "
                                    "class name, so rename the class")
    for other in _USER.values():
        if other.name == name:
            raise EnvironmentClassError(f"{spec}: class name {name} is already used by {other.spec}; initial_config is "
                                        "keyed by class name, so class names must differ")
    owners = {**_bfcl_method_owner(), **{m: o.spec for o in _USER.values() for m in o.methods}}
    clashes = {m: owners[m] for m in methods if m in owners}
    if clashes:
        listed = ", ".join(f"{m} ({o})" for m, o in sorted(clashes.items()))
        raise EnvironmentClassError(f"{spec}: tool names must be unique across classes (a call names a bare method); "
                                    f"rename or make private: {listed}")


def resolve(spec: str) -> EnvClass:
    """The class an ``involved_classes`` entry names; a user class is imported, checked and schema-derived once."""
    if not isinstance(spec, str):
        raise EnvironmentClassError(f"an involved class must be a string, got {type(spec).__name__}")
    if spec in CLASS_MODULES:
        return _bfcl(spec)
    known = _USER.get(spec)
    if known is not None:
        return known
    match = _SPEC.match(spec)
    if match is None:
        raise EnvironmentClassError(
            f"unknown environment class {spec!r}: name one of BFCL's classes ({', '.join(sorted(CLASS_MODULES))}) "
            f"or your own class by import path, e.g. 'my_package.my_module:{class_name(spec) or 'MyAPI'}'")
    module = _import(match["module"], spec)
    cls = getattr(module, match["name"], None)
    if cls is None:
        raise EnvironmentClassError(f"{spec}: module {match['module']} has no attribute {match['name']}")
    methods = _check_contract(spec, cls)
    _check_names(spec, match["name"], methods)
    env = EnvClass(spec=spec, name=match["name"], cls=cls, bfcl=False, methods=_definition_order(cls, methods))
    for method in methods:  # schema errors surface at load, naming the method
        _user_tool(env, method)
    _USER[spec] = env
    return env


def forget_user_classes() -> None:
    """Forget the user classes resolved so far (the catalog and knowledge then cover BFCL's alone): for tests
    and long-lived processes that load unrelated environments one after the other."""
    _USER.clear()


def known_classes() -> list[str]:
    """BFCL's classes, then every user class resolved so far in this process (what the synthesis catalog covers)."""
    return [*BFCL_CLASSES, *_USER]


def scenario_config(env: EnvClass, initial_config: dict[str, Any]) -> Any:
    """The part of a task's ``initial_config`` that ``_load_scenario`` receives (keyed by class name)."""
    return initial_config.get(env.name, {})


# ------------------------------------------------------------------------------------------------ tool schemas
def _user_tool(env: EnvClass, method: str) -> dict:
    return _derived_tool(env.cls, method, env.spec)


@cache
def _derived_tool(cls: type, method: str, spec: str) -> dict:
    """OpenAI tool schema of a user method, from its type hints and docstring (Google style ``Args:``).

    langchain-core's converter does the work (the one place envs/ uses langchain-core; imported here, lazily,
    so that BFCL-only runs never load it).
    """
    from langchain_core.utils.function_calling import convert_to_openai_tool

    function = getattr(cls, method)
    if not (inspect.getdoc(function) or "").strip():
        raise EnvironmentClassError(f"{spec}: method {method} needs a docstring: it is the tool's description")
    params = list(inspect.signature(function).parameters.values())
    if not isinstance(inspect.getattr_static(cls, method), staticmethod):
        params = params[1:]  # self
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY):
            raise EnvironmentClassError(f"{spec}: parameter {p.name} of {method} must be a plain named parameter "
                                        "(a model passes arguments by name; no *args, **kwargs or positional-only)")
        if p.annotation is inspect.Parameter.empty:
            raise EnvironmentClassError(f"{spec}: parameter {p.name} of {method} needs a type hint: it is the "
                                        "parameter's type in the tool schema")
    try:
        tool = convert_to_openai_tool(function)
    except Exception as exc:  # noqa: BLE001 - any converter failure names the method
        raise EnvironmentClassError(f"{spec}: cannot derive a tool schema for {method}: {type(exc).__name__}: {exc}") \
            from None
    tool["function"]["name"] = method
    return tool


def openai_tool(spec: str, method: str) -> dict:
    """The OpenAI tool schema of a user class's method (cached, shared: read-only)."""
    env = resolve(spec)
    if env.bfcl:
        raise ValueError(f"{spec} is a BFCL class: its tools come from BFCL's docs (envs.tools)")
    return _user_tool(env, method)


def _gorilla_property(schema: dict) -> dict:
    variants = [s for s in schema.get("anyOf", []) if s.get("type") != "null"]
    base = {**variants[0], **{k: v for k, v in schema.items() if k != "anyOf"}} if variants else dict(schema)
    out: dict[str, Any] = {"type": _TO_GORILLA.get(base.get("type", "string"), "string"),
                           "description": base.get("description", "")}
    for key in ("default", "enum"):
        if key in base:
            out[key] = base[key]
    if out["type"] == "array" and isinstance(base.get("items"), dict):
        out["items"] = {"type": _TO_GORILLA.get(base["items"].get("type", "string"), "string")}
    return out


def function_docs(spec: str) -> tuple[dict, ...]:
    """Function docs in BFCL's (Gorilla) format: BFCL's own files, or derived from a user class's schemas."""
    env = resolve(spec)
    if env.bfcl:
        return bfcl_function_docs(spec)
    return _derived_docs(env.spec)


@cache
def _derived_docs(spec: str) -> tuple[dict, ...]:
    env = resolve(spec)
    docs = []
    for method in env.methods:
        fn = _user_tool(env, method)["function"]
        params = fn.get("parameters", {})
        docs.append({
            "name": method, "description": fn.get("description", ""),
            "parameters": {"type": "dict",
                           "properties": {p: _gorilla_property(s) for p, s in params.get("properties", {}).items()},
                           "required": list(params.get("required", []))},
            "response": {},
        })
    return tuple(docs)


def source_text(spec: str) -> str:
    """Source text of the module defining a class (values hard-coded there cannot be renamed in a config)."""
    env = resolve(spec)
    module = inspect.getmodule(env.cls)
    try:
        return inspect.getsource(module) if module is not None else ""
    except (OSError, TypeError):
        return ""


__all__ = ["BFCL_CLASSES", "EnvClass", "EnvironmentClassError", "class_name", "forget_user_classes", "function_docs",
           "is_bfcl",
           "known_classes", "openai_tool", "resolve", "scenario_config", "source_text"]
