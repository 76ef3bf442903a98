"""aoti_torch_cuda_{sort,sort_stable,topk} (CUB radix sorts) through
ctypes, as a model library calls them, against numpy's stable argsort in
torch's order (support/sort_shims.py) and against the CPU shims: every
aotirt sort is stable on both devices, so values and indices must agree
exactly, including the sign of zeros and NaN positions.

Also: the outputs' layouts (torch's meta functions', as on the CPU), large
inputs (CUB's multi-pass paths, many lines and few long ones), no host wait
in a loop of calls, and the shims inside a CUDA graph (the sort_ops test
model, captured and replayed).
"""

import os

import numpy as np
import pytest

import aotirt
from support.shims import dense, last_error, layout, read, view
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
from support.waits import count_waits, interposer_library

pytestmark = pytest.mark.gpu
HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
DEV = "cuda:0"
FLOATS = ["float32", "float64", "float16", "bfloat16"]
ALL = FLOATS + ["int64", "int32", "int16", "int8", "uint8", "bool"]
SORT_OPS = os.path.join(os.path.dirname(aotirt.__file__), "models", "testing", "sort_ops_cuda.so")


def operands(values, dtype):
    """The same values as a CUDA handle and a CPU handle, and the exact values."""
    gpu, rounded = dense(values, DEV, dtype)
    cpu, _ = dense(values, "cpu", dtype)
    return gpu, cpu, (rounded if dtype in FLOATS else np.asarray(values).astype(dtype))


def check_sort(gpu, cpu, values, dim, descending, stable=None):
    got_values, got_indices = sort(gpu, dim, descending, DEV, stable)
    cpu_values, cpu_indices = sort(cpu, dim, descending, "cpu", stable)
    assert layout(got_values)[:3] == layout(cpu_values)[:3]
    assert layout(got_indices)[:3] == layout(cpu_indices)[:3]
    want_values, want_indices = expected_sort(values, dim, descending)
    assert_same_values(read(got_values), want_values)
    np.testing.assert_array_equal(read(got_indices), want_indices)
    np.testing.assert_array_equal(read(got_indices), read(cpu_indices))


def check_topk(gpu, cpu, values, k, dim, largest):
    got_values, got_indices = topk(gpu, k, dim, largest, DEV)
    cpu_values, cpu_indices = topk(cpu, k, dim, largest, "cpu")
    assert layout(got_values)[:3] == layout(cpu_values)[:3]
    assert layout(got_indices)[:3] == layout(cpu_indices)[:3]
    want_values, want_indices = expected_topk(values, k, dim, largest)
    assert_same_values(read(got_values), want_values)
    np.testing.assert_array_equal(read(got_indices), want_indices)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_matches_numpy_and_the_cpu_shim(dtype, dim, descending):
    rng = np.random.default_rng(abs(dim) * 2 + descending)
    gpu, cpu, values = operands(sample((4, 5, 33), dtype, rng), dtype)
    for stable in (None, True, "null"):
        check_sort(gpu, cpu, values, dim, descending, stable)
    assert layout(sort(gpu, dim, descending, DEV)[0])[:3] == ((4, 5, 33), (165, 33, 1), dtype)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("dim", [0, -1])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_matches_numpy_and_the_cpu_shim(dtype, dim, largest):
    rng = np.random.default_rng(9)
    shape = (6, 40)
    gpu, cpu, values = operands(sample(shape, dtype, rng), dtype)
    n = shape[dim]
    for k in sorted({0, 1, 3, n // 2, n}):
        check_topk(gpu, cpu, values, k, dim, largest)


@pytest.mark.parametrize("shape,dim", [((1, 300_000), 1), ((8, 128_256), -1), ((20_000, 7), 1),
                                       ((3, 1000, 17), 1), ((70_000,), 0)])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int64", "float64"])
def test_large_inputs(shape, dim, dtype):
    """Many lines, few long ones, one line: CUB's multi-pass sorts."""
    rng = np.random.default_rng(11)
    values = rng.standard_normal(shape) * 100
    if dtype == "int64":
        values = rng.integers(-(2**62), 2**62, shape)
        values.reshape(-1)[::5] = 3          # long runs of ties
    else:
        values.reshape(-1)[::97] = np.nan
        values.reshape(-1)[1::13] = 0.25     # ties
    gpu, cpu, exact = operands(values, dtype)
    check_sort(gpu, cpu, exact, dim, True)
    check_sort(gpu, cpu, exact, dim, False)
    check_topk(gpu, cpu, exact, min(50, shape[dim]), dim, True)


@pytest.mark.parametrize("case", DISPATCH_CASES, ids=dispatch_id)
def test_every_way_of_the_cuda_sort(case):
    """Block sorts of each size, top-k by tile selection (one round, three)
    and by the radix sort, on ties, all-equal and mostly-NaN lines: the
    stable order exactly (test_sort_shims.py checks these shapes reach
    every way, and runs them on the CPU shims)."""
    shape, dim, dtype, fill, ks = case
    gpu, cpu, values = operands(dispatch_values(shape, dtype, fill, np.random.default_rng(shape[dim])), dtype)
    for descending in (False, True):
        check_sort(gpu, cpu, values, dim, descending)
        for k in ks:
            check_topk(gpu, cpu, values, k, dim, descending)


def test_strided_inputs_and_layouts():
    rng = np.random.default_rng(5)
    base = rng.standard_normal(200)
    for shape, strides, offset in [((5, 3, 4), (1, 20, 5), 7), ((4, 3), (6, 2), 1), ((3, 4), (2, 6), 0)]:
        gpu, values = view(base, shape, strides, offset, DEV)
        cpu, _ = view(base, shape, strides, offset, "cpu")
        for dim in range(len(shape)):
            for descending in (False, True):
                check_sort(gpu, cpu, values, dim, descending)
            check_topk(gpu, cpu, values, 2, dim, True)


def test_nan_order_and_zero_signs():
    values = np.array([1.0, np.nan, -0.0, 0.0, 3.0, np.nan, -np.inf], np.float32)
    gpu, _ = dense(values, DEV)
    got, idx = sort(gpu, 0, device=DEV)
    np.testing.assert_array_equal(read(idx), [6, 2, 3, 0, 4, 1, 5])
    assert_same_values(read(got), values[[6, 2, 3, 0, 4, 1, 5]].astype(np.float64))
    _, idx = sort(gpu, 0, True, DEV)
    np.testing.assert_array_equal(read(idx), [1, 5, 4, 0, 2, 3, 6])
    _, idx = topk(gpu, 3, 0, True, DEV)
    np.testing.assert_array_equal(read(idx), [1, 5, 4])


def test_zero_dim_empty_and_errors():
    x, _ = dense(np.array(2.5), DEV)
    for dim in (0, -1):
        got, idx = sort(x, dim, device=DEV)
        assert layout(got)[0] == () and read(got) == 2.5 and read(idx) == 0
        for k in (0, 1):
            got, idx = topk(x, k, dim, device=DEV)
            assert layout(got)[0] == () and read(got) == 2.5 and read(idx) == 0
    e, _ = dense(np.zeros((2, 0, 3)), DEV)
    assert layout(sort(e, 1, device=DEV)[0])[0] == (2, 0, 3)
    assert layout(topk(e, 2, 2, device=DEV)[0])[0] == (2, 0, 2)
    y, _ = dense(np.ones((3, 4), np.float32), DEV)
    assert layout(topk(y, 0, 1, device=DEV)[1])[0] == (3, 0)
    status, values, _ = call_topk(y, 5, 1, device=DEV)
    assert status != 0 and values is None and "selected index k out of range" in last_error()
    status, values, _ = call_sort(y, 2, device=DEV)
    assert status != 0 and "Dimension out of range" in last_error()
    c, _ = dense(np.ones((3, 4)), "cpu")
    status, _, _ = call_sort(c, 0, device=DEV)
    assert status != 0 and "must be a CUDA tensor" in last_error()
    g, _ = dense(np.ones((3, 4)), DEV)
    status, _, _ = call_topk(g, 1, 0, device="cpu")
    assert status != 0 and "must be a CPU tensor" in last_error()


def test_sorts_never_wait(tmp_path):
    counter = interposer_library(str(tmp_path))
    counts = count_waits(counter, setup=f"""
        import sys
        sys.path[:0] = [{HERE!r}, {TESTS!r}]
        import numpy as np
        from support.shims import dense, read
        from support.sort_shims import sort, topk
        x, _ = dense(np.random.default_rng(0).standard_normal((8, 5000)), "cuda:0", "float32")
        read(topk(x, 10, -1, True, "cuda:0")[0])
    """, body="""
        for _ in range(10):
            values, indices = topk(x, 10, -1, True, "cuda:0")
            s, order = sort(x, 0, True, "cuda:0", True)
        read(order)
    """)
    assert {name: n for name, n in counts.items() if n} == {"cudaStreamSynchronize": 1}, counts


def test_captured_in_a_cuda_graph_replays_what_eager_computes():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 300)).astype(np.float32)
    x[0, ::7] = 0.5
    with aotirt.CudaHandle(SORT_OPS, 0) as handle:
        eager = [t.numpy() for t in handle.run([x])]
        want_values, want_indices = expected_topk(x.astype(np.float64), 5, 1, True)
        np.testing.assert_array_equal(eager[0], want_values.astype(np.float32))
        np.testing.assert_array_equal(eager[1], want_indices)
        want_sorted, want_order = expected_sort(x.astype(np.float64), 0, True)
        np.testing.assert_array_equal(eager[2], want_sorted.astype(np.float32))
        np.testing.assert_array_equal(eager[3], want_order)
        with handle.capture([x]) as graph:
            for got, want in zip(graph.outputs, eager):
                np.testing.assert_array_equal(got.numpy(), want)
            x2 = rng.standard_normal(x.shape).astype(np.float32)
            replayed = [t.numpy() for t in graph.replay([x2])]
            again = [t.numpy() for t in handle.run([x2])]
            for got, want in zip(replayed, again):
                np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(replayed[1], expected_topk(x2.astype(np.float64), 5, 1, True)[1])
