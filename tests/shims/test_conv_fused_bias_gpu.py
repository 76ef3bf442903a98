"""A convolution's bias added inside its cuDNN graph (AOTIRT_CUDNN_FUSE_BIAS=1,
cuda_src/shims/libs/cudnn.h fuse_bias), on the GPU, in a process of its own
(the switch is read once): every case of test_conv_cudnn_gpu.py with a
bias, in each dtype, and its 2-D cases on channels-last operands, against
float64 numpy within that file's bounds (the output laid out as torch lays
it out, checked there too); a transposed convolution keeps its bias
kernel; where cuDNN declines the fused graph the call runs unfused and is
still right; and a resnet block's channels-last float16 convolution does
run fused. Without the switch nothing is fused."""

import json

import pytest

from support.gpu_shim_tests import IMPORT_PATHS
from support.helpers import run_python

pytestmark = pytest.mark.gpu

PROGRAM = IMPORT_PATHS + """
import json
import aotirt
import numpy as np
import test_conv_cudnn_gpu as t
aotirt.set_cudnn_allow_tf32(False)
from support import conv_ref
errors = {}
for case in t.CASES:
    for dtype in ("float32", "float16", "bfloat16"):
        errors[f"{case[0]}-{dtype}"] = t.run_case(case, dtype, True, rng=np.random.default_rng(7))
# Channels-last operands, as Inductor hands CUDA convolutions over.
for case in (c for c in t.CASES if c[0] in ("2d", "2d_depthwise", "2d_1x1", "2d_resnet_block")):
    for dtype in ("float32", "float16"):
        errors[f"{case[0]}_channels_last-{dtype}"] = t.run_case(
            case, dtype, True, conv_ref.channels_last(case[1]), conv_ref.channels_last(case[2]),
            rng=np.random.default_rng(8))
print("ERRORS " + json.dumps(errors))
"""


def run(env):
    proc = run_python(PROGRAM, env={"AOTIRT_LOG": "debug", **env})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("ERRORS ")]
    return json.loads(line[len("ERRORS "):]), [ln for ln in proc.stderr.splitlines() if "cuDNN" in ln]


def test_the_bias_in_the_graph_is_right_and_runs_fused_where_cudnn_takes_it():
    import test_conv_cudnn_gpu as t

    errors, log = run({"AOTIRT_CUDNN_FUSE_BIAS": "1"})
    for name, error in errors.items():
        assert error < t.TOLERANCE[name.rsplit("-", 1)[1]], (name, error, "\n".join(log))
    fused = [ln for ln in log if "bias added in the graph" in ln and "cuDNN plan" in ln]
    declined = [ln for ln in log if "bias added in the graph" in ln and "declined" in ln]
    assert not any("transposed" in ln for ln in fused + declined), "\n".join(log)   # never asked for
    # The layer the switch is for: a resnet block's 3x3 convolution, channels-last, float16.
    block = "float16 convolution, input [1, 64, 14, 14] strides [12544, 1, 896, 64]"
    assert any(ln.count(block) for ln in fused), "\n".join(log)


def test_without_the_switch_nothing_is_fused():
    _errors, log = run({})
    assert not any("bias added in the graph" in ln for ln in log), "\n".join(log)
