"""The verl pieces ``rods export --format verl`` names: an interaction, a tool and a reward function.

verl's multi-turn rollout (``agent_name: tool_agent``, verl's ``ToolAgentLoop``) plays a BFCL episode with them:

* :class:`BFCLInteraction` (``interaction_config_path``: ``verl_interaction_config.yaml``, name ``rods_bfcl``) starts
  an episode per trajectory from the row's ``extra_info.interaction_kwargs.task_id`` (the task is rebuilt from the
  export named in its config: :func:`rods_agents.run.outputs.task_from_row`), and each time the model ends a turn
  without a tool call it answers with the task's next user turn, or ends the trajectory after the last one.
* :class:`BFCLTool` (``tool_config_path``: ``verl_tool_config.yaml``, one entry per function) executes a call in
  the trajectory's own environment (``envs.executor.Environment``: BFCL's classes, state kept across calls and turns).
  verl hands each tool call the trajectory's ``agent_data``, whose ``request_id`` is the interaction's instance id.
* :func:`compute_score` (``custom_reward_function.path``: this file, ``.name``: ``compute_score``) is the reward for
  the ``rods/bfcl_multi_turn_<category>`` data sources verl's default reward does not know: the sum of the
  interaction's turn scores, which are the increments of BFCL's progress reward (scored turns passed / scored turns,
  unreached turns failed), so a trajectory cut short keeps the progress it made.

verl is not a dependency: the classes subclass verl's ``BaseInteraction`` / ``BaseTool`` when verl is importable
and stand alone otherwise (the tests drive them exactly as ``ToolAgentLoop`` does, without verl). Interaction and
tools share episodes through a process-local table: verl's agent-loop worker runs both in one process.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import uuid4

from envs.checker import check
from envs.executor import Environment, to_call_string
from envs.rewards import REWARDS
from envs.task import Task
from rods_agents.run.outputs import task_from_row

DATA_SOURCE_PREFIX = "rods/bfcl_multi_turn_"

try:  # verl's base classes when verl is installed; the same interface otherwise
    from verl.interactions.base import BaseInteraction as _InteractionBase  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - exercised where verl is absent (this project's CI)
    class _InteractionBase:  # type: ignore[no-redef]
        def __init__(self, config: dict[str, Any]):
            self.config = config
            self.name: str = config.get("name", "interaction_agent")

try:
    from verl.tools.base_tool import BaseTool as _ToolBase  # type: ignore[import-not-found]
    from verl.tools.schemas import ToolResponse  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover
    class _ToolBase:  # type: ignore[no-redef]
        def __init__(self, config: dict, tool_schema: Any):
            self.config = config
            self.tool_schema = tool_schema
            function = tool_schema["function"] if isinstance(tool_schema, dict) else tool_schema.function
            self.name = function["name"] if isinstance(function, dict) else function.name

    @dataclass
    class ToolResponse:  # type: ignore[no-redef]
        text: str | None = None


@dataclass
class Episode:
    """One trajectory's BFCL episode: its environment, the turn it is in, and its calls grouped as BFCL decodes them
    (turns -> steps -> call strings; one step per assistant message)."""

    task: Task
    env: Environment
    turn: int = 0
    decoded: list[list[list[str]]] = field(default_factory=lambda: [[]])
    step_key: Any = None
    reported: float = 0.0

    def progress(self) -> float:
        padded = self.decoded + [[] for _ in range(len(self.task.turns) - len(self.decoded))]
        return REWARDS["progress"](check(self.task, padded))


_EPISODES: dict[str, Episode] = {}
_LOCK = threading.Lock()
_DATASETS: dict[str, dict[str, Task]] = {}


def _tasks(dataset: str) -> dict[str, Task]:
    """Every task of an export folder, by id (loaded once per process)."""
    with _LOCK:
        if dataset not in _DATASETS:
            import datasets

            rows = datasets.load_from_disk(str(Path(dataset)))
            _DATASETS[dataset] = {r["id"]: task_from_row(r) for r in rows}
        return _DATASETS[dataset]


def _user_text(task: Task, turn: int) -> str:
    return "\n".join(str(m.get("content") or "") for m in task.user_messages(turn))


class BFCLInteraction(_InteractionBase):
    """verl interaction ``rods_bfcl``: BFCL's user turns, one after each model turn that calls no tool.

    Config (``verl_interaction_config.yaml``): ``dataset``, the export folder the rows come from."""

    def __init__(self, config: dict[str, Any]):
        super().__init__(config)
        if not config.get("dataset"):
            raise ValueError("rods_bfcl interaction: config.dataset must name the `rods export --format verl` folder")
        self.dataset = str(config["dataset"])

    async def start_interaction(self, instance_id: str | None = None, task_id: str | None = None,
                                **kwargs: Any) -> str:
        tasks = _tasks(self.dataset)
        if task_id not in tasks:
            raise KeyError(f"rods_bfcl: task {task_id!r} is not in {self.dataset}")
        task = tasks[task_id]
        instance_id = instance_id or str(uuid4())
        with _LOCK:
            _EPISODES[instance_id] = Episode(task, Environment(task.involved_classes, task.initial_config,
                                                               task.long_context))
        return instance_id

    async def generate_response(self, instance_id: str, messages: list[dict[str, Any]],
                                **kwargs: Any) -> tuple[bool, str, float, dict[str, Any]]:
        """The model ended a turn: the next user turn (not done), or the end of the episode. The score is the
        progress reward gained since the last call (their sum is the episode's progress reward)."""
        episode = _EPISODES[instance_id]
        episode.turn += 1
        gained = episode.progress() - episode.reported
        episode.reported += gained
        if episode.turn >= len(episode.task.turns):
            return True, "", gained, {"progress": episode.reported, "turns": episode.turn}
        episode.decoded.append([])
        episode.step_key = None
        return False, _user_text(episode.task, episode.turn), gained, {"turn": episode.turn}

    async def calculate_score(self, instance_id: str, **kwargs: Any) -> float:
        return _EPISODES[instance_id].progress()

    async def finalize_interaction(self, instance_id: str, **kwargs: Any) -> None:
        with _LOCK:
            _EPISODES.pop(instance_id, None)


class BFCLTool(_ToolBase):
    """verl tool for one BFCL function: runs the call in the trajectory's environment (:class:`BFCLInteraction`)."""

    async def create(self, instance_id: str | None = None, **kwargs: Any) -> tuple[str, Any]:
        return instance_id or str(uuid4()), ToolResponse()

    async def execute(self, instance_id: str, parameters: dict[str, Any],
                      **kwargs: Any) -> tuple[Any, float, dict[str, Any]]:
        agent_data = kwargs.get("agent_data")
        key = getattr(agent_data, "request_id", None)
        episode = _EPISODES.get(key) if key is not None else None
        if episode is None:
            raise RuntimeError(f"{self.name}: no BFCL episode for this trajectory; configure the rods_bfcl "
                               "interaction (verl_interaction_config.yaml) alongside verl_tool_config.yaml")
        if not isinstance(parameters, dict):
            return ToolResponse(text=f"Error during execution: arguments must be an object, got {parameters!r}"), 0.0, {}
        call = to_call_string(self.name, parameters)
        step = getattr(agent_data, "assistant_turns", None)
        with _LOCK:  # parallel calls of one message run concurrently: keep their order and their step together
            if step is None or step != episode.step_key or not episode.decoded[-1]:
                episode.decoded[-1].append([])
                episode.step_key = step
            episode.decoded[-1][-1].append(call)
            result = episode.env.execute(call)
        return ToolResponse(text=result), 0.0, {}

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        return 0.0

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        return None


def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: dict | None = None,
                  **kwargs: Any) -> float:
    """verl reward for ``rods/bfcl_multi_turn_*`` rows: the BFCL progress reward the interaction scored, turn by turn
    (``extra_info["turn_scores"]``, which verl's agent loop fills from :meth:`BFCLInteraction.generate_response`)."""
    if not str(data_source).startswith(DATA_SOURCE_PREFIX):
        raise NotImplementedError(f"compute_score scores {DATA_SOURCE_PREFIX}* rows, not {data_source!r}")
    scores = (extra_info or {}).get("turn_scores")
    if scores is None:
        raise ValueError("no turn_scores in extra_info: run with the rods_bfcl interaction "
                         "(actor_rollout_ref.rollout.multi_turn.interaction_config_path=verl_interaction_config.yaml)")
    return float(sum(float(s) for s in scores))
