"""The host's time per call of a zoo model's automatic-graph replays, batch by
batch: a diagnostic, not a benchmark. No torch in the process.

    PYTHONPATH=$PWD/pyx python3 bench/probe_auto_graph_host.py [--only llama_bf16,llama_decode_f32] [--count-waits]

Session 39's decode table (bench/runs/s39-h100-bench.jsonl) had llama_bf16's
auto-graph take 83 us of host time per call, about its GPU time (84 us),
where session 38 measured 10 us and the other decoders 9 us on the same
host: as if each replay waited for the GPU. bench/decode.py reports one
median over its batches; this prints every batch, so a wait in some calls
and not others shows, and compares four ways to call the same model:

- `eager`: a handle loaded with graphs=False;
- `auto`: one loaded with graphs=True, each call's outputs held until the
  next call returns (as decode.py's timing holds them), so its two
  captured instances take turns;
- `auto, outputs dropped`: the same handle, each call's outputs let go at
  once, so one instance serves every call;
- `replay(inputs)`: an explicit `capture` of the eager handle, replayed.

Each is timed as decode.py times the host (timing.py's host_us_per_call):
batches of 20 calls, drained in between, outside the timed region. Then
the first and second single calls after a drain, and each call of one
more batch of 20 after a drain: if the host runs ahead until the GPU's
queue of pending work is full and then waits for room, the first calls of
a batch are fast and the later ones take the GPU's time per call (a graph
of many kernels fills the queue in fewer calls). With --count-waits the
probe runs again under the host-wait counter
(tests/runtime/interposer/count_waits.c, preloaded), and each line adds the
host-blocking CUDA functions called during its batches: the drains' one
cudaStreamSynchronize each is expected, anything else is a wait in a call.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path[:0] = [BENCH, os.path.join(REPO, "tests", "aoti"), os.path.join(REPO, "tests")]

DEFAULT_MODELS = "llama_bf16,llama_decode_f32,gemma_f32"
BATCHES = 15
CALLS_PER_BATCH = 20     # decode.py's host batches
WARMUP_CALLS = 4         # 2 eager runs, the capture, a replay (decode.py's GRAPH_WARMUP_RUNS)
SINGLE_CALL_PAIRS = 5


def summary(per_batch_us):
    """Median, least and most of the batches' host us per call, rounded."""
    return {"median": round(statistics.median(per_batch_us), 2), "min": round(min(per_batch_us), 2),
            "max": round(max(per_batch_us), 2)}


def unknown_models(names, known):
    """The names in `names` that are not zoo models, in order."""
    return [name for name in names if name not in known]


def time_batches(call, drain):
    """Host us per call of each batch (the last call's outputs kept for the drain)."""
    per_batch = []
    for _ in range(BATCHES):
        start = time.perf_counter()
        for _ in range(CALLS_PER_BATCH):
            outputs = call()
        per_batch.append((time.perf_counter() - start) / CALLS_PER_BATCH * 1e6)
        drain(outputs)
    return per_batch


def time_single_calls(call, drain):
    """Host us of the first and the second call after a drain, pair after pair."""
    times = []
    for _ in range(SINGLE_CALL_PAIRS):
        for _ in range(2):
            start = time.perf_counter()
            outputs = call()
            times.append(round((time.perf_counter() - start) * 1e6, 1))
        drain(outputs)
    return times


def time_each_call_of_a_batch(call, drain):
    """Host us of each call of one batch of CALLS_PER_BATCH that follows a drain."""
    times = []
    for _ in range(CALLS_PER_BATCH):
        start = time.perf_counter()
        outputs = call()
        times.append(round((time.perf_counter() - start) * 1e6, 1))
    drain(outputs)
    return times


def probe(name, folder, counter):
    """One model's rows, printed as JSON lines."""
    import numpy as np

    import aotirt
    import zoo_check

    meta = zoo_check.read_meta(folder)
    path = os.path.join(folder, "model.pt2")
    eager, auto = aotirt.load(path), aotirt.load(path, graphs=True)
    inputs = zoo_check.aotirt_inputs(folder, meta)
    graph = eager.capture(inputs)
    last = {}

    def auto_outputs_dropped():
        auto.run(inputs)
        return last["outputs"]   # a tensor of the same stream, for the drain

    # The copy routine on a float32 marker of the shared stream, where the
    # model's calls run (as gpu_timer.AotirtClock waits): numpy holds no
    # bfloat16, so the outputs themselves cannot always come to the host.
    marker = aotirt.asarray(np.zeros(1, np.float32), device=0, stream=aotirt.Stream.shared(0))

    def drain(_outputs):
        aotirt.copy_to_host(marker)

    calls = {"eager": lambda: eager.run(inputs), "auto": lambda: auto.run(inputs),
             "replay(inputs)": lambda: graph.replay(inputs)}
    for call in calls.values():
        for _ in range(WARMUP_CALLS):
            outputs = call()
    drain(outputs)
    last["outputs"] = outputs
    calls["auto, outputs dropped"] = auto_outputs_dropped
    for label, call in calls.items():
        if counter:
            counter.waits_reset()
        row = {"model": name, "call": label, **summary(time_batches(call, drain))}
        if counter:
            row["waits"] = {n: counter.waits_count(n.encode()) for n in counter.waits_names().decode().split()
                            if counter.waits_count(n.encode())}
            row["drains"] = BATCHES
        row["single_calls_us"] = time_single_calls(call, drain)
        row["one_batch_us"] = time_each_call_of_a_batch(call, drain)
        print(json.dumps(row), flush=True)
    print(json.dumps({"model": name, "graph_stats": auto.graph_stats}, default=str), flush=True)
    graph.close()
    eager.close()
    auto.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=DEFAULT_MODELS, help="zoo model names, comma-separated")
    parser.add_argument("--cache", help="the models' cache (default: the tests' .cache/aoti)")
    parser.add_argument("--count-waits", action="store_true",
                        help="run under the host-wait counter and add the blocking calls per line")
    args = parser.parse_args()
    from zoo_index import cache_key, default_cache, zoo_names

    names = [n for n in args.only.split(",") if n]
    unknown = unknown_models(names, zoo_names())
    if unknown:
        parser.error(f"not zoo models: {', '.join(unknown)}")
    if args.count_waits and "AOTIRT_PROBE_COUNTER" not in os.environ:
        from support.waits import interposer_library

        with tempfile.TemporaryDirectory() as folder:
            library = interposer_library(folder)
            env = dict(os.environ, LD_PRELOAD=library, AOTIRT_PROBE_COUNTER=library)
            sys.exit(subprocess.run([sys.executable, *sys.argv], env=env).returncode)
    counter = None
    if "AOTIRT_PROBE_COUNTER" in os.environ:
        import ctypes

        counter = ctypes.CDLL(os.environ["AOTIRT_PROBE_COUNTER"])
        counter.waits_count.restype = ctypes.c_long
        counter.waits_names.restype = ctypes.c_char_p
    root = os.path.join(args.cache or default_cache(), cache_key("cuda"))
    for name in names:
        probe(name, os.path.join(root, name), counter)


if __name__ == "__main__":
    main()
