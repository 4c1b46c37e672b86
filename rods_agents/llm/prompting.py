"""Render the LLM prompts (plan, rewrite, judge, patch) from a seed, its trace and a candidate.

Each prompt shows the model what a capable person would need to succeed: the seed's own words, its
ground truth with the results of list- and id-producing calls, one-line function docs with
preconditions and options, the initial state as JSON with the renamable values apart from the keys,
what the category means for this task, the information structure to keep (from
:mod:`rods_agents.analysis.information_structure` when available) and, on a re-plan, why the previous
attempt was rejected. Templates live in ``prompts/llm_*.txt``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from envs import threadsafe_ast
from envs.executor import CallError, parse_call
from envs.task import Task
from prompts import load_prompt
from rods_agents.analysis import knowledge
from rods_agents.analysis.catalog import build_catalog, class_source_text
from rods_agents.analysis.profile import Profile
from rods_agents.analysis.seed_gaps import seed_gaps
from rods_agents.analysis.tracing import Trace, bind_args, trace_task
from rods_agents.analysis.value_sources import (
    choice_phrases,
    classify_arguments,
    is_choice,
    is_flag,
    ticker_companies,
)
from rods_agents.variation.state_resample import drawn_id_changes

MAX_STATE_CHARS = 6000
_LOGIN_ATTRS = {"authenticated", "current_user", "access_token"}
MAX_RESULT_CHARS = 300
MAX_FEEDING_RESULT_CHARS = 2000
MAX_DOC_CHARS = 700
MAX_REJECTION_CHARS = 3000  # a verdict reason names the turn, the call and the value: shown whole
# phrase-table parameters whose listed values are examples, not the only options
_OPEN_CHOICES = {"pedalPosition", "lines", "path", "folder", "priority"}
_ID_KEY = re.compile(r"(^|_)ids?$|_id$|^id", re.I)

try:  # engineer H1's detector; the prompts fall back to the profile's value sources without it
    from rods_agents.analysis.information_structure import information_structure as _information_structure
except ImportError:  # pragma: no cover - depends on the checkout
    _information_structure = None


def _one_line(text: str, limit: int = 400) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ----------------------------------------------------------------------------- seed text and ground truth
def turns_text(task: Task) -> str:
    """The user's message of every turn, numbered from 1; an empty turn says why it is empty."""
    reveal = {t: names for t, names in task.missed_function.items()}
    lines = []
    for t, msgs in enumerate(task.turns):
        text = " ".join(m.content for m in msgs if m.role == "user").strip()
        if text:
            lines.append(f"Turn {t + 1}: {_one_line(text, 1500)}")
        elif t in reveal:
            lines.append(f"Turn {t + 1}: (no user message: the held-out function(s) {', '.join(reveal[t])} "
                         "become available here and the assistant finishes the earlier request)")
        else:
            lines.append(f"Turn {t + 1}: (no user message)")
    return "\n".join(lines)


def _worth_showing(result: str) -> bool:
    """Results a later value may be picked from: lists, and anything carrying an id."""
    try:
        data = json.loads(result)
    except (json.JSONDecodeError, TypeError):
        return False

    def walk(obj: Any, depth: int = 0) -> bool:
        if depth > 4:
            return False
        if isinstance(obj, list):
            return True
        if isinstance(obj, dict):
            return any(_ID_KEY.search(str(k)) or walk(v, depth + 1) for k, v in obj.items())
        return False

    return walk(data)


def _leaves(result: str) -> list[Any]:
    try:
        data = json.loads(result)
    except (json.JSONDecodeError, TypeError):
        return []
    return [v for v in _scalars(data) if not isinstance(v, bool) and v is not None]


def feeding_positions(task: Task, trace: Trace) -> set[int]:
    """Trace positions whose result a later argument derives from: for every argument read from a result
    or composed from results (a mean of three counts, a formatted text), each earlier result that holds
    one of its values. A composed value none of whose parts a result holds marks none: marking every earlier
    result (as before) told the planner that every call fed a later value (LLM trial 3)."""
    try:
        sources = classify_arguments(task, trace)
    except Exception:  # noqa: BLE001 - a prompt without the marks still shows every result
        return set()
    pos_of = {(r.turn, r.index): p for p, r in enumerate(trace.calls)}
    out: set[int] = set()
    for a in sources:
        pos = pos_of.get((a.turn, a.index))
        if a.source not in ("call", "composed") or pos is None:
            continue
        if a.producer is not None:
            out.add(a.producer)
        parts = [v for v in _scalars(trace.calls[pos].args.get(a.param)) if not isinstance(v, bool) and v is not None]
        hits = {p for p in range(pos) for leaf in _leaves(trace.calls[p].result)
                if any(leaf == v or isinstance(v, str) and isinstance(leaf, str) and len(v) >= 3 and v in leaf
                       for v in parts)}
        out |= hits  # a composed value none of whose parts a result holds marks nothing (not every earlier call)
    return out


def ground_truth_text(task: Task, trace: Trace | None = None) -> str:
    """Per turn, the ground-truth calls, each with its result.

    A result a later value derives from (:func:`feeding_positions`) is shown whole up to
    :data:`MAX_FEEDING_RESULT_CHARS` and marked; other results are shortened to :data:`MAX_RESULT_CHARS`.
    Why: the planner and the judge can only keep or check a data flow whose source they see (a
    balance, a count, a tire pressure, not only lists and ids)."""
    trace = trace if trace is not None else trace_task(task)
    feeding = feeding_positions(task, trace)
    by_pos = {(r.turn, r.index): (p, r) for p, r in enumerate(trace.calls)}
    lines = []
    for t, calls in enumerate(task.ground_truth):
        if not calls:
            lines.append(f"Turn {t + 1}: (no calls)")
            continue
        lines.append(f"Turn {t + 1}:")
        for i, call in enumerate(calls):
            pos, rec = by_pos.get((t, i), (None, None))
            shown = f"  {call}"
            if rec is not None and rec.error:
                shown += f"  -> error: {_one_line(rec.error, 300)}"
            elif rec is not None and pos in feeding:
                shown += f"  -> {_one_line(rec.result, MAX_FEEDING_RESULT_CHARS)}  [a later value derives from this]"
            elif rec is not None and rec.result not in ("", "null", "None"):
                shown += f"  -> {_one_line(rec.result, MAX_RESULT_CHARS)}"
            lines.append(shown)
    return "\n".join(lines)


# ----------------------------------------------------------------------------- functions and state
def function_docs(classes: list[str], held_out: dict[int, list[str]] | None = None) -> str:
    """One line per function of ``classes``: parameters (* = required), options, preconditions, held-out note."""
    table = knowledge.preconditions()
    by_attr, by_method = table.get("attributes", {}), table.get("methods", {})
    reveal_of = {n: t for t, names in (held_out or {}).items() for n in names}
    tables = lookup_tables(list(classes))
    lines = []
    for name, spec in sorted(build_catalog().methods.items()):
        if spec.cls not in classes:
            continue
        params = ", ".join(f"{p.name}{'*' if p.required else ''}: {p.type}" for p in spec.params)
        line = f"{name}({params}) [{spec.cls}, {spec.role}]: {_one_line(spec.description, MAX_DOC_CHARS)}"
        # every parameter's own doc: its options ('l' for lines), its default, its format
        docs = [f"{p.name}: {_one_line(p.description, 240)}" for p in spec.params if p.description.strip()]
        if docs:
            line += " Parameters: " + "; ".join(d.rstrip(". ") for d in docs) + "."
        options = [f"{p.name} one of {p.enum}" for p in spec.params if p.enum]
        options += [f"{p.name} one of [{', '.join(words)}]" for p in spec.params if not p.enum
                    and (words := list(choice_phrases().get(f"{name}.{p.name}", {})))
                    and p.name not in _OPEN_CHOICES]
        if options:
            line += " Options: " + "; ".join(options) + "."
        pre = [by_method[name]] if name in by_method else []
        pre += [phrase for attr, phrase in by_attr.items()  # a login method sets what it would need
                if attr in spec.reads and not (attr in _LOGIN_ATTRS and attr in spec.writes) and phrase not in pre]
        if pre:
            line += " Needs: " + "; ".join(dict.fromkeys(pre)) + "."
        if name in tables:
            line += f" Only these values are known to its code: {tables[name]}."
        if name in reveal_of:
            line += f" HELD OUT: not available before turn {reveal_of[name] + 1}."
        lines.append(line)
    return "\n".join(lines)


MAX_TABLE_CHARS = 2500


def _constant(node: Any) -> Any:
    """A literal's value (``ast.literal_eval`` of a node: constants, tuples, dicts; never code), else None."""

    try:
        return threadsafe_ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return None


def _method_table(fn: Any) -> str:
    """The lookup table a method's own code holds, in words: a dict literal keyed by pairs (a route's fare)
    or an if/elif chain comparing arguments with strings and returning a literal (a city's zip code, a
    distance between two zip codes). '' when it holds none."""
    import ast

    for node in ast.walk(fn):  # {("SFO", "LAX"): 200, ...}
        if isinstance(node, ast.Dict) and len(node.keys) >= 4:
            table = _constant(node)
            if isinstance(table, dict) and all(isinstance(k, tuple) and len(k) == 2 for k in table):
                groups: dict[Any, list[str]] = {}
                for (a, b), v in table.items():
                    groups.setdefault(a, []).append(f"{b} {v}")
                return "; ".join(f"{a} -> {', '.join(v)}" for a, v in groups.items())
    rows = []
    params = {a.arg for a in fn.args.args}
    for node in ast.walk(fn):  # if x == "a" and y == "b": result = {...} / return {...}
        compares = [c for c in ast.walk(node.test) if isinstance(c, ast.Compare)] if isinstance(node, ast.If) else []
        if not compares or not node.body or not all(
                isinstance(c.left, ast.Name) and c.left.id in params and all(isinstance(o, ast.Eq) for o in c.ops)
                for c in compares):
            continue
        first = node.body[0]
        value = _constant(first.value) if isinstance(first, ast.Return | ast.Assign) and first.value is not None else None
        keys = list(dict.fromkeys(c.value for c in ast.walk(node.test) if isinstance(c, ast.Constant)
                                  and isinstance(c.value, str)))
        if value is None or not keys:
            continue
        shown = next(iter(value.values())) if isinstance(value, dict) and len(value) == 1 else value
        rows.append(f"{'/'.join(keys[:2])} -> {json.dumps(shown, default=str)}")
    return ", ".join(rows) if len(rows) >= 4 else ""


def lookup_tables(classes: list[str]) -> dict[str, str]:
    """Per method of ``classes``, the table of values its code knows (read from the class's source with
    ``ast``, never executed). Why: the trial's planner had to recall BFCL's route table and distance table
    from memory (get_flight_cost fails on a route it does not price; estimate_distance knows a few pairs)."""
    import ast

    out: dict[str, str] = {}
    for cls in classes:
        try:
            tree = threadsafe_ast.parse(class_source_text(cls))
        except (SyntaxError, ValueError, TypeError):
            continue
        fns = [fn for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef)]
        lists = {fn.name: values for fn in fns if (values := _returned_list(fn))}
        for fn in fns:
            if fn.name.startswith("_"):
                continue
            # a check against another method's list: book_flight takes only list_all_airports' codes, fewer than
            # get_flight_cost prices (LLM trial 4, request 0018: PVG priced, then refused by the booking)
            checked = [f"checked against {m}(): {', '.join(lists[m])}" for m in dict.fromkeys(_self_calls(fn))
                       if m in lists and m != fn.name]
            table = "; ".join(x for x in (_method_table(fn), ", ".join(lists.get(fn.name, ())), *checked) if x)
            if table:
                out[fn.name] = _one_line(table, MAX_TABLE_CHARS)
    return out


def _returned_list(fn: Any) -> list[str]:
    """The strings of a literal list the method returns (``list_all_airports``), at least four; else []."""
    import ast

    for node in ast.walk(fn):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.List) and len(node.value.elts) >= 4 and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.value.elts):
            return [e.value for e in node.value.elts]
    return []


def _self_calls(fn: Any) -> list[str]:
    import ast

    return [c.func.attr for c in ast.walk(fn) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
            and isinstance(c.func.value, ast.Name) and c.func.value.id == "self"]


def _walk_strings(obj: Any, keys: set[str], values: set[str], depth: int = 0) -> None:
    if depth > 40:
        return
    if isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(k, str):
                keys.add(k)
            _walk_strings(v, keys, values, depth + 1)
    elif isinstance(obj, list):
        for v in obj:
            _walk_strings(v, keys, values, depth + 1)
    elif isinstance(obj, str):
        values.add(obj)


def _key_counts(obj: Any, counts: dict[str, int], depth: int = 0) -> None:
    if depth > 40:
        return
    if isinstance(obj, dict):
        for k, v in obj.items():
            counts[str(k)] = counts.get(str(k), 0) + 1
            _key_counts(v, counts, depth + 1)
    elif isinstance(obj, list):
        for v in obj:
            _key_counts(v, counts, depth + 1)


def _siblings(obj: Any, target: str, depth: int = 0) -> list[str] | None:
    """The other keys of the dict that holds ``target`` as a key (other files of its folder, other stocks)."""
    if depth > 40:
        return None
    if isinstance(obj, dict):
        if target in obj:
            return [str(k) for k in obj if k != target and isinstance(obj[k], dict)]
        for v in obj.values():
            found = _siblings(v, target, depth + 1)
            if found is not None:
                return found
    elif isinstance(obj, list):
        for v in obj:
            found = _siblings(v, target, depth + 1)
            if found is not None:
                return found
    return None


def _task_strings(task: Task) -> list[str]:
    """Strings the task is about: its calls' string arguments and state strings its text names, in order."""
    out: list[str] = []
    for turn in task.ground_truth:
        for call in turn:
            for v in _scalars(list(_bound_args(call).values())):
                if isinstance(v, str) and v not in out:
                    out.append(v)
    return out


def renamable_values(task: Task) -> dict[str, Any]:
    """What a plan may change in the initial state, the entities the task is about first.

    - ``task_entities``: the strings the seed's calls use that the state holds (its files, its
      ticker, its users), each with where it is, whether it may be renamed, and the other entries of
      the state of the same kind (another file of its folder, another stock the environment lists).
      A string the environment's code knows by name (a ticker in its price tables, a sector) cannot
      be renamed: a renamed 'AAPL' would be a stock nobody lists; pick another existing one instead.
    - ``entity_keys``: other names that are keys of the state (files, folders, stocks), never the
      field names of its records (``num_shares``, ``created_at``: they repeat across records or
      hold scalars, and renaming them breaks the environment);
    - ``values``: other string values of the state.
    """
    source = "\n".join(class_source_text(c) for c in task.involved_classes)
    keys: set[str] = set()
    values: set[str] = set()
    counts: dict[str, int] = {}
    for cls in task.involved_classes:
        _walk_strings(task.initial_config.get(cls, {}), keys, values)
        _key_counts(task.initial_config.get(cls, {}), counts)

    def fixed(s: str) -> bool:
        return bool(re.search(r"['\"]" + re.escape(s) + r"['\"]", source))

    def ok(s: str) -> bool:
        return 2 < len(s) <= 60 and "\n" not in s and not s.replace(".", "").isdigit() and not fixed(s)

    def entity_key(k: str) -> bool:  # a name (file, folder, stock), not a record's field name
        return ok(k) and counts.get(k, 0) == 1 and _holds_dict(task.initial_config, k)

    entities = []
    company = ticker_companies()
    for s in _task_strings(task):
        if s not in keys and s not in values or len(s) < 2:
            continue
        alts = [a for a in (_siblings(task.initial_config, s) or []) if a != s]
        if _file_node(task.initial_config, s):  # files and folders are the task's own: always renamable
            renamable = True
        else:  # a name the code knows, or a sibling of such names (a ticker of the price table), stays
            renamable = (2 <= len(s) <= 60 and not s.replace(".", "").isdigit() and not fixed(s)
                         and not any(fixed(a) for a in alts))
        # a ticker's company, for it and the others: the planner names the stock as the user would ('Quasar Ltd.'),
        # which LLM trial 5 (request 0064) had to guess while the rewrite prompt was told
        companies = {a: company[a] for a in [s, *alts[:20]] if a in company}
        entities.append({"value": s, "kind": "key" if s in keys else "value", "renamable": renamable,
                         **({"others_of_its_kind": alts[:20]} if alts else {}),
                         **({"company_names": companies} if companies else {})})
    named = {e["value"] for e in entities}
    return {"task_entities": entities,
            "entity_keys": sorted(k for k in keys if entity_key(k) and k not in named)[:120],
            "values": sorted(v for v in values - keys if ok(v) and v not in named)[:120]}


def _file_node(obj: Any, key: str, depth: int = 0) -> bool:
    """True when ``key`` names a file or folder of a file-system state ({"type": "file" | "directory"})."""
    if depth > 40:
        return False
    if isinstance(obj, dict):
        node = obj.get(key)
        if isinstance(node, dict) and node.get("type") in ("file", "directory"):
            return True
        return any(_file_node(v, key, depth + 1) for v in obj.values())
    return False


def _holds_dict(obj: Any, key: str, depth: int = 0) -> bool:
    if depth > 40:
        return False
    if isinstance(obj, dict):
        if isinstance(obj.get(key), dict):
            return True
        return any(_holds_dict(v, key, depth + 1) for v in obj.values())
    if isinstance(obj, list):
        return any(_holds_dict(v, key, depth + 1) for v in obj)
    return False


def initial_state_text(task: Task) -> str:
    """The initial state as JSON (shortened if huge), what the environment adds to it, and the renamable strings."""
    return f"initial_config: {_state_json(task)}\n{defaults_text(task)}renamable: {json.dumps(renamable_values(task))}"


_SKIP_DEFAULTS = {"long_context", "generated_ids"}


def defaults_text(task: Task) -> str:
    """What the environment holds beyond ``initial_config`` once loaded (its code's defaults: the users a
    message can go to, the file system's starting folder), one line per class; '' when nothing.

    Why: a plan and a judge can only use or check values the environment knows; before, the user ids
    behind the names a task mentions were nowhere in the prompts."""
    from envs.executor import Environment

    try:
        env = Environment(task.involved_classes, task.initial_config, False)
    except Exception:  # noqa: BLE001 - a prompt without the defaults still works
        return ""
    lines = []
    for cls in task.involved_classes:
        inst = env.instances.get(cls)
        if inst is None:
            continue
        given = task.initial_config.get(cls, {})
        extra = {k: v for k, v in vars(inst).items() if not k.startswith("_") and k not in given
                 and k not in _SKIP_DEFAULTS and v not in (None, "", [], {}, set())}
        cwd = getattr(getattr(inst, "_current_dir", None), "name", None)
        parts = [f"{k}={_one_line(json.dumps(v, default=str), 600)}" for k, v in extra.items()]
        if cwd:
            parts.append(f"the session starts in the folder {cwd!r}")
        if parts:
            lines.append(f"{cls} also holds (from its code, not from initial_config): " + "; ".join(parts))
    return "".join(line + "\n" for line in lines)


def _names(obj: Any, out: set[str], depth: int = 0) -> None:
    """Names an environment object holds: dict keys and ``name`` attributes, walked through objects."""
    if depth > 12:
        return
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.add(str(k))
            _names(v, out, depth + 1)
    elif isinstance(obj, list | tuple):
        for v in obj[:500]:
            _names(v, out, depth + 1)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        _names({k: v for k, v in vars(obj).items() if k != "parent"}, out, depth + 1)


def padding_text(task: Task) -> str:
    """What the long-context loader adds to the state the calls see (invisible in ``initial_config``)."""
    if not task.long_context:
        return ""
    from envs.executor import Environment

    try:
        plain = Environment(task.involved_classes, task.initial_config, False)
        padded = Environment(task.involved_classes, task.initial_config, True)
    except Exception:  # noqa: BLE001 - a prompt without the padding note still works
        return ""
    lines = []
    for cls in task.involved_classes:
        a, b = vars(plain.instances[cls]), vars(padded.instances[cls])
        for attr, value in b.items():
            if attr.startswith("_") or attr == "long_context" or a.get(attr) == value:
                continue
            before, after = set(), set()
            _names(a.get(attr), before, 0)
            _names(value, after, 0)
            added = sorted(after - before)
            lines.append(f"{cls}.{attr}: {len(added)} extra entries at load time"
                         + (f", e.g. {', '.join(added[:12])}" if added else "")
                         + f" ({len(str(a.get(attr)))} -> {len(str(value))} characters of state)")
    if not lines:
        return ""
    return ("The long-context loader pads the state after initial_config is loaded (the results shown "
            "include it); the task's names must stay unambiguous among these:\n- "
            + "\n- ".join(lines))


# ----------------------------------------------------------------------------- structure and category
def information_structure_of(task: Task, trace: Trace | None = None) -> Any:
    """H1's information structure of ``task`` (None when the detector is unavailable or fails)."""
    if _information_structure is None:
        return None
    try:
        return _information_structure(task, trace)
    except Exception:  # noqa: BLE001 - a prompt without this section still works; the verdict checks it
        return None


def _dump(obj: Any) -> Any:
    return obj.model_dump() if hasattr(obj, "model_dump") else obj


def _call_label(call: dict, swapped: dict[tuple[int, int], str] | None = None) -> str:
    name = call.get("name") or call.get("method") or call.get("call") or "?"
    cue = call.get("cue")
    new = (swapped or {}).get((call.get("turn", -1), call.get("index", -1)))
    if new and new != name:  # the plan swapped the function: the seed's cue describes the old one
        return f"{new} (was {name} in the seed" + (f", which said {_one_line(cue, 80)!r}; say it for {new}" if cue else "") + ")"
    return f"{name}" + (f" (cue: {_one_line(cue, 80)!r})" if cue else "")


def method_swaps(seed_ground_truth: list[list[str]], ground_truth: list[list[str]] | None) -> dict[tuple[int, int], str]:
    """(turn, index) -> the variant's function where the plan changed the seed's function at that position."""
    out: dict[tuple[int, int], str] = {}
    for t, (old, new) in enumerate(zip(seed_ground_truth, ground_truth or [], strict=False)):
        for i, (a, b) in enumerate(zip(old, new, strict=False)):
            if a.split("(", 1)[0] != b.split("(", 1)[0]:
                out[(t, i)] = b.split("(", 1)[0]
    return out


def _renamed(obj: Any, methods: dict[str, str]) -> Any:
    """``obj`` with every 'method' field mapped through ``methods`` (seed function -> variant function)."""
    if isinstance(obj, dict):
        return {k: (methods.get(v, v) if k == "method" and isinstance(v, str) else _renamed(v, methods))
                for k, v in obj.items()}
    if isinstance(obj, list):
        return [_renamed(v, methods) for v in obj]
    return obj


def structure_text(structure: Any, profile: Profile | None = None, seed_ground_truth: list[list[str]] | None = None,
                   ground_truth: list[list[str]] | None = None) -> str:
    """Per turn: explicit and implicit calls, conditions, references, transformations, withheld values.

    With the variant's ``ground_truth``, the block follows the plan's function swaps: a call the plan
    changed is named by its new function (its seed cue marked as the old one's), and references,
    transformations and withheld values name the variant's functions, so a rewrite is never told to
    keep 'copied' for a move or 'mean' for a standard deviation."""
    data = _dump(structure) if structure is not None else None
    turns = data.get("turns") if isinstance(data, dict) else None
    swapped = method_swaps(seed_ground_truth or [], ground_truth) if seed_ground_truth and ground_truth else {}
    if not isinstance(turns, list):
        if profile is None:
            return "(not available)"
        return "\n".join(f"Turn {t + 1}: argument values from {json.dumps(c)}"
                         for t, c in enumerate(profile.sources_by_turn)) + \
            "\n(user = stated by the user; call = from an earlier result; state = found in the state; composed = computed)"
    lines = []
    for t, turn in enumerate(turns):
        turn = _dump(turn) if not isinstance(turn, dict) else turn
        parts = []
        calls = turn.get("calls") or []
        by_name = {}
        for c in calls:
            if isinstance(c, dict) and (c.get("turn", t), c.get("index")) in swapped:
                by_name[c.get("method") or c.get("name")] = swapped[(c.get("turn", t), c.get("index"))]
        implicit = [_call_label(c, swapped) for c in calls if isinstance(c, dict) and c.get("explicit") is False]
        explicit = [_call_label(c, swapped) for c in calls if isinstance(c, dict) and c.get("explicit") is True]
        if explicit:
            parts.append("asked for: " + ", ".join(explicit))
        by_goal = [_call_label(c, swapped) for c in calls if isinstance(c, dict) and c.get("explicit") and c.get("by_goal")]
        if by_goal:  # trial 6: only the plan prompt said so, and 'check whether my tires are in top-notch condition'
            # named the check the seed asks for by its goal (goal_made_named, the sample lost after 8 calls)
            parts.append("asked for only by its goal, never by words naming the step (say what it is for, as the "
                         "seed's cue does): " + ", ".join(by_goal))
        if implicit:
            parts.append("implicit (left to the assistant, keep unsaid): " + ", ".join(implicit))
        for key in ("conditions", "limits", "references", "transformations", "withheld", "held_out_function"):
            value = turn.get(key)
            if value:
                value = _renamed(value, by_name)
                parts.append(f"{key}: {_one_line(json.dumps(value, default=str), 500)}")
        lines.append(f"Turn {t + 1}: " + ("; ".join(parts) if parts else "(nothing to keep)"))
    # a number the seed also states as a limit stays as it is: a fill of 30 gallons changed to 25 says nothing of the
    # threshold 'less than 30 psi' (base_84)
    limits = {_spoken_number(float(n)) for turn in turns if isinstance(turn, dict) for n in turn.get("limits") or []
              if isinstance(n, int | float)}
    stale = [(p, n) for p, n in (value_updates(seed_ground_truth, ground_truth)
                                 if seed_ground_truth and ground_truth else []) if not any(p.fullmatch(x) for x in limits)]
    return "\n".join(_updated(line, stale) for line in lines)


def value_updates(seed_ground_truth: list[list[str]], ground_truth: list[list[str]]) -> list[tuple[re.Pattern[str], str]]:
    """(pattern of an old value, new value) for every argument the plan changed at the same position (numbers as a
    user writes them, strings of three characters or more, a changed stock's company name): the seed's cues quoted
    in the structure block follow the plan. LLM trial 9's rewrites were told to keep the cue '150' beside a plan
    buying 100 shares, and '30 gallons' beside a fill of 25."""
    pairs: dict[str, str] = {}
    companies = ticker_companies()
    for old_turn, new_turn in zip(seed_ground_truth, ground_truth, strict=False):
        for old, new in zip(old_turn, new_turn, strict=False):
            oa, na = _bound_args(old), _bound_args(new)
            for k in oa.keys() & na.keys():
                o, n = oa[k], na[k]
                if o == n or isinstance(o, bool) or isinstance(n, bool) or not isinstance(o, str | int | float) \
                        or not isinstance(n, str | int | float):
                    continue
                so, sn = _spoken_number(o), _spoken_number(n)
                if len(so) >= 2 and not (isinstance(o, str) and len(so) < 3):
                    pairs.setdefault(so, sn)
                if isinstance(o, str) and isinstance(n, str) and o in companies and n in companies:
                    pairs.setdefault(companies[o], companies[n])
    return [(re.compile(rf"(?<![\w.]){re.escape(o)}(?![\w]|\.\d)"), n) for o, n in pairs.items()]


def _spoken_number(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _updated(line: str, stale: list[tuple[re.Pattern[str], str]]) -> str:
    for pattern, new in stale:
        line = pattern.sub(lambda _m, n=new: n, line)
    return line


def category_text(task: Task, profile: Profile, structure: Any = None) -> str:
    """What the task's category means for this task: which turn is empty and why, what is withheld or held out."""
    lines = {"base": ["base: every turn has a user request and ground-truth calls."],
             "long_context": ["long_context: the environment is filled with many extra entries (long tool results); "
                              "keep the long-context flag; the calls are as in base."]}.get(task.category, [])
    if task.category == "miss_param":
        withheld = _withheld(structure)
        for k in profile.miss_param_turns:
            what = withheld.get(k)
            what = (f"the value of {what}" if what else "one required value of the next turn's calls")
            lines.append(f"miss_param: turn {k + 1} leaves out {what} on purpose, so its ground truth is empty "
                         f"(the assistant must ask for it); turn {k + 2} supplies it and its ground truth makes the "
                         f"calls. Withhold the same parameter in turn {k + 1} and supply it only in turn {k + 2}.")
    if task.category == "miss_func":
        for reveal, names in sorted(task.missed_function.items()):
            lines.append(f"miss_func: {', '.join(names)} is held out: not offered before turn {reveal + 1}. "
                         f"The turn before it asks for work that needs it, so that turn's ground truth lacks it "
                         f"(the assistant cannot do it yet); turn {reveal + 1} has no user message, the function "
                         f"becomes available and the ground truth uses it. Never call it before turn {reveal + 1}.")
    empty = [t + 1 for t in profile.empty_turns]
    if empty:
        lines.append(f"Turns with an empty ground truth: {empty}.")
    return "\n".join(lines) or task.category


def _withheld(structure: Any) -> dict[int, str]:
    data = _dump(structure) if structure is not None else None
    out: dict[int, str] = {}
    for t, turn in enumerate((data or {}).get("turns") or [] if isinstance(data, dict) else []):
        turn = _dump(turn) if not isinstance(turn, dict) else turn
        w = turn.get("withheld")
        items = w if isinstance(w, list) else [w] if w else []
        for item in items:
            item = _dump(item)
            if isinstance(item, dict) and item.get("param"):
                out[t] = f"{item.get('method', '?')}.{item['param']}"
    return out


# ----------------------------------------------------------------------------- values the user states
def _bound_args(call: str) -> dict[str, Any]:
    try:
        parsed = parse_call(call)
    except CallError:
        return {}
    spec = build_catalog().methods.get(parsed.name)
    return bind_args(spec.cls if spec else None, parsed.name, parsed.args, parsed.kwargs)


def _scalars(value: Any) -> list[Any]:
    if isinstance(value, list | tuple):
        return [s for v in value for s in _scalars(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _scalars(v)]
    return [value]


def values_by_turn(seed_profile: Profile, ground_truth: list[list[str]], trace: Trace | None = None,
                   task: Task | None = None, gaps: frozenset[str] = frozenset()) -> list[dict[str, list[Any]]]:
    """Per turn of a candidate with the seed's shape: values the user must state, and values left unsaid.

    A position whose value the seed's user stated (source ``user``) must be stated; one the seed
    leaves to an earlier result or to the state must stay unstated. Choices and flags are said in
    words, so they are listed under neither. An argument the seed has no value for at that position
    (a function the plan swapped in: wc's file after du, grep's pattern after tail) must be stated,
    unless the candidate's ``trace`` shows it in an earlier result (then the assistant reads it there).
    With the candidate ``task`` and its ``trace``, a value the assistant must find in the state gets the
    words that single it out there (``hints``: the user id USR004 is found by the name 'Daniel'), so the
    text can name it without stating it. A value of a ``gaps`` slot ('turn T method.param', :func:`seed_gaps`: no
    text, hint, recipe or lookup of the seed gives it) must be stated: the offline drafts say it, and the verdict
    takes it as filling the seed's gap (LLM trial 7: a login password the rewrite had to leave unsaid, which an
    honest judge then refused as underivable, 22 calls on one seed).
    """
    out: list[dict[str, list[Any]]] = [{"state": [], "unstated": [], "new": []} for _ in ground_truth]
    seen: set[tuple[int, int, str]] = set()
    picks = _reference_picks(seed_profile)
    for a in seed_profile.arg_sources:
        if a.turn >= len(ground_truth) or a.index >= len(ground_truth[a.turn]):
            continue
        value = _bound_args(ground_truth[a.turn][a.index]).get(a.param)
        if value is None:
            continue
        seen.add((a.turn, a.index, a.param))
        if is_flag(a.method, a.param, value) or is_choice(a.method, a.param, value):
            continue
        stated = a.source == "user" or f"turn {a.turn} {a.method}.{a.param}" in gaps
        _add(out[a.turn], "state" if stated else "unstated", value)
        picked = picks.get((a.turn, a.param))
        if stated:
            continue
        if a.source == "state" and picked:  # the seed picks it by a reference: a name hint would make it easier
            out[a.turn].setdefault("hints", []).extend(
                f"{v} -> pick it the way the seed does ({picked}), never by a word of its name"
                for v in _scalars(value) if isinstance(v, str))
        elif a.source == "state" and trace is not None and task is not None:
            out[a.turn].setdefault("hints", []).extend(_hints(task, trace, a.turn, a.index, value))
    results = [r.result for r in trace.calls] if trace is not None else []
    pos_of = {(r.turn, r.index): p for p, r in enumerate(trace.calls)} if trace is not None else {}
    for t, calls in enumerate(ground_truth):
        for i, call in enumerate(calls):
            name = call.split("(", 1)[0]
            for param, value in _bound_args(call).items():
                if (t, i, param) in seen or value is None or is_flag(name, param, value) or is_choice(name, param, value):
                    continue
                earlier = results[: pos_of.get((t, i), 0)]
                # a number an earlier call printed (a distance, a count) is read there, not stated: before, a
                # swapped-in function's number was "must state" and the text had to restate turn 1's result
                from_result = any(isinstance(v, str) and len(v) >= 2 and any(v in r for r in earlier)
                                  or _is_number(v) and any(_is_number(leaf) and float(leaf) == float(v)
                                                           for r in earlier for leaf in _leaves(r))
                                  for v in _scalars(value))
                _add(out[t], "unstated" if from_result else "state", value)
                if not from_result:
                    _add(out[t], "new", value)
    for turn in out:  # a value stated by the user is never also "unstated"
        turn["unstated"] = [v for v in turn["unstated"] if v not in turn["state"]]
    return out


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _reference_picks(profile: Profile) -> dict[tuple[int, str], str]:
    """(turn, param) -> "a <kind> reference, cue '...'" for the values the seed's text picks by position,
    property or filter (from its information structure)."""
    info = _dump(getattr(profile, "information", None))
    out: dict[tuple[int, str], str] = {}
    for turn in (info or {}).get("turns") or [] if isinstance(info, dict) else []:
        for ref in (_dump(turn) if not isinstance(turn, dict) else turn).get("references") or []:
            ref = _dump(ref)
            if isinstance(ref, dict) and ref.get("param") is not None:
                out[(int(ref.get("turn", -1)), str(ref["param"]))] = (f"a {ref.get('kind')} reference, cue "
                                                                    f"{ref.get('cue', '')!r}")
    return out


def _hints(task: Task, trace: Trace, turn: int, index: int, value: Any) -> list[str]:
    """'value -> words' for the words of the state that single ``value`` out (see obtainability.state_hints)."""
    from rods_agents.analysis.obtainability import public_state, state_hints

    rec = next((r for r in trace.calls if r.turn == turn and r.index == index), None)
    if rec is None:
        return []
    try:
        state = public_state(task, rec.cls)
        return [f"{v} -> {h.say}" for v in _scalars(value) if isinstance(v, str)
                for h in state_hints(v, rec, state, "value")[:1]]
    except Exception:  # noqa: BLE001 - a prompt without hints still works; the verdict checks obtainability
        return []


def _add(turn: dict[str, list[Any]], key: str, value: Any) -> None:
    for v in _scalars(value):
        if isinstance(v, bool) or v is None or (isinstance(v, str) and len(v.strip()) < 2):
            continue
        if v not in turn[key]:
            turn[key].append(v)


def values_text(values: list[dict[str, list[Any]]], slots: list[int] | None = None) -> str:
    lines = []
    for t, v in enumerate(values):
        if slots is not None and t not in slots:
            continue
        lines.append(f"Turn {t + 1}: must state {json.dumps(v['state'], default=str)}; "
                     f"must stay unstated {json.dumps(v['unstated'], default=str)}"
                     + (f"; name those by {json.dumps(v['hints'])}" if v.get("hints") else ""))
    lines.append("(a value to state may already be said in an earlier turn, as the seed does; say it once. "
                 "'name those by' gives the words that single out a value the assistant must find in the state: "
                 "say those words, never the value itself)")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- rejections
_DETAIL_SKIP = {"profile", "seed_similarity", "test_similarity", "nearest_test", "llm_errors", "stage"}


def rejection_text(rejection: dict[str, Any]) -> str:
    """One rejected attempt in words: its reasons and the details that explain them."""
    reasons = ", ".join(rejection.get("reasons") or []) or "rejected"
    parts = []
    for key, value in (rejection.get("detail") or {}).items():
        if key in _DETAIL_SKIP or value in (None, [], {}, ""):
            continue
        parts.append(f"{key}: {_one_line(json.dumps(value, default=str), MAX_REJECTION_CHARS)}")
    note = " (a fault in the words: the rewrite was asked to fix it with this plan kept)" if rejection.get("text_fault") else ""
    return f"- attempt {int(rejection.get('attempt', 0)) + 1}{note}: {reasons}" + ("".join(f"\n    {p}" for p in parts))


def previous_text(rejections: list[dict[str, Any]]) -> str:
    if not rejections:
        return ""
    return ("\n## Your previous plans were rejected; fix exactly this\n"
            + "\n".join(rejection_text(r) for r in rejections[-3:]) + "\n")


# ----------------------------------------------------------------------------- the prompts
def plan_json(ground_truth: list[list[str]]) -> list[list[dict]]:
    """Ground truth in the plan answer's format: calls with name/value_json argument pairs."""
    out = []
    for turn in ground_truth:
        calls = []
        for call in turn:
            name = call.split("(", 1)[0]
            args = _bound_args(call)
            calls.append({"name": name, "arguments": [{"name": k, "value_json": json.dumps(v, default=str)}
                                                      for k, v in args.items()]})
        out.append(calls)
    return out


def render_plan_prompt(seed: Task, profile: Profile, trace: Trace, draft_ground_truth: list[list[str]],
                       draft_renames: dict[str, str], rejections: list[dict[str, Any]] | None = None,
                       draft_state_changes: dict[str, Any] | None = None) -> str:
    """The plan prompt for ``seed`` with the offline draft and the reasons earlier attempts were rejected.

    The draft's ``new_values`` are the counters and TravelAPI seed it drew, which every LLM plan keeps
    (:func:`rods_agents.variation.state_resample.drawn_id_changes`): without them LLM trial 9's planner read the
    draft's order 12475 against the state's order_counter 12446 and could not tell where the id came from."""
    structure = information_structure_of(seed, trace)
    drawn = drawn_id_changes(draft_state_changes or {})
    draft = {"turns": plan_json(draft_ground_truth),
             "renames": [{"old": o, "new": n} for o, n in draft_renames.items()],
             "new_values": [{"path": k, "value_json": json.dumps(v)} for k, v in sorted(drawn.items())]}
    return load_prompt("llm_plan.txt").format(
        n_turns=len(seed.ground_truth), turn_shape=[len(t) for t in seed.ground_truth],
        seed_turns=turns_text(seed), seed_ground_truth=ground_truth_text(seed, trace),
        category=category_text(seed, profile, structure), structure=structure_text(structure, profile),
        profile=profile_text(seed, profile, trace),
        initial_state=initial_state_text(seed) + ("\n" + padding_text(seed) if seed.long_context else ""),
        functions=function_docs(seed.involved_classes, seed.missed_function),
        draft=json.dumps(draft, default=str), previous=previous_text(rejections or []))


def changes_text(seed: Task, ground_truth: list[list[str]], initial_config: dict | None = None) -> str:
    """What the plan changed from the seed, per turn: functions swapped and argument values replaced."""
    lines = []
    for t, (old_turn, new_turn) in enumerate(zip(seed.ground_truth, ground_truth, strict=False)):
        for i, (old, new) in enumerate(zip(old_turn, new_turn, strict=False)):
            on, nn = old.split("(", 1)[0], new.split("(", 1)[0]
            oa, na = _bound_args(old), _bound_args(new)
            diffs = [f"{k}: {json.dumps(oa.get(k), default=str)} -> {json.dumps(na.get(k), default=str)}"
                     for k in dict.fromkeys([*oa, *na]) if oa.get(k) != na.get(k)]
            if on != nn:
                lines.append(f"Turn {t + 1}, call {i + 1}: the seed's {on} is now {nn}"
                             + (f"; {'; '.join(diffs)}" if diffs else ""))
            elif diffs:
                lines.append(f"Turn {t + 1}, call {i + 1} ({nn}): " + "; ".join(diffs))
    return "\n".join(lines) or "(no call changed: the change is in the state)"


def render_rewrite_prompt(seed: Task, profile: Profile, seed_trace: Trace, ground_truth: list[list[str]],
                          drafts: list[str], slots: list[int], feedback: str = "", trace: Trace | None = None,
                          task: Task | None = None) -> str:
    """The rewrite prompt: the seed's turns as reference, the variant's ground truth, values and structure.

    Everything that depends on the plan follows the plan: the values to state come from the variant's
    calls (a swapped-in function's new argument included), the structure block names the variant's
    functions, and a draft of a turn whose function the plan swapped says so."""
    structure = information_structure_of(seed, seed_trace)
    gt = ground_truth_text(Task.model_validate({**seed.model_dump(), "ground_truth": ground_truth}), trace) \
        if trace is not None else "\n".join(f"Turn {t + 1}: " + (", ".join(calls) if calls else "(no calls)")
                                           for t, calls in enumerate(ground_truth))
    note = (f"\nA reviewer rejected the previous version of these messages. Fix exactly this:\n{feedback}\n"
            if feedback else "")
    swapped = method_swaps(seed.ground_truth, ground_truth)

    def draft_line(i: int, t: int, d: str) -> str:
        mark = [f"{seed.ground_truth[t][k].split('(', 1)[0]} -> {name}" for (tt, k), name in swapped.items() if tt == t]
        return f"{i + 1}. (turn {t + 1}) {d}" + (f"\n   (this draft may still word the seed's call: the variant "
                                                 f"does {', '.join(mark)})" if mark else "")

    return load_prompt("llm_rewrite.txt").format(
        seed_turns=turns_text(seed), variant_ground_truth=gt, changes=changes_text(seed, ground_truth),
        values=values_text(values_by_turn(profile, ground_truth, trace, task, seed_gaps(seed)), slots),
        structure=structure_text(structure, profile, seed.ground_truth, ground_truth),
        category=category_text(seed, profile, structure), n_turns=len(drafts), feedback=note,
        drafts="\n".join(draft_line(i, t, d) for i, (t, d) in enumerate(zip(slots, drafts, strict=True))))


def _flat_paths(obj: Any, prefix: str = "", depth: int = 0) -> dict[str, Any]:
    if depth > 30:
        return {prefix: obj}
    if isinstance(obj, dict) and obj:
        out: dict[str, Any] = {}
        for k, v in obj.items():
            out.update(_flat_paths(v, f"{prefix}.{k}" if prefix else str(k), depth + 1))
        return out
    return {prefix: obj}


def state_changes_text(seed: Task, candidate: Task, limit: int = 40) -> str:
    """How the candidate's initial state differs from the seed's: paths added, removed or changed."""
    a, b = _flat_paths(seed.initial_config), _flat_paths(candidate.initial_config)
    lines = [f"- {k}: {_one_line(json.dumps(a.get(k), default=str), 120)} -> {_one_line(json.dumps(b.get(k), default=str), 120)}"
             if k in a and k in b else f"- {'added' if k in b else 'removed'} {k}"
             + (f" = {_one_line(json.dumps(b[k], default=str), 120)}" if k in b else "")
             for k in sorted(a.keys() | b.keys()) if a.get(k, _MISSING) != b.get(k, _MISSING)]
    more = f"\n- ... and {len(lines) - limit} more" if len(lines) > limit else ""
    return "\n".join(lines[:limit]) + more if lines else "(identical to the seed's initial state)"


_MISSING = object()
_WORD = re.compile(r"[a-z0-9]+(?:[.'_-][a-z0-9]+)*")


def _grams(text: str, n: int = 5) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return {tuple(words[i:i + n]) for i in range(max(0, len(words) - n + 1))}


def containment(text: str, reference: str, n: int = 5) -> float:
    """Share of the word ``n``-grams of ``text`` that also occur in ``reference`` (0 when text is shorter)."""
    grams = _grams(text, n)
    return round(len(grams & _grams(reference, n)) / len(grams), 3) if grams else 0.0


def user_text(task: Task) -> str:
    return "\n".join(m.content for turn in task.turns for m in turn if m.role == "user")


def novelty_facts(seed: Task, candidate: Task) -> dict[str, Any]:
    """Measured closeness of a candidate to its seed: 5-gram containment of the text (whole and per turn),
    digits-only difference, same function sequence, same ground truth once digits are masked, and whether the
    environment lets any entity of the seed's calls change at all."""
    st, ct = user_text(seed), user_text(candidate)
    mask = lambda x: re.sub(r"\d+", "#", x)  # noqa: E731
    per_turn = [containment(" ".join(m.content for m in c), " ".join(m.content for m in s))
                for s, c in zip(seed.turns, candidate.turns, strict=False) if c]
    return {"text_5gram_containment_in_seed": containment(ct, st), "per_turn_containment": per_turn,
            "text_identical": ct.strip() == st.strip(), "text_differs_only_in_digits": mask(ct) == mask(st),
            "same_functions_in_same_order": [c.split("(", 1)[0] for t in candidate.ground_truth for c in t]
            == [c.split("(", 1)[0] for t in seed.ground_truth for c in t],
            "ground_truth_same_once_digits_masked": mask(json.dumps(candidate.ground_truth))
            == mask(json.dumps(seed.ground_truth)),
            "entities_fixed_by_environment": entities_fixed(seed)}


def entities_fixed(seed: Task) -> bool:
    """True when no string the seed's calls use may be renamed or has another of its kind in the state
    (:func:`renamable_values`): a car whose tire shop, doors and ignition modes its code fixes. LLM trial 9 spent 19
    calls on miss_func_94, whose every candidate the judge refused as 'changes only in digits' although numbers,
    story and wording are all its environment lets change."""
    return not any(e["renamable"] or e.get("others_of_its_kind") for e in renamable_values(seed)["task_entities"])


def render_judge_prompt(seed: Task, profile: Profile, seed_trace: Trace, candidate: Task, trace: Trace) -> str:
    """The judge prompt: the seed and the candidate side by side, each with its state and its results,
    the seed's information structure, and measured novelty facts to ground the novelty decision."""
    structure = information_structure_of(seed, seed_trace)
    return load_prompt("llm_judge.txt").format(
        category=category_text(seed, profile, structure), seed_turns=turns_text(seed),
        seed_ground_truth=ground_truth_text(seed, seed_trace),
        structure=structure_text(structure, profile, seed.ground_truth, candidate.ground_truth),
        gaps=gaps_text(seed),
        seed_state=_state_json(seed) + "\n" + defaults_text(seed), candidate_state_changes=state_changes_text(seed, candidate),
        padding=padding_text(candidate) or ("(a long-context task whose loader adds nothing to these classes' state)"
                                            if candidate.long_context else "(no padding: not a long-context task)"),
        candidate_turns=turns_text(candidate), candidate_ground_truth=ground_truth_text(candidate, trace),
        changes=changes_text(seed, candidate.ground_truth),
        novelty=json.dumps(novelty_facts(seed, candidate)))


def gaps_text(seed: Task) -> str:
    """The seed's gap slots (:func:`seed_gaps`), one per line with the seed's value, for the judge: LLM trial 8 refused
    miss_param_173's variant as easier twice for stating the ticket id the seed leaves no way to find, which the rewrite
    had been told it must state."""
    gaps = seed_gaps(seed)
    lines = []
    for t, calls in enumerate(seed.ground_truth):
        for call in calls:
            name = call.split("(", 1)[0]
            for param, value in _bound_args(call).items():
                if f"turn {t} {name}.{param}" in gaps:
                    lines.append(f"Turn {t + 1}: {name}.{param} = {json.dumps(value, default=str)}")
    return "\n".join(lines) or "(none)"


def _state_json(task: Task) -> str:
    state = json.dumps(task.initial_config, sort_keys=True, default=str)
    return state if len(state) <= MAX_STATE_CHARS else state[:MAX_STATE_CHARS] + f" ... ({len(state) - MAX_STATE_CHARS} more characters)"


def render_patch_prompt(task: Task, error: dict[str, Any]) -> str:
    name = str(error.get("call", "")).split("(", 1)[0]
    return load_prompt("llm_config_patch.txt").format(
        error=error.get("error", ""), call=error.get("call", ""), cls=error.get("class", ""),
        function=_function_line(name),
        config=json.dumps(task.initial_config, default=str)[:MAX_STATE_CHARS])


def _function_line(name: str) -> str:
    spec = build_catalog().methods.get(name)
    if spec is None:
        return name or "?"
    return next((line for line in function_docs([spec.cls]).splitlines() if line.startswith(f"{name}(")), name)


# ----------------------------------------------------------------------------- the profile the verdict checks
def offered_swaps(method: str, fed_params: set[str]) -> list[str]:
    """The functions a call may be swapped for that keep what the verdict checks: not one that errors in the
    environment (``never_swap_in`` of ``llm_preconditions.json``), nor one with fewer parameters than the
    values earlier results feed this call (get_booking_history for retrieve_invoice(access_token, booking_id)
    drops the booking id's data flow). Before, the trial's planner learned both from rejections."""
    from rods_agents.analysis.skills import skill_mates

    never = set(knowledge.preconditions().get("never_swap_in", []))
    methods = build_catalog().methods
    own = {p.name for p in methods[method].params} if method in methods else set()

    def keeps_flow(mate: str) -> bool:  # each fed value has a parameter to go to: its own or a new required one
        params = {p.name for p in methods[mate].params} if mate in methods else own
        required = {p.name for p in methods[mate].params if p.required} if mate in methods else own
        return all(p in params or required - own for p in fed_params if p)

    return [m for m in skill_mates(method) if m not in never and keeps_flow(m)]


def profile_text(seed: Task, profile: Profile, trace: Trace) -> str:
    """The skill-level profile the verdict compares (:mod:`rods_agents.analysis.skills`), per turn, in words.

    Why: the verdict refuses any plan that breaks it; a planner that is not told the rule can only
    guess (before, every function swap that changed a turn's count of value sources was refused
    although the prompt never said so)."""
    from rods_agents.analysis.skills import skill_profile

    skills = getattr(profile, "skills", None) or skill_profile(seed, trace, profile)
    lines = ["Per turn, position by position (turn.call):"]
    held = {f for names in seed.missed_function.values() for f in names}
    for t, (turn, summary) in enumerate(zip(skills.turns, skills.summary(), strict=True)):
        if not turn.calls:
            lines.append(f"Turn {t + 1}: no calls (keep it empty)")
            continue
        lines.append(f"Turn {t + 1}:")
        for c in turn.calls:
            # the function a miss_func task holds out stays: a swap would make the turn before its reveal answerable
            # (LLM trial 10, miss_func_115: add_to_watchlist swapped for remove_stock_from_watchlist, refused by the judge)
            mates = [] if c.method in held else offered_swaps(
                c.method, {e.param for e in skills.data_edges if e.target == (t, c.index)})
            lines.append(f"  {t + 1}.{c.index + 1} {c.call}: skill {c.skill.split('/', 1)[1]} (kind {c.kind}), "
                         f"{'asked for in the text' if c.explicit else 'left implicit (the user does not ask for it)'}"
                         + (f"; may be swapped for {', '.join(mates)}" if mates else
                            "; the function this task holds out: keep it" if c.method in held
                            else "; no other function of its skill"))
        keep = {k: v for k, v in summary.items() if k not in ("turn", "skills", "asked_for", "implicit") and v}
        if turn.discovered:
            keep["values_found_in_state"] = turn.discovered
        if keep:
            lines.append("  keep: " + json.dumps(keep, default=str))
    flow = [f"{e.source[0] + 1}.{e.source[1] + 1} -> {e.target[0] + 1}.{e.target[1] + 1} ({e.param})"
            for e in skills.data_edges]
    lines.append("Data flow (a value printed by the first call is an argument of the second): "
                 + (", ".join(flow) if flow else "none") + f"; longest chain: {skills.depth} calls.")
    return "\n".join(lines)
