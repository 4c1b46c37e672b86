"""`rods eval --policy hf:PATH` runs a local transformers model through the same runner."""

import json

import pytest
from typer.testing import CliRunner

from rods_cli.main import app


@pytest.mark.slow
def test_hf_policy_scores_every_entry(tmp_path):
    from trainer.tiny_model import ensure_tiny_model

    model = ensure_tiny_model()
    out = tmp_path / "report.json"
    result = CliRunner().invoke(app, ["eval", "--policy", f"hf:{model}", "--split", "test", "-c", "base",
                                      "--limit", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert len(report["entries"]) == 2
    # an untrained model: the protocol ran (one model step per turn at least), nothing crashed
    assert all(e["steps"] >= 1 and e["failure"] != "multi_turn:inference_error" for e in report["entries"])


def test_hf_policy_missing_folder_is_a_clear_error():
    result = CliRunner().invoke(app, ["eval", "--policy", "hf:/no/such/model", "--limit", "1"])
    assert result.exit_code == 2 and "no such model folder" in result.output
