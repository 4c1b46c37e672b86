"""The disk cache that spares later processes the turn bank's build (rods_agents/run/disk_cache.py)."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

from rods_agents.run import disk_cache


def test_a_second_call_loads_what_the_first_built_and_a_new_key_builds_anew(tmp_path, monkeypatch):
    monkeypatch.setenv("RODS_CACHE", str(tmp_path))
    builds = []

    def build():
        builds.append(1)
        return {("cd", "ls"): ("donor",)}

    assert disk_cache.cached("bank", "k1", build) == {("cd", "ls"): ("donor",)}
    assert disk_cache.cached("bank", "k1", build) == {("cd", "ls"): ("donor",)}
    assert len(builds) == 1
    disk_cache.cached("bank", "k2", build)
    assert len(builds) == 2
    assert not list((tmp_path / "bank").glob("*.tmp"))  # written through a renamed temporary file


def test_a_damaged_file_is_rebuilt_with_a_warning_not_trusted(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("RODS_CACHE", str(tmp_path))
    disk_cache.cached("bank", "k", lambda: [1, 2, 3])
    (path,) = (tmp_path / "bank").glob("*.pkl")
    path.write_bytes(path.read_bytes()[:5])  # a run killed mid-write by another tool, a full disk
    with caplog.at_level(logging.WARNING, logger="rods.synthesis"):
        assert disk_cache.cached("bank", "k", lambda: [4]) == [4]
    assert "did not load" in caplog.text
    assert disk_cache.cached("bank", "k", lambda: [5]) == [4]  # and the rebuilt value is what is saved


def test_switched_off_it_always_builds(tmp_path, monkeypatch):
    monkeypatch.setenv("RODS_CACHE", str(tmp_path))
    monkeypatch.setenv("RODS_NO_DISK_CACHE", "1")
    builds = []
    for _ in range(2):
        disk_cache.cached("bank", "k", lambda: builds.append(1))
    assert len(builds) == 2 and not (tmp_path / "bank").exists()


def test_the_fingerprint_follows_code_and_data_files(tmp_path, monkeypatch):
    for d in ("rods_agents", "envs", "prompts"):
        (tmp_path / d).mkdir()
    (tmp_path / "rods_agents" / "stage.py").write_text("x = 1\n")
    (tmp_path / "prompts" / "phrasebook.json").write_text("[]")
    monkeypatch.setattr(disk_cache, "ROOT", tmp_path)
    first = disk_cache.code_fingerprint()
    assert disk_cache.code_fingerprint() == first
    (tmp_path / "prompts" / "phrasebook.json").write_text('["Please list the files."]')
    second = disk_cache.code_fingerprint()
    assert second != first
    (tmp_path / "rods_agents" / "stage.py").write_text("x = 2\n")
    assert disk_cache.code_fingerprint() not in (first, second)


def test_a_new_process_gets_the_same_turn_bank_from_the_cache(tmp_path):
    """What the cache is for: the next process loads the bank the first one built, equal to it."""
    code = ("import sys, pickle; from rods_agents.variation import turn_bank as tb; "
            "b = tb.turn_bank(); sys.stdout.buffer.write(pickle.dumps(sorted((k, [d.text for d in v]) for k, v in b.items())))")
    env = {"RODS_CACHE": str(tmp_path), "PATH": "/usr/bin:/bin"}
    root = Path(__file__).resolve().parents[1]
    runs = [subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, check=True).stdout
            for _ in range(2)]
    assert len(list((tmp_path / "turn-bank").glob("*.pkl"))) == 1
    assert runs[0] == runs[1] and len(runs[0]) > 10_000
