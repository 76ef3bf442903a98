#!/usr/bin/env bash
# compute-sanitizer over the GPU suite's CUDA paths (on a GPU machine, after a
# build): memcheck (out-of-bounds and misaligned accesses, leaks of device
# allocations) over the handle, kernel, pipeline and matmul tests, and
# racecheck (shared-memory races) over the kernel tests. One summary line each.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
LOGS=${OUT:-/tmp/aotirt-sanitize}
mkdir -p "$LOGS"
SANITIZER=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)

run() {  # tool, log name, pytest arguments...
  local tool=$1 name=$2; shift 2
  "$SANITIZER" --tool "$tool" --error-exitcode 97 --target-processes all \
    "$PY" -m pytest -q -p no:cacheprovider -x "$@" >"$LOGS/$name.log" 2>&1
  local rc=$?
  local errors summary
  errors=$(grep -cE "^========= (Invalid|Race|Error|Uninitialized|Leaked|Program hit)" "$LOGS/$name.log")
  summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$LOGS/$name.log" | tail -n 1)
  echo "$name: exit $rc, $errors reports, ${summary:-no summary}; $(grep -E '[0-9]+ passed' "$LOGS/$name.log" | tail -n 1)"
}

# The fault test is left out: it faults on purpose.
run memcheck memcheck tests/runtime/test_gpu_handle.py tests/examples/test_kernels.py tests/examples/test_pipeline_models.py \
    tests/shims/test_matmul_shims.py tests/shims/test_cublas_loader.py tests/shims/test_sort_gpu.py \
    tests/shims/test_indexing_shims_gpu.py tests/shims/test_control_shims_gpu.py \
    tests/runtime/test_auto_graphs.py tests/runtime/test_loop.py -m gpu
run racecheck racecheck tests/examples/test_kernels.py -m gpu
