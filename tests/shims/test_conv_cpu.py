"""aoti_torch_cpu_convolution through ctypes, as a model library calls it,
against a float64 numpy convolution.

The shim accumulates in double: float64 results agree with numpy to 1e-12,
float32 to 1e-6 (the output's rounding), float16/bfloat16 to 1e-2. The
output layouts expected below are what torch 2.13 gives for the same inputs
(eager and fake tensors agree): channels-last when the input or the weight
is, through the 2-D path for 1-D convolutions, and 3-D only for non-float64.
"""

import ctypes

import numpy as np
import pytest

from support.conv_ref import channels_last
from support.conv_ref import conv as reference
from support.shims import I32, I64, H, P, dense, last_error, layout, owned, read, shim, view

CONV = shim("aoti_torch_cpu_convolution", H, H, P, P, I64, P, I64, P, I64, I32, P, I64, I64, P)
TOLERANCE = {"float64": 1e-12, "float32": 1e-6, "float16": 1e-2, "bfloat16": 1e-2}


def ints(values):
    return (I64 * len(values))(*values), len(values)


def conv(x, w, b=None, stride=(1,), padding=(0,), dilation=(1,), groups=1, transposed=False):
    """Calls the shim; returns (status, output handle or None)."""
    out = H()
    s, p, d, op = ints(stride), ints(padding), ints(dilation), ints([0] * len(stride))
    bias = ctypes.byref(H(b.ptr.value)) if b is not None else None
    status = CONV(x.ptr, w.ptr, bias, s[0], s[1], p[0], p[1], d[0], d[1], int(transposed), op[0], op[1], groups,
                  ctypes.byref(out))
    return status, owned([out])[0]


CASES = [  # input shape, weight shape, stride, padding, dilation, groups
    ((2, 3, 11), (4, 3, 3), (1,), (0,), (1,), 1),
    ((2, 6, 13), (8, 3, 3), (2,), (2,), (2,), 2),
    ((1, 4, 9), (4, 1, 5), (1,), (2,), (1,), 4),            # depthwise
    ((2, 3, 9, 7), (5, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((2, 4, 10, 9), (6, 2, 3, 2), (2, 1), (1, 0), (1, 2), 2),
    ((1, 3, 8, 8), (2, 3, 1, 1), (3,), (0,), (1,), 1),      # one value for every spatial dimension
    ((1, 2, 4, 5, 6), (4, 2, 2, 3, 2), (1, 2, 1), (1, 0, 1), (1, 1, 2), 1),
]


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{len(c[0]) - 2}d-{'x'.join(map(str, c[1]))}-g{c[5]}")
@pytest.mark.parametrize("with_bias", [True, False], ids=["bias", "no_bias"])
def test_matches_numpy(case, dtype, with_bias):
    rng = np.random.default_rng(1)
    in_shape, w_shape, stride, padding, dilation, groups = case
    x, xr = dense(rng.standard_normal(in_shape), dtype=dtype)
    w, wr = dense(rng.standard_normal(w_shape), dtype=dtype)
    b, br = dense(rng.standard_normal(w_shape[0]), dtype=dtype) if with_bias else (None, None)
    status, out = conv(x, w, b, stride, padding, dilation, groups)
    assert status == 0, last_error()
    want = reference(xr, wr, br, stride, padding, dilation, groups)
    sizes, strides, got_dtype, device = layout(out)
    assert (sizes, got_dtype, device) == (want.shape, dtype, 0)
    assert strides == tuple(np.ascontiguousarray(want).strides[i] // 8 for i in range(want.ndim))
    assert np.linalg.norm(read(out) - want) / np.linalg.norm(want) < TOLERANCE[dtype]


@pytest.mark.parametrize("which,dtype,in_shape,w_shape,expected", [
    # 2-D: channels-last input or weight gives a channels-last output (torch: (144, 1, 24, 4))
    ("input", "float32", (2, 3, 8, 8), (4, 3, 3, 3), (144, 1, 24, 4)),
    ("weight", "float32", (2, 3, 8, 8), (4, 3, 3, 3), (144, 1, 24, 4)),
    ("input", "float64", (2, 3, 8, 8), (4, 3, 3, 3), (144, 1, 24, 4)),
    # 1-D: the input is made contiguous first; only the weight decides
    ("input", "float32", (2, 3, 8), (4, 3, 3), (24, 6, 1)),
    ("weight", "float32", (2, 3, 8), (4, 3, 3), (24, 1, 4)),
    # 3-D: channels-last-3d only through mkldnn, which takes no float64
    ("input", "float32", (2, 3, 4, 5, 6), (4, 3, 2, 2, 2), (240, 1, 80, 20, 4)),
    ("input", "float64", (2, 3, 4, 5, 6), (4, 3, 2, 2, 2), (240, 60, 20, 5, 1)),
], ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else v)
def test_output_layout_follows_torch(which, dtype, in_shape, w_shape, expected):
    rng = np.random.default_rng(2)
    shapes = {"input": in_shape, "weight": w_shape}

    def make(role):
        shape = shapes[role]
        if role != which:
            return dense(rng.standard_normal(shape), dtype=dtype)
        if len(shape) == 3:   # [O, I, K] stored [O, K, I]
            strides = (shape[1] * shape[2], 1, shape[1])
        else:
            strides = channels_last(shape)
        return view(rng.standard_normal(int(np.prod(shape))), shape, strides, dtype=dtype)

    (x, xr), (w, wr) = make("input"), make("weight")
    status, out = conv(x, w)
    assert status == 0, last_error()
    assert layout(out)[1] == expected
    want = reference(xr, wr, None, (1,), (0,), (1,), 1)
    assert np.linalg.norm(read(out) - want) / np.linalg.norm(want) < TOLERANCE[dtype]


def test_strided_input_at_an_offset():
    rng = np.random.default_rng(3)
    base = rng.standard_normal(2 * 3 * 9 * 20 + 7)
    x, xr = view(base, (2, 3, 9, 10), (3 * 9 * 20, 9 * 20, 20, 2), offset=7)   # every other column
    w, wr = dense(rng.standard_normal((4, 3, 2, 3)))
    status, out = conv(x, w, stride=(1, 2), padding=(1, 1))
    assert status == 0, last_error()
    want = reference(xr, wr, None, (1, 2), (1, 1), (1,), 1)
    assert np.linalg.norm(read(out) - want) / np.linalg.norm(want) < 1e-12


def test_bad_arguments_are_refused_with_reasons():
    rng = np.random.default_rng(4)
    x, _ = dense(rng.standard_normal((1, 4, 8, 8)))
    w, _ = dense(rng.standard_normal((6, 2, 3, 3)))

    def refused(*args, **kwargs):
        status, out = conv(*args, **kwargs)
        assert status != 0 and out is None
        return last_error()

    assert "transposed convolutions are not supported" in refused(x, w, groups=2, transposed=True)
    assert "per group" in refused(x, w, groups=1)
    w5, _ = dense(rng.standard_normal((5, 2, 3, 3)))
    assert "do not split" in refused(x, w5, groups=2)
    assert "stride has 3 values" in refused(x, w, stride=(1, 1, 1), groups=2)
    assert "positive" in refused(x, w, stride=(0,), groups=2)
    assert "too small" in refused(x, w, dilation=(5,), groups=2)
    bias, _ = dense(rng.standard_normal(5))
    assert "one value per output channel" in refused(x, w, bias, groups=2)
    x32, _ = dense(rng.standard_normal((1, 4, 8, 8)), dtype="float32")
    assert "one dtype" in refused(x32, w, groups=2)
    flat, _ = dense(rng.standard_normal((4, 8, 8)))
    assert "dimensions" in refused(flat, w, groups=2)
    ix, _ = dense(np.zeros((1, 4, 8, 8), np.int64))
    iw, _ = dense(np.zeros((6, 2, 3, 3), np.int64))
    assert "not supported" in refused(ix, iw, groups=2)
