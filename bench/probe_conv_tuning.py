"""How much a measured choice can gain over cuDNN's heuristics on the
convolutions of bench/ops.py: a diagnostic for issue 14's tuning target
(the conv models' GPU time 10% under torch's default), not a benchmark.

    python3 bench/probe_conv_tuning.py [--quick] [--out FILE]

In one torch process (aotirt is not involved), per distinct convolution of
resnet18 and mobilenet_v2 (channels-last, float32 with TF32, batch 2) and
the Whisper-style front end, the GPU time per call (CUDA events behind a
spin kernel, bench/gpu_timer.py) of:
  - torch's default: cuDNN's heuristics' engine (what aotirt runs untuned);
  - torch with torch.backends.cudnn.benchmark on: cuDNN's engines measured
    (about what AOTIRT_CUDNN_TUNE=1 chooses among);
  - for a 1x1 convolution of stride 1, no padding and one group, the same
    product as one matrix multiply (torch.mm on the channels-last memory,
    TF32 allowed as for the convolution): what a cuBLAS candidate beside
    cuDNN's engines would be worth.
The three take turns, one repetition each per round. One JSON row per
shape, then one with the sums, on stdout (and appended to --out). If the
benchmark column's sum is not well under the default's, cuDNN's own list
has little to give, and a wider search (its engines' knobs, or cuBLAS for
the 1x1 convolutions) is where a 10% gain would have to come from.
"""

import argparse
import os
import statistics
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)
sys.path.insert(0, os.path.join(os.path.dirname(BENCH), "tests", "aoti"))
from timing import REPS  # noqa: E402
from workers import Rows, is_quick  # noqa: E402

MODES = ("default", "benchmark", "mm_tf32")
CALLS = 50


def as_matmul(case):
    """True for a convolution that is one matrix multiply on channels-last
    memory: 2-D, 1x1, stride 1, no padding, one group."""
    return (case["op"] == "conv2d" and case["weight"][2:] == [1, 1] and case["stride"] == [1, 1]
            and case["padding"] == [0, 0] and case["groups"] == 1 and case.get("layout") == "channels_last")


def sums(rows):
    """{mode: total us over the shapes every mode of the row timed}, for all
    rows and for the 1x1 rows, and the counts."""
    out = {}
    for label, chosen in (("all", rows), ("1x1", [r for r in rows if r.get("mm_tf32_us") is not None])):
        modes = ("default", "benchmark") if label == "all" else MODES
        timed = [r for r in chosen if all(r.get(f"{m}_us") is not None for m in modes)]
        out[label] = {"shapes": len(timed), **{f"{m}_us": round(sum(r[f"{m}_us"] for r in timed), 3) for m in modes}}
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out")
    args = parser.parse_args()
    import torch

    import ops

    reps = ops.QUICK_REPS if is_quick(args) else REPS
    worker = ops.TorchWorker()
    clock = worker.clock
    emit, rows = Rows(args.out), []
    cases = ops.conv_shapes(["resnet18", "mobilenet_v2"]) + [dict(c) for c in ops.WHISPER_FRONT_END]
    for case in cases:
        case.setdefault("dtype", "float32")  # as bench/ops.py sets it
        torch.backends.cudnn.benchmark = False
        with torch.inference_mode():
            call, _backend = worker.build(case)
            calls = {"default": call, "benchmark": call}
            if as_matmul(case):
                n, c, h, w = case["input"]
                x = worker.tensor(case["input"], case["dtype"], True, 1).permute(0, 2, 3, 1).reshape(n * h * w, c)
                weight = worker.tensor(case["weight"], case["dtype"], True, 2).reshape(case["weight"][0], c)
                calls["mm_tf32"] = lambda x=x, weight=weight: torch.mm(x, weight.t())
            times = time_in_turns(calls, clock, reps, lambda mode: set_mode(torch, mode))
        set_mode(torch, "default")
        row = {"probe": "conv_tuning", "model": case["model"], "shape": ops.describe(case),
               **{f"{m}_us": round(statistics.median(times[m]), 3) if m in times else None for m in MODES}}
        rows.append(row)
        emit(row)
    emit({"probe": "conv_tuning", "sums": sums(rows)})
    emit.close()


def time_in_turns(calls, clock, reps, switch):
    """{mode: [GPU us per call, one figure per round]} of `calls` ({mode:
    call}): each warmed up first (a benchmark mode's search happens there),
    then `reps` rounds of one repetition of each in turn; `switch(mode)`
    makes the mode's settings before its calls."""
    times = {mode: [] for mode in calls}
    clock.timer.reset()  # the spin is sized for the slowest of the modes' host paces
    for mode, call in calls.items():
        switch(mode)
        for _ in range(3):
            call()
        clock.wait()
        clock.timer.us_per_call(call, 3, clock.wait)
    for _ in range(reps):
        for mode, call in calls.items():
            switch(mode)
            us, _host_bound = clock.timer.us_per_call(call, CALLS, clock.wait)
            times[mode].append(us)
    return times


def set_mode(torch, mode):
    """cuDNN's benchmark mode on for "benchmark" only; TF32 for matmuls on
    for "mm_tf32" only (a convolution's float32 allows it by default, a
    matmul's does not)."""
    torch.backends.cudnn.benchmark = mode == "benchmark"
    torch.backends.cuda.matmul.allow_tf32 = mode == "mm_tf32"


if __name__ == "__main__":
    main()
