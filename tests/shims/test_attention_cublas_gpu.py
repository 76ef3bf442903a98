"""float32 attention on cuBLAS (cuda_src/shims/attention/sdpa_cublas.cu): the
CUDA SDPA shims called through ctypes, as a model library calls them, against
float64 numpy (attention_ref.py).

The goal is torch's efficient kernel's float32 numerics: a relative error
(||out - ref|| / ||ref||) near 1e-5. Tests assert 1e-4 and warn above 1e-5,
so that the summary shows any shape that misses the goal.

Layouts are those Inductor hands the shims: contiguous [B, H, L, E], and
[B, L, H, E] projections permuted to [B, H, L, E] ("blhe"). The shims pick
the cuBLAS path for every float32 problem whose matrices have a unit stride
that CUTLASS's fused kernel does not take (test_attention_fmha_gpu.py says
which it takes: the tests here that run in this process check either path's
numbers; those that check cuBLAS's own chunks and log run in a subprocess
with AOTIRT_ATTENTION_FUSED=0). AOTIRT_LOG=debug names the path once per
shape (checked in a subprocess).
"""

import itertools
import os
import re
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import aotirt
from support import attention_ref as ref
from support.attention_shims import cudnn, efficient, flash
from support.gpu_shim_tests import DEV, IMPORT_PATHS, SHIMS_TESTS
from support.shims import dense, layout, read, view
from support.waits import count_waits, interposer_library

pytestmark = pytest.mark.gpu
GOAL, LIMIT = 1e-5, 1e-4
SDPA_MODEL = os.path.join(os.path.dirname(aotirt.__file__), "models", "testing", "sdpa_cuda.so")
OPS = {"efficient": efficient, "cudnn": cudnn, "flash": flash}
# The causal alignment of each shim (attention.cpp): flash aligns bottom
# right (the same as top left when L == S).
ALIGNMENT = {"efficient": "top_left", "cudnn": "top_left", "flash": "bottom_right"}


def tensor(rng, B, H_, L, D, layout_name="contiguous"):
    """A float32 [B, H, L, D] handle and its float64 values: contiguous, or
    a [B, L, H, D] projection permuted to [B, H, L, D]."""
    if layout_name == "contiguous":
        return dense(rng.standard_normal((B, H_, L, D)), DEV, "float32")
    assert layout_name == "blhe"
    return view(rng.standard_normal(B * L * H_ * D), (B, H_, L, D), (L * H_ * D, D, H_ * D, 1), 0, DEV, "float32")


def qkv(rng, B, H_, Hk, L, S, E, Ev, layout_name="contiguous"):
    return (tensor(rng, B, H_, L, E, layout_name), tensor(rng, B, Hk, S, E, layout_name),
            tensor(rng, B, Hk, S, Ev, layout_name))


def python(program, **env):
    """Runs `program` in a fresh interpreter (environment variables the core
    reads once need one) with `env` added; returns the finished process."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(program)], check=False, capture_output=True,
                          text=True, env=dict(os.environ, **env), cwd=SHIMS_TESTS, timeout=600)


def reference(q, k, v, bias=None, causal=None, scale=None):
    """ref.sdpa one (batch, head) at a time: float64 scores of long
    sequences stay a few hundred MiB."""
    B, H_, L, _ = q.shape
    group = H_ // k.shape[1]
    out = np.empty(q.shape[:3] + (v.shape[3],))
    lse = np.empty(q.shape[:3])
    if bias is not None:
        bias = np.broadcast_to(bias, (B, H_, L, k.shape[2]))
    for b, h in itertools.product(range(B), range(H_)):
        hk = h // group
        part = bias[b:b + 1, h:h + 1] if bias is not None else None
        o, s = ref.sdpa(q[b:b + 1, h:h + 1], k[b:b + 1, hk:hk + 1], v[b:b + 1, hk:hk + 1], part, causal, scale)
        out[b, h], lse[b, h] = o[0, 0], s[0, 0]
    return out, lse


def assert_close(got, want, what):
    error = ref.relative_error(got, want)
    assert np.all(np.isfinite(got)), f"{what}: not finite"
    assert error < LIMIT, f"{what}: relative error {error:.2e}"
    if error > GOAL:
        warnings.warn(f"{what}: relative error {error:.2e} is above the {GOAL:g} goal", stacklevel=2)


def check(result, want, what, lse=True):
    want_out, want_lse = want
    assert_close(read(result.out), want_out, what + " out")
    if lse:
        got = read(result.lse)
        got = got.reshape(got.shape[:2] + (-1,))[..., :want_lse.shape[-1]]
        assert_close(got, want_lse, what + " lse")


def call(op, q, k, v, bias=None, causal=False, scale=None, lse=True):
    if op == "efficient":
        return efficient(q, k, v, bias=bias, causal=causal, scale=scale, lse=lse).ok()
    if op == "cudnn":
        return cudnn(q, k, v, bias=bias, causal=causal, scale=scale).ok()
    assert bias is None
    return flash(q, k, v, causal=causal, scale=scale).ok()


# Every sequence length with every head size; (batch, kv_heads) cycles
# through all nine pairs of batch 1-3 and kv heads 8, 2, 1 (8 query heads).
PAIRS = list(itertools.product((1, 2, 3), (8, 2, 1)))
SHAPES = [(PAIRS[i % len(PAIRS)][0], 8, PAIRS[i % len(PAIRS)][1], L, E)
          for i, (L, E) in enumerate(itertools.product((1, 7, 128, 1000), (32, 64, 80, 128)))]


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("layout_name", ["contiguous", "blhe"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "B{}H{}Hk{}L{}E{}".format(*s))
def test_matches_float64(shape, layout_name, op):
    B, H_, Hk, L, E = shape
    rng = np.random.default_rng(L * 1000 + E)
    (q, qr), (k, kr), (v, vr) = qkv(rng, B, H_, Hk, L, L, E, E, layout_name)
    check(call(op, q, k, v), reference(qr, kr, vr), f"{op} {shape} {layout_name}")


def test_the_issue_shape_meets_the_goal():
    """[1, 8, 128, 64], the shape issue 14 times: 1e-5 asserted, not only warned."""
    rng = np.random.default_rng(14)
    (q, qr), (k, kr), (v, vr) = qkv(rng, 1, 8, 8, 128, 128, 64, 64, "blhe")
    out, lse = reference(qr, kr, vr)
    result = efficient(q, k, v).ok()
    assert ref.relative_error(read(result.out), out) < GOAL
    assert ref.relative_error(read(result.lse)[..., :128], lse) < GOAL


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("lengths", [(7, 13), (13, 7), (128, 1000), (1000, 128), (128, 128)], ids=str)
def test_causal_alignments(lengths, op):
    """Top left for efficient and cuDNN; bottom right for flash (L > S
    leaves its first L - S rows without keys: zeros, log-sum-exp 0)."""
    L, S = lengths
    rng = np.random.default_rng(L + S)
    (q, qr), (k, kr), (v, vr) = qkv(rng, 2, 8, 2, L, S, 64, 64, "blhe")
    result = call(op, q, k, v, causal=True)
    check(result, reference(qr, kr, vr, causal=ALIGNMENT[op]), f"{op} causal {lengths}")
    if op == "flash" and L > S:
        assert np.all(read(result.out)[:, :, :L - S] == 0)
        assert np.all(read(result.lse)[:, :, :L - S] == 0)


BIAS_SHAPES = [(9, 40), (1, 40), (2, 1, 9, 40), (1, 8, 1, 40), (40,), (8, 9, 40)]


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("shape", BIAS_SHAPES, ids=str)
@pytest.mark.parametrize("op", ["efficient", "cudnn"])
def test_float_bias_broadcasts(op, shape, causal):
    rng = np.random.default_rng(BIAS_SHAPES.index(shape))
    (q, qr), (k, kr), (v, vr) = qkv(rng, 2, 8, 2, 9, 40, 32, 32, "blhe")
    bias, br = dense(rng.standard_normal(shape), DEV, "float32")
    result = call(op, q, k, v, bias=bias, causal=causal)
    check(result, reference(qr, kr, vr, bias=br, causal="top_left" if causal else None), f"{op} bias {shape}")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_bias_of_another_dtype(dtype):
    rng = np.random.default_rng(3)
    (q, qr), (k, kr), (v, vr) = qkv(rng, 1, 8, 8, 9, 40, 32, 32)
    bias, br = dense(rng.standard_normal((9, 40)), DEV, dtype)
    check(efficient(q, k, v, bias=bias).ok(), reference(qr, kr, vr, bias=br), f"{dtype} bias")


def test_expanded_padded_bias_as_torch_passes_it():
    """torch pads the bias's last dimension to a multiple of 16, slices it
    back and expands it to [B, H, L, S] with stride-0 dimensions."""
    rng = np.random.default_rng(15)
    B, H_, L, S = 2, 8, 7, 13
    (q, qr), (k, kr), (v, vr) = qkv(rng, B, H_, 2, L, S, 64, 64, "blhe")
    bias, br = view(rng.standard_normal((L, 16)), (B, H_, L, S), (0, 0, 16, 1), 0, DEV, "float32")
    check(efficient(q, k, v, bias=bias).ok(), reference(qr, kr, vr, bias=br), "padded bias")


# Key counts that reach every softmax variant: a warp per row with 1 to 32
# keys per lane, a block per row with 8 to 32, and the two-pass one.
KEY_COUNTS = [1, 31, 200, 1000, 1500, 3000, 5000, 9000]


@pytest.mark.parametrize("S", KEY_COUNTS)
@pytest.mark.parametrize("op", ["efficient", "cudnn"])
def test_bool_mask_and_fully_masked_rows(op, S):
    rng = np.random.default_rng(S)
    L = 9
    (q, qr), (k, kr), (v, vr) = qkv(rng, 2, 8, 2, L, S, 32, 32, "blhe")
    keep = rng.random((2, 1, L, S)) > 0.5
    keep[:, :, 3] = False       # rows with no key at all
    keep[1, :, 5] = False
    keep[:, :, 6, :] = False
    keep[:, :, 6, S - 1] = True  # one key, the last
    bias, _ = dense(keep, DEV)
    result = call(op, q, k, v, bias=bias, causal=False)
    out, lse = read(result.out), read(result.lse).reshape(2, 8, -1)
    assert np.all(out[:, :, 3] == 0) and np.all(out[1, :, 5] == 0)
    assert np.all(lse[:, :, 3] == 0) and np.all(lse[1, :, 5] == 0)
    check(result, reference(qr, kr, vr, bias=keep), f"{op} bool mask S={S}")
    # The same mask as -inf in a float bias.
    bias, br = dense(np.where(keep, 0.0, -np.inf), DEV, "float32")
    check(call(op, q, k, v, bias=bias), reference(qr, kr, vr, bias=br), f"{op} -inf bias S={S}")


@pytest.mark.parametrize("S", KEY_COUNTS)
def test_every_softmax_variant_with_causal_bottom_right(S):
    rng = np.random.default_rng(S + 1)
    (q, qr), (k, kr), (v, vr) = qkv(rng, 1, 8, 1, 33, S, 64, 64, "blhe")
    check(flash(q, k, v, causal=True).ok(), reference(qr, kr, vr, causal="bottom_right"), f"flash causal S={S}")


@pytest.mark.parametrize("L", [1, 7, 32, 1000])
def test_logsumexp_requested_and_not(L):
    rng = np.random.default_rng(L)
    (q, qr), (k, kr), (v, vr) = qkv(rng, 2, 8, 2, L, 50, 32, 48, "blhe")
    want = reference(qr, kr, vr, causal="top_left")
    padded = (L + 31) // 32 * 32
    result = efficient(q, k, v, causal=True).ok()
    assert layout(result.lse) == ((2, 8, padded), (8 * padded, padded, 1), "float32", 1)
    lse = read(result.lse)
    assert np.all(lse[..., L:] == np.inf)   # the efficient kernel's padding
    check(result, want, f"efficient lse L={L}")
    result = efficient(q, k, v, causal=True, lse=False).ok()
    assert layout(result.lse)[0] == (2, 8, 0)
    check(result, want, f"efficient no lse L={L}", lse=False)
    result = cudnn(q, k, v, causal=True).ok()
    assert layout(result.lse)[0] == (2, 8, L, 1)
    check(result, want, f"cudnn lse L={L}")


def test_packed_and_transposed_inputs():
    """q, k, v of one packed projection [B, L, 3, H, E]; then keys stored
    [B, H, E, S] (the key matrix column-major), values with a broadcast
    batch (stride 0) and a query at an offset."""
    rng = np.random.default_rng(21)
    B, H_, L, E = 2, 8, 37, 64
    base = rng.standard_normal(B * L * 3 * H_ * E)
    strides = (L * 3 * H_ * E, E, 3 * H_ * E, 1)
    (q, qr), (k, kr), (v, vr) = (view(base, (B, H_, L, E), strides, i * H_ * E, DEV, "float32") for i in range(3))
    for op in OPS:
        check(call(op, q, k, v, causal=True), reference(qr, kr, vr, causal="top_left"), f"{op} packed qkv")
    S = 150
    q, qr = view(rng.standard_normal(B * H_ * L * E + 3), (B, H_, L, E), (H_ * L * E, L * E, E, 1), 3, DEV, "float32")
    k, kr = view(rng.standard_normal(B * 2 * E * S), (B, 2, S, E), (2 * E * S, E * S, 1, S), 0, DEV, "float32")
    v, vr = view(rng.standard_normal(2 * S * E), (B, 2, S, E), (0, S * E, E, 1), 0, DEV, "float32")
    for op in OPS:
        check(call(op, q, k, v, causal=True), reference(qr, kr, vr, causal=ALIGNMENT[op]), f"{op} strided k, v")


def test_layouts_cublas_cannot_take_fall_back():
    """A query whose head size is not unit-strided (no leading dimension
    describes it): the straightforward kernel computes it, still right."""
    rng = np.random.default_rng(22)
    B, H_, L, E = 1, 8, 20, 16
    q, qr = view(rng.standard_normal(B * H_ * L * E * 2), (B, H_, L, E), (H_ * L * E * 2, L * E * 2, E * 2, 2), 0,
                 DEV, "float32")
    (k, kr), (v, vr) = tensor(rng, B, 2, 30, E), tensor(rng, B, 2, 30, E)
    check(efficient(q, k, v).ok(), reference(qr, kr, vr), "fallback")


# Sequences of 4096: the scores pass 256 MiB and go in chunks of query rows
# (the causal 8 heads in 8 chunks of 512 rows, each over the keys its last
# row sees; then 4 chunks, and 7, the last of 7 four rows long); GQA with
# chunks has no folded heads, so cuBLAS takes pointer arrays.
LONG = [  # B, H, Hk, E, layout, op, causal
    (1, 8, 8, 128, "blhe", "efficient", True),
    (2, 8, 2, 64, "contiguous", "cudnn", False),
    (3, 8, 1, 32, "blhe", "efficient", True),
]


@pytest.mark.parametrize("case", LONG, ids=lambda c: "B{}H{}Hk{}E{}-{}-{}-{}".format(*c))
def test_long_sequences_in_chunks(case):
    B, H_, Hk, E, layout_name, op, causal = case
    rng = np.random.default_rng(4096 + B)
    (q, qr), (k, kr), (v, vr) = qkv(rng, B, H_, Hk, 4096, 4096, E, E, layout_name)
    result = call(op, q, k, v, causal=causal)
    check(result, reference(qr, kr, vr, causal="top_left" if causal else None), f"{op} 4096 {case}")


CHUNKED = """
{paths}
import numpy as np
import test_attention_cublas_gpu as t
from support.shims import dense, read
rng = np.random.default_rng(0)
# 1 MiB of scores: 8 heads of 300 keys give chunks of 109 rows (10 chunks, the last 19 rows)
(q, qr), (k, kr), (v, vr) = t.qkv(rng, 1, 8, 8, 1000, 300, 64, 64, "blhe")
r = t.efficient(q, k, v, causal=True).ok()
t.check(r, t.reference(qr, kr, vr, causal="top_left"), "chunked efficient")
assert np.all(read(r.lse)[..., 1000:] == np.inf)
# GQA, a float bias: 2 x 8 heads of 700 keys, chunks of 23 rows (15 chunks, the last 11 rows)
(q, qr), (k, kr), (v, vr) = t.qkv(rng, 2, 8, 2, 333, 700, 80, 80, "contiguous")
bias, br = dense(rng.standard_normal((333, 700)), "cuda:0", "float32")
t.check(t.cudnn(q, k, v, bias=bias).ok(), t.reference(qr, kr, vr, bias=br), "chunked cudnn")
# Bottom-right causal, one kv head: chunks of 81 rows
(q, qr), (k, kr), (v, vr) = t.qkv(rng, 1, 8, 1, 100, 400, 32, 32, "blhe")
t.check(t.flash(q, k, v, causal=True).ok(), t.reference(qr, kr, vr, causal="bottom_right"), "chunked flash")
# Longer rows than the bound: one row at a time
(q, qr), (k, kr), (v, vr) = t.qkv(rng, 1, 8, 2, 5, 40000, 32, 32, "blhe")
t.check(t.efficient(q, k, v).ok(), t.reference(qr, kr, vr), "one row a chunk")
print("CHUNKS OK")
"""


def test_chunk_boundaries_with_a_small_workspace_bound():
    """AOTIRT_ATTENTION_WORKSPACE_MIB=1 (read once, so in a fresh process):
    many chunks, partial last ones, causal offsets and the log-sum-exp's
    padding across them. AOTIRT_LOG=debug says how each shape was split."""
    proc = python(CHUNKED.format(paths=IMPORT_PATHS), AOTIRT_ATTENTION_WORKSPACE_MIB="1", AOTIRT_LOG="debug",
                  AOTIRT_ATTENTION_FUSED="0")
    assert proc.returncode == 0 and "CHUNKS OK" in proc.stdout, proc.stdout + proc.stderr
    chunks = [int(n) for n in re.findall(r"cuBLAS, .* (\d+) chunks of", proc.stderr)]
    assert chunks == [10, 15, 2, 5], proc.stderr


LOGGED = """
{paths}
import numpy as np
import test_attention_cublas_gpu as t
from support.shims import view
rng = np.random.default_rng(0)
for _ in range(3):
    (q, _), (k, _), (v, _) = t.qkv(rng, 1, 8, 8, 128, 128, 64, 64, "blhe")
    t.efficient(q, k, v).ok()
(q, _), (k, _), (v, _) = t.qkv(rng, 2, 8, 2, 128, 128, 64, 64, "blhe")
t.efficient(q, k, v).ok()
q, _ = view(rng.standard_normal(8 * 20 * 16 * 2), (1, 8, 20, 16), (8 * 20 * 32, 20 * 32, 32, 2), 0, "cuda:0",
            "float32")
(k, _), (v, _) = t.tensor(rng, 1, 2, 30, 16), t.tensor(rng, 1, 2, 30, 16)
t.efficient(q, k, v).ok()
t.efficient(q, k, v).ok()
"""


def test_debug_log_names_the_path_once_per_shape():
    proc = python(LOGGED.format(paths=IMPORT_PATHS), AOTIRT_LOG="debug", AOTIRT_ATTENTION_FUSED="0")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("aotirt debug: attention")]
    assert len(lines) == 3, proc.stderr
    assert "B=1 H=8 kv_heads=8 L=128" in lines[0] and "one strided batch of 8 matrices" in lines[0]
    assert "B=2 H=8 kv_heads=2" in lines[1] and "pointer arrays of 16 matrices" in lines[1]
    assert "straightforward kernel" in lines[2]
    # Without AOTIRT_LOG nothing is printed.
    proc = python(LOGGED.format(paths=IMPORT_PATHS), AOTIRT_LOG="")
    assert proc.returncode == 0 and "aotirt debug" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("B", [1, 2], ids=["strided", "pointer_arrays"])
def test_graph_replays_equal_eager_runs(B):
    """The test model sdpa (causal, GQA, batch-first inputs permuted as
    Inductor does) captured as a CUDA graph: cuBLAS, the pointer-array
    kernel, the softmax and the workspace all inside it."""
    rng = np.random.default_rng(B)
    L, H_, Hk, E = 77, 8, 2 if B > 1 else 8, 64

    def arrays():
        return [rng.standard_normal((B, L, heads, E)).astype(np.float32) for heads in (H_, Hk, Hk)]

    def want(q, k, v):
        return reference(*(np.transpose(x, (0, 2, 1, 3)).astype(np.float64) for x in (q, k, v)), causal="top_left")

    with aotirt.CudaHandle(SDPA_MODEL) as h:
        example = arrays()
        eager = [t.numpy() for t in h.run(example)]
        assert_close(eager[0], want(*example)[0], "eager out")
        with h.capture(example) as g:
            out, lse = (t.numpy() for t in g.outputs)
            # The log-sum-exp's padding rows are +inf in both: compared apart.
            assert ref.relative_error(out, eager[0]) < 1e-6
            assert ref.relative_error(lse[..., :L], eager[1][..., :L]) < 1e-6
            assert np.array_equal(lse[..., L:], eager[1][..., L:]) and np.all(np.isposinf(lse[..., L:]))
            for _ in range(3):
                inputs = arrays()
                out, lse = (t.numpy() for t in g.replay(inputs))
                eager_out, eager_lse = (t.numpy() for t in h.run(inputs))
                # The same kernels on the same data: equal (cuBLAS may choose
                # another algorithm in a capture, so not asserted bit for bit).
                assert ref.relative_error(out, eager_out) < 1e-6
                assert ref.relative_error(lse[..., :L], eager_lse[..., :L]) < 1e-6
                expected_out, expected_lse = want(*inputs)
                assert_close(out, expected_out, "replayed out")
                assert_close(lse[..., :L], expected_lse, "replayed lse")


def test_shims_never_wait(tmp_path, monkeypatch):
    """Strided and pointer-array batches, chunks (a 1 MiB bound): nothing
    waits but the one read at the end."""
    monkeypatch.setenv("AOTIRT_ATTENTION_WORKSPACE_MIB", "1")
    counter = interposer_library(str(tmp_path))
    counts = count_waits(counter, setup=f"""
        {IMPORT_PATHS}
        import numpy as np
        import test_attention_cublas_gpu as t
        from support.shims import read
        rng = np.random.default_rng(0)
        (q1, _), (k1, _), (v1, _) = t.qkv(rng, 1, 8, 8, 128, 128, 64, 64, "blhe")   # one strided batch
        (q2, _), (k2, _), (v2, _) = t.qkv(rng, 2, 8, 2, 300, 600, 64, 64, "blhe")   # pointer arrays, 12 chunks
        calls = [lambda: t.efficient(q1, k1, v1, causal=True), lambda: t.cudnn(q2, k2, v2),
                 lambda: t.flash(q1, k1, v1)]
        for c in calls:   # the first loads cuBLAS and makes the thread's handle
            read(c().ok().out)
    """, body="""
        for _ in range(10):
            results = [c().ok() for c in calls]
        read(results[1].out)
    """)
    assert {name: n for name, n in counts.items() if n} == {"cudaStreamSynchronize": 1}, counts


def test_a_bad_workspace_bound_is_reported():
    proc = python(f"""
        {IMPORT_PATHS}
        import numpy as np
        import test_attention_cublas_gpu as t
        from support.shims import last_error
        rng = np.random.default_rng(0)
        (q, _), (k, _), (v, _) = t.qkv(rng, 1, 2, 2, 4, 4, 8, 8)
        assert t.efficient(q, k, v).status != 0
        print(last_error())
    """, AOTIRT_ATTENTION_WORKSPACE_MIB="lots",
       AOTIRT_ATTENTION_FUSED="0")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "AOTIRT_ATTENTION_WORKSPACE_MIB must be a positive whole number of MiB, got 'lots'" in proc.stdout

