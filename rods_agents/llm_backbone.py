"""LLM backbone: LangChain chat models behind the same nodes.

Any OpenAI-compatible endpoint works (``ChatOpenAI(model=..., base_url=...)``, key from
``OPENAI_API_KEY``); several models are used round-robin per sample. Output is structured into
pydantic models and validated *as data* (never executed or evaluated): a malformed, empty,
off-schema or absurd answer is retried a bounded number of times, every call is counted, and
when the budget is spent the sample is rejected with ``llm_invalid_output`` instead of crashing.

Stages taken over so far: ``rewrite`` (the coherence rewrite) and ``patch`` (a config patch for an
error the rule table has no rule for). Plan sampling keeps its offline implementation (the
``refine_plan`` hook returns the offline plan as is).
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from envs.task import Message
from graphs.state import ConfigPatchProposal, RewrittenTurns

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
    def __init__(self, ctx: Any):
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
        model = self.model_for(state.get("sample_id", ""), "rewrite")
        structured = model.with_structured_output(RewrittenTurns)
        budget = max(0, self.ctx.max_llm_calls_per_sample - int(state.get("llm_calls", 0)))
        calls, errors = 0, []
        for _ in range(min(1 + self.ctx.llm_retries, budget)):
            calls += 1
            try:
                out = structured.invoke(prompt)
                texts = validate_rewrite(out, drafts, plan)
            except (ValidationError, ValueError, TypeError, KeyError, json.JSONDecodeError) as exc:
                errors.append(f"{type(exc).__name__}: {str(exc)[:200]}")
                continue
            except Exception as exc:  # noqa: BLE001 - parser/transport errors are LLM failures too
                errors.append(f"{type(exc).__name__}: {str(exc)[:200]}")
                continue
            new = [list(m) for m in turns]
            for t, text in zip(slots, texts, strict=True):
                new[t] = [Message(role="user", content=text)]
            return new, calls
        raise LLMOutputError("no valid rewrite", calls, errors)

    # ------------------------------------------------------------------ offline hooks
    def refine_plan(self, seed: Any, profile: Any, plan: Any, state: dict) -> tuple[Any, int]:
        return plan, 0

    def propose_patch(self, task: Any, error: dict, state: dict) -> tuple[Any, dict, int]:
        """Ask for one minimal config edit; validate it as data and apply it to a copy of the config."""
        import copy

        from rods_agents.config_patch import ConfigPatch

        prompt = patch_prompt().format(error=error.get("error", ""), call=error.get("call", ""),
                                       cls=error.get("class", ""), config=json.dumps(task.initial_config)[:6000])
        structured = self.model_for(state.get("sample_id", ""), "patch").with_structured_output(ConfigPatchProposal)
        budget = max(0, self.ctx.max_llm_calls_per_sample - int(state.get("llm_calls", 0)))
        calls = 0
        for _ in range(min(1 + self.ctx.llm_retries, budget)):
            calls += 1
            try:
                out = structured.invoke(prompt)
                if out is None:
                    raise ValueError("empty answer")
                out = out if isinstance(out, ConfigPatchProposal) else ConfigPatchProposal.model_validate(out)
                config = copy.deepcopy(task.initial_config)
                apply_proposal(config, out, task.involved_classes)
            except Exception:  # noqa: BLE001 - invalid output: retry within the budget
                continue
            return (ConfigPatch(rule="llm", cls=out.cls, path=out.path, value=out.value, error=error.get("error", "")),
                    config, calls)
        return None, task.initial_config, calls


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


_CACHE: dict[int, LLMBackbone] = {}


def stage_backbone(runtime: Any, stage: str) -> LLMBackbone | None:
    """The LLM backbone if this run uses it for ``stage``, else None (offline)."""
    ctx = getattr(runtime, "context", None) if runtime is not None else None
    if ctx is None or getattr(ctx, "backbone", "offline") != "llm" or stage not in ctx.llm_stages:
        return None
    key = id(ctx)
    if key not in _CACHE:
        _CACHE[key] = LLMBackbone(ctx)
    return _CACHE[key]
