"""bench/fallback_ops.py on the CPU: every case has a builder on both sides,
every shim its aotirt side calls is one libaotirt.so exports, and the cases'
shapes are ones the shims take (the GPU run is where they are timed)."""

import os
import re
import sys

from support.helpers import REPO
from support.shims import LIB

sys.path.insert(0, os.path.join(REPO, "bench"))
import fallback_ops  # noqa: E402

SOURCE = open(os.path.join(REPO, "bench", "fallback_ops.py")).read()


def test_every_case_has_a_builder_on_both_sides():
    for case in fallback_ops.CASES:
        name = "build_" + case["op"].lstrip("_")
        assert hasattr(fallback_ops.AotirtWorker, name), case["op"]
        assert hasattr(fallback_ops.TorchWorker, name), case["op"]


def test_every_shim_called_is_exported():
    names = set(re.findall(r'"(aoti_torch_\w+)"', SOURCE))
    assert len(names) >= 14 and "aoti_torch_copy_" in names
    missing = [n for n in sorted(names) if not hasattr(LIB, n)]
    assert not missing, missing


def test_rows_carry_the_target_and_their_shim():
    rows = fallback_ops.cases()
    assert len(rows) == len(fallback_ops.CASES)
    assert all(r["target"] == 1.2 and r["shim"] == r["op"] and r["shape"] for r in rows)
    assert len({(r["op"], r["model"], r["shape"], r["dtype"]) for r in rows}) == len(rows)


def test_shapes_are_ones_the_shims_take():
    for case in fallback_ops.CASES:
        if case["op"] == "_weight_int4pack_mm":
            # int4pack_cuda.cu: n in rows of 8, k in tiles of innerKTiles * 16, whole groups.
            assert case["n"] % 8 == 0 and case["k"] % (case["inner"] * 16) == 0
            assert case["group"] in (32, 64, 128, 256) and case["k"] % case["group"] == 0
        if case["op"] in ("_int_mm", "_scaled_mm"):
            # cuBLASLt's int8 and float8 kernels: m above 16, k and n multiples of 16.
            assert case["m"] > 16 and case["k"] % 16 == 0 and case["n"] % 16 == 0
        if case["op"] == "index_put" and not case["accumulate"]:
            assert case["picks"] <= case["rows"]   # distinct rows: a permutation's prefix
        if case["op"] == "copy_":
            # The view lies inside the elements under it.
            reach = sum((size - 1) * stride for size, stride in zip(case["sizes"], case["strides"]))
            assert len(case["sizes"]) == len(case["strides"]) and 0 <= reach < case["base"], case["model"]


def test_an_op_that_no_row_times_is_refused():
    import subprocess

    done = subprocess.run([sys.executable, os.path.join(REPO, "bench", "fallback_ops.py"), "--op", "_no_such_op"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "--op _no_such_op: no row times it" in done.stderr and "_weight_int4pack_mm" in done.stderr
