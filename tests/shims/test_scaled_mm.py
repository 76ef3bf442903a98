"""aoti_torch_{cpu,cuda}__scaled_mm and _scaled_mm_out (float8 GEMMs with
per-tensor scales) through ctypes, against numpy: the operands are float8
bit patterns whose values numpy decodes exactly (every byte's value, from
the formats' definitions), so the reference is the exact product in float64,
scaled, plus the bias, rounded once to the output dtype.

The CPU shim and the argument checks run here; the CUDA shim (cuBLASLt,
sm_89+) in the gpu tests. Every test that needs float8 tensors skips while
aotirt's dtype table (cuda_src/runtime/dtypes.h) has no float8 rows: no
float8 tensor can be made until it has them.
"""

import ctypes

import numpy as np
import pytest

from support.shims import (
    DTYPES,
    FLOAT8,
    I32,
    LIB,
    H,
    Handle,
    P,
    _from_blob,
    _reinterpret,
    _upload,
    dense,
    last_error,
    layout,
    owned,
    read,
    rounded,
    shim,
)

DEV = "cuda:0"
MM = {d: shim(f"aoti_torch_{d}__scaled_mm", H, H, H, H, P, P, P, I32, P) for d in ("cpu", "cuda")}
LIB.aotirt_dtype_itemsize.restype = ctypes.c_size_t
LIB.aotirt_dtype_itemsize.argtypes = [ctypes.c_int32]
needs_float8 = pytest.mark.skipif(LIB.aotirt_dtype_itemsize(FLOAT8["float8_e4m3fn"]) == 0,
                                  reason="aotirt's dtype table has no float8 rows: no float8 tensor can be made")
MM_OUT = {d: shim(f"aoti_torch_{d}__scaled_mm_out", H, H, H, H, H, P, P, P, I32) for d in ("cpu", "cuda")}


def fp8_values(name):
    """The value of every byte 0..255 in the format (NaN where it is NaN)."""
    b = np.arange(256)
    sign = np.where(b & 0x80, -1.0, 1.0)
    if name == "float8_e4m3fn":
        e, m = (b >> 3) & 0xF, b & 0x7
        v = np.where(e == 0, m / 8 * 2.0 ** -6, (1 + m / 8) * 2.0 ** (e - 7))
        v = np.where((e == 15) & (m == 7), np.nan, v)
    else:
        e, m = (b >> 2) & 0x1F, b & 0x3
        v = np.where(e == 0, m / 4 * 2.0 ** -14, (1 + m / 4) * 2.0 ** (e - 15))
        v = np.where(e == 31, np.nan, v)
    return sign * v


def random_fp8(shape, name, rng, limit=8.0):
    """Bytes of finite values of magnitude <= limit, and their values."""
    values = fp8_values(name)
    ok = np.flatnonzero(np.isfinite(values) & (np.abs(values) <= limit))
    bits = rng.choice(ok, size=shape).astype(np.uint8)
    return bits, values[bits]


def fp8_handle(bits, name, device, column_major=False):
    """A float8 tensor of `bits` (a 2-D uint8 array of the matrix's values),
    made through the C API with the float8 dtype code (aotirt.asarray has
    no float8 names); column-major: stored as its transpose, with strides
    [1, rows]."""
    rows, cols = bits.shape
    stored = np.ascontiguousarray(bits.T if column_major else bits).ravel()
    code, size = FLOAT8[name], (ctypes.c_int64 * 1)(stored.size)
    base = P()
    if device == "cpu":
        status = _from_blob(stored.ctypes.data, 1, size, (ctypes.c_int64 * 1)(1), 0, code, 0, 0, ctypes.byref(base))
    else:
        index = int(device.partition(":")[2] or 0)   # "cuda" is device 0
        status = _upload(stored.ctypes.data, 1, size, code, index, None, ctypes.byref(base))
    assert status == 0, last_error()
    base = Handle(base.value, keep=stored)
    strides = (1, rows) if column_major else (cols, 1)
    out = H()
    status = _reinterpret(base.ptr, 2, (ctypes.c_int64 * 2)(rows, cols), (ctypes.c_int64 * 2)(*strides), 0,
                          ctypes.byref(out))
    assert status == 0, last_error()
    return Handle(out, keep=base)


def scalar(value, device):
    return dense(np.array([value], np.float32), device)[0]


def call(device, a, b, sa, sb, bias=None, scale_result=None, out_dtype=None, fast=0):
    out = H()
    opt = [ctypes.byref(h.value) if h is not None else None for h in (bias, scale_result)]
    code = ctypes.byref(I32({**DTYPES, **FLOAT8}[out_dtype])) if out_dtype else None
    status = MM[device](a.ptr, b.ptr, sa.ptr, sb.ptr, opt[0], opt[1], code, fast, ctypes.byref(out))
    return status, owned([out])[0]


def problem(m, n, k, a_name, b_name, rng):
    a_bits, a = random_fp8((m, k), a_name, rng)
    b_bits, b = random_fp8((k, n), b_name, rng)
    return a_bits, a, b_bits, b


def expected(a, b, sa, sb, bias, out_dtype):
    want = (a @ b) * np.float64(np.float32(sa)) * np.float64(np.float32(sb))
    if bias is not None:
        want = want + bias
    return rounded(want, out_dtype)


# Hopper's float8 tensor cores keep about 14 bits of the running sum (with
# fast accumulation off, cuBLASLt adds it into float32 every few blocks of
# k): seen on the H200, the float32 result is off the exact product by up
# to 2^-13 of the sum of the products' magnitudes. The GPU tests allow
# 2^-10 of that sum, plus one unit in the last place of the output dtype
# (the result and the reference are each rounded once).
ACCUMULATION = 2.0 ** -10
ONE_UNIT = {"float32": 2.0 ** -23, "bfloat16": 2.0 ** -7, "float16": 2.0 ** -10}


def assert_within_accumulation(got, want, magnitudes, out_dtype, accumulation=ACCUMULATION):
    """|got - want| within one unit of want plus the accumulation bound
    (magnitudes: |a| @ |b| scaled like the product)."""
    bound = ONE_UNIT[out_dtype] * np.abs(want) + accumulation * magnitudes
    excess = np.abs(got.astype(np.float64) - want) - bound
    assert excess.max() <= 0, (f"{int((excess > 0).sum())} of {excess.size} elements off by more than the bound; "
                               f"worst at {np.unravel_index(excess.argmax(), excess.shape)}")


def run_case(device, m, n, k, a_name, b_name, out_dtype, bias_dtype=None, fast=0, seed=0):
    rng = np.random.default_rng(seed)
    a_bits, a, b_bits, b = problem(m, n, k, a_name, b_name, rng)
    ah, bh = fp8_handle(a_bits, a_name, device), fp8_handle(b_bits, b_name, device, column_major=True)
    sa, sb = 0.5, 0.125
    bias = bias_h = None
    if bias_dtype:
        bias = rounded(rng.standard_normal(n), bias_dtype)
        bias_h = dense(bias, device, bias_dtype)[0]
    status, out = call(device, ah, bh, scalar(sa, device), scalar(sb, device), bias_h, None, out_dtype, fast)
    assert status == 0, last_error()
    assert layout(out)[:3] == ((m, n), (n, 1), out_dtype or a_name)
    return read(out), expected(a, b, sa, sb, bias, out_dtype or a_name), (np.abs(a) @ np.abs(b)) * sa * sb


@needs_float8
@pytest.mark.parametrize("out_dtype,bias", [("float32", None), ("bfloat16", None), ("float16", None),
                                            ("float32", "bfloat16"), ("bfloat16", "bfloat16"),
                                            ("float16", "float16")])
@pytest.mark.parametrize("names", [("float8_e4m3fn", "float8_e4m3fn"), ("float8_e4m3fn", "float8_e5m2"),
                                   ("float8_e5m2", "float8_e4m3fn")])
def test_cpu_matches_numpy(out_dtype, bias, names):
    got, want, _ = run_case("cpu", 5, 32, 48, *names, out_dtype, bias)
    np.testing.assert_array_equal(got, want)


@needs_float8
def test_cpu_out_variant_and_default_dtype_refusal():
    rng = np.random.default_rng(1)
    a_bits, a, b_bits, b = problem(3, 16, 16, "float8_e4m3fn", "float8_e4m3fn", rng)
    ah, bh = fp8_handle(a_bits, "float8_e4m3fn", "cpu"), fp8_handle(b_bits, "float8_e4m3fn", "cpu", True)
    out, _ = dense(np.zeros((3, 16), np.float32))
    sa, sb = scalar(2.0, "cpu"), scalar(0.25, "cpu")   # held: a handle freed before the call would dangle
    status = MM_OUT["cpu"](out.ptr, ah.ptr, bh.ptr, sa.ptr, sb.ptr, None, None, None, 0)
    assert status == 0, last_error()
    np.testing.assert_array_equal(read(out), rounded(a @ b * 0.5, "float32"))
    status, _ = call("cpu", ah, bh, scalar(1, "cpu"), scalar(1, "cpu"))   # float8 result: not on the CPU
    assert status != 0 and "not supported on the CPU" in last_error()


@needs_float8
def test_bad_arguments_are_refused():
    rng = np.random.default_rng(2)
    a_bits, _, b_bits, _ = problem(4, 32, 32, "float8_e4m3fn", "float8_e4m3fn", rng)
    ah = fp8_handle(a_bits, "float8_e4m3fn", "cpu")
    bh = fp8_handle(b_bits, "float8_e4m3fn", "cpu", column_major=True)
    b_row = fp8_handle(b_bits, "float8_e4m3fn", "cpu")
    one = scalar(1.0, "cpu")
    cases = [
        (dict(a=ah, b=b_row), "column-major"),
        (dict(a=fp8_handle(a_bits, "float8_e4m3fn", "cpu", column_major=True), b=bh), "row-major"),
        (dict(sa=dense(np.ones(4, np.float32))[0]), "one-element float32"),
        (dict(bias=dense(np.ones(32), "cpu", "float16")[0]), "bias"),
        (dict(bias=dense(np.ones(31), "cpu", "bfloat16")[0]), "vector of n = 32"),
        (dict(scale_result=one), "scale_result"),
        (dict(a=fp8_handle(a_bits[:, :24], "float8_e4m3fn", "cpu"),
              b=fp8_handle(b_bits[:24, :], "float8_e4m3fn", "cpu", True)), "multiples of 16"),
        (dict(a=fp8_handle(a_bits, "float8_e5m2", "cpu"), b=fp8_handle(b_bits, "float8_e5m2", "cpu", True)),
         "two float8_e5m2"),
        (dict(a=dense(np.ones((4, 32), np.float32))[0]), "float8_e4m3fn or float8_e5m2"),
        (dict(out_dtype="int32"), "out_dtype"),
    ]
    for change, words in cases:
        args = dict(a=ah, b=bh, sa=one, sb=one, bias=None, scale_result=None, out_dtype="float32")
        args.update(change)
        status, out = call("cpu", args["a"], args["b"], args["sa"], args["sb"], args["bias"], args["scale_result"],
                           args["out_dtype"])
        assert status != 0 and out is None, words
        assert words in last_error(), (words, last_error())


@needs_float8
@pytest.mark.gpu
@pytest.mark.parametrize("out_dtype,bias", [("float32", None), ("bfloat16", None), ("float16", None),
                                            ("bfloat16", "bfloat16"), ("float32", "bfloat16"),
                                            ("float16", "float16")])
@pytest.mark.parametrize("names", [("float8_e4m3fn", "float8_e4m3fn"), ("float8_e4m3fn", "float8_e5m2")])
def test_cuda_matches_numpy(out_dtype, bias, names):
    got, want, magnitudes = run_case("cuda", 64, 48, 96, *names, out_dtype, bias, seed=3)
    assert_within_accumulation(got, want, magnitudes, out_dtype)


@needs_float8
@pytest.mark.gpu
@pytest.mark.parametrize("fast", [0, 1])
def test_cuda_larger_and_fast_accum(fast):
    got, want, magnitudes = run_case("cuda", 128, 256, 512, "float8_e4m3fn", "float8_e4m3fn", "bfloat16",
                                     "bfloat16", fast, seed=4)
    # Fast accumulation never adds into float32 on the way: 16x the bound.
    assert_within_accumulation(got, want, magnitudes, "bfloat16", ACCUMULATION * (16 if fast else 1))


@needs_float8
@pytest.mark.gpu
def test_cuda_float8_result_with_scale_result():
    rng = np.random.default_rng(5)
    a_bits, a, b_bits, b = problem(32, 32, 64, "float8_e4m3fn", "float8_e4m3fn", rng)
    ah, bh = fp8_handle(a_bits, "float8_e4m3fn", DEV), fp8_handle(b_bits, "float8_e4m3fn", DEV, True)
    status, out = call("cuda", ah, bh, scalar(1 / 64, DEV), scalar(1.0, DEV), None, scalar(0.5, DEV),
                       "float8_e4m3fn")
    assert status == 0, last_error()
    assert layout(out)[:3] == ((32, 32), (32, 1), "float8_e4m3fn")
    got = fp8_values("float8_e4m3fn")[float8_bits(out)]
    want = a @ b / 64 * 0.5
    # One float8 rounding: within half a unit of e4m3's 3-bit significand.
    np.testing.assert_allclose(got, want, rtol=2 ** -3, atol=2 ** -9)


def float8_bits(handle):
    """The bytes of a float8 handle, through the copy routine."""
    sizes = layout(handle)[0]
    host = np.empty(sizes, np.uint8)
    assert LIB.aotirt_copy_to_host(handle.ptr, host.ctypes.data, host.nbytes) == 0, last_error()
    return host


@needs_float8
@pytest.mark.gpu
def test_cuda_out_variant():
    rng = np.random.default_rng(6)
    a_bits, a, b_bits, b = problem(16, 32, 32, "float8_e4m3fn", "float8_e4m3fn", rng)
    ah, bh = fp8_handle(a_bits, "float8_e4m3fn", DEV), fp8_handle(b_bits, "float8_e4m3fn", DEV, True)
    out, _ = dense(np.zeros((16, 32), np.float32), DEV)
    sa, sb = scalar(1.0, DEV), scalar(1.0, DEV)        # held: a handle freed before the call would dangle
    status = MM_OUT["cuda"](out.ptr, ah.ptr, bh.ptr, sa.ptr, sb.ptr, None, None, None, 0)
    assert status == 0, last_error()
    assert_within_accumulation(read(out), a @ b, np.abs(a) @ np.abs(b), "float32")



def test_inputs_that_are_not_float8_are_refused():
    a, _ = dense(np.ones((4, 32), np.float32))
    b, _ = dense(np.ones((32, 16), np.float32))
    one = scalar(1.0, "cpu")
    status, out = call("cpu", a, b, one, one)
    assert status != 0 and out is None and "float8_e4m3fn or float8_e5m2" in last_error()
