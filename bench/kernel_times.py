"""GPU time of each kernel of a decoder step, and of one run of the AOTI MLP,
from Nsight Compute (ncu).

A graph step is measured against the sum of its kernels' own GPU times
(issue 8's second target); the MLP's sum is the floor under any runner's
time per call on that model (issue 5's runner comparison). Events around one small kernel would also count
the GPU's gap before it starts; ncu reads each kernel's duration from the
hardware, one kernel at a time, with the caches left warm (as in the steady
decode loop) and the clocks as the card runs them.

    python3 bench/kernel_times.py --out results.jsonl    # on a GPU machine with ncu

Appends one JSON row per kernel position of a step (or run) and one for the
sum; prints them too. Exits 0 with a note row when ncu is missing or fails:
the figure is then absent from the report, never guessed.
"""

import argparse
import csv
import io
import json
import os
import shutil
import statistics
import subprocess
import sys

STEPS = 24          # decoder steps (or MLP runs) profiled; the first few are dropped as warm-up
WARMUP_STEPS = 4

DECODER = f"""
import aotirt
from aotirt.pipeline import GreedyDecoder, demo_frames
with GreedyDecoder("cuda:0", "shared") as decoder:
    decoder.decode(demo_frames(), {STEPS})
"""

# The first run loads lazily and may launch more; the last STEPS runs are
# the steady state that the benchmark times.
MLP = """
import numpy as np, aotirt
x = aotirt.asarray(np.load({package!r}.replace("model.pt2", "input0.npy")), device=0)
with aotirt.load({package!r}) as handle:
    for _ in range({runs}):
        out = handle.run([x])
    out[0].numpy()
"""


def emit(row, out):
    line = json.dumps(row)
    print(line)
    if out:
        with open(out, "a") as f:
            f.write(line + "\n")


def profile(ncu, driver):
    """(kernel name, duration in ns) of every kernel launched by `driver`, in launch order."""
    command = [ncu, "--csv", "--metrics", "gpu__time_duration.sum", "--cache-control", "none",
               "--clock-control", "none", sys.executable, "-c", driver]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"ncu exited {proc.returncode}: {(proc.stderr or proc.stdout).strip()[-300:]}")
    header = proc.stdout.find('"ID"')
    if header < 0:
        raise RuntimeError(f"ncu printed no table: {proc.stdout.strip()[-300:]}")
    kernels = []
    for row in csv.DictReader(io.StringIO(proc.stdout[header:])):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(row["Metric Value"].replace(",", ""))
        scale = {"nsecond": 1.0, "usecond": 1e3, "msecond": 1e6}.get(row.get("Metric Unit"), 1.0)
        kernels.append((row["Kernel Name"], value * scale))
    return kernels


def report(kernels, per_step, case, out):
    """Median duration of each kernel position over the steady steps, and their sum."""
    steps = kernels[-STEPS * per_step:]  # whatever ran before the steps comes first
    if per_step < 1 or len(steps) < STEPS * per_step:
        emit({"case": case, "note": f"ncu saw {len(kernels)} kernels, fewer than the steps launch"}, out)
        return
    steady = steps[WARMUP_STEPS * per_step:]
    # A position that holds two kernels means the launches per step were
    # miscounted (decoder.cpp changed): no figure beats a wrong one.
    mixed = [p for p in range(per_step) if len({name for name, _ in steady[p::per_step]}) > 1]
    if mixed:
        emit({"case": case, "note": f"launches per step miscounted ({per_step}): position {mixed[0]} "
                                    f"holds different kernels"}, out)
        return
    total = 0.0
    for position in range(per_step):
        samples = [ns for _, ns in steady[position::per_step]]
        names = {name for name, _ in steady[position::per_step]}
        median_us = statistics.median(samples) / 1e3
        total += median_us
        emit({"case": case, "position": position, "kernel": names.pop()[:120],
              "gpu_us": round(median_us, 3)}, out)
    emit({"case": case, "position": "sum", "kernels": per_step, "gpu_us": round(total, 3)}, out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="JSON lines file to append to")
    parser.add_argument("--kernels-per-step", type=int, default=7,
                        help="launches per decoder step (cuda_src/models/decoder.cpp)")
    parser.add_argument("--mlp", help="the CUDA AOTI MLP's model.pt2 (default: bench.py's search of the cache)")
    args = parser.parse_args()
    ncu = shutil.which("ncu") or next((p for p in ("/usr/local/cuda/bin/ncu",) if os.path.exists(p)), None)
    if ncu is None:
        emit({"case": "kernel_times", "note": "ncu not found"}, args.out)
        return
    try:
        report(profile(ncu, DECODER), args.kernels_per_step, "kernel_times", args.out)
    except (RuntimeError, subprocess.TimeoutExpired) as error:
        emit({"case": "kernel_times", "note": f"ncu failed: {error}"}, args.out)

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench import find_aoti_mlp

    package = args.mlp or find_aoti_mlp()
    if package is None:
        return
    try:
        # Launches per run: the difference between two run counts, so the
        # first run's extra launches cancel.
        few = profile(ncu, MLP.format(package=package, runs=2))
        many = profile(ncu, MLP.format(package=package, runs=STEPS + 2))
        report(many, (len(many) - len(few)) // STEPS, "mlp_kernel_times", args.out)
    except (RuntimeError, subprocess.TimeoutExpired) as error:
        emit({"case": "mlp_kernel_times", "note": f"ncu failed: {error}"}, args.out)


if __name__ == "__main__":
    main()
