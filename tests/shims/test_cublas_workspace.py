"""The workspace aotirt gives cuBLAS (cuda_src/shims/libs/cublas_workspace.h):
its size for each form of CUBLAS_WORKSPACE_CONFIG, checked on the host, and
matmuls that still match numpy with a workspace of each kind, on the GPU."""


import pytest

from support.helpers import in_tests, run_host_check, run_python


def test_workspace_size_follows_torch_and_cublas_workspace_config(tmp_path):
    run_host_check(tmp_path, "cublas_workspace_check.cpp", includes=("cuda_src",), timeout=60)


# A float32 mm (cublasGemmEx) and bmm (cublasGemmStridedBatchedEx) on the
# CUDA shims, against numpy in float64, in a process whose cuBLAS gets the
# workspace CUBLAS_WORKSPACE_CONFIG asks for (read once per process).
PRODUCTS = """
import numpy as np
from support.helpers import relative_error
from support.shims import LIB, Space, last_error
space = Space("cuda")
rng = np.random.default_rng(7)
for op, batch in (("mm", ()), ("bmm", (3,))):
    a = space.make(batch + (96, 80), dtype=np.float32, values=rng.standard_normal(batch + (96, 80)))
    b = space.make(batch + (80, 72), dtype=np.float32, values=rng.standard_normal(batch + (80, 72)))
    out = space.make(batch + (96, 72), dtype=np.float32)  # NaN until written
    for _ in range(3):  # the workspace's block comes back from the stream's cache
        assert getattr(LIB, f"aoti_torch_cuda_{op}_out")(out.handle, a.handle, b.handle) == 0, last_error()
    error = relative_error(out.values(), np.matmul(a.values(), b.values()))
    assert error < 1e-5, (op, error)
space.close()
print("PRODUCTS OK")
"""


@pytest.mark.gpu
@pytest.mark.parametrize("config", [None, ":0:0", ":16:8"])
def test_matmuls_with_each_workspace(config):
    env = {"CUBLAS_WORKSPACE_CONFIG": config} if config else {}
    proc = run_python(in_tests(PRODUCTS), env=env)
    assert proc.returncode == 0 and "PRODUCTS OK" in proc.stdout, proc.stdout + proc.stderr
