"""Stage 1: the complexity profile Φ of a task, from its executed ground truth.

Φ is what a variant must keep so it stays at its seed's difficulty: the turn shape, involved
classes, category features, the call graph's longest dependency path, edge counts by kind, a
Weisfeiler-Lehman hash of the graph over *role-level* labels (so a role-preserving method
substitution keeps it), and the information structure: how many argument values per turn come
from the user, earlier calls, the state, or a transformation, plus the rest of it (implicit calls,
conditions, references, transformations, withheld value, held-out function;
:mod:`rods_agents.analysis.information_structure`), and the skill-level profile
(:mod:`rods_agents.analysis.skills`), which is what the verdict compares: the exact-function fields
above (``MATCHED``) are kept for reports, not pinned.
"""

from __future__ import annotations

import warnings
from collections import Counter
from typing import Any, ClassVar

import networkx as nx
from pydantic import BaseModel, Field

from envs.task import Task
from rods_agents.analysis.catalog import ApiCatalog, build_catalog
from rods_agents.analysis.information_structure import InformationStructure, information_structure
from rods_agents.analysis.skills import SkillProfile, skill_profile
from rods_agents.analysis.tracing import Trace, trace_task
from rods_agents.analysis.value_sources import SOURCES, ArgSource, classify_arguments


class Profile(BaseModel):
    """Φ(task): serializable, shown in traces and stored in provenance."""

    turn_shape: list[int]
    classes: list[str]
    category: str
    miss_func_turns: list[int] = Field(default_factory=list)
    miss_param_turns: list[int] = Field(default_factory=list, description="Turns withholding a literal (GT empty).")
    empty_turns: list[int] = Field(default_factory=list)
    long_context: bool = False
    longest_path: int = 0
    edge_counts: dict[str, int] = Field(default_factory=dict)
    wl_hash: str = ""
    sources_by_turn: list[dict[str, int]] = Field(default_factory=list)
    arg_sources: list[ArgSource] = Field(default_factory=list)
    nodes: list[dict[str, Any]] = Field(default_factory=list)
    edges: list[dict[str, Any]] = Field(default_factory=list)
    information: InformationStructure | None = Field(
        default=None, description="Per turn: implicit calls, conditions, references, transformations, the withheld "
        "value and the held-out function (rods_agents.analysis.information_structure).")
    skills: SkillProfile | None = Field(
        default=None, description="The skill-level profile the verdict compares (rods_agents.analysis.skills): "
        "skill classes and kinds of the calls, explicit or implicit, data flow, discovered values, conditions, "
        "references, transformations, withheld value and held-out function; function identity is not part of it.")

    # the exact-function fields of Φ; kept for reports and older callers. The verdict no longer pins them: it
    # compares ``skills`` (rods_agents.analysis.skills), which lets a plan swap functions inside a skill class
    MATCHED: ClassVar[tuple[str, ...]] = ("turn_shape", "classes", "category", "miss_func_turns", "miss_param_turns",
                                "empty_turns", "long_context", "longest_path", "edge_counts", "wl_hash",
                                "sources_by_turn")

    def mismatches(self, other: Profile) -> list[str]:
        """Names of the matched fields where ``other`` differs from this profile."""
        return [f for f in self.MATCHED if getattr(self, f) != getattr(other, f)]

    def source_counts(self) -> dict[str, int]:
        c = Counter(a.source for a in self.arg_sources)
        return {s: c.get(s, 0) for s in SOURCES}


def build_call_graph(trace: Trace, arg_sources: list[ArgSource], catalog: ApiCatalog) -> nx.DiGraph:
    """Call nodes; ``data`` edges (a result value used as a later argument) and ``state`` edges
    (a later call reads an attribute an earlier call wrote; latest writer only)."""
    g = nx.DiGraph()
    for pos, rec in enumerate(trace.calls):
        g.add_node(pos, turn=rec.turn, method=rec.name, label=catalog.role_label(rec.name))
    pos_of = {(r.turn, r.index): p for p, r in enumerate(trace.calls)}
    for a in arg_sources:
        if a.source == "call" and a.producer is not None:
            g.add_edge(a.producer, pos_of[(a.turn, a.index)], kind="data")
    last_writer: dict[tuple[str, str], int] = {}
    for pos, rec in enumerate(trace.calls):
        spec = catalog.methods.get(rec.name)
        if spec is not None:
            for attr in spec.reads:
                w = last_writer.get((spec.cls, attr))
                if w is not None and w != pos and not g.has_edge(w, pos):
                    g.add_edge(w, pos, kind="state")
        for attr in rec.writes:
            last_writer[(rec.cls or "?", attr)] = pos
    return g


def _wl_hash(g: nx.DiGraph) -> str:
    with warnings.catch_warnings():  # networkx >= 3.5 notes that directed hashes changed; ours are compared within one version
        warnings.simplefilter("ignore", UserWarning)
        return nx.weisfeiler_lehman_graph_hash(g, node_attr="label", edge_attr="kind", iterations=3)


def profile_task(task: Task, trace: Trace | None = None, catalog: ApiCatalog | None = None) -> Profile:
    """Compute Φ(task) (executes the ground truth unless a trace is given)."""
    catalog = catalog or build_catalog()
    trace = trace if trace is not None else trace_task(task)
    arg_sources = classify_arguments(task, trace)
    g = build_call_graph(trace, arg_sources, catalog)
    kinds = Counter(d["kind"] for _, _, d in g.edges(data=True))
    per_turn: list[Counter] = [Counter() for _ in task.ground_truth]
    for a in arg_sources:
        per_turn[a.turn][a.source] += 1
    empty = [t for t, gt in enumerate(task.ground_truth) if not gt]
    miss_func = sorted(task.missed_function)
    miss_param = [t for t in empty if task.category == "miss_param" and t + 1 < len(task.ground_truth)]
    information = information_structure(task, trace, arg_sources)
    profile = Profile(
        turn_shape=[len(gt) for gt in task.ground_truth],
        classes=sorted(task.involved_classes),
        category=task.category,
        miss_func_turns=miss_func,
        miss_param_turns=miss_param,
        empty_turns=empty,
        long_context=task.long_context,
        longest_path=(nx.dag_longest_path_length(g) + 1) if g.number_of_nodes() else 0,
        edge_counts={"data": kinds.get("data", 0), "state": kinds.get("state", 0)},
        wl_hash=_wl_hash(g),
        sources_by_turn=[{s: c[s] for s in SOURCES if c[s]} for c in per_turn],
        arg_sources=arg_sources,
        nodes=[{"id": n, **d} for n, d in g.nodes(data=True)],
        edges=[{"source": u, "target": v, **d} for u, v, d in g.edges(data=True)],
        information=information,
    )
    profile.skills = skill_profile(task, trace, profile)
    return profile


