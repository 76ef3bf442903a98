"""Whether the zoo's GPU ratios follow the worker processes, and their CPUs:
a diagnostic for bench/runs/s15-full-check.md, not a benchmark.

    python3 bench/probe_workers.py [--only NAMES] [--rounds N] [--out FILE]

Runs bench/zoo.py (--quick) on a few compiled zoo models again and again,
each time as a fresh driver with fresh workers, with the drivers pinned to
the GPU's local CPUs, not pinned, and pinned to the other CPUs
(AOTIRT_BENCH_PIN=local, 0, remote: bench/affinity.py), the order reversed
every other round. For each run and model: aotirt's GPU time over torch's
single-threaded runner's (what the zoo target judges), and aotirt's eager
GPU time over its graph replay's (the launches' share). If these move with
the run and not with the pinning, the workers' placement is not the cause;
if "remote" runs are the slow ones, it is. One JSON row per run and model,
then one per pinning with the medians, on stdout (and appended to --out).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)
from workers import Rows  # noqa: E402

PINNINGS = ("local", "0", "remote")
DEFAULT_MODELS = "resnet18,mobilenet_v2,gemma_f32,bert_f32,vit_b_16"
TORCH = "torch runner (run_single_threaded)"


def ratios(rows):
    """{model: {"aotirt/torch": ..., "eager/graph": ...}} of one zoo run's
    rows (a ratio is None where a figure is missing), and the run's
    affinity note."""
    gpu = {(r["model"], r["runner"]): r.get("gpu_us_per_call") for r in rows if r.get("case") == "zoo"}
    out = {}
    for model in dict.fromkeys(m for m, _ in gpu):
        eager, graph, torch = (gpu.get((model, k)) for k in ("aotirt", "aotirt graph replay", TORCH))
        out[model] = {"aotirt/torch": round(eager / torch, 4) if eager and torch else None,
                      "eager/graph": round(eager / graph, 4) if eager and graph else None}
    note = next((r.get("note", "") for r in rows if r.get("case") == "affinity"), "no affinity row")
    return out, note


def medians(runs):
    """{pinning: {ratio name: median over its runs and models}} of
    [(pinning, {model: ratios})]."""
    out = {}
    for pinning in dict.fromkeys(p for p, _ in runs):
        values = {}
        for p, per_model in runs:
            if p != pinning:
                continue
            for figures in per_model.values():
                for name, value in figures.items():
                    if value is not None:
                        values.setdefault(name, []).append(value)
        out[pinning] = {name: round(statistics.median(v), 4) for name, v in values.items()}
    return out


def run_zoo(models, pinning):
    """The rows of one fresh `bench/zoo.py --quick` run under AOTIRT_BENCH_PIN=pinning."""
    with tempfile.TemporaryDirectory(prefix="aotirt-probe-workers-") as scratch:
        path = os.path.join(scratch, "rows.jsonl")
        env = dict(os.environ, AOTIRT_BENCH_PIN=pinning)
        subprocess.run([sys.executable, os.path.join(BENCH, "zoo.py"), "--quick", "--only", models, "--out", path],
                       env=env, stdout=subprocess.DEVNULL, check=False, timeout=1800)
        if not os.path.exists(path):
            return []
        return [json.loads(line) for line in open(path) if line.strip()]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=DEFAULT_MODELS, help="comma-separated compiled zoo models")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out")
    args = parser.parse_args()
    emit, runs = Rows(args.out), []
    for r in range(args.rounds):
        for pinning in PINNINGS if r % 2 == 0 else PINNINGS[::-1]:
            per_model, note = ratios(run_zoo(args.only, pinning))
            runs.append((pinning, per_model))
            for model, figures in per_model.items():
                emit({"probe": "workers", "round": r, "pin": pinning, "affinity": note, "model": model, **figures})
    for pinning, figures in medians(runs).items():
        emit({"probe": "workers", "pin": pinning, "medians": figures})
    emit.close()


if __name__ == "__main__":
    main()
