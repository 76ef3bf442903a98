"""The CUDA SDPA shims (efficient, cuDNN, flash), called through ctypes as a
model library calls them, against float64 numpy.

Tolerances: relative error (‖out − ref‖ / ‖ref‖) below 1e-5 for float32
(float accumulation over at most a few hundred terms), 1e-2 for float16 and
bfloat16 (the output's own rounding, 2^-11 and 2^-8, dominates). The
reference takes the inputs as rounded to their dtype. The log-sum-exp is
float32 whatever the inputs: 1e-5.

Everything runs on the device's shared stream; reading a result back (the
shims' copy_ to a CPU tensor, i.e. the copy routine) is the only wait.
"""

import ctypes

import numpy as np
import pytest

import aotirt
from aotirt._testing import tensor_handle
from support import attention_ref as ref
from support.attention_shims import NEW_HANDLE, cudnn, efficient, flash, inputs
from support.gpu_shim_tests import DEV, IMPORT_PATHS
from support.shims import H, Handle, dense, last_error, layout, read, view
from support.waits import count_waits, interposer_library

pytestmark = pytest.mark.gpu
TOLERANCE = {"float32": 1e-5, "float16": 1e-2, "bfloat16": 1e-2}


def check(result, want, dtype):
    want_out, want_lse = want
    assert ref.relative_error(read(result.out), want_out) < TOLERANCE[dtype]
    lse = read(result.lse)
    assert ref.relative_error(lse.reshape(lse.shape[:2] + (-1,))[..., :want_lse.shape[-1]], want_lse) < 1e-5


SIZES = [  # B, H, L, S, E, Ev
    (2, 3, 5, 7, 9, 9),
    (1, 2, 130, 300, 64, 64),      # several key tiles, rows past one grid of warps
    (1, 1, 3, 257, 256, 256),      # the largest head size the brief asks for
    (2, 2, 33, 1, 16, 16),         # one key
]
DTYPES = ["float32", "float16", "bfloat16"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("sizes", SIZES, ids=lambda s: "B{}H{}L{}S{}E{}Ev{}".format(*s))
@pytest.mark.parametrize("op", ["efficient", "cudnn", "flash"])
def test_matches_numpy(op, sizes, causal, dtype):
    rng = np.random.default_rng(10)
    B, H_, L, S, E, Ev = sizes
    (q, qr), (k, kr), (v, vr) = inputs(rng, dtype, B, H_, L, S, E, Ev)
    call = {"efficient": efficient, "cudnn": cudnn, "flash": flash}[op]
    result = call(q, k, v, causal=causal).ok()
    # The flash kernel aligns the causal mask to the bottom right (torch only
    # sends it square problems, where both alignments agree).
    alignment = ("bottom_right" if op == "flash" else "top_left") if causal else None
    check(result, ref.sdpa(qr, kr, vr, causal=alignment), dtype)
    assert layout(result.out)[2:] == (dtype, 1)
    assert layout(result.lse)[2:] == ("float32", 1)


@pytest.mark.parametrize("op", ["efficient", "cudnn"])
def test_value_head_size_may_differ(op):
    rng = np.random.default_rng(11)
    (q, qr), (k, kr), (v, vr) = inputs(rng, "float32", 2, 3, 6, 40, 24, 12)
    result = {"efficient": efficient, "cudnn": cudnn}[op](q, k, v, scale=0.25).ok()
    assert layout(result.out)[0] == (2, 3, 6, 12)
    check(result, ref.sdpa(qr, kr, vr, scale=0.25), "float32")


@pytest.mark.parametrize("name", list(ref.QUERY_LAYOUTS))
def test_output_layouts_follow_torchs_meta_functions(name):
    rng = np.random.default_rng(12)
    strides, count = ref.QUERY_LAYOUTS[name]
    q, qr = view(rng.standard_normal(count + 5), (ref.B, ref.H, ref.L, ref.E), strides, 5, DEV, "float32")
    S = 7
    k, kr = dense(rng.standard_normal((ref.B, ref.H, S, ref.E)), DEV, "float32")
    v8, v8r = dense(rng.standard_normal((ref.B, ref.H, S, 8)), DEV, "float32")
    v10, v10r = dense(rng.standard_normal((ref.B, ref.H, S, 10)), DEV, "float32")

    result = flash(q, k, v8).ok()
    assert layout(result.out)[1] == ref.EMPTY_LIKE[name]
    check(result, ref.sdpa(qr, kr, v8r), "float32")
    result = cudnn(q, k, v8).ok()
    assert layout(result.out)[1] == ref.EMPTY_LIKE[name]
    check(result, ref.sdpa(qr, kr, v8r), "float32")
    result = cudnn(q, k, v10).ok()
    assert layout(result.out)[1] == ref.CUDNN_EV10[name]
    check(result, ref.sdpa(qr, kr, v10r), "float32")
    result = efficient(q, k, v10).ok()
    assert layout(result.out)[1] == ref.EFFICIENT_EV10
    check(result, ref.sdpa(qr, kr, v10r), "float32")


def test_strided_keys_and_values():
    """Keys stored [B, H, E, S] (head size not contiguous), values with a
    broadcast batch (stride 0), queries at an offset."""
    rng = np.random.default_rng(13)
    B, H_, L, S, E = 2, 3, 9, 150, 16
    q, qr = view(rng.standard_normal(B * H_ * L * E + 1), (B, H_, L, E), (H_ * L * E, L * E, E, 1), 1, DEV, "float16")
    k, kr = view(rng.standard_normal(B * H_ * E * S), (B, H_, S, E), (H_ * E * S, E * S, 1, S), 0, DEV, "float16")
    v, vr = view(rng.standard_normal(H_ * S * E), (B, H_, S, E), (0, S * E, E, 1), 0, DEV, "float16")
    # Causal alignment as in test_matches_numpy: flash aligns bottom-right.
    for call, alignment in ((efficient, "top_left"), (cudnn, "top_left"), (flash, "bottom_right")):
        check(call(q, k, v, causal=True).ok(), ref.sdpa(qr, kr, vr, causal=alignment), "float16")


@pytest.mark.parametrize("shape", [(6, 40), (2, 1, 6, 40), (1, 3, 1, 40), (40,)], ids=str)
@pytest.mark.parametrize("op", ["efficient", "cudnn"])
def test_bias_broadcasts(op, shape):
    rng = np.random.default_rng(14)
    (q, qr), (k, kr), (v, vr) = inputs(rng, "bfloat16", 2, 3, 6, 40, 32, 32)
    bias, br = dense(rng.standard_normal(shape), DEV, "bfloat16")
    result = {"efficient": efficient, "cudnn": cudnn}[op](q, k, v, bias=bias, causal=True).ok()
    check(result, ref.sdpa(qr, kr, vr, bias=br, causal="top_left"), "bfloat16")


def test_expanded_padded_bias_as_torch_passes_it():
    """torch pads the bias's last dimension to a multiple of 16, slices it
    back and expands it to [B, H, L, S] with stride-0 dimensions."""
    rng = np.random.default_rng(15)
    B, H_, L, S = 2, 4, 7, 13
    (q, qr), (k, kr), (v, vr) = inputs(rng, "float32", B, H_, L, S, 8, 8)
    padded = rng.standard_normal((L, 16))
    bias, br = view(padded, (B, H_, L, S), (0, 0, 16, 1), 0, DEV, "float32")
    check(efficient(q, k, v, bias=bias).ok(), ref.sdpa(qr, kr, vr, bias=br), "float32")


@pytest.mark.parametrize("op", ["efficient", "cudnn"])
def test_bool_bias_and_fully_masked_rows(op):
    rng = np.random.default_rng(16)
    (q, qr), (k, kr), (v, vr) = inputs(rng, "float32", 1, 2, 5, 200, 16, 16)
    keep = rng.random((5, 200)) > 0.5
    keep[3] = False
    bias, _ = dense(keep, DEV)
    result = {"efficient": efficient, "cudnn": cudnn}[op](q, k, v, bias=bias).ok()
    out = read(result.out)
    assert np.all(out[:, :, 3] == 0) and np.all(np.isfinite(out))
    check(result, ref.sdpa(qr, kr, vr, bias=keep), "float32")
    minus_inf = np.where(keep, 0.0, -np.inf)
    bias, br = dense(minus_inf, DEV, "float32")
    result = {"efficient": efficient, "cudnn": cudnn}[op](q, k, v, bias=bias).ok()
    check(result, ref.sdpa(qr, kr, vr, bias=br), "float32")


@pytest.mark.parametrize("op", ["efficient", "cudnn", "flash"])
def test_grouped_query_attention(op):
    rng = np.random.default_rng(17)
    (q, qr), (k, kr), (v, vr) = inputs(rng, "float16", 2, 8, 10, 70, 64, 64, Hk=2)
    result = {"efficient": efficient, "cudnn": cudnn, "flash": flash}[op](q, k, v).ok()
    check(result, ref.sdpa(qr, kr, vr), "float16")


def test_efficient_logsumexp_layout_and_placeholders():
    rng = np.random.default_rng(18)
    (q, qr), (k, kr), (v, vr) = inputs(rng, "float32", 2, 3, 5, 7, 8, 10)
    result = efficient(q, k, v).ok()
    # float32 [B, H, ceil(L / 32) * 32], the padding +inf as torch's kernel pads it
    assert layout(result.lse) == ((2, 3, 32), (96, 32, 1), "float32", 1)
    lse = read(result.lse)
    assert np.all(lse[..., 5:] == np.inf)
    assert ref.relative_error(lse[..., :5], ref.sdpa(qr, kr, vr)[1]) < 1e-5
    for seed in result.handles[2:]:   # philox seed and offset: int64 scalars, unread without dropout
        assert layout(seed) == ((), (), "int64", 0) and read(seed) == 0
    result = efficient(q, k, v, lse=False).ok()
    assert layout(result.lse)[:3] == ((2, 3, 0), (3, 1, 1), "float32")   # as torch.empty(B, H, 0)
    assert ref.relative_error(read(result.out), ref.sdpa(qr, kr, vr)[0]) < 1e-5


@pytest.mark.parametrize("optional", [False, True], ids=["null_optional", "all_outputs"])
def test_cudnn_and_flash_extra_outputs(optional):
    rng = np.random.default_rng(19)
    (q, _), (k, _), (v, _) = inputs(rng, "bfloat16", 2, 3, 5, 7, 8, 8)
    result = cudnn(q, k, v, optional=optional).ok()
    assert result.ints == [5, 7]                      # max_q, max_k
    assert layout(result.lse) == ((2, 3, 5, 1), (15, 5, 1, 1), "float32", 1)
    assert layout(result.handles[6])[:3] == ((), (), "int64") and layout(result.handles[7])[:3] == ((), (), "int64")
    if optional:
        assert layout(result.handles[2])[0] == (0,) and layout(result.handles[3])[0] == (0,)
        assert layout(result.handles[8])[0] == (0,)
    else:
        assert result.handles[2] is None and result.handles[3] is None and result.handles[8] is None

    result = flash(q, k, v, optional=optional).ok()
    assert result.ints == [5, 7]
    assert layout(result.lse) == ((2, 3, 5), (15, 5, 1), "float32", 1)
    assert layout(result.handles[6])[:3] == ((2,), (1,), "int64")   # rng state (uint64 in torch)
    assert layout(result.handles[7])[:3] == ((), (), "int64")
    assert layout(result.handles[8]) == ((0,), (1,), "bfloat16", 1)  # torch.empty(0, dtype=query.dtype)


def test_inputs_from_another_stream_are_waited_for_on_the_device():
    """Inputs uploaded on a stream of their own: the shim orders the shared
    stream after it (an event, no host wait) before reading them."""
    rng = np.random.default_rng(20)
    other = aotirt.Stream.create(0)
    arrays = [rng.standard_normal((1, 2, 300, 64)).astype(np.float32) for _ in range(3)]
    handles = []
    for a in arrays:
        t = aotirt.asarray(a, device=0, stream=other)
        h = H()
        assert NEW_HANDLE(tensor_handle(t), ctypes.byref(h)) == 0, last_error()
        handles.append(Handle(h, keep=t))
    q, k, v = handles
    check(flash(q, k, v, causal=True).ok(), ref.sdpa(*arrays, causal="top_left"), "float32")


def test_bad_arguments_are_refused():
    rng = np.random.default_rng(21)
    (q, _), (k, _), (v, _) = inputs(rng, "float32", 1, 2, 3, 4, 8, 8)
    assert efficient(q, k, v, dropout=0.5).status != 0 and "dropout_p must be 0" in last_error()
    assert cudnn(q, k, v, debug=True).status != 0 and "return_debug_mask" in last_error()
    assert flash(q, k, v, debug=True).status != 0 and "return_debug_mask" in last_error()
    v12, _ = dense(rng.standard_normal((1, 2, 4, 12)), DEV, "float32")
    assert flash(q, k, v12).status != 0 and "same head size" in last_error()
    d, _ = dense(rng.standard_normal((1, 2, 3, 8)), DEV, "float64")
    assert efficient(d, d, d).status != 0 and "float64 inputs are not supported" in last_error()
    cpu, _ = dense(rng.standard_normal((1, 2, 4, 8)), "cpu", "float32")
    assert cudnn(q, cpu, v).status != 0 and "must be a CUDA tensor" in last_error()
    # float16: float32 goes to cuBLAS (sdpa_cublas.cu), which takes any head size.
    big, _ = dense(np.zeros((1, 1, 2, 20000)), DEV, "float16")
    assert efficient(big, big, big).status != 0 and "shared memory" in last_error()


def test_shims_never_wait(tmp_path):
    counter = interposer_library(str(tmp_path))
    counts = count_waits(counter, setup=f"""
        {IMPORT_PATHS}
        import numpy as np
        from support import attention_shims as t
        from support.shims import read
        rng = np.random.default_rng(0)
        (q, _), (k, _), (v, _) = t.inputs(rng, "float16", 2, 4, 64, 64, 64, 64)
        # The first call of each op builds its cuDNN plan (outside the count).
        read(t.efficient(q, k, v, causal=True).ok().out)
        read(t.cudnn(q, k, v).ok().out)
        read(t.flash(q, k, v).ok().out)
    """, body="""
        for _ in range(20):
            r1 = t.efficient(q, k, v, causal=True).ok()
            r2 = t.cudnn(q, k, v).ok()
            r3 = t.flash(q, k, v).ok()
        read(r3.out)
    """)
    assert {name: n for name, n in counts.items() if n} == {"cudaStreamSynchronize": 1}, counts
