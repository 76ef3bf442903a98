"""Whether the zoo's GPU ratios follow the worker processes, and their CPUs:
a diagnostic for bench/runs/s15-full-check.md, not a benchmark.

    python3 bench/probe_workers.py [--only NAMES] [--rounds N] [--out FILE]

Runs bench/zoo.py (--quick) on a few compiled zoo models again and again,
each time as a fresh driver with fresh workers, in these variants, the
order reversed every other round:
  - local, 0, remote: the drivers pinned to the GPU's local CPUs, not
    pinned, pinned to the other CPUs (AOTIRT_BENCH_PIN, bench/affinity.py);
  - local/side: pinned locally, torch's worker on a stream of its own
    rather than the legacy default stream (AOTIRT_BENCH_TORCH_STREAM=side,
    bench/zoo.py), as aotirt runs on a non-blocking stream of its own;
  - local/legacy: pinned locally, aotirt's worker on the legacy default
    stream (AOTIRT_BENCH_AOTIRT_STREAM=legacy), as torch's runner runs;
  - local/adopted: pinned locally, aotirt's worker on a non-blocking stream
    it adopts (AOTIRT_BENCH_AOTIRT_STREAM=adopted): beside local/legacy, it
    tells the legacy stream's kind apart from being adopted.
For each run and model: aotirt's GPU time over torch's single-threaded
runner's (what the zoo target judges), and aotirt's eager GPU time over its
graph replay's (the launches' share). If these move with the run and not
with the variant, neither the workers' placement nor the kind of stream is
the cause; if "remote" runs are the slow ones, placement is; if torch's
runner slows on its own stream ("local/side" over "local"), the kind of
stream is, and then "local/legacy" should move aotirt's figure the other
way. On an H100 (session 21, one round) "local/side" took the median from
1.016 to 0.974. One JSON row per run and model, then one per variant with the
medians, on stdout (and appended to --out).
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
from zoo import TORCH_SINGLE_THREADED as TORCH  # noqa: E402

# Each variant's label and its environment.
VARIANTS = {"local": {"AOTIRT_BENCH_PIN": "local"}, "0": {"AOTIRT_BENCH_PIN": "0"},
            "remote": {"AOTIRT_BENCH_PIN": "remote"},
            "local/side": {"AOTIRT_BENCH_PIN": "local", "AOTIRT_BENCH_TORCH_STREAM": "side"},
            "local/legacy": {"AOTIRT_BENCH_PIN": "local", "AOTIRT_BENCH_AOTIRT_STREAM": "legacy"},
            "local/adopted": {"AOTIRT_BENCH_PIN": "local", "AOTIRT_BENCH_AOTIRT_STREAM": "adopted"}}
DEFAULT_MODELS = "resnet18,mobilenet_v2,gemma_f32,bert_f32,vit_b_16"


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
    """{variant: {ratio name: median over its runs and models}} of
    [(variant, {model: ratios})]."""
    out = {}
    for variant in dict.fromkeys(v for v, _ in runs):
        values = {}
        for v, per_model in runs:
            if v != variant:
                continue
            for figures in per_model.values():
                for name, value in figures.items():
                    if value is not None:
                        values.setdefault(name, []).append(value)
        out[variant] = {name: round(statistics.median(v), 4) for name, v in values.items()}
    return out


def run_zoo(models, variant):
    """The rows of one fresh `bench/zoo.py --quick` run in `variant` (VARIANTS)."""
    with tempfile.TemporaryDirectory(prefix="aotirt-probe-workers-") as scratch:
        path = os.path.join(scratch, "rows.jsonl")
        set_by_variants = {name for settings in VARIANTS.values() for name in settings}
        env = {k: v for k, v in os.environ.items() if k not in set_by_variants}
        env.update(VARIANTS[variant])
        subprocess.run([sys.executable, os.path.join(BENCH, "zoo.py"), "--quick", "--only", models, "--out", path],
                       env=env, stdout=subprocess.DEVNULL, check=False, timeout=1800)
        if not os.path.exists(path):
            return []
        return [json.loads(line) for line in open(path) if line.strip()]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=DEFAULT_MODELS, help="comma-separated compiled zoo models")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help="comma-separated, of " + ", ".join(VARIANTS))
    parser.add_argument("--out")
    args = parser.parse_args()
    variants = [v for v in args.variants.split(",") if v]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown variant(s) {', '.join(unknown)}: the variants are {', '.join(VARIANTS)}")
    emit, runs = Rows(args.out), []
    for r in range(args.rounds):
        for variant in variants if r % 2 == 0 else variants[::-1]:
            per_model, note = ratios(run_zoo(args.only, variant))
            runs.append((variant, per_model))
            for model, figures in per_model.items():
                emit({"probe": "workers", "round": r, "variant": variant, "affinity": note, "model": model,
                      **figures})
    for variant, figures in medians(runs).items():
        emit({"probe": "workers", "variant": variant, "medians": figures})
    emit.close()


if __name__ == "__main__":
    main()
