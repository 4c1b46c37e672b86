"""Which samples run one after another, and what each knows of its siblings when it starts.

The four BFCL categories share a scenario, so the variants of one scenario (of any seed, any variant) are
*siblings*: two that tell the same story are near-copies, and the verdict refuses the later one
(``novelty:sibling_copy``), so the graph re-plans it instead of the run's de-duplication dropping it after the
fact. For that set never to depend on timing, the samples of one scenario form a *lane* that runs in issue
order; lanes run side by side. A sample's siblings are the lane's samples the verdict accepted before it, plus
tasks published earlier (``known``). Both the checkpointed driver (:mod:`graphs.driver`) and the in-process
run graph (:mod:`graphs.synthesis`, one wave of lanes per superstep) use these rules, so they give the same
samples.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from envs.task import Task
from rods_agents.analysis.lookups import without_lookups

T = TypeVar("T")


def lane_key(seed: Task) -> tuple[str, Any]:
    """A sample's lane: its seed's scenario, else (a task outside BFCL without one) its own seed."""
    return ("scenario", seed.scenario) if seed.scenario is not None else ("seed", seed.id)


def lanes(samples: Sequence[T], seed_of: Callable[[T], Task]) -> list[list[T]]:
    """``samples`` (in issue order) grouped by lane, each lane in issue order, lanes in the order of their first
    sample."""
    out: dict[tuple[str, Any], list[T]] = {}
    for sample in samples:
        out.setdefault(lane_key(seed_of(sample)), []).append(sample)
    return list(out.values())


def sibling_entry(task: Task) -> dict:
    """What the verdict's near-copy test reads of a sibling (text, calls, scenario), without the initial config:
    it can be large (long_context), and the list is written into each later sample's first checkpoint. The calls
    are those the sibling was judged with: the lookups written into its ground truth after the verdict
    (:mod:`rods_agents.analysis.lookups`) are taken out, as the candidate has none written yet."""
    return without_lookups(task).model_dump(exclude={"initial_config", "provenance"})


class Siblings:
    """Per lane, the siblings a sample starts with: ``known`` tasks of its scenario, then the lane's accepted
    samples in the order they were added."""

    def __init__(self, known: Iterable[Task] = ()) -> None:
        self._found: dict[tuple[str, Any], list[dict]] = {}
        for task in known:
            if task.scenario is not None:  # a published variant is a sibling of its scenario's lane
                self._append(lane_key(task), task)

    def before(self, seed: Task) -> list[dict]:
        """The siblings of a sample of ``seed`` that starts now."""
        return list(self._found.get(lane_key(seed), []))

    def add(self, seed: Task, result: dict) -> None:
        """Record a finished sample of ``seed``; an accepted one becomes a sibling of the lane's later samples."""
        if result.get("accepted") and result.get("task"):
            self._append(lane_key(seed), Task.from_bfcl(result["task"]))

    def _append(self, key: tuple[str, Any], task: Task) -> None:
        found = self._found.setdefault(key, [])
        if all(entry["id"] != task.id for entry in found):
            found.append(sibling_entry(task))


__all__ = ["Siblings", "lane_key", "lanes", "sibling_entry"]
