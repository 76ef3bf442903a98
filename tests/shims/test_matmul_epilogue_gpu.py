"""aoti_torch_cuda_addmm_out and aoti_torch_cuda__addmm_activation with a
bias row: one cuBLASLt matmul with a BIAS / RELU_BIAS / GELU_BIAS epilogue
(cuda_src/shims/matmul/gemm_epilogue.cpp), and the cuBLAS path for every
case it leaves alone, both against numpy in float64 on the rounded operands.

Which path ran is seen in a fresh interpreter whose AOTIRT_CUBLASLT names a
missing file: a call the epilogue path takes fails naming cuBLASLt, one it
leaves to cuBLAS succeeds.

Tolerances, as ||out - ref|| / ||ref||: twice test_matmul_shims.py's (the
cuBLAS path rounds the product, then the activation rounds again).
"""

import ctypes
import math
import threading

import numpy as np
import pytest

from support.helpers import in_tests, relative_error, run_python
from support.shims import BF16, F64, I32, LIB, H, P, Space, last_error, layout, owned, read, shim

pytestmark = pytest.mark.gpu
DTYPES = [np.float32, np.float16, BF16]
IDS = ["float32", "float16", "bfloat16"]
TOL = {np.float32: 2e-5, np.float16: 2e-2, BF16: 2e-2, np.float64: 2e-12}
shim("aoti_torch_cuda__addmm_activation", P, P, P, F64, F64, I32, P)


@pytest.fixture
def s():
    space = Space("cuda")
    yield space
    space.close()


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def matrix(s, rng, shape, kind, dtype):
    """[R, C] row-major ("row"), or the transpose of a row-major [C, R]
    ("col": a permuted view, as a Linear's weight.t())."""
    r, c = shape
    strides = (c, 1) if kind == "row" else (1, r)
    return s.make(shape, strides, dtype=dtype, values=rng.standard_normal(shape))


def bias_of(s, rng, m, n, kind, dtype):
    """self for addmm: a [N] row in its several forms, or what must not take the epilogue."""
    row = rng.standard_normal(n)
    if kind == "1d":
        return s.make((n,), dtype=dtype, values=row)
    if kind == "row":  # [1, N]
        return s.make((1, n), dtype=dtype, values=row[None, :])
    if kind == "expanded":  # [N] expanded to [M, N], as Inductor passes a Linear's bias
        return s.make((m, n), (0, 1), dtype=dtype, values=np.broadcast_to(row, (m, n)))
    if kind == "full":  # a whole [M, N] self: the cuBLAS path
        return s.make((m, n), dtype=dtype, values=rng.standard_normal((m, n)))
    if kind == "misaligned":  # one element past an aligned start: the cuBLAS path
        return s.make((n,), offset=1, dtype=dtype, values=row)
    if kind == "strided":  # a non-contiguous [N]: the cuBLAS path
        return s.make((n,), (2,), dtype=dtype, values=row)
    raise ValueError(kind)


def addmm(s, out, bias, a, b, beta, alpha):
    status = LIB.aoti_torch_cuda_addmm_out(out.handle, bias.handle, a.handle, b.handle, beta, alpha)
    assert status == 0, last_error()


def addmm_activation(bias, a, b, beta, alpha, use_gelu):
    ret = H()
    status = LIB.aoti_torch_cuda__addmm_activation(bias.handle, a.handle, b.handle, beta, alpha, use_gelu,
                                                   ctypes.byref(ret))
    assert status == 0, last_error()
    return owned([ret])[0]


def want_addmm(bias, a, b, beta, alpha, m, n):
    return alpha * (a.values() @ b.values()) + beta * np.broadcast_to(bias.values(), (m, n))


# ---- addmm_out ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("bias_kind", ["1d", "row", "expanded"])
@pytest.mark.parametrize("m,k,n", [(64, 96, 40), (33, 17, 9), (2, 2, 2), (256, 1024, 4096)])
@pytest.mark.parametrize("alpha", [1.0, -0.75])
def test_addmm_bias_row(s, dtype, bias_kind, m, k, n, alpha):
    rng = np.random.default_rng(m + k + n)
    a = matrix(s, rng, (m, k), "row", dtype)
    b = matrix(s, rng, (k, n), "col", dtype)
    bias = bias_of(s, rng, m, n, bias_kind, dtype)
    out = s.make((m, n), dtype=dtype)  # NaN until written
    addmm(s, out, bias, a, b, 1.0, alpha)
    assert relative_error(out.values(), want_addmm(bias, a, b, 1.0, alpha, m, n)) < TOL[dtype]


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("a_kind", ["row", "col"])
@pytest.mark.parametrize("b_kind", ["row", "col"])
def test_addmm_bias_row_transposed_factors(s, dtype, a_kind, b_kind):
    rng = np.random.default_rng(7)
    m, k, n = 48, 80, 24
    a = matrix(s, rng, (m, k), a_kind, dtype)
    b = matrix(s, rng, (k, n), b_kind, dtype)
    bias = bias_of(s, rng, m, n, "1d", dtype)
    out = s.make((m, n), dtype=dtype)
    addmm(s, out, bias, a, b, 1.0, 1.0)
    assert relative_error(out.values(), want_addmm(bias, a, b, 1.0, 1.0, m, n)) < TOL[dtype]


@pytest.mark.parametrize("dtype", DTYPES + [np.float64], ids=IDS + ["float64"])
@pytest.mark.parametrize("case", ["beta", "full", "misaligned", "strided", "m1", "n1", "k1", "col_out", "alpha0"])
def test_addmm_cases_the_epilogue_leaves_to_cublas(s, dtype, case):
    rng = np.random.default_rng(11)
    m, k, n = {"m1": (1, 40, 17), "n1": (20, 30, 1), "k1": (20, 1, 17)}.get(case, (20, 30, 17))
    beta = 0.5 if case == "beta" else 1.0
    alpha = 0.0 if case == "alpha0" else 1.25
    a = matrix(s, rng, (m, k), "row", dtype)
    b = matrix(s, rng, (k, n), "col", dtype)
    bias = bias_of(s, rng, m, n, case if case in ("full", "misaligned", "strided") else "1d", dtype)
    out_strides = (1, m) if case == "col_out" else None
    out = s.make((m, n), out_strides, dtype=dtype)
    addmm(s, out, bias, a, b, beta, alpha)
    assert relative_error(out.values(), want_addmm(bias, a, b, beta, alpha, m, n)) < TOL[dtype]


def test_addmm_bias_row_padded_out_keeps_the_padding(s):
    # A row-major out with a leading dimension past its rows: the epilogue
    # path writes it in place (ld = the row stride) and leaves the gaps alone.
    rng = np.random.default_rng(12)
    m, k, n = 16, 32, 24
    a = matrix(s, rng, (m, k), "row", np.float32)
    b = matrix(s, rng, (k, n), "row", np.float32)
    bias = bias_of(s, rng, m, n, "1d", np.float32)
    out = s.make((m, n), (n + 8, 1), dtype=np.float32, fill=7.0)
    addmm(s, out, bias, a, b, 1.0, 1.0)
    assert relative_error(out.values(), want_addmm(bias, a, b, 1.0, 1.0, m, n)) < 2e-5
    whole = out.base_values()
    inside = np.zeros(whole.size, bool)
    for i in range(m):
        inside[i * (n + 8): i * (n + 8) + n] = True
    assert np.all(whole[~inside] == 7.0)


def test_addmm_each_call_adds_its_own_bias(s):
    # One shape, so one cached descriptor: the bias pointer is set per call.
    rng = np.random.default_rng(13)
    m, k, n = 32, 64, 48
    a = matrix(s, rng, (m, k), "row", np.float32)
    b = matrix(s, rng, (k, n), "col", np.float32)
    for _ in range(2):
        for i in range(3):
            bias = s.make((n,), dtype=np.float32, values=np.full(n, 10.0 * i) + rng.standard_normal(n))
            out = s.make((m, n), dtype=np.float32)
            addmm(s, out, bias, a, b, 1.0, 1.0)
            assert relative_error(out.values(), want_addmm(bias, a, b, 1.0, 1.0, m, n)) < 2e-5


def test_addmm_bias_row_from_threads():
    # Eight threads share the cached descriptor of one shape, each with its own bias.
    errors = []

    def work(seed):
        s = Space("cuda")
        try:
            rng = np.random.default_rng(seed)
            a = matrix(s, rng, (64, 32), "row", np.float32)
            b = matrix(s, rng, (32, 40), "col", np.float32)
            for _ in range(5):
                bias = s.make((40,), dtype=np.float32, values=100.0 * seed + rng.standard_normal(40))
                out = s.make((64, 40), dtype=np.float32)
                addmm(s, out, bias, a, b, 1.0, 1.0)
                if relative_error(out.values(), want_addmm(bias, a, b, 1.0, 1.0, 64, 40)) > 2e-5:
                    errors.append(seed)
        except Exception as e:  # a thread's exception would otherwise only be printed
            errors.append(repr(e))
        finally:
            s.close()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_addmm_bias_row_out_belongs_to_the_shared_stream(s):
    import aotirt

    rng = np.random.default_rng(14)
    a, b = matrix(s, rng, (8, 16), "row", np.float32), matrix(s, rng, (16, 8), "row", np.float32)
    bias = bias_of(s, rng, 8, 8, "1d", np.float32)
    out = s.make((8, 8), dtype=np.float32)
    addmm(s, out, bias, a, b, 1.0, 1.0)
    assert LIB.aotirt_stream_handle(LIB.aotirt_tensor_stream(out.handle)) == aotirt.Stream.shared(0).handle


# ---- _addmm_activation ----------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("use_gelu", [0, 1])
@pytest.mark.parametrize("m,k,n", [(64, 96, 40), (33, 17, 9), (256, 1024, 4096)])
@pytest.mark.parametrize("alpha", [1.0, 1.5])
@pytest.mark.parametrize("b_kind", ["row", "col"])
def test_addmm_activation_fused(s, dtype, use_gelu, m, k, n, alpha, b_kind):
    rng = np.random.default_rng(m * n + use_gelu)
    a = matrix(s, rng, (m, k), "row", dtype)
    b = matrix(s, rng, (k, n), b_kind, dtype)
    bias = bias_of(s, rng, m, n, "1d", dtype)
    out = addmm_activation(bias, a, b, 1.0, alpha, use_gelu)
    assert layout(out)[:2] == ((m, n), (n, 1))
    pre = want_addmm(bias, a, b, 1.0, alpha, m, n)
    want = gelu_tanh(pre) if use_gelu else np.maximum(pre, 0)
    got = read(out)
    assert np.all(np.isfinite(got))
    assert relative_error(got, want) < TOL[dtype]
    if not use_gelu:
        assert (got >= 0).all()


@pytest.mark.parametrize("dtype", DTYPES + [np.float64], ids=IDS + ["float64"])
@pytest.mark.parametrize("use_gelu", [0, 1])
@pytest.mark.parametrize("case", ["beta", "full", "misaligned", "m1", "row", "n_odd"])
def test_addmm_activation_other_cases(s, dtype, use_gelu, case):
    rng = np.random.default_rng(17 + use_gelu)
    m, k, n = {"m1": (1, 40, 17)}.get(case, (20, 30, 17))
    beta = 0.5 if case == "beta" else 1.0
    a = matrix(s, rng, (m, k), "row", dtype)
    b = matrix(s, rng, (k, n), "col", dtype)
    bias = bias_of(s, rng, m, n, case if case in ("full", "misaligned", "row") else "1d", dtype)
    out = addmm_activation(bias, a, b, beta, 1.0, use_gelu)
    pre = want_addmm(bias, a, b, beta, 1.0, m, n)
    want = gelu_tanh(pre) if use_gelu else np.maximum(pre, 0)
    assert relative_error(read(out), want) < TOL[dtype]


# ---- which path ran ---------------------------------------------------------------------

WHICH_PATH = """
    import ctypes, json
    import numpy as np
    from support.shims import BF16, F64, I32, LIB, H, P, Space, last_error, shim
    shim("aoti_torch_cuda__addmm_activation", P, P, P, F64, F64, I32, P)
    s = Space("cuda")
    rng = np.random.default_rng(0)
    def mat(shape, strides=None, dtype=np.float32):
        return s.make(shape, strides, dtype=dtype, values=rng.standard_normal(shape))
    def run(name, out, bias, a, b, beta=1.0, alpha=1.0, act=None):
        if act is None:
            status = LIB.aoti_torch_cuda_addmm_out(out.handle, bias.handle, a.handle, b.handle, beta, alpha)
        else:
            ret = H()
            status = LIB.aoti_torch_cuda__addmm_activation(bias.handle, a.handle, b.handle, beta, alpha, act,
                                                           ctypes.byref(ret))
        print(json.dumps([name, status, last_error() if status else ""]))
    m, k, n = 24, 32, 40
    a, w, b = mat((m, k)), mat((k, n), (1, k)), mat((k, n))
    bias, out = mat((n,)), mat((m, n))
    # taken by the epilogue path
    run("bias_1d", out, bias, a, w)
    run("bias_row", out, mat((1, n)), a, b)
    run("bias_expanded", out, s.make((m, n), (0, 1), dtype=np.float32, values=np.ones((m, n))), a, w)
    run("alpha", out, bias, a, w, alpha=-2.0)
    run("half", mat((m, n), dtype=np.float16), mat((n,), dtype=np.float16), mat((m, k), dtype=np.float16),
        mat((k, n), dtype=np.float16))
    run("bf16", mat((m, n), dtype=BF16), mat((n,), dtype=BF16), mat((m, k), dtype=BF16), mat((k, n), dtype=BF16))
    run("relu", None, bias, a, w, act=0)
    run("gelu_half", None, mat((n,), dtype=np.float16), mat((m, k), dtype=np.float16),
        mat((k, n), (1, k), dtype=np.float16), act=1)
    run("gelu_float32", None, bias, a, w, act=1)
    print("---")
    # left to cuBLAS
    run("beta", out, bias, a, w, beta=0.5)
    run("alpha0", out, bias, a, w, alpha=0.0)
    run("full", out, mat((m, n)), a, w)
    run("misaligned", out, s.make((n,), offset=1, dtype=np.float32, values=np.ones(n)), a, w)
    run("strided_bias", out, s.make((n,), (2,), dtype=np.float32, values=np.ones(n)), a, w)
    run("m1", mat((1, n)), bias, mat((1, k)), w)
    run("k1", out, bias, mat((m, 1)), mat((1, n)))
    run("float64", mat((m, n), dtype=np.float64), mat((n,), dtype=np.float64), mat((m, k), dtype=np.float64),
        mat((k, n), dtype=np.float64))
    run("strided_mat2", out, bias, a, s.make((k, n), (2 * n, 2), dtype=np.float32, values=np.ones((k, n))))
    run("col_out", mat((m, n), (1, m)), bias, a, w)
    run("out_is_mat1", a, mat((k,)), a, mat((k, k)))
    run("relu_beta", None, bias, a, w, beta=2.0, act=0)
    run("gelu_m1", None, bias, mat((1, k)), w, act=1)
"""


def test_which_calls_take_the_epilogue_path(tmp_path):
    import json

    missing = str(tmp_path / "nothing" / "libcublasLt.so.13")
    proc = run_python(in_tests(WHICH_PATH), env={"AOTIRT_CUBLASLT": missing})
    assert proc.returncode == 0, proc.stderr
    taken, left = proc.stdout.split("---\n")
    for line in taken.splitlines():
        name, status, message = json.loads(line)
        assert status != 0, name
        assert "cuBLASLt could not be loaded from AOTIRT_CUBLASLT=" in message, (name, message)
    for line in left.splitlines():
        name, status, message = json.loads(line)
        assert status == 0, (name, message)
