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
