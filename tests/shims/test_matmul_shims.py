"""aoti_torch_{cpu,cuda}_{mm,addmm,bmm}_out against numpy.

Each test runs on the CPU shims and, marked gpu, on the CUDA shims (cuBLAS).
Operands are strided views of numpy buffers placed behind AtenTensorHandles
(tests/support/shims.py); the reference is numpy in float64 on the same rounded
values, read back from the operands themselves.

Tolerances, as ||out - ref|| / ||ref||: the CPU sums in double, so its only
error is the final rounding to the output dtype (float32 2**-24, float16
2**-11, bfloat16 2**-8 per element); cuBLAS sums in float32 for float32,
float16 and bfloat16 (1e-5 for float32; bf16/f16 inputs are already rounded
so 1e-2 covers their output rounding with room) and in float64 for float64.
"""

import numpy as np
import pytest

from support.helpers import in_tests, relative_error
from support.shims import BF16, LIB, Space, last_error

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
DTYPES = [np.float64, np.float32, np.float16, BF16]
TOLERANCE = {
    "cpu": {np.float64: 1e-13, np.float32: 1e-6, np.float16: 1e-3, BF16: 1e-2},
    "cuda": {np.float64: 1e-12, np.float32: 1e-5, np.float16: 1e-2, BF16: 1e-2},
}


@pytest.fixture(params=DEVICES)
def space(request):
    s = Space(request.param)
    yield s
    s.close()


def shim(space, op):
    return getattr(LIB, f"aoti_torch_{space.device}_{op}_out")


def call(space, op, *args):
    status = shim(space, op)(*args)
    assert status == 0, last_error()


def layout(shape, kind):
    """(element strides, storage offset) of a 2-D [R, C] or 3-D [B, R, C] view."""
    *batch, r, c = shape
    b = batch[0] if batch else None
    inner = {
        "row": ((c, 1), 0),
        "col": ((1, r), 0),                 # a transposed matrix, as _reinterpret_tensor makes weights
        "row_padded": ((c + 3, 1), 5),      # leading dimension larger than the row, and an offset
        "col_padded": ((1, r + 2), 3),
        "strided": ((2 * c, 2), 1),         # no unit stride: cuBLAS needs a copy
        "reversed": ((-c, 1), 0),           # negative row stride: a copy too
        "repeat_rows": ((0, 1), 0),         # every row the same element (inputs only)
    }
    if b is None:
        return inner[kind]
    (sr, sc), offset = inner[kind] if kind in inner else ((c, 1), 0)
    extent = max(1, max(abs(sr) * (r - 1) + abs(sc) * (c - 1) + 1, 1))
    batches = {
        "batch_inner": ((c, b * c, 1), 0),  # stored as [R, B, C]
        "broadcast_batch": ((0, c, 1), 0),  # one matrix for every batch (inputs only)
    }
    if kind in batches:
        return batches[kind]
    return ((extent + offset, sr, sc), offset)


def operand(space, rng, shape, kind="row", dtype=np.float64, values=None, **kw):
    strides, offset = layout(shape, kind)
    if values is None:
        values = rng.standard_normal(shape)
    return space.make(shape, strides, offset, dtype=dtype, values=values, **kw)


def check_close(space, out, ref, dtype):
    got = out.values()
    assert np.all(np.isfinite(got)), got
    assert relative_error(got, ref) < TOLERANCE[space.device][dtype], relative_error(got, ref)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d if d == BF16 else np.dtype(d).name)
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (3, 5, 4), (17, 33, 9), (64, 1, 7), (1, 40, 1), (8, 128, 16)])
def test_mm_matches_numpy(space, dtype, m, k, n):
    rng = np.random.default_rng(m * 1000 + k * 10 + n)
    a = operand(space, rng, (m, k), dtype=dtype)
    b = operand(space, rng, (k, n), dtype=dtype)
    out = space.make((m, n), dtype=dtype)  # NaN until written
    ref = a.values() @ b.values()
    call(space, "mm", out.handle, a.handle, b.handle)
    check_close(space, out, ref, dtype)


LAYOUTS = ["row", "col", "row_padded", "col_padded", "strided", "reversed"]


@pytest.mark.parametrize("a_kind", LAYOUTS + ["repeat_rows"])
@pytest.mark.parametrize("b_kind", LAYOUTS + ["repeat_rows"])
def test_mm_strided_operands(space, a_kind, b_kind):
    rng = np.random.default_rng(len(a_kind) * 31 + len(b_kind))
    a = operand(space, rng, (6, 5), a_kind, np.float32)
    b = operand(space, rng, (5, 7), b_kind, np.float32)
    out = space.make((6, 7), dtype=np.float32)
    ref = a.values() @ b.values()
    call(space, "mm", out.handle, a.handle, b.handle)
    check_close(space, out, ref, np.float32)


@pytest.mark.parametrize("out_kind", ["row", "col", "row_padded", "col_padded", "strided", "reversed"])
def test_mm_strided_out_leaves_the_rest_of_its_buffer(space, out_kind):
    rng = np.random.default_rng(7)
    a = operand(space, rng, (4, 3), "col")
    b = operand(space, rng, (3, 5))
    strides, offset = layout((4, 5), out_kind)
    out = space.make((4, 5), strides, offset, fill=-7.0)
    ref = a.values() @ b.values()
    call(space, "mm", out.handle, a.handle, b.handle)
    check_close(space, out, ref, np.float64)
    # Every element of the buffer outside the view still holds the fill.
    base = out.base_values()
    touched = np.zeros(base.size, bool)
    for i in range(4):
        for j in range(5):
            touched[out.offset + i * strides[0] + j * strides[1]] = True
    assert np.all(base[~touched] == -7.0)


@pytest.mark.parametrize("self_shape", [(), (5,), (1, 5), (4, 1), (4, 5), (1, 1)])
@pytest.mark.parametrize("beta,alpha", [(1.0, 1.0), (0.5, 2.0), (-1.25, 0.75), (2.0, 0.0)])
def test_addmm_broadcasts_self(space, self_shape, beta, alpha):
    rng = np.random.default_rng(len(self_shape) * 13 + int(abs(beta) * 8))
    bias = space.make(self_shape, values=rng.standard_normal(self_shape))
    a = operand(space, rng, (4, 3))
    b = operand(space, rng, (3, 5), "col")  # a weight seen through _reinterpret_tensor
    out = space.make((4, 5))
    ref = beta * bias.values() + alpha * (a.values() @ b.values())
    call(space, "addmm", out.handle, bias.handle, a.handle, b.handle, beta, alpha)
    check_close(space, out, ref, np.float64)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d if d == BF16 else np.dtype(d).name)
def test_addmm_dtypes(space, dtype):
    rng = np.random.default_rng(3)
    bias = space.make((24,), dtype=dtype, values=rng.standard_normal(24))
    a = operand(space, rng, (10, 40), dtype=dtype)
    b = operand(space, rng, (40, 24), "col", dtype=dtype)
    out = space.make((10, 24), dtype=dtype)
    ref = 0.5 * bias.values() + 1.5 * (a.values() @ b.values())
    call(space, "addmm", out.handle, bias.handle, a.handle, b.handle, 0.5, 1.5)
    check_close(space, out, ref, dtype)


def test_addmm_ignores_self_when_beta_is_zero(space):
    rng = np.random.default_rng(4)
    bias = space.make((4, 5), values=np.full((4, 5), np.nan))
    a = operand(space, rng, (4, 3))
    b = operand(space, rng, (3, 5))
    out = space.make((4, 5), values=np.full((4, 5), np.inf))  # out's old contents are not read either
    call(space, "addmm", out.handle, bias.handle, a.handle, b.handle, 0.0, 2.0)
    check_close(space, out, 2.0 * (a.values() @ b.values()), np.float64)


@pytest.mark.parametrize("kind", ["row", "col", "row_padded", "strided"])
def test_addmm_out_is_self(space, kind):
    rng = np.random.default_rng(5)
    strides, offset = layout((6, 4), kind)
    acc = space.make((6, 4), strides, offset, values=rng.standard_normal((6, 4)))
    out = space.make((6, 4), strides, offset, base=acc)  # a second handle to the same elements
    a = operand(space, rng, (6, 9))
    b = operand(space, rng, (9, 4))
    ref = 0.25 * acc.values() + 3.0 * (a.values() @ b.values())
    call(space, "addmm", out.handle, acc.handle, a.handle, b.handle, 0.25, 3.0)
    check_close(space, out, ref, np.float64)


def test_addmm_out_overlaps_broadcast_self(space):
    # self is row 0 of out's own buffer, broadcast over all rows: out must not
    # overwrite it before every row has read it.
    rng = np.random.default_rng(6)
    out = space.make((3, 4), values=rng.standard_normal((3, 4)))
    bias = space.make((4,), (1,), 0, base=out)
    a = operand(space, rng, (3, 2))
    b = operand(space, rng, (2, 4))
    ref = 1.0 * bias.values() + a.values() @ b.values()
    call(space, "addmm", out.handle, bias.handle, a.handle, b.handle, 1.0, 1.0)
    check_close(space, out, ref, np.float64)


def test_mm_out_is_an_input(space):
    # out and self are one square matrix: computed elsewhere, then copied in.
    rng = np.random.default_rng(8)
    a = operand(space, rng, (5, 5))
    out = space.make((5, 5), base=a)
    b = operand(space, rng, (5, 5), "col")
    ref = a.values() @ b.values()
    call(space, "mm", out.handle, a.handle, b.handle)
    check_close(space, out, ref, np.float64)


def test_k_zero(space):
    a = space.make((3, 0))
    b = space.make((0, 4))
    out = space.make((3, 4))  # NaN: must become 0
    call(space, "mm", out.handle, a.handle, b.handle)
    assert np.array_equal(out.values(), np.zeros((3, 4)))
    bias = space.make((4,), values=np.arange(4.0))
    out2 = space.make((3, 4))
    call(space, "addmm", out2.handle, bias.handle, a.handle, b.handle, 2.5, 1.0)
    assert np.array_equal(out2.values(), np.tile(2.5 * np.arange(4.0), (3, 1)))
    nan_bias = space.make((4,), values=np.full(4, np.nan))
    call(space, "addmm", out2.handle, nan_bias.handle, a.handle, b.handle, 0.0, 1.0)
    assert np.array_equal(out2.values(), np.zeros((3, 4)))


def test_m_or_n_zero_do_nothing(space):
    a = space.make((0, 3))
    b = space.make((3, 4))
    call(space, "mm", space.make((0, 4)).handle, a.handle, b.handle)
    a2 = space.make((2, 3))
    b2 = space.make((3, 0))
    call(space, "mm", space.make((2, 0)).handle, a2.handle, b2.handle)
    call(space, "bmm", space.make((0, 2, 2)).handle, space.make((0, 2, 3)).handle, space.make((0, 3, 2)).handle)


BMM_LAYOUTS = ["row", "col", "strided", "batch_inner"]


@pytest.mark.parametrize("a_kind", BMM_LAYOUTS + ["broadcast_batch"])
@pytest.mark.parametrize("b_kind", BMM_LAYOUTS + ["broadcast_batch"])
@pytest.mark.parametrize("out_kind", ["row", "col", "batch_inner"])
def test_bmm(space, a_kind, b_kind, out_kind):
    rng = np.random.default_rng(len(a_kind) * 7 + len(b_kind) * 3 + len(out_kind))
    a = operand(space, rng, (3, 4, 6), a_kind, np.float32)
    b = operand(space, rng, (3, 6, 5), b_kind, np.float32)
    strides, offset = layout((3, 4, 5), out_kind)
    out = space.make((3, 4, 5), strides, offset, dtype=np.float32)
    ref = a.values() @ b.values()
    call(space, "bmm", out.handle, a.handle, b.handle)
    check_close(space, out, ref, np.float32)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d if d == BF16 else np.dtype(d).name)
@pytest.mark.parametrize("batch", [1, 5])
def test_bmm_dtypes(space, dtype, batch):
    rng = np.random.default_rng(batch)
    a = operand(space, rng, (batch, 9, 33), dtype=dtype)
    b = operand(space, rng, (batch, 33, 12), "col", dtype=dtype)
    out = space.make((batch, 9, 12), dtype=dtype)
    ref = a.values() @ b.values()
    call(space, "bmm", out.handle, a.handle, b.handle)
    check_close(space, out, ref, dtype)


def test_float32_sums_are_accurate(space):
    # K = 4096 of float32: a float32 sum on the CPU, or TF32 on the GPU
    # (10-bit mantissas), would miss these tolerances by orders of magnitude.
    rng = np.random.default_rng(9)
    a = operand(space, rng, (16, 4096), dtype=np.float32)
    b = operand(space, rng, (4096, 16), "col", dtype=np.float32)
    out = space.make((16, 16), dtype=np.float32)
    ref = a.values() @ b.values()
    call(space, "mm", out.handle, a.handle, b.handle)
    check_close(space, out, ref, np.float32)


# ---- errors: messages name the shim and what is wrong ---------------------------


def failure(fn, *args):
    assert fn(*args) == 1
    return last_error()


def test_wrong_shapes(space):
    name = f"aoti_torch_{space.device}"
    m = space.make
    mm, addmm, bmm = shim(space, "mm"), shim(space, "addmm"), shim(space, "bmm")
    msg = failure(mm, m((3, 5)).handle, m((3, 4)).handle, m((5, 5)).handle)
    assert msg.startswith(f"{name}_mm_out: ") and "[3, 4]" in msg and "[5, 5]" in msg and "cannot be multiplied" in msg
    msg = failure(mm, m((3, 4)).handle, m((3, 4)).handle, m((4, 5)).handle)
    assert msg == f"{name}_mm_out: out is [3, 4], expected [3, 5]"
    msg = failure(mm, m((3, 5)).handle, m((2, 3, 4)).handle, m((4, 5)).handle)
    assert msg == f"{name}_mm_out: self must be 2-D, got 3-D [2, 3, 4]"
    msg = failure(bmm, m((2, 3, 5)).handle, m((3, 4)).handle, m((2, 4, 5)).handle)
    assert msg == f"{name}_bmm_out: self must be 3-D, got 2-D [3, 4]"
    msg = failure(bmm, m((2, 3, 5)).handle, m((2, 3, 4)).handle, m((3, 4, 5)).handle)
    assert msg.startswith(f"{name}_bmm_out: ") and "different batch sizes" in msg
    msg = failure(addmm, m((3, 5)).handle, m((4,)).handle, m((3, 4)).handle, m((4, 5)).handle, 1.0, 1.0)
    assert msg == f"{name}_addmm_out: self [4] does not broadcast to [3, 5]"
    msg = failure(addmm, m((3, 5)).handle, m((2, 3, 5)).handle, m((3, 4)).handle, m((4, 5)).handle, 1.0, 1.0)
    assert msg == f"{name}_addmm_out: self must have at most 2 dimensions, got [2, 3, 5]"
    msg = failure(addmm, m((3, 5)).handle, m((5,)).handle, m((3, 4, 1)).handle, m((4, 5)).handle, 1.0, 1.0)
    assert msg == f"{name}_addmm_out: mat1 must be 2-D, got 3-D [3, 4, 1]"
    msg = failure(mm, m((3, 5), (0, 1)).handle, m((3, 4)).handle, m((4, 5)).handle)
    assert msg.startswith(f"{name}_mm_out: out has stride 0 in a dimension of size 3")
    msg = failure(mm, None, m((3, 4)).handle, m((4, 5)).handle)
    assert msg == f"{name}_mm_out: a tensor handle is NULL"


def test_wrong_dtypes(space):
    name = f"aoti_torch_{space.device}_mm_out"
    m = space.make
    mm = shim(space, "mm")
    msg = failure(mm, m((3, 5)).handle, m((3, 4), dtype=np.float32).handle, m((4, 5)).handle)
    assert msg == f"{name}: self is float32 but out is float64 (every operand must have one dtype)"
    ints = [m(s, dtype=np.int32, fill=0) for s in [(3, 5), (3, 4), (4, 5)]]
    msg = failure(mm, *[t.handle for t in ints])
    assert msg == f"{name}: out is int32; supported dtypes are float32, float64, float16 and bfloat16"


def test_cpu_tensors_to_the_cuda_shim():
    # Refused before anything touches CUDA, so this runs without a GPU.
    cpu = Space("cpu")
    try:
        msg = failure(LIB.aoti_torch_cuda_mm_out, cpu.make((3, 5)).handle, cpu.make((3, 4)).handle,
                      cpu.make((4, 5)).handle)
        assert msg == "aoti_torch_cuda_mm_out: out is on cpu, expected cuda"
    finally:
        cpu.close()


@pytest.mark.gpu
def test_cuda_tensors_to_the_cpu_shim():
    cpu, cuda = Space("cpu"), Space("cuda")
    try:
        msg = failure(LIB.aoti_torch_cpu_addmm_out, cpu.make((3, 5)).handle, cpu.make((5,)).handle,
                      cuda.make((3, 4)).handle, cpu.make((4, 5)).handle, 1.0, 1.0)
        assert msg == "aoti_torch_cpu_addmm_out: mat1 is on cuda:0, expected cpu"
    finally:
        cpu.close()
        cuda.close()


# ---- cuBLAS on the GPU: streams, threads, waits ------------------------------------


@pytest.mark.gpu
def test_cuda_out_belongs_to_the_shared_stream():
    import aotirt

    shared = aotirt.Stream.shared(0)
    s = Space("cuda")
    try:
        out = s.make((2, 2))
        call(s, "mm", out.handle, s.make((2, 3), values=np.ones((2, 3))).handle,
             s.make((3, 2), values=np.ones((3, 2))).handle)
        assert LIB.aotirt_stream_handle(LIB.aotirt_tensor_stream(out.handle)) == shared.handle
        assert np.array_equal(out.values(), np.full((2, 2), 3.0))
    finally:
        s.close()


@pytest.mark.gpu
def test_cuda_matmuls_from_threads():
    # One cuBLAS handle per thread: concurrent calls from 8 threads, twice
    # (the second round reuses handles the first threads left behind).
    import threading

    errors = []

    def work(seed):
        s = Space("cuda")
        try:
            rng = np.random.default_rng(seed)
            for _ in range(5):
                a = operand(s, rng, (32, 48), dtype=np.float32)
                b = operand(s, rng, (48, 16), "col", dtype=np.float32)
                out = s.make((32, 16), dtype=np.float32)
                call(s, "mm", out.handle, a.handle, b.handle)
                if relative_error(out.values(), a.values() @ b.values()) > 1e-5:
                    errors.append(seed)
        except Exception as e:  # a thread's exception would otherwise only be printed
            errors.append(repr(e))
        finally:
            s.close()

    for round_ in range(2):
        threads = [threading.Thread(target=work, args=(round_ * 8 + i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []


@pytest.mark.gpu
def test_cuda_matmuls_wait_only_in_the_copy(tmp_path_factory):
    from support.waits import count_waits, interposer_library

    counter = interposer_library(str(tmp_path_factory.mktemp("interposer")))
    setup = in_tests("""
        import numpy as np
        from support.shims import LIB, Space
        s = Space("cuda")
        rng = np.random.default_rng(0)
        a = s.make((64, 32), values=rng.standard_normal((64, 32)), dtype=np.float32)
        w = s.make((32, 48), (1, 32), values=rng.standard_normal((32, 48)), dtype=np.float32)
        bias = s.make((48,), values=rng.standard_normal(48), dtype=np.float32)
        odd = s.make((32, 48), (96, 2), values=rng.standard_normal((32, 48)), dtype=np.float32)
        out = s.make((64, 48), dtype=np.float32)
        outs = s.make((3, 64, 48), dtype=np.float32)
        a3 = s.make((3, 64, 32), values=rng.standard_normal((3, 64, 32)), dtype=np.float32)
        w3 = s.make((3, 32, 48), (0, 1, 32), values=rng.standard_normal((3, 32, 48)), dtype=np.float32)
        def step():
            assert LIB.aoti_torch_cuda_mm_out(out.handle, a.handle, w.handle) == 0
            assert LIB.aoti_torch_cuda_addmm_out(out.handle, bias.handle, a.handle, odd.handle, 1.0, 1.0) == 0
            # a bias row: one cuBLASLt matmul with the bias epilogue
            assert LIB.aoti_torch_cuda_addmm_out(out.handle, bias.handle, a.handle, w.handle, 1.0, 1.0) == 0
            assert LIB.aoti_torch_cuda_addmm_out(out.handle, out.handle, a.handle, w.handle, 0.5, 1.0) == 0
            assert LIB.aoti_torch_cuda_bmm_out(outs.handle, a3.handle, w3.handle) == 0
        step()  # the first call opens cuBLAS and cuBLASLt and makes this thread's handles
        out.values()
    """)
    counts = count_waits(counter, setup=setup, body="""
        for _ in range(200):
            step()
        out.values()
    """)
    unexpected = {name: n for name, n in counts.items() if n and name != "cudaStreamSynchronize"}
    assert unexpected == {} and counts["cudaStreamSynchronize"] == 1, counts
