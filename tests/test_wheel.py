"""A normal (non-editable) install works: the wheel holds every file the code reads at run time, and the installed
copy runs from outside the repository.

Builds the wheel from a copy of the source tree (git's tracked + untracked-not-ignored files, so the checkout is not
touched), without build isolation (no network), then installs it with ``--no-deps --target`` and runs the CLI from
that copy with ``PYTHONPATH`` pointing at it (dependencies come from this venv).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("envs", "rods_agents", "graphs", "trainer", "rods_cli", "prompts")


def source_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    return [f for f in out if (REPO / f).is_file()]


def runtime_data_files(files: list[str]) -> list[str]:
    """Every non-Python file inside a package folder: prompts, phrase tables, the split manifest."""
    return sorted(f for f in files if f.split("/", 1)[0] in PACKAGES and not f.endswith((".py", ".pyc"))
                  and "__pycache__" not in f)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, list[str]]:
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"
    files = source_files()
    for f in files:
        (src / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / f, src / f)
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           str(src), "-w", str(root / "dist")], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = (root / "dist").glob("rods-*.whl")
    return wheel, files


def test_wheel_holds_every_runtime_data_file(built):
    wheel, files = built
    names = set(zipfile.ZipFile(wheel).namelist())
    needed = runtime_data_files(files)
    assert "envs/split_manifest.json" in needed and any(f.startswith("prompts/") for f in needed)
    missing = [f for f in needed if f not in names]
    assert not missing, f"not in {wheel.name}: {missing}"
    assert "prompts/__init__.py" in names  # the resolver the loaders use after an install


def test_installed_wheel_runs_outside_the_repo(built, tmp_path):
    wheel, _ = built
    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile", "--target",
                           str(site), str(wheel)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    env = {**os.environ, "PYTHONPATH": str(site)}  # ahead of the editable install of the checkout
    # trainer.integrations.verl: the class paths a verl export's configs name must import from an install
    where = subprocess.run([sys.executable, "-c", "import envs.dataset, prompts, rods_agents.stages.plan_sampling as p; "
                            "import trainer.integrations.verl as v; print(envs.dataset.__file__); "
                            "print(prompts.PROMPTS_DIR); print(p.__file__); print(v.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert where.returncode == 0, where.stderr[-2000:]
    assert all(line.startswith(str(site)) for line in where.stdout.split()), where.stdout
    # The split manifest (rods tasks) and the offline synthesis phrase tables and templates (rods synthesize).
    tasks = subprocess.run([sys.executable, "-m", "rods_cli.main", "tasks", "--split", "train", "--format", "jsonl"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert tasks.returncode == 0 and len(tasks.stdout.splitlines()) == 400, tasks.stderr[-2000:]
    synth = subprocess.run([sys.executable, "-m", "rods_cli.main", "synthesize", "--seeds", "train", "--num-seeds", "2",
                            "--variants-per-seed", "1", "--out", str(tmp_path / "run")],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert synth.returncode == 0, synth.stdout[-2000:] + synth.stderr[-3000:]
    assert (tmp_path / "run" / "report.json").exists()
