"""Constrained decoding end to end: a grammar-guaranteed LLM answer becomes an accepted synthesis sample.

The LLM rewrite stage asks for :class:`rods_agents.stages.state.RewrittenTurns`; ``ChatOpenAI.with_structured_output`` sends it as
an OpenAI ``response_format`` JSON schema (its default ``method="json_schema"``), which vLLM enforces with xgrammar.
A random model can satisfy the *schema* but never the stage's content rules (every quoted value of each draft kept),
so the chat model put in the backbone's ``chat_models`` slot tightens the schema per request from the prompt the
stage actually sent: each turn must be its draft, optionally prefixed with "Please: " (the model picks), and the
narrative is free text of at most 16 characters (the model's own garbage). Nothing is post-processed: the JSON the
server returns is parsed by LangChain, validated by the stage, executed and judged like any answer, and the sample
must be accepted with one LLM call. Keeping it honest: the content is nonsense or dictated; the structure is what the
server's grammar guarantees, and that is what travels end to end.
"""

from __future__ import annotations

import json
import re
import time

import pytest

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

# Train-split seeds the offline pipeline accepts on its first plan (checked below; the first accepted one is used).
# Short seeds first: the server caps an answer at 256 tokens and the turns are pinned to their (seed-anchored) drafts.
CANDIDATE_SEEDS = ["multi_turn_base_29", "multi_turn_long_context_41", "multi_turn_base_9", "multi_turn_base_16"]
PREFIX = "Please: "
NARRATIVE_MAX = 16  # the server caps answers at 256 tokens; the seed-anchored drafts take most of them


def drafts_in(prompt: str) -> list[str]:
    """The numbered drafts at the end of the rewrite prompt (``prompts/llm_rewrite.txt``)."""
    n = int(re.search(r"Return exactly (\d+) messages", prompt).group(1))
    block = prompt.rsplit("Drafts:\n", 1)[1].strip("\n").splitlines()
    drafts = [re.sub(r"^\d+\. (?:\(turn \d+\) )?", "", line, count=1) for line in block]
    assert len(drafts) == n, (n, block)
    return drafts


def tight_schema(drafts: list[str]) -> dict:
    """RewrittenTurns' shape with each turn pinned to its draft (optionally prefixed) and a bounded narrative."""
    return {
        "title": "RewrittenTurns", "type": "object", "additionalProperties": False,
        "required": ["narrative", "turns"],
        "properties": {
            "narrative": {"type": "string", "maxLength": NARRATIVE_MAX},
            "turns": {"type": "array", "minItems": len(drafts), "maxItems": len(drafts), "items": False,
                      "prefixItems": [{"enum": [d, PREFIX + d]} for d in drafts]},
        },
    }


class DraftGrammarModel:
    """A chat model for the backbone's ``chat_models`` slot: a real ``ChatOpenAI`` on the server, json_schema
    structured output with :func:`tight_schema` built from each prompt. Records every raw answer."""

    def __init__(self, llm):
        self.llm = llm
        self.raw: list = []
        self.prompts: list[str] = []

    def with_structured_output(self, schema, **kwargs):
        from langchain_core.runnables import RunnableLambda

        from rods_agents.stages.state import RewrittenTurns

        assert schema is RewrittenTurns, f"only the rewrite stage is wired here, got {schema}"

        def invoke(prompt: str) -> RewrittenTurns:
            self.prompts.append(prompt)
            bound = self.llm.with_structured_output(tight_schema(drafts_in(prompt)), method="json_schema",
                                                    strict=True, include_raw=True)
            out = bound.invoke(prompt)
            self.raw.append(out["raw"])
            if out["parsing_error"] is not None:
                raise out["parsing_error"]
            return RewrittenTurns.model_validate(out["parsed"])

        return RunnableLambda(invoke)


def test_json_schema_answer_from_the_server_becomes_an_accepted_sample(vllm_server):
    from langchain_openai import ChatOpenAI

    from envs.dataset import load_tasks
    from graphs.synthesis import synthesize
    from rods_agents.stages.state import SynthesisContext

    # the offline pipeline accepts this seed: its drafts are the rewrite stage's input
    seeds = load_tasks("train", ids=CANDIDATE_SEEDS)
    offline = None
    for seed in seeds:
        res = synthesize([seed], SynthesisContext(variants_per_seed=1))
        if res.accepted:
            offline = res.accepted[0]
            break
    assert offline is not None, "the offline pipeline accepted none of the candidate seeds"

    model = DraftGrammarModel(ChatOpenAI(model=vllm_server.model, base_url=vllm_server.base_url, api_key="EMPTY",
                                         temperature=1.0, max_retries=1, timeout=120))
    ctx = SynthesisContext(variants_per_seed=1, backbone="llm", llm_stages=["rewrite"], models=[vllm_server.model],
                           chat_models=[model])
    t0 = time.monotonic()
    res = synthesize([seed], ctx)
    seconds = time.monotonic() - t0

    # one structured request reached the server and was decoded under the grammar
    assert len(model.raw) == 1, [r["detail"]["llm_errors"][0][-400:] for r in res.rejected]
    raw = model.raw[0]
    assert raw.response_metadata.get("finish_reason") == "stop", raw.response_metadata
    # the server's text is JSON as sent, not repaired client-side; the random model's free-text narrative may hold
    # raw control characters, which xgrammar's JSON grammar admits and strict json.loads refuses
    answer = json.loads(raw.content, strict=False)
    assert set(answer) == {"narrative", "turns"} and len(answer["narrative"]) <= NARRATIVE_MAX
    prompt_drafts = drafts_in(model.prompts[0])

    # ... and it travelled into an accepted sample: validated, executed, judged, with provenance
    assert res.report["accepted"] == 1, (res.rejected, res.report)
    task = res.accepted[0]
    assert task.provenance["backbone"] == "llm" and task.provenance["llm_stages"] == ["rewrite"]
    assert task.provenance["llm_calls"] == 1 and res.report["llm_calls"] == 1
    assert task.ground_truth == offline.ground_truth
    got = [m.content for turn in task.turns for m in turn if m.role == "user"]
    assert got == answer["turns"]
    assert all(g in (d, PREFIX + d) for g, d in zip(got, prompt_drafts, strict=True))
    print(f"constrained rewrite -> accepted sample in {seconds:.1f} s; model's answer: {raw.content[:200]}")
