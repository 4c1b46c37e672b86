"""`rods studio`: serve the synthesis graph's API for LangGraph Studio, on loopback.

Runs ``langgraph dev --no-browser --host 127.0.0.1`` with ``--config`` pointing at the package's
``langgraph.json`` and analytics, the version check and LangSmith tracing switched off (otherwise
the CLI reaches the internet at start). The API server itself is local and offline; the Studio UI
is a hosted web page (smith.langchain.com) that the user's *browser* must reach, pointed at this
server's URL. Without it, ``langgraph-sdk`` drives the same API and every step's state stays in
the server's checkpoints. The server keeps its state in ``.langgraph_api/`` of the directory
``rods studio`` is started from (the user's working directory, not the installed package).

The port: ``langgraph dev`` silently moves to a random port when its ``--port`` is taken, so ``rods studio`` picks
the first free port from ``--port`` on itself, prints the one it serves on, and still watches the server's output for
the URL it bound (a race can take the port in between) and prints that. The server is a child process that ends with
``rods studio``: Ctrl-C, ``kill`` (SIGTERM/SIGHUP are passed on) and, on Linux, even ``kill -9`` (the child asks the
kernel for SIGTERM when its parent dies, ``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
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
    return subprocess.Popen(cmd, cwd=workdir or Path.cwd(), env=env, stdout=out, stderr=subprocess.STDOUT,
                            preexec_fn=_die_with_parent)  # the server ends with its parent


API_URL = re.compile(r"API:\s*(?:\x1b\[[0-9;]*m)*http://([\w.\-\[\]:]+?):(\d+)")


def free_port(host: str, port: int, span: int = 100) -> int:
    """The first port from ``port`` on that ``host`` can bind (``port`` itself when free)."""
    for candidate in range(port, min(port + span, 65536)):
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
            try:
                sock.bind((host, candidate))
            except OSError:
                continue
            return candidate
    raise OSError(f"no free port in {port}..{port + span - 1} on {host}")


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Ask Linux to send this process SIGTERM when its parent dies (even of SIGKILL)."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def serve(cmd: list[str], env: dict[str, str], cwd: Path, on_port: Callable[[int], None]) -> int:
    """Run the server in the foreground, echo its output, report the port it says it bound, and never leave it
    running: it is stopped when this process is interrupted or terminated (module docstring)."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            bufsize=1, errors="replace", preexec_fn=_die_with_parent)  # noqa: PLW1509

    def stop(signum: int, frame: object) -> None:
        proc.terminate()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stderr.write(line)
            match = API_URL.search(line)
            if match:
                on_port(int(match.group(2)))
        return proc.wait()
    except KeyboardInterrupt:
        return 130
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def studio(
    port: Annotated[int, typer.Option("--port", help="Loopback port; the next free one if it is taken (printed).")] = 2024,
    host: Annotated[str, typer.Option("--host", help="Interface to bind; keep it on loopback.")] = "127.0.0.1",
) -> None:
    """Serve the synthesis graph's API for LangGraph Studio on loopback (state in ./.langgraph_api/).

    The API server runs offline; the Studio UI is a hosted page your browser must reach. Without it,
    drive the same API with langgraph-sdk. Stopping rods studio stops the server."""
    try:
        bound = free_port(host, port)
    except OSError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if bound != port:
        typer.echo(f"port {port} is taken on {host}; using {bound}", err=True)
    cmd, env = studio_command(bound, host)

    def announce(actual: int) -> None:
        if actual != bound:
            typer.echo(f"langgraph dev bound port {actual} instead: serving on http://{host}:{actual}; Studio UI: "
                       f"https://smith.langchain.com/studio/?baseUrl=http://{host}:{actual}", err=True)

    typer.echo(f"serving graphs.synthesis:graph on http://{host}:{bound} (Ctrl-C to stop); state in "
               f"{Path.cwd() / '.langgraph_api'}", err=True)
    typer.echo(f"Studio UI (a hosted page your browser must reach): "
               f"https://smith.langchain.com/studio/?baseUrl=http://{host}:{bound}", err=True)
    raise typer.Exit(serve(cmd, env, Path.cwd(), announce))
