#!/usr/bin/env bash
# The whole GPU check, for a GPU machine (the H200 runner): build for the GPU,
# run the full test suite with GPU tests required (a skip is a failure), run
# the benchmarks, and print one summary line last.
#
#   scripts/gpu-check.sh            # logs under $OUT (the device tool) or /tmp/aotirt-gpu-check
#
# Writes BENCHMARKS.md (and copies it under the logs folder).
#
# Uses the machine's python3 and what it has installed (Cython, numpy, pytest,
# cuda-bindings): it installs nothing from the network.
set -uo pipefail
cd "$(dirname "$0")/.."
LOGS=${OUT:-/tmp/aotirt-gpu-check}
mkdir -p "$LOGS"
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
"$PY" -c 'import sys, Cython, numpy; print("python", sys.version.split()[0], "cython", Cython.__version__, "numpy", numpy.__version__)'

start=$(date +%s)
if ! "$PY" -m pip install --no-build-isolation --no-deps -e . >"$LOGS/build.log" 2>&1; then
  tail -n 60 "$LOGS/build.log"
  echo "gpu-check: FAILED at build"
  exit 1
fi
echo "built in $(( $(date +%s) - start )) s"

AOTIRT_REQUIRE_GPU=1 AOTIRT_REPORT_NOW=1 "$PY" -X faulthandler -m pytest -q -rs -p no:cacheprovider tests 2>&1 | tee "$LOGS/pytest.log"
tests_rc=${PIPESTATUS[0]}
tests_line=$(grep -E '^[0-9]+ (passed|failed)|^=+ .*(passed|failed|error)' "$LOGS/pytest.log" | tail -n 1 | tr -d '=' | xargs)

# The C harness, the Python benchmarks and BENCHMARKS.md from both.
make -s run-bench PY="$PY" BENCH_COMMAND=scripts/gpu-check.sh 2>&1 | tee "$LOGS/bench.log"
bench_rc=${PIPESTATUS[0]}
cp bench/build/results.jsonl "$LOGS/bench.jsonl" 2>/dev/null
cp BENCHMARKS.md "$LOGS/BENCHMARKS.md" 2>/dev/null
import_us=$("$PY" -X importtime -c "import aotirt" 2>&1 | tail -n 1 | cut -d'|' -f2 | xargs)

dispatch=$("$PY" - "$LOGS/bench.jsonl" <<'PYEOF'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
print(" ".join(f"{r['device']}/{r['api']}={r['us_per_call']:.2f}us" for r in rows if r["case"] == "dispatch"))
PYEOF
)
pipeline=$("$PY" - "$LOGS/bench.jsonl" <<'PYEOF'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
tps = {(r["api"], r["mode"]): r["tokens_per_s"] for r in rows if r["case"] == "pipeline"}
parts = []
for api in ("c", "python"):
    if (api, "shared") in tps and (api, "sync_each") in tps and (api, "graph") in tps:
        parts.append(f"{api}: shared/sync_each={tps[api, 'shared'] / tps[api, 'sync_each']:.2f}x "
                     f"graph/shared={tps[api, 'graph'] / tps[api, 'shared']:.2f}x")
print("; ".join(parts))
PYEOF
)

status=PASSED
[ "$tests_rc" -eq 0 ] && [ "$bench_rc" -eq 0 ] || status=FAILED
echo "gpu-check: $status | tests: $tests_line | dispatch: $dispatch | pipeline: $pipeline | import aotirt: ${import_us} us"
[ "$status" = PASSED ]
