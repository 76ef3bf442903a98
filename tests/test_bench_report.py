"""bench/kernel_times.py and bench/report.py on recorded rows: what the
benchmark report concludes from a run must follow from its figures."""

import json
import os
import subprocess
import sys

import pytest

from helpers import REPO

sys.path.insert(0, os.path.join(REPO, "bench"))
kernel_times = pytest.importorskip("kernel_times")


def test_kernel_times_takes_medians_per_position_of_the_last_steps(capsys):
    # Three setup launches, then STEPS steps of two kernels; the warm-up
    # steps are slow and must not count.
    steps = kernel_times.STEPS
    launches = [("encoder", 9000.0)] * 3
    for step in range(steps):
        slow = step < kernel_times.WARMUP_STEPS
        launches += [("a", 5000.0 if slow else 1000.0 + step), ("b", 9000.0 if slow else 2000.0)]
    kernel_times.report(launches, 2, "kernel_times", None)
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    steady = range(kernel_times.WARMUP_STEPS, steps)
    median_a = sorted(1000.0 + s for s in steady)[len(steady) // 2 - 1: len(steady) // 2 + 1]
    assert rows[0] == {"case": "kernel_times", "position": 0, "kernel": "a",
                       "gpu_us": round(sum(median_a) / 2 / 1e3, 3)}
    assert rows[1]["kernel"] == "b" and rows[1]["gpu_us"] == 2.0
    assert rows[2]["position"] == "sum" and rows[2]["kernels"] == 2
    assert rows[2]["gpu_us"] == pytest.approx(rows[0]["gpu_us"] + rows[1]["gpu_us"], abs=1e-3)


def test_kernel_times_notes_too_few_launches(capsys):
    kernel_times.report([("a", 1.0)] * 5, 7, "kernel_times", None)
    (row,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert row["case"] == "kernel_times" and "fewer than the steps launch" in row["note"]


def render(rows, tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = subprocess.run([sys.executable, os.path.join(REPO, "bench", "report.py"), str(path),
                           "--command", "make bench"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_report_compares_a_graph_step_with_its_kernels_and_runners_with_the_floor(tmp_path):
    rows = [
        {"case": "pipeline", "api": "c", "mode": "shared", "steps": 128, "tokens_per_s": 25000.0,
         "us_per_token": 40.0},
        {"case": "pipeline", "api": "c", "mode": "sync_each", "steps": 128, "tokens_per_s": 20000.0,
         "us_per_token": 50.0},
        {"case": "pipeline", "api": "c", "mode": "graph", "steps": 128, "tokens_per_s": 40000.0,
         "us_per_token": 25.0},
        {"case": "kernel_times", "position": 0, "kernel": "k0", "gpu_us": 8.0},
        {"case": "kernel_times", "position": 1, "kernel": "k1", "gpu_us": 12.0},
        {"case": "kernel_times", "position": "sum", "kernels": 2, "gpu_us": 20.0},
        {"case": "aoti_runner", "runner": "aotirt", "model": "mlp", "us_per_call": 15.0, "host_us_per_call": 6.0},
        {"case": "aoti_runner", "runner": "torch runner", "model": "mlp", "us_per_call": 30.0,
         "host_us_per_call": 24.0},
        {"case": "mlp_kernel_times", "position": "sum", "kernels": 3, "gpu_us": 12.0},
    ]
    text = render(rows, tmp_path)
    assert "| c | shared | 128 | 25000 | 1.25x |" in text
    assert "c: graph / shared, tokens per s: 1.60x (25.00 against 40.00 us per step)." in text
    assert "| | sum of 2 kernels | 20.00 |" in text
    assert "over the sum of its kernels' GPU times: 1.25x (25.00 against 20.00 us" in text
    assert "aotirt / torch runner: 0.50 (target for torch's runner: at most 0.5); host cost alone: 0.25." in text
    assert "| aotirt | mlp | 15.00 | 6.00 |  |" in text
    assert "The MLP's own GPU time per run: 12.00 us, the sum of its 3 kernels" in text
    assert "- aotirt: 1.25x that." in text and "- torch runner: 2.50x that." in text


def test_report_says_when_kernel_times_were_not_measured(tmp_path):
    rows = [{"case": "pipeline", "api": "c", "mode": "graph", "steps": 128, "tokens_per_s": 1.0,
             "us_per_token": 1.0},
            {"case": "kernel_times", "note": "ncu not found"}]
    assert "Kernel times: not measured (ncu not found)." in render(rows, tmp_path)


def test_kernel_times_refuses_a_miscounted_step(capsys):
    # Steps of three kernels read as steps of two: positions mix kernels.
    launches = [(name, 1000.0) for _ in range(kernel_times.STEPS * 2) for name in "abc"]
    kernel_times.report(launches, 2, "kernel_times", None)
    (row,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert "miscounted" in row["note"]


def test_report_sets_no_runner_target_against_eager_torch_and_says_why_a_floor_is_missing(tmp_path):
    rows = [{"case": "aoti_runner", "runner": "aotirt", "model": "mlp", "us_per_call": 15.0},
            {"case": "aoti_runner", "runner": "torch eager (same module)", "model": "mlp", "us_per_call": 60.0},
            {"case": "mlp_kernel_times", "note": "ncu failed: no permission"}]
    text = render(rows, tmp_path)
    assert "aotirt / torch eager (same module): 0.25." in text
    assert "The MLP's own GPU time: not measured (ncu failed: no permission)." in text
