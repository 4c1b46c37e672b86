"""Stage 2: sample a new ground-truth plan and initial_config with the seed's profile.

The offline sampler is :func:`sample_variant_plan`, anchored on the seed's own words
(:mod:`rods_agents.anchored_plan`: only changes the seed's text can carry, values of the same kind,
options swapped for documented options, values read from results re-derived by the seed's path,
state drawn to miss a precondition the config patch agent then repairs). This module holds the
:class:`Plan` model, the graph node and the config helpers the LLM plan stage shares.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, Field

from envs.task import Task
from rods_agents.profile_extraction import Profile
from rods_agents.prompt_files import PROMPTS, load_prompt_json  # noqa: F401 - the one prompts/ loader; PROMPTS re-exported
from rods_agents.runtime_utils import emit, rng_for, stage_timer
from rods_agents.tracing import Trace

_FILENAME = re.compile(r"^([A-Za-z0-9]+(?:([_\-])[A-Za-z0-9]+)*)\.([A-Za-z0-9]{1,5})$")
_IDENT = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")
_NAME = re.compile(r"^[A-Z][a-z]+$")
_TICKER = re.compile(r"^[A-Z]{3,5}$")
_FULL_NAME = re.compile(r"^[A-Z][a-z]+ [A-Z][a-z]+$")


class Plan(BaseModel):
    """A candidate variant before its user turns are written."""

    ground_truth: list[list[str]]
    initial_config: dict[str, Any]
    renames: dict[str, str] = Field(default_factory=dict)
    numbers: dict[str, float | int] = Field(default_factory=dict, description="repr(old) -> new")
    substitutions: list[dict[str, Any]] = Field(default_factory=list)
    state_changes: dict[str, Any] = Field(default_factory=dict, description="class.path -> new resampled value")
    swaps: dict[str, str] = Field(default_factory=dict, description="documented option -> another option")
    derived: list[list[Any]] = Field(default_factory=list, description="[old, new] values re-read from results")
    phrases: list[dict[str, Any]] = Field(default_factory=list, description="per turn, [old, new] wording swaps")
    attempt: int = 0


@lru_cache(maxsize=1)
def vocab() -> dict[str, list[str]]:
    return load_prompt_json("offline_vocab.json")


def config_strings(obj: Any, out: set[str]) -> set[str]:
    """Every string of a config (keys and values), added to ``out``."""
    if isinstance(obj, str):
        out.add(obj)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(k, str):
                out.add(k)
            config_strings(v, out)
    elif isinstance(obj, list):
        for v in obj:
            config_strings(v, out)
    return out


def fresh_value(old: str, rng: Any, taken: set[str]) -> str | None:
    """A new value with the shape of ``old``, or None when ``old`` has no resampleable shape."""
    v = vocab()
    for _ in range(50):
        if m := _FILENAME.match(old):
            sep = m.group(2) or "_"
            n = max(1, min(3, len(re.split(r"[_\-]", m.group(1)))))
            new = sep.join(rng.sample(v["words"], n)) + "." + m.group(3)
        elif _IDENT.match(old):
            n = max(1, min(3, old.count("_") + 1))
            new = "_".join(rng.sample(v["words"], n))
        elif _TICKER.match(old):
            new = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in old)
        elif _FULL_NAME.match(old):
            new = f"{rng.choice(v['first_names'])} {rng.choice(v['last_names'])}"
        elif _NAME.match(old):
            new = rng.choice(v["first_names"])
        elif " " in old.strip() and len(old) >= 15 and not re.search(r"[\n{}\[\]]", old):
            w1, w2 = rng.sample(v["words"], 2)
            new = rng.choice(v["sentences"]).format(w1=w1, w2=w2)
        else:
            return None
        if new not in taken and new.lower() != old.lower():
            return new
    return None


def replace_in_config(obj: Any, mapping: dict[str, str]) -> Any:
    """A copy of a config with every string (key or value) in ``mapping`` replaced."""
    if isinstance(obj, str):
        return mapping.get(obj, obj)
    if isinstance(obj, dict):
        return {(mapping.get(k, k) if isinstance(k, str) else k): replace_in_config(v, mapping) for k, v in obj.items()}
    if isinstance(obj, list):
        return [replace_in_config(v, mapping) for v in obj]
    return obj


def sample_variant_plan(seed: Task, profile: Profile, trace: Trace, rng: Any, attempt: int = 0) -> Plan:
    """Draw one candidate plan anchored on the seed (see :mod:`rods_agents.anchored_plan`);
    deterministic given ``rng``'s state."""
    from rods_agents.anchored_plan import anchored_plan

    return Plan(**anchored_plan(seed, profile, trace, rng, attempt))


def sample_plan(state: dict, runtime: Any = None) -> dict:
    """Graph node: draw a candidate plan for this (seed, variant, attempt) (offline; the LLM plan stage
    refines it in :mod:`rods_agents.llm_nodes`)."""
    with stage_timer(state, "plan") as timings:
        seed = Task.model_validate(state["seed"])
        profile = Profile.model_validate(state["profile"])
        trace = Trace.model_validate(state["seed_trace"])
        attempt = int(state.get("plan_attempt", 0))
        ctx_seed = getattr(getattr(runtime, "context", None), "seed", 0) if runtime is not None else 0
        rng = rng_for(ctx_seed, seed.id, state.get("variant", 0), attempt)
        plan = sample_variant_plan(seed, profile, trace, rng, attempt)
    emit(runtime, state, "plan", "ok", attempt=attempt)
    return {"plan": plan.model_dump(), "timings": timings, "patches": [], "patch_attempts": 0}
