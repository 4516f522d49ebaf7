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

.PHONY: setup run fit test test-fast lint format bench darts-env clean

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

test: setup
	$(BIN)/python -m pytest

test-fast: setup
	$(BIN)/python -m pytest -m "not slow"

# ruff, configured in pyproject.toml: the linter and the formatter's check, on the whole tree.
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# The peer for bench/single_trial.py --darts-python: Darts in its own environment, since it brings
# pytorch_lightning, which must not share one with `lightning`.
darts-env:
	$(PYTHON) -m venv .darts-venv
	.darts-venv/bin/pip install --quiet $(TORCH) $(TORCH_INDEX) "darts[torch]==0.48.1"

bench: setup
	$(BIN)/python bench/single_trial.py
	$(BIN)/python bench/sweep.py

clean:
	rm -rf $(VENV) .darts-venv .pytest_cache build *.egg-info
