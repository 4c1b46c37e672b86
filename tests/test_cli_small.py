"""Everyday CLI details: repeated ids run once, `rods tasks` listings feed `--tasks`/`--seeds`, outputs are
world-readable like any file the user writes, error messages keep their brackets, docs references resolve."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from envs.dataset import load_split
from envs.task import atomic_write_text, dedupe_tasks, read_tasks, write_tasks
from rods_cli.main import app

runner = CliRunner()
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def base_tasks():
    return [t for t in load_split("train", ["base"])][:3]


def test_repeated_ids_in_tasks_file_are_evaluated_once_with_a_warning(tmp_path, base_tasks, caplog):
    path, out = tmp_path / "tasks.jsonl", tmp_path / "report.json"
    write_tasks(path, [base_tasks[0], base_tasks[1], base_tasks[0]])
    with caplog.at_level("WARNING"):
        result = runner.invoke(app, ["eval", "--tasks", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["overall"]["total"] == 2 and sorted(e["id"] for e in report["entries"]) == sorted(
        t.id for t in base_tasks[:2])
    assert any("repeated task id" in r.getMessage() and base_tasks[0].id in r.getMessage() for r in caplog.records)
    result = runner.invoke(app, ["eval", "--id", base_tasks[0].id, "--id", base_tasks[0].id, "--split", "train",
                                 "--out", str(out)])
    assert result.exit_code == 0 and json.loads(out.read_text())["overall"]["total"] == 1


def test_same_id_with_different_content_is_refused(tmp_path, base_tasks):
    other = base_tasks[1].model_copy(update={"id": base_tasks[0].id})
    path = tmp_path / "tasks.jsonl"
    write_tasks(path, [base_tasks[0], other])
    result = runner.invoke(app, ["eval", "--tasks", str(path)])
    assert result.exit_code == 2 and "appears twice with different content" in result.output


@settings(deadline=None)  # the first example reads the split (0.8 s on a busy 2-core runner: a flaky deadline)
@given(st.lists(st.integers(0, 4), max_size=12))
def test_dedupe_keeps_first_occurrences_in_order(picks):
    pool = load_split("train", ["base"])[:5]
    tasks = [pool[i] for i in picks]
    assert [t.id for t in dedupe_tasks(tasks)] == list(dict.fromkeys(t.id for t in tasks))


def test_tasks_listing_feeds_eval_and_synthesize_seeds(tmp_path):
    listing = runner.invoke(app, ["tasks", "--split", "train", "-c", "miss_func", "--format", "jsonl"])
    assert listing.exit_code == 0
    path = tmp_path / "seeds.jsonl"
    path.write_text("\n".join(listing.output.splitlines()[:3]) + "\n")
    tasks = read_tasks(path)
    assert [t.id for t in tasks] == [json.loads(line)["id"] for line in path.read_text().splitlines()]
    assert all(t.ground_truth and t.missed_function for t in tasks)  # the shipped tasks, ground truth included
    out = tmp_path / "report.json"
    result = runner.invoke(app, ["eval", "--tasks", str(path), "--out", str(out)])
    assert result.exit_code == 0 and json.loads(out.read_text())["overall"]["passed"] == 3
    result = runner.invoke(app, ["synthesize", "--seeds", str(path), "--num-seeds", "1", "--variants-per-seed", "1",
                                 "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "run" / "report.json").read_text())


@pytest.mark.parametrize(("umask", "expected"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_outputs_get_the_mode_open_would_give(tmp_path, umask, expected):
    old = os.umask(umask)
    try:
        atomic_write_text(tmp_path / "out.json", "{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "out.json").stat().st_mode) == expected


def test_rewriting_a_file_keeps_its_mode(tmp_path):
    path = tmp_path / "out.json"
    path.write_text("old")
    path.chmod(0o640)
    atomic_write_text(path, "new")
    assert path.read_text() == "new" and stat.S_IMODE(path.stat().st_mode) == 0o640


def test_cli_run_writes_world_readable_report(tmp_path):
    out = tmp_path / "report.json"
    old = os.umask(0o022)
    try:
        result = runner.invoke(app, ["eval", "--split", "train", "-c", "base", "--limit", "1", "--out", str(out)])
    finally:
        os.umask(old)
    assert result.exit_code == 0 and stat.S_IMODE(out.stat().st_mode) == 0o644


def test_error_messages_keep_their_brackets(tmp_path):
    bad = tmp_path / "replay.jsonl"
    bad.write_text('{"id": "multi_turn_base_0", "turns": "nope"}\n')
    result = runner.invoke(app, ["eval", "--policy", f"replay:{bad}", "--split", "train", "--limit", "1"])
    assert result.exit_code == 2
    assert "expected {'id': str, 'turns': [[call string, ...], ...]}" in " ".join(result.output.split())


def test_docs_cited_in_the_repo_exist():
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True,
                           text=True, check=True).stdout.split()
    cited = set()
    for f in files:
        if f.endswith((".py", ".yaml", ".md", ".toml", ".sh")) and (REPO / f).is_file() and not f.startswith("tests/"):
            cited |= set(re.findall(r"docs/[\w./-]+\.md", (REPO / f).read_text(errors="replace")))
    assert cited, "expected the code to cite docs/"
    missing = sorted(c for c in cited if not (REPO / c).exists())
    assert not missing, missing


def test_version_prints_the_package_version():
    from importlib import metadata

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"rods {metadata.version('rods')}"


@pytest.fixture()
def show_run(tmp_path, base_tasks):
    """A run folder with one accepted variant (a turn reworded, a city swapped in a call) and one rejected sample."""
    seed = base_tasks[0]
    variant = seed.model_copy(deep=True)
    variant.id = f"{seed.id}__rods_0123abcd"
    variant.turns[0][0].content = " ".join(variant.turns[0][0].content.split(" ")[:-1] + ["Zanzibar"])
    variant.ground_truth[0] = [c.replace("'", '"') for c in variant.ground_truth[0]]
    variant.provenance = {"seed_id": seed.id, "variant": 0, "swaps": {"Home": "Zanzibar"}}
    write_tasks(tmp_path / "accepted.jsonl", [variant])
    rejected = {"sample_id": f"{seed.id}#v1", "seed_id": seed.id, "variant": 1,
                "reasons": ["novelty:seed_text_copy containment=0.9", "near_duplicate_seed"],
                "detail": {"earlier_attempts": [{"reasons": ["verdict:outcome_flip turn=2"]}]}}
    (tmp_path / "rejected.jsonl").write_text(json.dumps(rejected) + "\n")
    return tmp_path, seed, variant


def test_show_puts_variant_beside_its_seed_with_changes_marked(show_run):
    from rods_cli.show import diff_words

    run, seed, variant = show_run
    result = runner.invoke(app, ["show", str(run), variant.id], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "Zanzibar" in result.output and seed.turns[0][0].content.split()[-1] in result.output
    assert f"seed {seed.id}" in result.output and f"{seed.id}#v0" in result.output and "swaps" in result.output
    left, right = diff_words(seed.turns[0][0].content, variant.turns[0][0].content)
    marked = [right.plain[s.start:s.end] for s in right.spans if "green" in str(s.style)]
    assert marked == ["Zanzibar"]  # only the changed word is highlighted
    assert [left.plain[s.start:s.end] for s in left.spans] == [seed.turns[0][0].content.split(" ")[-1]]
    left, right = diff_words("cd(folder='a')", 'cd(folder="a")', calls=True)
    assert [right.plain[s.start:s.end] for s in right.spans] == ['"a"']  # a token changed, not the whole call
    # the same sample by its sample id, and by its seed (which also lists the rejected sibling)
    by_sample = runner.invoke(app, ["show", str(run), f"{seed.id}#v0"], env={"COLUMNS": "200"})
    assert by_sample.exit_code == 0 and "Zanzibar" in by_sample.output
    by_seed = runner.invoke(app, ["show", str(run), seed.id], env={"COLUMNS": "200"})
    assert "Zanzibar" in by_seed.output and "rejected" in by_seed.output


def test_show_gives_a_rejected_samples_reasons_and_lists_the_run(show_run):
    run, seed, _ = show_run
    result = runner.invoke(app, ["show", str(run), f"{seed.id}#v1"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "novelty:seed_text_copy containment=0.9" in result.output and "near_duplicate_seed" in result.output
    assert "earlier attempt 1: verdict:outcome_flip" in result.output
    listing = runner.invoke(app, ["show", str(run)], env={"COLUMNS": "80"})
    assert listing.exit_code == 0 and f"{seed.id}#v0" in listing.output and f"{seed.id}#v1" in listing.output
    missing = runner.invoke(app, ["show", str(run), f"{seed.id}#v9"])
    assert missing.exit_code == 2 and "did you mean" in missing.output and len(missing.output.splitlines()) <= 2
