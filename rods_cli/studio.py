"""`rods studio`: serve the synthesis graph's API for LangGraph Studio, on loopback.

Runs ``langgraph dev --no-browser --host 127.0.0.1`` with ``--config`` pointing at the package's
``langgraph.json`` and analytics, the version check and LangSmith tracing switched off (otherwise
the CLI reaches the internet at start). The API server itself is local and offline; the Studio UI
is a hosted web page (smith.langchain.com) that the user's *browser* must reach, pointed at this
server's URL. Without it, ``langgraph-sdk`` drives the same API and every step's state stays in
the server's checkpoints. The server keeps its state in ``.langgraph_api/`` of the directory
``rods studio`` is started from (the user's working directory, not the installed package).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer

ROOT = Path(__file__).resolve().parent.parent
OFFLINE_ENV = {"LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "true", "LANGSMITH_TRACING": "false",
               "LANGCHAIN_TRACING_V2": "false"}


GRAPHS = {"synthesis": "graphs.synthesis:graph"}


def studio_config(workdir: Path) -> Path:
    """The ``langgraph.json`` to serve: the checkout's, or (after a wheel install, which has no
    checkout) the same graphs written to ``.langgraph_api/langgraph.json`` of ``workdir``."""
    if (ROOT / "langgraph.json").is_file():
        return ROOT / "langgraph.json"
    path = workdir / ".langgraph_api" / "langgraph.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"dependencies": [], "graphs": GRAPHS, "env": {}}, indent=2))
    return path


def studio_command(port: int = 2024, host: str = "127.0.0.1",
                   workdir: Path | None = None) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that serve the graph offline."""
    exe = shutil.which("langgraph", path=str(Path(sys.executable).parent)) or shutil.which("langgraph") or "langgraph"
    cmd = [exe, "dev", "--no-browser", "--no-reload", "--host", host, "--port", str(port),
           "--config", str(studio_config(workdir or Path.cwd()))]
    pythonpath = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return cmd, {**os.environ, **OFFLINE_ENV, "PYTHONPATH": pythonpath}


def start_studio(port: int = 2024, host: str = "127.0.0.1", log_path: Path | None = None,
                 workdir: Path | None = None) -> subprocess.Popen:
    """Start the dev server in the background (the caller stops it by its PID).

    ``workdir`` is the server's working directory, where it writes ``.langgraph_api/`` (default: the
    current directory); the graph always comes from the package's ``langgraph.json`` (``--config``)."""
    cmd, env = studio_command(port, host, workdir)
    out = open(log_path, "w") if log_path else subprocess.DEVNULL  # noqa: SIM115 - owned by the child
    return subprocess.Popen(cmd, cwd=workdir or Path.cwd(), env=env, stdout=out, stderr=subprocess.STDOUT)


def studio(
    port: Annotated[int, typer.Option("--port", help="Loopback port (langgraph dev moves on if it is taken).")] = 2024,
    host: Annotated[str, typer.Option("--host", help="Interface to bind; keep it on loopback.")] = "127.0.0.1",
) -> None:
    """Serve the synthesis graph's API for LangGraph Studio on loopback (state in ./.langgraph_api/).

    The API server runs offline; the Studio UI is a hosted page your browser must reach. Without it,
    drive the same API with langgraph-sdk."""
    cmd, env = studio_command(port, host)
    typer.echo(f"serving graphs.synthesis:graph on http://{host}:{port} (Ctrl-C to stop); state in "
               f"{Path.cwd() / '.langgraph_api'}", err=True)
    typer.echo(f"Studio UI (a hosted page your browser must reach): "
               f"https://smith.langchain.com/studio/?baseUrl=http://{host}:{port}", err=True)
    raise typer.Exit(subprocess.call(cmd, cwd=Path.cwd(), env=env))
