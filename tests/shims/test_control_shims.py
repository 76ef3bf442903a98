"""aoti_torch_item_bool and aoti_torch_assign_tensors_out on the CPU, through
ctypes as a model library built with torch.cond or while_loop calls them."""

import ctypes

import numpy as np
import pytest

from support.shims import H, Handle, dense, last_error, layout, read, shim

ITEM_BOOL = shim("aoti_torch_item_bool", H, ctypes.POINTER(ctypes.c_bool))
ASSIGN_OUT = shim("aoti_torch_assign_tensors_out", H, ctypes.POINTER(H))
DATA_PTR = shim("aoti_torch_get_data_ptr", H, ctypes.POINTER(ctypes.c_void_p))


def item_bool(handle):
    value = ctypes.c_bool(False)
    status = ITEM_BOOL(handle.ptr, ctypes.byref(value))
    assert status == 0, last_error()
    return value.value


@pytest.mark.parametrize("value,dtype,expected", [
    (True, "bool", True), (False, "bool", False), (0.0, "float32", False), (-0.5, "float16", True),
    (np.nan, "float64", True), (0, "int64", False), (7, "int32", True), (2.0, "bfloat16", True),
    (0, "uint8", False),
])
def test_item_bool_is_torchs_nonzero(value, dtype, expected):
    array = np.array(value, np.float32 if dtype == "bfloat16" else dtype)
    handle, _ = dense(array, dtype="bfloat16" if dtype == "bfloat16" else None)
    assert item_bool(handle) is expected


def test_item_bool_takes_any_one_element_shape():
    handle, _ = dense(np.array([[True]]))
    assert item_bool(handle) is True


def test_item_bool_refuses_more_than_one_element():
    handle, _ = dense(np.array([True, False]))
    value = ctypes.c_bool()
    assert ITEM_BOOL(handle.ptr, ctypes.byref(value)) != 0
    assert "a Tensor with 2 elements cannot be converted to Scalar" in last_error()
    assert ITEM_BOOL(handle.ptr, None) != 0 and "NULL" in last_error()


def test_assign_tensors_out_is_an_alias_that_outlives_its_source():
    source, values = dense(np.arange(6, dtype=np.float32).reshape(2, 3))
    out = H()
    assert ASSIGN_OUT(source.ptr, ctypes.byref(out)) == 0, last_error()
    alias = Handle(out)
    assert layout(alias) == layout(source)
    a, b = ctypes.c_void_p(), ctypes.c_void_p()
    assert DATA_PTR(alias.ptr, ctypes.byref(a)) == 0 and DATA_PTR(source.ptr, ctypes.byref(b)) == 0
    assert a.value == b.value
    del source  # the model deletes the outer handle; the subgraph's stays valid
    np.testing.assert_array_equal(read(alias), values)
