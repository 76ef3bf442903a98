"""Python-side benchmarks of aotirt; one JSON object per line on stdout.

    python bench/bench.py [--quick] [--out FILE] [--harness bench/build/aotirt_bench]

With --harness, the C dispatch figures come from the harness, run between
the Python repetitions (see bench_dispatch).

Each figure is the median of 7 repetitions after a warm-up. Speed claims in
this project come from here (and the C harness beside it), never from tests.
"""

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import aotirt

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import REPS, host_us_per_call, median_of, us_per_call  # noqa: E402

MODES = ("shared", "sync_each", "separate", "graph")


def read_back(outputs):
    """Drains the queue: a run's first output, copied to the host."""
    outputs[0].numpy()


def emit(record, sink):
    line = json.dumps(record, sort_keys=True)
    print(line, flush=True)
    if sink:
        sink.write(line + "\n")


def bench_import(sink, modules=("aotirt", "numpy")):
    for module in modules:
        def once():
            out = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"],
                                 capture_output=True, text=True, check=True).stderr
            # The line of the module asked for: its cumulative microseconds.
            line = [ln for ln in out.strip().splitlines() if ln.split("|")[-1].strip() == module][-1]
            return int(line.split("|")[1])
        emit({"case": "import", "module": module, "us": median_of(once)}, sink)


def harness_dispatch_rows(harness, devices, calls):
    """One repetition of the C harness's dispatch case on `devices`."""
    models = os.path.dirname(aotirt.models.path("add_mul", "cpu"))
    command = [harness, "--models", models, "--cases", "dispatch", "--reps", "1"]
    if devices == ["cpu"]:
        command += ["--device", "cpu"]
    if calls < 20000:
        command.append("--quick")
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def c_inproc_host_us(handle, inputs, calls, batch=100):
    """Microseconds per run from C (aotirt._testing.c_runs) in this process:
    batches of `batch`, drained in between outside the timed region."""
    from aotirt._testing import c_runs

    elapsed = 0.0
    for _ in range(calls // batch):
        seconds, last = c_runs(handle, inputs, batch)
        elapsed += seconds
        read_back([last])
    return elapsed / (calls // batch * batch) * 1e6


def bench_dispatch(devices, calls, sink, harness=None):
    """add_mul runs per call, from Python and, given the C harness, from C.

    C and Python take turns: each round runs the harness once (one
    repetition of its dispatch case, in a process of its own) and then one
    repetition of each Python figure. The host's speed drifts over seconds on
    a shared machine, and the Python-minus-C gap must not depend on which of
    the two ran while it was slow.
    """
    samples = {}  # (device, api) -> microseconds per call, one per round
    with contextlib.ExitStack() as open_handles:
        handles = {}
        x = np.ones(1, np.float32)
        for device in devices:
            handle_type = aotirt.AotiHandle if device == "cpu" else aotirt.CudaHandle
            handle = open_handles.enter_context(handle_type(aotirt.models.path("add_mul", device), device))
            t = aotirt.asarray(x, device=device)
            inputs = [t, t, t]
            for _ in range(1000):
                handle.run(inputs)
            handle.run(inputs)[0].numpy()
            handles[device] = (handle, inputs)

        for _ in range(REPS):
            for row in harness_dispatch_rows(harness, devices, calls) if harness else []:
                samples.setdefault((row["device"], row["api"]), []).append(row["us_per_call"])
            for device, (handle, inputs) in handles.items():
                def call():
                    return handle.run(inputs)
                samples.setdefault((device, "python"), []).append(us_per_call(call, calls, read_back))
                samples.setdefault((device, "python_host"), []).append(host_us_per_call(call, calls, read_back))
                # The same runs from C in this process (aotirt._testing.c_runs),
                # batched as host_us_per_call batches Python's: the gap to
                # python_host is the Python layer's own cost, with the caches,
                # the core and the allocator state of one process.
                samples.setdefault((device, "c_inproc_host"), []).append(c_inproc_host_us(handle, inputs, calls))

    for device in devices:
        for api in ("c", "c_host", "c_floor", "c_inproc_host", "python", "python_host"):
            if (device, api) in samples:
                emit({"case": "dispatch", "device": device, "api": api, "calls": calls,
                      "us_per_call": round(statistics.median(samples[device, api]), 3)}, sink)


def bench_pipeline(sink, steps=128):
    from aotirt.pipeline import GreedyDecoder, demo_frames, time_side_by_side

    with contextlib.ExitStack() as open_decoders:
        decoders = [open_decoders.enter_context(GreedyDecoder("cuda:0", mode)) for mode in MODES]
        seconds = time_side_by_side(decoders, demo_frames(), steps, repeats=REPS)
    for mode in MODES:
        emit({"case": "pipeline", "api": "python", "mode": mode, "steps": steps,
              "tokens_per_s": round(1 / seconds[mode], 1), "us_per_token": round(seconds[mode] * 1e6, 2)}, sink)


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


def run_anchor(code, sink, label, case="anchor"):
    """Runs one anchor program (bench/anchors.py) in a fresh process; a
    failure is recorded as a row of `case` with a note."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    rows = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode == 0 and rows:
        emit(json.loads(rows[-1]), sink)
        return
    why = f"exit status {proc.returncode}" if proc.returncode >= 0 else f"killed by signal {-proc.returncode}"
    tail = (proc.stderr.strip().splitlines() or [""])[-1][:200]
    row = {"case": case, "us_per_call": None, "note": f"failed: {why}: {tail}"}
    row.update({"runner": label, "model": "mlp"} if case == "aoti_runner" else {"what": label, "via": label})
    emit(row, sink)


def bench_aoti(sink, package):
    """aotirt and torch's runners on the same AOTInductor-compiled MLP."""
    import anchors

    inputs = aotirt.asarray(np.load(package.replace("model.pt2", "input0.npy")), device=0)
    with aotirt.load(package) as handle:
        handle.run([inputs])[0].numpy()
        def run():
            return handle.run([inputs])
        us = median_of(lambda: us_per_call(run, 2000, read_back))
        host = median_of(lambda: host_us_per_call(run, 2000, read_back, batch=20))
        emit({"case": "aoti_runner", "runner": "aotirt", "model": "mlp", "us_per_call": round(us, 3),
              "host_us_per_call": round(host, 3)}, sink)

        # The same library captured once and replayed: one graph launch
        # instead of the model's kernel launches, inputs copied in place.
        with handle.capture([inputs]) as graph:
            def replay():
                return graph.replay([inputs])
            us = median_of(lambda: us_per_call(replay, 2000, read_back))
            host = median_of(lambda: host_us_per_call(replay, 2000, read_back, batch=20))
            emit({"case": "aoti_runner", "runner": "aotirt graph replay", "model": "mlp",
                  "us_per_call": round(us, 3), "host_us_per_call": round(host, 3)}, sink)
    zoo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "aoti")
    for code, label in ((anchors.torch_aoti_runner(package, False), "torch aoti_load_package"),
                        (anchors.torch_aoti_runner(package, True), "torch aoti_load_package (run_single_threaded)"),
                        (anchors.torch_eager(zoo), "torch eager (same module)")):
        run_anchor(code, sink, label, "aoti_runner")


def find_aoti_mlp():
    """The CUDA-compiled MLP from the tests' AOTInductor cache, if built."""
    root = os.environ.get("AOTIRT_AOTI_CACHE",
                          os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".cache", "aoti"))
    # The cache keeps older builds under other keys: the newest one is what
    # the tests just ran.
    packages = []
    for key in os.listdir(root) if os.path.isdir(root) else []:
        meta = os.path.join(root, key, "mlp", "meta.json")
        if os.path.exists(meta) and json.load(open(meta))["device"] == "cuda":
            packages.append(os.path.join(root, key, "mlp", "model.pt2"))
    return max(packages, key=os.path.getmtime, default=None)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer calls (for CI and smoke runs)")
    parser.add_argument("--out", help="also append the JSON lines to this file")
    parser.add_argument("--harness", help="the C harness (aotirt_bench): C dispatch figures beside Python's")
    args = parser.parse_args()
    sink = open(args.out, "a") if args.out else None
    calls = 2000 if args.quick else 20000
    gpu = aotirt.device_count() > 0
    bench_dispatch(["cpu", "cuda:0"] if gpu else ["cpu"], calls, sink, args.harness)
    if gpu:
        bench_pipeline(sink)
        bench_copy(sink)
        if not args.quick:
            import anchors

            run_anchor(anchors.cupy_empty_kernel(), sink, "CuPy RawKernel")
            run_anchor(anchors.cuda_core_empty_kernel(), sink, "cuda.core launch")
            run_anchor(anchors.torch_add_out(), sink, "torch.add(out=)")
            package = find_aoti_mlp()
            if package:
                bench_aoti(sink, package)
            else:
                print("no compiled AOTInductor MLP (tests/aoti/build.py): torch runner rows skipped", file=sys.stderr)
        bench_import(sink, ("aotirt", "numpy", "cuda.bindings.runtime", "cuda.core", "cupy", "torch")
                     if not args.quick else ("aotirt", "numpy"))
    else:
        bench_import(sink)
        print("no GPU: CUDA cases skipped", file=sys.stderr)
    if sink:
        sink.close()


if __name__ == "__main__":
    main()
