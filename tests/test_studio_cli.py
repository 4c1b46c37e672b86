"""`rods studio`: the port it prints is the port the server bound, and the server never outlives it.

Before: with port 2024 taken, `rods studio` printed 2024 while `langgraph dev` moved to a random port, and killing
`rods studio` left `langgraph dev` running.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from rods_cli.studio import free_port

REPO = Path(__file__).resolve().parents[1]
CHILD = "import os,sys,time; open(sys.argv[1],'w').write(str(os.getpid())); print('- API: http://127.0.0.1:4321', flush=True); time.sleep(120)"
PARENT = textwrap.dedent("""
    import sys
    from pathlib import Path
    from rods_cli.studio import serve
    serve([sys.executable, "-c", sys.argv[1], sys.argv[2]], {}, Path.cwd(), lambda p: print("PORT", p, flush=True))
""")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().split()[2] if Path(f"/proc/{pid}/stat").exists() else "X"
    return state not in ("Z", "X")


def _wait(cond, seconds: float) -> bool:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.1)
    return cond()


def test_free_port_skips_a_taken_port():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        taken = held.getsockname()[1]
        assert free_port("127.0.0.1", taken) != taken


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_the_server_dies_with_rods_studio(tmp_path, sig):
    pid_file = tmp_path / "child.pid"
    parent = subprocess.Popen([sys.executable, "-c", PARENT, CHILD, str(pid_file)], cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert parent.stdout.readline().strip() == "PORT 4321"  # the port the server printed is reported
        child = int(pid_file.read_text())
        assert _alive(child)
        parent.send_signal(sig)
        parent.wait(timeout=20)
        assert _wait(lambda: not _alive(child), 15), f"server {child} outlived its parent ({sig.name})"
    finally:
        parent.kill()
        if pid_file.exists() and _alive(int(pid_file.read_text())):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)


@pytest.mark.slow
def test_rods_studio_prints_the_port_it_serves_on_when_the_default_is_taken(tmp_path):
    httpx = pytest.importorskip("httpx")
    rods = Path(sys.executable).parent / "rods"
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = held.getsockname()[1]
        proc = subprocess.Popen([str(rods), "studio", "--port", str(taken)], cwd=tmp_path, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        try:
            first = proc.stdout.readline()
            assert f"port {taken} is taken" in first, first
            bound = int(first.rsplit("using", 1)[1])
            serving = proc.stdout.readline()
            assert f"http://127.0.0.1:{bound} " in serving
            assert _wait(lambda: _ok(httpx, bound), 120), "the printed port never answered"
            children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
            assert children
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
            assert _wait(lambda: not any(_alive(int(c)) for c in children), 20), "langgraph dev outlived rods studio"
        finally:
            proc.kill()


def _ok(httpx, port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/ok", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False
