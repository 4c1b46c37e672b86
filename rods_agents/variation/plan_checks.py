"""Checks a realized plan must pass before it is kept: no flipped outcome, no dangling or stale value, a state
the config patch agent can repair.

:func:`flips` names a yes/no outcome of the seed the variant's execution flips (a range that no longer falls short);
:func:`dangling` a number the variant's calls take that no result or text gives any more; :func:`stale_composed` a
composed value built from results that changed; :func:`repaired_config` the state after the patch agent's rounds.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from envs.task import Task
from rods_agents.analysis.profile import Profile
from rods_agents.analysis.tracing import Trace, limit_flips, outcome_flips, trace_task
from rods_agents.variation.draw import PROTECTED, Draw, scalar_numbers
from rods_agents.variation.seed_anchor import has_number
from rods_agents.variation.seed_anchor import scalar_strings as _scalar_strings


def flips(d: Draw, trace: Trace, vtrace: Trace, numbers: dict[str, Any] | None = None) -> list[str]:
    """Yes/no outcomes and stated limits ('a cost below $1200') the variant decides otherwise than its seed."""
    from rods_agents.variation.seed_anchor import substitute_numbers

    texts = [substitute_numbers(t, numbers or {}) for t in d.turn_text]
    return outcome_flips(trace, vtrace) or limit_flips(trace, vtrace, d.turn_text, texts)


def stale_composed(seed: Task, profile: Profile, trace: Trace, vtrace: Trace) -> list[str]:
    """Pieces of a composed text (a message quoting a distance) taken from an earlier result that the
    variant's earlier results no longer hold: the composed value would be stale."""
    pos_of = {(r.turn, r.index): p for p, r in enumerate(trace.calls)}
    out = []
    for a in profile.arg_sources:
        pos = pos_of.get((a.turn, a.index))
        if a.source != "composed" or pos is None:
            continue
        text = " ".join(m.content for t in seed.turns[: a.turn + 1] for m in t).lower()
        seed_res = " ".join(r.result for r in trace.calls[:pos] if len(r.result) < 50_000)
        var_res = " ".join(r.result for r in vtrace.calls[:pos] if len(r.result) < 50_000)
        new = vtrace.calls[pos].args.get(a.param) if pos < len(vtrace.calls) else None
        for piece in re.findall(r"\d+(?:\.\d+)?|[A-Za-z]{4,}", " ".join(_scalar_strings(new)) + " " +
                                " ".join(str(n) for n in scalar_numbers(new))):
            if piece.lower() not in text and piece in seed_res and piece not in var_res:
                out.append(f"{a.method}.{a.param}: {piece!r}")
    return out


def inputs_changed(profile: Profile, trace: Trace, vtrace: Trace) -> bool:
    """A result a composed value may be built from (any call before the last one with a composed
    argument) differs between the seed and the variant."""
    pos_of = {(r.turn, r.index): p for p, r in enumerate(trace.calls)}
    last = max((pos_of.get((a.turn, a.index), -1) for a in profile.arg_sources if a.source == "composed"), default=-1)
    return any(a.result != b.result for a, b in zip(trace.calls[:last], vtrace.calls[:last], strict=False))


def _result_numbers(result: str) -> set[float]:
    from rods_agents.analysis.value_sources import _numbers

    return _numbers(result) if len(result) < 50_000 else set()


def dangling(seed_trace: Trace, vtrace: Trace, turn_text: list[str]) -> list[str]:
    """Later values the seed took from a result (stated or not) that the variant's result no longer holds:
    'list the Technology stocks and add AAPL' must not become 'list the Automobile stocks and add AAPL'. A number
    the seed's words state by then (``turn_text``) is the user's, not the result's: base_59's 'a precision of 10'
    beside a 10-gallon fuel reading kept that reading in every variant."""
    out: list[str] = []
    for i, (a, b) in enumerate(zip(seed_trace.calls, vtrace.calls, strict=False)):
        if a.result == b.result or b.error or len(a.result) > 50_000:
            continue
        for j in range(i + 1, min(len(seed_trace.calls), len(vtrace.calls))):
            said = " ".join(turn_text[: seed_trace.calls[j].turn + 1])
            for param, value in seed_trace.calls[j].args.items():
                new = vtrace.calls[j].args.get(param)
                for old_s, new_s in zip(_scalar_strings(value), _scalar_strings(new), strict=False):
                    if len(old_s) >= 3 and old_s not in PROTECTED and re.search(
                            rf"(?<![\w]){re.escape(old_s)}(?![\w])", a.result) and new_s not in b.result:
                        out.append(f"call {j} {param}={new_s!r} not in the result of call {i}")
                for old_n, new_n in zip(scalar_numbers(value), scalar_numbers(new), strict=False):
                    if abs(old_n) > 1 and old_n in _result_numbers(a.result) and new_n not in _result_numbers(b.result) \
                            and not has_number(said, old_n):
                        out.append(f"call {j} {param}={new_n!r} not in the result of call {i}")
    return out


def repaired_config(draft: Task, rounds: int = 3) -> dict | None:
    """The initial config the config patch agent's rule table makes of ``draft``'s (every error repaired within
    ``rounds`` patches, as the patch stage will after execution), or None when a rule is missing."""
    from rods_agents.analysis.execution import error_report
    from rods_agents.variation.config_rules import propose_patch

    config = copy.deepcopy(draft.initial_config)
    for _ in range(rounds + 1):
        vtrace = trace_task(draft.model_copy(update={"initial_config": config}))
        if not vtrace.errors:
            return config
        if propose_patch(config, error_report(vtrace.errors[0]), vtrace) is None:
            return None
    return None


def patchable(draft: Task, rounds: int = 3) -> bool:
    """The config patch agent's rule table repairs every error of ``draft`` within ``rounds`` patches."""
    return repaired_config(draft, rounds) is not None


__all__ = ["dangling", "flips", "inputs_changed", "patchable", "repaired_config", "stale_composed"]
