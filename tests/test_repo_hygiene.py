"""Repository-wide rules a contributor could break without noticing."""

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ["envs", "rods_agents", "graphs", "trainer", "rods_cli"]


def test_no_eval_or_exec_in_library_code():
    """Model and LLM text must never reach eval/exec: calls are parsed with ast only."""
    offenders = []
    for pkg in LIBRARY:
        for path in (ROOT / pkg).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in {"eval", "exec"}:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, offenders


# The one langchain-core import envs/ may make: the converter that turns a user class's type hints and docstrings
# into tool schemas (envs/classes.py, imported inside the function, so BFCL-only runs never load langchain-core).
# Writing our own docstring parser instead would duplicate a well-kept library.
ENVS_ALLOWED_IMPORTS = {("envs/classes.py", "langchain_core.utils.function_calling")}


def test_envs_does_not_import_langgraph_or_trl():
    """envs/ is shared by the evaluator, the graph and the trainer; it must stay light."""
    for path in (ROOT / "envs").rglob("*.py"):
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            names = [n for n in names if (rel, n) not in ENVS_ALLOWED_IMPORTS or node.col_offset == 0]
            assert not any(n.split(".")[0] in {"langgraph", "langchain_core", "trl"} for n in names), path


@pytest.mark.skipif(shutil.which("ruff") is None and not (Path(sys.executable).parent / "ruff").exists(),
                    reason="ruff not installed")
def test_ruff_clean():
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    result = subprocess.run([ruff, "check", str(ROOT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:]


# ----------------------------------------------------------------------------- layers
# envs <- rods_agents <- graphs <- trainer; rods_cli may import all; nothing imports trainer but rods_cli
LAYER = {"envs": 0, "rods_agents": 1, "graphs": 2, "trainer": 3, "rods_cli": 4}


def _imports(path: Path) -> list[tuple[str, int]]:
    """Every module ``path`` imports, at module level *and* inside functions (deferred imports hide cycles)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative import
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            out.append((base, node.lineno))
            # `from rods_agents import verdict` imports the submodule rods_agents.stages.verdict
            out += [(f"{base}.{a.name}", node.lineno) for a in node.names
                    if (ROOT / Path(*base.split("."), f"{a.name}.py")).exists()]
    return out


def _modules(pkg: str) -> dict[str, Path]:
    return {".".join(p.relative_to(ROOT).with_suffix("").parts): p for p in (ROOT / pkg).rglob("*.py")}


def test_imports_follow_the_layers_at_module_and_function_level():
    offenders = []
    for pkg, level in LAYER.items():
        for path in _modules(pkg).values():
            for target, line in _imports(path):
                top = target.split(".")[0]
                if top not in LAYER or top == pkg:
                    continue
                if top == "trainer" and pkg != "rods_cli" or LAYER[top] > level:
                    offenders.append(f"{path.relative_to(ROOT)}:{line} imports {target} ({pkg} may not)")
    assert not offenders, "\n".join(offenders)


def test_no_import_cycle_among_rods_agents_modules():
    """Including cycles that function-level imports hide (llm_backbone <-> plan_sampling once was one)."""
    import networkx as nx

    mods = _modules("rods_agents")
    g = nx.DiGraph()
    g.add_nodes_from(mods)
    for name, path in mods.items():
        for target, _ in _imports(path):
            if target in mods and target != name and not target.endswith("__init__"):
                g.add_edge(name, target)
    cycles = list(nx.simple_cycles(g))
    assert not cycles, cycles


# inside rods_agents: run types <- read-only analysis <- offline variation <- LLM plumbing <- stages (graph nodes)
SUBLAYER = {"run": 0, "analysis": 1, "variation": 2, "llm": 3, "stages": 4}


def test_rods_agents_subpackages_follow_their_order():
    """A stage may use everything below it; analysis never reaches up into variation, the LLM or the stages."""
    offenders = []
    for name, path in _modules("rods_agents").items():
        parts = name.split(".")
        if len(parts) < 3 or parts[1] not in SUBLAYER:
            continue
        for target, line in _imports(path):
            tparts = target.split(".")
            if tparts[0] == "rods_agents" and len(tparts) > 1 and tparts[1] in SUBLAYER \
                    and SUBLAYER[tparts[1]] > SUBLAYER[parts[1]]:
                offenders.append(f"{path.relative_to(ROOT)}:{line} imports {target}")
    assert not offenders, "\n".join(offenders)


def test_the_layer_rule_sees_function_level_imports(tmp_path, monkeypatch):
    """The checker itself: a deferred import inside a function is found."""
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from rods_agents.stages.state import SynthesisContext\n    return SynthesisContext\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert ("rods_agents.stages.state", 2) in _imports(probe)
