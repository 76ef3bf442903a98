"""bench/probe_conv_stems.py's arithmetic (its timing needs the GPU): which
stems are patch embeddings, and, in torch on the CPU, that every way the
probe runs a stem (2-D or 1-D) computes the convolution it stands for."""

import os
import subprocess
import sys

import pytest

from support.helpers import REPO
from zoo_index import torch_python

sys.path.insert(0, os.path.join(REPO, "bench"))
probe = pytest.importorskip("probe_conv_stems")


def test_the_patch_embeddings_are_the_stems_whose_kernel_is_their_stride():
    patches = {name for name, (image, weight, stride, padding) in probe.STEMS.items()
               if len(image) == 4 and probe.is_patch_embedding(weight, stride, padding, image)}
    assert patches == {"convnext_tiny", "vit_b_16", "swin_t"}
    assert not probe.is_patch_embedding((96, 3, 4, 4), 4, 0, (2, 3, 66, 64))   # the patches do not tile it
    assert not probe.is_patch_embedding((96, 3, 4, 4), 4, 1, (2, 3, 64, 64))
    assert not probe.is_patch_embedding((96, 3, 4, 4), 2, 0, (2, 3, 64, 64))


def test_output_sides_are_torchs():
    assert probe.output_side(224, 7, 2, 3) == 112
    assert probe.output_side(224, 3, 2, 1) == 112
    assert probe.output_side(64, 16, 16, 0) == 4
    assert probe.output_side(112, 4, 4, 0) == 28


# Every mode of every stem against F.conv2d in float64 on the CPU, with the
# probe's own calls (a mode's copies, paddings and matrix products).
CHECK = """
import sys
sys.path.insert(0, {bench!r})
import torch
import probe_conv_stems as probe
torch.set_default_dtype(torch.float64)
bad = []
for name, (image, weight, stride, padding) in probe.STEMS.items():
    make = lambda shape, seed: torch.randn(list(shape), generator=torch.Generator().manual_seed(seed))
    calls = probe.calls_of(torch, make, image, weight, stride, padding)
    conv = torch.nn.functional.conv2d if len(image) == 4 else torch.nn.functional.conv1d
    want = conv(make(image, 1), make(weight, 2), None, stride, padding)
    if len(image) == 3:
        expected_modes = {{"default", "benchmark", "channels_last", "unfold_mm", "as_height"}}
    else:
        one_d = {{"channels_last", "as_height"}}
        expected_modes = set(probe.MODES) - one_d - (set() if "patch_mm" in calls else {{"patch_mm"}})
    if set(calls) != expected_modes:
        bad.append((name, sorted(calls)))
    for mode, call in calls.items():
        got = call()
        if got.shape != want.shape or not torch.allclose(got, want, rtol=1e-10, atol=1e-10):
            bad.append((name, mode))
print("BAD", bad)
"""


def test_every_mode_computes_the_stems_convolution_in_torch_on_the_cpu():
    python = torch_python()
    if python is None:
        pytest.skip("no Python with torch (set AOTIRT_TORCH_PYTHON, or run make torch-venv)")
    proc = subprocess.run([python, "-c", CHECK.format(bench=os.path.join(REPO, "bench"))], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[-2] == "BAD []", proc.stdout
