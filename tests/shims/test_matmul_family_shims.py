"""The rest of the GEMM family against numpy: aoti_torch_{cpu,cuda}_
baddbmm_out, addmv, _addmm_activation and _int_mm_out, which share mm's
Problem and layout rules (cuda_src/shims/matmul/gemm.h).

Each test runs on the CPU shims and, marked gpu, on the CUDA shims
(cuBLAS), with tolerances as test_matmul_shims.py's; _int_mm is exact.
"""

import ctypes
import math

import numpy as np
import pytest

from support.helpers import relative_error
from support.shims import BF16, F64, I32, LIB, H, P, Space, last_error, layout, owned, read, shim

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
DTYPES = [np.float64, np.float32, np.float16, BF16]
TOLERANCE = {
    "cpu": {np.float64: 1e-13, np.float32: 1e-6, np.float16: 1e-3, BF16: 1e-2},
    "cuda": {np.float64: 1e-12, np.float32: 1e-5, np.float16: 1e-2, BF16: 1e-2},
}
for _d in ("cpu", "cuda"):
    shim(f"aoti_torch_{_d}_baddbmm_out", P, P, P, P, F64, F64)
    shim(f"aoti_torch_{_d}_addmv", P, P, P, F64, F64, P)
    shim(f"aoti_torch_{_d}__addmm_activation", P, P, P, F64, F64, I32, P)
    shim(f"aoti_torch_{_d}__int_mm_out", P, P, P)


@pytest.fixture(params=DEVICES)
def space(request):
    s = Space(request.param)
    yield s
    s.close()


def values(rng, shape):
    return rng.standard_normal(shape)


def returned(space, op, *args):
    """The tensor a ret0 shim made (an owned Handle)."""
    ret = H()
    status = getattr(LIB, f"aoti_torch_{space.device}_{op}")(*args, ctypes.byref(ret))
    assert status == 0, last_error()
    return owned([ret])[0]


@pytest.mark.parametrize("self_shape", [(3, 4, 5), (4, 5), (1, 5), (5,), (3, 1, 5), ()])
@pytest.mark.parametrize("beta,alpha", [(1.0, 1.0), (0.5, -2.0), (0.0, 1.5)])
def test_baddbmm_broadcasts_self_over_the_batch(space, self_shape, beta, alpha):
    rng = np.random.default_rng(len(self_shape))
    a = space.make((3, 4, 6), values=values(rng, (3, 4, 6)))
    b = space.make((3, 6, 5), strides=(30, 1, 6), values=values(rng, (3, 6, 5)))   # transposed matrices
    s = space.make(self_shape, values=values(rng, self_shape))
    out = space.make((3, 4, 5))
    assert getattr(LIB, f"aoti_torch_{space.device}_baddbmm_out")(out.handle, s.handle, a.handle, b.handle, beta,
                                                         alpha) == 0, last_error()
    want = alpha * (a.values() @ b.values()) + (beta * np.broadcast_to(s.values(), (3, 4, 5)) if beta else 0)
    assert relative_error(out.values(), want) < TOLERANCE[space.device][np.float64]


@pytest.mark.parametrize("dtype", DTYPES)
def test_baddbmm_dtypes_and_out_is_self(space, dtype):
    rng = np.random.default_rng(1)
    a = space.make((2, 7, 3), dtype=dtype, values=values(rng, (2, 7, 3)))
    b = space.make((2, 3, 9), dtype=dtype, values=values(rng, (2, 3, 9)))
    s = space.make((2, 7, 9), dtype=dtype, values=values(rng, (2, 7, 9)))
    want = 0.5 * s.values() + 2.0 * (a.values() @ b.values())
    assert getattr(LIB, f"aoti_torch_{space.device}_baddbmm_out")(s.handle, s.handle, a.handle, b.handle, 0.5,
                                                         2.0) == 0, last_error()
    assert relative_error(s.values(), want) < TOLERANCE[space.device][dtype]


def test_baddbmm_wrong_self(space):
    a, b = space.make((2, 3, 4), values=np.ones((2, 3, 4))), space.make((2, 4, 5), values=np.ones((2, 4, 5)))
    out = space.make((2, 3, 5))
    bad = space.make((3, 3, 5), values=np.ones((3, 3, 5)))
    assert getattr(LIB, f"aoti_torch_{space.device}_baddbmm_out")(out.handle, bad.handle, a.handle, b.handle, 1.0, 1.0) != 0
    assert "does not broadcast to [2, 3, 5]" in last_error()


@pytest.mark.parametrize("self_shape", [(6,), (1,), ()])
@pytest.mark.parametrize("mat_kind", ["row", "col"])
@pytest.mark.parametrize("beta,alpha", [(1.0, 1.0), (2.0, -0.5), (0.0, 1.0)])
def test_addmv(space, self_shape, mat_kind, beta, alpha):
    rng = np.random.default_rng(2)
    mat = space.make((6, 4), strides=(4, 1) if mat_kind == "row" else (1, 6), values=values(rng, (6, 4)))
    vec = space.make((4,), strides=(3,), values=values(rng, (4,)))   # a strided vector
    s = space.make(self_shape, values=values(rng, self_shape))
    out = returned(space, "addmv", s.handle, mat.handle, vec.handle, beta, alpha)
    assert layout(out)[:3] == ((6,), (1,), "float64")
    want = alpha * (mat.values() @ vec.values()) + (beta * np.broadcast_to(s.values(), (6,)) if beta else 0)
    assert relative_error(read(out), want) < TOLERANCE[space.device][np.float64]


@pytest.mark.parametrize("dtype", DTYPES)
def test_addmv_dtypes(space, dtype):
    rng = np.random.default_rng(3)
    mat = space.make((33, 17), dtype=dtype, values=values(rng, (33, 17)))
    vec = space.make((17,), dtype=dtype, values=values(rng, (17,)))
    s = space.make((33,), dtype=dtype, values=values(rng, (33,)))
    out = returned(space, "addmv", s.handle, mat.handle, vec.handle, 1.0, 1.0)
    assert layout(out)[2] == (dtype if dtype == BF16 else np.dtype(dtype).name)
    assert relative_error(read(out), s.values() + mat.values() @ vec.values()) < TOLERANCE[space.device][dtype]


def test_addmv_checks_shapes(space):
    mat, vec = space.make((6, 4), values=np.ones((6, 4))), space.make((5,), values=np.ones(5))
    s = space.make((6,), values=np.ones(6))
    ret = H()
    assert getattr(LIB, f"aoti_torch_{space.device}_addmv")(s.handle, mat.handle, vec.handle, 1.0, 1.0, ctypes.byref(ret)) != 0
    assert "size mismatch" in last_error() and not ret


def gelu_erf(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


@pytest.mark.parametrize("use_gelu", [0, 1])
@pytest.mark.parametrize("dtype", DTYPES)
def test_addmm_activation(space, use_gelu, dtype):
    rng = np.random.default_rng(4 + use_gelu)
    a = space.make((9, 5), dtype=dtype, values=values(rng, (9, 5)))
    b = space.make((5, 7), strides=(1, 5), dtype=dtype, values=values(rng, (5, 7)))
    s = space.make((7,), dtype=dtype, values=values(rng, (7,)))
    out = returned(space, "_addmm_activation", s.handle, a.handle, b.handle, 1.0, 1.0, use_gelu)
    assert layout(out)[:2] == ((9, 7), (7, 1))
    pre = s.values() + a.values() @ b.values()
    # torch's: tanh-approximated gelu on CUDA, the exact one on the CPU.
    gelu = gelu_tanh if space.device == "cuda" else gelu_erf
    want = gelu(pre) if use_gelu else np.maximum(pre, 0)
    assert relative_error(read(out), want) < 2 * TOLERANCE[space.device][dtype]
    if not use_gelu:
        assert (read(out) >= 0).all()


def test_addmm_activation_gelu_forms_differ_as_torchs_do():
    # The two gelu forms differ by up to ~1e-3 near |x| = 2: the CPU's is the exact one.
    x = np.linspace(-4, 4, 81)
    assert np.abs(gelu_erf(x) - gelu_tanh(x)).max() > 1e-4


@pytest.mark.parametrize("b_kind", ["row", "col"])
def test_int_mm_is_exact(space, b_kind):
    rng = np.random.default_rng(6)
    m, k, n = 32, 64, 24
    a_vals = rng.integers(-128, 128, (m, k))
    b_vals = rng.integers(-128, 128, (k, n))
    a = space.make((m, k), dtype=np.int8, fill=0, values=a_vals)
    b = space.make((k, n), strides=(n, 1) if b_kind == "row" else (1, k), dtype=np.int8, fill=0, values=b_vals)
    out = space.make((m, n), dtype=np.int32, fill=0)
    assert getattr(LIB, f"aoti_torch_{space.device}__int_mm_out")(out.handle, a.handle, b.handle) == 0, last_error()
    np.testing.assert_array_equal(out.values(), (a_vals @ b_vals).astype(np.float64))


def test_int_mm_checks_dtypes(space):
    a = space.make((32, 16), dtype=np.int8, fill=0, values=np.ones((32, 16)))
    b = space.make((16, 8), dtype=np.int8, fill=0, values=np.ones((16, 8)))
    wrong_out = space.make((32, 8), dtype=np.float32)
    assert getattr(LIB, f"aoti_torch_{space.device}__int_mm_out")(wrong_out.handle, a.handle, b.handle) != 0
    assert "expected int32" in last_error()
    f = space.make((32, 16), dtype=np.float32, values=np.ones((32, 16)))
    out = space.make((32, 8), dtype=np.int32, fill=0)
    assert getattr(LIB, f"aoti_torch_{space.device}__int_mm_out")(out.handle, f.handle, b.handle) != 0
    assert "expected int8" in last_error()


@pytest.mark.gpu
def test_cuda_int_mm_keeps_torchs_size_rules():
    s = Space("cuda")
    try:
        a = s.make((16, 16), dtype=np.int8, fill=0, values=np.ones((16, 16)))
        b = s.make((16, 8), dtype=np.int8, fill=0, values=np.ones((16, 8)))
        out = s.make((16, 8), dtype=np.int32, fill=0)
        assert LIB.aoti_torch_cuda__int_mm_out(out.handle, a.handle, b.handle) != 0
        assert "greater than 16" in last_error()
    finally:
        s.close()
