"""How fast a model's stem (its first convolutions: an image model's, on
three input channels, RGB; an audio model's 1-D front end) can run, against
cuDNN's default: a diagnostic for issue 14's tuning target, not a benchmark.

    python3 bench/probe_conv_stems.py [--quick] [--out FILE] [--only NAMES]

Why stems: on the H200 resnet18's stem (3 -> 64 channels, 7x7, stride 2,
batch 2) took 24 us on cuDNN's default engine and on every engine its
heuristics list (bench/runs/s18-conv-tuning.md), for 0.47 GFLOP and 7.6 MB
of data: about ten times what its arithmetic and its memory traffic need.
Three channels of float32 are 12-byte rows, which tensor-core engines do
not take as they lie. If some other way of running the same convolution is
much faster, it is a candidate for the tuning (a stem is 8 to 15% of a
small CNN's convolution time). Whisper's front end is as far off: its two
1-D convolutions (contiguous, as Inductor leaves 1-D ones) took 22 and 30
us tuned, for 0.55 and 1.3 GFLOP.

In one torch process (aotirt is not involved), for the stems of the zoo's
models (tests/aoti/zoo.py: batch 2, their image sizes), float32 with TF32
allowed (torch's default for convolutions; set for matrix products here),
operands channels-last as Inductor's layout optimisation hands a CUDA
convolution them, the GPU time per call (CUDA events behind a spin kernel,
bench/gpu_timer.py) of:
  - default: cuDNN's heuristics' engine (torch's default, aotirt untuned);
  - benchmark: torch.backends.cudnn.benchmark on (cuDNN's engines measured);
  - nchw: the convolution on contiguous (NCHW) copies of input and weight,
    its result copied to channels-last (what cuDNN makes of the other
    layout, the copies included);
  - pad4, pad8: the input copied each call into a zeroed channels-last
    buffer of 4 or 8 channels, the weight padded once with zero channels
    (16- or 32-byte channel rows, as tensor-core engines want them);
  - unfold_mm: the input unfolded (im2col: F.unfold) and one batched TF32
    matrix product (cuBLAS) whose result is the channels-last output as it
    lies;
  - patch_mm: for a stem whose kernel is its stride with no padding (a
    patch embedding: ViT, ConvNeXt, Swin), its patches gathered by one copy
    and one TF32 matrix product whose result is the channels-last output.
For a 1-D front end (contiguous [N, C, L] operands): default, benchmark,
unfold_mm (the product's result is the contiguous output as it lies), and
  - channels_last: input and weight copied each call to channels-last 2-D
    ([N, C, 1, L]), the convolution there, its result copied back to
    contiguous (whether cuDNN's channels-last engines pay for three copies);
  - as_height: the same memory seen as [N, C, L, 1] (the length as height,
    not width: no copy), in case cuDNN's engines favour one.
Every mode's result is checked against the default's (relative error under
1e-2: TF32 throughout) before it is timed; one that differs is reported,
not timed. The modes take turns, one repetition each per round. One JSON
row per stem (GPU us per call, median over rounds, per mode) on stdout and
appended to --out.
"""

import argparse
import os
import statistics
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)
sys.path.insert(0, os.path.join(os.path.dirname(BENCH), "tests", "aoti"))
from probe_conv_tuning import time_in_turns  # noqa: E402
from timing import REPS  # noqa: E402
from workers import Rows, is_quick  # noqa: E402

MODES = ("default", "benchmark", "nchw", "pad4", "pad8", "unfold_mm", "patch_mm", "channels_last", "as_height")
TOLERANCE = 1e-2

# The zoo's stems: name -> (input N, C, H, W; weight K, C, kh, kw; stride;
# padding). Their biases are left out: Inductor adds a CUDA convolution's
# bias in the kernel that follows, never in the convolution's call.
STEMS = {
    "resnet18": ((2, 3, 224, 224), (64, 3, 7, 7), 2, 3),
    "mobilenet_v2": ((2, 3, 224, 224), (32, 3, 3, 3), 2, 1),
    "mobilenet_v3_small": ((2, 3, 224, 224), (16, 3, 3, 3), 2, 1),
    "resnet50": ((2, 3, 64, 64), (64, 3, 7, 7), 2, 3),
    "efficientnet_b0": ((2, 3, 64, 64), (32, 3, 3, 3), 2, 1),
    "convnext_tiny": ((2, 3, 64, 64), (96, 3, 4, 4), 4, 0),
    "vit_b_16": ((2, 3, 64, 64), (768, 3, 16, 16), 16, 0),
    "swin_t": ((2, 3, 112, 112), (96, 3, 4, 4), 4, 0),
    # Whisper's front end (bench/ops.py's WHISPER_FRONT_END, tiny's width): 80 mel bins x 3000 frames.
    "whisper_conv1": ((1, 80, 3000), (384, 80, 3), 1, 1),
    "whisper_conv2": ((1, 384, 3000), (384, 384, 3), 2, 1),
}


def is_patch_embedding(weight, stride, padding, image):
    """A convolution whose kernel is its stride, unpadded, tiling the image: one matrix product of its patches."""
    kh, kw = weight[2:]
    return kh == kw == stride and padding == 0 and image[2] % kh == 0 and image[3] % kw == 0


def output_side(side, kernel, stride, padding):
    return (side + 2 * padding - kernel) // stride + 1


def calls_of(torch, make, image, weight, stride, padding):
    """{mode: call returning the output as [N, K, Ho, Wo] (any layout)} for
    one stem; [N, K, Lo] for a 1-D one."""
    if len(image) == 3:
        return calls_of_1d(torch, make, image, weight, stride, padding)
    F = torch.nn.functional
    cl = torch.channels_last
    x = make(image, 1).contiguous(memory_format=cl)
    w = make(weight, 2).contiguous(memory_format=cl)
    n, c, h, width = image
    k, _, kh, kw = weight
    ho, wo = output_side(h, kh, stride, padding), output_side(width, kw, stride, padding)
    calls = {"default": lambda: F.conv2d(x, w, None, stride, padding)}
    calls["benchmark"] = calls["default"]
    x_nchw, w_nchw = x.contiguous(), w.contiguous()
    calls["nchw"] = lambda: F.conv2d(x_nchw, w_nchw, None, stride, padding).contiguous(memory_format=cl)
    for channels in (4, 8):
        padded_x = torch.zeros((n, channels, h, width), dtype=x.dtype, device=x.device).contiguous(memory_format=cl)
        padded_w = torch.zeros((k, channels, kh, kw), dtype=x.dtype, device=x.device).contiguous(memory_format=cl)
        padded_w[:, :c].copy_(w)

        def padded(padded_x=padded_x, padded_w=padded_w):
            padded_x[:, :c].copy_(x)
            return F.conv2d(padded_x, padded_w, None, stride, padding)
        calls[f"pad{channels}"] = padded
    w_rows = w_nchw.reshape(k, c * kh * kw)   # F.unfold's column order: channel, then kernel row, column

    def unfolded():
        columns = F.unfold(x, (kh, kw), padding=padding, stride=stride)          # [N, C*kh*kw, Ho*Wo]
        out = torch.matmul(columns.transpose(1, 2), w_rows.t())                   # [N, Ho*Wo, K]: NHWC
        return out.view(n, ho, wo, k).permute(0, 3, 1, 2)
    calls["unfold_mm"] = unfolded
    if is_patch_embedding(weight, stride, padding, image):
        w_patch = w.permute(0, 2, 3, 1).reshape(k, kh * kw * c)   # channels-last weight: (kernel row, column, channel)

        def patches():
            tiles = x.permute(0, 2, 3, 1).reshape(n, ho, kh, wo, kw, c).permute(0, 1, 3, 2, 4, 5)
            out = torch.mm(tiles.reshape(n * ho * wo, kh * kw * c), w_patch.t())   # [N*Ho*Wo, K]: NHWC
            return out.view(n, ho, wo, k).permute(0, 3, 1, 2)
        calls["patch_mm"] = patches
    return calls


def calls_of_1d(torch, make, signal, weight, stride, padding):
    """calls_of for a 1-D convolution, its operands contiguous."""
    F = torch.nn.functional
    cl = torch.channels_last
    x, w = make(signal, 1), make(weight, 2)
    k, c, taps = weight
    calls = {"default": lambda: F.conv1d(x, w, None, stride, padding)}
    calls["benchmark"] = calls["default"]

    def channels_last():
        x4 = x.unsqueeze(2).contiguous(memory_format=cl)
        w4 = w.unsqueeze(2).contiguous(memory_format=cl)
        return F.conv2d(x4, w4, None, (1, stride), (0, padding)).squeeze(2).contiguous()
    calls["channels_last"] = channels_last
    # The same memory seen as [N, C, L, 1] instead of [N, C, 1, L]: no copy.
    calls["as_height"] = lambda: F.conv2d(x.unsqueeze(3), w.unsqueeze(3), None, (stride, 1), (padding, 0)).squeeze(3)
    w_rows = w.reshape(k, c * taps)   # F.unfold's column order: channel, then tap

    def unfolded():
        columns = F.unfold(x.unsqueeze(2), (1, taps), padding=(0, padding), stride=(1, stride))  # [N, C*taps, Lo]
        return torch.matmul(w_rows, columns)                                                    # [N, K, Lo]
    calls["unfold_mm"] = unfolded
    return calls


def set_mode(torch, mode):
    """cuDNN's benchmark mode on for "benchmark" only; TF32 on for
    convolutions (torch's default) and for matrix products."""
    torch.backends.cudnn.benchmark = mode == "benchmark"
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cuda.matmul.allow_tf32 = True


def relative_error(torch, got, want):
    return float(torch.linalg.vector_norm((got.double() - want.double()).flatten())
                 / torch.linalg.vector_norm(want.double().flatten()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out")
    parser.add_argument("--only", default="", help="comma-separated stems of " + ", ".join(STEMS))
    args = parser.parse_args()
    only = [name for name in args.only.split(",") if name]
    unknown = [name for name in only if name not in STEMS]
    if unknown:
        parser.error(f"unknown stem(s) {', '.join(unknown)}: the stems are {', '.join(STEMS)}")
    import torch

    import ops

    reps = ops.QUICK_REPS if is_quick(args) else REPS
    worker = ops.TorchWorker()
    clock = worker.clock
    emit = Rows(args.out)

    def make(shape, seed):
        return worker.tensor(list(shape), "float32", False, seed)

    for name in only or STEMS:
        image, weight, stride, padding = STEMS[name]
        row = {"probe": "conv_stems", "model": name, "input": list(image), "weight": list(weight),
               "stride": stride, "padding": padding, "notes": {}}
        with torch.inference_mode():
            set_mode(torch, "default")
            calls = calls_of(torch, make, image, weight, stride, padding)
            want = calls["default"]()
            for mode in list(calls):
                set_mode(torch, mode)
                try:
                    error = relative_error(torch, calls[mode](), want)
                except RuntimeError as failure:  # a mode torch cannot run for this shape
                    row["notes"][mode] = f"failed: {failure}"
                    del calls[mode]
                    continue
                if not error < TOLERANCE:
                    row["notes"][mode] = f"differs from the default: relative error {error:.2e}"
                    del calls[mode]
            times = time_in_turns(calls, clock, reps, lambda mode: set_mode(torch, mode))
        set_mode(torch, "default")
        torch.backends.cuda.matmul.allow_tf32 = False  # torch's default
        for mode in MODES:
            row[f"{mode}_us"] = round(statistics.median(times[mode]), 3) if times.get(mode) else None
        timed = {mode: row[f"{mode}_us"] for mode in MODES if row[f"{mode}_us"] is not None}
        best = min(timed, key=timed.get)
        row["best"], row["best_over_default"] = best, round(timed[best] / timed["default"], 3)
        emit(row)
    emit.close()


if __name__ == "__main__":
    main()
