"""Safe execution of call strings against fresh environment instances (BFCL's classes or a user's own).

BFCL's own executor prefixes method names with a regex and calls ``eval`` on the text, which
runs arbitrary argument expressions. Here every call is parsed with :mod:`ast`, only a call of a
bare name with literal arguments is accepted, and it is dispatched to a public method of one of
the task's environment instances. Nothing a model or an LLM wrote is ever evaluated.

Results are serialized exactly as BFCL does (``str`` unchanged, ``dict`` through ``json.dumps``
with a ``str`` fallback, anything else through ``str``, exceptions as
``"Error during execution: ..."``), because the checker compares these strings.
"""

from __future__ import annotations

import ast
import copy
import inspect
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from envs import threadsafe_ast
from envs.classes import resolve, scenario_config

ERROR_PREFIX = "Error during execution: "
MAX_CALL_CHARS = 200_000  # the longest BFCL ground-truth call is far shorter; bounds parse cost
MAX_LITERAL_DEPTH = 8
MAX_LITERAL_NODES = 10_000
MAX_INT_DIGITS = 100


class CallError(ValueError):
    """A call string that is not a single call of a bare name with literal arguments."""


@dataclass(frozen=True)
class ParsedCall:
    name: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


def _literal(node: ast.AST, depth: int, budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise CallError("argument literal is too large")
    if depth > MAX_LITERAL_DEPTH:
        raise CallError("argument literal is nested too deeply")
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or value is None or isinstance(value, str | float):
            return value
        if isinstance(value, int):
            if len(str(abs(value))) > MAX_INT_DIGITS:
                raise CallError("integer literal is too large")
            return value
        raise CallError(f"unsupported literal of type {type(value).__name__}")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = _literal(node.operand, depth + 1, budget)
        if isinstance(operand, bool) or not isinstance(operand, int | float):
            raise CallError("a sign applies only to a number")
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.List):
        return [_literal(e, depth + 1, budget) for e in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_literal(e, depth + 1, budget) for e in node.elts)
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise CallError("dict unpacking (**) is not allowed")
        keys = [_literal(k, depth + 1, budget) for k in node.keys]  # type: ignore[arg-type]
        for key in keys:
            try:
                hash(key)
            except TypeError:
                raise CallError("dict keys must be hashable literals") from None
        return dict(zip(keys, (_literal(v, depth + 1, budget) for v in node.values), strict=True))
    raise CallError(f"only literal arguments are allowed, got {type(node).__name__}")


def parse_call(text: str) -> ParsedCall:
    """Parse ``name(literal, key=literal, ...)``; anything else raises :class:`CallError`."""
    if not isinstance(text, str):
        raise CallError("a call must be a string")
    if len(text) > MAX_CALL_CHARS:
        raise CallError(f"call is longer than {MAX_CALL_CHARS} characters")
    try:
        tree = threadsafe_ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise CallError(f"not a valid call: {type(exc).__name__}") from None
    node = tree.body
    if not isinstance(node, ast.Call):
        raise CallError("not a function call")
    if not isinstance(node.func, ast.Name):
        raise CallError("only a bare function name may be called")
    name = node.func.id
    if name.startswith("_"):
        raise CallError(f"private name {name!r} cannot be called")
    budget = [MAX_LITERAL_NODES]
    args = []
    for arg in node.args:
        if isinstance(arg, ast.Starred):
            raise CallError("starred arguments are not allowed")
        args.append(_literal(arg, 1, budget))
    kwargs: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise CallError("keyword unpacking (**) is not allowed")
        if kw.arg in kwargs:
            raise CallError(f"keyword argument {kw.arg!r} repeated")
        kwargs[kw.arg] = _literal(kw.value, 1, budget)
    return ParsedCall(name, tuple(args), kwargs)


def to_call_string(name: str, arguments: Mapping[str, Any]) -> str:
    """BFCL's ``convert_to_function_call``: ``name(k1=repr(v1),k2=repr(v2))``."""
    return f"{name}({','.join(f'{k}={v!r}' for k, v in arguments.items())})"


def serialize_result(result: Any) -> str:
    """Serialize a method's return value exactly as BFCL's executor does."""
    if type(result) is str:
        return result
    if type(result) is dict:
        try:
            return json.dumps(result)
        except Exception:  # noqa: BLE001 - BFCL falls back to str() on any failure
            return str(result)
    return str(result)


@cache
def public_methods(class_name: str) -> tuple[str, ...]:
    """Public method names of an environment class (what BFCL's executor can reach)."""
    return resolve(class_name).methods


@cache
def method_signature(class_name: str, method: str) -> inspect.Signature:
    """The signature of an environment method (``self`` included), cached."""
    return inspect.signature(getattr(resolve(class_name).cls, method))


def parameter_names(class_name: str, method: str) -> tuple[str, ...]:
    """Parameter names of an environment method, in order, without ``self``."""
    return tuple(_param_index(class_name, method))


@cache
def _mutable_defaults(class_name: str, method: str) -> tuple[tuple[str, Any], ...]:
    """The method's mutable defaults as each call must see them: for BFCL's classes an empty container of the
    default's type (every BFCL mutable default is written ``[]``; BFCL's own checker, run in the same process,
    appends to the shared one, so a copy of the live default could carry its leftovers), for a user's class a
    snapshot taken the first time the method is called."""
    sig = method_signature(class_name, method)
    bfcl = resolve(class_name).bfcl
    return tuple(
        (p.name, type(p.default)() if bfcl else copy.deepcopy(p.default))
        for p in sig.parameters.values() if isinstance(p.default, list | dict | set)
    )


class Environment:
    """Fresh instances of a task's environment classes, built from a deep copy of its config.

    ``instances`` is keyed by the ``involved_classes`` entry (a BFCL name or ``package.module:ClassName``);
    each class is loaded with ``initial_config[<class name>]``. Two BFCL aliasing bugs are contained here so
    they cannot leak between episodes: mutable default arguments (``TwitterAPI.post_tweet(tags=[],
    mentions=[])``) get a fresh copy per call, and long-context TravelAPI instances, which share module-level
    filler dicts, are deep-copied after loading. A user's class is deep-copied after loading too, so module-level
    defaults it forgot to copy cannot leak between episodes either.
    """

    def __init__(self, involved_classes: Collection[str], initial_config: Mapping[str, Any], long_context: bool = False):
        self.instances: dict[str, Any] = {}
        self._owner: dict[str, str] = {}
        for class_name in involved_classes:
            env = resolve(class_name)
            instance = env.cls()
            if not env.stateless:
                instance._load_scenario(copy.deepcopy(scenario_config(env, initial_config)), long_context=long_context)
                if not env.bfcl or long_context and class_name in _SHARES_FILLER_STATE:
                    instance.__dict__ = copy.deepcopy(instance.__dict__)
            self.instances[class_name] = instance
            for method in public_methods(class_name):
                self._owner[method] = class_name

    @property
    def method_names(self) -> frozenset[str]:
        """Every public method of the involved classes: all a call may reach."""
        return frozenset(self._owner)

    def owner(self, method: str) -> str | None:
        """The involved class that defines ``method`` (no name appears in two classes)."""
        return self._owner.get(method)

    def call(self, parsed: ParsedCall) -> Any:
        """Invoke a parsed call and return the raw result (exceptions propagate)."""
        class_name = self._owner[parsed.name]
        _check_resource_guard(class_name, parsed)
        kwargs = dict(parsed.kwargs)
        for name, default in _mutable_defaults(class_name, parsed.name):
            if _param_free(class_name, parsed, name):
                kwargs[name] = copy.deepcopy(default)
        return getattr(self.instances[class_name], parsed.name)(*parsed.args, **kwargs)

    def execute(self, call: str, allowed: Collection[str] | None = None) -> str:
        """Execute one call string and return its serialized result (errors as strings)."""
        try:
            parsed = parse_call(call)
        except CallError as exc:
            return f"{ERROR_PREFIX}{exc}"
        if parsed.name not in self._owner:
            return f"{ERROR_PREFIX}name '{parsed.name}' is not defined"
        if allowed is not None and parsed.name not in allowed:
            return f"{ERROR_PREFIX}function '{parsed.name}' is not available at this turn"
        try:
            return serialize_result(self.call(parsed))
        except Exception as exc:  # noqa: BLE001 - BFCL reports every exception as a result string
            return f"{ERROR_PREFIX}{exc}"

    def run(self, calls: list[str], allowed: Collection[str] | None = None) -> list[str]:
        """Execute calls in order (no rollback, as in BFCL) and return one result string each."""
        return [self.execute(c, allowed) for c in calls]

    def state(self) -> dict[str, dict[str, Any]]:
        """Public attributes per class: the state BFCL's checker compares."""
        return {c: {k: v for k, v in vars(i).items() if not k.startswith("_")} for c, i in self.instances.items()}

    def state_diff(self, expected: Environment) -> dict[str, list[str]]:
        """Classes whose public attributes differ from ``expected``'s, with the differing names.

        Mirrors BFCL's ``_compare_instances``: iterate the expected instance's public
        attributes and compare with ``!=``.
        """
        diff: dict[str, list[str]] = {}
        for class_name, gt in expected.instances.items():
            mine = self.instances[class_name]
            bad = [k for k, v in vars(gt).items() if not k.startswith("_") and getattr(mine, k, _MISSING) != v]
            if bad:
                diff[class_name] = bad
        return diff


_MISSING = object()

# Classes whose long-context ``_load_scenario`` puts module-level objects into instance state
# (TravelAPI's extension cards and bookings). tests/test_executor_aliasing.py checks that no
# other class shares mutable state between two fresh instances.
_SHARES_FILLER_STATE = frozenset({"TravelAPI"})


@cache
def _param_index(class_name: str, method: str) -> dict[str, int]:
    params = list(method_signature(class_name, method).parameters)
    return {name: i - 1 for i, name in enumerate(params) if name != "self"}


def _param_free(class_name: str, parsed: ParsedCall, name: str) -> bool:
    """True when ``name`` is supplied neither by keyword nor positionally."""
    return name not in parsed.kwargs and _param_index(class_name, parsed.name)[name] >= len(parsed.args)


# Arguments that would make a method compute for minutes or exhaust memory (a model can emit
# ``power(base=7, exponent=10**15)``; Python cannot interrupt a big-int power). Bounds sit far
# above anything the BFCL ground truth uses.
_RESOURCE_GUARDS: dict[tuple[str, str], dict[str, float]] = {
    ("MathAPI", "power"): {"exponent": 10_000},
    ("MathAPI", "square_root"): {"precision": 1_000},
    ("MathAPI", "logarithm"): {"precision": 1_000},
    ("MathAPI", "round_number"): {"decimal_places": 1_000},
}


def _check_resource_guard(class_name: str, parsed: ParsedCall) -> None:
    limits = _RESOURCE_GUARDS.get((class_name, parsed.name))
    if not limits:
        return
    index = _param_index(class_name, parsed.name)
    for name, bound in limits.items():
        pos = index.get(name, -1)
        value = parsed.kwargs.get(name, parsed.args[pos] if 0 <= pos < len(parsed.args) else None)
        if isinstance(value, int | float) and not isinstance(value, bool) and abs(value) > bound:
            raise ValueError(f"{name}={value!r} exceeds the executor's limit of {bound:g}")
