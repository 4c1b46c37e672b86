#!/usr/bin/env bash
# One prepared GPU check, ending within 8 minutes on one GPU (H100/H200): a few GRPO steps of
# recipes/qwen3-4b-rods.yaml on a random-weight Qwen3-4B-architecture model built from its config (no download),
# with a base and a miss_func task through an epoch boundary with offline synthesis. Prints a table and ONE JSON
# line (also written to $OUT/gpu_check.json): step time, rollout tokens/s, peak GPU memory, share of weights
# changed, IS ratio min/mean/max (vLLM only), miss_func tool rendering. Code: scripts/gpu_check.py.
#
#   bash scripts/gpu_check.sh fetch-wheels   # on a machine with PyPI: the pure-Python wheels the GPU box lacks,
#                                            # into .whl/ (git-ignored; pass it as `carry`, <= 64 MiB)
#   bash scripts/gpu_check.sh                # on the GPU box (offline): install the carried wheels, run the check
#
# The GPU box is expected to have torch (CUDA), transformers >= 5.15, accelerate (and maybe vLLM; without it the
# transformers generation path runs). The project itself is not installed: it runs from the working tree.
# Knobs: LAYERS (36 = Qwen3-4B; fewer if time demands), STEPS (3), LIMIT_S (450: the check's own timeout), OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
WHEELS=${WHEELS:-.whl}
OUT=${OUT:-runs/gpu-check}
LAYERS=${LAYERS:-36}
STEPS=${STEPS:-3}
LIMIT_S=${LIMIT_S:-450}
# what the checker needs beyond torch/transformers/accelerate (pinned to the versions the project resolves with)
REQS="trl==1.16.0 datasets==5.2.0 langchain-core==1.8.3 langchain-openai==1.7.4 langgraph==1.2.24
langgraph-checkpoint-sqlite==3.1.2 openai==3.57.0 pydantic==2.14.4 pydantic_core==2.50.5 rich==15.0.0
typer==0.29.2 aiosqlite==0.22.1 annotated-doc==0.0.7 annotated-types==0.8.0 typing-inspection==0.4.5 anyio==4.16.0
dill==0.4.1 httpx==0.28.1 httpcore==1.0.9 httpx2==2.16.2 httpcore2==2.16.2 jiter==0.19.0 jsonpatch==1.48
langchain-protocol==0.0.20 langgraph-checkpoint==4.3.2 langgraph-prebuilt==1.1.3 langgraph-sdk==0.4.14
langsmith==0.15.1 markdown-it-py==4.3.0 multiprocess==0.70.19 pandas==3.1.1 pygments==2.21.0
python-dateutil==4.0.0 shellingham==1.5.4 sqlite-vec==0.1.9 tenacity==9.2.1 tiktoken==0.14.0
uuid_utils==0.19.0 xxhash==4.1.0 sniffio==1.3.1 click==8.5.1 distro==1.9.0 jsonpointer==3.12 mdurl==0.1.2
orjson==3.13.0 ormsgpack==1.13.1 truststore==0.10.5 websockets==17.4 zstandard==0.25.0 tzdata==2026.6
h11==0.16.0 bfcl-eval==2026.3.23"   # ~31 MB of wheels (python 3.11, x86_64)
# pyarrow (55 MB) only on request (FETCH_BIG=1): it and the rest exceed 64 MiB; the check names it if missing
BIG="pyarrow==26.0.1"

if [[ "${1:-}" == "fetch-wheels" ]]; then
  PIP=${PIP:-.venv/bin/pip}
  PYV=${PYV:-3.11}
  mkdir -p "$WHEELS"
  # shellcheck disable=SC2086
  "$PIP" download --no-deps --only-binary=:all: --python-version "$PYV" -d "$WHEELS" $REQS \
    $([[ "${FETCH_BIG:-0}" == 1 ]] && echo $BIG) || exit 1
  du -sh "$WHEELS"
  exit 0
fi

START=$(date +%s)
mkdir -p "$OUT"
PY=${PY:-python3}
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv | tee "$OUT/gpu.csv"
# a venv over the system packages (torch, transformers, accelerate stay the box's), carried wheels on top
if [[ ! -x "$OUT/venv/bin/python" ]]; then
  "$PY" -m venv --system-site-packages "$OUT/venv" || exit 1
fi
VPY="$OUT/venv/bin/python"
if compgen -G "$WHEELS/*.whl" >/dev/null; then  # only distributions the box does not have: its own versions stay
  NEED=$("$VPY" - "$WHEELS" <<'PYEOF'
import importlib.metadata as md, pathlib, re, sys
for w in sorted(pathlib.Path(sys.argv[1]).glob("*.whl")):
    name = re.sub(r"[-_.]+", "-", w.name.split("-")[0]).lower()
    try:
        md.version(name)
    except md.PackageNotFoundError:
        print(w)
PYEOF
)
  # shellcheck disable=SC2086
  [[ -z "$NEED" ]] || "$VPY" -m pip install -q --no-index --no-deps $NEED 2>&1 | tail -3
fi
MISSING=$("$VPY" - <<'PYEOF'
import importlib.util
mods = ["torch", "transformers", "accelerate", "trl", "datasets", "pyarrow", "pandas", "langgraph", "langchain_core",
        "langchain_openai", "openai", "typer", "rich", "bfcl_eval", "networkx", "pydantic", "yaml", "mpmath"]
print(" ".join(m for m in mods if importlib.util.find_spec(m) is None))
PYEOF
)
if [[ -n "$MISSING" ]]; then
  echo "{\"error\": \"missing modules on this box: $MISSING\", \"hint\": \"fetch their wheels (FETCH_BIG=1 for pyarrow) and carry $WHEELS\"}"
  exit 3
fi
"$VPY" -c 'import torch, transformers, trl; print("torch", torch.__version__, "cuda", torch.version.cuda,
  "transformers", transformers.__version__, "trl", trl.__version__)'
export TRL_EXPERIMENTAL_SILENCE=1 TOKENIZERS_PARALLELISM=false VLLM_LOGGING_LEVEL=WARNING HF_HUB_OFFLINE=1
timeout --signal=TERM --kill-after=15 "$LIMIT_S" "$VPY" scripts/gpu_check.py --out "$OUT" --layers "$LAYERS" \
  --steps "$STEPS" "${@}" 2>&1 | grep -v -E "Loading weights|it/s\]$" | tee "$OUT/check.log" | tail -40
RC=${PIPESTATUS[0]}
echo "wall_s=$(( $(date +%s) - START )) rc=$RC"
[[ $RC -eq 0 ]] || tail -1 "$OUT/check.log" | grep -q '^{' || echo "{\"error\": \"gpu_check.py exited $RC (124 = over ${LIMIT_S}s)\"}"
exit "$RC"
