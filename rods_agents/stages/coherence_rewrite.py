"""Stage 3: write the user turns of a plan from the seed's own turns.

:func:`rewrite_plan` carries the plan's renames, new numbers, swapped options and method phrases into
the seed's wording (:mod:`rods_agents.variation.seed_anchor`), one message per seed message, so the seed's
implicit steps, conditions, references, transformations and withheld value survive by construction;
a miss_func reveal turn stays empty. The LLM rewrite stage (:mod:`rods_agents.llm.backbone`) starts
from these turns. :func:`describe_call` and the per-method templates (``prompts/bfcl/offline_templates.json``)
phrase a single call in words; the offline rewrite no longer writes turns from calls (that names every
step and so makes a task easier).
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import lru_cache
from typing import Any

from envs.task import Message, Task
from prompts import PROMPTS_DIR as PROMPTS
from rods_agents.analysis.catalog import build_catalog
from rods_agents.analysis.information_structure import information_structure
from rods_agents.analysis.profile import Profile
from rods_agents.analysis.tracing import Trace
from rods_agents.analysis.value_sources import choice_phrases, is_flag
from rods_agents.llm.accounting import charge, gave_up
from rods_agents.llm.backbone import LLMStageError, backbone_for
from rods_agents.run.runtime import emit, rng_for, stage_timer
from rods_agents.variation.plan import Plan

_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_ARTICLES = {"a", "an", "the"}
# booleans are choices, not information: they are always said, in words
_BOOL_WORDS = {"unlock": ("unlock", "lock"), "activate": ("turn on", "turn off"), "a": ("including hidden ones", ""),
               "detailed": ("in detail", "briefly")}


@lru_cache(maxsize=1)
def templates() -> dict[str, str]:
    return {k: v for k, v in json.loads((PROMPTS / "bfcl/offline_templates.json").read_text()).items() if not k.startswith("_")}


@lru_cache(maxsize=1)
def narratives() -> dict[str, Any]:
    return json.loads((PROMPTS / "bfcl/offline_narratives.json").read_text())


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


def carry_plan(seed: Task, plan: Plan) -> list[list[Message]]:
    """The seed's own turns with the plan's renames, new numbers, swapped options and method phrases carried
    in (:mod:`rods_agents.variation.seed_anchor`): the base the donor turns replace, and what a turn keeps
    where no donor fits."""
    from rods_agents.variation.anchored_plan import carry_turn

    return [[Message(role=m.role, content=carry_turn(m.content, t, plan)) for m in turn]
            for t, turn in enumerate(seed.turns)]


def rewrite_plan(seed: Task, profile: Profile, plan: Plan, rng: Any) -> tuple[list[list[Message]], list[dict]]:
    """User turns for ``plan`` and where their wording came from.

    First the seed's own turns with the plan's renames, new numbers, swapped options and method phrases
    carried in (one message per seed message; a miss_func reveal turn stays empty), which keeps the
    seed's implicit steps, conditions, references, transformations and withheld values; then every turn
    that can be is replaced by a human turn of another train scenario asking for the same calls the same
    way, re-instantiated on the variant's values (:mod:`rods_agents.variation.transplant`), so the variant
    is new wording and not the seed's sentences. Returns the turns and the donors used
    ({'turn', 'donor', 'donor_turn'})."""
    from rods_agents.variation.transplant import transplant_turns

    carried = carry_plan(seed, plan)
    draft = seed.model_copy(update={"turns": carried, "ground_truth": plan.ground_truth,
                                    "initial_config": plan.initial_config})
    seed_info = profile.information if profile.information is not None else information_structure(seed)
    return transplant_turns(seed, seed_info, draft, rng)


def variant_id(seed: Task, variant: int, run_seed: int, attempt: int) -> str:
    digest = hashlib.sha256(f"{seed.id}|{variant}|{run_seed}|{attempt}".encode()).hexdigest()[:8]
    return f"multi_turn_{seed.category}_{seed.scenario}__rods_{digest}"


def build_variant(seed: Task, turns: list[list[Message]], plan: Plan, variant: int, run_seed: int) -> Task:
    return Task(id=variant_id(seed, variant, run_seed, plan.attempt), category=seed.category, scenario=seed.scenario,
                turns=turns, initial_config=plan.initial_config, involved_classes=list(seed.involved_classes),
                missed_function=dict(seed.missed_function), ground_truth=plan.ground_truth)


def rewrite_turns(state: dict, runtime: Any = None) -> dict:
    """Graph node: write the user turns and assemble the candidate task (offline; the LLM rewrite stage
    rewrites them in :mod:`rods_agents.stages.plan_sampling`)."""
    with stage_timer(state, "rewrite") as timings:
        seed = Task.model_validate(state["seed"])
        profile = Profile.model_validate(state["profile"])
        plan = Plan.model_validate(state["plan"])
        run_seed = getattr(getattr(runtime, "context", None), "seed", 0) if runtime is not None else 0
        rng = rng_for(run_seed, seed.id, state.get("variant", 0), plan.attempt, "rewrite")
        turns, donors = rewrite_plan(seed, profile, plan, rng)
        task = build_variant(seed, turns, plan, int(state.get("variant", 0)), run_seed)
    emit(runtime, state, "rewrite", "ok", donors=len(donors))
    return {"task": task.model_dump(), "timings": timings, "plan": {**state["plan"], "donors": donors}}


def _rewrite_with_llm(state: dict, runtime: Any, task: Task, timings_state: dict, feedback: str = "") -> dict:
    backbone = backbone_for(runtime, "rewrite")
    assert backbone is not None
    with stage_timer(timings_state, "rewrite") as timings:
        try:
            turns, usage = backbone.rewrite_turns(Task.model_validate(state["seed"]),
                                                  Profile.model_validate(state["profile"]),
                                                  Trace.model_validate(state["seed_trace"]), task.ground_truth,
                                                  task.turns, state, feedback=feedback,
                                                  initial_config=task.initial_config)
        except LLMStageError as exc:
            return gave_up(state, runtime, "rewrite", exc, timings)
        task.turns = turns
    return {"task": task.model_dump(), "timings": timings, **charge(state, "rewrite", usage)}


def rewrite_node(state: dict, runtime: Any = None) -> dict:
    """Node ``rewrite_turns`` body: the seed-anchored offline turns, then (LLM rewrite stage) the LLM's."""
    out = rewrite_turns(state, runtime)
    if backbone_for(runtime, "rewrite") is None or "task" not in out:
        return out
    return {**out, **_rewrite_with_llm(state, runtime, Task.model_validate(out["task"]),
                                       {"timings": out.get("timings", {})})}


def refine_node(state: dict, runtime: Any = None) -> dict:
    """Node ``refine_turns``: the one refine round, a rewrite of the candidate's text with the judge's critique."""
    last = (state.get("judge") or [{}])[-1]
    feedback = str(last.get("critique") or last.get("reasoning") or "")
    rounds = int(state.get("refine_rounds", 0) or 0) + 1
    emit(runtime, state, "refine", "start", round=rounds)
    out = _rewrite_with_llm(state, runtime, Task.model_validate(state["task"]), state, feedback=feedback)
    return {**out, "refine_rounds": rounds, "refine_pending": False} | ({} if "verdict" in out else {"verdict": None})
