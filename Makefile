# The two commands of the README, each complete on a fresh machine with the
# CUDA toolkit: a virtual environment, the dependencies from PyPI, the build.
#
#   make demo    the main job
#   make test    the test suite (GPU tests skip without a GPU)
#   make lint    ruff over the Python, cython-lint over pyx/aotirt (no build needed)
#   make gpu-check   on a GPU machine: build, tests with GPUs required, benchmark

PYTHON ?= python3
# pip keeps no second copy of each wheel it downloads (cuDNN's and cuBLAS's
# are hundreds of MB): a CI machine's disk can be short.
export PIP_NO_CACHE_DIR := 1
VENV := .venv
PY := $(VENV)/bin/python
DEPS := $(VENV)/.deps-installed

# What BENCHMARKS.md names as the command that produced it.
BENCH_COMMAND ?= make bench

.PHONY: demo test lint build asan torch-venv gpu-check bench run-bench bench-cpu run-bench-cpu clean

$(DEPS):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "cython>=3.0" numpy setuptools wheel pytest cuda-bindings ruff cython-lint safetensors
	# numpy's bfloat16 and float8s, which users hand aotirt: its tests of them
	# (tests/runtime/test_ml_dtypes.py) need it; aotirt itself does not.
	$(PY) -m pip install --quiet ml_dtypes
	# The headers the cuDNN shims are built with (cuDNN itself is opened at run
	# time only, when a model first needs it): cudnn.h, cudnn_frontend.h and
	# the nvrtc.h the frontend includes. The frontend's Python part is not
	# used, so none of its dependencies are installed.
	$(PY) -m pip install --quiet nvidia-cudnn-cu13 nvidia-cuda-nvrtc
	$(PY) -m pip install --quiet --no-deps nvidia-cudnn-frontend
	# CUTLASS's headers and its fused attention kernel (float32 attention),
	# and the curand_kernel.h that kernel includes.
	$(PY) -m pip install --quiet --no-deps nvidia-cutlass nvidia-curand
	touch $@

# `pip install -e .` registers the package in the venv, once; after that a
# build is setup.py's, which rebuilds only what changed, and it runs only
# when a source is newer than the last build (nothing to do: no build at all).
INSTALLED := $(VENV)/.aotirt-installed
BUILT := $(VENV)/.aotirt-built
SOURCES := setup.py pyproject.toml $(shell find cuda_src include -type f) \
	$(shell find pyx -type f \( -name '*.pyx' -o -name '*.pxd' -o -name '*.py' -o -name '*.pyi' \))

$(INSTALLED): $(DEPS)
	$(PY) -m pip install --quiet --no-build-isolation --no-deps -e .
	touch $@

$(BUILT): $(INSTALLED) $(SOURCES)
	$(PY) setup.py -q build_ext --inplace
	touch $@

build: $(BUILT)

demo: build
	$(PY) -m aotirt demo --compare-sync

test: build
	$(PY) -m pytest -q -rs tests

# The configuration is pyproject.toml's ([tool.ruff], [tool.cython-lint]).
# The tools (and pycodestyle, which cython-lint runs) come from PATH, else
# from the venv, made first where PATH has none.
LINT_DEPS := $(if $(and $(shell command -v ruff),$(shell command -v cython-lint),$(shell command -v pycodestyle)),,$(DEPS))
lint: $(LINT_DEPS)
	PATH="$$PATH:$(abspath $(VENV))/bin" ruff check
	PATH="$$PATH:$(abspath $(VENV))/bin" cython-lint pyx/aotirt/*.pyx pyx/aotirt/*.pxd

NVCC ?= $(shell command -v nvcc || echo /usr/local/cuda/bin/nvcc)
PKG := $(CURDIR)/pyx/aotirt
HARNESS := bench/build/aotirt_bench
RESULTS := bench/build/results.jsonl

# The C harness links the libaotirt.so that the build put in the package
# (targets without `build` in front work with whatever Python built it).
$(HARNESS): bench/harness.cu bench/bench_support.hpp cuda_src/models/add_mul_kernel.cu cuda_src/models/add_mul.h include/aotirt/aotirt.h include/aotirt/graphs.h $(PKG)/libaotirt.so
	mkdir -p bench/build
	$(NVCC) -std=c++17 -O2 -Iinclude -gencode arch=compute_90,code=sm_90 -gencode arch=compute_80,code=sm_80 \
		bench/harness.cu cuda_src/models/add_mul_kernel.cu -o $@ \
		-L$(PKG) -laotirt -Xlinker -rpath,$(PKG) -cudart shared

# On a GPU machine: the C harness and the Python benchmarks, then the report.
# ops.py and zoo.py set aotirt's shims and the zoo's models (compiled by
# tests/aoti/build.py) beside torch's; AOTIRT_BENCH_QUICK=1 shortens them.
# bench.py runs the harness's dispatch case itself, between its own
# repetitions, so that C and Python dispatch are timed under the same host.
bench: build
	$(MAKE) run-bench PY=$(PY)

#
# BENCH_PARTS runs some of them, for a runner that limits how long one
# command may run: the rows go on into the results of the parts run before
# when KEEP_RESULTS=1, and the report is written from all the rows each time.
BENCH_PARTS_ALL := harness bench kernel_times ops fallback_ops host_copy zoo tuning decode multigpu
BENCH_PARTS ?= $(BENCH_PARTS_ALL)
run-bench: $(HARNESS)
	$(if $(KEEP_RESULTS),,rm -f $(RESULTS))
	set -e; for part in $(BENCH_PARTS); do \
	  case $$part in \
	    harness) $(HARNESS) --models $(PKG)/models --cases pipeline,copy | tee -a $(RESULTS) ;; \
	    bench) $(PY) bench/bench.py --harness $(HARNESS) --out $(RESULTS) ;; \
	    kernel_times|ops|fallback_ops|host_copy|zoo|tuning|decode|multigpu) $(PY) bench/$$part.py --out $(RESULTS) ;; \
	    *) echo "run-bench: no part '$$part' (the parts: $(BENCH_PARTS_ALL))" >&2; exit 2 ;; \
	  esac; \
	done
	$(PY) bench/report.py $(RESULTS) --command "$(BENCH_COMMAND)" > BENCHMARKS.md

# A short pass on the CPU models: runs anywhere, CI included.
bench-cpu: build
	$(MAKE) run-bench-cpu

run-bench-cpu: $(HARNESS)
	$(HARNESS) --models $(PKG)/models --device cpu --quick

# A separate environment with torch (the CPU build) for compiling real
# AOTInductor models in the tests (tests/aoti/build.py runs in it): the
# process that runs aotirt's tests never imports torch.
TORCH_SPEC ?= torch==2.13.0
torch-venv: .venv-torch/.installed
.venv-torch/.installed:
	$(PYTHON) -m venv .venv-torch
	.venv-torch/bin/python -m pip install --quiet "$(TORCH_SPEC)" numpy safetensors
	touch $@

# The CPU paths of the core and the tests under AddressSanitizer and
# UndefinedBehaviorSanitizer, from a separate build in build/asan.
ASAN_LIB = $(shell gcc -print-file-name=libasan.so) $(shell gcc -print-file-name=libubsan.so)
asan: $(DEPS)
	AOTIRT_SANITIZE=address,undefined $(PY) setup.py -q build --build-base build/asan
	# cuDNN's own libcudnn.so.9 aborts the process under AddressSanitizer
	# (its dlopen of its sub-libraries fails there): the sanitized run points
	# AOTIRT_CUDNN at no file, so cuDNN is reported missing instead of opened.
	PYTHONPATH=$$(echo $(CURDIR)/build/asan/lib.*) LD_PRELOAD="$(ASAN_LIB)" \
	AOTIRT_SANITIZED=1 AOTIRT_CUDNN=/nonexistent/cudnn-is-not-opened-under-asan/libcudnn.so.9 \
	ASAN_OPTIONS=detect_leaks=0:protect_shadow_gap=0:abort_on_error=1 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		sh -c '$(PY) -c "import aotirt, sys; print(\"sanitized build:\", aotirt.__file__)" && \
		       $(PY) -m pytest -q -p no:cacheprovider -m "not gpu" tests'

gpu-check:
	scripts/gpu-check.sh

clean:
	rm -rf build $(VENV) pyx/aotirt/*.so pyx/aotirt/*.cpp pyx/aotirt/models pyx/*.egg-info
