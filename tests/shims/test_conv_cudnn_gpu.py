"""aoti_torch_cuda_convolution (cuDNN) through ctypes, as a model library
calls it, against float64 numpy (tests/support/conv_ref.py).

Tolerances, as relative errors ‖out − ref‖ / ‖ref‖ with the reference taken
on the inputs as rounded to their dtype:
- float32 with TF32 off: 1e-3 (cuDNN's float engines are far closer; the
  bound leaves room for FFT/Winograd engines, which torch allows too);
- float32 with TF32 on, torch's default: 5e-3 (TF32 rounds each input to a
  10-bit mantissa, 2^-11 relative, and accumulates in float);
- float16 and bfloat16: 2e-2 (the output's own rounding, 2^-11 and 2^-8, and
  float accumulation).
Output sizes and strides are checked against torch's fake-tensor layout rules
(conv_ref.output_strides), which generated code indexes the output with.
Everything runs on the device's shared stream; reading a result back (the
shims' copy_ to a CPU tensor, i.e. the copy routine) is the only wait.
"""

import ctypes
import os
import threading

import numpy as np
import pytest

import aotirt
from support import conv_ref
from support.conv_shims import conv
from support.gpu_shim_tests import DEV, IMPORT_PATHS
from support.helpers import run_python
from support.shims import dense, last_error, layout, read, view
from support.waits import count_waits, interposer_library

pytestmark = pytest.mark.gpu
TOLERANCE = {"float32": 1e-3, "float16": 2e-2, "bfloat16": 2e-2}
TF32_TOLERANCE = 5e-3
FALLBACK_OPS = os.path.join(os.path.dirname(aotirt.__file__), "models", "testing", "fallback_ops_cuda.so")
# Inputs of the fallback_ops test model (x, w, q, k, v), made in a subprocess.
FALLBACK_ARGS = """rng = np.random.default_rng(0)
args = [rng.standard_normal(s).astype(np.float16) for s in
        [(1, 8, 10, 10), (8, 8, 3, 3), (1, 2, 16, 64), (1, 2, 16, 64), (1, 2, 16, 64)]]
"""


def reference(case, x, w, b):
    _, _, _, stride, padding, dilation, groups, transposed, output_padding = case
    if transposed:
        return conv_ref.conv_transpose(x, w, b, stride, padding, dilation, output_padding, groups)
    return conv_ref.conv(x, w, b, stride, padding, dilation, groups)


def relative_error(out, want):
    return float(np.linalg.norm(out - want) / max(np.linalg.norm(want), 1e-30))


@pytest.fixture
def tf32_off():
    aotirt.set_cudnn_allow_tf32(False)
    yield
    aotirt.set_cudnn_allow_tf32(True)


CASES = [  # name, input, weight, stride, padding, dilation, groups, transposed, output_padding
    ("1d", (2, 3, 11), (4, 3, 3), (1,), (0,), (1,), 1, False, (0,)),
    ("1d_strided_grouped", (2, 6, 13), (8, 3, 3), (2,), (2,), (2,), 2, False, (0,)),
    ("1d_depthwise", (1, 4, 9), (4, 1, 5), (1,), (2,), (1,), 4, False, (0,)),
    ("2d", (2, 3, 9, 7), (5, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1, False, (0,)),
    ("2d_mixed", (2, 4, 10, 9), (6, 2, 3, 2), (2, 1), (1, 0), (1, 2), 2, False, (0,)),
    ("2d_depthwise", (2, 8, 12, 12), (8, 1, 3, 3), (2,), (1,), (1,), 8, False, (0,)),
    ("2d_depthwise_multiplier", (1, 4, 8, 8), (8, 1, 3, 3), (1,), (1,), (1,), 4, False, (0,)),
    ("2d_1x1", (2, 16, 7, 7), (32, 16, 1, 1), (1,), (0,), (1,), 1, False, (0,)),
    ("2d_resnet_block", (1, 64, 14, 14), (64, 64, 3, 3), (1,), (1,), (1,), 1, False, (0,)),
    ("3d", (1, 2, 4, 5, 6), (4, 2, 2, 3, 2), (1, 2, 1), (1, 0, 1), (1, 1, 2), 1, False, (0,)),
    ("3d_cube", (1, 4, 6, 6, 6), (8, 4, 3, 3, 3), (1,), (1,), (1,), 1, False, (0,)),
    ("1d_transposed", (2, 4, 7), (4, 3, 3), (2,), (1,), (1,), 1, True, (1,)),
    ("2d_transposed", (2, 4, 5, 5), (4, 3, 3, 3), (2,), (1,), (1,), 1, True, (1,)),
    ("2d_transposed_grouped", (1, 4, 6, 6), (4, 2, 3, 3), (2,), (0,), (1,), 2, True, (1,)),
    ("2d_transposed_dilated", (1, 3, 5, 5), (3, 2, 3, 3), (1,), (2,), (2,), 1, True, (0,)),
    ("3d_transposed", (1, 2, 3, 3, 3), (2, 2, 2, 2, 2), (2,), (0,), (1,), 1, True, (1,)),
]
IDS = [c[0] for c in CASES]


def out_channels(case):
    _, _, w_shape, _, _, _, groups, transposed, _ = case
    return w_shape[1] * groups if transposed else w_shape[0]


def run_case(case, dtype, with_bias, x_strides=None, w_strides=None, rng=None):
    """Runs a case (optionally with strided operands); checks layout and values;
    returns the relative error."""
    rng = rng or np.random.default_rng(1)
    _, in_shape, w_shape, stride, padding, dilation, groups, transposed, output_padding = case
    if x_strides is None:
        x, xr = dense(rng.standard_normal(in_shape), DEV, dtype)
    else:
        base = rng.standard_normal(int(np.dot(np.array(in_shape) - 1, x_strides)) + 1)
        x, xr = view(base, in_shape, x_strides, 0, DEV, dtype)
    if w_strides is None:
        w, wr = dense(rng.standard_normal(w_shape) * 0.5, DEV, dtype)
    else:
        base = rng.standard_normal(int(np.dot(np.array(w_shape) - 1, w_strides)) + 1) * 0.5
        w, wr = view(base, w_shape, w_strides, 0, DEV, dtype)
    b, br = dense(rng.standard_normal(out_channels(case)), DEV, dtype) if with_bias else (None, None)
    status, out = conv(x, w, b, stride, padding, dilation, groups, transposed, output_padding)
    assert status == 0, last_error()
    want = reference(case, xr, wr, br)
    sizes, strides, got_dtype, device = layout(out)
    assert (sizes, got_dtype, device) == (want.shape, dtype, 1)
    x_layout = x_strides or conv_ref.contiguous(in_shape)
    w_layout = w_strides or conv_ref.contiguous(w_shape)
    assert strides == conv_ref.output_strides(in_shape, x_layout, w_shape, w_layout, sizes), (strides, x_layout)
    return relative_error(read(out), want)


@pytest.mark.parametrize("with_bias", [False, True], ids=["no_bias", "bias"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_matches_numpy(case, dtype, with_bias, tf32_off):
    assert run_case(case, dtype, with_bias) < TOLERANCE[dtype]


@pytest.mark.parametrize("case", [CASES[i] for i in (0, 4, 8, 10, 12)], ids=[IDS[i] for i in (0, 4, 8, 10, 12)])
def test_float32_with_tf32_as_torch_defaults(case):
    lib = ctypes.CDLL(os.path.join(os.path.dirname(aotirt.__file__), "libaotirt.so"))
    assert lib.aotirt_cudnn_allow_tf32() == 1
    assert run_case(case, "float32", True) < TF32_TOLERANCE


def test_tf32_off_and_on_are_planned_apart(tf32_off):
    # The switch is part of the plan's key: off after on runs a non-TF32 plan.
    case = CASES[8]
    exact = run_case(case, "float32", False)
    aotirt.set_cudnn_allow_tf32(True)
    assert run_case(case, "float32", False) < TF32_TOLERANCE
    aotirt.set_cudnn_allow_tf32(False)
    assert run_case(case, "float32", False) == pytest.approx(exact, rel=1e-6, abs=1e-9)
    assert exact < TOLERANCE["float32"]


LAYOUT_CASES = [
    # 2-D: channels-last input, weight, both.
    ("2d", "input"), ("2d", "weight"), ("2d", "both"),
    ("2d_depthwise", "input"), ("2d_transposed", "input"), ("2d_transposed", "weight"),
    # 3-D: channels-last-3d.
    ("3d", "input"), ("3d_transposed", "weight"),
    # 1-D: the weight stored [O, K, I] makes the output channels-last; the
    # input stored [N, L, C] does not (torch decides over input.contiguous()).
    ("1d", "weight"), ("1d", "input"), ("1d_transposed", "weight"),
]


def channels_last_1d(shape):
    return (shape[1] * shape[2], 1, shape[1])


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("name,which", LAYOUT_CASES, ids=[f"{n}-{w}" for n, w in LAYOUT_CASES])
def test_channels_last_operands(name, which, dtype, tf32_off):
    case = CASES[IDS.index(name)]
    in_shape, w_shape = case[1], case[2]
    cl = channels_last_1d if len(in_shape) == 3 else conv_ref.channels_last
    x_strides = cl(in_shape) if which in ("input", "both") else None
    w_strides = cl(w_shape) if which in ("weight", "both") else None
    assert run_case(case, dtype, True, x_strides, w_strides) < TOLERANCE[dtype]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_strided_operands_are_packed_first(dtype, tf32_off):
    """An input that is every other column of a wider tensor, at an offset, and
    a weight with padded rows: copied to packed layouts before cuDNN."""
    rng = np.random.default_rng(3)
    base = rng.standard_normal(2 * 3 * 9 * 20 + 7)
    x, xr = view(base, (2, 3, 9, 10), (3 * 9 * 20, 9 * 20, 20, 2), 7, DEV, dtype)
    wbase = rng.standard_normal(4 * 3 * 2 * 8)
    w, wr = view(wbase, (4, 3, 2, 3), (3 * 2 * 8, 2 * 8, 8, 1), 0, DEV, dtype)
    status, out = conv(x, w, None, (1, 2), (1, 1))
    assert status == 0, last_error()
    want = conv_ref.conv(xr, wr, None, (1, 2), (1, 1), (1,), 1)
    assert layout(out)[:2] == (want.shape, conv_ref.contiguous(want.shape))
    assert relative_error(read(out), want) < TOLERANCE[dtype]


def test_empty_batch_and_empty_channels():
    x, _ = dense(np.zeros((0, 3, 8, 8), np.float32), DEV)
    w, _ = dense(np.zeros((4, 3, 3, 3), np.float32), DEV)
    status, out = conv(x, w)
    assert status == 0, last_error()
    assert layout(out)[:2] == ((0, 4, 6, 6), (144, 36, 6, 1))
    x0, _ = dense(np.zeros((2, 0, 8, 8), np.float32), DEV)
    w0, _ = dense(np.zeros((4, 0, 3, 3), np.float32), DEV)
    status, out = conv(x0, w0)
    assert status == 0, last_error()
    assert layout(out)[:2] == ((2, 0, 6, 6), (36, 36, 6, 1))


def test_bad_arguments_are_refused_and_the_shim_stays_usable():
    rng = np.random.default_rng(4)
    x, xr = dense(rng.standard_normal((1, 4, 8, 8)), DEV, "float32")
    w, wr = dense(rng.standard_normal((6, 2, 3, 3)), DEV, "float32")

    def refused(*args, **kwargs):
        status, out = conv(*args, **kwargs)
        assert status != 0 and out is None
        message = last_error()
        assert message.startswith("aoti_torch_cuda_convolution: "), message
        return message

    def still_works():
        status, out = conv(x, w, groups=2)
        assert status == 0, last_error()
        assert relative_error(read(out), conv_ref.conv(xr, wr, groups=2)) < TF32_TOLERANCE

    still_works()
    d, _ = dense(rng.standard_normal((1, 4, 8, 8)), DEV, "float64")
    dw, _ = dense(rng.standard_normal((6, 2, 3, 3)), DEV, "float64")
    assert "float64 inputs are not supported (float32, float16, bfloat16)" in refused(d, dw, groups=2)
    h, _ = dense(rng.standard_normal((6, 2, 3, 3)), DEV, "float16")
    assert "one dtype, got float32, float16" in refused(x, h, groups=2)
    assert "the input has 4 channels; the weight expects 2 per group times 1 groups" in refused(x, w, groups=1)
    w5, _ = dense(rng.standard_normal((5, 2, 3, 3)), DEV, "float32")
    assert "the weight's 5 output channels do not split into 2 groups" in refused(x, w5, groups=2)
    flat, _ = dense(rng.standard_normal((4, 8, 8)), DEV, "float32")
    assert "the input must have the weight's 4 dimensions" in refused(flat, w, groups=2)
    assert "stride has 3 values" in refused(x, w, stride=(1, 1, 1), groups=2)
    assert "stride 0" in refused(x, w, stride=(0,), groups=2)
    assert "too small" in refused(x, w, dilation=(5,), groups=2)
    bias, _ = dense(rng.standard_normal(5), DEV, "float32")
    assert "one value per output channel (6)" in refused(x, w, bias, groups=2)
    cpu_w, _ = dense(rng.standard_normal((6, 2, 3, 3)), "cpu", "float32")
    assert "weight must be a CUDA tensor on cuda:0, got a CPU tensor" in refused(x, cpu_w, groups=2)
    # cuDNN's transposed convolution needs output_padding < stride (torch too
    # leaves the others to a slower kernel).
    tw, _ = dense(rng.standard_normal((4, 3, 3, 3)), DEV, "float32")
    assert "must be smaller than the stride (1)" in refused(x, tw, dilation=(2,), transposed=True,
                                                            output_padding=(1,))
    empty, _ = dense(np.zeros((1, 4, 0, 8), np.float32), DEV)
    assert "only inputs without a batch or without channels may be empty" in refused(empty, w, padding=(2,),
                                                                                      groups=2)
    still_works()


def test_threads_have_their_own_cudnn_handles():
    errors = []

    def work(seed):
        try:
            for _ in range(3):
                assert run_case(CASES[3], "float16", True, rng=np.random.default_rng(seed)) < 2e-2
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_convolutions_never_wait(tmp_path):
    counter = interposer_library(str(tmp_path))
    counts = count_waits(counter, setup=f"""
        {IMPORT_PATHS}
        import numpy as np
        from support import conv_shims as t
        from support.shims import dense, read
        rng = np.random.default_rng(0)
        x, _ = dense(rng.standard_normal((2, 16, 14, 14)), "cuda:0", "float16")
        w, _ = dense(rng.standard_normal((32, 16, 3, 3)), "cuda:0", "float16")
        b, _ = dense(rng.standard_normal(32), "cuda:0", "float16")
        read(t.conv(x, w, b, padding=(1,))[1])   # the first call builds the plan
    """, body="""
        for _ in range(20):
            status, out = t.conv(x, w, b, padding=(1,))
            assert status == 0
        read(out)
    """)
    assert {name: n for name, n in counts.items() if n} == {"cudaStreamSynchronize": 1}, counts


def test_captured_in_a_cuda_graph_replays_what_eager_computes():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 8, 12, 12)).astype(np.float16)
    w = rng.standard_normal((16, 8, 3, 3)).astype(np.float16)
    q, k, v = (rng.standard_normal((1, 4, 64, 64)).astype(np.float16) for _ in range(3))
    with aotirt.CudaHandle(FALLBACK_OPS, 0) as handle:
        eager = [t.numpy() for t in handle.run([x, w, q, k, v])]
        want_y = conv_ref.conv(x.astype(np.float64), w.astype(np.float64), padding=(1,))
        assert relative_error(eager[0].astype(np.float64), want_y) < 2e-2
        with handle.capture([x, w, q, k, v]) as graph:
            for got, want in zip(graph.outputs, eager):
                np.testing.assert_array_equal(got.numpy(), want)
            x2 = rng.standard_normal(x.shape).astype(np.float16)
            replayed = [t.numpy() for t in graph.replay([x2, w, q, k, v])]
            again = [t.numpy() for t in handle.run([x2, w, q, k, v])]
            for got, want in zip(replayed, again):
                np.testing.assert_array_equal(got, want)


def test_a_capture_does_not_build_plans(tmp_path):
    """Shapes first seen during a capture would need a plan built there: the
    capture fails clearly (its warm-up runs are what build plans normally)."""
    code = f"""
import numpy as np, aotirt
{FALLBACK_ARGS}with aotirt.CudaHandle({FALLBACK_OPS!r}, 0) as h:
    try:
        h.capture(args, warmup=0)
        print("captured")
    except aotirt.AotiError as e:
        print("refused:", e)
    print("eager ok", h.run(args)[0].shape)
"""
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[0].startswith("refused:") and "while a CUDA graph is being captured" in lines[0], lines
    assert lines[1] == "eager ok (1, 8, 10, 10)"


LOADED_AFTER = """
import numpy as np, aotirt
maps = lambda: 'libcudnn' in open('/proc/self/maps').read()
print(maps())
with aotirt.CudaHandle(aotirt.models.path('add_mul', 'cuda'), 0) as h:
    x = np.ones(16, np.float32)
    h.run([x, x, x])[0].numpy()
print(maps())
{args}with aotirt.CudaHandle({path!r}, 0) as h:
    h.run(args)[0].numpy()
print(maps())
"""


def test_cudnn_is_loaded_by_the_first_convolution_only():
    proc = run_python(LOADED_AFTER.format(path=FALLBACK_OPS, args=FALLBACK_ARGS))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "False", "True"]


def test_a_missing_cudnn_fails_the_run_naming_what_was_tried():
    code = f"""
import numpy as np, aotirt
{FALLBACK_ARGS}with aotirt.CudaHandle({FALLBACK_OPS!r}, 0) as h:
    try:
        h.run(args)
    except aotirt.AotiError as e:
        print(e)
"""
    proc = run_python(code, env={"AOTIRT_CUDNN": "/nonexistent/libcudnn.so.9"})
    assert proc.returncode == 0, proc.stderr
    message = proc.stdout
    assert "aoti_torch_cuda_convolution: cuDNN could not be loaded from AOTIRT_CUDNN=/nonexistent/libcudnn.so.9" \
        in message, message
    assert "pip install nvidia-cudnn-cu13" in message


def test_the_debug_log_names_the_plan_once():
    code = f"""
{IMPORT_PATHS}
import numpy as np
from support import conv_shims as t
from support.shims import dense, read
rng = np.random.default_rng(0)
x, _ = dense(rng.standard_normal((2, 16, 14, 14)), "cuda:0", "float16")
w, _ = dense(rng.standard_normal((32, 16, 3, 3)), "cuda:0", "float16")
for _ in range(3):
    read(t.conv(x, w, padding=(1,))[1])
"""
    proc = run_python(code, env={"AOTIRT_LOG": "debug"})
    assert proc.returncode == 0, proc.stderr
    plans = [line for line in proc.stderr.splitlines() if "aoti_torch_cuda_convolution: cuDNN plan" in line]
    assert len(plans) == 1, proc.stderr
    assert "float16 convolution, input [2, 16, 14, 14]" in plans[0]
