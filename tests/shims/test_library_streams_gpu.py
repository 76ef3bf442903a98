"""cuBLAS and cuDNN queue each call on the stream of the handle that runs it.

A thread's cuBLAS handle and cuDNN handle are pointed at a stream (and
cuBLAS at aotirt's workspace) only when that changes
(shims/libs/cublas.cpp bind_stream, shims/libs/cudnn.cpp thread_context),
so models on streams of their own, run in turns from one thread, must still
each have their library calls on their own stream. The test model
(models/testing/fallback_ops.cpp) runs a convolution (cuDNN) and a float32
attention whose head size sends it to cuBLAS. Each run reads inputs
uploaded on its handle's stream behind a spin of the GPU: a library call
queued on the other handle's (idle) stream would run at once and read
memory the upload has not reached yet, a wrong result.
"""

import os
import sys

import numpy as np
import pytest

import aotirt
from support import attention_ref, conv_ref
from support.helpers import REPO

pytestmark = pytest.mark.gpu

FALLBACK_OPS = os.path.join(os.path.dirname(aotirt.__file__), "models", "testing", "fallback_ops_cuda.so")
SPIN_NS = 20_000_000  # far longer than the host takes to queue a run behind it
TF32_TOLERANCE = 5e-3  # float32 convolutions may use TF32, as torch's do by default


def test_two_streams_in_turns_keep_their_library_calls():
    sys.path.insert(0, os.path.join(REPO, "bench"))
    from gpu_timer import Spinner

    spinner = Spinner(0)
    rng = np.random.default_rng(33)
    streams = [aotirt.Stream.create(0), aotirt.Stream.create(0)]
    handles = [aotirt.CudaHandle(FALLBACK_OPS, device=0, stream=s) for s in streams]
    try:
        for step in range(6):
            handle, stream = handles[step % 2], streams[step % 2]
            # x, w, then q, k, v of head size 30 (not a multiple of 4: cuBLAS, not the fused kernel)
            shapes = [(1, 4, 10, 10), (8, 4, 3, 3), (1, 2, 24, 30), (1, 2, 40, 30), (1, 2, 40, 30)]
            arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
            spinner.spin(stream.__cuda_stream__()[1], SPIN_NS)
            inputs = [aotirt.asarray(a, device=0, stream=stream) for a in arrays]  # queued behind the spin
            y, o = handle.run(inputs)
            x, w, q, k, v = (a.astype(np.float64) for a in arrays)
            want_y = conv_ref.conv(x, w, None, (1, 1), (1, 1), (1, 1), 1)
            error = np.linalg.norm(y.numpy() - want_y) / np.linalg.norm(want_y)
            assert error < TF32_TOLERANCE, ("convolution", step, error)
            want_o = attention_ref.sdpa(q, k, v)[0]
            error = np.linalg.norm(o.numpy() - want_o) / np.linalg.norm(want_o)
            assert error < 1e-5, ("attention", step, error)
    finally:
        for h in handles:
            h.close()
