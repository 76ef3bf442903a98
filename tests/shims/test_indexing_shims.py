"""The scatter and index_put shims on the CPU, through ctypes as a model
library calls them, against numpy (ufunc.at on out's positions for scatter,
numpy's advanced indexing and np.add.at for index_put; cases and references
in tests/support/indexing_shims.py), and their errors."""

import ctypes

import numpy as np
import pytest

from support.indexing_shims import (
    INDEX_PUT_NEW,
    INDEX_PUT_OUT,
    SCATTER_OUT,
    SCATTER_REDUCE,
    SCATTER_REDUCE_OUT,
    SCATTER_SRC,
    H,
    case_id,
    expect_ok,
    index_put,
    index_put_cases,
    index_put_new,
    index_put_reference,
    reference_args,
    scatter,
    scatter_args,
    scatter_cases,
    scatter_reference,
)
from support.shims import dense, last_error, layout, read, view

INDEX_PUT_NEW_CPU = INDEX_PUT_NEW["cpu"]


@pytest.mark.parametrize("case", scatter_cases(), ids=case_id)
def test_scatter_matches_numpy(case):
    status, call = scatter("cpu", **scatter_args(case))
    expect_ok(status)
    np.testing.assert_array_equal(call.result(), scatter_reference(**reference_args(case)))


@pytest.mark.parametrize("case", index_put_cases(), ids=case_id)
def test_index_put_matches_numpy(case):
    status, call = index_put("cpu", **case_args(case))
    expect_ok(status)
    np.testing.assert_array_equal(call.result(), index_put_reference(**case_args(case)))


def case_args(case):
    return {k: v for k, v in case.items() if k != "name"}


def test_np_put_along_axis_is_scatter():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    index = np.array([[3, 0], [1, 2], [0, 1]])
    src = -np.arange(6, dtype=np.float32).reshape(3, 2)
    status, call = scatter("cpu", x, 1, index, src=src)
    expect_ok(status)
    expected = x.copy()
    np.put_along_axis(expected, index, src, axis=1)
    np.testing.assert_array_equal(call.result(), expected)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_in_place_when_out_is_self(device):
    x = np.zeros((2, 3), np.float32)
    status, call = scatter(device, x, 1, [[2, 2], [0, 1]], src=np.ones((2, 2), np.float32), reduce="sum",
                           out_is_self=True)
    expect_ok(status)
    np.testing.assert_array_equal(call.result(), [[0, 0, 2], [1, 1, 0]])


def test_strided_views():
    # self a transposed view, out a view with an offset and a gap: out takes self's values then the writes.
    base = np.arange(12, dtype=np.float64)
    self_handle, self_values = view(base, (4, 3), (1, 4))
    out_handle, _ = view(np.zeros(40), (4, 3), (8, 2), offset=3)
    idx, _ = dense(np.array([[1, 0, 3]]))
    src, _ = dense(np.array([[10.0, 20.0, 30.0]]))
    expect_ok(SCATTER_SRC["cpu"](out_handle.ptr, self_handle.ptr, 0, idx.ptr, src.ptr))
    expected = self_values.copy()
    expected[1, 0], expected[0, 1], expected[3, 2] = 10, 20, 30
    np.testing.assert_array_equal(read(out_handle), expected)


def test_the_device_neutral_doors():
    x = np.zeros(4, np.float32)
    status, call = scatter("cpu", x, 0, [1, 3], src=np.array([5, 6], np.float32), door=SCATTER_OUT)
    expect_ok(status)
    np.testing.assert_array_equal(call.result(), [0, 5, 0, 6])
    status, call = scatter("cpu", x, 0, [1, 1], src=np.array([5, 6], np.float32), reduce="amax",
                           door=SCATTER_REDUCE_OUT)
    expect_ok(status)
    np.testing.assert_array_equal(call.result(), [0, 6, 0, 0])


def test_bool_mask_index():
    rng = np.random.default_rng(3)
    x = rng.integers(-3, 4, (3, 4, 2)).astype(np.float32)
    mask = rng.random((3, 4)) > 0.5
    values = np.arange(2, dtype=np.float32)
    status, call = index_put("cpu", x, [mask], values)
    expect_ok(status)
    expected = x.copy()
    expected[mask] = values
    np.testing.assert_array_equal(call.result(), expected)


def test_functional_index_put_keeps_self_layout_and_self():
    base = np.arange(12, dtype=np.float32)
    self_handle, self_values = view(base, (3, 4), (1, 3))   # a transposed (non-overlapping, dense) layout
    idx, _ = dense(np.array([2, 0]))
    vals, _ = dense(np.full((2, 4), 7, np.float32))
    status, out = index_put_new("cpu", self_handle, [idx], vals, accumulate=True)
    assert status == 0, last_error()
    assert layout(out)[:2] == ((3, 4), (1, 3))
    expected = self_values.copy()
    expected[[2, 0]] += 7
    np.testing.assert_array_equal(read(out), expected)
    np.testing.assert_array_equal(read(self_handle), self_values)


def test_functional_index_put_with_a_null_index():
    x, values = dense(np.zeros((2, 3), np.float32))
    idx, _ = dense(np.array([2]))
    vals, _ = dense(np.array(4.0, np.float32))
    status, out = index_put_new("cpu", x, [None, idx], vals)
    assert status == 0, last_error()
    np.testing.assert_array_equal(read(out), [[0, 0, 4], [0, 0, 4]])


SCATTER_ERRORS = [
    (dict(index=[[4]], src=np.ones((1, 1), np.float32)), "index 4 is out of bounds for dimension 1 with size 4"),
    (dict(index=[[-1]], src=np.ones((1, 1), np.float32)), "index -1 is out of bounds for dimension 1 with size 4"),
    (dict(index=[[0]], src=np.ones((1, 1), np.float64)), "expected self.dtype to be equal to src.dtype"),
    (dict(index=[[0]], src=np.ones((1, 1), np.float32), index_dtype="int16"), "expected dtype int64"),
    (dict(index=[0], src=np.ones(1, np.float32)), "same number of dimensions as self"),
    (dict(index=[[0, 1]], src=np.ones((1, 1), np.float32)), "to be no larger size than src"),
    (dict(index=np.zeros((4, 1)), src=np.ones((4, 1), np.float32)), "to be no larger than self [3, 4]"),
    (dict(index=[[0]], src=np.ones((1, 1), np.float32), reduce="max"), "reduce argument must be either sum"),
    (dict(index=[[0]], src=np.ones((1, 1), np.float32), dim=2), "dimension out of range"),
]


@pytest.mark.parametrize("kwargs,message", SCATTER_ERRORS, ids=[m for _, m in SCATTER_ERRORS])
def test_scatter_errors(kwargs, message):
    kwargs = dict(kwargs)
    dim = kwargs.pop("dim", 1)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    status, call = scatter("cpu", x, dim, **kwargs)
    assert status != 0
    assert message in last_error()
    if "out of bounds" in message:  # checked before any write: out holds self's copy
        np.testing.assert_array_equal(call.result(), x)


def test_scatter_mean_of_bool_is_refused():
    status, _ = scatter("cpu", np.zeros(3, bool), 0, [1], src=np.ones(1, bool), reduce="mean", dtype="bool")
    assert status != 0 and "not implemented for bool" in last_error()


def test_a_cuda_door_refuses_cpu_tensors():
    status, _ = scatter("cpu", np.zeros(3, np.float32), 0, [1], src=np.ones(1, np.float32), reduce="sum",
                        door=SCATTER_REDUCE["cuda"])
    assert status != 0 and "must be a CUDA tensor" in last_error()


def test_out_of_another_shape_is_refused():
    x, _ = dense(np.zeros((2, 3), np.float32))
    out, _ = dense(np.zeros((3, 2), np.float32))
    idx, _ = dense(np.array([[0]]))
    src, _ = dense(np.ones((1, 1), np.float32))
    assert SCATTER_SRC["cpu"](out.ptr, x.ptr, 0, idx.ptr, src.ptr) != 0
    assert "out must have self's shape" in last_error()


INDEX_PUT_ERRORS = [
    (dict(indices=[np.array([3])], values=np.ones(4, np.float32)), "index 3 is out of bounds for dimension 0 with size 3"),
    (dict(indices=[np.array([-4])], values=np.ones(4, np.float32)), "index -4 is out of bounds"),
    (dict(indices=[np.array([0])] * 3, values=np.ones(1, np.float32)), "too many indices for tensor of dimension 2"),
    (dict(indices=[np.array([0])], values=np.ones(4, np.float64)), "source and destination dtypes match"),
    (dict(indices=[np.array([0], np.int16)], values=np.ones(4, np.float32)), "must be long, int, byte or bool"),
    (dict(indices=[np.array([0, 1])], values=np.ones(3, np.float32)), "cannot be broadcast to indexing result"),
    (dict(indices=[np.array([0, 1]), np.array([0, 1, 2])], values=np.ones(1, np.float32)),
     "indexing tensors could not be broadcast together with shapes [2], [3]"),
    (dict(indices=[np.ones((3, 3), bool)], values=np.ones(1, np.float32)), "the shape of the mask [3, 3] at index 1"),
]


@pytest.mark.parametrize("kwargs,message", INDEX_PUT_ERRORS, ids=[m for _, m in INDEX_PUT_ERRORS])
def test_index_put_errors(kwargs, message):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    status, call = index_put("cpu", x, **kwargs)
    assert status != 0
    assert message in last_error()
    if "out of bounds" in message:
        np.testing.assert_array_equal(call.result(), x)


def test_null_arguments_fail_cleanly():
    assert SCATTER_SRC["cpu"](None, None, 0, None, None) != 0
    assert "NULL" in last_error()
    x, _ = dense(np.zeros(2, np.float32))
    assert INDEX_PUT_OUT(x.ptr, x.ptr, None, 1, x.ptr, False) != 0
    assert "NULL" in last_error()
    ret = H()
    assert INDEX_PUT_NEW_CPU(None, None, 0, x.ptr, 0, ctypes.byref(ret)) != 0 and not ret
