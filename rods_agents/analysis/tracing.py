"""Execute a plan on fresh instances and record, per call, its arguments, result and writes.

The trace is shared by the execution orchestrator (error detection), profile extraction (data- and
state-flow edges, value sources) and the verdict. Write sets are derived by fingerprinting every
attribute of the involved instances before and after each call (private ones included: the file
system's working directory is private but later calls depend on it).
"""

from __future__ import annotations

import copy
import json
import pickle
import re
from typing import Any

from pydantic import BaseModel, Field

from envs.executor import ERROR_PREFIX, CallError, Environment, parameter_names, parse_call, serialize_result
from envs.task import Task

_SKIP_ATTRS = {"_random", "_api_description", "_flight_cost_lookup"}
_ERROR_HINT = re.compile(r'^\{"error":|^Error', re.IGNORECASE)


class CallRecord(BaseModel):
    turn: int
    index: int = Field(description="Position of the call within its turn.")
    call: str
    name: str
    cls: str | None = None
    args: dict[str, Any] = Field(default_factory=dict, description="Arguments bound to parameter names.")
    result: str = ""
    error: str | None = Field(default=None, description="Error text when the call failed or returned an error.")
    writes: list[str] = Field(default_factory=list)
    cwd: str | None = Field(default=None, description="File-system working directory before the call.")
    siblings: dict[str, str] | None = Field(default=None, description="Entries of the working directory before "
                                            "the call, name -> 'file' | 'directory' (file-system calls only).")


class Trace(BaseModel):
    calls: list[CallRecord] = Field(default_factory=list)

    @property
    def errors(self) -> list[CallRecord]:
        return [c for c in self.calls if c.error]


def bind_args(cls_name: str | None, name: str, args: tuple, kwargs: dict) -> dict[str, Any]:
    """Name positional arguments after the method's parameters (``sort('a.txt')`` -> file_name)."""
    if cls_name is None:
        return {**{f"_{i}": a for i, a in enumerate(args)}, **kwargs}
    params = parameter_names(cls_name, name)
    bound = {params[i] if i < len(params) else f"_{i}": a for i, a in enumerate(args)}
    bound.update(kwargs)
    return bound


def _fingerprint(instance: Any) -> dict[str, bytes]:
    out = {}
    for key, value in vars(instance).items():
        if key in _SKIP_ATTRS:
            continue
        try:
            out[key] = pickle.dumps(value, protocol=4)
        except Exception:  # noqa: BLE001 - unpicklable attributes are compared by repr
            out[key] = repr(value).encode()
    return out


def _cwd(env: Environment) -> str | None:
    fs = env.instances.get("GorillaFileSystem")
    if fs is None:
        return None
    node, parts = fs._current_dir, []
    while node is not None:
        parts.append(node.name)
        node = node.parent
    return "/".join(reversed(parts))


def _siblings(env: Environment) -> dict[str, str]:
    contents = getattr(env.instances["GorillaFileSystem"]._current_dir, "contents", {}) or {}
    return {name: ("directory" if hasattr(node, "contents") else "file") for name, node in contents.items()}


def error_of(result: str) -> str | None:
    """The error text of a serialized result, or None (BFCL envs return ``{"error": ...}`` dicts)."""
    if result.startswith(ERROR_PREFIX):
        return result[len(ERROR_PREFIX):]
    if _ERROR_HINT.match(result):
        try:
            obj = json.loads(result)
        except json.JSONDecodeError:
            return None
        if isinstance(obj, dict) and "error" in obj:
            return str(obj["error"])
    return None


CONFIG_ERROR = "invalid initial_config"


def trace_task(task: Task, stop_on_error: bool = False) -> Trace:
    """Execute ``task.ground_truth`` turn by turn on fresh instances and record every call.

    An ``initial_config`` the environment classes cannot load is not raised: the trace holds one
    error record (call ``<initial_config>``, error ``invalid initial_config: ...``), which the
    orchestrator classifies as ``bad_config`` and the verdict rejects as an execution error.
    """
    try:
        env = Environment(task.involved_classes, task.initial_config, task.long_context)
    except Exception as exc:  # noqa: BLE001 - any construction failure is a property of the data
        return Trace(calls=[CallRecord(turn=0, index=0, call="<initial_config>", name="<initial_config>",
                                       error=f"{CONFIG_ERROR}: {type(exc).__name__}: {str(exc)[:300]}")])
    trace = Trace()
    for turn, calls in enumerate(task.ground_truth):
        for index, call in enumerate(calls):
            record = CallRecord(turn=turn, index=index, call=call, name="?")
            try:
                parsed = parse_call(call)
                record.name = parsed.name
                cls_name = record.cls = env.owner(parsed.name)
                if cls_name is None:
                    raise CallError(f"name '{parsed.name}' is not defined")
            except CallError as exc:
                record.error = str(exc) if record.name != "?" else f"unparsable call: {exc}"
                trace.calls.append(record)
                if stop_on_error:
                    return trace
                continue
            try:
                bound = bind_args(cls_name, parsed.name, parsed.args, parsed.kwargs)
            except (TypeError, IndexError):
                bound = dict(parsed.kwargs)
            # a copy: the environment keeps the lists it is handed (a tweet's mentions), and a later call that
            # changes them (mention) would rewrite this call's arguments after the fact
            record.args = copy.deepcopy(bound)
            record.cwd = _cwd(env)
            if cls_name == "GorillaFileSystem":
                record.siblings = _siblings(env)
            before = _fingerprint(env.instances[cls_name])
            try:
                record.result = serialize_result(env.call(parsed))
            except Exception as exc:  # noqa: BLE001 - every exception is an execution error
                record.result = f"{ERROR_PREFIX}{exc}"
            after = _fingerprint(env.instances[cls_name])
            record.writes = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
            record.error = error_of(record.result)
            trace.calls.append(record)
            if record.error and stop_on_error:
                return trace
    return trace


def _leaves(obj: Any, keep: Any, path: str = "", out: dict[str, Any] | None = None) -> dict[str, Any]:
    """Leaves of a JSON result by path ('.a.b[0]') for which ``keep`` is true (lists: their first 50 items)."""
    out = {} if out is None else out
    if isinstance(obj, dict):
        for k, v in obj.items():
            _leaves(v, keep, f"{path}.{k}", out)
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:50]):
            _leaves(v, keep, f"{path}[{i}]", out)
    elif keep(obj):
        out[path] = obj
    return out


def _bool_leaves(obj: Any) -> dict[str, bool]:
    return _leaves(obj, lambda v: isinstance(v, bool))


def _num_leaves(obj: Any) -> dict[str, float]:
    return {p: float(v) for p, v in _leaves(obj, lambda v: isinstance(v, int | float) and not isinstance(v, bool)).items()}


# a limit the user states: "a cost of below $1200", "if it exceeds 300 miles", "no more than 5", "costing no more that
# $2500" (the seed's typo), "My max spending limit is 7000", "the price is larger than 300"
_LIMIT = re.compile(r"\b(?:below|under|over|above|exceed\w*|less than|more th[ae][nt]|greater than|higher than|lower than|larger than|bigger than|smaller than|(?:short|shy) of|"
                    r"cheaper than|at most|at least|up to|maximum of|minimum of|budget of|afford|limit(?: is| of)?|"
                    r"max(?:imum)?(?:\s+\w+){0,2}\s+(?:is|of|at))\b[^0-9$.]{0,16}"
                    r"\$?\s?(\d[\d,]*(?:\.\d+)?)", re.I)


def stated_limits(turn_texts: list[str]) -> list[tuple[int, float]]:
    """(turn, number) of every limit the user states, in text order."""
    return [(t, float(m.group(1).replace(",", ""))) for t, text in enumerate(turn_texts)
            for m in _LIMIT.finditer(text)]


# the unit a limit is stated in, and the result fields such a limit can be about: a 40 PSI tire limit says nothing of a
# fuel level that also reads 40 (LLM trial 9, miss_func_94: a patch was asked to keep 'fuelLevel 40 vs limit 40')
_LIMIT_UNIT = re.compile(r"\s*(psi|miles?|mi\b|km|kilomet\w*|gallons?|liters?|litres?)", re.I)
_UNIT_FIELDS = {"psi": re.compile(r"pressure|tire", re.I), "distance": re.compile(r"distance|range|mile|km", re.I),
                "fuel": re.compile(r"fuel|gallon|liter", re.I),
                "money": re.compile(r"cost|price|balance|fare|budget|amount|value|total", re.I)}


def _unit(text: str, m: re.Match[str]) -> str | None:
    """The kind of quantity limit ``m`` states: money ('$1200'), or the unit written after its number."""
    if "$" in m.group(0):
        return "money"
    u = _LIMIT_UNIT.match(text, m.end())
    if u is None:
        return None
    word = u.group(1).lower()
    return "psi" if word == "psi" else "fuel" if word[0] in "gl" else "distance"


def stated_limit_units(turn_texts: list[str]) -> list[tuple[int, float, str | None]]:
    """(turn, number, kind) of every limit the user states, in the order of :func:`stated_limits`."""
    return [(t, float(m.group(1).replace(",", "")), _unit(text, m)) for t, text in enumerate(turn_texts)
            for m in _LIMIT.finditer(text)]


def limit_flips(seed_trace: Trace, trace: Trace, seed_texts: list[str], texts: list[str]) -> list[str]:
    """Numbers in results that fall on the other side of a stated limit than in the seed.

    "Book it if the cost is below $1200" decides the booking by a result number; a variant whose new date
    makes the flight cost 1320 while its ground truth still books it is no longer determined by its text.
    Limits pair up by position inside each turn: a re-worded turn may state a limit the seed's states in other
    words, or none ('Would the vehicle make it 250 miles' for 'a stretch of over 300 miles'), and pairing across
    turns then set the next turn's 40 PSI against the seed's 300 miles (scenario 94: every sample refused). A limit
    stated in a unit (PSI, miles, gallons, dollars) is held only against result fields of its kind."""
    flips: list[str] = []
    mine, theirs = stated_limit_units(texts), stated_limit_units(seed_texts)
    pairs = [(t0, t1, unit) for turn in sorted({t for t, _, _ in theirs})
             for (t0, unit), t1 in zip([(n, u) for t, n, u in theirs if t == turn],
                                       [n for t, n, _ in mine if t == turn], strict=False)]
    for t0, t1, unit in pairs:
        about = _UNIT_FIELDS.get(unit or "")
        for pos, (a, b) in enumerate(zip(seed_trace.calls, trace.calls, strict=False)):
            if a.name != b.name or a.error or b.error or a.result == b.result:  # any turn: miss_func acts later
                continue
            try:
                la, lb = _num_leaves(json.loads(a.result)), _num_leaves(json.loads(b.result))
            except (json.JSONDecodeError, TypeError):
                continue
            keys = [p for p in la if p in lb and (about is None or about.search(f"{a.name}{p}"))]
            if unit == "psi" and keys:
                # 'if any tire is below 40 PSI' reads one outcome of the four pressures, not four: LLM trial 10 spent
                # three patch calls moving each tire to its seed's side of the limit
                before, after = any(la[p] < t0 for p in keys), any(lb[p] < t1 for p in keys)
                if before != after:
                    flips.append(f"call {pos} {a.name}: any pressure below {t0} -> below {t1}: {before} -> {after}")
                continue
            flips += [f"call {pos} {a.name}{p}: {la[p]} vs limit {t0} -> {lb[p]} vs {t1}"
                      for p in keys if (la[p] < t0) != (lb[p] < t1)]
    return flips


def outcome_flips(seed_trace: Trace, trace: Trace) -> list[str]:
    """Yes/no outcomes (boolean fields of results) where ``trace`` answers differently than the seed.

    A condition in the seed's text ("should the range fall short, fill the tank") is decided by such
    an outcome; when a variant's state or numbers flip it, the seed's ground truth no longer follows
    from the text. Calls that failed in either trace are skipped (the patch agent repairs those)."""
    flips: list[str] = []
    for pos, (a, b) in enumerate(zip(seed_trace.calls, trace.calls, strict=False)):
        if a.name != b.name or a.error or b.error or a.result == b.result:
            continue
        try:
            ja, jb = json.loads(a.result), json.loads(b.result)
        except (json.JSONDecodeError, TypeError):
            continue
        la, lb = _bool_leaves(ja), _bool_leaves(jb)
        flips += [f"call {pos} {a.name}{p}: {la[p]} -> {lb[p]}" for p in la if p in lb and la[p] != lb[p]]
    return flips
