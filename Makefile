# The two commands of the README, each complete on a fresh machine with the
# CUDA toolkit: a virtual environment, the dependencies from PyPI, the build.
#
#   make demo    the main job
#   make test    the test suite (GPU tests skip without a GPU)
#   make gpu-check   on a GPU machine: build, tests with GPUs required, benchmark

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
DEPS := $(VENV)/.deps-installed

.PHONY: demo test build gpu-check bench clean

$(DEPS):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "cython>=3.0" numpy setuptools wheel pytest cuda-bindings
	touch $@

build: $(DEPS)
	$(PY) -m pip install --quiet --no-build-isolation --no-deps -e .

demo: build
	$(PY) -m aotirt demo

test: build
	$(PY) -m pytest -q tests

bench: build
	$(PY) bench/bench.py

gpu-check:
	scripts/gpu-check.sh

clean:
	rm -rf build $(VENV) pyx/aotirt/*.so pyx/aotirt/*.cpp pyx/aotirt/models pyx/*.egg-info
