"""Run outputs: ``accepted.jsonl`` (BFCL entries + provenance), ``rejected.jsonl``, ``report.json``; and the typed
Hugging Face dataset built from them (:func:`to_dataset`, :func:`load_dataset`, :func:`export`).

All writes are atomic (temp file + rename), so a killed run never leaves a half-written file.

The dataset is what a TRL or verl user trains on without rebuilding anything (one row per task):

* ``prompt``: the messages an episode starts with, exactly as ``envs.runner.run_episode`` (evaluation and the GRPO
  rollouts) sends them: the optional system prompt, then the first user turn. BFCL's FC protocol has no tool-use
  system text of its own; the tool instructions come from the chat template given ``tools`` (TRL's
  ``apply_chat_template(..., tools=row["tools"])`` renders the same first prompt as the rollout).
* ``tools``: the OpenAI function schemas offered at turn 0 (TRL's SFT reads this column); ``revealed_tools``: the ones a
  later turn adds (miss_func reveals), so each schema is stored once per task; ``user_turns[t]``: the user messages of turn ``t`` as the runner
  sends them (BFCL's fixed message on a reveal turn), ``question``: BFCL's own field (a reveal turn is empty);
  ``ground_truth[t]``: the call strings of turn ``t``.
* ``id``, ``category``, ``scenario``, ``involved_classes``, ``initial_config``, ``missed_function``: enough to rebuild
  the :class:`~envs.task.Task` (:func:`task_from_row`) and score an episode with ``envs.checker.check``.
* provenance: ``seed_id`` (typed) and the full ``provenance`` record.
* optional ``completion`` (``rods export --completion oracle``): the rest of the conversation when the ground truth
  plays it, so ``prompt`` + ``completion`` + ``tools`` is an SFT example as TRL's ``SFTTrainer`` takes it.

Typed nested features throughout; two columns are ``datasets.Json`` (stored as Arrow JSON, decoded to Python
objects), because their schema is heterogeneous: ``initial_config`` maps each involved class to that class's own state
(a recursive file tree, a portfolio, a vehicle...), so one Arrow struct would be the union of every class's fields
with nulls everywhere and could not hold the recursive trees; ``provenance`` records differ per backbone and per
stage. A tool's ``parameters`` is a JSON schema (its ``properties`` keys are the function's argument names) and is
``Json`` for the same reason, as is its ``response`` (the return schema BFCL's tools carry).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from envs.task import Task, atomic_write_text, new_file_mode, write_tasks

ExportFormat = Literal["trl", "verl", "bfcl"]
FORMATS: tuple[str, ...] = ("trl", "verl", "bfcl")
TOOLS_IN_SYSTEM: tuple[str, ...] = ("none", "hermes")

# The Hermes tool block of the Qwen2.5/Qwen3 chat templates (TRL's qwen3_instruct_2507.jinja, the tiny model's and the
# GPU recipe's template), byte for byte: a system message holding it renders, without ``tools=``, the same text as
# the template renders with ``tools=`` (tests/test_export.py checks it on the tiny model's tokenizer).
HERMES_TOOLS_HEAD = ("# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided "
                     "with function signatures within <tools></tools> XML tags:\n<tools>")
HERMES_TOOLS_TAIL = ("\n</tools>\n\nFor each function call, return a json object with function name and arguments "
                     "within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, "
                     "\"arguments\": <args-json-object>}\n</tool_call>")


def hermes_system(tools: list[dict], system_prompt: str | None = None) -> str:
    """The system message text a Qwen/Hermes template writes for ``tools`` (after ``system_prompt``, if any)."""
    block = HERMES_TOOLS_HEAD + "".join("\n" + json.dumps(t, ensure_ascii=False) for t in tools) + HERMES_TOOLS_TAIL
    return f"{system_prompt}\n\n{block}" if system_prompt else block


def write_outputs(out_dir: str | Path, accepted: list[Task], rejected: list[dict], report: dict) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_tasks(out / "accepted.jsonl", accepted)
    atomic_write_text(out / "rejected.jsonl", "".join(json.dumps(r, default=str) + "\n" for r in rejected))
    atomic_write_text(out / "report.json", json.dumps(report, indent=2, default=str) + "\n")


# ---------------------------------------------------------------------------------------------------- features
def features(fmt: ExportFormat = "trl", completion: bool = False, training: bool = False) -> Any:
    """The ``datasets.Features`` of an export (``trl``: the base columns; ``verl`` adds verl's own columns;
    ``completion``: the oracle continuation of the prompt, :func:`oracle_completions`; ``training``: where a task of
    a ``rods train`` run came from and its reward at each evaluation, :class:`TrainingInfo`)."""
    from datasets import Features, Json, List, Value

    message = {"role": Value("string"), "content": Value("string")}
    tool = {"type": Value("string"),
            "function": {"name": Value("string"), "description": Value("string"), "parameters": Json(),
                         "response": Json()}}  # BFCL's tools carry the return schema too
    base = {
        "id": Value("string"),
        "prompt": List(message),
        "tools": List(tool),
        "revealed_tools": List({"turn": Value("int32"), "tools": List(tool)}),
        "user_turns": List(List(message)),
        "question": List(List(message)),
        "ground_truth": List(List(Value("string"))),
        "scored_turns": List(Value("int32")),
        "category": Value("string"),
        "scenario": Value("int32"),
        "involved_classes": List(Value("string")),
        "missed_function": List({"turn": Value("int32"), "functions": List(Value("string"))}),
        "initial_config": Json(),
        "seed_id": Value("string"),
        "provenance": Json(),
    }
    if completion:
        call = {"id": Value("string"), "type": Value("string"),
                "function": {"name": Value("string"), "arguments": Json()}}
        base["completion"] = List({"role": Value("string"), "content": Value("string"), "tool_calls": List(call),
                                   "tool_call_id": Value("string")})
    if training:
        base.update({
            "rods_origin": Value("string"),
            "injected_epoch": Value("int32"),
            "in_final_pool": Value("bool"),
            "reward_history": List({"epoch": Value("int32"), "step": Value("int64"), "rollouts": Value("int32"),
                                    "mean_reward": Value("float64"), "reward_std": Value("float64")}),
        })
    if fmt == "verl":
        base.update({
            "data_source": Value("string"),
            "ability": Value("string"),
            "agent_name": Value("string"),
            "reward_model": {"style": Value("string"), "ground_truth": List(List(Value("string")))},
            "extra_info": {"index": Value("int64"), "task_id": Value("string"), "category": Value("string"),
                           "interaction_kwargs": {"name": Value("string"), "task_id": Value("string")}},
        })
    return Features(base)


def task_row(task: Task, system_prompt: str | None = None, tools_in_system: str = "none") -> dict[str, Any]:
    """One task as a row of the ``trl`` export (module docstring).

    ``tools_in_system="hermes"`` writes turn 0's tool block into the system message (:func:`hermes_system`): TRL
    1.16's ``GRPOTrainer`` renders every prompt with one trainer-wide ``tools`` list and ignores a per-row one.
    """
    from envs.tools import tools_for_turn

    if tools_in_system not in TOOLS_IN_SYSTEM:
        raise ValueError(f"tools_in_system must be one of {list(TOOLS_IN_SYSTEM)}, got {tools_in_system!r}")
    first = tools_for_turn(task, 0)
    system = hermes_system(first, system_prompt) if tools_in_system == "hermes" else system_prompt
    prompt = ([{"role": "system", "content": system}] if system else []) + task.user_messages(0)
    return {
        "id": task.id,
        "prompt": [_message(m) for m in prompt],
        "tools": first,
        "revealed_tools": revealed_tools(task),
        "user_turns": [[_message(m) for m in task.user_messages(t)] for t in range(len(task.turns))],
        "question": [[_message(m.model_dump()) for m in turn] for turn in task.turns],
        "ground_truth": task.ground_truth,
        "scored_turns": task.scored_turns,
        "category": task.category,
        "scenario": task.scenario,
        "involved_classes": task.involved_classes,
        "missed_function": [{"turn": t, "functions": fs} for t, fs in sorted(task.missed_function.items())],
        "initial_config": task.initial_config,
        "seed_id": str((task.provenance or {}).get("seed_id") or ""),
        "provenance": task.provenance,
    }


def revealed_tools(task: Task) -> list[dict[str, Any]]:
    """The tools each later turn adds to turn 0's (a miss_func reveal), as ``[{turn, tools}]``.

    Why not the full list per turn: the schemas are most of an export's bytes (a 33-task export was 3.1 MB, three
    quarters of it the per-turn copies); ``tools_for_row(row, t)`` rebuilds turn ``t``'s list."""
    from envs.tools import tools_for_turn

    seen = {_tool_name(t) for t in tools_for_turn(task, 0)}
    out = []
    for turn in range(1, len(task.turns)):
        new = [t for t in tools_for_turn(task, turn) if _tool_name(t) not in seen]
        if new:
            out.append({"turn": turn, "tools": new})
            seen |= {_tool_name(t) for t in new}
    return out


def tools_for_row(row: dict[str, Any], turn: int) -> list[dict[str, Any]]:
    """The tools offered at ``turn`` of an exported row (``tools`` plus every reveal up to ``turn``)."""
    tools = list(row["tools"])
    for reveal in row.get("revealed_tools") or []:
        if reveal["turn"] <= turn:
            tools += reveal["tools"]
    return tools


def _tool_name(tool: dict) -> str:
    return tool["function"]["name"]


def _message(m: dict) -> dict[str, str]:
    return {"role": str(m["role"]), "content": str(m.get("content") or "")}


def task_from_row(row: dict[str, Any]) -> Task:
    """The :class:`~envs.task.Task` a row was made from (what ``envs.checker.check`` scores against)."""
    missed = {int(m["turn"]): list(m["functions"]) for m in row.get("missed_function") or []}
    turns = [list(msgs) for msgs in row["question"]]
    return Task(id=row["id"], category=row["category"], scenario=row["scenario"], turns=turns,
                initial_config=row.get("initial_config") or {}, involved_classes=list(row["involved_classes"]),
                missed_function=missed, ground_truth=[list(t) for t in row["ground_truth"]],
                provenance=row.get("provenance"))


def oracle_completions(tasks: list[Task], system_prompt: str | None = None) -> list[list[dict[str, Any]]]:
    """For each task, the messages after ``prompt`` when the ground truth plays the episode (``envs.runner`` with the
    oracle policy): assistant tool calls, their ``tool`` results, the closing replies and the later user turns.

    ``prompt + completion`` is then a whole conversational example for TRL's ``SFTTrainer`` (prompt-completion
    format, loss on the completion); tool-call arguments are objects, as chat templates want them. A chat template
    renders one tool list per conversation, ``tools`` (turn 0's): on a miss_func task the functions revealed later
    are called without being listed there (``revealed_tools`` has them).
    """
    import asyncio
    import concurrent.futures

    from envs.policies import OraclePolicy
    from envs.runner import run_episode

    async def play() -> list[Any]:
        policy = OraclePolicy()
        return list(await asyncio.gather(*(run_episode(t, policy, system_prompt=system_prompt) for t in tasks)))

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        episodes = asyncio.run(play())
    else:  # called from a running loop (Jupyter): run ours on a worker thread
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            episodes = pool.submit(asyncio.run, play()).result()
    out = []
    for task, episode in zip(tasks, episodes, strict=True):
        if episode.error:
            raise ValueError(f"{task.id}: the ground truth does not play through ({episode.error})")
        start = (1 if system_prompt else 0) + len(task.user_messages(0))
        out.append([_full_message(m) for m in episode.messages[start:]])
    return out


def _full_message(m: dict[str, Any]) -> dict[str, Any]:
    calls = [{"id": c["id"], "type": c.get("type", "function"),
              "function": {"name": c["function"]["name"], "arguments": _arguments(c["function"]["arguments"])}}
             for c in m.get("tool_calls") or []]
    return {"role": m["role"], "content": m.get("content") or "", "tool_calls": calls,
            "tool_call_id": m.get("tool_call_id")}


def _arguments(args: Any) -> Any:
    if isinstance(args, str):
        try:
            return json.loads(args)
        except ValueError:
            return args
    return args


def first_turn_reward(completions: list[Any], **columns: Any) -> list[float]:
    """A TRL reward function for a single-turn GRPO run on the ``trl`` export: 1.0 when the completion's Hermes
    ``<tool_call>`` blocks pass BFCL's check of turn 0 (state and results), else 0.0.

    TRL calls it with the completions and every dataset column as a list; the columns rebuild each task
    (:func:`task_from_row`). Whole multi-turn episodes: ``trainer.integrations.trl`` (``BFCLEpisode``, ``bfcl_rollout_func``).
    """
    from envs.checker import check
    from envs.policies import parse_hermes
    from envs.runner import decode

    rewards = []
    for i, completion in enumerate(completions):
        row = {k: v[i] for k, v in columns.items() if isinstance(v, list) and len(v) == len(completions)}
        text = completion[-1]["content"] if isinstance(completion, list) else str(completion)
        calls = decode(parse_hermes(text or "").tool_calls)
        if not calls:
            rewards.append(0.0)
            continue
        score = check(task_from_row(row), [[calls]])
        rewards.append(1.0 if score.turns and score.turns[0].passed else 0.0)
    return rewards


def _verl_row(row: dict[str, Any], index: int) -> dict[str, Any]:
    return {**row, "data_source": f"rods/bfcl_multi_turn_{row['category']}", "ability": "multi_turn_tool_use",
            "agent_name": "tool_agent",
            "reward_model": {"style": "rule", "ground_truth": row["ground_truth"]},
            "extra_info": {"index": index, "task_id": row["id"], "category": row["category"],
                           "interaction_kwargs": {"name": "rods_bfcl", "task_id": row["id"]}}}


class TrainingInfo(BaseModel):
    """What a ``rods train`` run knows about one task of its pool (``rods export RUN`` on a training folder).

    ``reward_history``: one entry per evaluation (an epoch in which the task was rolled out): the rollouts' count, mean
    and spread of the checker's reward; the detector labels a task easy, hard or on the boundary from it."""

    origin: Literal["seed", "injected"]
    injected_epoch: int | None = None
    in_final_pool: bool = True
    reward_history: list[dict[str, Any]] = Field(default_factory=list)


def to_dataset(tasks: Iterable[Task], fmt: ExportFormat = "trl", system_prompt: str | None = None,
               completion: bool = False, tools_in_system: str = "none",
               training: dict[str, TrainingInfo] | None = None) -> Any:
    """Tasks as a typed ``datasets.Dataset`` (``trl`` or ``verl`` columns; module docstring); ``completion`` adds the
    oracle continuation of each prompt (:func:`oracle_completions`), for SFT; ``training`` (task id -> its
    :class:`TrainingInfo`) adds ``rods_origin``, ``injected_epoch``, ``in_final_pool`` and ``reward_history``."""
    import datasets

    if fmt not in ("trl", "verl"):
        raise ValueError(f"to_dataset: format {fmt!r} is not a datasets format (use export() for bfcl)")
    tasks = list(tasks)
    rows = [task_row(t, system_prompt, tools_in_system) for t in tasks]
    if completion:
        for row, messages in zip(rows, oracle_completions(tasks, system_prompt), strict=True):
            row["completion"] = messages
    if training is not None:
        for row in rows:
            info = training[row["id"]]
            row.update(rods_origin=info.origin, injected_epoch=info.injected_epoch, in_final_pool=info.in_final_pool,
                       reward_history=info.reward_history)
    if fmt == "verl":
        rows = [_verl_row(r, i) for i, r in enumerate(rows)]
    feats = features(fmt, completion, training is not None)
    if not rows:
        return datasets.Dataset.from_dict({k: [] for k in feats}, features=feats)
    return datasets.Dataset.from_list(rows, features=feats)


def load_dataset(path: str | Path, system_prompt: str | None = None) -> Any:
    """``accepted.jsonl`` (or a run folder, or any task JSONL) as the typed dataset of :func:`to_dataset`."""
    path = Path(path)
    if path.is_dir():
        path = path / "accepted.jsonl"
    return to_dataset(_read(path), "trl", system_prompt)


def _read(path: Path) -> list[Task]:
    from envs.task import read_tasks

    return read_tasks(path)


# ---------------------------------------------------------------------------------------------------- export
def bfcl_files(tasks: Iterable[Task]) -> dict[str, list[dict]]:
    """BFCL's own files for ``tasks``: ``BFCL_v4_multi_turn_<category>.json`` (prompt entries) and
    ``possible_answer/BFCL_v4_multi_turn_<category>.json`` (ground truth), plus ``id_map.json``.

    bfcl-eval derives an entry's category and sort order from its id (``multi_turn_<category>_<n>``), so entries are
    renumbered per category in input order; ``id_map.json`` (and each entry's ``rods_id``) keeps the RODS id.
    """
    files: dict[str, list[dict]] = {}
    id_map: dict[str, str] = {}
    counters: dict[str, int] = {}
    for task in tasks:
        n = counters.get(task.category, 0)
        counters[task.category] = n + 1
        bfcl_id = f"multi_turn_{task.category}_{n}"
        id_map[bfcl_id] = task.id
        entry = task.to_bfcl()
        answer = {"id": bfcl_id, "ground_truth": entry.pop("ground_truth")}
        entry.pop("provenance", None)
        entry.pop("category", None)
        entry.pop("scenario", None)
        entry = {"id": bfcl_id, **{k: v for k, v in entry.items() if k != "id"}, "rods_id": task.id}
        name = f"BFCL_v4_multi_turn_{task.category}.json"
        files.setdefault(name, []).append(entry)
        files.setdefault(f"possible_answer/{name}", []).append(answer)
    files["id_map.json"] = [id_map]
    return files


def _write_dataset(ds: Any, folder: Path, fmt: str, parquet: bool, jsonl: bool) -> list[str]:
    import datasets

    quiet = datasets.is_progress_bar_enabled()
    if quiet:
        datasets.disable_progress_bars()  # three bars per export on a CLI that prints one line
    try:
        ds.save_to_disk(str(folder))
        files = ["dataset_info.json"]
        if parquet or fmt == "verl":
            name = "train.parquet" if fmt == "verl" else "data.parquet"
            ds.to_parquet(str(folder / name))
            files.append(name)
        if jsonl:
            ds.to_json(str(folder / "data.jsonl"), lines=True)
            files.append("data.jsonl")
        return files
    finally:
        if quiet:
            datasets.enable_progress_bars()


VERL_INTERACTION = "rods_bfcl"
VERL_INTERACTION_CLASS = "trainer.integrations.verl.BFCLInteraction"
VERL_TOOL_CLASS = "trainer.integrations.verl.BFCLTool"
VERL_FILES = ("verl_interaction_config.yaml", "verl_tool_config.yaml")


def verl_configs(tasks: list[Task], out_dir: Path) -> dict[str, Any]:
    """verl's ``interaction_config_path`` and ``tool_config_path`` files for an export in ``out_dir``.

    The rows name the interaction ``rods_bfcl`` (``extra_info.interaction_kwargs``); it rebuilds each task from this
    export (``dataset``) and plays BFCL's user turns; one ``BFCLTool`` per function any task offers executes calls in
    the episode's own environment (``trainer/integrations/verl.py``). verl renders one tool list for every prompt,
    so a task's prompt lists every function of the export; calling one its classes lack returns BFCL's error."""
    from envs.tools import tools_for_turn

    schemas: dict[str, dict] = {}
    for task in tasks:
        for turn in range(len(task.turns)):
            for tool in tools_for_turn(task, turn):
                fn = tool["function"]
                schemas.setdefault(fn["name"], {"type": "function", "function": {
                    "name": fn["name"], "description": fn.get("description") or "", "parameters": fn["parameters"]}})
    return {
        "verl_interaction_config.yaml": {"interaction": [{"name": VERL_INTERACTION, "class_name": VERL_INTERACTION_CLASS,
                                                          "config": {"dataset": str(out_dir.resolve())}}]},
        "verl_tool_config.yaml": {"tools": [{"class_name": VERL_TOOL_CLASS, "config": {"type": "native"},
                                             "tool_schema": schema} for _, schema in sorted(schemas.items())]},
    }


def dataset_card(tasks: list[Task], fmt: str, summary: dict[str, Any], source: str | None = None) -> str:
    """A Hugging Face dataset card (``README.md``: YAML front matter, then what the rows are and how to train on
    them), so an export pushed to the Hub or handed to a colleague explains itself."""
    from collections import Counter

    by_cat = Counter(t.category for t in tasks)
    variants = sum(1 for t in tasks if (t.provenance or {}).get("seed_id"))
    n = len(tasks)
    size = "n<1K" if n < 1000 else "1K<n<10K" if n < 10_000 else "10K<n<100K"
    rows = "\n".join(f"| {c} | {k} |" for c, k in sorted(by_cat.items()))
    train = {
        "trl": ("SFT (`--completion oracle`): `SFTTrainer(..., args=SFTConfig(assistant_only_loss=True, "
                "max_length=None))`, which supervises the assistant's tool calls and replies only, never the tool "
                "results or the user turns. GRPO on whole episodes: `trainer.integrations.trl.rods_rollout_func` "
                "with your own `GRPOTrainer`."),
        "verl": ("verl: `data.train_files=train.parquet`, `actor_rollout_ref.rollout.multi_turn.interaction_config_path"
                 "=verl_interaction_config.yaml`, `...multi_turn.tool_config_path=verl_tool_config.yaml`, "
                 "`custom_reward_function.path=<rods>/trainer/integrations/verl.py` "
                 "`custom_reward_function.name=compute_score`."),
        "bfcl": "bfcl-eval: the prompt files and `possible_answer/` as BFCL's own data; `id_map.json` maps ids back.",
    }[fmt]
    load = ("```python\nfrom datasets import load_from_disk\nds = load_from_disk(\"<this folder>\")\n```"
            if fmt != "bfcl" else "JSON Lines files, one BFCL entry per line.")
    training = ""
    if summary.get("training"):
        training = ("\n## From a training run\n\nEvery task of the run's final pool and every variant it injected. "
                    "`rods_origin` (seed / injected), `injected_epoch`, `in_final_pool`, and `reward_history`: per "
                    "evaluation (epoch), the rollouts, mean and spread of the checker's reward (the difficulty the "
                    "detector saw).\n")
    return f"""---
license: apache-2.0
pretty_name: RODS export ({fmt})
task_categories:
- text-generation
tags:
- tool-use
- function-calling
- multi-turn
- bfcl
- rods
size_categories:
- {size}
---

# RODS export: BFCL v3 multi-turn tasks ({fmt})

{n} tasks ({variants} synthesized variant{"" if variants == 1 else "s"}, {n - variants} BFCL tasks){f", from `{source}`" if source else ""}, written by
`rods export --format {fmt}`. Each row is one multi-turn task: the first prompt, the tools (OpenAI format, stored
once per task; `revealed_tools` holds what a miss_func turn adds), the user turns, the ground-truth calls per turn
and the initial state of each involved class. Scoring executes calls and compares states and results with BFCL's
multi-turn checker (`envs.checker.check`, rebuilt from a row by `rods_agents.run.outputs.task_from_row`); text is
never compared.

| category | rows |
|---|---|
{rows}

## Load

{load}

## Train

{train}
{training}
## Source and license

Tasks and ground truth come from the Berkeley Function Calling Leaderboard v3 multi-turn set (Apache-2.0);
synthesized variants (ids `<seed>__rods_<hash>`) were written by RODS from a seed task and carry their `provenance`.
Settings of this export: `rods_export.json`.
"""


def export(tasks: list[Task], out_dir: str | Path, fmt: ExportFormat = "trl", *, system_prompt: str | None = None,
           completion: bool = False, tools_in_system: str = "none", parquet: bool = False, jsonl: bool = False,
           overwrite: bool = False, training: dict[str, TrainingInfo] | None = None,
           source: str | None = None) -> dict[str, Any]:
    """Write ``tasks`` to ``out_dir`` in ``fmt``; returns a summary (rows, files). Atomic: a temp folder renamed.

    ``trl``/``verl``: ``datasets.Dataset.save_to_disk`` (load with ``datasets.load_from_disk``), plus
    ``data.parquet``/``data.jsonl`` on request (verl always gets ``train.parquet``, what its trainer config names,
    and the interaction and tool configs its rows name, :func:`verl_configs`). ``bfcl``: the JSONL files bfcl-eval
    reads (:func:`bfcl_files`). Every format gets a dataset card, ``README.md`` (:func:`dataset_card`).
    ``training``: the columns of a training run's export (:class:`TrainingInfo`), in trl and verl.
    """
    import yaml

    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; choose from {list(FORMATS)}")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out} is a file, not a folder (choose another --out)")
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise FileExistsError(f"{out} is not empty (pass --overwrite to replace it)")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        files: list[str] = []
        if fmt == "bfcl":
            for name, rows in bfcl_files(tasks).items():
                text = json.dumps(rows[0], indent=1) + "\n" if name == "id_map.json" else \
                    "".join(json.dumps(r) + "\n" for r in rows)
                atomic_write_text(tmp / name, text)
                files.append(name)
        else:
            ds = to_dataset(tasks, fmt, system_prompt, completion, tools_in_system, training)
            files += _write_dataset(ds, tmp, fmt, parquet, jsonl)
            if fmt == "verl":
                for name, config in verl_configs(tasks, out).items():
                    atomic_write_text(tmp / name, yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
                    files.append(name)
        summary = {"format": fmt, "rows": len(tasks), "system_prompt": system_prompt, "completion": completion,
                   "tools_in_system": tools_in_system, "training": training is not None, "source": source}
        atomic_write_text(tmp / "README.md", dataset_card(tasks, fmt, summary, source))
        files.append("README.md")
        (tmp / "rods_export.json").write_text(json.dumps({**summary, "files": files}, indent=1) + "\n")
        tmp.chmod(new_file_mode(0o777))  # mkdtemp makes it 0700
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {"format": fmt, "rows": len(tasks), "out": str(out), "files": files}
