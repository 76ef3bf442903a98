"""What the cuDNN tuning's im2col alternative times against cuDNN's engines
on resnet's deeper layers: a diagnostic for issue 14's tuning target, not a
benchmark. No torch in the process.

    PYTHONPATH=$PWD/pyx python3 bench/probe_conv_im2col.py [--cache DIR]

Each of resnet18's 3x3 layers (and its strided 1x1 ones) at batches 1 and
2, channels-last as Inductor hands them, in float32 (TF32 allowed),
bfloat16 and float16, is called three times with AOTIRT_CUDNN_TUNE=1 and
the debug log on (set here), each result read back so that the next call
finds the measurement done. The tuning's own lines go to stderr: for each
layer, `timed cublas_im2col at X us` (the gather and one cuBLAS product)
and `measured N engines ...: kept|chose E at Y us (the heuristics' H at Z
us)`. GPU time, as the tuning measures it (events around runs queued
behind a hold of the GPU). An empty --cache (a fresh folder by default)
makes every layer measure.

Session 29 (H100, bench/runs/s29-h100-check.md): in float32 im2col lost on
every layer; in 16 bits it won on the 512-channel 7x7 layer (3% at batch
2, 15 to 17% at batch 1).
"""

import argparse
import os
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# resnet18's layers past its stem: (input, weight, stride, padding).
LAYERS = (((64, 56, 56), (64, 64, 3, 3), 1, 1), ((128, 28, 28), (128, 128, 3, 3), 1, 1),
          ((256, 14, 14), (256, 256, 3, 3), 1, 1), ((512, 7, 7), (512, 512, 3, 3), 1, 1),
          ((256, 14, 14), (512, 256, 3, 3), 2, 1), ((256, 14, 14), (512, 256, 1, 1), 2, 0))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", help="the tuning's choices' folder (default: a fresh one)")
    args = parser.parse_args()
    # Read once, when the first convolution is called: set before it.
    os.environ.update(AOTIRT_CUDNN_TUNE="1", AOTIRT_LOG="debug",
                      AOTIRT_CACHE=args.cache or tempfile.mkdtemp(prefix="probe-im2col-"))
    sys.path[:0] = [os.path.join(REPO, "tests", "shims"), os.path.join(REPO, "tests")]
    import numpy as np

    from support import conv_shims
    from support.shims import read, view

    rng = np.random.default_rng(0)

    def channels_last(shape, dtype):
        n, c, h, w = shape
        data = rng.standard_normal(n * c * h * w) * 0.1
        return view(data, shape, (h * w * c, 1, w * c, c), 0, "cuda:0", dtype)[0]

    for dtype in ("float32", "bfloat16", "float16"):
        for batch in (1, 2):
            for x_shape, w_shape, stride, padding in LAYERS:
                x, w = channels_last((batch,) + x_shape, dtype), channels_last(w_shape, dtype)
                for _ in range(3):
                    status, out = conv_shims.conv(x, w, stride=(stride,), padding=(padding,))
                    if status != 0:
                        sys.exit(f"probe: the convolution of {x_shape} by {w_shape} failed: status {status}")
                    read(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
