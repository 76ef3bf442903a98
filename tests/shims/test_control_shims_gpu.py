"""aoti_torch_item_bool and aoti_torch_assign_tensors_out on CUDA tensors:
item_bool reads the value through the copy routine, which is exactly one
host wait (one cudaStreamSynchronize, counted by the interposer)."""

import ctypes

import numpy as np
import pytest

from support.shims import H, Handle, dense, last_error, read, shim
from support.waits import TESTS, count_waits, interposer_library

pytestmark = pytest.mark.gpu

ITEM_BOOL = shim("aoti_torch_item_bool", H, ctypes.POINTER(ctypes.c_bool))
ASSIGN_OUT = shim("aoti_torch_assign_tensors_out", H, ctypes.POINTER(H))


@pytest.mark.parametrize("value,dtype", [(True, "bool"), (False, "bool"), (0.0, "float32"), (np.nan, "float64"),
                                         (3, "int64"), (0, "int32"), (-1.0, "float16")])
def test_item_bool_on_cuda_matches_the_cpu(value, dtype):
    results = []
    for device in ("cpu", "cuda"):
        handle, _ = dense(np.array([value], dtype), device=device)
        out = ctypes.c_bool()
        assert ITEM_BOOL(handle.ptr, ctypes.byref(out)) == 0, last_error()
        results.append(out.value)
    assert results[0] == results[1] == bool(value)


def test_assign_tensors_out_aliases_a_cuda_tensor():
    source, values = dense(np.arange(4, dtype=np.float32), device="cuda")
    out = H()
    assert ASSIGN_OUT(source.ptr, ctypes.byref(out)) == 0, last_error()
    alias = Handle(out)
    del source
    np.testing.assert_array_equal(read(alias), values)


def test_item_bool_is_one_wait(tmp_path_factory):
    counter = interposer_library(str(tmp_path_factory.mktemp("interposer")))
    setup = f"""
        import sys
        sys.path.insert(0, {TESTS!r})
        import numpy as np
        from support.shims import H, dense, shim
        item = shim("aoti_torch_item_bool", H, ctypes.POINTER(ctypes.c_bool))
        handle, _ = dense(np.array([True]), device="cuda")
        value = ctypes.c_bool()
        assert item(handle.ptr, ctypes.byref(value)) == 0
    """
    body = """
        assert item(handle.ptr, ctypes.byref(value)) == 0 and value.value
    """
    counts = count_waits(counter, body, setup)
    assert {name: n for name, n in counts.items() if n} == {"cudaStreamSynchronize": 1}
