"""bench/kernel_times.py and bench/report.py on recorded rows: what the
benchmark report concludes from a run must follow from its figures."""

import json
import os
import subprocess
import sys

import pytest

from support.helpers import REPO

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


def op_row(shape, ratio, target=1.1, op="conv2d", dtype="float32", **extra):
    row = {"case": "op", "op": op, "model": "resnet18", "shape": shape, "dtype": dtype, "layout": "channels_last",
           "target": target, "aotirt_shim": "convolution", "torch_backend": "cudnn", "note": ""}
    if ratio is None:
        row.update(aotirt_us=None, torch_us=10.0, ratio=None, note="aotirt: libaotirt.so has no aoti_torch_cuda_x")
    else:
        row.update(aotirt_us=10.0 * ratio, torch_us=10.0, ratio=ratio)
    row.update(extra)
    return row


def test_report_counts_op_rows_against_each_rows_target(tmp_path):
    rows = [op_row("x 2x64x56x56 w 64x64x3x3", 1.05),                       # within 1.1x
            op_row("x 2x3x224x224 w 64x3x7x7", 1.2),                        # over
            op_row("B2 H8 L128 E64", 1.0, target=1.0, op="sdpa", dtype="bfloat16", aotirt_shim="cudnn"),
            op_row("B2 H8 L4096 E64", 1.05, target=1.0, op="sdpa", dtype="float16", aotirt_shim="flash"),
            op_row("x 2x512x7x7 w 512x512x3x3", None)]                      # failed: counts as not within
    text = render(rows, tmp_path)
    for expected in ["## ops",
                     "| conv2d | resnet18 | x 2x64x56x56 w 64x64x3x3 | float32 | convolution | cudnn | 10.50 | 10.00 "
                     "| 1.05 | 1.1x | ok |",
                     "| 1.20 | 1.1x | **over** |",
                     "| bfloat16 | cudnn | cudnn | 10.00 | 10.00 | 1.00 | 1.0x | ok |",
                     "| 1.05 | 1.0x | **over** |",
                     "| – | 10.00 | – | 1.1x | **failed** | aotirt: libaotirt.so has no aoti_torch_cuda_x |",
                     "2/5 shapes within target.",
                     "Furthest from its target: conv2d x 2x3x224x224 w 64x3x7x7 float32, 1.20x against 1.1x."]:
        assert expected in text, expected
    import report
    assert report.ops_within_target(rows) == (2, 5)


def test_an_over_row_says_in_how_many_rounds_it_was_over(tmp_path):
    def attention(seq, ratio, **rounds):
        return op_row(f"B2 H8 L{seq} E64", ratio, target=1.0, op="sdpa", dtype="float16", **rounds)

    rows = [attention(128, 1.01, round_ratios=[1.01, 0.99, 1.02]),
            attention(512, 1.03, round_ratios=[1.03, 1.02, 1.04]),
            attention(1024, 0.99, round_ratios=[1.01, 0.99, 0.98]),
            attention(4096, 1.02)]   # an older row: no rounds
    text = render(rows, tmp_path)
    assert "| 1.01 | 1.0x | **over** (2 of 3 rounds) |" in text
    assert "| 1.03 | 1.0x | **over** (3 of 3 rounds) |" in text
    assert "| 0.99 | 1.0x | ok |" in text
    assert "| 1.02 | 1.0x | **over** |" in text
    assert "1/4 shapes within target." in text
    assert "Of the 2 over target, 1 were within it in at least one round" in text


def test_report_says_why_ops_were_not_timed(tmp_path):
    rows = [{"case": "op", "op": "all", "note": "no Python with torch (set AOTIRT_TORCH_PYTHON)"}]
    text = render(rows, tmp_path)
    assert "0/0 shapes within target." in text
    assert "Not timed: no Python with torch (set AOTIRT_TORCH_PYTHON)" in text


def zoo_row(model, runner, us, gpu, host=None, note=""):
    return {"case": "zoo", "model": model, "runner": runner, "us_per_call": us, "host_us_per_call": host or us,
            "gpu_us_per_call": gpu, "note": note}


def test_report_compares_each_zoo_model_with_torchs_faster_runner(tmp_path):
    rows = [zoo_row("resnet18", "aotirt", 300.0, 280.0),
            zoo_row("resnet18", "aotirt graph replay", 290.0, 279.0),
            zoo_row("resnet18", "torch runner", 400.0, 300.0),
            zoo_row("resnet18", "torch runner (run_single_threaded)", 350.0, 290.0),
            zoo_row("llama_bf16", "aotirt", 100.0, 90.0),
            zoo_row("llama_bf16", "torch runner", 80.0, 85.0),
            zoo_row("llama_bf16", "torch runner (run_single_threaded)", None, None, note="failed: boom"),
            zoo_row("sdpa_f32", "aotirt", None, None, note="failed: aotirt: AotiError: needs aoti_torch_cuda_x"),
            zoo_row("sdpa_f32", "torch runner", 50.0, 40.0)]
    text = render(rows, tmp_path)
    assert "| resnet18 | aotirt | 300.00 | 300.00 | 280.00 |  |" in text
    assert "| llama_bf16 | torch runner (run_single_threaded) | – | – | – | failed: boom |" in text
    # resnet18: GPU 280 against min(300, 290), per call 300 against min(400, 350).
    assert ("resnet18: aotirt / torch's runner (the faster of its two modes): GPU time 0.97 (target: at most 1), "
            "per call 0.86 (target: at most 1): met.") in text
    assert "llama_bf16: aotirt / torch's runner (the faster of its two modes): GPU time 1.06" in text
    assert "per call 1.25 (target: at most 1): **missed**." in text
    assert "sdpa_f32: not compared (a runner has no figure)." in text
    assert "1/3 models meet both targets." in text


def test_a_missed_zoo_gpu_target_says_in_how_many_rounds_aotirt_was_over(tmp_path):
    rows = [dict(zoo_row("resnet18", "aotirt", 300.0, 306.0), gpu_round_ratios=[1.03, 0.99, 1.02]),
            zoo_row("resnet18", "torch runner (run_single_threaded)", 350.0, 300.0),
            dict(zoo_row("bert_f32", "aotirt", 100.0, 90.0), gpu_round_ratios=[0.9, 0.91, 0.89]),
            zoo_row("bert_f32", "torch runner (run_single_threaded)", 150.0, 100.0)]
    text = render(rows, tmp_path)
    assert ("resnet18: aotirt / torch's runner (the faster of its two modes): GPU time 1.02 (target: at most 1), "
            "per call 0.86 (target: at most 1): **missed** (GPU time over the single-threaded runner's in 2 of 3 "
            "rounds).") in text
    assert "bert_f32: aotirt / torch's runner (the faster of its two modes): GPU time 0.90" in text
    assert "in 0 of 3 rounds" not in text


def test_report_header_says_where_the_workers_ran(tmp_path):
    pinned = {"case": "affinity", "device": 0, "pinned": True, "cpus": "0-7", "allowed": "0-15",
              "note": "CPUs 0-7 of 0-15, those local to the GPU (0000:3b:00.0, NUMA node 0)"}
    text = render([pinned, dict(pinned), zoo_row("resnet18", "aotirt", 300.0, 280.0)], tmp_path)
    assert ("Worker processes (ops, fallback ops, zoo, decode): CPUs 0-7 of 0-15, those local to the GPU "
            "(0000:3b:00.0, NUMA node 0).") in text.splitlines()
    assert "Worker processes" not in render([zoo_row("resnet18", "aotirt", 300.0, 280.0)], tmp_path)


def test_summary_counts_the_zoo_tests_from_junit_and_the_ops_rows(tmp_path):
    junit = tmp_path / "pytest.xml"
    junit.write_text(
        '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">'
        '<testcase classname="tests.test_aoti_zoo_gpu" name="test_zoo_model_matches_torch[resnet18]" time="1"/>'
        '<testcase classname="tests.test_aoti_zoo_gpu" name="test_zoo_model_matches_torch[sdpa_f32]" time="1">'
        '<failure message="aotirt cannot load sdpa_f32">...</failure></testcase>'
        '<testcase classname="tests.test_aoti_zoo_gpu" name="test_zoo_model_matches_torch[gemma_f32]" time="0">'
        '<skipped message="needs a CUDA GPU"/></testcase>'
        '<testcase classname="tests.test_aoti_zoo_gpu" '
        'name="test_zoo_runs_and_replays_wait_only_in_the_copies[resnet18]" time="1"/>'
        '</testsuite></testsuites>')
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in [op_row("a", 1.0), op_row("b", 2.0)]))

    def summary(*extra):
        proc = subprocess.run([sys.executable, os.path.join(REPO, "bench", "report.py"), str(results), "--summary",
                               *extra], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()
    assert summary("--junit", str(junit)) == "zoo: 1/3 ran | ops: 1/2 within target"
    assert summary() == "zoo: tests not run | ops: 1/2 within target"
    results.unlink()
    assert summary("--junit", str(junit)) == "zoo: 1/3 ran | ops: 0/0 within target"


def test_report_says_why_the_zoo_was_not_timed(tmp_path):
    rows = [{"case": "zoo", "model": "all", "runner": "aotirt", "us_per_call": None,
             "note": "the aotirt worker died during ping (exit status 1)"}]
    text = render(rows, tmp_path)
    assert "0/0 models meet both targets." in text
    assert "Not timed: the aotirt worker died during ping (exit status 1)" in text


def model_row(model, **check):
    return {"case": "zoo_model", "model": model, **check}


def test_the_zoo_table_has_a_line_per_model_with_its_check_and_times(tmp_path):
    rows = [model_row("resnet18", ran=True, missing=[], max_rel_error=2.5e-4, bound=1e-3, within=True),
            zoo_row("resnet18", "aotirt", 300.0, 280.0),
            zoo_row("resnet18", "aotirt graph replay", 290.0, 279.0),
            zoo_row("resnet18", "torch runner", 400.0, 300.0),
            zoo_row("resnet18", "torch runner (run_single_threaded)", 350.0, 290.0),
            model_row("int4_linear_bf16", ran=False, missing=["aoti_torch_cuda__weight_int4pack_mm"]),
            zoo_row("int4_linear_bf16", "aotirt", None, None, note="missing: aoti_torch_cuda__weight_int4pack_mm"),
            zoo_row("int4_linear_bf16", "torch runner", 20.0, 15.0),
            model_row("gemma_decode_f32", ran=True, missing=[], max_rel_error=0.0, bound=0.0, within=True),
            zoo_row("gemma_decode_f32", "aotirt", 90.0, 80.0),
            model_row("sdpa_f32", ran=True, missing=[], max_rel_error=5e-3, bound=1e-3, within=False),
            zoo_row("sdpa_f32", "aotirt", 50.0, 40.0),
            model_row("swin_t", ran=False, missing=[], note="not compiled (no swin_t)"),
            model_row("cond_branches", ran=True, missing=[], modes=["eager"], max_rel_error=1e-7, bound=1e-3,
                      within=True),
            zoo_row("cond_branches", "aotirt", 30.0, 10.0),
            zoo_row("cond_branches", "aotirt graph replay", None, None, note="capture failed: AotiError: item_bool")]
    text = render(rows, tmp_path)
    assert ("| resnet18 | yes | 2.5e-04 | 300.00 | 290.00 | 350.00 | 280.00 | 290.00 |  |") in text
    assert ("| int4_linear_bf16 | missing: aoti_torch_cuda__weight_int4pack_mm | – | – | – | 20.00 | – | 15.00 "
            "|  |") in text
    assert "| gemma_decode_f32 | yes | 0 (exact) | 90.00 | – | – | 80.00 | – |  |" in text
    assert "| sdpa_f32 | yes | **5.0e-03** (bound 1e-03) |" in text
    assert "| swin_t | no | – | – | – | – | – | – | not compiled (no swin_t) |" in text
    assert ("| cond_branches | yes | 1.0e-07 | 30.00 | – | – | 10.00 | – | no graph: its capture was refused "
            "(per-runner rows say why) |") in text
    assert ("4/6 models ran, 3 within their bounds. Missing functions: int4_linear_bf16 "
            "(aoti_torch_cuda__weight_int4pack_mm).") in text
    # The per-runner detail stays below.
    assert "| resnet18 | torch runner (run_single_threaded) | 350.00 | 350.00 | 290.00 |  |" in text


def test_summary_names_the_zoo_models_with_missing_functions(tmp_path):
    results = tmp_path / "results.jsonl"
    rows = [model_row("int4_linear_bf16", ran=False, missing=["aoti_torch_cuda__weight_int4pack_mm"]),
            model_row("resnet18", ran=True, missing=[], max_rel_error=1e-4, bound=1e-3, within=True)]
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = subprocess.run([sys.executable, os.path.join(REPO, "bench", "report.py"), str(results), "--summary"],
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == ("zoo: tests not run | ops: 0/0 within target | "
                                   "zoo missing functions: int4_linear_bf16")


def test_a_zoo_check_keeps_the_worst_of_eager_and_replay():
    import importlib.util

    # bench/zoo.py by its path: tests/aoti/zoo.py (the models, with torch) has the same module name.
    spec = importlib.util.spec_from_file_location("bench_zoo", os.path.join(REPO, "bench", "zoo.py"))
    zoo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(zoo)
    row = zoo.check_row({"eager": (1e-4, 1e-3), "graph": (2e-4, 1e-3)})
    assert row == {"ran": True, "missing": [], "modes": ["eager", "graph"], "max_rel_error": 2e-4, "bound": 1e-3,
                   "within": True}
    row = zoo.check_row({"eager": (0.5, 0.0), "graph": (1e-2, 2e-2)})
    assert (row["max_rel_error"], row["bound"], row["within"]) == (0.5, 0.0, False)
    assert zoo.check_row({"eager": (float("inf"), 1e-3)})["max_rel_error"] is None
