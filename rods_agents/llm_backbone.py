"""LLM backbone: LangChain chat models behind the same nodes.

Any OpenAI-compatible endpoint works (``ChatOpenAI(model=..., base_url=...)``, key from
``OPENAI_API_KEY``); several models are used round-robin per sample. Output is structured into
pydantic models and validated *as data* (never executed or evaluated): a malformed, empty,
off-schema or absurd answer is retried a bounded number of times, every call is counted, and
when the budget is spent the sample is rejected with ``llm_invalid_output`` instead of crashing.

Stages: ``plan`` (a new ground-truth plan and entity renames, drafted from the offline plan;
validated against the API catalog, round-tripped through ``envs.executor.parse_call`` and executed
before it is accepted), ``rewrite`` (the coherence rewrite) and ``patch`` (a config patch for an
error the rule table has no rule for).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from envs.task import Message
from graphs.state import ConfigPatchProposal, PlanProposal, RewrittenTurns

PROMPTS = Path(__file__).resolve().parent.parent / "prompts"
_QUOTED = re.compile(r"'([^']+)'")
_SCAFFOLD = re.compile(r"thought process|step \d+:|```|\bfunction\b|\btool call", re.I)
MAX_TURN_CHARS = 1500


class LLMOutputError(RuntimeError):
    """The LLM did not produce a valid answer within its retry budget."""

    def __init__(self, message: str, calls: int, errors: list[str]):
        super().__init__(message)
        self.calls = calls
        self.errors = errors

    @property
    def last(self) -> str:
        """The last validation (or transport) error, the reason the stage gave up."""
        return self.errors[-1] if self.errors else str(self)

    def detail(self, stage: str) -> dict[str, Any]:
        """Rejection detail: the stage, every error in order and the last one."""
        return {"stage": stage, "llm_errors": list(self.errors), "llm_last_error": self.last, "llm_calls": self.calls}


RETRY_NOTE = "\n\nYour previous answer was refused: {error}\nAnswer again and fix exactly that."


def ask_validated(model: Any, schema: type, prompt: str, validate: Callable[[Any], Any], *, stage: str,
                  retries: int, budget: int) -> tuple[Any, int]:
    """The one retry loop of every LLM stage: ask for ``schema``-structured output, validate it.

    Makes at most ``min(1 + retries, budget)`` calls. An answer that is empty, off-schema or refused
    by ``validate`` (any exception) is retried with the refusal reason appended to the prompt
    (:data:`RETRY_NOTE`). Returns (validated value, calls made); raises :class:`LLMOutputError`
    (carrying the calls and every error, last one included) when no answer passes.
    """
    structured = model.with_structured_output(schema)
    calls, errors = 0, []
    for _ in range(max(0, min(1 + retries, budget))):
        calls += 1
        try:
            out = structured.invoke(prompt + (RETRY_NOTE.format(error=errors[-1]) if errors else ""))
            if out is None:
                raise ValueError("empty or unparsable answer")
            return validate(out), calls
        except Exception as exc:  # noqa: BLE001 - parser, schema, transport and validation errors are all retried
            errors.append(f"{type(exc).__name__}: {str(exc)[:300]}")
    if not errors:
        errors.append(f"llm call budget exhausted before the {stage} stage")
    raise LLMOutputError(f"no valid {stage}", calls, errors)


@lru_cache(maxsize=1)
def rewrite_prompt() -> str:
    return (PROMPTS / "llm_rewrite.txt").read_text()


def _build_models(ctx: Any) -> list[Any]:
    if ctx.chat_models:
        return list(ctx.chat_models) if isinstance(ctx.chat_models, list | tuple) else [ctx.chat_models]
    import os

    from langchain_openai import ChatOpenAI

    key = os.environ.get("OPENAI_API_KEY", "EMPTY")  # vLLM accepts any key; OpenAI needs the real one
    return [ChatOpenAI(model=m, base_url=ctx.base_url, api_key=key, temperature=ctx.temperature, top_p=0.7,
                       max_retries=1) for m in ctx.models]


class LLMBackbone:
    """The chat models of one run and the three LLM stages (plan, rewrite, patch) on top of them.

    Every stage goes through :func:`ask_validated`: structured output, validation as data, retries
    with the refusal reason fed back, and the sample's call budget.
    """

    def __init__(self, ctx: Any):
        """Build the chat models from ``ctx`` (``chat_models`` if given, else ``ChatOpenAI`` per model)."""
        self.ctx = ctx
        self.models = _build_models(ctx)
        if not self.models:
            raise ValueError("the llm backbone needs --model or chat_models")

    def model_for(self, sample_id: str, stage: str = "") -> Any:
        """The stage's pinned model if any, else round-robin over models by sample."""
        pinned = self.ctx.stage_models.get(stage) if stage else None
        if pinned and pinned in self.ctx.models and len(self.models) == len(self.ctx.models):
            return self.models[self.ctx.models.index(pinned)]
        i = int(hashlib.sha256(sample_id.encode()).hexdigest(), 16) % len(self.models)
        return self.models[i]

    # ------------------------------------------------------------------ rewrite
    def rewrite_turns(self, seed: Any, profile: Any, plan: Any, turns: list[list[Message]], state: dict
                      ) -> tuple[list[list[Message]], int]:
        """Rewrite the offline drafts into natural turns; values the drafts state must survive."""
        slots = [t for t, msgs in enumerate(turns) if msgs]
        drafts = [turns[t][0].content for t in slots]
        prompt = rewrite_prompt().format(n_turns=len(drafts), narrative=drafts[0].split(".")[0],
                                         drafts="\n".join(f"{i + 1}. {d}" for i, d in enumerate(drafts)))
        texts, calls = self._ask("rewrite", RewrittenTurns, prompt, lambda out: validate_rewrite(out, drafts, plan), state)
        new = [list(m) for m in turns]
        for t, text in zip(slots, texts, strict=True):
            new[t] = [Message(role="user", content=text)]
        return new, calls

    # ------------------------------------------------------------------ plan
    def refine_plan(self, seed: Any, profile: Any, plan: Any, state: dict) -> tuple[Any, int]:
        """Ask for a new plan with the seed's shape; the offline ``plan`` is the draft it starts from.

        Every answer is validated as data (:func:`validate_plan`); invalid answers are retried within
        the sample's LLM budget, then :class:`LLMOutputError` is raised (the node records a rejection).
        """
        prompt = plan_prompt_for(seed, plan)
        return self._ask("plan", PlanProposal, prompt, lambda out: validate_plan(out, seed, plan), state)

    # ------------------------------------------------------------------ patch

    def propose_patch(self, task: Any, error: dict, state: dict) -> tuple[Any, dict, int]:
        """Ask for one minimal config edit for ``error``: (patch, patched config copy, calls).

        The answer is validated as data (:func:`apply_proposal`) and the patched config must load
        into the task's environment classes (:func:`check_config_loads`); a refused answer is retried
        with the reason. Raises :class:`LLMOutputError` when no answer passes within the budget.
        """
        from rods_agents.config_patch import ConfigPatch

        prompt = patch_prompt().format(error=error.get("error", ""), call=error.get("call", ""),
                                       cls=error.get("class", ""), config=json.dumps(task.initial_config)[:6000])

        def validate(out: Any) -> tuple[Any, dict]:
            out = out if isinstance(out, ConfigPatchProposal) else ConfigPatchProposal.model_validate(out)
            config = patched_config(task, out)
            return ConfigPatch(rule="llm", cls=out.cls, path=out.path, value=out.value, error=error.get("error", "")), config

        (patch, config), calls = self._ask("patch", ConfigPatchProposal, prompt, validate, state)
        return patch, config, calls

    # ------------------------------------------------------------------ shared
    def _ask(self, stage: str, schema: type, prompt: str, validate: Callable[[Any], Any], state: dict) -> tuple[Any, int]:
        """:func:`ask_validated` with this sample's model for ``stage`` and its remaining call budget."""
        budget = max(0, self.ctx.max_llm_calls_per_sample - int(state.get("llm_calls", 0) or 0))
        return ask_validated(self.model_for(state.get("sample_id", ""), stage), schema, prompt, validate, stage=stage,
                             retries=self.ctx.llm_retries, budget=budget)


@lru_cache(maxsize=1)
def plan_prompt() -> str:
    return (PROMPTS / "llm_plan.txt").read_text()


def _plan_json(ground_truth: list[list[str]]) -> list[list[dict]]:
    from envs.executor import parse_call
    from rods_agents.catalog import build_catalog
    from rods_agents.tracing import bind_args

    out = []
    for turn in ground_truth:
        calls = []
        for call in turn:
            parsed = parse_call(call)
            spec = build_catalog().methods.get(parsed.name)
            calls.append({"name": parsed.name,
                          "arguments": bind_args(spec.cls if spec else None, parsed.name, parsed.args, parsed.kwargs)})
        out.append(calls)
    return out


def plan_prompt_for(seed: Any, plan: Any) -> str:
    from rods_agents.catalog import build_catalog
    from rods_agents.plan_sampling import _config_strings

    catalog = build_catalog()
    lines = []
    for name, spec in sorted(catalog.methods.items()):
        if spec.cls in seed.involved_classes:
            params = ", ".join(f"{p.name}{'*' if p.required else ''}: {p.type}" for p in spec.params)
            lines.append(f"{name}({params})")
    held = sorted({f for names in seed.missed_function.values() for f in names})
    entities = sorted(s for s in _config_strings(seed.initial_config, set()) if 2 < len(s) <= 40 and "\n" not in s)
    return plan_prompt().format(
        n_turns=len(seed.ground_truth), turn_shape=[len(t) for t in seed.ground_truth],
        held_out=held or "none", reveal=min(seed.missed_function, default=0),
        seed_plan=json.dumps(_plan_json(seed.ground_truth), default=str),
        draft=json.dumps({"turns": _plan_json(plan.ground_truth), "renames": plan.renames}, default=str),
        entities=json.dumps(entities[:200]), catalog="\n".join(lines))


_JSON_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "float": (int, float),
                                            "number": (int, float), "boolean": (bool,), "array": (list,),
                                            "dict": (dict,)}
MAX_ARG_CHARS = 2000


def validate_plan(out: Any, seed: Any, draft: Any) -> Any:
    """Check an LLM plan as data and build the candidate :class:`Plan` from it.

    Refused: a wrong turn shape, a function outside the involved classes' catalog or held out before
    its reveal, unknown or missing required arguments, values of the wrong JSON type, renames of
    strings the config does not hold or onto names it already has, a call that does not round-trip
    through ``parse_call``, and a plan whose execution fails on something no config patch fixes.
    """
    import copy

    from envs.executor import parse_call, to_call_string
    from envs.task import Task
    from rods_agents.catalog import build_catalog
    from rods_agents.execution_orchestrator import classify_error
    from rods_agents.plan_sampling import Plan, _config_strings, _replace_in_config
    from rods_agents.tracing import trace_task

    if out is None:
        raise ValueError("empty or unparsable answer")
    if not isinstance(out, PlanProposal):
        out = PlanProposal.model_validate(out)
    shape = [len(t) for t in seed.ground_truth]
    if [len(t) for t in out.turns] != shape:
        raise ValueError(f"turn shape {[len(t) for t in out.turns]} != seed's {shape}")
    catalog = build_catalog()
    reveal = min(seed.missed_function, default=None)
    held = {f for names in seed.missed_function.values() for f in names}
    ground_truth: list[list[str]] = []
    for t, turn in enumerate(out.turns):
        calls = []
        for call in turn:
            spec = catalog.methods.get(call.name)
            if spec is None or spec.cls not in seed.involved_classes:
                raise ValueError(f"{call.name!r} is not a function of the involved classes")
            if call.name in held and reveal is not None and t < reveal:
                raise ValueError(f"{call.name!r} is held out until turn {reveal}")
            params = {p.name: p for p in spec.params}
            unknown = set(call.arguments) - set(params)
            missing = {p.name for p in spec.params if p.required} - set(call.arguments)
            if unknown or missing:
                raise ValueError(f"{call.name}: unknown {sorted(unknown)} / missing {sorted(missing)} arguments")
            for k, v in call.arguments.items():
                allowed = _JSON_TYPES.get(params[k].type, (str, int, float, bool, list, dict))
                if v is not None and (not isinstance(v, allowed) or (isinstance(v, bool) and bool not in allowed)):
                    raise ValueError(f"{call.name}.{k}: {type(v).__name__} is not {params[k].type}")
                if len(json.dumps(v, default=str)) > MAX_ARG_CHARS:
                    raise ValueError(f"{call.name}.{k}: value too long")
            text = to_call_string(call.name, call.arguments)
            parsed = parse_call(text)  # literals only; raises CallError otherwise
            if parsed.name != call.name:
                raise ValueError("call does not round-trip")
            calls.append(text)
        ground_truth.append(calls)
    config_strings = _config_strings(seed.initial_config, set())
    for old, new in out.renames.items():
        if old not in config_strings:
            raise ValueError(f"rename of {old!r}: not in the initial_config")
        if not isinstance(new, str) or not new.strip() or new in config_strings or len(new) > 200:
            raise ValueError(f"rename {old!r} -> {new!r}: empty or already taken")
    config = _replace_in_config(copy.deepcopy(seed.initial_config), dict(out.renames))
    if ground_truth == seed.ground_truth and config == seed.initial_config:
        raise ValueError("the plan is a copy of the seed")
    probe = Task(id=f"multi_turn_{seed.category}_{seed.scenario}__probe", category=seed.category, scenario=seed.scenario,
                 turns=[[] for _ in ground_truth], initial_config=config, involved_classes=list(seed.involved_classes),
                 missed_function=dict(seed.missed_function), ground_truth=ground_truth)
    unfixable = [r for r in trace_task(probe).errors if classify_error(r.error or "") in ("bad_call", "other")]
    if unfixable:
        raise ValueError(f"execution error no patch fixes: {unfixable[0].call}: {(unfixable[0].error or '')[:120]}")
    return Plan(ground_truth=ground_truth, initial_config=config, renames=dict(out.renames),
                numbers={k: v for k, v in out.new_values.items() if isinstance(v, int | float) and not isinstance(v, bool)},
                substitutions=[{"source": "llm"}], attempt=draft.attempt)


@lru_cache(maxsize=1)
def patch_prompt() -> str:
    return (PROMPTS / "llm_config_patch.txt").read_text()


_PATH = re.compile(r"^[A-Za-z_][\w\-]*(\.[\w\-]+){0,5}$")


def apply_proposal(config: dict, proposal: ConfigPatchProposal, classes: list[str]) -> None:
    """Apply a patch proposal to ``config`` in place, refusing anything but a scalar field edit."""
    if proposal.cls not in classes:
        raise ValueError(f"class {proposal.cls!r} is not involved")
    if not _PATH.match(proposal.path):
        raise ValueError(f"bad path {proposal.path!r}")
    node = config.setdefault(proposal.cls, {})
    keys = proposal.path.split(".")
    for key in keys[:-1]:
        if not isinstance(node.get(key, {}), dict):
            raise ValueError(f"path {proposal.path!r} crosses a non-object")
        node = node.setdefault(key, {})
    if isinstance(node.get(keys[-1]), dict | list):
        raise ValueError("only scalar fields can be patched")
    node[keys[-1]] = proposal.value


def check_config_loads(task: Any, config: dict) -> None:
    """Raise ValueError unless ``config`` loads into fresh instances of the task's environment classes."""
    from envs.executor import Environment

    try:
        Environment(task.involved_classes, config, task.long_context)
    except Exception as exc:  # noqa: BLE001 - any construction failure refuses the patch
        raise ValueError(f"the patched initial_config does not load: {type(exc).__name__}: {str(exc)[:200]}") from exc


def patched_config(task: Any, proposal: ConfigPatchProposal) -> dict:
    """A copy of ``task.initial_config`` with ``proposal`` applied, refused (ValueError) unless it loads."""
    import copy

    config = copy.deepcopy(task.initial_config)
    apply_proposal(config, proposal, task.involved_classes)
    check_config_loads(task, config)
    return config


def validate_rewrite(out: Any, drafts: list[str], plan: Any) -> list[str]:
    """Check an LLM rewrite as data: shape, length, kept values, no leaked function names."""
    if out is None:
        raise ValueError("empty or unparsable answer")
    if not isinstance(out, RewrittenTurns):
        out = RewrittenTurns.model_validate(out)
    if len(out.turns) != len(drafts):
        raise ValueError(f"expected {len(drafts)} turns, got {len(out.turns)}")
    names = {c.split("(", 1)[0] for turn in plan.ground_truth for c in turn}
    texts = []
    for draft, text in zip(drafts, out.turns, strict=True):
        text = text.strip()
        if not text or len(text) > MAX_TURN_CHARS:
            raise ValueError("a turn is empty or too long")
        if _SCAFFOLD.search(text) or any(re.search(rf"\b{re.escape(n)}\b", text) for n in names if "_" in n or len(n) > 6):
            raise ValueError("a turn leaks reasoning scaffolds or function names")
        missing = [v for v in _QUOTED.findall(draft) if v not in text]
        if missing:
            raise ValueError(f"a turn drops stated values: {missing[:3]}")
        texts.append(text)
    return texts


_SLOT = "_rods_llm_backbone"


def stage_backbone(runtime: Any, stage: str) -> LLMBackbone | None:
    """The LLM backbone if this run uses it for ``stage``, else None (offline).

    Per-run cache: the backbone is stored on the run's context object itself, so it lives exactly
    as long as the run (no module-level registry keeping finished runs' chat models alive).
    """
    ctx = getattr(runtime, "context", None) if runtime is not None else None
    if ctx is None or getattr(ctx, "backbone", "offline") != "llm" or stage not in ctx.llm_stages:
        return None
    backbone = getattr(ctx, _SLOT, None)
    if backbone is None:
        backbone = LLMBackbone(ctx)
        try:
            object.__setattr__(ctx, _SLOT, backbone)
        except (AttributeError, TypeError):  # a context without a __dict__: no caching
            pass
    return backbone
