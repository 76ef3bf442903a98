"""The C benchmark harness builds and runs its CPU pass anywhere (CI too)."""

import json
import os
import subprocess

from support.helpers import REPO


def test_bench_cpu_pass_prints_json():
    # Without preloads (make asan's sanitizer runtimes): nvcc is not built for them.
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    proc = subprocess.run(["make", "-s", "run-bench-cpu"], cwd=REPO, capture_output=True, text=True,
                          timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    dispatch = [r for r in rows if r["case"] == "dispatch"]
    assert dispatch and dispatch[0]["device"] == "cpu" and dispatch[0]["api"] == "c"
    assert 0 < dispatch[0]["us_per_call"] < 1000


def _harness(*args):
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    subprocess.run(["make", "-s", "bench/build/aotirt_bench"], cwd=REPO, check=True, capture_output=True,
                   timeout=600, env=env)
    return subprocess.run([os.path.join(REPO, "bench", "build", "aotirt_bench"),
                           "--models", os.path.join(REPO, "pyx", "aotirt", "models"), *args],
                          capture_output=True, text=True, timeout=600, env=env)


def test_bench_cases_and_reps_select_what_runs():
    # What bench.py asks between its own repetitions: one C dispatch figure.
    proc = _harness("--device", "cpu", "--cases", "dispatch", "--reps", "1", "--quick")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(r["case"], r["api"]) for r in rows] == [("dispatch", "c"), ("dispatch", "c_host")]
    # A case list without dispatch runs no CPU case at all.
    proc = _harness("--device", "cpu", "--cases", "copy")
    assert proc.returncode == 0 and proc.stdout == "", proc.stdout + proc.stderr


def test_bench_bad_arguments_print_usage():
    for args in (["--reps", "0"], ["--device", "tpu"], ["--cases"]):
        proc = _harness(*args)
        assert proc.returncode == 2 and "usage: aotirt_bench" in proc.stderr, (args, proc.stderr)
