"""aoti_torch_cuda__weight_int4pack_mm through ctypes, against the
dequantised product in numpy: weights packed in torch's CUDA tensor-core
layout by support/int4pack.py's re-implementation of
_convert_weight_to_int4pack_cuda, bfloat16 activations, scales and zeros.

The packer's own check runs here (no GPU): every nibble of the packed
weight is the value the layout's documentation says it is.
"""

import ctypes

import numpy as np
import pytest

from support.int4pack import cuda_pack, dequantised
from support.shims import I64, H, dense, last_error, layout, owned, read, rounded, shim

DEV = "cuda:0"


def unpack(packed, n, k, inner):
    """q[n][k] back from the CUDA layout, by int4pack_cuda.cu's addressing."""
    words = packed.view(np.uint32)
    q = np.zeros((n, k), np.int64)
    for nn in range(n):
        for kk in range(k):
            k_tile, local = kk // 16, kk % 16
            lane = (nn % 8) * 4 + (local % 8) // 2
            nibble = 2 * ((k_tile % inner) % 2) + local // 8 + (4 if local % 2 else 0)
            word = words[nn // 8, k_tile // inner, lane, (k_tile % inner) // 2]
            q[nn, kk] = (int(word) >> (4 * nibble)) & 0xF
    return q


@pytest.mark.parametrize("inner", [2, 4, 8])
def test_the_packer_and_the_kernel_addressing_agree(inner):
    rng = np.random.default_rng(inner)
    q = rng.integers(0, 16, (24, 256))
    packed = cuda_pack(q, inner)
    assert packed.shape == (3, 256 // (inner * 16), 32, inner // 2) and packed.dtype == np.int32
    np.testing.assert_array_equal(unpack(packed, 24, 256, inner), q)


@pytest.mark.gpu
@pytest.mark.parametrize("m,n,k,group,inner", [(1, 64, 128, 32, 2), (5, 96, 256, 64, 4), (33, 200, 512, 128, 8),
                                               (16, 8, 256, 256, 8), (70, 136, 1024, 32, 2)])
def test_matches_the_dequantised_product(m, n, k, group, inner):
    rng = np.random.default_rng(m + n)
    q = rng.integers(0, 16, (n, k))
    n_padded = -(-n // 8) * 8
    q_padded = np.zeros((n_padded, k), np.int64)
    q_padded[:n] = q
    scales = rng.uniform(0.01, 0.1, (k // group, n_padded))
    zeros = rng.uniform(-0.5, 0.5, (k // group, n_padded))
    sz = rounded(np.stack([scales, zeros], axis=-1), "bfloat16")
    x = rounded(rng.standard_normal((m, k)), "bfloat16")
    xh, _ = dense(x, DEV, "bfloat16")
    wh, _ = dense(cuda_pack(q_padded, inner), DEV)
    szh, _ = dense(sz, DEV, "bfloat16")
    out = H()
    mm = shim("aoti_torch_cuda__weight_int4pack_mm", H, H, I64, H, ctypes.c_void_p)
    assert mm(xh.ptr, wh.ptr, group, szh.ptr, ctypes.byref(out)) == 0, last_error()
    out = owned([out])[0]
    assert layout(out)[:3] == ((m, n_padded), (n_padded, 1), "bfloat16")
    # The kernel rounds each dequantised weight to bfloat16, as torch's does.
    w = rounded(dequantised(q_padded, sz, group), "bfloat16")
    want = x @ w.T
    np.testing.assert_allclose(read(out), want, rtol=1e-2, atol=1e-2 * np.abs(want).max())


@pytest.mark.gpu
def test_bad_arguments_are_refused():
    rng = np.random.default_rng(5)
    q = rng.integers(0, 16, (64, 128))
    xh, _ = dense(rounded(rng.standard_normal((2, 128)), "bfloat16"), DEV, "bfloat16")
    wh, _ = dense(cuda_pack(q, 2), DEV)
    szh, _ = dense(np.ones((4, 64, 2)), DEV, "bfloat16")
    mm = shim("aoti_torch_cuda__weight_int4pack_mm", H, H, I64, H, ctypes.c_void_p)
    out = H()
    assert mm(xh.ptr, wh.ptr, 16, szh.ptr, ctypes.byref(out)) != 0 and "qGroupSize" in last_error()
    assert mm(xh.ptr, wh.ptr, 64, szh.ptr, ctypes.byref(out)) != 0 and "qScaleAndZeros" in last_error()
    xf, _ = dense(rng.standard_normal((2, 128)), DEV, "float32")
    assert mm(xf.ptr, wh.ptr, 32, szh.ptr, ctypes.byref(out)) != 0 and "bfloat16" in last_error()
    xc, _ = dense(rounded(rng.standard_normal((2, 128)), "bfloat16"), "cpu", "bfloat16")
    assert mm(xc.ptr, wh.ptr, 32, szh.ptr, ctypes.byref(out)) != 0 and "CUDA tensors" in last_error()
