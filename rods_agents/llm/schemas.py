"""Pydantic schemas of every LLM answer; their docstrings double as tool descriptions.

All of them work under ``strict`` structured output (OpenAI ``strict: true``, vLLM guided decoding):
closed objects only (``extra='forbid'`` -> ``additionalProperties: false``), every property
required (no defaults), no free-form maps. Values of any JSON type travel as JSON text
(``value_json``) and are parsed and checked as data by the stage that asked.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


def _all_required(schema: dict[str, Any]) -> None:
    """Strict structured output wants every property required and no defaults."""
    props = schema.get("properties", {})
    schema["required"] = list(props)
    for prop in props.values():
        prop.pop("default", None)


class _Closed(BaseModel):
    # the schema sent is strict (closed, all required); parsing tolerates a missing optional field
    model_config = ConfigDict(extra="forbid", json_schema_extra=_all_required)


class RewrittenTurns(_Closed):
    """User turns rewritten by the LLM: one natural request per turn, anchored to one goal."""

    narrative: str = Field(description="One or two sentences: the user's overall goal.")
    turns: list[str] = Field(description="One user message per listed turn, in order.")


class ConfigPatchProposal(_Closed):
    """A minimal edit of the task's initial_config that removes an execution error."""

    cls: str = Field(description="Environment class whose config is edited, e.g. 'MessageAPI'.")
    path: str = Field(description="Dot-path of the field inside that class's config, e.g. 'current_user'.")
    value: str | int | float | bool | None = Field(description="New value of the field (a JSON scalar).")
    reason: str = Field(default="", description="One sentence: why this fixes the error.")


class Argument(_Closed):
    """One argument of a planned call."""

    name: str = Field(description="Parameter name as in the catalog.")
    value_json: str = Field(description="The value as JSON text, e.g. '\"report.pdf\"', '42', '[\"a\", \"b\"]'.")

    def value(self) -> Any:
        """The parsed value (ValueError when ``value_json`` is not JSON)."""
        try:
            return json.loads(self.value_json)
        except json.JSONDecodeError as exc:
            raise ValueError(f"argument {self.name}: value_json is not JSON ({exc.msg})") from None


class PlannedCall(_Closed):
    """One call of a planned turn: a function of the involved classes and its arguments."""

    name: str = Field(description="Function name from the catalog, e.g. 'cd'.")
    arguments: list[Argument] = Field(description="The call's arguments as name/value pairs.")

    def kwargs(self) -> dict[str, Any]:
        """Arguments as a dict (ValueError on a repeated name or a value that is not JSON)."""
        out: dict[str, Any] = {}
        for a in self.arguments:
            if a.name in out:
                raise ValueError(f"{self.name}: argument {a.name!r} given twice")
            out[a.name] = a.value()
        return out


class Rename(_Closed):
    """One renamed entity: a string of the seed's initial_config and its new name everywhere."""

    old: str = Field(description="A renamable value of the seed's initial_config.")
    new: str = Field(description="Its new value, of the same kind (a file name stays a file name).")


class NewValue(_Closed):
    """One changed scalar of the initial state (a balance, a fuel level, a flag)."""

    path: str = Field(description="Class and dot-path inside its config, e.g. 'TradingBot.account_info.balance'.")
    value_json: str = Field(description="The new value as JSON text.")


class PlanProposal(_Closed):
    """A new ground-truth plan with the seed's shape: the calls of every turn, renames and new state values."""

    turns: list[list[PlannedCall]] = Field(description="Per turn, the calls in order (an empty list for an empty turn).")
    renames: list[Rename] = Field(default_factory=list, description="Entities of the seed's initial_config "
                                  "renamed in the variant.")
    new_values: list[NewValue] = Field(default_factory=list, description="Scalars of the initial state set to new values.")


class JudgeVerdict(_Closed):
    """The quality judge's verdict on one candidate task, compared with its seed."""

    reasoning: str = Field(description="Short reasoning over the criteria, turn by turn.")
    faithfulness: int = Field(description="1-5: the text (plus the state) determines exactly the ground-truth calls.")
    coherence: int = Field(description="1-5: the turns form one conversation and follow the state's progression.")
    naturalness: int = Field(description="1-5: reads like a real user (no function or parameter names).")
    easier_than_seed: bool = Field(description="True when the text spells out steps, values or choices the seed "
                                   "leaves to the assistant, or drops a condition, reference or withheld value.")
    substantively_new: bool = Field(description="False when the candidate is the seed's sentences with values "
                                    "swapped, a sentence-by-sentence paraphrase, new only in digits, ids or dates, or "
                                    "renames alone; true when it is a situation of its own.")
    decision: Literal["accept", "reject"] = Field(description="accept only if faithful, coherent, natural, "
                                                  "no easier than the seed and substantively new.")
    fault: Literal["none", "query_fixable", "gt_unfixable"] = Field(
        description="On reject: query_fixable (wording or values of the text), gt_unfixable (the calls or state).")
    critique: str = Field(description="On reject: what to change, per turn, so the text would pass.")


LLM_OUTPUT_SCHEMAS: tuple[type[BaseModel], ...] = (RewrittenTurns, ConfigPatchProposal, PlanProposal, JudgeVerdict)
