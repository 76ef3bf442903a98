"""Faults: a kernel that faults, memory that runs out. Each surfaces as a
CudaError naming CUDA's error, and the process neither crashes nor hangs."""

import os

import numpy as np
import pytest

import aotirt
from support.helpers import run_python

pytestmark = pytest.mark.gpu

FAULT_MODEL = os.path.join(os.path.dirname(aotirt.__file__), "models", "testing", "fault_cuda.so")


def test_kernel_fault_surfaces_at_the_next_copy_then_the_device_is_refused():
    # In a subprocess: a faulted CUDA context cannot be recovered.
    proc = run_python(f"""
import numpy as np, aotirt
h = aotirt.CudaHandle({FAULT_MODEL!r})
x = aotirt.asarray(np.ones(64, np.float32), device=0)
(y,) = h.run([x])                      # returns at once: the fault has not surfaced yet
print("queued")
try:
    y.numpy()
except aotirt.CudaError as e:
    print("copy:", e.name)
for what, call in [("run", lambda: h.run([x])), ("empty", lambda: aotirt.empty((4,), "float32", device=0)),
                   ("copy", lambda: x.numpy())]:
    try:
        call()
        print(what, "did not raise")
    except aotirt.CudaError as e:
        print(what + ":", e.name, "|", e)
print("alive")
""")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "queued"
    assert lines[1] in ("copy: cudaErrorIllegalAddress", "copy: cudaErrorLaunchFailure"), lines
    sticky = lines[1].split()[1]
    for what, line in zip(["run", "empty", "copy"], lines[2:5]):
        assert line.startswith(f"{what}: {sticky} |"), line
        assert "cuda:0 is unusable" in line and "restart the process" in line, line
    assert lines[5] == "alive"


def test_out_of_memory_is_a_cuda_error_and_the_runtime_stays_usable():
    with pytest.raises(aotirt.CudaError) as info:
        aotirt.empty((1 << 45,), "float32", device=0)        # 128 TiB
    assert info.value.name == "cudaErrorMemoryAllocation"
    assert "cudaMallocAsync" in str(info.value)
    t = aotirt.asarray(np.arange(10, dtype=np.float32), device=0)
    np.testing.assert_array_equal(t.numpy(), np.arange(10, dtype=np.float32))
    with aotirt.CudaHandle(aotirt.models.path("add_mul", "cuda")) as h:
        np.testing.assert_array_equal(h.run([t, t, t])[0].numpy(), np.arange(10) ** 2 + np.arange(10))
