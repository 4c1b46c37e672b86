"""The GPU check's carried wheels: exactly what the borrowed machine lacks, at the project's resolved versions.

The machine (tools: device KINDS.md) has Python 3.12 with torch, transformers, accelerate, peft and the packages
below; ``scripts/gpu_check.sh fetch-wheels`` downloads its ``REQS`` for Python 3.12. Here: ``REQS`` is closed under
the installed requirements (every requirement is carried or on the machine, requests-toolbelt for langsmith
included), carries nothing the machine has, and pins versions that meet every requirement on them (the versions this
environment resolved when the wheels were fetched; a later release on the index is no failure).
"""

from __future__ import annotations

import importlib.metadata as md
import re
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
MACHINE = set("""
    absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch build certifi
    charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings cuda-core
    cuda-pathfinder cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet filelock
    flatbuffers flax fonttools formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx
    huggingface-hub humanize hypothesis idna imageio iniconfig interface-meta jax jax-cuda13-pjrt jax-cuda13-plugin
    jaxlib jaxtyping jinja2 joblib kiwisolver lazy-loader lightning lightning-utilities linear-operator lineax
    llvmlite lxml markdown markdown-it-py markupsafe matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack
    multidict multipledispatch mypy-extensions nanobind narwhals networkx ninja numba numba-cuda numpy numpyro
    nvidia-cublas nvidia-cuda-cupti nvidia-cuda-nvrtc nvidia-cuda-runtime nvidia-cudnn-cu13 nvidia-cufft
    nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse nvidia-cusparselt-cu13 nvidia-ml-py
    nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx onnx-ir onnxruntime onnxscript
    opencv-python-headless optax opt-einsum opt-einsum-fx optimistix orbax-checkpoint packaging pandas pathspec
    patsy peft pillow pip pluggy portalocker prometheus-client propcache protobuf psutil pyarrow pybind11
    py-cpuinfo pygments pyparsing pyproject-hooks pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock
    pytest-timeout pytest-xdist python-dateutil pytorch-lightning pyyaml regex requests rich sacrebleu safetensors
    scikit-build-core scikit-image scikit-learn scipy seaborn sentencepiece sentence-transformers setuptools
    shellingham simplejson six sortedcontainers statsmodels sympy tabulate tensorboard tensorboard-data-server
    tensorstore threadpoolctl tifffile tiktoken timm tokenizers toolz torch torchaudio torchdiffeq torch-geometric
    torchmetrics torchvision tqdm transformers treescope triton typer typing-extensions typing-inspect urllib3
    uvloop wadler-lindig werkzeug wheel wrapt xarray xxhash yarl zipp
""".split())
ROOTS = ["trl", "datasets", "langgraph", "langgraph-checkpoint-sqlite", "langchain-core", "langchain-openai", "openai",
         "pydantic", "bfcl-eval"]


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _reqs() -> dict[str, str]:
    text = (ROOT / "scripts" / "gpu_check.sh").read_text()
    block = re.search(r'^REQS="(.*?)"', text, re.S | re.M).group(1)
    return {_norm(r.split("==")[0]): r.split("==")[1] for r in block.split()}


def _pinned_requires(name: str, version: str) -> list[str] | None:
    """The requirements of the carried version of ``name``: from the wheel fetched into ``.whl/`` if there, else
    from this environment's install when it is that version; None when neither is (a fresh install resolved a newer
    release, whose requirements are not what the machine runs: httpx2 2.17.0 asks for httpcore2 2.17.0, the carried
    httpx2 2.16.2 for the carried httpcore2 2.16.2)."""
    import zipfile

    for wheel in (ROOT / ".whl").glob(f"{name.replace('-', '_')}-{version}-*.whl"):
        with zipfile.ZipFile(wheel) as z:
            meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
            return [line.split(":", 1)[1].strip() for line in z.read(meta).decode().splitlines()
                    if line.startswith("Requires-Dist:")]
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:
        return None
    return list(dist.requires or []) if dist.version == version else None


def test_carried_wheels_are_what_the_machine_lacks_at_the_resolved_versions():
    reqs = _reqs()
    assert "requests-toolbelt" in reqs  # langsmith imports it; the machine does not have it
    assert not set(reqs) & MACHINE, "a package the machine already has is carried"
    assert {_norm(r) for r in ROOTS} <= set(reqs)
    read = 0
    for name, version in reqs.items():
        if name == "bfcl-eval":  # installed --no-deps: the multi-turn classes need only mpmath (on the machine)
            assert md.distribution(name).version == version, f"{name}: carried {version}, resolved another"
            continue
        requires = _pinned_requires(name, version)
        read += requires is not None
        for raw in requires or []:
            req = Requirement(raw)
            if req.marker and not req.marker.evaluate({"extra": "", "python_version": "3.12"}):
                continue
            assert _norm(req.name) in reqs or _norm(req.name) in MACHINE, f"{name} needs {req.name}: neither carried nor there"
    assert read >= len(reqs) // 2, f"only {read} of {len(reqs)} carried versions could be read here"


def test_carried_versions_meet_every_requirement_on_them():
    """A carried pin must satisfy what the project and the other carried packages (at their carried versions) ask of it.
    It need not equal this environment's version: a fresh install resolves the newest release (openai 3.60.0 appeared
    after the pins were fetched at 3.57.0; httpx2 2.17.0, asking for httpcore2 2.17.0, after httpx2 2.16.2), and the
    machine runs the pinned wheels either way."""
    reqs = _reqs()
    asked = [*(md.distribution("rods").requires or []),
             *(raw for name, version in reqs.items() if name != "bfcl-eval"
               for raw in (_pinned_requires(name, version) or []))]
    for raw in asked:
        req = Requirement(raw)
        if req.marker and not req.marker.evaluate({"extra": "", "python_version": "3.12"}):
            continue
        pinned = reqs.get(_norm(req.name))
        if pinned is not None:
            assert req.specifier.contains(pinned, prereleases=True), f"{req.name}=={pinned} does not meet {raw!r}"
