"""API catalog: what each environment method takes, produces, reads and writes.

Covers BFCL's eight classes and every user class resolved so far in this process (``envs.classes``), so a
seed on a user's own class finds its methods here like a BFCL seed does. Built from the function docs
(BFCL's JSON docs; for a user class, docs derived from its type hints and docstrings) plus
introspection of the environment classes: the attributes a method's source reads, the ones it
assigns or mutates, and the write set observed by diffing instance state around real calls.
Plan sampling uses it to substitute a method by another of the *same role* (same class, same
required parameters, same read/write behaviour), and profile extraction uses the read/write sets
to draw state-flow edges.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from functools import cache, lru_cache

from pydantic import BaseModel, Field

from envs import threadsafe_ast
from envs.classes import function_docs, known_classes, resolve, source_text

# Private attributes that are bookkeeping, not state a later call depends on.
_IGNORED_ATTRS = {"_random", "_api_description", "_flight_cost_lookup"}
_SELF_ATTR = re.compile(r"self\.([A-Za-z_]\w*)")
# Methods that mutate state through a local alias (``ticket = self.ticket_queue[i]; ticket[...] = ...``
# or ``self._current_dir._add_file(...)``), which a regex over ``self.attr = ...`` cannot see. Profile
# extraction still diffs the real state around every call; this table only fixes the static role.
_ALIAS_WRITERS: dict[str, set[str]] = {
    **{m: {"root", "_current_dir"} for m in ("cp", "echo", "mkdir", "mv", "rm", "rmdir", "touch")},
    **{m: {"ticket_queue"} for m in ("close_ticket", "edit_ticket", "resolve_ticket")},
}
_SELF_WRITE = re.compile(
    r"self\.([A-Za-z_]\w*)(?:\[[^\]]*\])*(?:\.[A-Za-z_]\w*)*\s*(?:[+\-*/]?=(?!=)|\.(?:append|extend|pop|remove|update|clear|insert|add|discard)\()"
)


class ParamSpec(BaseModel):
    name: str
    type: str
    required: bool
    description: str = ""
    enum: list | None = None


class MethodSpec(BaseModel):
    """One method of one environment class, as the planner sees it."""

    cls: str
    name: str
    description: str
    params: list[ParamSpec]
    produces: list[str] = Field(default_factory=list, description="Response property names (doc).")
    reads: list[str] = Field(default_factory=list, description="Instance attributes the source reads.")
    writes: list[str] = Field(default_factory=list, description="Attributes the source assigns or mutates.")
    role: str = Field(description="'compute' (no state), 'read' (reads state only) or 'write'.")

    @property
    def required(self) -> list[str]:
        return [p.name for p in self.params if p.required]

    @property
    def signature_key(self) -> tuple:
        """What must agree for two methods to be interchangeable in a plan."""
        return (self.cls, self.role, tuple(sorted((p.name, p.type) for p in self.params if p.required)),
                tuple(sorted(self.writes)), tuple(sorted(set(self.reads) - {"long_context"})))


def _short_description(text: str) -> str:
    return text.split("Tool description:", 1)[-1].strip()


def _source_attrs(cls: type, method: str, seen: set[str] | None = None) -> tuple[set[str], set[str]]:
    """Attributes read and written by ``method``, following calls to ``self._helper`` one level deep."""
    seen = seen if seen is not None else set()
    if method in seen:
        return set(), set()
    seen.add(method)
    try:
        src = textwrap.dedent(inspect.getsource(getattr(cls, method)))
    except (OSError, TypeError):
        return set(), set()
    names = set(_SELF_ATTR.findall(src))
    writes = set(_SELF_WRITE.findall(src))
    methods = {n for n in names if callable(getattr(cls, n, None))}
    reads = {n for n in names - methods if n not in _IGNORED_ATTRS}
    for helper in methods:
        if helper.startswith("_") and not helper.startswith("__"):
            r, w = _source_attrs(cls, helper, seen)
            reads |= r
            writes |= w
    return reads, {w for w in writes if w not in _IGNORED_ATTRS and w not in methods}


_MUTATORS = {"append", "extend", "pop", "popitem", "remove", "update", "clear", "insert", "add", "discard",
             "setdefault", "sort", "reverse"}


def _root_attr(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """The ``self`` attribute an expression is rooted at (``self.loans[i]["weeks"]`` -> ``loans``), through aliases
    (``loan = self.loans[i]``; ``loan["weeks"]`` -> ``loans``)."""
    while isinstance(node, ast.Subscript | ast.Attribute | ast.Call):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            return node.attr
        node = node.func if isinstance(node, ast.Call) else node.value
    return aliases.get(node.id) if isinstance(node, ast.Name) else None


def _ast_writes(cls: type, method: str, seen: set[str] | None = None) -> set[str]:
    """Attributes a user class's method changes, found on its syntax tree: assignments, augmented assignments,
    ``del`` and mutating calls on ``self.<attr>`` or on a local name bound to a part of it (the regex that serves
    BFCL's classes, with its hand-written alias table, cannot see ``book = self.books[i]; book["copies"] -= 1``).
    ``self._helper(...)`` calls are followed."""
    seen = seen if seen is not None else set()
    if method in seen:
        return set()
    seen.add(method)
    try:
        tree = threadsafe_ast.parse(textwrap.dedent(inspect.getsource(getattr(cls, method))))
    except (OSError, TypeError, SyntaxError):
        return set()
    aliases: dict[str, str] = {}
    writes: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            root = _root_attr(node.value, aliases) if isinstance(node.value, ast.Subscript | ast.Call) else None
            if root:
                aliases[node.targets[0].id] = root
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else (
            [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else [])
        for target in targets:
            if isinstance(target, ast.Attribute | ast.Subscript):
                root = _root_attr(target, aliases)
                if root:
                    writes.add(root)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in _MUTATORS:
                root = _root_attr(node.func.value, aliases)
                if root:
                    writes.add(root)
            elif isinstance(node.func.value, ast.Name) and node.func.value.id == "self" and node.func.attr.startswith("_"):
                writes |= _ast_writes(cls, node.func.attr, seen)
    return {w for w in writes if w not in _IGNORED_ATTRS and not callable(getattr(cls, w, None))}


class ApiCatalog(BaseModel):
    methods: dict[str, MethodSpec]

    def spec(self, name: str) -> MethodSpec:
        return self.methods[name]

    def alternatives(self, name: str) -> list[str]:
        """Other methods with the same role signature (role-preserving substitutes)."""
        key = self.methods[name].signature_key
        return sorted(n for n, m in self.methods.items() if n != name and m.signature_key == key)

    def role_label(self, name: str) -> str:
        m = self.methods.get(name)
        return f"{m.cls}:{m.role}" if m else f"?:{name}"


def build_catalog() -> ApiCatalog:
    """The catalog of BFCL's classes and the user classes loaded so far (cached per set of classes)."""
    return _catalog(tuple(known_classes()))


@lru_cache(maxsize=8)
def _catalog(classes: tuple[str, ...]) -> ApiCatalog:
    methods: dict[str, MethodSpec] = {}
    for cls_name in classes:
        env = resolve(cls_name)
        cls = env.cls
        docs = {d["name"]: d for d in function_docs(cls_name)}
        for name in env.methods:
            doc = docs.get(name)
            if doc is None:
                continue
            props = doc.get("parameters", {}).get("properties", {})
            required = set(doc.get("parameters", {}).get("required", []))
            params = [ParamSpec(name=p, type=str(v.get("type", "string")), required=p in required,
                                description=v.get("description", ""), enum=v.get("enum")) for p, v in props.items()]
            reads, writes = _source_attrs(cls, name)
            writes |= _ALIAS_WRITERS.get(name, set()) if env.bfcl else _ast_writes(cls, name)
            if cls_name == "GorillaFileSystem":
                # the tree is reached through the cwd; both alias one resource
                if "_current_dir" in reads or "root" in reads:
                    reads |= {"_current_dir", "root"}
            if env.stateless or not reads:
                role = "compute" if not writes else "write"
            else:
                role = "write" if writes else "read"
            methods[name] = MethodSpec(
                cls=cls_name, name=name, description=_short_description(doc.get("description", "")),
                params=params, produces=list(doc.get("response", {}).get("properties", {}) or []),
                reads=sorted(reads), writes=sorted(writes), role=role,
            )
    return ApiCatalog(methods=methods)


@cache
def class_source_text(cls_name: str) -> str:
    """Source text of an environment module: values hard-coded there cannot be renamed in a config."""
    import importlib

    from envs.bfcl_data import ENV_PACKAGE

    text = source_text(cls_name)
    if cls_name in {"GorillaFileSystem", "TradingBot", "TravelAPI", "VehicleControlAPI"}:
        try:
            text += inspect.getsource(importlib.import_module(f"{ENV_PACKAGE}.long_context"))
        except (OSError, ImportError):
            pass
    return text
