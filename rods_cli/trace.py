"""`rods trace RUN [SAMPLE]`: step through a `rods synthesize` run's saved checkpoints, node by node.

``RUN`` is the run's ``--out`` folder (or its ``checkpoints.sqlite``). Without ``SAMPLE`` it lists
the samples (finished: accepted or the first rejection reason; in flight: the node it resumes at).
With ``SAMPLE`` (``<seed id>#v<n>``, or a seed id when it has one variant) it prints one line per
node run: which node, what it changed (a short summary per key); ``--step N`` prints that node's
whole update as JSON, ``--json`` every step as JSON lines.

A finished sample's node updates are stored with its result (``graphs.driver``: its checkpoints are
pruned unless the run had ``--keep_checkpoints``); a sample still in flight is read from its
LangGraph checkpoints (``get_state_history``).
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from envs.task import InputError


def _db_of(run: Path) -> Path:
    db = run / "checkpoints.sqlite" if run.is_dir() else run
    if not db.exists():
        raise InputError(f"{run}: no checkpoints.sqlite here (the --out folder of a rods synthesize run?)")
    return db


def _short(value: Any, width: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= width else text[: width - 3] + "..."


def _verdict(v: dict | None) -> str:
    if v is None:
        return "cleared"
    if v.get("accepted"):
        return "accepted"
    return f"rejected ({_short((v.get('reasons') or ['?'])[0], 70)})" + (" terminal" if v.get("terminal") else "")


def _changed(state: dict, key: str, value: Any) -> bool:
    if key in state:
        return state[key] != value
    return value not in (None, False, 0, [], {})


def summarize(update: dict, state: dict[str, Any]) -> list[str]:
    """One short phrase per key a node changed (``state``: the sample's state so far, updated in place)."""
    parts = []
    for key, value in (update or {}).items():
        if key != "results" and not _changed(state, key, value):
            state[key] = value
            continue
        previous = state.get(key)
        state[key] = value
        if key == "timings" and isinstance(value, dict):
            before = previous or {}
            grew = {s: t - before.get(s, 0.0) for s, t in value.items() if t != before.get(s)}
            parts.append("time " + ", ".join(f"{s} +{d:.3f}s" for s, d in grew.items()))
        elif key == "verdict":
            parts.append(f"verdict: {_verdict(value)}")
        elif key == "results" and isinstance(value, list):
            for r in value:
                parts.append(f"result: accepted {r['task']['id']}" if r.get("accepted") and r.get("task")
                             else f"result: rejected ({_short((r.get('reasons') or ['?'])[0], 70)})")
        elif key == "errors" and isinstance(value, list):
            parts.append(f"errors: {len(value)}" + (f" ({_short(value[0].get('kind') or value[0], 50)})" if value else ""))
        elif isinstance(value, list):
            parts.append(f"{key}: [{len(value)}]")
        elif isinstance(value, dict) and isinstance(previous, dict):
            changed = [k for k in value if previous.get(k) != value[k]] + [k for k in previous if k not in value]
            parts.append(f"{key}.{{{', '.join(changed[:4])}{', ...' if len(changed) > 4 else ''}}} changed")
        elif isinstance(value, dict):
            parts.append(f"{key}: {{{len(value)} keys}}")
        else:
            parts.append(f"{key}: {_short(value, 40)}")
    return parts


def _resolve(sample: str, known: list[str]) -> str:
    if sample in known:
        return sample
    variants = [k for k in known if k.split("#v")[0] == sample]
    if len(variants) == 1:
        return variants[0]
    if variants:
        raise InputError(f"{sample}: {len(variants)} variants in this run ({', '.join(variants[:4])}); name one")
    match = difflib.get_close_matches(sample, known, n=1, cutoff=0.6)
    raise InputError(f"{sample}: no such sample in this run" + (f"; did you mean {match[0]}?" if match else
                                                                " (rods trace RUN lists them)"))


def _published_ids(path: Path) -> set[str] | None:
    """Ids in the run's ``accepted.jsonl`` (after de-duplication), or None without one."""
    if not path.exists():
        return None
    return {json.loads(line)["id"] for line in path.read_text().splitlines() if line.strip()}


def load_steps(db: Path, sample: str | None) -> tuple[dict[str, dict], str | None, list[dict] | None, tuple]:
    """(samples -> status row, resolved sample, its steps, next nodes if in flight)."""
    from graphs.driver import SampleStore, node_steps
    from graphs.synthesis import build_sample_graph

    store = SampleStore(db)
    try:
        graph = build_sample_graph().compile(checkpointer=store.saver)
        published = _published_ids(db.parent / "accepted.jsonl")
        rows: dict[str, dict] = {}
        for sid in store.finished_ids():
            r = store.finished(sid) or {}
            task_id = r["task"]["id"] if r.get("accepted") and r.get("task") else None
            if task_id and published is not None and task_id not in published:
                rows[sid] = {"status": "rejected", "detail": f"near_duplicate_accepted (its variant {task_id} "
                             "duplicates one accepted earlier)"}
            else:
                rows[sid] = {"status": "accepted" if task_id else "rejected",
                             "detail": task_id or _short((r.get("reasons") or ["?"])[0], 70)}
        for sid in store.checkpointed_ids():
            if sid not in rows:
                nxt = graph.get_state({"configurable": {"thread_id": sid}}).next
                rows[sid] = {"status": "in flight", "detail": f"resumes at {', '.join(nxt) or '?'}"}
        if sample is None:
            return rows, None, None, ()
        sid = _resolve(sample, sorted(rows))
        config = {"configurable": {"thread_id": sid}}
        steps = store.steps(sid)
        nxt: tuple = ()
        if steps is None:
            steps = node_steps(graph, config)
            nxt = tuple(graph.get_state(config).next)
        return rows, sid, steps, nxt
    finally:
        store.close()


def trace_command(
    run: Annotated[Path, typer.Argument(help="The --out folder of a rods synthesize run (or its checkpoints.sqlite).")],
    sample: Annotated[str | None, typer.Argument(help="A sample id, e.g. 'multi_turn_base_98#v0' (quote the '#'); "
                                                 "omit to list the run's samples.")] = None,
    step: Annotated[int | None, typer.Option("--step", help="Print this step's whole update as JSON.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Every step as one JSON line.")] = False,
) -> None:
    """Step through a synthesis run's saved checkpoints: which node ran, what it changed."""
    from rods_cli.common import user_errors

    with user_errors():
        rows, sid, steps, nxt = load_steps(_db_of(run), sample)
        if steps is not None and step is not None and not 1 <= step <= len(steps):
            raise InputError(f"--step {step}: {sid} has steps 1..{len(steps)}")
    if sid is None:
        for name in sorted(rows):
            typer.echo(f"{name}\t{rows[name]['status']}\t{rows[name]['detail']}")
        typer.echo(f"{len(rows)} samples ({sum(r['status'] == 'accepted' for r in rows.values())} accepted, "
                   f"{sum(r['status'] == 'in flight' for r in rows.values())} in flight); "
                   f"rods trace {run} SAMPLE steps through one")
        return
    if as_json:
        for i, s in enumerate(steps, 1):
            typer.echo(json.dumps({"n": i, **s}, default=str))
        return
    if step is not None:
        typer.echo(json.dumps(steps[step - 1], indent=2, default=str))
        return
    typer.echo(f"{sid}: {rows[sid]['status']} ({rows[sid]['detail']}), {len(steps)} node runs")
    state: dict[str, Any] = {}
    for i, s in enumerate(steps, 1):
        typer.echo(f"{i:>3}  {s['node']:<16} " + "; ".join(summarize(s.get("update") or {}, state))
                   + (f"  ERROR {s['error']}" if s.get("error") else ""))
    if nxt:
        typer.echo(f"     in flight: resumes at {', '.join(nxt)} (rods synthesize ... --resume)")
    typer.echo(f"rods trace {run} '{sid}' --step N prints one step's whole update")


__all__ = ["load_steps", "summarize", "trace_command"]
