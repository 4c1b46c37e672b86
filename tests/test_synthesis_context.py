"""SynthesisContext validates its own settings: one clear error per bad value, the same rules everywhere."""

from __future__ import annotations

import pytest

from rods_agents.run.context import LLM_STAGES, ContextError, SynthesisContext, parse_stages
from rods_agents.stages.state import SynthesisContext as ReExported


def test_graphs_state_re_exports_the_one_context():
    assert ReExported is SynthesisContext


@pytest.mark.parametrize(("kwargs", "names"), [
    ({"backbone": "openai"}, ["backbone", "'offline', 'llm'", "'openai'"]),
    ({"backbone": "llm"}, ["needs at least one model"]),
    ({"backbone": "llm", "models": ["m"], "llm_stages": ["plan", "dance"]}, ["llm_stages", "dance"]),
    ({"backbone": "llm", "models": ["m"], "llm_stages": []}, ["at least one of llm_stages"]),
    ({"variants_per_seed": 0}, ["variants_per_seed must be >= 1"]),
    ({"max_plan_attempts": 0}, ["max_plan_attempts must be >= 1"]),
    ({"llm_retries": -1}, ["llm_retries must be >= 0"]),
    ({"backbone": "llm", "models": ["a"], "stage_models": {"plan": "b"}}, ["stage_models"]),
])
def test_a_bad_setting_is_one_clear_error(kwargs, names):
    with pytest.raises(ContextError) as info:
        SynthesisContext(**kwargs)
    for name in names:
        assert name in str(info.value)


def test_the_llm_backbone_defaults_to_all_four_stages_and_stages_parse_from_text():
    ctx = SynthesisContext(backbone="llm", models=["m"])
    assert ctx.llm_stages == list(LLM_STAGES) == ["plan", "rewrite", "patch", "judge"]
    assert all(ctx.uses_llm(s) for s in LLM_STAGES) and not SynthesisContext().uses_llm("plan")
    assert parse_stages("plan, rewrite,plan") == ["plan", "rewrite"]
