"""The C benchmark harness builds and runs its CPU pass anywhere (CI too)."""

import json
import os
import subprocess

from helpers import REPO


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
