"""Stage 4: run the candidate's ground truth turn by turn on fresh instances and classify errors."""

from __future__ import annotations

import re
from typing import Any

from rods_agents.analysis.tracing import CallRecord, Trace, limit_flips, outcome_flips

# error pattern -> error kind; the config patch agent's rule table is keyed by (kind, class)
ERROR_KINDS: list[tuple[str, re.Pattern]] = [
    ("bad_config", re.compile(r"^invalid initial_config", re.I)),  # the environment could not load the config
    ("not_authenticated", re.compile(r"not (?:authenticated|logged in)|log ?in (?:first|required)|authenticat|no user is currently logged|user not logged", re.I)),
    ("market_closed", re.compile(r"market is closed", re.I)),
    ("insufficient_funds", re.compile(r"insufficient|not enough (?:balance|funds)|exceeds? (?:the )?(?:budget|balance)", re.I)),
    ("fuel", re.compile(r"fuel|tank capacity|fill gas", re.I)),
    ("missing_entity", re.compile(r"no such|not found|does not exist|doesn't exist|invalid (?:tweet|order|booking|ticket|card)", re.I)),
    ("already_exists", re.compile(r"already exists", re.I)),
    ("bad_call", re.compile(r"unexpected keyword|positional argument|unparsable|is not defined|missing \d+ required", re.I)),
]


def classify_error(text: str) -> str:
    for kind, pattern in ERROR_KINDS:
        if pattern.search(text):
            return kind
    return "other"


def error_report(record: CallRecord) -> dict[str, Any]:
    return {"turn": record.turn, "index": record.index, "call": record.call, "class": record.cls,
            "kind": classify_error(record.error or ""), "error": (record.error or "")[:500]}


OUTCOME_FLIP = "outcome differs from the seed's"


def flag_outcome_flips(trace: Trace, seed_trace: Trace, seed_texts: list[str] | None = None,
                       texts: list[str] | None = None) -> list[dict[str, Any]]:
    """Mark (in ``trace``) the first call whose yes/no outcome differs from the seed's, as an error.

    The seed's text may make a later call conditional on that outcome ("should the range fall short,
    fill the tank"), so its ground truth no longer follows from the text; no patch rule applies, and
    the verdict rejects the candidate as an execution error."""
    flips = outcome_flips(seed_trace, trace)
    if seed_texts is not None and texts is not None:
        flips += limit_flips(seed_trace, trace, seed_texts, texts)
    if not flips:
        return []
    pos = int(flips[0].split()[1])
    record = trace.calls[pos]
    record.error = f"{OUTCOME_FLIP}: {flips[0]}"
    return [{**error_report(record), "kind": "outcome_flip"}]


