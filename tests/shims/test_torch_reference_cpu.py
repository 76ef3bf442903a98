"""The CPU side of tests/support/torch_reference.py, which the GPU tests of
the convolution and attention shims compare with (test_conv_torch_gpu.py,
test_attention_torch_gpu.py): the .npz round trip, the calls' arguments as
torch reads them, and what the caller sees without torch.

Here torch computes on the CPU, against the float64 numpy references of
support/conv_ref.py and attention_ref.py. These need a Python with torch
(AOTIRT_TORCH_PYTHON, this interpreter if it has torch, or .venv-torch) and
skip without one, saying so; the test of the skip itself runs everywhere.

Tolerance: float32 on the CPU sums in float, in some order: 1e-5 of the
output's largest magnitude (max_error), for sums of at most a few hundred
terms. bfloat16 attention: 2e-2 (its output is rounded to 8 bits).
"""

import sys

import numpy as np
import pytest

from support import attention_ref, conv_ref
from support.shims import rounded
from support.torch_reference import Call, compute, max_error


@pytest.fixture(scope="module")
def cpu_calls(tmp_path_factory):
    """Calls of each op family and their float64 references; torch's
    outputs of all of them, from one torch process."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 6, 11, 9))
    w = rng.standard_normal((8, 3, 3, 2)) * 0.5
    b = rng.standard_normal(8)
    x1, w1 = rng.standard_normal((2, 4, 15)), rng.standard_normal((6, 4, 3))
    x3, w3 = rng.standard_normal((1, 2, 5, 6, 7)), rng.standard_normal((4, 2, 2, 3, 2))
    xt, wt = rng.standard_normal((1, 4, 5, 5)), rng.standard_normal((4, 3, 3, 3))
    q, k, v = rng.standard_normal((2, 4, 9, 16)), rng.standard_normal((2, 2, 13, 16)), rng.standard_normal((2, 2, 13, 8))
    keep = rng.random((2, 1, 9, 13)) > 0.4
    keep[..., 0] = True
    qb, kb, vb = (rounded(rng.standard_normal((1, 2, 7, 32)), "bfloat16") for _ in range(3))
    cases = {
        "conv2d_grouped_strided_bias": (
            Call("conv", {"x": x, "w": w, "b": b}, {"stride": [2, 1], "padding": [1], "dilation": [1, 2], "groups": 2}),
            conv_ref.conv(x, w, b, (2, 1), (1,), (1, 2), 2)),
        "conv2d_channels_last": (
            Call("conv", {"x": x, "w": w, "b": None}, {"padding": [1], "groups": 2, "channels_last": True}),
            conv_ref.conv(x, w, None, (1,), (1,), (1,), 2)),
        "conv1d": (Call("conv", {"x": x1, "w": w1}, {"stride": [2], "padding": [1]}),
                   conv_ref.conv(x1, w1, None, (2,), (1,))),
        "conv3d": (Call("conv", {"x": x3, "w": w3}, {"padding": [1, 0, 1]}), conv_ref.conv(x3, w3, None, (1,), (1, 0, 1))),
        "conv_transpose2d": (
            Call("conv_transpose", {"x": xt, "w": wt}, {"stride": [2], "padding": [1], "output_padding": [1]}),
            conv_ref.conv_transpose(xt, wt, None, (2,), (1,), (1,), (1,))),
        "sdpa_gqa_bool_mask": (
            Call("sdpa", {"q": q, "k": k, "v": v, "mask": keep}, {"enable_gqa": True, "scale": 0.3}),
            attention_ref.sdpa(q, k, v, bias=keep, scale=0.3)[0]),
        "sdpa_causal_bfloat16": (
            Call("sdpa", {"q": qb, "k": kb, "v": vb}, {"is_causal": True, "dtype": "bfloat16"}),
            attention_ref.sdpa(qb, kb, vb, causal="top_left")[0]),
    }
    outputs = compute([call for call, _ in cases.values()], tmp_path_factory.mktemp("torch_cpu"), device="cpu")
    return {name: (out, cases[name][1]) for name, out in zip(cases, outputs)}


@pytest.mark.parametrize("name", ["conv2d_grouped_strided_bias", "conv2d_channels_last", "conv1d", "conv3d",
                                  "conv_transpose2d", "sdpa_gqa_bool_mask", "sdpa_causal_bfloat16"])
def test_torch_on_the_cpu_matches_numpy(cpu_calls, name):
    out, want = cpu_calls[name]
    assert out.dtype == np.float64 and out.shape == want.shape
    assert max_error(out, want) < (2e-2 if name.endswith("bfloat16") else 1e-5)


def test_without_torch_the_caller_skips_saying_why(tmp_path, monkeypatch):
    # A torch that cannot be imported, first on the worker's path, whatever
    # the machine has.
    (tmp_path / "shadow" / "torch").mkdir(parents=True)
    (tmp_path / "shadow" / "torch" / "__init__.py").write_text("raise ImportError('no torch in this test')\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "shadow"))
    with pytest.raises(pytest.skip.Exception, match="torch cannot be imported by .*: no torch in this test"):
        compute([Call("conv", {"x": np.ones((1, 1, 3)), "w": np.ones((1, 1, 1))})], tmp_path, "cpu",
                python=sys.executable)


def test_a_call_torch_refuses_fails_with_torch_s_message(tmp_path):
    with pytest.raises(pytest.fail.Exception, match=r"(?s)the torch references failed .*expected input.* to have "
                                                    r"3 channels, but got 2 channels"):
        compute([Call("conv", {"x": np.ones((1, 2, 5, 5)), "w": np.ones((4, 3, 3, 3))})], tmp_path, "cpu")


def test_max_error_is_on_the_scale_of_the_output():
    ref = np.array([100.0, 0.0, -1.0])
    assert max_error(ref + [0.0, 0.5, 0.0], ref) == pytest.approx(5e-3)
    with pytest.raises(AssertionError, match="not finite"):
        max_error(np.array([np.nan, 0.0, 0.0]), ref)
