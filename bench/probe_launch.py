"""Why a cuDNN kernel takes longer under aotirt than under torch: a
diagnostic for the ops table's small, steady gaps (1.00 to 1.05x on the
same cuDNN kernels), not a benchmark.

    python3 bench/probe_launch.py [--out FILE]

1. A few of the ops table's rows, timed as bench/ops.py times them.
2. The same rows with torch's allocator on cudaMallocAsync
   (PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync), aotirt's kind of
   memory: if torch slows to aotirt's figure, the memory is the cause.
3. Each side's kernels of one call under Nsight Compute: duration (one
   kernel at a time, caches as they are), launch configuration, DRAM bytes.
One JSON row per figure on stdout (and appended to --out).
"""

import argparse
import csv
import io
import json
import os
import shutil
import subprocess
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)
sys.path.insert(0, os.path.join(os.path.dirname(BENCH), "tests", "aoti"))
import ops  # noqa: E402
from workers import Rows, driving  # noqa: E402

CASES = [
    {"op": "sdpa", "batch": 2, "heads": 8, "kv_heads": 8, "seq": 128, "head_dim": 128, "causal": False,
     "dtype": "float16"},
    {"op": "sdpa", "batch": 2, "heads": 8, "kv_heads": 8, "seq": 128, "head_dim": 64, "causal": False,
     "dtype": "float16"},
    {"op": "conv2d", "model": "mobilenet_v2", "input": [2, 576, 14, 14], "weight": [576, 1, 3, 3], "stride": [1, 1],
     "padding": [1, 1], "dilation": [1, 1], "groups": 576, "layout": "channels_last", "dtype": "float32"},
    {"op": "conv2d", "model": "mobilenet_v2", "input": [2, 576, 14, 14], "weight": [96, 576, 1, 1], "stride": [1, 1],
     "padding": [0, 0], "dilation": [1, 1], "groups": 1, "layout": "channels_last", "dtype": "float32"},
    {"op": "conv2d", "model": "mobilenet_v2", "input": [2, 960, 7, 7], "weight": [320, 960, 1, 1], "stride": [1, 1],
     "padding": [0, 0], "dilation": [1, 1], "groups": 1, "layout": "channels_last", "dtype": "float32"},
]

METRICS = ["gpu__time_duration.sum", "launch__grid_size", "launch__block_size", "launch__registers_per_thread",
           "launch__shared_mem_per_block_dynamic", "launch__shared_mem_per_block_static", "dram__bytes.sum",
           "lts__t_sector_hit_rate.pct", "sm__cycles_elapsed.avg.per_second"]

DRIVER = """
import json, sys
sys.path.insert(0, {bench!r}); sys.path.insert(0, {aoti!r})
import ops
case = json.loads({case!r})
if {side!r} == "aotirt":
    w = ops.AotirtWorker()
    call, _ = w.build({{"case": case, "shim": {shim!r}}})
    for _ in range(8): call()
    w.wait()
else:
    import torch
    w = ops.TorchWorker()
    with torch.inference_mode():
        call, _ = w.build(case)
        for _ in range(8): call()
        torch.cuda.synchronize()
"""


def timed_rows(label, out, reps=5):
    pythons = {"aotirt": sys.executable, "torch": sys.executable}
    with driving(os.path.abspath(ops.__file__), pythons, out) as (emit, workers, missing):
        if missing:
            emit({"probe": label, "note": str(missing)})
            return
        for case in CASES:
            row = ops.time_case(dict(case), (workers["aotirt"], workers["torch"]), reps)
            emit({"probe": label, "shape": row["shape"], "dtype": row["dtype"], "aotirt_us": row["aotirt_us"],
                  "torch_us": row["torch_us"], "ratio": row["ratio"], "note": row["note"]})


def ncu_rows(ncu, case, side, emit):
    shim = "cudnn" if case["op"] == "sdpa" else "convolution"
    driver = DRIVER.format(bench=BENCH, aoti=os.path.join(os.path.dirname(BENCH), "tests", "aoti"),
                           case=json.dumps(case), side=side, shim=shim)
    command = [ncu, "--csv", "--metrics", ",".join(METRICS), "--cache-control", "none", "--clock-control", "none",
               sys.executable, "-c", driver]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
    header = proc.stdout.find('"ID"')
    if proc.returncode != 0 or header < 0:
        emit({"probe": "ncu", "side": side, "note": (proc.stderr or proc.stdout)[-400:]})
        return
    kernels = {}
    for row in csv.DictReader(io.StringIO(proc.stdout[header:])):
        kernels.setdefault(row["ID"], {"kernel": row["Kernel Name"][:90]})[row["Metric Name"]] = \
            row["Metric Value"] + " " + row.get("Metric Unit", "")
    listed = [k for k in kernels.values() if "spin" not in k["kernel"]]
    for k in listed[-3:]:  # the steady calls' last kernels
        emit(dict({"probe": "ncu", "side": side, "shape": ops.describe(case), "dtype": case["dtype"]}, **k))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out")
    args = parser.parse_args()
    timed_rows("default", args.out)
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
    timed_rows("torch on cudaMallocAsync", args.out)
    del os.environ["PYTORCH_CUDA_ALLOC_CONF"]
    ncu = shutil.which("ncu") or next((p for p in ("/usr/local/cuda/bin/ncu",) if os.path.exists(p)), None)
    emit = Rows(args.out)
    try:
        if ncu is None:
            emit({"probe": "ncu", "note": "ncu not found"})
            return
        for case in CASES:
            for side in ("aotirt", "torch"):
                ncu_rows(ncu, case, side, emit)
    finally:
        emit.close()


if __name__ == "__main__":
    main()
