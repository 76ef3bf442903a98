"""The scatter and index_put shims on CUDA against the same calls on the CPU
shims (which test_indexing_shims.py checks against numpy): the cases of
tests/support/indexing_shims.py, exact (small integer values make the order of
atomic updates irrelevant); out-of-range indices skipped without a wait; no
host wait in any of them."""

import numpy as np
import pytest

from support.indexing_shims import (
    case_id,
    expect_ok,
    index_put,
    index_put_cases,
    scatter,
    scatter_args,
    scatter_cases,
)
from support.waits import TESTS, count_waits, interposer_library

pytestmark = pytest.mark.gpu


def case_args(case):
    return {k: v for k, v in case.items() if k != "name"}


def assert_cuda_matches_cpu(op, args):
    results = []
    for device in ("cpu", "cuda"):
        status, call = op(device, **args)
        expect_ok(status)
        results.append(call.result())
    np.testing.assert_array_equal(results[1], results[0])


@pytest.mark.parametrize("case", scatter_cases(), ids=case_id)
def test_scatter_on_cuda_matches_the_cpu_shim(case):
    assert_cuda_matches_cpu(scatter, scatter_args(case))


@pytest.mark.parametrize("case", index_put_cases(), ids=case_id)
def test_index_put_on_cuda_matches_the_cpu_shim(case):
    assert_cuda_matches_cpu(index_put, case_args(case))


def test_many_atomic_updates_of_one_element():
    # 4096 float32 ones onto one element (exact in float32), and int64 too.
    for dtype in ("float32", "int64", "float16"):
        n = 4096 if dtype != "float16" else 1024
        x = np.zeros(2, dtype)
        status, call = scatter("cuda", x, 0, np.ones(n, np.int64), src=np.ones(n, dtype), reduce="sum", dtype=dtype)
        expect_ok(status)
        np.testing.assert_array_equal(call.result(), [0, n])


def test_out_of_range_indices_are_skipped_on_cuda():
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    status, call = scatter("cuda", x, 1, [[4, 1], [-1, 0]], src=np.full((2, 2), 9, np.float32))
    expect_ok(status)
    expected = x.copy()
    expected[0, 1] = expected[1, 0] = 9
    np.testing.assert_array_equal(call.result(), expected)
    status, call = index_put("cuda", x, [np.array([5, 1, -3])], np.full(4, 7, np.float32), accumulate=True)
    expect_ok(status)
    expected = x.copy()
    expected[1] += 7
    np.testing.assert_array_equal(call.result(), expected)
    # The same on the whole-row path (rows of 16 float32): only row 1 is written.
    x = np.arange(32, dtype=np.float32).reshape(2, 16)
    status, call = index_put("cuda", x, [np.array([5, 1, -3])], np.full(16, 7, np.float32))
    expect_ok(status)
    expected = x.copy()
    expected[1] = 7
    np.testing.assert_array_equal(call.result(), expected)


def test_cuda_refuses_boolean_masks():
    status, _ = index_put("cuda", np.zeros((2, 2), np.float32), [np.ones((2, 2), bool)], np.ones(1, np.float32))
    assert status != 0


def test_no_host_wait(tmp_path_factory):
    counter = interposer_library(str(tmp_path_factory.mktemp("interposer")))
    setup = f"""
        import sys
        sys.path.insert(0, {TESTS!r})
        import numpy as np
        from support.indexing_shims import index_put, scatter
        x = np.zeros((64, 32), np.float32)
        idx = np.random.default_rng(0).integers(0, 64, (48, 32))
        src = np.ones((48, 32), np.float32)
        calls = [scatter("cuda", x, 0, idx, src=src, reduce="mean", include_self=False)]
        calls[0][1].result()
    """
    body = """
        for reduce in ("sum", "prod", "mean", "amax", "amin"):
            calls.append(scatter("cuda", x, 0, idx, src=src, reduce=reduce))
        calls.append(scatter("cuda", x, 0, idx, src=src))
        calls.append(index_put("cuda", x, [idx[:, 0]], src[:1, :], accumulate=True))
        assert all(status == 0 for status, _ in calls)
        del calls
    """
    counts = count_waits(counter, body, setup)
    assert {name: n for name, n in counts.items() if n} == {}
