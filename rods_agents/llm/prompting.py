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

from envs.executor import CallError, parse_call
from envs.task import Task
from prompts import load_prompt, load_prompt_json
from rods_agents.analysis.catalog import build_catalog, class_source_text
from rods_agents.analysis.profile import Profile
from rods_agents.analysis.tracing import Trace, bind_args, trace_task
from rods_agents.analysis.value_sources import is_choice, is_flag

MAX_STATE_CHARS = 6000
_LOGIN_ATTRS = {"authenticated", "current_user", "access_token"}
MAX_RESULT_CHARS = 300
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


def ground_truth_text(task: Task, trace: Trace | None = None) -> str:
    """Per turn, the ground-truth calls; list- and id-producing calls show their (shortened) result."""
    trace = trace if trace is not None else trace_task(task)
    by_pos = {(r.turn, r.index): r for r in trace.calls}
    lines = []
    for t, calls in enumerate(task.ground_truth):
        if not calls:
            lines.append(f"Turn {t + 1}: (no calls)")
            continue
        lines.append(f"Turn {t + 1}:")
        for i, call in enumerate(calls):
            rec = by_pos.get((t, i))
            shown = f"  {call}"
            if rec is not None and rec.error:
                shown += f"  -> error: {_one_line(rec.error, 160)}"
            elif rec is not None and _worth_showing(rec.result):
                shown += f"  -> {_one_line(rec.result, MAX_RESULT_CHARS)}"
            lines.append(shown)
    return "\n".join(lines)


# ----------------------------------------------------------------------------- functions and state
def function_docs(classes: list[str], held_out: dict[int, list[str]] | None = None) -> str:
    """One line per function of ``classes``: parameters (* = required), options, preconditions, held-out note."""
    table = load_prompt_json("bfcl/llm_preconditions.json")
    by_attr, by_method = table.get("attributes", {}), table.get("methods", {})
    reveal_of = {n: t for t, names in (held_out or {}).items() for n in names}
    lines = []
    for name, spec in sorted(build_catalog().methods.items()):
        if spec.cls not in classes:
            continue
        params = ", ".join(f"{p.name}{'*' if p.required else ''}: {p.type}" for p in spec.params)
        line = f"{name}({params}) [{spec.cls}, {spec.role}]: {_one_line(spec.description, 160)}"
        options = [f"{p.name} one of {p.enum}" for p in spec.params if p.enum]
        if options:
            line += " Options: " + "; ".join(options) + "."
        pre = [by_method[name]] if name in by_method else []
        pre += [phrase for attr, phrase in by_attr.items()  # a login method sets what it would need
                if attr in spec.reads and not (attr in _LOGIN_ATTRS and attr in spec.writes) and phrase not in pre]
        if pre:
            line += " Needs: " + "; ".join(dict.fromkeys(pre)) + "."
        if name in reveal_of:
            line += f" HELD OUT: not available before turn {reveal_of[name] + 1}."
        lines.append(line)
    return "\n".join(lines)


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


def renamable_values(task: Task) -> dict[str, list[str]]:
    """Strings of the initial state a plan may rename, keys (file and folder names) apart from values.

    Structural keys and values the environment's code hard-codes (attribute names, 'file', stock
    tables) are left out: renaming them would break the environment.
    """
    source = "\n".join(class_source_text(c) for c in task.involved_classes)
    keys: set[str] = set()
    values: set[str] = set()
    for cls in task.involved_classes:
        _walk_strings(task.initial_config.get(cls, {}), keys, values)

    def ok(s: str) -> bool:
        return (2 < len(s) <= 60 and "\n" not in s and not s.replace(".", "").isdigit()
                and not re.search(r"['\"]" + re.escape(s) + r"['\"]", source))

    return {"entity_keys": sorted(k for k in keys if ok(k))[:150],
            "values": sorted(v for v in values - keys if ok(v))[:150]}


def initial_state_text(task: Task) -> str:
    """The initial state as JSON (shortened if huge) and, apart from it, the renamable strings."""
    state = json.dumps(task.initial_config, indent=None, sort_keys=True, default=str)
    if len(state) > MAX_STATE_CHARS:
        state = state[:MAX_STATE_CHARS] + f" ... ({len(state) - MAX_STATE_CHARS} more characters)"
    return f"initial_config: {state}\nrenamable: {json.dumps(renamable_values(task))}"


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


def _call_label(call: dict) -> str:
    name = call.get("name") or call.get("method") or call.get("call") or "?"
    cue = call.get("cue")
    return f"{name}" + (f" (cue: {_one_line(cue, 80)!r})" if cue else "")


def structure_text(structure: Any, profile: Profile | None = None) -> str:
    """Per turn: explicit and implicit calls, conditions, references, transformations, withheld values."""
    data = _dump(structure) if structure is not None else None
    turns = data.get("turns") if isinstance(data, dict) else None
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
        implicit = [_call_label(c) for c in calls if isinstance(c, dict) and c.get("explicit") is False]
        explicit = [_call_label(c) for c in calls if isinstance(c, dict) and c.get("explicit") is True]
        if explicit:
            parts.append("asked for: " + ", ".join(explicit))
        if implicit:
            parts.append("implicit (left to the assistant, keep unsaid): " + ", ".join(implicit))
        for key in ("conditions", "references", "transformations", "withheld", "held_out_function"):
            value = turn.get(key)
            if value:
                parts.append(f"{key}: {_one_line(json.dumps(value, default=str), 500)}")
        lines.append(f"Turn {t + 1}: " + ("; ".join(parts) if parts else "(nothing to keep)"))
    return "\n".join(lines)


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


def values_by_turn(seed_profile: Profile, ground_truth: list[list[str]]) -> list[dict[str, list[Any]]]:
    """Per turn of a candidate with the seed's shape: values the user must state, and values left unsaid.

    A position whose value the seed's user stated (source ``user``) must be stated; one the seed
    leaves to an earlier result or to the state must stay unstated. Choices and flags are said in
    words, so they are listed under neither.
    """
    out: list[dict[str, list[Any]]] = [{"state": [], "unstated": []} for _ in ground_truth]
    for a in seed_profile.arg_sources:
        if a.turn >= len(ground_truth) or a.index >= len(ground_truth[a.turn]):
            continue
        value = _bound_args(ground_truth[a.turn][a.index]).get(a.param)
        if value is None or is_flag(a.method, a.param, value) or is_choice(a.method, a.param, value):
            continue
        key = "state" if a.source == "user" else "unstated"
        for v in _scalars(value):
            if isinstance(v, bool) or v is None or (isinstance(v, str) and len(v.strip()) < 2):
                continue
            if v not in out[a.turn][key]:
                out[a.turn][key].append(v)
    for turn in out:  # a value stated by the user is never also "unstated"
        turn["unstated"] = [v for v in turn["unstated"] if v not in turn["state"]]
    return out


def values_text(values: list[dict[str, list[Any]]], slots: list[int] | None = None) -> str:
    lines = []
    for t, v in enumerate(values):
        if slots is not None and t not in slots:
            continue
        lines.append(f"Turn {t + 1}: must state {json.dumps(v['state'], default=str)}; "
                     f"must stay unstated {json.dumps(v['unstated'], default=str)}")
    lines.append("(a value to state may already be said in an earlier turn, as the seed does; say it once)")
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
        parts.append(f"{key}: {_one_line(json.dumps(value, default=str), 500)}")
    return f"- attempt {int(rejection.get('attempt', 0)) + 1}: {reasons}" + (f" ({'; '.join(parts)})" if parts else "")


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
                       draft_renames: dict[str, str], rejections: list[dict[str, Any]] | None = None) -> str:
    """The plan prompt for ``seed`` with the offline draft and the reasons earlier attempts were rejected."""
    structure = information_structure_of(seed, trace)
    draft = {"turns": plan_json(draft_ground_truth),
             "renames": [{"old": o, "new": n} for o, n in draft_renames.items()], "new_values": []}
    return load_prompt("llm_plan.txt").format(
        n_turns=len(seed.ground_truth), turn_shape=[len(t) for t in seed.ground_truth],
        seed_turns=turns_text(seed), seed_ground_truth=ground_truth_text(seed, trace),
        category=category_text(seed, profile, structure), structure=structure_text(structure, profile),
        initial_state=initial_state_text(seed), functions=function_docs(seed.involved_classes, seed.missed_function),
        draft=json.dumps(draft, default=str), previous=previous_text(rejections or []))


def render_rewrite_prompt(seed: Task, profile: Profile, seed_trace: Trace, ground_truth: list[list[str]],
                          drafts: list[str], slots: list[int], feedback: str = "") -> str:
    """The rewrite prompt: the seed's turns as reference, the variant's ground truth, values and structure."""
    structure = information_structure_of(seed, seed_trace)
    gt = "\n".join(f"Turn {t + 1}: " + (", ".join(calls) if calls else "(no calls)") for t, calls in enumerate(ground_truth))
    note = (f"\nA reviewer rejected the previous version of these messages. Fix exactly this:\n{feedback}\n"
            if feedback else "")
    return load_prompt("llm_rewrite.txt").format(
        seed_turns=turns_text(seed), variant_ground_truth=gt,
        values=values_text(values_by_turn(profile, ground_truth), slots),
        structure=structure_text(structure, profile), category=category_text(seed, profile, structure),
        n_turns=len(drafts), feedback=note,
        drafts="\n".join(f"{i + 1}. (turn {t + 1}) {d}" for i, (t, d) in enumerate(zip(slots, drafts, strict=True))))


def render_judge_prompt(seed: Task, profile: Profile, seed_trace: Trace, candidate: Task, trace: Trace) -> str:
    """The judge prompt: the seed and the candidate side by side, with the seed's information structure."""
    structure = information_structure_of(seed, seed_trace)
    return load_prompt("llm_judge.txt").format(
        category=category_text(seed, profile, structure), seed_turns=turns_text(seed),
        seed_ground_truth=ground_truth_text(seed, seed_trace), structure=structure_text(structure, profile),
        candidate_turns=turns_text(candidate), candidate_ground_truth=ground_truth_text(candidate, trace))


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
