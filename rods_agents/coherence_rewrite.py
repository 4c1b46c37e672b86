"""Stage 3: write the user turns of a plan, all anchored to one narrative goal.

The first turn states the goal; every later turn opens with a connector back to it. Each call is
described by its per-method template (``prompts/offline_templates.json``). A value is spelled out
only where the seed's user spelled it out; elsewhere the text refers to it, so the variant keeps its
seed's information structure (what must be discovered stays to be discovered) while every value stays
obtainable (:mod:`rods_agents.obtainability`):

- returned by an earlier call: "the order from the earlier result";
- read from the state: a hint that singles it out, e.g. "the .docx file there", "the file with
  'report' in its name", "the ticket listed with 'Login issue'", "Kelly", "San Francisco"; when the
  variant's state offers no unique hint the value is stated (counted by the verdict);
- composed: its recipe, e.g. "in the form '<from the earlier result> bytes'", "worked out as 50
  minus the current fuel level";
- choices (enum values, ``prompts/value_phrases.json``) are said in words: "a buy order".

A reference swallows the template's own noun and article next to it ("details of order {order_id}"
-> "details of the order from the earlier result"), and :func:`clean_text` removes doubled words.

Category rules: miss_param withholds one required literal in its turn (whose ground truth is empty)
and supplies it in the next user turn; miss_func describes the held-out function's work in the turn
before the reveal and leaves the reveal turn's question empty; long_context keeps its flag (the id).
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import lru_cache
from typing import Any

from envs.executor import CallError, parse_call
from envs.task import Message, Task
from rods_agents.catalog import build_catalog
from rods_agents.obtainability import public_state, recipe, state_hints
from rods_agents.plan_sampling import PROMPTS, Plan
from rods_agents.profile_extraction import Profile
from rods_agents.runtime_utils import emit, rng_for, stage_timer
from rods_agents.tracing import bind_args, trace_task
from rods_agents.value_sources import choice_phrases, is_flag, state_values

_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_ARTICLES = {"a", "an", "the"}
# booleans are choices, not information: they are always said, in words
_BOOL_WORDS = {"unlock": ("unlock", "lock"), "activate": ("turn on", "turn off"), "a": ("including hidden ones", ""),
               "detailed": ("in detail", "briefly")}


@lru_cache(maxsize=1)
def templates() -> dict[str, str]:
    return {k: v for k, v in json.loads((PROMPTS / "offline_templates.json").read_text()).items() if not k.startswith("_")}


@lru_cache(maxsize=1)
def narratives() -> dict[str, Any]:
    return json.loads((PROMPTS / "offline_narratives.json").read_text())


def noun(param: str) -> str:
    return narratives()["nouns"].get(param, re.sub(r"(?<=[a-z])(?=[A-Z])", " ", param).replace("_", " ").lower())


def say(value: Any) -> str:
    """How a stated value is written in a user turn."""
    if isinstance(value, str):
        return f"'{value}'"
    if isinstance(value, list | tuple):
        return ", ".join(say(v) for v in value) if value else "nothing"
    if isinstance(value, dict):
        return json.dumps(value)
    return str(value)


def say_choice(method: str, param: str, value: Any) -> str:
    """A choice (enum value, phrase-table value) in words."""
    phrase = choice_phrases().get(f"{method}.{param}", {}).get(repr(value))
    if phrase:
        return phrase
    if isinstance(value, list | tuple):
        words = [str(v).replace("_", " ") for v in value]
        return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
    return say(value)


def clean_text(text: str) -> str:
    """Grammar fixes after filling a template: no doubled words, no article before an article."""
    text = re.sub(r"\b(a|an|the) (?=(?:a|an|the) )", "", text, flags=re.I)
    text = re.sub(r"\b([A-Za-z]{2,})( \1\b)+", r"\1", text, flags=re.I)
    text = re.sub(r"\ba (?=[aeiouAEIOU]\w)", "an ", text)
    text = re.sub(r"\ban (?=[^aeiouAEIOU\s'\"])", "a ", text)
    return re.sub(r"\s{2,}", " ", text).strip()


def describe_call(name: str, args: dict[str, Any], sources: dict[str, str], withheld: str | None = None,
                  refs: dict[str, str] | None = None) -> str:
    """One call as a request: stated values where ``sources[param] == 'user'``, choices in words,
    and for the rest the reference in ``refs`` (a unique hint or a recipe) or 'the <noun> from the
    earlier result'. A reference swallows the template's own noun and article next to it."""
    refs = refs or {}

    def render(param: str) -> tuple[str, bool]:
        if param not in args:
            return f"the {noun(param)}", True
        value = args[param]
        if isinstance(value, bool):
            yes, no = _BOOL_WORDS.get(param, (f"with {noun(param)} on", f"with {noun(param)} off"))
            return (yes if value else no), False
        if param == withheld:
            return f"the {noun(param)}", True
        if is_flag(name, param, value) and (not isinstance(value, str) or value.strip() not in ("", ".", "..")
                                            or repr(value) in choice_phrases().get(f"{name}.{param}", {})):
            return say_choice(name, param, value), False
        if param in refs:
            return refs[param], refs[param].startswith("the ")
        if sources.get(param) == "user" or is_flag(name, param, value):
            return say(value), False
        if sources.get(param) == "call":
            return f"the {noun(param)} from the earlier result", True
        return f"the {noun(param)}", True

    template = templates().get(name)
    if template is None:
        spec = build_catalog().methods.get(name)
        desc = (spec.description.split(".")[0] if spec else name).strip()
        template = desc[:1].lower() + desc[1:]
    used = set(_PLACEHOLDER.findall(template))
    parts = re.split(r"(\{\w+\})", template)
    out: list[str] = []
    for i, part in enumerate(parts):
        m = _PLACEHOLDER.fullmatch(part)
        if not m:
            out.append(part)
            continue
        text, is_ref = render(m.group(1))
        if is_ref:
            words = set(noun(m.group(1)).lower().split())
            prev = out[-1] if out else ""
            pm = re.search(r"(\w+)(\s*)$", prev)
            if pm and (pm.group(1).lower() in _ARTICLES or pm.group(1).lower() in words):
                out[-1] = prev[: pm.start()]
            while i + 1 < len(parts):  # the template's noun after the slot ('{fuelAmount} gallons of fuel')
                nm = re.match(r"^(\s*)(\w+)", parts[i + 1])
                if not (nm and nm.group(2).lower() in words and nm.group(2).lower() not in _ARTICLES):
                    break
                parts[i + 1] = parts[i + 1][nm.end():]
        out.append(text)
    text = "".join(out)
    flags = [render(p)[0] for p, v in args.items() if p not in used and isinstance(v, bool)]
    extras = [p for p, v in args.items() if p not in used and not isinstance(v, bool) and v is not None]
    if extras:
        phrases, bare = [], []
        for p in extras:
            r, is_ref = render(p)
            if repr(args[p]) in choice_phrases().get(f"{name}.{p}", {}):
                bare.append(r)  # a phrase-table choice reads on its own ('just the last line')
            else:
                phrases.append(r if is_ref else f"{noun(p)} {r}")
        if phrases:
            text += " with " + " and ".join(phrases)
        if bare:
            text += ", " + ", ".join(bare)
    flags = [f for f in flags if f]
    if flags:
        text += " " + ", ".join(f for f in flags)
    return clean_text(text)


def _join(phrases: list[str]) -> str:
    if not phrases:
        return ""
    if len(phrases) == 1:
        return phrases[0][:1].upper() + phrases[0][1:] + "."
    middle = "".join(f", then {p}" for p in phrases[1:-1])
    return f"First {phrases[0]}{middle}, and then {phrases[-1]}."


def withheld_param(seed: Task, profile: Profile, turn: int) -> tuple[int, str] | None:
    """The argument a miss_param seed withholds at ``turn`` and supplies at ``turn + 1``."""
    before = "\n".join(m.content for t in seed.turns[: turn + 1] for m in t).lower()
    candidates = [a for a in profile.arg_sources if a.turn == turn + 1 and a.source == "user"]
    for a in candidates:
        value = a.value.strip("'\"").lower()
        if value and value not in before:
            return a.index, a.param
    return (candidates[0].index, candidates[0].param) if candidates else None


def rewrite_plan(seed: Task, profile: Profile, plan: Plan, rng: Any) -> list[list[Message]]:
    """User turns for ``plan``, written from the seed's own turns (one message per seed message; a
    miss_func reveal turn stays empty): the plan's renames, new numbers, swapped options and method
    phrases are carried into the seed's wording, so its implicit steps, conditions, references,
    transformations and withheld values survive (see :mod:`rods_agents.seed_anchor`)."""
    from rods_agents.anchored_plan import carry_turn

    return [[Message(role=m.role, content=carry_turn(m.content, t, plan)) for m in turn]
            for t, turn in enumerate(seed.turns)]


def template_turns(seed: Task, profile: Profile, plan: Plan, rng: Any) -> list[list[Message]]:
    """User turns written from the plan's calls, one templated phrase per call (the earlier offline
    rewrite; it names every call, so it makes implicit steps explicit: kept for comparison only)."""
    nar = narratives()
    first = next((c for turn in plan.ground_truth for c in turn), "")
    owner = build_catalog().methods.get(first.split("(", 1)[0])
    cls = owner.cls if owner else seed.involved_classes[0]
    # the topic word must not leak a value into the text (it would turn a discovered value into a stated one)
    plan_text = json.dumps(plan.ground_truth).lower() + json.dumps(plan.initial_config).lower()
    words = [w for w in json.loads((PROMPTS / "offline_vocab.json").read_text())["words"] if w not in plan_text]
    topic = rng.choice(words or ["weekly"])
    goal = rng.choice(nar["goals"].get(cls, ["I am working on the {topic} task"])).format(topic=topic)
    short = f"{topic} work"
    sources = {(a.turn, a.index, a.param): a.source for a in profile.arg_sources}
    draft = Task(id=f"multi_turn_{seed.category}_{seed.scenario}__draft", category=seed.category,
                 scenario=seed.scenario, turns=[[] for _ in plan.ground_truth], initial_config=plan.initial_config,
                 involved_classes=list(seed.involved_classes), missed_function=dict(seed.missed_function),
                 ground_truth=plan.ground_truth)
    vtrace = trace_task(draft)  # results and working directories the hints and recipes point at
    recs = {(r.turn, r.index): (pos, r) for pos, r in enumerate(vtrace.calls)}
    states: dict[str | None, dict] = {}
    strings = state_values(draft)[0]

    def references(t: int, i: int, name: str, args: dict[str, Any], src: dict[str, str], text: str) -> dict[str, str]:
        """Unique hints for state values and recipes for composed ones (value_sources / obtainability)."""
        found = recs.get((t, i))
        if found is None:
            return {}
        pos, rec = found
        if rec.cls not in states:
            states[rec.cls] = public_state(draft, rec.cls)
        refs: dict[str, str] = {}
        for p, value in args.items():
            if is_flag(name, p, value) or src.get(p) not in ("state", "composed"):
                continue
            if src[p] == "state":
                items = value if isinstance(value, list) else [value]
                hints = [state_hints(v, rec, states[rec.cls], noun(p)) for v in items]
                if all(hints):
                    refs[p] = " and ".join(h[0].say for h in hints)
                else:  # no unique hint exists: say the value (a documented, counted change)
                    refs[p] = say(value)
            else:
                r = recipe(value, text, [c.result for c in vtrace.calls[:pos]], states[rec.cls], name, strings)
                if r is not None:
                    refs[p] = f"the {noun(p)} {r.say}"
        return refs

    def turn_phrases(t: int, withheld: tuple[int, str] | None = None, before: str = "") -> list[str]:
        out = []
        for i, call in enumerate(plan.ground_truth[t]):
            try:
                parsed = parse_call(call)
            except CallError:
                continue
            spec = build_catalog().methods.get(parsed.name)
            args = bind_args(spec.cls if spec else None, parsed.name, parsed.args, parsed.kwargs)
            src = {p: sources.get((t, i, p), "composed") for p in args}
            refs = references(t, i, parsed.name, args, src, before + " " + " ".join(out))
            out.append(describe_call(parsed.name, args, src, withheld[1] if withheld and withheld[0] == i else None,
                                     refs))
        return out

    turns: list[list[Message]] = []

    def said() -> str:
        return "\n".join(m.content for turn in turns for m in turn)

    n = len(plan.ground_truth)
    reveal = set(seed.missed_function)
    for t in range(n):
        if t in reveal:
            turns.append([])
            continue
        if plan.ground_truth[t]:
            if t > 0 and t - 1 in profile.miss_param_turns:
                wh = withheld_param(seed, profile, t - 1)
                if wh is None:
                    text = "Please go ahead with that now."
                else:
                    parsed = parse_call(plan.ground_truth[t][wh[0]])
                    spec = build_catalog().methods.get(parsed.name)
                    value = bind_args(spec.cls if spec else None, parsed.name, parsed.args, parsed.kwargs).get(wh[1])
                    text = rng.choice(nar["supply"]).format(noun=noun(wh[1]), value=say(value))
            else:
                text = _join(turn_phrases(t, before=said()))
        elif t + 1 in reveal and t + 1 < n:
            text = _join(turn_phrases(t + 1, before=said()))  # ask for the held-out function's work before it exists
        elif t in profile.miss_param_turns:
            text = _join(turn_phrases(t + 1, withheld_param(seed, profile, t), before=said()))
        else:
            text = rng.choice(nar["infeasible"])
        if not turns or all(not m for m in turns):
            text = rng.choice(nar["openers"]).format(goal=goal) + " " + text
        else:
            lead = text if text.startswith(("I ", "I'")) else text[:1].lower() + text[1:]
            text = rng.choice(nar["connectors"]).format(short=short) + " " + lead
        turns.append([Message(role="user", content=text)])
    return turns


def variant_id(seed: Task, variant: int, run_seed: int, attempt: int) -> str:
    digest = hashlib.sha256(f"{seed.id}|{variant}|{run_seed}|{attempt}".encode()).hexdigest()[:8]
    return f"multi_turn_{seed.category}_{seed.scenario}__rods_{digest}"


def build_variant(seed: Task, turns: list[list[Message]], plan: Plan, variant: int, run_seed: int) -> Task:
    return Task(id=variant_id(seed, variant, run_seed, plan.attempt), category=seed.category, scenario=seed.scenario,
                turns=turns, initial_config=plan.initial_config, involved_classes=list(seed.involved_classes),
                missed_function=dict(seed.missed_function), ground_truth=plan.ground_truth)


def rewrite_turns(state: dict, runtime: Any = None) -> dict:
    """Graph node: write the user turns and assemble the candidate task (offline; the LLM rewrite stage
    rewrites them in :mod:`rods_agents.llm_nodes`)."""
    with stage_timer(state, "rewrite") as timings:
        seed = Task.model_validate(state["seed"])
        profile = Profile.model_validate(state["profile"])
        plan = Plan.model_validate(state["plan"])
        run_seed = getattr(getattr(runtime, "context", None), "seed", 0) if runtime is not None else 0
        rng = rng_for(run_seed, seed.id, state.get("variant", 0), plan.attempt, "rewrite")
        turns = rewrite_plan(seed, profile, plan, rng)
        task = build_variant(seed, turns, plan, int(state.get("variant", 0)), run_seed)
    emit(runtime, state, "rewrite", "ok")
    return {"task": task.model_dump(), "timings": timings}
