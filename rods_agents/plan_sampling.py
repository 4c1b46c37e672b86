"""Stage 2: sample a new ground-truth plan and initial_config with the seed's profile.

The offline sampler is :func:`sample_variant_plan`, anchored on the seed's own words
(:mod:`rods_agents.anchored_plan`: only changes the seed's text can carry, values of the same kind,
options swapped for documented options, values read from results re-derived by the seed's path). The
description below is of the earlier sampler, kept as :func:`sample_template_plan` for comparison.

The offline sampler keeps the seed's call skeleton (so turn shape, dependency topology and category
features carry over) and changes what the agent works on:

- **entities**: every string argument that names something the task controls (a key or leaf of the
  initial_config, or a new name the user introduces) is renamed consistently in the config and
  the plan, with a fresh value of the same shape (``report.pdf`` -> ``falcon_audit.pdf``); values
  hard-coded in the environment code (stock symbols, airports, cities) are left alone;
- **distractors**: other file-system entries in the config are renamed too, so listings differ;
- **numbers**: amounts the user states are perturbed when nothing downstream is computed from them;
- **methods**: a read-only leaf call (its result feeds no later argument) may be replaced by another
  method of the same role from the catalog (``cat`` -> ``tail``).

Later attempts (after a rejection) are more conservative: attempt 1 keeps numbers, attempt 2 also
keeps methods and distractors.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, Field

from envs.executor import CallError, parse_call, to_call_string
from envs.task import Task
from rods_agents.catalog import build_catalog, class_source_text
from rods_agents.profile_extraction import Profile
from rods_agents.prompt_files import PROMPTS, load_prompt_json  # noqa: F401 - the one prompts/ loader; PROMPTS re-exported
from rods_agents.runtime_utils import emit, rng_for, stage_timer
from rods_agents.seed_anchor import scalar_strings as _scalar_strings
from rods_agents.tracing import Trace, bind_args
from rods_agents.value_sources import state_values

_PROTECTED = {".", "..", "/", "~", "", "*"}
_FILENAME = re.compile(r"^([A-Za-z0-9]+(?:([_\-])[A-Za-z0-9]+)*)\.([A-Za-z0-9]{1,5})$")
_IDENT = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")
_NAME = re.compile(r"^[A-Z][a-z]+$")
_TICKER = re.compile(r"^[A-Z]{3,5}$")
_SYMBOL_LOOKUPS = {"get_symbol_by_name", "get_available_stocks", "filter_stocks_by_price"}
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


def _hardcoded(value: str, classes: list[str]) -> bool:
    return any(re.search(r"['\"]" + re.escape(value) + r"['\"]", class_source_text(c)) for c in classes)


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


_config_strings = config_strings  # old private names, kept as aliases
_replace_in_config = replace_in_config


def _replace_value(value: Any, strings: dict[str, str], numbers: dict[str, Any]) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        return strings.get(value, value)
    if isinstance(value, int | float):
        return numbers.get(repr(value), value)
    if isinstance(value, list):
        return [_replace_value(v, strings, numbers) for v in value]
    if isinstance(value, tuple):
        return tuple(_replace_value(v, strings, numbers) for v in value)
    if isinstance(value, dict):
        return {k: _replace_value(v, strings, numbers) for k, v in value.items()}
    return value


def _fs_names(tree: Any, out: list[str]) -> list[str]:
    if isinstance(tree, dict):
        for k, v in tree.items():
            if isinstance(v, dict) and v.get("type") in ("file", "directory"):
                out.append(k)
                _fs_names(v.get("contents", {}), out)
            elif isinstance(v, dict):
                _fs_names(v, out)
    return out


def _perturb(value: int | float, rng: Any) -> int | float:
    if isinstance(value, int):
        step = max(1, abs(value) // 5)
        new = value + rng.choice([-1, 1]) * rng.randint(1, step)
        return new if (new > 0) == (value > 0) and new != value else value + step
    decimals = len(repr(value).split(".")[1]) if "." in repr(value) else 1
    new = round(value * rng.uniform(0.8, 1.2), decimals)
    return new if new != value else round(value * 1.1, decimals)


# Scalar state the plan never names but that its calls depend on: resampled in the new config; when a
# draw breaks a precondition (not enough money or fuel) the config patch agent repairs it.
_RESAMPLED_STATE: list[tuple[str, tuple[str, ...], Any]] = [
    ("TradingBot", ("account_info", "balance"), lambda v, rng: round(float(v) * rng.uniform(0.2, 1.5), 2)),
    ("VehicleControlAPI", ("fuelLevel",), lambda v, rng: round(rng.uniform(5.0, 48.0), 1)),
]


def _resample_state(config: dict, trace: Trace, rng: Any) -> dict[str, Any]:
    numbers_used = {float(v) for r in trace.calls for v in r.args.values()
                    if isinstance(v, int | float) and not isinstance(v, bool)}
    changes: dict[str, Any] = {}
    for cls, path, draw in _RESAMPLED_STATE:
        node = config.get(cls)
        for key in path[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
        if not isinstance(node, dict) or not isinstance(node.get(path[-1]), int | float):
            continue
        old = node[path[-1]]
        if float(old) in numbers_used or rng.random() < 0.5:
            continue
        node[path[-1]] = draw(old, rng)
        changes[f"{cls}.{'.'.join(path)}"] = node[path[-1]]
    return changes


def sample_variant_plan(seed: Task, profile: Profile, trace: Trace, rng: Any, attempt: int = 0) -> Plan:
    """Draw one candidate plan anchored on the seed (see :mod:`rods_agents.anchored_plan`);
    deterministic given ``rng``'s state."""
    from rods_agents.anchored_plan import anchored_plan

    return Plan(**anchored_plan(seed, profile, trace, rng, attempt))


def sample_template_plan(seed: Task, profile: Profile, trace: Trace, rng: Any, attempt: int = 0) -> Plan:
    """The earlier sampler (renames of any shape, random codenames), kept for comparison."""
    catalog = build_catalog()
    config_strings = _config_strings(seed.initial_config, set())
    state_strings, _ = state_values(seed)
    all_text = "\n".join(m.content for turn in seed.turns for m in turn)
    sources = {(a.turn, a.index, a.param): a for a in profile.arg_sources}
    # a composed value is derived from others; if any exists, free text and amounts stay as they are
    # so the derivation (a word count, a computed total) still holds in the variant
    composed = any(a.source == "composed" and a.value.strip("'\"") not in _PROTECTED for a in profile.arg_sources)
    composed_numbers = composed_strings = composed

    # ticker symbols the config defines itself (it replaces the default stock table) can be renamed
    # unless the plan looks stocks up by company name or sector, which uses tables in the code
    stocks = seed.initial_config.get("TradingBot", {}).get("stocks")
    uses_lookup = any(r.name in _SYMBOL_LOOKUPS for r in trace.calls)
    own_symbols = set(stocks) if isinstance(stocks, dict) and not uses_lookup else set()
    # a value that contains another argument (find(name='test') -> 'test_image1.jpg') must keep it
    arg_strings = {x for r in trace.calls for x in _scalar_strings(list(r.args.values())) if len(x) >= 3}
    renames: dict[str, str] = {}
    taken = set(config_strings) | state_strings
    numbers: dict[str, Any] = {}
    for rec in trace.calls:
        for param, value in rec.args.items():
            src = sources.get((rec.turn, rec.index, param))
            spec = catalog.methods.get(rec.name)
            enum = next((p.enum for p in spec.params if p.name == param), None) if spec else None
            for s in _scalar_strings(value):
                if s in renames or s in _PROTECTED or (enum and s in enum):
                    continue
                in_config = s in config_strings
                if not in_config:
                    if src is None or src.source != "user" or s in state_strings:
                        continue
                    if any(s in c for c in config_strings if len(c) > len(s)):
                        continue  # a phrase inside file contents (grep pattern): keep it findable
                if composed and " " in s.strip():
                    continue
                if any(o != s and o in s for o in arg_strings):
                    continue
                if _hardcoded(s, seed.involved_classes) and s not in own_symbols:
                    continue
                new = fresh_value(s, rng, taken)
                if new is not None:
                    renames[s] = new
                    taken.add(new)
            if (attempt == 0 and not composed_numbers and src is not None and src.source == "user"
                    and isinstance(value, int | float) and not isinstance(value, bool) and abs(value) > 1
                    and rng.random() < 0.5):
                numbers.setdefault(repr(value), _perturb(value, rng))

    # distractor entries of the file system (never referenced by the plan)
    if attempt < 2 and not composed_strings and "GorillaFileSystem" in seed.initial_config:
        for name in _fs_names(seed.initial_config["GorillaFileSystem"], []):
            if name in renames or name in all_text or _hardcoded(name, ["GorillaFileSystem"]) or rng.random() < 0.5:
                continue
            if any(name in s for r in trace.calls for s in _scalar_strings(list(r.args.values()))):
                continue
            new = fresh_value(name, rng, taken)
            if new is not None:
                renames[name] = new
                taken.add(new)

    # role-preserving substitution of read-only leaf calls
    feeds = {e["source"] for e in profile.edges if e["kind"] == "data"}
    held_out = {f for names in seed.missed_function.values() for f in names}
    substitutions: list[dict[str, Any]] = []
    sub_of: dict[int, str] = {}
    if attempt < 2:
        for pos, rec in enumerate(trace.calls):
            spec = catalog.methods.get(rec.name)
            if spec is None or spec.role not in ("read", "compute") or pos in feeds or rec.name in held_out:
                continue
            options = [m for m in catalog.alternatives(rec.name) if m not in held_out
                       and set(rec.args) <= {p.name for p in catalog.methods[m].params}]
            if options and rng.random() < 0.5:
                new = rng.choice(options)
                sub_of[pos] = new
                substitutions.append({"turn": rec.turn, "index": rec.index, "from": rec.name, "to": new})

    ground_truth: list[list[str]] = [[] for _ in seed.ground_truth]
    pos = 0
    for turn, calls in enumerate(seed.ground_truth):
        for call in calls:
            rec = trace.calls[pos]
            name = sub_of.get(pos, rec.name)
            try:
                parsed = parse_call(call)
                args = bind_args(rec.cls, parsed.name, parsed.args, parsed.kwargs)
            except (CallError, TypeError):
                args = rec.args
            new_args = {k: _replace_value(v, renames, numbers) for k, v in args.items()}
            ground_truth[turn].append(to_call_string(name, new_args))
            pos += 1
    config = _replace_in_config(seed.initial_config, renames)
    state_changes = {} if (composed or attempt >= 2) else _resample_state(config, trace, rng)
    return Plan(ground_truth=ground_truth, initial_config=config, renames=renames, numbers=numbers,
                substitutions=substitutions, attempt=attempt, state_changes=state_changes)


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
