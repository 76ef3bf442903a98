"""Issue 19's figures, on a machine with two GPUs or more; JSON rows on stdout.

    python bench/multigpu.py [--quick] [--out FILE]

Rows of case "multigpu", one per figure (`what`):

- "copy": a float32 tensor of cuda:0 moved to cuda:1 by ``Tensor.to(1)`` (a
  peer copy queued on cuda:1's shared stream after an event on cuda:0's,
  into a new block of cuda:1's pool) against ``cudaMemcpyPeerAsync`` between
  two buffers on the same stream (cuda.bindings), at several sizes: GB/s of
  each, and whether direct peer access is on (``peer``).
- "pipeline": the example encoder and decoder (aotirt.pipeline, graph
  mode, 64 tokens) on cuda:0, and split: the encoder on cuda:0, the decoder
  on cuda:1. Microseconds per token; the tokens must be the same.
- "scaling": add_mul on 2^26 float32 elements per input (about 1 GiB of
  memory traffic per run, so the GPU's time dominates the host's), one
  thread per GPU, each running its own handle on its own inputs: runs per
  second on one GPU and on all of them, and the ratio to N times one GPU's
  (target: at least 0.9).

Each figure is the median of 7 rounds (3 with --quick), wall-clock, each
timed batch ending with the copy routine (a read back of one element), which
is how every benchmark here waits. With fewer than two GPUs one row says so
and nothing is timed. bench/report_multigpu.py makes the report's section.
"""

import argparse
import json
import os
import statistics
import sys
import threading
import time

import aotirt

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)
from timing import median_of, us_per_call  # noqa: E402

COPY_BYTES = (1 << 20, 1 << 24, 1 << 26, 1 << 28)
PIPELINE_STEPS = 64
SCALING_ELEMENTS = 1 << 26
SCALING_TARGET = 0.9


def emit(row, sink):
    line = json.dumps(row)
    print(line, flush=True)
    if sink:
        sink.write(line + "\n")


def drain(tensor):
    """Waits for the tensor's stream: the copy routine, on one element."""
    tensor.narrow(0, 0, 1).numpy()


def copy_row(nbytes, reps):
    """Tensor.to(1) of `nbytes` on cuda:0 against cudaMemcpyPeerAsync of the
    same bytes on the stream Tensor.to queues on (cuda:1's shared one)."""
    import numpy as np
    from cuda.bindings import runtime

    from aotirt._device import peer_access_enabled

    raw_stream = runtime.cudaStream_t(aotirt.Stream.shared(1).handle)
    src = aotirt.asarray(np.ones(nbytes // 4, np.float32), device=0)
    dst = aotirt.empty((nbytes // 4,), "float32", device=1)
    calls = max(5, min(500, (1 << 32) // nbytes))    # about 4 GiB per timed batch

    def ours():
        return src.to(1)

    def theirs():
        err = runtime.cudaMemcpyPeerAsync(dst.data_ptr, 1, src.data_ptr, 0, nbytes, raw_stream)[0]
        if int(err) != 0:
            raise RuntimeError(f"cudaMemcpyPeerAsync failed: {err}")
        return dst

    drain(ours())       # the first copy enables peer access between the pair
    drain(theirs())
    ours_us = median_of(lambda: us_per_call(ours, calls, drain), reps)
    theirs_us = median_of(lambda: us_per_call(theirs, calls, drain), reps)
    return {"case": "multigpu", "what": "copy", "bytes": nbytes, "aotirt_gbps": round(nbytes / ours_us / 1e3, 2),
            "peer_async_gbps": round(nbytes / theirs_us / 1e3, 2), "peer": peer_access_enabled(1, 0)}


def bench_copy(sink, reps):
    for nbytes in COPY_BYTES:
        emit(copy_row(nbytes, reps), sink)


def bench_pipeline(sink, reps):
    from aotirt.pipeline import GreedyDecoder, demo_frames

    frames = demo_frames(seed=0)
    layouts = {"one GPU": GreedyDecoder("cuda:0", "graph"),
               "two GPUs": GreedyDecoder("cuda:0", "graph", decoder_device="cuda:1")}
    tokens = {name: d.decode(frames, PIPELINE_STEPS) for name, d in layouts.items()}   # captures the graphs
    times = {name: [] for name in layouts}
    for _ in range(reps):      # in turns: the host's speed drifts
        for name, decoder in layouts.items():
            start = time.perf_counter()
            decoder.decode(frames, PIPELINE_STEPS)
            times[name].append((time.perf_counter() - start) / PIPELINE_STEPS * 1e6)
    same = (tokens["one GPU"] == tokens["two GPUs"]).all()
    for name, decoder in layouts.items():
        row = {"case": "multigpu", "what": "pipeline", "layout": name,
               "us_per_token": round(statistics.median(times[name]), 3)}
        if not same:
            row["note"] = "the two layouts decoded different tokens"
        emit(row, sink)
        decoder.close()


def runs_per_second(devices, handles, inputs, runs):
    """Runs per second of one thread per device, each `runs` runs and a
    drain, from a common start to the last thread's end."""
    start_line = threading.Barrier(len(devices) + 1)
    errors = []

    def worker(device):
        try:
            start_line.wait()
            for _ in range(runs):
                (out,) = handles[device].run(inputs[device])
            drain(out)
        except BaseException as e:  # reported by the caller
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(d,)) for d in devices]
    for t in threads:
        t.start()
    start_line.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise errors[0]
    return len(devices) * runs / elapsed


def bench_scaling(sink, reps, elements):
    import numpy as np

    devices = list(range(aotirt.device_count()))
    path = aotirt.models.path("add_mul", "cuda")
    handles = {d: aotirt.CudaHandle(path, device=d) for d in devices}
    host = np.ones(elements, np.float32)
    inputs = {d: [aotirt.asarray(host, device=d)] * 3 for d in devices}
    runs = 50
    runs_per_second(devices, handles, inputs, 5)   # warm-up: kernels loaded, pools filled
    one = median_of(lambda: runs_per_second(devices[:1], handles, inputs, runs), reps)
    many = median_of(lambda: runs_per_second(devices, handles, inputs, runs), reps)
    emit({"case": "multigpu", "what": "scaling", "gpus": 1, "elements": elements, "runs_per_s": round(one, 2)}, sink)
    emit({"case": "multigpu", "what": "scaling", "gpus": len(devices), "elements": elements,
          "runs_per_s": round(many, 2), "scaling": round(many / (len(devices) * one), 3),
          "target": SCALING_TARGET}, sink)
    for h in handles.values():
        h.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer rounds (for CI and smoke runs)")
    parser.add_argument("--out", help="also append the JSON lines to this file")
    args = parser.parse_args()
    sink = open(args.out, "a") if args.out else None
    count = aotirt.device_count()
    if count < 2:
        emit({"case": "multigpu", "note": f"needs two GPUs, this machine has {count}"}, sink)
    else:
        reps = 3 if args.quick else 7
        bench_copy(sink, reps)
        bench_pipeline(sink, reps)
        bench_scaling(sink, reps, SCALING_ELEMENTS >> 2 if args.quick else SCALING_ELEMENTS)
    if sink:
        sink.close()


if __name__ == "__main__":
    main()
