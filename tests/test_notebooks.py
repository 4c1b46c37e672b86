"""Notebooks only import from the packages and run top to bottom."""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path):
    nb = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit notebooks with outputs cleared"
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent.parent)}}).execute()


WORDS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_a_cell_count_the_notebook_states_is_its_cell_count(path):
    import re

    nb = nbformat.read(path, as_version=4)
    title = "".join(nb.cells[0].source).splitlines()[0]
    match = re.search(r"\bin (\w+) cells\b", title)
    if match:
        stated = WORDS.get(match.group(1).lower(), int(match.group(1)) if match.group(1).isdigit() else -1)
        assert stated == len(nb.cells), f"{path.name}: title says {match.group(1)} cells, it has {len(nb.cells)}"
