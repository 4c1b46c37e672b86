"""A pickle cache on disk for what synthesis builds once per process from fixed inputs (the turn bank).

Why: building the turn bank traces and measures every human-written train turn, about ten seconds, and every
process pays it: each ``rods synthesize`` run, each trainer rank's synthesis, each test worker. The result depends
only on the code that builds it, the data files under ``prompts/`` and the donor tasks, so the cache key hashes
exactly those (with the Python and bfcl-eval versions); a change to any of them builds anew. Writes are atomic (a
temporary file renamed into place), so concurrent processes never read half a file; a file that does not load is
rebuilt, never trusted. The folder is ``$RODS_CACHE/<name>`` if set, else ``<repo>/.cache/<name>`` in a checkout,
else ``~/.cache/rods/<name>``; ``RODS_NO_DISK_CACHE=1`` turns it off.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import inspect
import logging
import os
import pickle
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

log = logging.getLogger("rods.synthesis")
T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[2]
_CODE = ("rods_agents", "envs", "prompts")


def cache_dir(name: str) -> Path:
    if os.environ.get("RODS_CACHE"):
        return Path(os.environ["RODS_CACHE"]) / name
    if (ROOT / "pyproject.toml").exists():
        return ROOT / ".cache" / name
    return Path.home() / ".cache" / "rods" / name


def code_fingerprint(extra_objects: Iterable[object] = ()) -> str:
    """Hash of every file under rods_agents/, envs/ and prompts/ (and the source files of ``extra_objects``, such
    as a user's environment classes), the Python version and bfcl-eval's version."""
    h = hashlib.sha256()
    files = sorted(p for d in _CODE for p in (ROOT / d).rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for obj in extra_objects:
        try:
            files.append(Path(inspect.getsourcefile(obj) or ""))  # type: ignore[arg-type]
        except TypeError:
            continue
    for p in files:
        if p.is_file():
            h.update(str(p.relative_to(ROOT) if p.is_relative_to(ROOT) else p).encode())
            h.update(p.read_bytes())
    try:
        bfcl = md.version("bfcl-eval")
    except md.PackageNotFoundError:
        bfcl = ""
    h.update(f"{sys.version}|{bfcl}|{pickle.HIGHEST_PROTOCOL}".encode())
    return h.hexdigest()


def cached(name: str, key: str, build: Callable[[], T]) -> T:
    """``build()``, or what an earlier process saved for the same ``name`` and ``key``."""
    if os.environ.get("RODS_NO_DISK_CACHE") == "1":
        return build()
    path = cache_dir(name) / f"{key[:32]}.pkl"
    if path.exists():
        try:
            with path.open("rb") as f:
                return pickle.load(f)  # noqa: S301 - our own file, written below by this function
        except Exception as exc:  # noqa: BLE001 - a truncated or foreign file is rebuilt, never trusted
            log.warning("disk cache %s did not load (%s); building it again", path, exc)
    value = build()
    _save(path, value)
    return value


def _save(path: Path, value: object) -> None:
    tmp: Path | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=path.stem, suffix=".tmp", delete=False) as f:
            tmp = Path(f.name)
            pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except OSError as exc:  # a read-only or full disk costs the next process a rebuild, nothing more
        log.warning("disk cache %s not written (%s)", path, exc)
        if tmp is not None:
            tmp.unlink(missing_ok=True)
