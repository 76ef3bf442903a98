"""Python-side benchmarks of aotirt; one JSON object per line on stdout.

    python bench/bench.py [--quick] [--out FILE]

Each figure is the median of 7 repetitions after a warm-up. Speed claims in
this project come from here (and the C harness beside it), never from tests.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import aotirt

REPS = 7


def median_of(fn, reps=REPS):
    return statistics.median(fn() for _ in range(reps))


def emit(record, sink):
    line = json.dumps(record, sort_keys=True)
    print(line, flush=True)
    if sink:
        sink.write(line + "\n")


def bench_import(sink):
    for module in ["aotirt", "numpy"]:
        def once():
            out = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"],
                                 capture_output=True, text=True, check=True).stderr
            # The last line is the top-level package: its cumulative microseconds.
            return int(out.strip().splitlines()[-1].split("|")[1])
        emit({"case": "import", "module": module, "us": median_of(once)}, sink)


def bench_dispatch(device, calls, sink):
    handle_type = aotirt.AotiHandle if device == "cpu" else aotirt.CudaHandle
    x = np.ones(1, np.float32)
    with handle_type(aotirt.models.path("add_mul", device), device) as handle:
        t = aotirt.asarray(x, device=device)
        inputs = [t, t, t]
        for _ in range(1000):
            handle.run(inputs)
        handle.run(inputs)[0].numpy()

        def once():
            start = time.perf_counter()
            for _ in range(calls):
                out = handle.run(inputs)
            elapsed = time.perf_counter() - start
            out[0].numpy()  # drain the queue outside the timed region
            return elapsed / calls * 1e6
        emit({"case": "dispatch", "device": device, "api": "python", "calls": calls,
              "us_per_call": round(median_of(once), 3)}, sink)


def bench_pipeline(sink, steps=128):
    from aotirt.pipeline import GreedyDecoder, demo_frames

    frames = demo_frames()
    for mode in ["shared", "sync_each", "separate"]:
        with GreedyDecoder("cuda:0", mode) as decoder:
            seconds = decoder.time_per_token(frames, steps, repeats=REPS)
        emit({"case": "pipeline", "api": "python", "mode": mode, "steps": steps,
              "tokens_per_s": round(1 / seconds, 1), "us_per_token": round(seconds * 1e6, 2)}, sink)


def bench_copy(sink):
    for nbytes in [4, 64 << 10, 64 << 20]:
        t = aotirt.asarray(np.ones(nbytes // 4, np.float32), device=0)
        out = np.empty(nbytes // 4, np.float32)
        aotirt.copy_to_host(t, out=out)

        def once():
            start = time.perf_counter()
            aotirt.copy_to_host(t, out=out)
            return time.perf_counter() - start
        seconds = median_of(once)
        emit({"case": "copy", "api": "python", "bytes": nbytes, "memory": "pageable", "us": round(seconds * 1e6, 2),
              "GBps": round(nbytes / seconds / 1e9, 2)}, sink)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer calls (for CI and smoke runs)")
    parser.add_argument("--out", help="also append the JSON lines to this file")
    args = parser.parse_args()
    sink = open(args.out, "a") if args.out else None
    calls = 2000 if args.quick else 20000
    bench_import(sink)
    bench_dispatch("cpu", calls, sink)
    if aotirt.device_count() > 0:
        bench_dispatch("cuda:0", calls, sink)
        bench_pipeline(sink)
        bench_copy(sink)
    else:
        print("no GPU: CUDA cases skipped", file=sys.stderr)
    if sink:
        sink.close()


if __name__ == "__main__":
    main()
