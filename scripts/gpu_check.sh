#!/usr/bin/env bash
# One prepared GPU check for the borrowed machine (one H200; python3 there is Python 3.12, itself a venv at
# /opt/torch/.venv holding torch, transformers, accelerate, peft; no vLLM; no network), ending within 8 minutes:
# a few GRPO steps of recipes/qwen3-4b-rods.yaml on a random-weight Qwen3-4B-architecture model built from its config
# (no download), transformers generation, a base and a miss_func task through an epoch boundary with offline
# synthesis. Prints a table and ONE JSON line (also $OUT/gpu_check.json): step time, rollout tokens/s, peak GPU
# memory, KV/activation headroom, share of weights changed, miss_func tool rendering. Code: scripts/gpu_check.py.
#
#   bash scripts/gpu_check.sh fetch-wheels   # here (PyPI reachable): the wheels the machine lacks, for Python 3.12,
#                                            # into .whl/ (git-ignored; ~18 MB, pass it as `carry`)
#   bash scripts/gpu_check.sh                # there: install the carried wheels to $SITE, run the check
#
# Why no venv: the machine's python3 is itself a venv, and a venv made from it (even --system-site-packages) sees
# the base interpreter's packages, not torch & co. The carried wheels go to a --target folder on PYTHONPATH instead,
# so the machine's torch/transformers/accelerate/peft stay the ones used; the carried set is exactly what the
# machine lacks (the pins below: the project's resolved versions, transitive closure of trl, datasets, langgraph,
# langchain, openai, pydantic and bfcl-eval, minus the machine's package list in the device KINDS.md; includes
# requests-toolbelt, which langsmith imports). Nothing large is written to $OUT: the model (7.5 GB), the run and the
# site folder live under $WORK (/tmp); $OUT gets gpu_check.json, check.log and gpu.csv.
# Knobs: LAYERS (36 = Qwen3-4B; fewer if time demands), STEPS (3), LIMIT_S (420: the check's own timeout), OUT, WORK.
set -uo pipefail
cd "$(dirname "$0")/.."
WHEELS=${WHEELS:-.whl}
OUT=${OUT:-runs/gpu-check}
WORK=${WORK:-/tmp/rods-gpu-check}
SITE=${SITE:-$WORK/site}
LAYERS=${LAYERS:-36}
STEPS=${STEPS:-3}
LIMIT_S=${LIMIT_S:-420}
PYV=${PYV:-3.12}
REQS="aiosqlite==0.22.1 annotated-types==0.8.0 bfcl-eval==2026.3.23 datasets==5.2.0 dill==0.4.1 distro==1.9.0
httpcore2==2.16.2 httpx2==2.16.2 jiter==0.19.0 jsonpatch==1.48 jsonpointer==3.12 langchain-core==1.8.3
langchain-openai==1.8.1 langchain-protocol==0.0.20 langgraph==1.2.24 langgraph-checkpoint==4.3.2
langgraph-checkpoint-sqlite==3.1.2 langgraph-prebuilt==1.1.3 langgraph-sdk==0.4.14 langsmith==0.15.1
multiprocess==0.70.19 openai==3.57.0 orjson==3.13.0 ormsgpack==1.13.1 pydantic==2.14.4 pydantic-core==2.50.5
python-dotenv==1.2.4 requests-toolbelt==1.0.0 sniffio==1.3.1 sqlite-vec==0.1.9 tenacity==9.2.1 trl==1.16.0
truststore==0.10.5 typing-inspection==0.4.5 uuid-utils==0.19.0 websockets==17.4 zstandard==0.25.0"
# modules the check imports that must come from the machine itself (never carried)
MACHINE_MODS="torch transformers accelerate peft numpy pandas pyarrow yaml requests rich typer networkx mpmath jinja2
httpx anyio xxhash fsspec tokenizers safetensors huggingface_hub matplotlib"

if [[ "${1:-}" == "fetch-wheels" ]]; then
  PIP=${PIP:-.venv/bin/pip}
  rm -rf "$WHEELS" && mkdir -p "$WHEELS"
  plat=""
  for p in manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux_2_24_x86_64 manylinux_2_27_x86_64 manylinux_2_28_x86_64 \
           manylinux_2_31_x86_64 manylinux_2_34_x86_64 manylinux_2_35_x86_64 manylinux1_x86_64; do plat+=" --platform $p"; done
  # shellcheck disable=SC2086
  "$PIP" download -q --no-deps --only-binary=:all: --python-version "$PYV" --implementation cp $plat -d "$WHEELS" \
    $REQS || exit 1
  echo "$(ls "$WHEELS" | wc -l) wheels for Python $PYV: $(du -sh "$WHEELS" | cut -f1)"
  exit 0
fi

START=$(date +%s)
mkdir -p "$OUT" "$WORK"
PY=${PY:-python3}
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv | tee "$OUT/gpu.csv"
"$PY" -c 'import sys; print("python", sys.version.split()[0], sys.prefix)'
if compgen -G "$WHEELS/*.whl" >/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$WHEELS"/*.whl \
    2>&1 | grep -v -i "warning" | tail -3
  [[ ${PIPESTATUS[0]} -eq 0 ]] || { echo '{"error": "the carried wheels did not install (see above)"}'; exit 3; }
fi
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
MISSING=$("$PY" - "$MACHINE_MODS" <<'PYEOF'
import importlib, sys
mods = sys.argv[1].split() + ["trl", "datasets", "langgraph", "langgraph.checkpoint.sqlite", "langchain_core",
                              "langchain_openai", "langsmith", "requests_toolbelt", "openai", "pydantic", "bfcl_eval"]
bad = []
for m in mods:
    try:
        importlib.import_module(m)
    except Exception as exc:  # noqa: BLE001 - name every module that does not import, with why
        bad.append(f"{m} ({type(exc).__name__}: {exc})"[:160])
print("; ".join(bad))
PYEOF
)
if [[ -n "$MISSING" ]]; then
  echo "{\"error\": \"modules that do not import on this machine: $MISSING\", \"hint\": \"bash scripts/gpu_check.sh fetch-wheels where PyPI is reachable, and carry $WHEELS\"}" | tee "$OUT/gpu_check.json"
  exit 3
fi
"$PY" -c 'import torch, transformers, trl, accelerate; print("torch", torch.__version__, "cuda", torch.version.cuda,
  "transformers", transformers.__version__, "accelerate", accelerate.__version__, "trl", trl.__version__)'
export TRL_EXPERIMENTAL_SILENCE=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
export RODS_CACHE=${RODS_CACHE:-$WORK/cache} PYTHONUNBUFFERED=1
timeout --signal=TERM --kill-after=15 "$LIMIT_S" "$PY" scripts/gpu_check.py --out "$OUT" --work "$WORK" \
  --layers "$LAYERS" --steps "$STEPS" "${@}" 2>&1 | grep --line-buffered -v -E "Loading weights|it/s\]$" | tee "$OUT/check.log" | tail -40
RC=${PIPESTATUS[0]}
echo "wall_s=$(( $(date +%s) - START )) rc=$RC"
[[ $RC -eq 0 ]] || tail -1 "$OUT/check.log" | grep -q '^{' || echo "{\"error\": \"gpu_check.py exited $RC (124 = over ${LIMIT_S}s)\"}"
exit "$RC"
