"""aoti_torch_cpu_cumsum through ctypes, as a model library calls it,
against numpy.

torch's CPU cumsum converts the input to the output dtype, then sums in
double (float32, float64), float (float16, bfloat16) or int64 (integers,
bool), rounding each partial sum to the output dtype; numpy's sequential
cumsum in the same accumulator gives the same bits, so results are compared
exactly.
"""

import ctypes

import numpy as np
import pytest

from support.shims import (
    DTYPES,
    I32,
    I64,
    H,
    P,
    dense,
    from_bf16_bits,
    last_error,
    layout,
    owned,
    read,
    shim,
    to_bf16_bits,
    view,
)

CUMSUM = shim("aoti_torch_cpu_cumsum", H, I64, P, P)


def cumsum(x, dim, dtype=None):
    out = H()
    code = ctypes.byref(I32(DTYPES[dtype])) if dtype else None
    status = CUMSUM(x.ptr, dim, code, ctypes.byref(out))
    return status, owned([out])[0]


def run(x, dim, dtype=None):
    status, out = cumsum(x, dim, dtype)
    assert status == 0, last_error()
    return out


def expected(values, dim, out_dtype):
    """numpy's cumsum of `values` (already of the input dtype) as torch computes it."""
    if out_dtype == "bfloat16":
        rounded = from_bf16_bits(to_bf16_bits(values.astype(np.float32)))
        sums = np.cumsum(rounded, axis=dim, dtype=np.float32)
        return from_bf16_bits(to_bf16_bits(sums)).astype(np.float64)
    if out_dtype == "float16":
        return np.cumsum(values.astype(np.float16).astype(np.float32), axis=dim,
                         dtype=np.float32).astype(np.float16).astype(np.float64)
    if out_dtype in ("float32", "float64"):
        return np.cumsum(values.astype(out_dtype).astype(np.float64), axis=dim).astype(out_dtype).astype(np.float64)
    return np.cumsum(values.astype(out_dtype).astype(np.int64), axis=dim).astype(out_dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_floating(dtype, dim):
    rng = np.random.default_rng(1)
    x, xr = dense(rng.standard_normal((3, 5, 7)) * 10, dtype=dtype)
    out = run(x, dim)
    assert layout(out)[:3] == ((3, 5, 7), (35, 7, 1), dtype)
    np.testing.assert_array_equal(read(out), expected(xr, dim, dtype))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64", "bool"])
def test_integers_and_bool_sum_to_int64(dtype):
    rng = np.random.default_rng(2)
    values = rng.integers(0, 2, (4, 9)) if dtype == "bool" else rng.integers(0, 100, (4, 9))
    x, _ = dense(values.astype(dtype))
    out = run(x, 1)
    assert layout(out)[2] == "int64"
    np.testing.assert_array_equal(read(out), np.cumsum(values.astype(dtype).astype(np.int64), axis=1))


@pytest.mark.parametrize("src,dst", [("float32", "int32"), ("float64", "int64"), ("int64", "float64"),
                                     ("int32", "float32"), ("int64", "int8"), ("float32", "float16"),
                                     ("float32", "bfloat16"), ("float32", "float64")])
def test_dtype_argument_converts_first(src, dst):
    """torch: self.to(dtype) first (floats truncate toward zero), then the sum."""
    rng = np.random.default_rng(3)
    values = rng.standard_normal((2, 40)) * 50
    values = values.astype(src)
    x, _ = dense(values)
    out = run(x, -1, dst)
    assert layout(out)[2] == dst
    got = read(out)
    want = expected(values, -1, dst)
    np.testing.assert_array_equal(got, want)


def test_large_int64_values_stay_exact():
    values = np.array([2**62, 3, 2**53 + 1, -(2**61)], np.int64)
    x, _ = dense(values)
    np.testing.assert_array_equal(read(run(x, 0)), np.cumsum(values))


def test_strided_input_gives_a_contiguous_output():
    rng = np.random.default_rng(4)
    base = rng.standard_normal(6 * 8 + 3)
    x, xr = view(base, (8, 6), (1, 8), offset=3)    # a transposed view
    for dim in (0, 1):
        out = run(x, dim)
        assert layout(out)[:2] == ((8, 6), (6, 1))
        np.testing.assert_array_equal(read(out), np.cumsum(xr, axis=dim))


def test_scalars_and_empty_tensors():
    x, _ = dense(np.array(2.5))
    for dim in (0, -1):
        out = run(x, dim)
        assert layout(out)[0] == () and read(out) == 2.5
    e, _ = dense(np.zeros((3, 0, 2)))
    out = run(e, 2)
    assert layout(out)[0] == (3, 0, 2)


def test_bad_arguments_are_refused():
    x, _ = dense(np.ones((2, 3)))
    for dim in (2, -3):
        status, out = cumsum(x, dim)
        assert status != 0 and out is None and "out of range" in last_error()
    s, _ = dense(np.array(1.0))
    status, out = cumsum(s, 1)
    assert status != 0 and "out of range" in last_error()
    status = CUMSUM(x.ptr, 0, ctypes.byref(I32(99)), ctypes.byref(H()))
    assert status != 0 and "not supported" in last_error()
    status, out = cumsum(x, 0, "bool")     # torch refuses it too
    assert status != 0 and "bool result" in last_error()
