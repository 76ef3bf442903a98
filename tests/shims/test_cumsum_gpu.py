"""aoti_torch_cuda_cumsum (one segmented CUB scan) through ctypes, against
the CPU shim (test_cumsum_cpu.py checks it against numpy): integers exactly
(int64 sums of any order are the same), floating dtypes to their rounding
(the scan adds in another order, float16 and bfloat16 in float). Also the
layout torch's meta gives (contiguous), strided and 0-d inputs, the dtype
argument, many short lines and a few long ones, and no host wait in a loop
of calls.
"""

import ctypes
import os

import numpy as np
import pytest

from support.shims import DTYPES, I32, I64, H, P, dense, last_error, layout, owned, read, shim, view
from support.waits import count_waits, interposer_library

pytestmark = pytest.mark.gpu
DEV = "cuda:0"
HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
SHIMS = {d: shim(f"aoti_torch_{d}_cumsum", H, I64, P, P) for d in ("cpu", "cuda")}
TOL = {"float32": 1e-5, "float64": 1e-12, "float16": 2e-3, "bfloat16": 1.6e-2}


def run(device, x, dim, dtype=None):
    out = H()
    code = ctypes.byref(I32(DTYPES[dtype])) if dtype else None
    assert SHIMS[device](x.ptr, dim, code, ctypes.byref(out)) == 0, last_error()
    return owned([out])[0]


def check(values, dim, dtype=None, make=dense):
    gpu = make(values, DEV)[0]
    cpu = make(values, "cpu")[0]
    got, want = run("cuda", gpu, dim, dtype), run("cpu", cpu, dim, dtype)
    assert layout(got)[:3] == layout(want)[:3]
    g, w = read(got), read(want)
    name = layout(got)[2]
    if name in TOL:
        scale = np.maximum(np.abs(w), np.cumsum(np.abs(np.nan_to_num(w)), axis=dim if w.ndim else None).max())
        np.testing.assert_allclose(g, w, rtol=TOL[name], atol=TOL[name] * float(np.max(scale, initial=1.0)))
    else:
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "int32", "int8", "uint8", "bool"])
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_matches_the_cpu_shim(dtype, dim):
    rng = np.random.default_rng(abs(dim))
    values = rng.integers(0, 2, (4, 7, 33)) if dtype == "bool" else rng.standard_normal((4, 7, 33)) * 20
    check(values.astype(dtype), dim)


def test_bfloat16():
    rng = np.random.default_rng(9)
    values = rng.standard_normal((6, 50))
    for dim in (0, 1):
        check(values, dim, make=lambda v, d: dense(v, d, "bfloat16"))


@pytest.mark.parametrize("src,dst", [("int64", "int32"), ("int32", "int8"), ("float32", "int64"),
                                     ("int64", "float32"), ("float32", "float16"), ("float64", "bfloat16")])
def test_dtype_argument(src, dst):
    rng = np.random.default_rng(4)
    check((rng.standard_normal((3, 300)) * 100).astype(src), -1, dst)


def test_int64_masks_as_transformers_use_them():
    rng = np.random.default_rng(5)
    mask = rng.integers(0, 2, (8, 4096)).astype(np.int64)
    check(mask, 1)
    check(mask, 0)


def test_long_lines_and_many_lines():
    rng = np.random.default_rng(6)
    check(rng.integers(-1000, 1000, (3, 1 << 20)).astype(np.int64), 1)
    check(rng.integers(-1000, 1000, (1 << 16, 5)).astype(np.int32), 1)
    check(rng.standard_normal((2, 1 << 18)).astype(np.float32), 1)


def test_strided_0d_and_empty():
    rng = np.random.default_rng(7)
    base = rng.integers(0, 50, 6 * 8 + 3)
    for dim in (0, 1):
        check(base, dim, make=lambda v, d: view(v, (8, 6), (1, 8), 3, d))
    check(np.array(2.5), 0)
    check(np.array(3, np.int64), -1)
    gpu = dense(np.zeros((3, 0, 2)), DEV)[0]
    assert layout(run("cuda", gpu, 2))[0] == (3, 0, 2)


def test_bad_arguments_are_refused():
    gpu = dense(np.ones((2, 3)), DEV)[0]
    out = H()
    assert SHIMS["cuda"](gpu.ptr, 2, None, ctypes.byref(out)) != 0 and "out of range" in last_error()
    cpu = dense(np.ones((2, 3)), "cpu")[0]
    assert SHIMS["cuda"](cpu.ptr, 0, None, ctypes.byref(out)) != 0 and "CUDA tensor" in last_error()


def test_no_host_wait_in_a_loop_of_calls(tmp_path):
    counter = interposer_library(str(tmp_path))
    counts = count_waits(counter, setup=f"""
        import sys
        sys.path[:0] = [{HERE!r}, {TESTS!r}]
        import numpy as np
        from test_cumsum_gpu import run
        from support.shims import dense, read
        x, _ = dense(np.arange(4096, dtype=np.int64).reshape(8, 512), "cuda:0")
        read(run("cuda", x, 1))
    """, body="""
        for _ in range(20):
            out = run("cuda", x, 1)
        got = read(out)
    """)
    assert {name: n for name, n in counts.items() if n} == {"cudaStreamSynchronize": 1}, counts
