"""What the cuDNN tuning's im2col alternative times against cuDNN's engines
on resnet's deeper layers: a diagnostic for issue 14's tuning target, not a
benchmark. No torch in the process.

    PYTHONPATH=$PWD/pyx python3 bench/probe_conv_im2col.py [--cache DIR] [--profile N]

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

--profile N: then, each layer's choice made, N more calls of it under
torch's profiler (CUPTI sees every kernel of the process, aotirt's too;
torch is imported for it alone), and one line per kernel on stdout: the
layer, the kernel's name, how many ran and their mean GPU time. It splits
a chosen im2col into its gather, cuBLAS's product and any split-K
reduction, and a cuDNN engine into its kernels.

Session 29 (H100, bench/runs/s29-h100-check.md): in float32 im2col lost on
every layer; in 16 bits it won on the 512-channel 7x7 layer (3% at batch
2, 15 to 17% at batch 1).
"""

import argparse
import functools
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
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="N more calls of each layer under torch's profiler, a line per kernel")
    args = parser.parse_args()
    if args.profile < 0:
        parser.error("--profile takes a count of calls, 0 or more")
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
                call = functools.partial(convolve, conv_shims, x, w, stride, padding)
                for _ in range(3):
                    read(call())
                if args.profile:
                    layer = f"{dtype} {batch}x{'x'.join(map(str, x_shape))} by {'x'.join(map(str, w_shape))} s{stride}"
                    profile_calls(layer, args.profile, call, read)
    return 0


def convolve(conv_shims, x, w, stride, padding):
    """One call of the shim; its output handle."""
    status, out = conv_shims.conv(x, w, stride=(stride,), padding=(padding,))
    if status != 0:
        sys.exit(f"probe: a convolution failed: status {status} (the debug log above says which)")
    return out


def profile_calls(layer, count, call, read):
    """Runs `call` `count` times under torch's profiler (the last result
    read back, so that every kernel has ended) and prints a line per kernel."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(count - 1):
            call()
        read(call())
    for event in prof.key_averages():
        if str(event.device_type).endswith("CUDA") and event.count and "Memcpy" not in event.key:
            mean = event.self_device_time_total / event.count
            print(f"{layer}\t{event.key[:100]}\t{event.count}\t{mean:.2f} us", flush=True)


if __name__ == "__main__":
    sys.exit(main())
