"""scripts/gpu-check.sh's zoo steps and test processes, run on a copy of the
script in a small tree of its own with a stand-in for Python that records
what it is asked to run (no GPU, no torch): the zoo is compiled only by a
command that reads it, AOTIRT_ZOO_AHEAD=1 compiles it detached from a tests
command that does not, and a command that reads it, or times anything,
waits for that compile; AOTIRT_TEST_WORKERS spreads the tests outside
tests/aoti over several pytest processes, and then runs those that read the
GPU's free memory alone, after a zoo compile started ahead (and, where
there are none, neither runs them nor waits).

The stand-in's zoo compile holds until the test opens a gate file, so that
"still compiling" never depends on how fast the machine is."""

import os
import shutil
import stat
import subprocess
import time

import pytest

from support.helpers import REPO

# A shell script's process handling, which the sanitizers' LD_PRELOAD (make
# asan) does not check and, seen in CI's rehearsal, stalls: `make test` runs these.
pytestmark = pytest.mark.skipif(os.environ.get("AOTIRT_SANITIZED") == "1",
                                reason="a shell script's process handling: run by make test, not under the sanitizers")

STAND_IN = """#!/bin/bash
case "$*" in
  *tests/aoti/build.py*)
    for _ in $(seq 600); do [ -e "$GATE" ] && break; sleep 0.1; done ;;
  *-m\\ pytest*) echo "1 passed in 0.01s" ;;
esac
echo "$(date +%s.%N) $*" >> "$CALLS"
if [ -n "${AOTIRT_TEST_TRACE:-}" ]; then echo "$AOTIRT_TEST_TRACE" >> "$CALLS.trace"; fi
"""
# The script's settings that the suite's own run may have in its environment.
SETTINGS = ("AOTIRT_PREBUILT", "AOTIRT_ZOO_AHEAD", "AOTIRT_ZOO_BUDGET", "AOTIRT_ZOO_JOBS", "AOTIRT_ZOO_ONLY",
            "AOTIRT_TEST_WORKERS", "AOTIRT_TEST_STALL_S", "AOTIRT_TEST_TRACE",
            "AOTIRT_BENCH_PARTS",
            "AOTIRT_BENCH_KEEP", "AOTIRT_BENCH_QUICK")


def tree(root):
    (root / "scripts").mkdir()
    shutil.copy(os.path.join(REPO, "scripts", "gpu-check.sh"), root / "scripts")
    python = root / "python"
    python.write_text(STAND_IN)
    python.chmod(python.stat().st_mode | stat.S_IEXEC)


def environment(root, env):
    full = {k: v for k, v in os.environ.items() if k not in SETTINGS}
    full.update(PYTHON=str(root / "python"), CALLS=str(root / "calls"), GATE=str(root / "gate"),
                OUT=str(root / "out"), **env)
    return full


def gpu_check(root, *args, **env):
    return subprocess.run(["bash", str(root / "scripts" / "gpu-check.sh"), *args], cwd=root,
                          env=environment(root, env), capture_output=True, text=True, timeout=120)


def started(root, *args, **env):
    return subprocess.Popen(["bash", str(root / "scripts" / "gpu-check.sh"), *args], cwd=root,
                            env=environment(root, env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def ran(root, what):
    """When each call whose command holds `what` ran (pytest's --collect-only
    questions are counted by `collected` alone)."""
    if not (root / "calls").exists():
        return []
    lines = [line.split(" ", 1) for line in (root / "calls").read_text().splitlines()]
    return [float(when) for when, command in lines if what in command and "--collect-only" not in command]


def collected(root):
    return [line for line in (root / "calls").read_text().splitlines() if "--collect-only" in line]


def ahead_ended(root):
    deadline = time.time() + 60
    while time.time() < deadline and not (root / "bench/build/zoo-ahead.rc").exists():
        time.sleep(0.1)
    return (root / "bench/build/zoo-ahead.rc").read_text().strip()


def test_only_a_command_that_reads_the_zoo_compiles_it(tmp_path):
    tree(tmp_path)
    (tmp_path / "gate").touch()
    proc = gpu_check(tmp_path, "--tests-only", "tests/shims")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not ran(tmp_path, "tests/aoti/build.py --device cuda")
    proc = gpu_check(tmp_path, "--tests-only", "./tests/aoti/test_aoti_models.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(ran(tmp_path, "tests/aoti/build.py --device cuda")) == 1
    # test_aoti_models.py's CPU models beside it, waited for before the tests.
    [cpu_build] = ran(tmp_path, "tests/aoti/build.py --device cpu")
    assert cpu_build < ran(tmp_path, "-m pytest")[-1]


def test_a_zoo_compiled_ahead_is_waited_for_and_the_zoo_alone_does_not_build(tmp_path):
    tree(tmp_path)
    proc = gpu_check(tmp_path, "--tests-only", "tests/shims", AOTIRT_ZOO_AHEAD="1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "compiling ahead, detached" in proc.stdout
    second = started(tmp_path, "--tests-only", "tests/aoti")
    time.sleep(1)
    assert second.poll() is None  # waiting: the ahead compile holds at the gate
    (tmp_path / "gate").touch()
    out, _ = second.communicate(timeout=120)
    assert second.returncode == 0, out
    assert "waiting for the zoo compile started ahead" in out and "ended: exit status 0" in out
    ahead_end = ran(tmp_path, "tests/aoti/build.py --device cuda")[0]
    assert len(ran(tmp_path, "-m pytest")) == 2 and ahead_end < ran(tmp_path, "-m pytest")[1]
    # --zoo-only ran no build and restored no source times (the commands
    # beside it do both).
    assert len(ran(tmp_path, "setup.py")) == 2 and len(ran(tmp_path, "stable-mtimes.py")) == 2


def test_an_ahead_compile_already_running_is_not_started_twice(tmp_path):
    tree(tmp_path)
    for _ in range(2):
        proc = gpu_check(tmp_path, "--tests-only", "tests/shims", AOTIRT_ZOO_AHEAD="1")
        assert proc.returncode == 0, proc.stdout + proc.stderr
    (tmp_path / "gate").touch()
    assert ahead_ended(tmp_path) == "0"
    assert len(ran(tmp_path, "tests/aoti/build.py --device cuda")) == 1


def test_a_benchmark_command_waits_for_the_compile_and_starts_none(tmp_path):
    tree(tmp_path)
    assert gpu_check(tmp_path, "--tests-only", "tests/shims", AOTIRT_ZOO_AHEAD="1").returncode == 0
    bench = started(tmp_path, "--bench-only", AOTIRT_ZOO_AHEAD="1", AOTIRT_BENCH_PARTS="ops")
    time.sleep(1)
    assert bench.poll() is None
    (tmp_path / "gate").touch()
    out, _ = bench.communicate(timeout=120)
    assert "waiting for the zoo compile started ahead" in out, out
    assert len(ran(tmp_path, "tests/aoti/build.py --device cuda")) == 1  # the ahead one; "ops" reads no zoo


def test_a_partial_zoo_compiles_those_models_alone_and_says_so(tmp_path):
    tree(tmp_path)
    (tmp_path / "gate").touch()
    proc = gpu_check(tmp_path, "--tests-only", "tests/aoti/test_aoti_zoo_gpu.py", AOTIRT_ZOO_ONLY="int4_decode_bf16")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    builds = [line for line in (tmp_path / "calls").read_text().splitlines() if "tests/aoti/build.py" in line]
    # The zoo's models named, and no CPU models (test_aoti_models.py's are not part of a partial check).
    assert len(builds) == 1 and builds[0].endswith("--only int4_decode_bf16"), builds
    assert "zoo models int4_decode_bf16): PASSED" in proc.stdout.splitlines()[-1], proc.stdout


def pytest_calls(root):
    return [line for line in (root / "calls").read_text().splitlines()
            if "-m pytest" in line and "--collect-only" not in line]


def test_workers_spread_the_tests_over_processes_a_file_to_each_and_the_free_memory_readers_run_alone(tmp_path):
    tree(tmp_path)
    proc = gpu_check(tmp_path, "--tests-only", "tests/shims", "./tests/runtime/test_graphs.py",
                     AOTIRT_TEST_WORKERS="4")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    workers, alone = pytest_calls(tmp_path)
    paths = " tests/shims ./tests/runtime/test_graphs.py"
    assert workers.endswith(" -n 4 --dist loadfile -m not reads_device_free_memory" + paths), workers
    assert alone.endswith(" -m reads_device_free_memory" + paths) and " -n " not in alone, alone
    assert "tests: 1 passed in 0.01s; then alone: 1 passed in 0.01s" in proc.stdout.splitlines()[-1], proc.stdout


def test_a_stalled_test_prints_its_stack_after_the_stall_time(tmp_path):
    tree(tmp_path)
    (tmp_path / "gate").touch()
    assert gpu_check(tmp_path, "--tests-only", "tests/shims").returncode == 0
    assert gpu_check(tmp_path, "--tests-only", "tests/shims", AOTIRT_TEST_STALL_S="40").returncode == 0
    default, chosen = pytest_calls(tmp_path)
    assert " -o faulthandler_timeout=150 " in default, default
    assert " -o faulthandler_timeout=40 " in chosen, chosen
    # Each test's start and end traced into the logs, which come back from
    # a command that was cut off.
    assert (tmp_path / "calls.trace").read_text().splitlines() == [str(tmp_path / "out" / "tests-trace.log")] * 2


def test_the_free_memory_readers_wait_for_a_zoo_compile_started_ahead(tmp_path):
    tree(tmp_path)
    check = started(tmp_path, "--tests-only", "tests/runtime", AOTIRT_ZOO_AHEAD="1", AOTIRT_TEST_WORKERS="2")
    deadline = time.time() + 60
    while time.time() < deadline and not ran(tmp_path, "-m pytest"):
        time.sleep(0.1)
    time.sleep(1)
    assert check.poll() is None  # the workers' run is done; the alone run waits at the gate
    assert len(ran(tmp_path, "-m pytest")) == 1
    (tmp_path / "gate").touch()
    out, _ = check.communicate(timeout=120)
    assert check.returncode == 0, out
    ahead_end = ran(tmp_path, "tests/aoti/build.py --device cuda")[0]
    workers_run, alone_run = ran(tmp_path, "-m pytest")
    assert workers_run < ahead_end < alone_run, out
    [asked] = collected(tmp_path)
    assert asked.endswith(" -m reads_device_free_memory tests/runtime"), asked


def answer_first(root, case):
    """Makes the tree's stand-in for Python answer `case` (a shell case
    branch) before its ordinary answer to a pytest call."""
    pytest_case = '*-m\\ pytest*) echo "1 passed in 0.01s" ;;'
    assert pytest_case in STAND_IN
    (root / "python").write_text(STAND_IN.replace(pytest_case, case + "\n  " + pytest_case))


def test_a_part_with_no_free_memory_reader_does_not_wait_for_a_zoo_compile_started_ahead(tmp_path):
    tree(tmp_path)
    answer_first(tmp_path, '*--collect-only*) echo "$(date +%s.%N) $*" >> "$CALLS"; exit 5 ;;')
    # The gate stays shut: the compile started ahead is still running when
    # the command ends.
    proc = gpu_check(tmp_path, "--tests-only", "tests/shims", AOTIRT_ZOO_AHEAD="1", AOTIRT_TEST_WORKERS="4")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "waiting for the zoo compile" not in proc.stdout and not (tmp_path / "bench/build/zoo-ahead.rc").exists()
    assert len(pytest_calls(tmp_path)) == 1 and len(collected(tmp_path)) == 1
    last = proc.stdout.splitlines()[-1]
    assert ": PASSED" in last and "then alone: no tests ran (none here reads free GPU memory)" in last, last
    (tmp_path / "gate").touch()
    assert ahead_ended(tmp_path) == "0"


def test_an_alone_run_with_none_to_run_passes_and_a_failed_one_fails(tmp_path):
    tree(tmp_path)
    answer_first(tmp_path, '*-m\\ reads_device_free_memory*) echo "0 passed"; '
                           'echo "$(date +%s.%N) $*" >> "$CALLS"; exit "$ALONE_RC" ;;')
    proc = gpu_check(tmp_path, "--tests-only", "tests/shims", AOTIRT_TEST_WORKERS="2", ALONE_RC="5")
    assert proc.returncode == 0 and ": PASSED" in proc.stdout.splitlines()[-1], proc.stdout + proc.stderr
    proc = gpu_check(tmp_path, "--tests-only", "tests/shims", AOTIRT_TEST_WORKERS="2", ALONE_RC="1")
    assert proc.returncode != 0 and ": FAILED" in proc.stdout.splitlines()[-1], proc.stdout + proc.stderr


@pytest.mark.parametrize("paths", [["tests/shims", "tests/aoti"], ["tests/aoti/test_aoti_models.py"], ["tests"]])
def test_workers_are_refused_where_tests_read_the_processes_imports(tmp_path, paths):
    tree(tmp_path)
    (tmp_path / "gate").touch()
    proc = gpu_check(tmp_path, "--tests-only", *paths, AOTIRT_TEST_WORKERS="4")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "the tests run in one process (tests/aoti runs in one)" in proc.stdout
    [call] = pytest_calls(tmp_path)
    assert " -n " not in call and "--dist" not in call and "reads_device_free_memory" not in call, call


@pytest.mark.parametrize("workers", ["0", "four", "-2", "2x"])
def test_a_bad_worker_count_is_refused_before_anything_runs(tmp_path, workers):
    tree(tmp_path)
    proc = gpu_check(tmp_path, "--tests-only", "tests/shims", AOTIRT_TEST_WORKERS=workers)
    assert proc.returncode == 2 and "AOTIRT_TEST_WORKERS must be a whole number" in proc.stderr, proc.stderr
    assert not (tmp_path / "calls").exists()
