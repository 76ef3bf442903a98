"""The CUDA SDPA shims (efficient, cuDNN, flash) on cuDNN's fused attention
for float16 and bfloat16, through ctypes as a model library calls them,
against float64 numpy (tests/support/attention_ref.py).

Tolerances: relative error (‖out − ref‖ / ‖ref‖) below 2e-2 for the output
(float16/bfloat16 rounding of the output, 2^-11 and 2^-8, plus cuDNN's
rounding of the probabilities to the input dtype before the second matrix
product, as flash attention does); the reference takes the inputs as rounded
to their dtype. The log-sum-exp cuDNN writes is float32, from float
accumulation of the exact products of the rounded inputs: 1e-4 relative.

What cuDNN does not take (a bool mask, misaligned or strided rows, head sizes
that are not multiples of 8, bottom-right causal masks with rows that see no
key) runs on the straightforward kernel: those cases are checked to give the
same answers, whichever path runs them. AOTIRT_LOG=debug says which. That
no call waits is checked with the other attention tests (test_attention_gpu.py).
"""

import os

import numpy as np
import pytest

import aotirt
from support import attention_ref as ref
from support.attention_shims import cudnn, efficient, flash, inputs
from support.gpu_shim_tests import DEV, IMPORT_PATHS
from support.helpers import run_python
from support.shims import dense, last_error, layout, read, view

pytestmark = pytest.mark.gpu
TOLERANCE = 2e-2
LSE_TOLERANCE = 1e-4
DTYPES = ["float16", "bfloat16"]
CALLS = {"efficient": efficient, "cudnn": cudnn, "flash": flash}


def check(result, want, lse=True):
    want_out, want_lse = want
    assert ref.relative_error(read(result.out), want_out) < TOLERANCE
    if lse:
        got = read(result.lse)
        got = got.reshape(got.shape[:2] + (-1,))[..., :want_lse.shape[-1]]
        assert ref.relative_error(got, want_lse) < LSE_TOLERANCE


SIZES = [  # B, H, L, S, E, Ev, Hk
    (2, 4, 64, 64, 64, 64, 4),
    (1, 8, 128, 256, 128, 128, 8),   # head size 128, more keys than queries
    (2, 3, 17, 33, 64, 64, 3),       # odd lengths
    (1, 2, 1, 77, 64, 64, 2),        # one query row: a decoder step
    (2, 8, 10, 70, 64, 64, 2),       # grouped-query heads
    (1, 2, 40, 40, 96, 96, 2),       # head size 96
    (1, 2, 32, 48, 64, 32, 2),       # value head size other than the query's (not flash)
    (1, 2, 24, 24, 256, 256, 2),     # the largest head size cudnn_takes lets through
]


def size_id(s):
    return "B{}H{}L{}S{}E{}Ev{}Hk{}".format(*s)


# flash attention takes one head size for queries and values: no case of it
# with two.
OP_SIZES = [(op, s) for op in ("efficient", "cudnn", "flash") for s in SIZES if op != "flash" or s[4] == s[5]]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize(("op", "sizes"), OP_SIZES, ids=[f"{op}-{size_id(s)}" for op, s in OP_SIZES])
def test_matches_numpy(op, sizes, causal, dtype):
    B, H_, L, S, E, Ev, Hk = sizes
    rng = np.random.default_rng(10)
    (q, qr), (k, kr), (v, vr) = inputs(rng, dtype, B, H_, L, S, E, Ev, Hk=Hk)
    result = CALLS[op](q, k, v, causal=causal).ok()
    # flash aligns its causal mask to the bottom right, the others to the top left.
    alignment = ("bottom_right" if op == "flash" else "top_left") if causal else None
    # The efficient kernel's logsumexp is padded to 32 rows: with L % 32 it
    # runs on the kernel (still checked here).
    check(result, ref.sdpa(qr, kr, vr, causal=alignment))
    assert layout(result.out)[2:] == (dtype, 1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_scale(dtype):
    rng = np.random.default_rng(11)
    (q, qr), (k, kr), (v, vr) = inputs(rng, dtype, 2, 4, 32, 48, 64, 64)
    for op in ("efficient", "cudnn", "flash"):
        check(CALLS[op](q, k, v, scale=0.05).ok(), ref.sdpa(qr, kr, vr, scale=0.05))


BIAS_SHAPES = [(32, 48), (2, 1, 32, 48), (1, 4, 32, 48), (2, 4, 32, 48), (1, 4, 1, 48), (48,)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", BIAS_SHAPES, ids=str)
@pytest.mark.parametrize("op", ["efficient", "cudnn"])
def test_additive_bias_broadcasts(op, shape, dtype):
    rng = np.random.default_rng(12)
    (q, qr), (k, kr), (v, vr) = inputs(rng, dtype, 2, 4, 32, 48, 64, 64)
    bias, br = dense(rng.standard_normal(shape), DEV, dtype)
    for causal in (False, True):
        result = CALLS[op](q, k, v, bias=bias, causal=causal).ok()
        check(result, ref.sdpa(qr, kr, vr, bias=br, causal="top_left" if causal else None))


@pytest.mark.parametrize("dtype", DTYPES)
def test_expanded_and_padded_bias_as_torch_passes_it(dtype):
    """torch pads the bias's last dimension to a multiple of 16 (here 48 ->
    64, a row stride of 64) and expands it to [B, H, L, S] with zero strides."""
    rng = np.random.default_rng(13)
    B, H_, L, S = 2, 4, 20, 40
    (q, qr), (k, kr), (v, vr) = inputs(rng, dtype, B, H_, L, S, 64, 64)
    padded = rng.standard_normal((L, 48))
    bias, br = view(padded, (B, H_, L, S), (0, 0, 48, 1), 0, DEV, dtype)
    check(efficient(q, k, v, bias=bias).ok(), ref.sdpa(qr, kr, vr, bias=br))
    check(cudnn(q, k, v, bias=bias).ok(), ref.sdpa(qr, kr, vr, bias=br))


@pytest.mark.parametrize("op", ["efficient", "cudnn"])
def test_bool_masks_run_on_the_kernel(op):
    rng = np.random.default_rng(14)
    (q, qr), (k, kr), (v, vr) = inputs(rng, "float16", 1, 2, 16, 64, 64, 64)
    keep = rng.random((16, 64)) > 0.3
    keep[:, 0] = True
    mask, _ = dense(keep, DEV)
    check(CALLS[op](q, k, v, bias=mask).ok(), ref.sdpa(qr, kr, vr, bias=keep))


def test_bottom_right_rows_that_see_no_key_run_on_the_kernel():
    # flash with L > S: the first L - S rows see no key (zeros, lse 0).
    rng = np.random.default_rng(15)
    (q, qr), (k, kr), (v, vr) = inputs(rng, "bfloat16", 1, 2, 40, 24, 64, 64)
    result = flash(q, k, v, causal=True).ok()
    assert np.all(read(result.out)[:, :, :16] == 0)
    check(result, ref.sdpa(qr, kr, vr, causal="bottom_right"))


@pytest.mark.parametrize("name", list(ref.QUERY_LAYOUTS))
def test_cudnn_writes_the_layouts_of_torchs_meta_functions(name):
    """tests/shims/test_attention_gpu.py's query layouts, in float16 (head size 8,
    the query 16-byte aligned, so cuDNN takes them): the flash and cuDNN ops'
    outputs come out as empty_like(query)."""
    rng = np.random.default_rng(16)
    strides, count = ref.QUERY_LAYOUTS[name]
    q, qr = view(rng.standard_normal(count + 8), (ref.B, ref.H, ref.L, ref.E), strides, 8, DEV, "float16")
    (k, kr), (v, vr) = (dense(rng.standard_normal((ref.B, ref.H, 7, ref.E)), DEV, "float16") for _ in range(2))
    for call in (flash, cudnn):
        result = call(q, k, v).ok()
        assert layout(result.out)[1] == ref.EMPTY_LIKE[name]
        check(result, ref.sdpa(qr, kr, vr))


def test_logsumexp_layouts():
    rng = np.random.default_rng(17)
    (q, qr), (k, kr), (v, vr) = inputs(rng, "float16", 2, 3, 64, 40, 64, 64)
    want = ref.sdpa(qr, kr, vr)
    result = efficient(q, k, v).ok()                       # L a multiple of 32: cuDNN writes it
    assert layout(result.lse)[:3] == ((2, 3, 64), (192, 64, 1), "float32")
    check(result, want)
    result = cudnn(q, k, v).ok()
    assert layout(result.lse)[:3] == ((2, 3, 64, 1), (192, 64, 1, 1), "float32")
    check(result, want)
    result = flash(q, k, v).ok()
    assert layout(result.lse)[:3] == ((2, 3, 64), (192, 64, 1), "float32")
    check(result, want)
    result = efficient(q, k, v, lse=False).ok()            # no statistics asked for
    assert layout(result.lse)[0] == (2, 3, 0)
    check(result, want, lse=False)


def test_strided_and_misaligned_inputs_run_on_the_kernel():
    rng = np.random.default_rng(18)
    B, H_, L, S, E = 2, 3, 9, 150, 16
    # queries one element off 16-byte alignment, keys stored [B, H, E, S]
    q, qr = view(rng.standard_normal(B * H_ * L * E + 1), (B, H_, L, E), (H_ * L * E, L * E, E, 1), 1, DEV, "float16")
    k, kr = view(rng.standard_normal(B * H_ * E * S), (B, H_, S, E), (H_ * E * S, E * S, 1, S), 0, DEV, "float16")
    v, vr = dense(rng.standard_normal((B, H_, S, E)), DEV, "float16")
    for call, alignment in ((efficient, "top_left"), (cudnn, "top_left"), (flash, "bottom_right")):
        check(call(q, k, v, causal=True).ok(), ref.sdpa(qr, kr, vr, causal=alignment))


def test_bad_arguments_are_still_refused_first():
    rng = np.random.default_rng(19)
    (q, _), (k, _), (v, _) = inputs(rng, "float16", 1, 2, 8, 8, 64, 64)
    assert efficient(q, k, v, dropout=0.5).status != 0 and "dropout_p must be 0" in last_error()
    assert cudnn(q, k, v, debug=True).status != 0 and "return_debug_mask" in last_error()
    (q3, _), _, _ = inputs(rng, "float16", 1, 3, 8, 8, 64, 64)
    assert flash(q3, k, v).status != 0 and "multiple of key's and value's" in last_error()
    check(flash(q, k, v).ok(), ref.sdpa(*[read(t) for t in (q, k, v)]))   # still usable


def test_the_debug_log_names_the_path_once_per_plan():
    code = f"""
{IMPORT_PATHS}
import numpy as np
from support.attention_shims import cudnn, inputs
from support.shims import read
rng = np.random.default_rng(0)
(q, _), (k, _), (v, _) = inputs(rng, "bfloat16", 1, 4, 64, 64, 64, 64)
for _ in range(3):
    read(cudnn(q, k, v).ok().out)
"""
    proc = run_python(code, env={"AOTIRT_LOG": "debug"})
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("aotirt: attention: cuDNN plan ")]
    assert len(lines) == 1, proc.stderr
    assert "bfloat16 attention B=1 H=4 Hk=4 L=64 S=64 E=64 Ev=64" in lines[0]


def test_without_cudnn_attention_runs_on_the_kernel():
    code = f"""
{IMPORT_PATHS}
import numpy as np
from support import attention_ref as ref
from support.attention_shims import flash, inputs
from support.shims import read
rng = np.random.default_rng(0)
(q, qr), (k, kr), (v, vr) = inputs(rng, "float16", 1, 2, 32, 32, 64, 64)
out = read(flash(q, k, v).ok().out)
print(ref.relative_error(out, ref.sdpa(qr, kr, vr)[0]) < 2e-2)
print('libcudnn' in open('/proc/self/maps').read())
"""
    proc = run_python(code, env={"AOTIRT_CUDNN": "/nonexistent/libcudnn.so.9", "AOTIRT_LOG": "debug"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "False"]
    assert "runs on the straightforward kernel" in proc.stderr


def test_captured_attention_replays_what_eager_computes():
    """Through the fallback_ops test model (a convolution and flash attention),
    captured as a CUDA graph after its warm-up runs built the plans."""
    path = os.path.join(os.path.dirname(aotirt.__file__), "models", "testing", "fallback_ops_cuda.so")
    rng = np.random.default_rng(20)
    x = rng.standard_normal((1, 8, 8, 8)).astype(np.float16)
    w = rng.standard_normal((8, 8, 3, 3)).astype(np.float16)
    q, k, v = (rng.standard_normal((2, 4, 96, 64)).astype(np.float16) for _ in range(3))
    with aotirt.CudaHandle(path, 0) as handle:
        eager = handle.run([x, w, q, k, v])[1].numpy()
        want = ref.sdpa(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64))[0]
        assert ref.relative_error(eager.astype(np.float64), want) < TOLERANCE
        with handle.capture([x, w, q, k, v]) as graph:
            np.testing.assert_array_equal(graph.outputs[1].numpy(), eager)
            q2 = rng.standard_normal(q.shape).astype(np.float16)
            replayed = graph.replay([x, w, q2, k, v])[1].numpy()
            np.testing.assert_array_equal(replayed, handle.run([x, w, q2, k, v])[1].numpy())
