"""bench/probe_conv_tuning.py's choice of the convolutions that are one
matrix multiply, and its sums (the timing itself needs the GPU)."""

import os
import sys

import pytest

from support.helpers import REPO

sys.path.insert(0, os.path.join(REPO, "bench"))
probe = pytest.importorskip("probe_conv_tuning")


def conv(weight, stride=(1, 1), padding=(0, 0), groups=1, layout="channels_last", op="conv2d"):
    return {"op": op, "input": [2, weight[1] * groups, 14, 14], "weight": list(weight), "stride": list(stride),
            "padding": list(padding), "dilation": [1, 1], "groups": groups, "layout": layout}


def test_only_unpadded_single_group_1x1_convolutions_of_stride_1_are_a_matmul():
    assert probe.as_matmul(conv([96, 576, 1, 1]))
    assert not probe.as_matmul(conv([128, 64, 1, 1], stride=(2, 2)))     # resnet's downsampling
    assert not probe.as_matmul(conv([576, 1, 3, 3], padding=(1, 1), groups=576))
    assert not probe.as_matmul(conv([96, 288, 1, 1], groups=2))
    assert not probe.as_matmul(conv([96, 576, 1, 1], padding=(1, 1)))
    assert not probe.as_matmul(conv([96, 576, 1, 1], layout="contiguous"))
    assert not probe.as_matmul({"op": "conv1d", "weight": [384, 80, 1], "stride": [1], "padding": [0],
                                "groups": 1, "input": [1, 80, 3000]})


def test_sums_count_only_shapes_every_compared_mode_timed():
    rows = [{"default_us": 5.0, "benchmark_us": 4.0, "mm_tf32_us": 3.0},
            {"default_us": 7.0, "benchmark_us": 7.5, "mm_tf32_us": None},
            {"default_us": 2.0, "benchmark_us": None, "mm_tf32_us": None}]
    assert probe.sums(rows) == {
        "all": {"shapes": 2, "default_us": 12.0, "benchmark_us": 11.5},
        "1x1": {"shapes": 1, "default_us": 5.0, "benchmark_us": 4.0, "mm_tf32_us": 3.0}}


class FakeClock:
    """A clock whose timer "times" a call by calling it once and answering
    how many calls it has made, so the order of the calls shows."""

    def __init__(self):
        self.timer = self
        self.made = []
        self.resets = 0

    def reset(self):
        self.resets += 1

    def wait(self):
        self.made.append("wait")

    def us_per_call(self, call, calls, wait):
        call()
        wait()
        return float(len(self.made)), False


def test_modes_warm_up_then_take_turns_round_by_round():
    clock = FakeClock()
    switched = []
    calls = {mode: (lambda mode=mode: clock.made.append(mode)) for mode in ("default", "benchmark")}
    times = probe.time_in_turns(calls, clock, 2, switched.append)
    assert clock.resets == 1
    # Warm-up: three calls, a wait, one timed call per mode; then two rounds in turn.
    warm = ["default"] * 3 + ["wait", "default", "wait"] + ["benchmark"] * 3 + ["wait", "benchmark", "wait"]
    assert clock.made == warm + ["default", "wait", "benchmark", "wait"] * 2
    assert switched == ["default", "benchmark"] * 3
    assert set(times) == {"default", "benchmark"} and all(len(t) == 2 for t in times.values())
    assert times["default"][0] < times["benchmark"][0] < times["default"][1]
