"""aoti_torch_cpu_{sort,sort_stable,topk} through ctypes, as a model library
calls them, against numpy's stable argsort in torch's order
(support/sort_shims.py): values compared exactly (the sign of zeros and NaN
included), indices exactly, since every aotirt sort is stable.

Output layouts are torch's meta functions' (torch/_meta_registrations.py):
meta_sort is empty_like(self) for both outputs (self's strides when they
are dense, else dense in self's order of dimensions), topk_meta is
new_empty of self's sizes with dim's replaced by k (contiguous).
"""

import ctypes
import os
import re

import numpy as np
import pytest

import aotirt
from aotirt._testing import tensor_handle
from support.shims import DTYPES, I32, I64, H, P, _copy, dense, last_error, layout, read, shim, view
from support.sort_shims import (
    DISPATCH_CASES,
    assert_same_values,
    call_sort,
    call_topk,
    dispatch_id,
    dispatch_values,
    expected_sort,
    expected_topk,
    sample,
    sort,
    topk,
)

SORT_CPU = shim("aoti_torch_cpu_sort", H, I64, I32, P, P)
FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTEGERS = ["int64", "int32", "int16", "int8", "uint8", "bool"]
ALL = FLOATS + INTEGERS
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SORT_PATHS = os.path.join(ROOT, "cuda_src", "shims", "sort", "sort_paths.h")


def operand(values, dtype):
    """A CPU handle of `values` as `dtype`, and the exact values it holds."""
    handle, rounded = dense(values, dtype=dtype)
    return handle, (rounded if dtype in FLOATS else np.asarray(values).astype(dtype))


def contiguous(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.insert(0, step)
        step *= max(size, 1)
    return tuple(strides)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_is_torchs_stable_sort(dtype, dim, descending):
    rng = np.random.default_rng(abs(dim) * 2 + descending)
    x, values = operand(sample((4, 5, 33), dtype, rng), dtype)
    want_values, want_indices = expected_sort(values, dim, descending)
    for stable in (None, True, False, "null"):
        got_values, got_indices = sort(x, dim, descending, stable=stable)
        assert layout(got_values)[:3] == ((4, 5, 33), (165, 33, 1), dtype)
        assert layout(got_indices)[:3] == ((4, 5, 33), (165, 33, 1), "int64")
        assert_same_values(read(got_values), want_values)
        np.testing.assert_array_equal(read(got_indices), want_indices)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_is_the_first_k_of_the_stable_order(dtype, dim, largest):
    rng = np.random.default_rng(7 + dim)
    shape = (6, 40)
    x, values = operand(sample(shape, dtype, rng), dtype)
    n = shape[dim]
    for k in sorted({0, 1, 3, n // 2, n - 1, n}):
        got_values, got_indices = topk(x, k, dim, largest)
        sizes = list(shape)
        sizes[dim] = k
        assert layout(got_values)[:3] == (tuple(sizes), contiguous(sizes), dtype)
        assert layout(got_indices)[:3] == (tuple(sizes), contiguous(sizes), "int64")
        want_values, want_indices = expected_topk(values, k, dim, largest)
        assert_same_values(read(got_values), want_values)
        np.testing.assert_array_equal(read(got_indices), want_indices)


def test_nan_is_the_largest_value_and_ties_keep_their_order():
    values = np.array([1.0, np.nan, -0.0, 0.0, 3.0, np.nan, -np.inf])
    x, _ = dense(values)
    got_values, got_indices = sort(x, 0)          # torch: [-inf, -0., 0., 1., 3., nan, nan]
    np.testing.assert_array_equal(read(got_indices), [6, 2, 3, 0, 4, 1, 5])
    assert_same_values(read(got_values), values[[6, 2, 3, 0, 4, 1, 5]])
    _, got_indices = sort(x, 0, descending=True)  # torch: [nan, nan, 3., 1., -0., 0., -inf]
    np.testing.assert_array_equal(read(got_indices), [1, 5, 4, 0, 2, 3, 6])
    got_values, got_indices = topk(x, 3, 0)       # torch: [nan, nan, 3.] at [1, 5, 4]
    np.testing.assert_array_equal(read(got_indices), [1, 5, 4])
    _, got_indices = topk(x, 3, 0, largest=False)
    np.testing.assert_array_equal(read(got_indices), [6, 2, 3])


def test_nan_payloads_and_zero_signs_come_through():
    """Values are copied from the input, not rebuilt from the sort keys."""
    bits = np.array([0x7FC00001, 0xFFC00002, 0x80000000, 0x3F800000, 0x00000000], np.uint32)
    x, _ = dense(bits.view(np.float32))
    got, idx = sort(x, 0)
    np.testing.assert_array_equal(read(idx), [2, 4, 3, 0, 1])   # -0.0 and 0.0 tie, NaNs last
    host = aotirt.empty((5,), "float32", "cpu")
    assert _copy(tensor_handle(host), got.ptr, 0) == 0, last_error()
    np.testing.assert_array_equal(host.numpy().view(np.uint32), bits[[2, 4, 3, 0, 1]])


def test_stable_with_long_runs_of_ties():
    rng = np.random.default_rng(3)
    values = rng.integers(0, 4, 5000).astype(np.int32)
    x, _ = dense(values)
    for descending in (False, True):
        _, idx = sort(x, 0, descending)
        np.testing.assert_array_equal(read(idx), expected_sort(values, 0, descending)[1])


def test_int64_keys_are_exact():
    values = np.array([2**62 + 1, 2**62, -(2**63), 2**63 - 1, 2**53 + 1, 2**53, -1, 0], np.int64)
    x, _ = dense(values)
    got, idx = sort(x, 0)
    np.testing.assert_array_equal(read(got), np.sort(values))
    np.testing.assert_array_equal(read(idx), np.argsort(values, kind="stable"))


def test_strided_inputs_and_sorts_output_layout():
    rng = np.random.default_rng(5)
    base = rng.standard_normal(200)
    # A permuted dense view (5, 3, 4) of a (3, 4, 5) block: empty_like keeps its strides.
    x, xr = view(base, (5, 3, 4), (1, 20, 5), offset=7)
    for dim in (0, 1, 2):
        got, idx = sort(x, dim)
        assert layout(got)[:2] == ((5, 3, 4), (1, 20, 5)) and layout(idx)[:2] == ((5, 3, 4), (1, 20, 5))
        want_values, want_indices = expected_sort(xr, dim, False)
        assert_same_values(read(got), want_values)
        np.testing.assert_array_equal(read(idx), want_indices)
        got, idx = topk(x, 2, dim)
        sizes = [5, 3, 4]
        sizes[dim] = 2
        assert layout(got)[:2] == (tuple(sizes), contiguous(sizes))
        want_values, want_indices = expected_topk(xr, 2, dim, True)
        assert_same_values(read(got), want_values)
        np.testing.assert_array_equal(read(idx), want_indices)
    # Every other column of a (4, 6): not dense, so dense strides in its order (torch: (3, 1)).
    y, yr = view(base, (4, 3), (6, 2), offset=1)
    got, idx = sort(y, 1, descending=True)
    assert layout(got)[:2] == ((4, 3), (3, 1))
    assert_same_values(read(got), expected_sort(yr, 1, True)[0])
    # A transposed, non-dense view (3, 4) of strides (2, 6): torch gives (1, 3).
    z, zr = view(base, (3, 4), (2, 6), offset=0)
    got, idx = sort(z, 0)
    assert layout(got)[:2] == ((3, 4), (1, 3))
    np.testing.assert_array_equal(read(idx), expected_sort(zr, 0, False)[1])


@pytest.mark.parametrize("dim", [0, -1])
def test_zero_dim_tensors(dim):
    x, _ = dense(np.array(2.5))
    got, idx = sort(x, dim)
    assert layout(got)[:3] == ((), (), "float64") and read(got) == 2.5 and read(idx) == 0
    for k in (0, 1):   # torch: a 0-d topk is 0-d, the value and index 0, for k = 0 too
        got, idx = topk(x, k, dim)
        assert layout(got)[0] == () and layout(idx)[0] == ()
        assert read(got) == 2.5 and read(idx) == 0


def test_empty_tensors_and_k_zero():
    x, _ = dense(np.zeros((2, 0, 3)))
    for dim in (0, 1, 2):
        got, idx = sort(x, dim)
        assert layout(got)[0] == (2, 0, 3) and layout(idx)[0] == (2, 0, 3)
    got, idx = topk(x, 0, 1)
    assert layout(got)[0] == (2, 0, 3)
    got, idx = topk(x, 2, 2)
    assert layout(got)[0] == (2, 0, 2)
    y, _ = dense(np.ones((3, 4)))
    got, idx = topk(y, 0, 1)
    assert layout(got)[0] == (3, 0) and layout(idx)[0] == (3, 0)


def test_bad_arguments_are_refused():
    x, _ = dense(np.ones((2, 3)))
    for k in (4, -1):
        status, values, indices = call_topk(x, k, 1)
        assert status != 0 and values is None and indices is None
        assert "selected index k out of range" in last_error()
    for dim in (2, -3):
        status, values, _ = call_topk(x, 1, dim)
        assert status != 0 and values is None
        assert "Dimension out of range (expected to be in range of [-2, 1], but got" in last_error()
        status, values, _ = call_sort(x, dim)
        assert status != 0 and values is None and "Dimension out of range" in last_error()
        status, values, _ = call_sort(x, dim, stable=True)
        assert status != 0 and "Dimension out of range" in last_error()
    s, _ = dense(np.array(1.0))
    status, _, _ = call_topk(s, 2, 0)
    assert status != 0 and "selected index k out of range" in last_error()
    status, _, _ = call_sort(s, 1)
    assert status != 0 and "[-1, 0], but got 1" in last_error()
    # A CPU tensor is not a CUDA shim's (the check comes before any CUDA call).
    status, _, _ = call_sort(x, 0, device="cuda:0")
    assert status != 0 and "must be a CUDA tensor" in last_error()
    status, _, _ = call_topk(x, 1, 0, device="cuda:0")
    assert status != 0 and "must be a CUDA tensor" in last_error()
    assert SORT_CPU(x.ptr, 0, 0, None, ctypes.byref(H())) != 0 and "NULL" in last_error()


def test_every_dtype_is_covered():
    assert set(ALL) == set(DTYPES)


@pytest.mark.parametrize("case", DISPATCH_CASES, ids=dispatch_id)
def test_the_cuda_tests_shapes_on_the_cpu(case):
    """test_sort_gpu.py's shapes for every way of the CUDA sort, on the
    CPU shims against the same reference (the GPU test checks both)."""
    shape, dim, dtype, fill, ks = case
    x, values = operand(dispatch_values(shape, dtype, fill, np.random.default_rng(shape[dim])), dtype)
    for descending in (False, True):
        got_values, got_indices = sort(x, dim, descending)
        want_values, want_indices = expected_sort(values, dim, descending)
        assert_same_values(read(got_values), want_values)
        np.testing.assert_array_equal(read(got_indices), want_indices)
        for k in ks:
            got_values, got_indices = topk(x, k, dim, descending)
            want_values, want_indices = expected_topk(values, k, dim, descending)
            assert_same_values(read(got_values), want_values)
            np.testing.assert_array_equal(read(got_indices), want_indices)


def test_the_cuda_tests_shapes_reach_every_way_of_the_cuda_sort():
    """DISPATCH_CASES against sort_paths.h's limits: a line of up to
    kTileMax is one block's (sized 128, 512, 1024, 2048 or kTileMax, as
    sort_tiles.cu's launch_fitted picks); a longer one's top-k with
    k <= kMaxSelectK is rounds of tile selection, each keeping k of every
    kTileMax (one round and several are both reached); the rest, a sort
    too (k == n), is the radix sort."""
    with open(SORT_PATHS) as f:
        text = f.read()
    tile = int(re.search(r"kTileMax = (\d+);", text).group(1))
    most_k = int(re.search(r"kMaxSelectK = (\d+);", text).group(1))
    blocks = (128, 512, 1024, 2048, tile)
    reached = set()
    for shape, dim, _, _, ks in DISPATCH_CASES:
        n = shape[dim]
        for k in (n, *ks):
            if n <= tile:
                reached.add(("block", next(size for size in blocks if n <= size)))
            elif k <= most_k:
                rounds, length = 0, n
                while length > tile:
                    full = (length - 1) // tile
                    length, rounds = full * k + min(k, length - full * tile), rounds + 1
                reached.add(("select", min(rounds, 2)))
            else:
                reached.add(("radix", k == n))
    assert reached == {("block", size) for size in blocks} | {("select", 1), ("select", 2), ("radix", False),
                                                              ("radix", True)}
