"""aoti_torch_cuda__weight_int4pack_mm through ctypes, against the
dequantised product in numpy: weights packed in torch's CUDA tensor-core
layout by support/int4pack.py's re-implementation of
_convert_weight_to_int4pack_cuda, bfloat16 activations, scales and zeros.

The packer's own check runs here (no GPU): every nibble of the packed
weight is the value the layout's documentation says it is.

The shim has three kernels (int4pack_cuda.cu): a tensor-core decode kernel
for up to sixteen rows whose activations fit its 64 KiB of shared memory and
are 16-byte aligned, a tensor-core one for more rows, and the plain tiled one
for operands the fast ones' vector loads cannot take (a storage offset that
breaks their alignment); the row counts below cross each boundary (8 / 9 for
the decode kernel's one or two row tiles, 16 / 17 for its end, 32 / 33 for
the tensor-core kernel's tile choices), the column counts give odd tile
counts (the decode kernel takes two n tiles a block), and k = 4096 against
"min" gives the decode kernel's batches of one k-outer tile a warp (few
tiles) and of several.
"""

import ctypes

import numpy as np
import pytest

from support.int4pack import cuda_pack, dequantised
from support.shims import I64, H, dense, last_error, layout, owned, read, rounded, shim, view

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


def operands(rng, n, k, group):
    q = rng.integers(0, 16, (n, k))
    scales = rng.uniform(0.01, 0.1, (k // group, n))
    zeros = rng.uniform(-0.5, 0.5, (k // group, n))
    sz = rounded(np.stack([scales, zeros], axis=-1), "bfloat16")
    # The kernels round each dequantised weight to bfloat16, as torch's does.
    return q, sz, rounded(dequantised(q, sz, group), "bfloat16")


def product(xh, wh, group, szh, m, n):
    out = H()
    mm = shim("aoti_torch_cuda__weight_int4pack_mm", H, H, I64, H, ctypes.c_void_p)
    assert mm(xh.ptr, wh.ptr, group, szh.ptr, ctypes.byref(out)) == 0, last_error()
    out = owned([out])[0]
    assert layout(out)[:3] == ((m, n), (n, 1), "bfloat16")
    return read(out)


def assert_close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2 * max(np.abs(want).max(), 1e-30))


def assert_random_product(rng, m, n, k, group, inner, a_offset=0):
    """The shim's product of random operands against x @ W.T, W dequantised;
    A dense, or `a_offset` elements into its storage."""
    q, sz, w = operands(rng, n, k, group)
    x = rounded(rng.standard_normal((m, k)), "bfloat16")
    if a_offset:
        xh, _ = view(np.concatenate([np.zeros(a_offset), x.ravel()]), (m, k), (k, 1), a_offset, DEV, "bfloat16")
    else:
        xh, _ = dense(x, DEV, "bfloat16")
    wh, _ = dense(cuda_pack(q, inner), DEV)
    szh, _ = dense(sz, DEV, "bfloat16")
    assert_close(product(xh, wh, group, szh, m, n), x @ w.T)


@pytest.mark.gpu
@pytest.mark.parametrize("inner", [2, 4, 8])
@pytest.mark.parametrize("group", [32, 128])
@pytest.mark.parametrize("n", [8, 264])
@pytest.mark.parametrize("k", ["min", 4096])
def test_every_kernel_matches_the_dequantised_product(k, n, group, inner):
    k = max(inner * 16, group) if k == "min" else k
    rng = np.random.default_rng([k, n, group, inner])
    q, sz, w = operands(rng, n, k, group)
    wh, _ = dense(cuda_pack(q, inner), DEV)
    szh, _ = dense(sz, DEV, "bfloat16")
    for m in (1, 2, 3, 7, 8, 9, 16, 17, 33, 64, 100):
        x = rounded(rng.standard_normal((m, k)), "bfloat16")
        xh, _ = dense(x, DEV, "bfloat16")
        assert_close(product(xh, wh, group, szh, m, n), x @ w.T)


@pytest.mark.gpu
@pytest.mark.parametrize("group,inner", [(64, 8), (256, 4)])
@pytest.mark.parametrize("m", [1, 2, 40])
def test_other_group_sizes(m, group, inner):
    assert_random_product(np.random.default_rng([m, group, inner]), m, 72, 1024, group, inner)


@pytest.mark.gpu
@pytest.mark.parametrize("shifted", ["weight", "activations"])
@pytest.mark.parametrize("m", [1, 20])
def test_unaligned_operands_take_the_plain_kernel(m, shifted):
    """A storage offset of one element leaves the weight 4 bytes past a
    16-byte boundary, or A 2 bytes past a 4-byte one: the plain kernel runs."""
    n, k, group, inner = 40, 256, 32, 8
    rng = np.random.default_rng([m, len(shifted)])
    q, sz, w = operands(rng, n, k, group)
    x = rounded(rng.standard_normal((m, k)), "bfloat16")
    packed = cuda_pack(q, inner)
    if shifted == "weight":
        strides = [s // 4 for s in packed.strides]
        wh, _ = view(np.concatenate([[0], packed.ravel()]).astype(np.int32), packed.shape, strides, 1, DEV)
        xh, _ = dense(x, DEV, "bfloat16")
    else:
        wh, _ = dense(packed, DEV)
        xh, _ = view(np.concatenate([[0.0], x.ravel()]), (m, k), (k, 1), 1, DEV, "bfloat16")
    szh, _ = dense(sz, DEV, "bfloat16")
    assert_close(product(xh, wh, group, szh, m, n), x @ w.T)


@pytest.mark.gpu
@pytest.mark.parametrize("m,k", [(8, 4096), (8, 4608), (2, 16384), (2, 16896), (1, 14336), (16, 2048), (12, 2048),
                                 (16, 2176)])
def test_the_decode_kernels_room_for_the_activations(m, k):
    """m * k * 2 bytes up to 64 KiB are staged by the decode kernel (8 x 4096,
    2 x 16384 and 16 x 2048 are exactly that); a little past it, the
    tensor-core kernel takes the rows. k 14336 is several rounds of the
    decode kernel's k-outer batches."""
    assert_random_product(np.random.default_rng([m, k]), m, 24, k, 128, 8)


@pytest.mark.gpu
@pytest.mark.parametrize("m", [1, 8, 16])
def test_activations_off_a_16_byte_boundary_take_the_tensor_core_kernel(m):
    """Two elements of storage offset leave A 4 bytes past a 16-byte boundary:
    too little for the decode kernel's 16-byte copies, enough for mma_mm's."""
    assert_random_product(np.random.default_rng([m, 16]), m, 40, 512, 64, 4, a_offset=2)
