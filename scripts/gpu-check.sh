#!/usr/bin/env bash
# The whole GPU check, for a GPU machine (the H200 runner): build for the GPU,
# compile the model zoo (tests/aoti/build.py, cached), run the full test suite
# with GPU tests required (a skip is a failure), run the benchmarks, and print
# one summary line last.
#
#   scripts/gpu-check.sh                # everything
#   scripts/gpu-check.sh --tests-only   # build, zoo, tests (the pytest log is kept in bench/build/)
#   scripts/gpu-check.sh --tests-only tests/aoti   # the same for a part of the suite
#   scripts/gpu-check.sh --bench-only   # build, zoo, benchmarks; the summary line reads the kept pytest log
#   scripts/gpu-check.sh --zoo-only     # the zoo alone (what AOTIRT_ZOO_AHEAD=1 starts detached)
# (the zoo only where the command reads it, below).
#
# --tests-only and --bench-only split one run in two, for a runner that limits the time of one
# command (compiling the zoo from scratch takes minutes: it can be a command of
# its own, python3 tests/aoti/build.py --device cuda --cache .cache/aoti --jobs 8).
# On the device tool's H200 (600 s a command, the machine kept only while
# commands follow each other within 30 s, a fresh one bare), the build is made
# on the developer's machine and carried (AOTIRT_PREBUILT, below), and the
# whole check is five commands (tests/shims alone holds 3,069 of the suite's
# 3,987 tests):
#   AOTIRT_ZOO_AHEAD=1 AOTIRT_TEST_WORKERS=4 scripts/gpu-check.sh --tests-only tests/shims
#   AOTIRT_TEST_WORKERS=4 scripts/gpu-check.sh --tests-only tests/bench tests/examples tests/python tests/runtime
#   scripts/gpu-check.sh --tests-only tests/aoti
#   AOTIRT_BENCH_QUICK=1 AOTIRT_BENCH_PARTS="ops fallback_ops zoo" scripts/gpu-check.sh --bench-only
#   AOTIRT_BENCH_QUICK=1 AOTIRT_BENCH_KEEP=1 AOTIRT_BENCH_PARTS="harness bench kernel_times decode" \
#     scripts/gpu-check.sh --bench-only
# (AOTIRT_TEST_WORKERS=4 spreads a command's tests over four pytest
# processes, then runs those that read the GPU's free memory alone, once a
# zoo compiled ahead is built (a part with none of them, as tests/shims,
# does not wait for it): see below. Session 23, on a fresh H100:
# tests/shims 183 s, the other parts 146 s, tests/aoti 58 s with the zoo
# built ahead. Session 27 ran the first two as one command with eight
# workers on a fresh machine, twice: neither ended within 600 s (with
# the zoo compiling beside it) or 420 s (without), each with 5 or 6 of its
# 3,982 tests unreported, where the same tests by plain pytest, eight
# workers, on a machine warmed by those runs, took 130 s. Until a stall
# report (AOTIRT_TEST_STALL_S, below) says why, keep them apart.)
# (tests/aoti alone, or first: its tests assert that the process never
# imported torch, and tests/runtime/test_interop_gpu.py imports it; in one
# run of the whole suite pytest collects tests/aoti first)
# (each with AOTIRT_PREBUILT=.prebuilt and .prebuilt carried, or with
# AOTIRT_CUDA_ARCHS=90 and .deps carried, where a command that lands on a
# fresh machine rebuilds everything first: about 390 s). The zoo is compiled
# only by a command that reads it (tests/aoti, the zoo and decode benchmarks);
# with AOTIRT_ZOO_AHEAD=1 on the first command, it compiles
# detached meanwhile (318 s beside tests/shims in session 10), and the
# tests/aoti command waits for it.
# AOTIRT_PREBUILT=DIR unpacks a build packed by scripts/prebuilt.py from this
# same tree in place of building (it refuses a pack of other sources or for
# another Python; the cudnn-frontend headers it carries serve the host
# checks that compile against them); the pack is made where the toolkit is, with the GPU
# machine's Python and cuDNN headers, for the GPU's architecture alone (the
# tool carries 64 MiB; a pack of the default 80;90 is 67 MiB):
#   export AOTIRT_CUDA_ARCHS=90
#   python3.12 setup.py build_ext --inplace && python3.12 scripts/prebuilt.py pack .prebuilt
# AOTIRT_ZOO_ONLY=a,b compiles and tests only those zoo models (a partial
# check for a short device budget, named in the summary line), e.g.
#   AOTIRT_ZOO_ONLY=int4_decode_bf16 scripts/gpu-check.sh --tests-only tests/aoti/test_aoti_zoo_gpu.py
# A test outside the zoo that reads another compiled model (tests/python's
# mlp, tests/runtime's mlp_blob) compiles that one when it asks
# (tests/aoti/test_aoti_models.py's model_folder); issue 4's CUDA models
# use max autotune, minutes each.
# AOTIRT_BENCH_QUICK=1 makes the op and zoo benchmarks shorter.
# AOTIRT_ZOO_JOBS=N compiles N zoo models at a time (default 8); with
# AOTIRT_BUILD_JOBS=6 beside it, AOTIRT_ZOO_JOBS=10 had a fresh 16-core H200
# built and compiled in 387 s (session 9), so that a first command can also
# run tests/aoti (132 s) within a 600 s limit.
# Logs go under $OUT (the device tool) or /tmp/aotirt-gpu-check. Writes
# BENCHMARKS.md (and copies it under the logs folder).
#
# Uses the machine's python3 and what it has installed (Cython, numpy, pytest,
# cuda-bindings; torch, torchvision and transformers for the zoo): it installs
# nothing from the network.
set -uo pipefail
cd "$(dirname "$0")/.."
mode=all
case "${1:-}" in
  "") ;;
  --tests-only) mode=tests ;;
  --bench-only) mode=bench ;;
  --zoo-only) mode=zoo ;;
  *) echo "usage: $0 [--tests-only [TEST_PATH...] | --bench-only | --zoo-only]" >&2; exit 2 ;;
esac
# --tests-only can take a part of the suite (test files or folders), for a
# runner whose limit on one command is shorter than the whole suite; the
# summary line then names the part.
shift $(( $# > 0 ? 1 : 0 ))
if [ "$mode" = tests ] && [ $# -gt 0 ]; then test_paths=("$@"); part=" of $*"; else test_paths=(tests); part=""; fi
# The test paths as the checks below compare them: no leading ./, no trailing /.
suite_parts=()
for path in "${test_paths[@]}"; do path=${path#./}; suite_parts+=("${path%/}"); done
LOGS=${OUT:-/tmp/aotirt-gpu-check}
KEPT=bench/build                 # ignored by git, kept between two commands on one machine
# A zoo compile started ahead outlives its command: its logs stay on the machine.
[ "$mode" = zoo ] && LOGS=$KEPT/zoo-ahead-logs
mkdir -p "$LOGS" "$KEPT"
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}

# AOTIRT_TEST_WORKERS=N runs the tests in N pytest processes sharing the GPU
# (pytest-xdist, which the H200's image has), a test file to a process, for
# any part of the suite outside tests/aoti (whose tests assert that their
# process never imported torch, which tests/runtime/test_interop_gpu.py
# does). The tests marked reads_device_free_memory (other processes move the
# GPU's free memory: the other workers, a zoo compile started ahead) are
# left out of that run and run after it in one process, once a zoo compile
# started ahead has ended; where the part has none, nothing waits.
test_workers=()
alone_after=0
workers=${AOTIRT_TEST_WORKERS:-1}
case "$workers" in
  ''|*[!0-9]*|0) echo "AOTIRT_TEST_WORKERS must be a whole number of processes, 1 or more, not '$workers'" >&2; exit 2 ;;
esac
if [ "$mode" = tests ] && [ "$workers" -gt 1 ]; then
  outside_aoti=1
  for path in "${suite_parts[@]}"; do
    case "$path" in tests|tests/aoti|tests/aoti/*) outside_aoti=0 ;; esac
  done
  if [ "$outside_aoti" = 1 ] && "$PY" -c "import xdist" 2>/dev/null; then
    test_workers=(-n "$workers" --dist loadfile -m "not reads_device_free_memory")
    alone_after=1
  elif [ "$outside_aoti" = 1 ]; then
    echo "AOTIRT_TEST_WORKERS=$workers: the tests run in one process ($PY has no pytest-xdist)"
  else
    echo "AOTIRT_TEST_WORKERS=$workers: the tests run in one process (tests/aoti runs in one)"
  fi
fi

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
"$PY" -c 'import sys, Cython, numpy; print("python", sys.version.split()[0], "cython", Cython.__version__, "numpy", numpy.__version__)'

# The zoo compiles (torch, in subprocesses) while aotirt builds: the two
# need nothing of each other. A model that fails to compile fails its tests
# (with its log), not this step. AOTIRT_ZOO_BUDGET=S stops compiling after S
# seconds (what is built stays cached).
# The tool copies the tree anew for every command: unchanged sources get back
# the times they first had here, so the build below redoes only what changed.
[ "$mode" = zoo ] || "$PY" scripts/stable-mtimes.py

# Headers carried in .deps/ (scripts/carry-deps.sh) for a runner without
# network, where the AOTIRT_* variables do not name others.
if [ -z "${AOTIRT_CUDNN_FRONTEND_INCLUDE:-}" ] && [ -d .deps/cudnn_frontend/include ]; then
  export AOTIRT_CUDNN_FRONTEND_INCLUDE=$PWD/.deps/cudnn_frontend/include
fi
if [ -z "${AOTIRT_CUTLASS_INCLUDE:-}" ] && [ -d .deps/cutlass/include ]; then
  export AOTIRT_CUTLASS_INCLUDE=$PWD/.deps/cutlass/include AOTIRT_CUTLASS_FMHA=$PWD/.deps/cutlass/fmha
fi

# The zoo is compiled only for what reads it: tests/aoti, and the zoo,
# decode, kernel_times and bench benchmarks (the last two time its MLP). A
# command for another part (tests/shims, say) leaves the machine's cores to
# the build.
needs_zoo=0
if [ "$mode" = all ] || [ "$mode" = zoo ]; then needs_zoo=1
elif [ "$mode" = tests ]; then
  for path in "${suite_parts[@]}"; do
    case "$path" in tests|tests/aoti|tests/aoti/*) needs_zoo=1 ;; esac
  done
else
  case " ${AOTIRT_BENCH_PARTS:-zoo} " in *" zoo "*|*" tuning "*|*" decode "*|*" kernel_times "*|*" bench "*) needs_zoo=1 ;; esac
fi
# AOTIRT_ZOO_AHEAD=1: a tests command that does not read the zoo starts
# compiling it anyway, detached (setsid), so that it outlives the command and
# the next command on this machine finds it built. A command that reads the
# zoo, and every benchmark command (so that no compile runs beside a timing),
# first waits for such a compile to end: its exit status file appears, or
# its process is gone (a crash) or a zombie.
AHEAD_PID=$KEPT/zoo-ahead.pid AHEAD_RC=$KEPT/zoo-ahead.rc
ahead_alive() {
  [ -f "$AHEAD_PID" ] && [ ! -f "$AHEAD_RC" ] || return 1
  local pid state
  pid=$(cat "$AHEAD_PID")
  command -v ps >/dev/null || { kill -0 "$pid" 2>/dev/null; return; }
  state=$(ps -o stat= -p "$pid" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "${state#Z}" = "$state" ]
}
wait_for_ahead_compile() {
  ahead_alive || return 0
  echo "waiting for the zoo compile started ahead (pid $(cat "$AHEAD_PID"), log $KEPT/zoo-ahead.log)"
  while ahead_alive; do sleep 2; done
  echo "the zoo compile started ahead ended: exit status $(cat "$AHEAD_RC" 2>/dev/null || echo unknown)"
  cp "$KEPT/zoo-ahead.log" "$LOGS/" 2>/dev/null
}
if [ "$mode" = zoo ]; then
  echo $$ >"$AHEAD_PID"
  rm -f "$AHEAD_RC"
  trap 'echo $? >"$AHEAD_RC"' EXIT
elif { [ "$needs_zoo" = 1 ] || [ "$mode" = bench ]; } && ahead_alive; then
  wait_for_ahead_compile
elif [ "$needs_zoo" = 0 ] && [ "$mode" = tests ] && [ "${AOTIRT_ZOO_AHEAD:-0}" = 1 ] && ! ahead_alive; then
  rm -f "$AHEAD_RC"
  setsid nohup bash "$PWD/scripts/gpu-check.sh" --zoo-only </dev/null >"$KEPT/zoo-ahead.log" 2>&1 &
  echo $! >"$AHEAD_PID"
  echo "zoo: compiling ahead, detached (log $KEPT/zoo-ahead.log)"
fi
zoo_start=$(date +%s)
if [ "$needs_zoo" = 1 ]; then
  "$PY" tests/aoti/build.py --device cuda --cache .cache/aoti --jobs "${AOTIRT_ZOO_JOBS:-8}" ${AOTIRT_ZOO_BUDGET:+--budget "$AOTIRT_ZOO_BUDGET"} \
    ${AOTIRT_ZOO_ONLY:+--only "$AOTIRT_ZOO_ONLY"} \
    >"$LOGS/zoo-build.log" 2>&1 &
  zoo_pid=$!
  # The constants-by-name tests' models (tests/aoti/build_weights.py), compiled
  # here beside the zoo rather than by the first test that needs them.
  ( "$PY" tests/aoti/build_weights.py --device cuda --cache .cache/aoti-weights &&
    "$PY" tests/aoti/build_weights.py --device cpu --cache .cache/aoti-weights ) >"$LOGS/weights-build.log" 2>&1 &
  weights_pid=$!
  # tests/aoti/test_aoti_models.py's CPU models too (not for a partial zoo):
  # the first test that needs them would compile them itself (62 s on the
  # H100 in session 22).
  cpu_pid=
  if [ -z "${AOTIRT_ZOO_ONLY:-}" ]; then
    "$PY" tests/aoti/build.py --device cpu --cache .cache/aoti --jobs 4 >"$LOGS/cpu-build.log" 2>&1 &
    cpu_pid=$!
  fi
fi

# setup.py's incremental build, in place (pyx/aotirt), found through
# PYTHONPATH: pip's editable install builds in a new temporary folder each
# time, so under it every command rebuilt libaotirt from scratch (227 s of a
# 335 s command on the H200, with every source's time restored above).
export PYTHONPATH="$PWD/pyx${PYTHONPATH:+:$PYTHONPATH}"
start=$(date +%s)
if [ "$mode" = zoo ]; then
  :  # the zoo needs torch, not aotirt's build
elif [ -n "${AOTIRT_PREBUILT:-}" ]; then
  # A build made elsewhere from this very tree (scripts/prebuilt.py), carried
  # here: unpack refuses one made from other sources or for another Python.
  if ! "$PY" scripts/prebuilt.py unpack "$AOTIRT_PREBUILT" 2>&1 | tee "$LOGS/build.log"; then
    echo "gpu-check: FAILED at build (the carried build in $AOTIRT_PREBUILT)"
    [ "$needs_zoo" = 1 ] && kill "$zoo_pid" "$weights_pid" $cpu_pid 2>/dev/null
    exit 1
  fi
  # The GPU machine has no cudnn-frontend (header-only): the host checks
  # compiled against it (tests/shims/test_cudnn_knobs.py) use the pack's.
  if [ -z "${AOTIRT_CUDNN_FRONTEND_INCLUDE:-}" ] && [ -f "$AOTIRT_PREBUILT/cudnn-frontend/include/cudnn_frontend.h" ]; then
    AOTIRT_CUDNN_FRONTEND_INCLUDE="$(cd "$AOTIRT_PREBUILT/cudnn-frontend/include" && pwd)"
    export AOTIRT_CUDNN_FRONTEND_INCLUDE
  fi
elif ! "$PY" setup.py build_ext --inplace >"$LOGS/build.log" 2>&1; then
  tail -n 60 "$LOGS/build.log"
  echo "gpu-check: FAILED at build"
  [ "$needs_zoo" = 1 ] && kill "$zoo_pid" "$weights_pid" $cpu_pid 2>/dev/null
  exit 1
else
  echo "built in $(( $(date +%s) - start )) s"
  grep -m1 "cuDNN" "$LOGS/build.log" || true
  grep -c "^\[[0-9]*/[0-9]*\]" "$LOGS/build.log" | sed 's/$/ build steps run/' || true
fi

if [ "$needs_zoo" = 1 ]; then
  wait "$zoo_pid"
  zoo_build_rc=$?
  wait "$weights_pid" || { echo "tests/aoti/build_weights.py failed:"; tail -n 20 "$LOGS/weights-build.log"; }
  if [ -n "$cpu_pid" ]; then
    wait "$cpu_pid" || { echo "tests/aoti/build.py --device cpu failed:"; tail -n 20 "$LOGS/cpu-build.log"; }
  fi
  tail -n 3 "$LOGS/zoo-build.log"
  echo "zoo compiled in $(( $(date +%s) - zoo_start )) s (build.py exit status $zoo_build_rc)"
fi
[ "$mode" = zoo ] && exit "$zoo_build_rc"

if [ "$mode" != bench ]; then
  # --durations: the slowest tests, for fitting the check into a short device budget.
  # faulthandler_timeout: a test still running after AOTIRT_TEST_STALL_S
  # seconds (default 150) prints every thread's stack, its test's name with
  # it, and goes on. A command the runner's limit ends says nothing else
  # about where it was (session 27: twice, the first command ended with 5
  # of its 3,982 tests unreported, after 400 s, where the same tests run
  # by plain pytest took 130 s).
  # AOTIRT_TEST_TRACE: each test's start and end as they happen (tests/conftest.py),
  # in the logs, which a runner hands back even from a command it cut off:
  # `python3 scripts/test-trace.py LOGS/tests-trace.log` names the tests that
  # never ended and the slowest that did.
  rm -f "$LOGS/tests-trace.log"
  run_pytest() {  # JUNIT_FILE PYTEST_ARGS...: the log goes to stdout
    local junit=$1
    shift
    AOTIRT_TEST_TRACE="$LOGS/tests-trace.log" AOTIRT_REQUIRE_GPU=1 AOTIRT_REPORT_NOW=1 "$PY" -X faulthandler -m pytest -q -rs -p no:cacheprovider \
      -o faulthandler_timeout="${AOTIRT_TEST_STALL_S:-150}" \
      --durations=30 --junitxml="$junit" "$@" "${test_paths[@]}" 2>&1
  }
  rm -f "$KEPT/pytest-alone.log"
  run_pytest "$KEPT/pytest.xml" "${test_workers[@]}" | tee "$KEPT/pytest.log"
  rc=${PIPESTATUS[0]}
  if [ "$alone_after" = 1 ]; then
    # Asked first, since waiting for a zoo compile started ahead costs
    # minutes of device time that a part without such tests need not spend
    # (session 28: tests/shims, none of them, waited 300 s for it). pytest
    # exits 5 when it selects none; any other failure to collect goes on to
    # the run, which reports it.
    "$PY" -m pytest --collect-only -q -p no:cacheprovider -m reads_device_free_memory \
      "${test_paths[@]}" >"$KEPT/pytest-alone-collect.log" 2>&1
    if [ $? = 5 ]; then
      echo "no test of this part reads the GPU's free memory: none runs alone, and a zoo compile started ahead goes on"
      echo "no tests ran (none here reads free GPU memory)" >"$KEPT/pytest-alone.log"
    else
      wait_for_ahead_compile
      echo "the tests that read the GPU's free memory, in one process:"
      run_pytest "$KEPT/pytest-alone.xml" -m reads_device_free_memory | tee "$KEPT/pytest-alone.log"
      alone_rc=${PIPESTATUS[0]}
      # 5: this part of the suite has none of them.
      [ "$alone_rc" = 5 ] || [ "$rc" != 0 ] || rc=$alone_rc
      cp "$KEPT/pytest-alone.xml" "$LOGS/" 2>/dev/null
    fi
    cp "$KEPT/pytest-alone.log" "$LOGS/" 2>/dev/null
  fi
  echo "$rc" >"$KEPT/pytest.rc"
  cp "$KEPT/pytest.log" "$KEPT/pytest.xml" "$LOGS/" 2>/dev/null
fi
summary_of() {  # a pytest log's last count line
  grep -E '^[0-9]+ (passed|failed|error|skipped|deselected)|^no tests ran|^=+ .*(passed|failed|error|deselected|no tests ran)' "$1" |
    tail -n 1 | tr -d '=' | xargs
}
if [ -f "$KEPT/pytest.rc" ] && [ -f "$KEPT/pytest.log" ]; then
  tests_rc=$(cat "$KEPT/pytest.rc")
  tests_line=$(summary_of "$KEPT/pytest.log")
  [ -f "$KEPT/pytest-alone.log" ] && tests_line="$tests_line; then alone: $(summary_of "$KEPT/pytest-alone.log")"
else
  tests_rc=1
  tests_line="not run (scripts/gpu-check.sh --tests-only first)"
fi

if [ "$mode" = tests ]; then
  zoo=$("$PY" bench/report.py /nonexistent --summary --junit "$KEPT/pytest.xml" | cut -d'|' -f1 | xargs)
  status=PASSED
  [ "$tests_rc" -eq 0 ] || status=FAILED
  echo "gpu-check (tests only${part}${AOTIRT_ZOO_ONLY:+, zoo models $AOTIRT_ZOO_ONLY}): $status | tests: $tests_line | $zoo"
  [ "$status" = PASSED ]
  exit
fi

# The C harness, the Python benchmarks (ops.py and zoo.py included) and BENCHMARKS.md from all of them.
# AOTIRT_BENCH_PARTS="ops zoo" runs some of the parts (the Makefile's
# BENCH_PARTS_ALL); AOTIRT_BENCH_KEEP=1 keeps the rows of the parts an
# earlier command ran on this machine, so a runner with a short limit per
# command can run them all over several and get one report.
bench_command="scripts/gpu-check.sh --bench-only"
[ -n "${AOTIRT_BENCH_KEEP:-}" ] && bench_command="$bench_command, its parts over several commands on one machine"
make -s run-bench PY="$PY" BENCH_COMMAND="$bench_command" ${AOTIRT_BENCH_PARTS:+"BENCH_PARTS=$AOTIRT_BENCH_PARTS"} \
  ${AOTIRT_BENCH_KEEP:+KEEP_RESULTS=1} 2>&1 | tee "$LOGS/bench.log"
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
zoo_ops=$("$PY" bench/report.py "$LOGS/bench.jsonl" --summary --junit "$KEPT/pytest.xml")

status=PASSED
[ "$tests_rc" -eq 0 ] && [ "$bench_rc" -eq 0 ] || status=FAILED
echo "gpu-check: $status | tests: $tests_line | dispatch: $dispatch | pipeline: $pipeline | import aotirt: ${import_us} us | $zoo_ops"
[ "$status" = PASSED ]
