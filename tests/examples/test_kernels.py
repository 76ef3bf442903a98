"""The pipeline models' kernels, one at a time, against numpy.

_kernels_cpu.so and _kernels_cuda.so export the same extern "C" functions
(cuda_src/kernels/test_api.cpp) over raw pointers; every test runs on the CPU
build and, marked gpu, on the CUDA build. Data goes in and out through
aotirt tensors: on the GPU the uploads, the allocations and the launch are on
the device's shared stream, and Tensor.numpy() is the only wait.

Tolerances follow float32 error analysis: a sum of n products computed in
float32, in any order, is within n * eps * sum(|terms|) of the exact value
(eps = 2**-23, twice the unit roundoff, so the bound has a factor 2 to
spare); kernels whose error has no such simple form are held to a relative
error of 1e-5 of the output's norm, some 10 to 100 times what they show.
"""

import ctypes
import os

import numpy as np
import pytest

import aotirt
from support.helpers import models_folder, relative_error, run_python

EPS = float(np.finfo(np.float32).eps)
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
# The tile is 16 and the skinny kernel's column group 32: none but 1 fits
# them evenly. m up to 64 takes the skinny kernel (warps split k), 100 and
# 257 the tiled one.
SIZES = [1, 17, 33, 100, 257]
NAMES = ["matmul", "matmul_gelu", "matmul_pair", "conv1d_k3", "gelu", "add", "layer_norm", "attention", "argmax", "embedding"]

P, I64, F32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_float
SIGNATURES = {
    "matmul": [P, P, P, P, I64, I64, I64, P],
    "matmul_gelu": [P, P, P, P, I64, I64, I64, P],
    "matmul_pair": [P, P, P, P, P, I64, I64, I64, P],
    "conv1d_k3": [P, P, P, P, I64, I64, I64, P],
    "gelu": [P, P, I64, P],
    "add": [P, P, P, I64, P],
    "layer_norm": [P, P, P, P, I64, I64, F32, P],
    "attention": [P, P, P, P, P, I64, I64, P],
    "argmax": [P, I64, P, P],
    "embedding": [P, P, P, I64, I64, P],
}


class Kernels:
    """The kernels of one build, taking aotirt Tensors (or None for a null pointer)."""

    def __init__(self, device):
        self.device = device
        self.lib = ctypes.CDLL(os.path.join(models_folder(), f"_kernels_{device}.so"))
        # Held, not only its handle: the shared stream lives as long as
        # something references it, and the tensors below must share it.
        self.shared_stream = aotirt.Stream.shared(0) if device == "cuda" else None
        self.stream = self.shared_stream.handle if device == "cuda" else None

    def put(self, array):
        return aotirt.asarray(np.ascontiguousarray(array), device=self.device)

    def empty(self, shape, dtype=np.float32):
        return aotirt.empty(shape, dtype, device=self.device)

    def __getattr__(self, name):
        fn = getattr(self.lib, f"aotirt_kernel_{name}")
        fn.argtypes = SIGNATURES[name]
        fn.restype = ctypes.c_int

        def call(*args):
            c_args = [a.data_ptr if isinstance(a, aotirt.Tensor) else a for a in args]
            status = fn(*c_args, self.stream)
            assert status == 0, f"{name} returned {status}"

        return call


@pytest.fixture(params=DEVICES)
def k(request):
    return Kernels(request.param)


def test_both_libraries_export_every_kernel():
    # Loading the CUDA build needs no GPU: its kernels register lazily. Done
    # in a child process so nothing of it stays in this one.
    proc = run_python(
        "import ctypes, os, sys\n"
        f"folder = {models_folder()!r}\n"
        "for build in ('cpu', 'cuda'):\n"
        "    lib = ctypes.CDLL(os.path.join(folder, f'_kernels_{build}.so'))\n"
        f"    for name in {NAMES!r}:\n"
        "        getattr(lib, 'aotirt_kernel_' + name)\n"
        "print('ok')\n")
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
    assert set(NAMES) == set(SIGNATURES)


def matmul_bound(a, b, bias, k):
    """n * eps * sum(|terms|) per element, the bias counted as one more term."""
    magnitude = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    if bias is not None:
        magnitude = magnitude + np.abs(bias)
    return (k + 1) * EPS * magnitude


@pytest.mark.parametrize("m", SIZES)
def test_matmul_any_size(k, m):
    rng = np.random.default_rng(m)
    for n in SIZES:
        for kdim in SIZES:
            a = rng.standard_normal((m, kdim)).astype(np.float32)
            b = rng.standard_normal((kdim, n)).astype(np.float32)
            bias = rng.standard_normal(n).astype(np.float32) if (n + kdim) % 2 else None
            out = k.empty((m, n))
            k.matmul(k.put(a), k.put(b), k.put(bias) if bias is not None else None, out, m, n, kdim)
            exact = a.astype(np.float64) @ b + (bias if bias is not None else 0)
            error = np.abs(out.numpy() - exact)
            assert np.all(error <= matmul_bound(a, b, bias, kdim)), (m, n, kdim, error.max())


@pytest.mark.parametrize("m,n,kdim", [(1, 256, 256), (64, 256, 256), (1, 512, 256), (1, 1024, 512),
                                      (64, 1024, 512), (65, 40, 300), (8, 31, 1000)])
def test_matmul_model_sizes(k, m, n, kdim):
    # The decoder's and encoder's shapes, the skinny kernel's largest height
    # (64), the tiled kernel's smallest (65), and a long k split over warps.
    rng = np.random.default_rng(m * n + kdim)
    a = rng.standard_normal((m, kdim)).astype(np.float32)
    b = rng.standard_normal((kdim, n)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    out = k.put(np.full((m, n), np.nan, np.float32))  # every element must be written
    k.matmul(k.put(a), k.put(b), k.put(bias), out, m, n, kdim)
    error = np.abs(out.numpy() - (a.astype(np.float64) @ b + bias))
    assert np.all(error <= matmul_bound(a, b, bias, kdim)), error.max()


@pytest.mark.parametrize("m,n,kdim", [(1, 512, 256), (17, 33, 100), (100, 257, 17), (1, 1, 0)])
def test_matmul_gelu(k, m, n, kdim):
    from aotirt.reference import gelu

    rng = np.random.default_rng(m + n + kdim)
    a = rng.standard_normal((m, kdim)).astype(np.float32)
    b = rng.standard_normal((kdim, n)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    out = k.put(np.full((m, n), np.nan, np.float32))
    k.matmul_gelu(k.put(a), k.put(b), k.put(bias), out, m, n, kdim)
    z = a.astype(np.float64) @ b + bias
    # GELU's slope stays within [-0.13, 1.13]: the product's error passes
    # through at most 1.13 times, then GELU's own few eps of |z| (test_gelu).
    bound = 1.13 * matmul_bound(a, b, bias, kdim) + 8 * EPS * np.abs(z) + 1e-38
    error = np.abs(out.numpy() - gelu(z))
    assert np.all(error <= bound), error.max()


@pytest.mark.parametrize("m,n,kdim", [(64, 256, 256), (1, 33, 17), (100, 17, 33)])
def test_matmul_pair(k, m, n, kdim):
    # Two products of one a in one launch: each half must be its own product
    # (a swapped or shared pointer would give the other's, or one twice).
    rng = np.random.default_rng(m + 2 * n + 3 * kdim)
    a = rng.standard_normal((m, kdim)).astype(np.float32)
    b0, b1 = (rng.standard_normal((kdim, n)).astype(np.float32) for _ in range(2))
    c0, c1 = (k.put(np.full((m, n), np.nan, np.float32)) for _ in range(2))
    k.matmul_pair(k.put(a), k.put(b0), k.put(b1), c0, c1, m, n, kdim)
    for b, c in ((b0, c0), (b1, c1)):
        error = np.abs(c.numpy() - a.astype(np.float64) @ b)
        assert np.all(error <= matmul_bound(a, b, None, kdim)), error.max()


def test_matmul_gelu_equals_matmul_then_gelu(k):
    # The fused kernel rounds as the two kernels in a row do: bit for bit.
    rng = np.random.default_rng(5)
    a = rng.standard_normal((1, 256)).astype(np.float32)
    b = rng.standard_normal((256, 512)).astype(np.float32)
    bias = rng.standard_normal(512).astype(np.float32)
    fused, apart = k.empty((1, 512)), k.empty((1, 512))
    k.matmul_gelu(k.put(a), k.put(b), k.put(bias), fused, 1, 512, 256)
    k.matmul(k.put(a), k.put(b), k.put(bias), apart, 1, 512, 256)
    k.gelu(apart, apart, 512)
    np.testing.assert_array_equal(fused.numpy(), apart.numpy())


def test_matmul_empty_sizes(k):
    # k == 0: the sum is empty and c is the bias; m or n == 0: nothing to do.
    bias = np.arange(5, dtype=np.float32)
    out = k.empty((3, 5))
    k.matmul(k.put(np.zeros((3, 0), np.float32)), k.put(np.zeros((0, 5), np.float32)), k.put(bias), out, 3, 5, 0)
    np.testing.assert_array_equal(out.numpy(), np.tile(bias, (3, 1)))
    empty = k.empty((0, 5))
    k.matmul(k.put(np.zeros((0, 4), np.float32)), k.put(np.ones((4, 5), np.float32)), None, empty, 0, 5, 4)
    assert empty.numpy().shape == (0, 5)


def conv1d_reference(x, w, b):
    from aotirt.reference import conv1d_k3

    return conv1d_k3(x, w, b)


@pytest.mark.parametrize("t,cin,cout", [(1, 1, 1), (2, 3, 4), (17, 5, 130), (64, 80, 256), (100, 33, 129)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_conv1d_k3(k, t, cin, cout, with_bias):
    rng = np.random.default_rng(t * cin + cout)
    x = rng.standard_normal((t, cin)).astype(np.float32)
    w = rng.standard_normal((cout, cin, 3)).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32) if with_bias else None
    out = k.empty((t, cout))
    k.conv1d_k3(k.put(x), k.put(w), k.put(b) if with_bias else None, out, t, cin, cout)
    exact = conv1d_reference(x, w, b)
    bound = (3 * cin + 1) * EPS * (conv1d_reference(np.abs(x), np.abs(w), np.abs(b) if with_bias else None))
    error = np.abs(out.numpy() - exact)
    assert np.all(error <= bound), error.max()


def test_conv1d_k3_pads_with_zeros(k):
    # A one-hot input shows each tap where it lands: tap j of frame s reaches
    # output frame s - j + 1, and nothing wraps around the ends.
    t, cin, cout = 5, 1, 1
    w = np.array([[[1.0, 10.0, 100.0]]], np.float32)
    for s in range(t):
        x = np.zeros((t, cin), np.float32)
        x[s] = 1
        out = k.empty((t, cout))
        k.conv1d_k3(k.put(x), k.put(w), None, out, t, cin, cout)
        expected = np.zeros(t, np.float32)
        for j, tap in enumerate([1.0, 10.0, 100.0]):
            if 0 <= s - j + 1 < t:
                expected[s - j + 1] = tap
        np.testing.assert_array_equal(out.numpy()[:, 0], expected)


@pytest.mark.parametrize("n", [0, 1, 1000, 100_003])
def test_gelu(k, n):
    from aotirt.reference import gelu

    rng = np.random.default_rng(n)
    x = (4 * rng.standard_normal(n)).astype(np.float32)
    x[: min(n, 4)] = [0.0, -20.0, 20.0, 1e-30][: min(n, 4)]
    out = k.empty((n,))
    k.gelu(k.put(x), out, n)
    # 0.5 x (1 + tanh(u)): tanh and the few roundings around it are off by a
    # few eps absolutely, which the factor x scales; 8 eps |x| covers them,
    # and stays meaningful where 1 + tanh(u) cancels (large negative x).
    error = np.abs(out.numpy() - gelu(x.astype(np.float64)))
    assert np.all(error <= 8 * EPS * np.abs(x) + 1e-38), error.max()


def test_gelu_in_place(k):
    from aotirt.reference import gelu

    x = np.linspace(-6, 6, 301, dtype=np.float32)
    t = k.put(x.copy())
    k.gelu(t, t, x.size)
    assert np.all(np.abs(t.numpy() - gelu(x.astype(np.float64))) <= 8 * EPS * np.abs(x) + 1e-38)


@pytest.mark.parametrize("n", [0, 1, 257, 100_003])
def test_add_is_exact(k, n):
    # One float32 addition per element, as numpy's: bit for bit.
    rng = np.random.default_rng(n)
    a, b = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    out = k.empty((n,))
    k.add(k.put(a), k.put(b), out, n)
    np.testing.assert_array_equal(out.numpy(), a + b)


@pytest.mark.parametrize("rows,cols", [(1, 1), (1, 7), (64, 256), (3, 1000), (7, 33)])
def test_layer_norm(k, rows, cols):
    from aotirt.reference import layer_norm

    rng = np.random.default_rng(rows * cols)
    # An offset mean checks that the variance is not computed as
    # E[x^2] - E[x]^2, which cancels.
    x = (3.0 + rng.standard_normal((rows, cols))).astype(np.float32)
    gamma = (1 + 0.1 * rng.standard_normal(cols)).astype(np.float32)
    beta = (0.1 * rng.standard_normal(cols)).astype(np.float32)
    out = k.empty((rows, cols))
    k.layer_norm(k.put(x), k.put(gamma), k.put(beta), out, rows, cols, 1e-5)
    ref = layer_norm(x, gamma, beta)
    assert relative_error(out.numpy(), ref) < 1e-5


@pytest.mark.parametrize("t,dim", [(0, 8), (1, 1), (1, 256), (17, 33), (64, 256), (100, 7), (300, 64)])
def test_attention(k, t, dim):
    from aotirt.reference import attention

    rng = np.random.default_rng(t + dim)
    q = rng.standard_normal(dim).astype(np.float32)
    keys = rng.standard_normal((t, dim)).astype(np.float32)
    values = rng.standard_normal((t, dim)).astype(np.float32)
    out = k.empty((dim,))
    k.attention(k.put(q), k.put(keys), k.put(values), None, out, t, dim)
    if t == 0:
        np.testing.assert_array_equal(out.numpy(), np.zeros(dim, np.float32))
    else:
        assert relative_error(out.numpy(), attention(q, keys, values)) < 1e-5


@pytest.mark.parametrize("t,dim", [(0, 8), (1, 3), (64, 256), (300, 700)])
def test_attention_adds_the_residual(k, t, dim):
    from aotirt.reference import attention

    rng = np.random.default_rng(3 * t + dim)
    q = rng.standard_normal(dim).astype(np.float32)
    keys = rng.standard_normal((t, dim)).astype(np.float32)
    values = rng.standard_normal((t, dim)).astype(np.float32)
    residual = rng.standard_normal(dim).astype(np.float32)
    out = k.put(np.full(dim, np.nan, np.float32))
    k.attention(k.put(q), k.put(keys), k.put(values), k.put(residual), out, t, dim)
    if t == 0:
        np.testing.assert_array_equal(out.numpy(), residual)
    else:
        assert relative_error(out.numpy(), residual + attention(q, keys, values)) < 1e-5


def test_attention_softmax_is_max_subtracted(k):
    # Scores in the thousands: exp() overflows float32 unless the largest
    # score is subtracted first.
    from aotirt.reference import attention

    rng = np.random.default_rng(11)
    t, dim = 64, 256
    q = (50 * rng.standard_normal(dim)).astype(np.float32)
    keys = rng.standard_normal((t, dim)).astype(np.float32)
    values = rng.standard_normal((t, dim)).astype(np.float32)
    out = k.empty((dim,))
    k.attention(k.put(q), k.put(keys), k.put(values), None, out, t, dim)
    result = out.numpy()
    assert np.all(np.isfinite(result))
    assert relative_error(result, attention(q, keys, values)) < 1e-5


def argmax_of(k, x):
    out = k.empty((1,), np.int64)
    k.argmax(k.put(x), x.size, out)
    return int(out.numpy()[0])


@pytest.mark.parametrize("n", [1, 17, 256, 1024, 5000])
def test_argmax(k, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    assert argmax_of(k, x) == int(np.argmax(x))
    # Many ties: small integers. The first of the largest wins.
    ties = rng.integers(0, 4, n).astype(np.float32)
    assert argmax_of(k, ties) == int(np.argmax(ties))
    assert argmax_of(k, np.full(n, -np.inf, np.float32)) == 0


def test_argmax_edge_cases(k):
    x = np.array([1, 5, 5, 2], np.float32)
    assert argmax_of(k, x) == 1
    x = np.arange(2000, dtype=np.float32)
    x[1500] = x[1999] = 5000  # the same maximum far apart: in different threads' shares
    assert argmax_of(k, x) == 1500
    x = np.array([1, np.nan, 7, np.nan], np.float32)
    assert argmax_of(k, x) == int(np.argmax(x)) == 1  # numpy: the first NaN
    out = k.empty((1,), np.int64)
    k.argmax(k.put(np.zeros(0, np.float32)), 0, out)
    assert int(out.numpy()[0]) == -1


@pytest.mark.parametrize("vocab,dim", [(1, 1), (17, 33), (1024, 256)])
def test_embedding(k, vocab, dim):
    rng = np.random.default_rng(vocab)
    table = rng.standard_normal((vocab, dim)).astype(np.float32)
    t = k.put(table)
    for token in sorted({0, vocab // 2, vocab - 1}):
        out = k.empty((dim,))
        # The token is a tensor on the kernel's device: on a GPU it is read
        # there, never copied to the host.
        k.embedding(t, k.put(np.array([token], np.int64)), out, vocab, dim)
        np.testing.assert_array_equal(out.numpy(), table[token])


def test_embedding_out_of_range_gives_nan(k):
    table = np.ones((8, 4), np.float32)
    for token in [-1, 8, 1 << 40]:
        out = k.empty((4,))
        k.embedding(k.put(table), k.put(np.array([token], np.int64)), out, 8, 4)
        assert np.all(np.isnan(out.numpy())), token
