"""aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu, called through
ctypes as a model library calls it, against float64 numpy.

The shim computes in float64 whatever the input dtype, so float32 and
float64 results are within a few roundings of the reference (1e-6 and 1e-12
relative error); float16 and bfloat16 within their own rounding (1e-2).
"""

import ctypes

import numpy as np
import pytest

from support import attention_ref as ref
from support import attention_shims as cuda
from support.shims import F64, I32, H, P, dense, last_error, layout, out_handles, owned, read, shim, view

SDPA_CPU = shim("aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu",
                H, H, H, F64, I32, P, P, P, P)
TOLERANCE = {"float64": 1e-12, "float32": 1e-6, "float16": 1e-2, "bfloat16": 1e-2}


def call(q, k, v, mask=None, causal=False, scale=None, dropout=0.0, want=(True, True)):
    """Runs the shim; returns (status, [out, lse] handles or None)."""
    slots = out_handles(2)
    mask_slot = H(mask.ptr.value) if mask is not None else None
    status = SDPA_CPU(q.ptr, k.ptr, v.ptr, dropout, int(causal),
                      ctypes.byref(mask_slot) if mask is not None else None,
                      ctypes.byref(F64(scale)) if scale is not None else None,
                      *[ctypes.byref(s) if w else None for s, w in zip(slots, want)])
    return status, owned(slots)


def run(q, k, v, **kwargs):
    status, (out, lse) = call(q, k, v, **kwargs)
    assert status == 0, last_error()
    return out, lse


def randn(rng, *shape):
    return rng.standard_normal(shape)


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("lengths", [(5, 7), (7, 5), (1, 9), (6, 6)], ids=lambda t: f"L{t[0]}S{t[1]}")
def test_matches_numpy(dtype, causal, lengths):
    rng = np.random.default_rng(1)
    L, S = lengths
    q, qr = dense(randn(rng, 2, 3, L, 9), dtype=dtype)
    k, kr = dense(randn(rng, 2, 3, S, 9), dtype=dtype)
    v, vr = dense(randn(rng, 2, 3, S, 9), dtype=dtype)
    out, lse = run(q, k, v, causal=causal)
    want_out, want_lse = ref.sdpa(qr, kr, vr, causal="top_left" if causal else None)
    assert layout(out)[:3] == ((2, 3, L, 9), (3 * L * 9, L * 9, 9, 1), dtype)
    # logsumexp: torch.empty(B, L, H).transpose(1, 2), float32 (float64 for float64)
    assert layout(lse)[:3] == ((2, 3, L), (L * 3, 1, 3), "float64" if dtype == "float64" else "float32")
    assert ref.relative_error(read(out), want_out) < TOLERANCE[dtype]
    assert ref.relative_error(read(lse), want_lse) < max(TOLERANCE[dtype], 1e-6)


@pytest.mark.parametrize("name", list(ref.QUERY_LAYOUTS))
def test_strided_query_and_output_layout(name):
    """Any strides in; the output laid out as torch.empty_like(query)."""
    rng = np.random.default_rng(2)
    strides, count = ref.QUERY_LAYOUTS[name]
    q, qr = view(randn(rng, count + 3), (ref.B, ref.H, ref.L, ref.E), strides, offset=3)
    # key: head size innermost-but-not-contiguous ([B, H, E, S] memory, transposed)
    S = 6
    k, kr = view(randn(rng, ref.B * ref.H * ref.E * S), (ref.B, ref.H, S, ref.E),
                 (ref.H * ref.E * S, ref.E * S, 1, S))
    # value: a broadcast batch (stride 0)
    v, vr = view(randn(rng, ref.H * S * ref.E), (ref.B, ref.H, S, ref.E), (0, S * ref.E, ref.E, 1))
    out, lse = run(q, k, v)
    assert layout(out)[1] == ref.EMPTY_LIKE[name]
    want_out, want_lse = ref.sdpa(qr, kr, vr)
    assert ref.relative_error(read(out), want_out) < 1e-12
    assert ref.relative_error(read(lse), want_lse) < 1e-12


@pytest.mark.parametrize("shape", [(5, 7), (2, 1, 5, 7), (1, 3, 1, 7), (3, 5, 7), (7,)], ids=str)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_float_mask_broadcasts(shape, causal):
    rng = np.random.default_rng(3)
    q, qr = dense(randn(rng, 2, 3, 5, 4))
    k, kr = dense(randn(rng, 2, 3, 7, 4))
    v, vr = dense(randn(rng, 2, 3, 7, 4))
    m, mr = dense(randn(rng, *shape))
    out, lse = run(q, k, v, mask=m, causal=causal, scale=0.7)
    want_out, want_lse = ref.sdpa(qr, kr, vr, bias=mr, causal="top_left" if causal else None, scale=0.7)
    assert ref.relative_error(read(out), want_out) < 1e-12
    assert ref.relative_error(read(lse), want_lse) < 1e-12


def test_bool_mask_and_fully_masked_rows():
    """A bool mask keeps the True keys; a row with none left gives zeros and
    a log-sum-exp of 0 (as torch's CPU kernel), never NaN."""
    rng = np.random.default_rng(4)
    q, qr = dense(randn(rng, 1, 2, 4, 8))
    k, kr = dense(randn(rng, 1, 2, 6, 8))
    v, vr = dense(randn(rng, 1, 2, 6, 8))
    keep = rng.random((4, 6)) > 0.4
    keep[2] = False
    m, _ = dense(keep)
    out, lse = run(q, k, v, mask=m)
    want_out, want_lse = ref.sdpa(qr, kr, vr, bias=keep)
    got_out, got_lse = read(out), read(lse)
    assert np.all(got_out[:, :, 2] == 0) and np.all(got_lse[:, :, 2] == 0)
    assert ref.relative_error(got_out, want_out) < 1e-12
    assert ref.relative_error(got_lse, want_lse) < 1e-12

    minus_inf = np.zeros((4, 6))
    minus_inf[1] = -np.inf
    m, mr = dense(minus_inf)
    out, lse = run(q, k, v, mask=m)
    got_out = read(out)
    assert np.all(np.isfinite(got_out)) and np.all(got_out[:, :, 1] == 0)
    assert ref.relative_error(got_out, ref.sdpa(qr, kr, vr, bias=mr)[0]) < 1e-12


def test_grouped_query_attention():
    """Six query heads over two key/value heads: heads 0-2 read kv head 0."""
    rng = np.random.default_rng(5)
    q, qr = dense(randn(rng, 2, 6, 5, 8), dtype="float32")
    k, kr = dense(randn(rng, 2, 2, 7, 8), dtype="float32")
    v, vr = dense(randn(rng, 2, 2, 7, 8), dtype="float32")
    out, lse = run(q, k, v, causal=True)
    want_out, want_lse = ref.sdpa(qr, kr, vr, causal="top_left")
    assert ref.relative_error(read(out), want_out) < 1e-6
    assert ref.relative_error(read(lse), want_lse) < 1e-6


def test_empty_lengths():
    rng = np.random.default_rng(6)
    q, _ = dense(randn(rng, 1, 2, 3, 4))
    k, _ = dense(np.zeros((1, 2, 0, 4)))
    out, lse = run(q, k, k)
    assert np.all(read(out) == 0) and np.all(read(lse) == 0)
    q0, _ = dense(np.zeros((1, 2, 0, 4)))
    out, lse = run(q0, k, k)
    assert layout(out)[0] == (1, 2, 0, 4) and layout(lse)[0] == (1, 2, 0)


def test_null_ret_pointers_are_skipped():
    """Generated code passes NULL for outputs the graph does not use."""
    rng = np.random.default_rng(7)
    q, qr = dense(randn(rng, 1, 1, 3, 4))
    status, (out, lse) = call(q, q, q, want=(True, False))
    assert status == 0 and lse is None
    assert ref.relative_error(read(out), ref.sdpa(qr, qr, qr)[0]) < 1e-12
    status, (out, lse) = call(q, q, q, want=(False, True))
    assert status == 0 and out is None
    assert ref.relative_error(read(lse), ref.sdpa(qr, qr, qr)[1]) < 1e-12


def test_bad_arguments_are_refused_with_reasons():
    rng = np.random.default_rng(8)
    q, _ = dense(randn(rng, 1, 2, 3, 4))
    k, _ = dense(randn(rng, 1, 2, 5, 4))

    def refused(*args, **kwargs):
        status, handles = call(*args, **kwargs)
        assert status != 0 and all(h is None for h in handles)
        return last_error()

    assert "dropout_p must be 0" in refused(q, k, k, dropout=0.1)
    flat, _ = dense(randn(rng, 2, 3, 4))
    assert "must have 4 dimensions" in refused(flat, k, k)
    k32, _ = dense(randn(rng, 1, 2, 5, 4), dtype="float32")
    assert "one dtype" in refused(q, k32, k)
    k_e5, _ = dense(randn(rng, 1, 2, 5, 5))
    assert "same head size" in refused(q, k_e5, k)
    v_e6, _ = dense(randn(rng, 1, 2, 5, 6))
    assert "same head size" in refused(q, k, v_e6)
    k_h3, _ = dense(randn(rng, 1, 3, 5, 4))
    assert "multiple of" in refused(q, k_h3, k_h3)
    k_b2, _ = dense(randn(rng, 2, 2, 5, 4))
    assert "batch size" in refused(q, k_b2, k_b2)
    v_s4, _ = dense(randn(rng, 1, 2, 4, 4))
    assert "same heads and length" in refused(q, k, v_s4)
    mask, _ = dense(randn(rng, 3, 4))
    assert "does not broadcast" in refused(q, k, k, mask=mask)
    int_mask, _ = dense(np.zeros((3, 5), np.int32))
    assert "floating point" in refused(q, k, k, mask=int_mask)
    ints, _ = dense(np.zeros((1, 2, 3, 4), np.int64))
    assert "not supported" in refused(ints, ints, ints)


def test_cuda_shims_refuse_bad_arguments_before_touching_a_gpu():
    """The CUDA shims check their arguments first: these fail the same with
    or without a GPU, and never with a CUDA error."""
    rng = np.random.default_rng(9)
    (q, _), (k, _), (v, _) = cuda.inputs(rng, "float32", 1, 2, 3, 4, 8, 8, device="cpu")
    for call in (cuda.efficient, cuda.cudnn, cuda.flash):
        result = call(q, k, v)
        assert result.status != 0 and all(h is None for h in result.handles)
        assert "query must be a CUDA tensor" in last_error()
        assert call(q, k, v, dropout=0.1).status != 0 and "dropout_p must be 0" in last_error()
