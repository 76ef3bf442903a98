"""The convolution references of the GPU tests (tests/support/conv_ref.py), checked
on the host: the transposed convolution is the adjoint of the convolution,
and the Python layout rules agree with the CPU shim's (conv_layout.h)."""

import ctypes

import numpy as np
import pytest

from support import conv_ref
from support.shims import I32, I64, H, P, layout, owned, shim, view

CPU_CONV = shim("aoti_torch_cpu_convolution", H, H, P, P, I64, P, I64, P, I64, I32, P, I64, I64, P)

# input (of the transposed convolution), weight [in, out / groups, ...], stride, padding, dilation,
# output_padding, groups
ADJOINT_CASES = [
    ((2, 4, 7), (4, 3, 3), (2,), (1,), (1,), (1,), 1),
    ((1, 4, 5, 6), (4, 2, 3, 2), (2, 1), (1, 0), (1, 2), (1, 0), 2),
    ((1, 2, 3, 3, 3), (2, 2, 2, 2, 2), (2,), (0,), (1,), (1,), 1),
    ((2, 6, 4, 4), (6, 1, 3, 3), (3,), (1,), (2,), (2,), 6),
]


@pytest.mark.parametrize("case", ADJOINT_CASES, ids=lambda c: "x".join(map(str, c[0])))
def test_transposed_convolution_is_the_adjoint(case):
    shape, w_shape, stride, padding, dilation, output_padding, groups = case
    rng = np.random.default_rng(0)
    y = rng.standard_normal(shape)
    w = rng.standard_normal(w_shape)
    xt = conv_ref.conv_transpose(y, w, None, stride, padding, dilation, output_padding, groups)
    x = rng.standard_normal(xt.shape)
    # The same weight, read as a forward convolution's [out, in / groups, ...],
    # maps the transposed convolution's output space back to its input space.
    forward = conv_ref.conv(x, w, None, stride, padding, dilation, groups)
    assert forward.shape == y.shape
    assert np.isclose(np.vdot(forward, y), np.vdot(x, xt), rtol=1e-10)


def _cpu_output_strides(in_shape, in_strides, w_shape, w_strides, dtype):
    x, _ = view(np.zeros(int(np.prod(in_shape)) * 2), in_shape, in_strides, dtype=dtype)
    w, _ = view(np.zeros(int(np.prod(w_shape)) * 2), w_shape, w_strides, dtype=dtype)
    out = H()
    n = len(in_shape) - 2
    one, zero = (I64 * n)(*[1] * n), (I64 * n)(*[0] * n)
    assert CPU_CONV(x.ptr, w.ptr, None, one, n, zero, n, one, n, 0, zero, n, 1, ctypes.byref(out)) == 0
    return layout(owned([out])[0])


def _permuted(shape, order):
    """Strides of `shape` stored in the dimension order `order` (outermost first)."""
    strides, step = [0] * len(shape), 1
    for d in reversed(order):
        strides[d] = step
        step *= shape[d]
    return tuple(strides)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("rank", [3, 4, 5])
def test_python_layout_rules_match_the_cpu_shim(rank, dtype):
    rng = np.random.default_rng(rank)
    for _ in range(60):
        in_shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4))) + tuple(int(rng.integers(1, 5)) for _ in
                                                                               range(rank - 2))
        w_shape = (int(rng.integers(1, 4)), in_shape[1]) + tuple(1 for _ in range(rank - 2))
        in_strides = _permuted(in_shape, list(rng.permutation(rank)))
        w_strides = _permuted(w_shape, list(rng.permutation(rank)))
        sizes, strides, _, _ = _cpu_output_strides(in_shape, in_strides, w_shape, w_strides, dtype)
        want = conv_ref.output_strides(in_shape, in_strides, w_shape, w_strides, sizes, cuda=False,
                                       float64=dtype == "float64")
        assert strides == want, (in_shape, in_strides, w_shape, w_strides)
