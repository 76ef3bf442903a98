"""bench/model_trace.py's arithmetic and its tuned sides' set-up (the
traces themselves need the GPU, torch's profiler and the compiled zoo)."""

import os
import sys

import pytest

from support.helpers import REPO, usage_error

sys.path.insert(0, os.path.join(REPO, "bench"))
trace = pytest.importorskip("model_trace")


def activities(*spans):
    """A trace of (name, start us, duration us) activities."""
    return {"activities": [{"ts": ts, "dur": dur, "name": name, "cat": "kernel"} for name, ts, dur in spans]}


def test_differences_name_their_columns_and_put_the_largest_first(monkeypatch):
    monkeypatch.setattr(trace, "CALLS", 1)
    tuned = activities(("conv_a", 0, 5), ("conv_b", 10, 2), ("add", 20, 1))
    untuned = activities(("conv_a", 0, 6), ("conv_c", 10, 4), ("add", 20, 1))
    rows = trace.differences(tuned, untuned, labels=("recorded", "untuned"))
    assert [r["name"] for r in rows[:3]] == ["conv_c", "conv_b", "conv_a"]
    assert rows[0] == {"name": "conv_c", "recorded_count": 0, "untuned_count": 1, "recorded_us": 0.0,
                       "untuned_us": 4.0, "diff_us": -4.0}
    assert rows[2]["diff_us"] == -1.0
    # The default labels keep the runner comparison's columns.
    assert "torch_us" in trace.differences(tuned, untuned)[0]


def test_the_idle_time_after_each_kernel_is_told_apart(monkeypatch):
    monkeypatch.setattr(trace, "CALLS", 1)
    gaps = trace.gaps_by_name(activities(("conv", 0, 5), ("add", 8, 1), ("conv", 9, 5), ("add", 14, 1)))
    assert gaps == {"after conv": (2, 3.0), "after add": (1, 0.0)}


def test_only_the_tuned_sides_tune_and_they_share_one_choices_folder(monkeypatch):
    monkeypatch.setenv("AOTIRT_CUDNN_TUNE", "wide")
    monkeypatch.setenv("AOTIRT_CACHE", "/somewhere/else")
    untuned = trace.side_env(trace.UNTUNED, "1", "/tmp/choices")
    assert "AOTIRT_CUDNN_TUNE" not in untuned and untuned["AOTIRT_CACHE"] == "/somewhere/else"
    assert "AOTIRT_CUDNN_TUNE" not in trace.side_env("torch", "1", "/tmp/choices")
    for side in (trace.MEASURING, trace.RECORDED):
        env = trace.side_env(side, "1", "/tmp/choices")
        assert (env["AOTIRT_CUDNN_TUNE"], env["AOTIRT_CACHE"], env["AOTIRT_LOG"]) == ("1", "/tmp/choices", "debug")
        assert env["PYTHONPATH"].split(os.pathsep)[0] == os.path.join(trace.REPO, "pyx")


def test_the_debug_logs_choices_are_read_and_other_lines_left(monkeypatch):
    log = "\n".join([
        "aotirt: aoti_torch_cuda_convolution: cuDNN plan eng0 (workspace 0 bytes) for a conv",
        "aotirt: aoti_torch_cuda_convolution: cuDNN tuning measured 9 engines for a 2x3x8x8 conv: kept eng0 "
        "at 4.1 us a run (the heuristics' eng0 at 4.1 us)",
        "aotirt: aoti_torch_cuda_convolution: cuDNN tuning measured 4 engines for a 2x8x8x8 conv: chose eng7_k13=2 "
        "at 3.0 us a run (the heuristics' eng0 at 3.5 us)",
    ])
    choices = trace.choices_of(log)
    assert len(choices) == 2
    assert choices[0].startswith("9 engines for a 2x3x8x8 conv: kept eng0")
    assert ": chose eng7_k13=2" in choices[1]


def test_recorded_choices_count_the_tuning_files_lines(tmp_path):
    assert trace.recorded_choices(str(tmp_path / "absent")) == 0
    (tmp_path / "cudnn-tuned-v2-sm90-cudnn91900.tsv").write_text("ab\teng0\ncd\teng3_k13=1\n")
    (tmp_path / "cudnn-tuned-wide-v2-sm90-cudnn91900.tsv").write_text("ef\teng1\n")
    (tmp_path / "notes.tsv").write_text("gh\teng2\n")
    assert trace.recorded_choices(str(tmp_path)) == 3


def test_an_unknown_tuning_mode_is_refused_before_anything_runs(monkeypatch, capsys):
    monkeypatch.setattr(trace, "run_side", lambda *a: pytest.fail("traced a side"))
    assert "invalid choice" in usage_error(trace.main, ["model_trace.py", "--tune", "2"], monkeypatch, capsys)


def test_the_summary_line_gives_each_sides_busy_and_idle_time_and_the_largest_differences():
    row = {"case": "model_trace", "model": "resnet18",
           "aotirt": {"busy_us_per_call": 277.13, "idle_us_per_call": 66.38, "host_bound": False},
           "torch": {"busy_us_per_call": 274.24, "idle_us_per_call": 70.5, "host_bound": True},
           "differences": [{"name": "triton_poi_fused_convolution_19", "diff_us": 0.63},
                           {"name": "gemmSN_TN_kernel", "diff_us": -0.5}],
           "gap_differences": []}
    line = trace.summary_line(row)
    assert line.startswith("resnet18: GPU us per call: aotirt busy 277.13 idle 66.38, torch busy 274.24 idle 70.5 (host-bound)")
    assert line.endswith("largest kernel differences: triton_poi_fused_convolution_19 +0.63; gemmSN_TN_kernel -0.5")
    assert trace.summary_line({"case": "model_trace", "model": "gpt2_f16", "error": "torch trace failed (1)"}) == \
        "gpt2_f16: torch trace failed (1)"


def test_the_host_calls_are_counted_and_timed_per_call_and_summed_in_the_summary_line():
    # The third launch waited in a full queue: the median leaves it out.
    events = [{"name": "cuLaunchKernel", "cat": "cuda_driver", "dur": 3.0},
              {"name": "cuLaunchKernel", "cat": "cuda_driver", "dur": 3.0},
              {"name": "cuLaunchKernel", "cat": "cuda_driver", "dur": 90000.0},
              {"name": "INVALID", "cat": "cuda_runtime", "args": {"cbid": 461}, "dur": 2.0},
              {"name": "conv", "cat": "kernel", "dur": 40.0}]  # the GPU's, not the host's
    counts, us = trace.host_calls(events, calls=2)
    assert counts == {"cuLaunchKernel": 1.5, "INVALID (runtime callback 461)": 0.5}
    assert us == {"cuLaunchKernel": 4.5, "INVALID (runtime callback 461)": 1.0}
    row = {"model": "mobilenet_v3_small",
           "aotirt": {"busy_us_per_call": 1.0, "idle_us_per_call": 0.0, "host_bound": False},
           "api_us_per_call": {"aotirt": us, "torch": {"cuLaunchKernel": 3.0}}}
    assert trace.summary_line(row).endswith("host us in CUDA calls per call: aotirt 5.5, torch 3.0")


def test_a_call_the_profiler_cannot_name_is_named_by_its_callback_id():
    named = {"name": "cudaLaunchKernel", "cat": "cuda_runtime", "args": {"cbid": 211}}
    assert trace.api_call_name(named) == "cudaLaunchKernel"
    assert trace.api_call_name({"name": "INVALID", "cat": "cuda_driver", "args": {"cbid": 307}}) == \
        "INVALID (driver callback 307)"
    assert trace.api_call_name({"name": "INVALID", "cat": "cuda_runtime", "args": {"cbid": 430}}) == \
        "INVALID (runtime callback 430)"
    # Without an id there is nothing better to say.
    assert trace.api_call_name({"name": "INVALID", "cat": "cuda_runtime"}) == "INVALID"


def test_the_adopted_stream_side_runs_on_its_own_and_is_compared_with_both(monkeypatch):
    monkeypatch.setattr(trace, "CALLS", 1)
    kernels = {"aotirt": (("conv", 0, 5), ("relu", 6, 2)), "torch": (("conv", 0, 5), ("relu", 6, 1)),
               trace.ADOPTED: (("conv", 0, 5), ("relu", 6, 1.5))}
    ran = []

    def fake_run_side(side, folder):
        ran.append(side)
        return {**activities(*kernels[side]), "events_gpu_us_per_call": 8.0, "host_bound": False,
                "api_calls_per_call": {}, "api_us_per_call": {}}

    monkeypatch.setattr(trace, "run_side", fake_run_side)
    assert "adopted_differences" not in trace.compare_runners("/models/resnet18")
    assert ran == ["aotirt", "torch"]
    ran.clear()
    row = trace.compare_runners("/models/resnet18", adopted=True)
    assert ran == ["aotirt", "torch", trace.ADOPTED]
    assert row[trace.ADOPTED]["busy_us_per_call"] == 6.5
    assert row["adopted_differences"][0] == {"name": "relu", "adopted_count": 1, "aotirt_count": 1,
                                             "adopted_us": 1.5, "aotirt_us": 2.0, "diff_us": -0.5}
    assert row["adopted_torch_differences"][0]["diff_us"] == 0.5
    assert f"{trace.ADOPTED} busy 6.5" in trace.summary_line({"model": "resnet18", **row})
