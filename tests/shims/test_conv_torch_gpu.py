"""aoti_torch_cuda_convolution (cuDNN) against torch's own convolutions on
the GPU: torch.nn.functional.conv1d/2d/3d and conv_transpose2d on cuda,
with the same arguments and the same values, computed in a torch process
of its own (tests/support/torch_reference.py; this process never imports
torch), every reference of this file in one call. test_conv_cudnn_gpu.py
checks the shim's numerics against float64 numpy; this file checks that it
means by its arguments what torch does.

Both sides keep torch's default for float32: TF32 tensor cores allowed
(torch.backends.cudnn.allow_tf32 = True; aotirt's default too). Errors are
max |out - ref| / max |ref| (support.torch_reference.max_error):
- float32 with TF32: 5e-3, the TF32 bound of test_conv_cudnn_gpu.py. TF32
  rounds each operand to a 10-bit mantissa (2^-11 relative), which puts
  each side about 1e-3 of the output's scale off the exact result at its
  worst element; the two sides may run other engines (and differ by up to
  the sum of their errors).
- float16 and bfloat16: 2e-2. Each side accumulates in float and rounds its
  output to the dtype (2^-11 and 2^-8 relative), in its own order.
"""

import numpy as np
import pytest

import aotirt
from support import conv_ref
from support.conv_shims import conv
from support.gpu_shim_tests import DEV
from support.shims import dense, last_error, read, rounded, view
from support.torch_reference import Call, compute, max_error

pytestmark = pytest.mark.gpu
TOLERANCE = {"float32": 5e-3, "float16": 2e-2, "bfloat16": 2e-2}

CASES = {  # name: input, weight, stride, padding, dilation, groups, transposed, output_padding
    "1d": ((2, 8, 50), (16, 8, 5), (2,), (2,), (1,), 1, False, (0,)),
    "1d_dilated_grouped": ((1, 12, 40), (12, 4, 3), (1,), (2,), (2,), 3, False, (0,)),
    "2d": ((2, 16, 28, 28), (32, 16, 3, 3), (1,), (1,), (1,), 1, False, (0,)),
    "2d_strided": ((2, 32, 28, 28), (64, 32, 3, 3), (2,), (1,), (1,), 1, False, (0,)),
    "2d_mixed": ((2, 8, 17, 13), (12, 4, 3, 5), (2, 1), (1, 2), (1, 2), 2, False, (0,)),
    "2d_depthwise": ((2, 32, 20, 20), (32, 1, 3, 3), (1,), (1,), (1,), 32, False, (0,)),
    "2d_depthwise_multiplier": ((1, 16, 15, 15), (32, 1, 5, 5), (2,), (2,), (1,), 16, False, (0,)),
    "2d_1x1": ((4, 64, 14, 14), (128, 64, 1, 1), (1,), (0,), (1,), 1, False, (0,)),
    "2d_resnet_block": ((1, 64, 28, 28), (64, 64, 3, 3), (1,), (1,), (1,), 1, False, (0,)),
    "2d_stem_7x7": ((1, 3, 64, 64), (16, 3, 7, 7), (2,), (3,), (1,), 1, False, (0,)),
    "3d": ((1, 4, 8, 10, 12), (8, 4, 3, 3, 3), (1,), (1,), (1,), 1, False, (0,)),
    "3d_strided_grouped": ((2, 6, 7, 8, 9), (6, 3, 2, 3, 3), (1, 2, 2), (0, 1, 1), (1,), 2, False, (0,)),
    "2d_transposed": ((2, 16, 7, 7), (16, 8, 4, 4), (2,), (1,), (1,), 1, True, (0,)),
    "2d_transposed_output_padding": ((1, 8, 9, 9), (8, 4, 3, 3), (2,), (1,), (1,), 1, True, (1,)),
    "2d_transposed_grouped_dilated": ((1, 8, 6, 6), (8, 3, 3, 3), (1,), (2,), (2,), 2, True, (0,)),
}
DTYPES = ["float32", "float16", "bfloat16"]
# Channels-last operands (input and weight, as a model moved to
# torch.channels_last has them), in float32 and float16, with a bias.
CHANNELS_LAST = ["2d", "2d_strided", "2d_depthwise", "2d_1x1", "2d_transposed", "3d"]
# Every test: (case, dtype, with a bias, channels-last).
PARAMS = ([(name, dtype, bias, False) for name in CASES for dtype in DTYPES for bias in (False, True)] +
          [(name, dtype, True, True) for name in CHANNELS_LAST for dtype in ("float32", "float16")])


def param_id(param):
    name, dtype, bias, cl = param
    return f"{name}-{dtype}-{'bias' if bias else 'no_bias'}" + ("-channels_last" if cl else "")


def operands(param):
    """x, w and b (or None) of a test, as float64 values rounded to its dtype."""
    name, dtype, with_bias, _ = param
    in_shape, w_shape, *_, groups, transposed, _ = CASES[name]
    rng = np.random.default_rng(PARAMS.index(param))
    out_channels = w_shape[1] * groups if transposed else w_shape[0]
    x = rounded(rng.standard_normal(in_shape), dtype)
    w = rounded(rng.standard_normal(w_shape) * 0.5, dtype)
    b = rounded(rng.standard_normal(out_channels), dtype) if with_bias else None
    return x, w, b


def device_tensor(values, dtype, channels_last):
    """A CUDA tensor handle of `values`: contiguous, or over [N, *spatial, C]
    memory (conv_ref.channels_last's strides)."""
    if not channels_last:
        return dense(values, DEV, dtype)[0]
    memory = np.moveaxis(values, 1, -1)
    return view(memory, values.shape, conv_ref.channels_last(values.shape), 0, DEV, dtype)[0]


@pytest.fixture(scope="module")
def torch_outputs(tmp_path_factory):
    calls = []
    for param in PARAMS:
        name, dtype, _, channels_last = param
        _, _, stride, padding, dilation, groups, transposed, output_padding = CASES[name]
        x, w, b = operands(param)
        options = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups,
                   "dtype": dtype, "channels_last": channels_last, "allow_tf32": True}
        if transposed:
            options["output_padding"] = output_padding
        calls.append(Call("conv_transpose" if transposed else "conv", {"x": x, "w": w, "b": b}, options))
    return dict(zip(PARAMS, compute(calls, tmp_path_factory.mktemp("torch_conv"), device="cuda")))


@pytest.fixture
def tf32_as_torch_defaults():
    aotirt.set_cudnn_allow_tf32(True)
    yield


@pytest.mark.parametrize("param", PARAMS, ids=[param_id(p) for p in PARAMS])
def test_matches_torch(param, torch_outputs, tf32_as_torch_defaults):
    name, dtype, _, channels_last = param
    _, _, stride, padding, dilation, groups, transposed, output_padding = CASES[name]
    x, w, b = operands(param)
    bias = dense(b, DEV, dtype)[0] if b is not None else None
    status, out = conv(device_tensor(x, dtype, channels_last), device_tensor(w, dtype, channels_last), bias,
                       stride, padding, dilation, groups, transposed, output_padding)
    assert status == 0, last_error()
    got, want = read(out), torch_outputs[param]
    assert got.shape == want.shape
    assert max_error(got, want) < TOLERANCE[dtype]
