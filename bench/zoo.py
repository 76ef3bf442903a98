"""The zoo's models (tests/aoti/zoo.py, compiled by tests/aoti/build.py with
default configs) run by aotirt and by torch's own AOTI runner, on the same
libraries; one JSON row per model and runner on stdout.

    python bench/zoo.py [--quick] [--out FILE] [--only NAMES]

Runners: aotirt (run), aotirt graph replay (capture once, replay with the
inputs copied in), torch's AOTIModelContainerRunnerCuda on the same library
(bench's anchors explain how it loads a link_libtorch=False library), by
default and with run_single_threaded. Figures per call, each the median of
7 rounds (3 with --quick or AOTIRT_BENCH_QUICK=1): `us_per_call`, calls
back to back (the GPU's pace shows once the queue fills); `host_us_per_call`,
batches of 20 drained in between (the host's own cost, as the runner rows of
bench.py); `gpu_us_per_call`, CUDA events around a batch queued behind a
spin kernel (bench/gpu_timer.py): the GPU's own time per call (for aotirt,
cuda.bindings events on its stream; for torch, torch.cuda.Event). aotirt
and torch run in two workers (aotirt's never imports torch) that take turns,
one repetition each per round.

Before timing, the aotirt worker checks each model (a "zoo_model" row):
the aoti_torch_* functions its library needs that aotirt does not implement
("missing", read from the library's symbols against aotirt's shim table: a
model with any is reported, not run), and the largest relative error of its
outputs, eagerly and from a graph replay, against torch eager's
(tests/aoti/zoo_check.py: the zoo test's bounds).

Targets (the report's): aotirt's GPU time at or below torch's runner's on
every model, and its time per call at most torch's runner's.

AOTIRT_BENCH_TORCH_STREAM=side runs the torch worker on a stream of its own
(torch.cuda.Stream) instead of the legacy default stream, as aotirt runs on
a non-blocking stream of its own; AOTIRT_BENCH_AOTIRT_STREAM=legacy runs the
aotirt worker (its handles, inputs and clock) on the legacy default stream,
as torch's runner runs, and AOTIRT_BENCH_AOTIRT_STREAM=adopted on a
non-blocking stream made with cuda.bindings and adopted (a handle on a
caller's stream, against the shared stream): diagnostics
(bench/probe_workers.py), not how the benchmark compares them.
"""

import argparse
import functools
import os
import shutil
import statistics
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
sys.path.insert(0, os.path.join(REPO, "tests", "aoti"))
from gpu_timer import AotirtClock, TorchClock  # noqa: E402
from timing import REPS, host_us_per_call, us_per_call  # noqa: E402
from workers import WorkerError, common_arguments, driving, in_turns, is_quick, serve, tear_down  # noqa: E402

QUICK_REPS = 3
BATCH = 20                          # host_us_per_call's batch, as bench.py's runner rows
AOTIRT_RUNNERS = ("aotirt", "aotirt graph replay")
TORCH_SINGLE_THREADED = "torch runner (run_single_threaded)"
TORCH_RUNNERS = {"torch runner": False, TORCH_SINGLE_THREADED: True}


def counts(est_us, quick):
    """(back-to-back calls, host calls, GPU-timed calls) for a model taking about `est_us` per call."""
    est_us = max(est_us, 1.0)
    calls = max(BATCH, min(2000, int((30_000 if quick else 100_000) / est_us)))
    # Few enough that a batch's launches fit the launch queue while the spin runs.
    gpu_calls = max(3, min(100, int((5_000 if quick else 10_000) / est_us)))
    return calls, max(BATCH, calls // BATCH * BATCH), gpu_calls


class Figures:
    """Times one runner's calls the three ways."""

    def __init__(self, timer, wait):
        self.timer, self.wait = timer, wait

    def size_spin(self, calls):
        """Learns the host's pace of a new model's calls (untimed batches)."""
        self.timer.reset()
        for call in calls:
            self.timer.us_per_call(call, 3, self.wait)

    def measure(self, call, request):
        drain = lambda _result: self.wait()  # noqa: E731
        gpu, bound = self.timer.us_per_call(call, request["gpu_calls"], self.wait)
        return {"us_per_call": us_per_call(call, request["calls"], drain),
                "host_us_per_call": host_us_per_call(call, request["host_calls"], drain, batch=BATCH),
                "gpu_us_per_call": gpu, "host_bound": bound}


def estimate_us(call, wait, calls=10):
    """Host-clock time per call of a short drained loop: only to size the batches."""
    start = time.perf_counter()
    for _ in range(calls):
        call()
    wait()
    return (time.perf_counter() - start) / calls * 1e6


# ---------------------------------------------------------------- aotirt worker

AOTIRT_STREAMS = ("legacy", "adopted")


def aotirt_stream(aotirt, choice):
    """The stream the aotirt worker's handles, inputs and clock use for
    AOTIRT_BENCH_AOTIRT_STREAM=`choice`: None (unset: the shared stream),
    the legacy default stream (0) or a non-blocking stream of cuda.bindings,
    both adopted. The made stream lives as long as the worker."""
    if not choice:
        return None
    if choice not in AOTIRT_STREAMS:
        raise SystemExit(f"AOTIRT_BENCH_AOTIRT_STREAM={choice!r}: expected one of {', '.join(AOTIRT_STREAMS)}")
    if choice == "legacy":
        return aotirt.Stream.from_external(0, device=0)
    from cuda.bindings import runtime

    err, made = runtime.cudaStreamCreateWithFlags(runtime.cudaStreamNonBlocking)
    if err != runtime.cudaError_t.cudaSuccess:
        raise RuntimeError(f"cudaStreamCreateWithFlags: {err}")
    return aotirt.Stream.from_external(made, device=0)


class AotirtWorker:
    def __init__(self):
        import aotirt

        self.aotirt = aotirt
        self.stream = aotirt_stream(aotirt, os.environ.get("AOTIRT_BENCH_AOTIRT_STREAM"))
        self.clock = clock = AotirtClock(self.stream)
        self.wait, self.note = clock.wait, clock.note
        self.figures = Figures(clock.timer, clock.wait)
        self.handle = self.graph = None

    def setup(self, request):
        """Checks the model (its "check": missing functions, errors against
        eager), then readies its runs; a model with missing functions is not run."""
        import zoo_check

        self.teardown(request)
        aotirt, folder = self.aotirt, request["folder"]
        meta = zoo_check.read_meta(folder)
        package = os.path.join(folder, "model.pt2")
        missing = zoo_check.missing_functions(package)
        if missing:
            note = "missing: " + ", ".join(missing)
            return {"est_us": None, "notes": dict.fromkeys(AOTIRT_RUNNERS, note),
                    "check": {"ran": False, "missing": missing}}
        self.handle = aotirt.load(package, stream=self.stream)
        self.inputs = zoo_check.aotirt_inputs(folder, meta, stream=self.stream)
        run = lambda: self.handle.run(self.inputs)  # noqa: E731
        worst = {"eager": zoo_check.worst_output(zoo_check.host_outputs(run(), meta), folder, meta)}
        for _ in range(3):
            run()
        self.wait()
        self.calls = {"aotirt": run}
        notes = {"aotirt": self.note}
        try:
            self.graph = self.handle.capture(self.inputs)
            self.calls["aotirt graph replay"] = lambda: self.graph.replay(self.inputs)
            notes["aotirt graph replay"] = self.note
            worst["graph"] = zoo_check.worst_output(zoo_check.host_outputs(self.graph.replay(self.inputs), meta),
                                                    folder, meta)
        except aotirt.AotiError as error:
            notes["aotirt graph replay"] = f"capture failed: {' '.join(str(error).split())[:300]}"
        self.figures.size_spin(self.calls.values())
        return {"est_us": estimate_us(run, self.wait), "notes": notes, "check": check_row(worst)}

    def rep(self, request):
        return {"figures": {label: self.figures.measure(call, request) for label, call in self.calls.items()}}

    def teardown(self, request):
        for thing in (self.graph, self.handle):
            if thing is not None:
                thing.close()
        self.graph = self.handle = None
        self.calls, self.inputs = {}, []
        self.wait()
        return {}


def check_row(worst):
    """The "zoo_model" row's figures from {"eager"/"graph": (error, bound)}:
    the largest error (None where not finite), its bound, and whether every
    output of both runs is within its bound."""
    import zoo_check

    error, limit = max(worst.values(), key=lambda pair: (not zoo_check.within(*pair), pair[0]))
    return {"ran": True, "missing": [], "modes": sorted(worst),
            "max_rel_error": error if error != float("inf") else None, "bound": limit,
            "within": all(zoo_check.within(*pair) for pair in worst.values())}


# ----------------------------------------------------------------- torch worker

class TorchWorker:
    def __init__(self):
        import torch

        self.torch = torch
        self.clock = clock = TorchClock()   # on a stream of its own under AOTIRT_BENCH_TORCH_STREAM=side
        self.wait, self.note = clock.wait, clock.note
        self.figures = Figures(clock.timer, clock.wait)
        self.calls, self.runners, self.scratch = {}, [], []

    def setup(self, request):
        import torch_runner
        import zoo_check

        self.teardown(request)
        folder = request["folder"]
        inputs = zoo_check.torch_inputs(folder, zoo_check.read_meta(folder))
        notes = {}
        for label, single_threaded in TORCH_RUNNERS.items():
            scratch = tempfile.mkdtemp(prefix="aotirt-bench-zoo-")
            self.scratch.append(scratch)
            try:
                runner, _so = torch_runner.open_runner(os.path.join(folder, "model.pt2"), scratch, single_threaded)
                call = functools.partial(runner.run, inputs)
                for _ in range(3):
                    call()
                self.wait()
            except Exception as error:  # noqa: BLE001 - that runner's row says why
                notes[label] = f"failed: {type(error).__name__}: {' '.join(str(error).split())[:300]}"
                continue
            self.runners.append(runner)
            self.calls[label] = call
            notes[label] = self.note
        self.figures.size_spin(self.calls.values())
        est = max((estimate_us(call, self.wait) for call in self.calls.values()), default=1.0)
        return {"est_us": est, "notes": notes}

    def rep(self, request):
        return {"figures": {label: self.figures.measure(call, request) for label, call in self.calls.items()}}

    def teardown(self, request):
        self.calls, self.runners = {}, []
        for scratch in self.scratch:
            shutil.rmtree(scratch, ignore_errors=True)
        self.scratch = []
        self.torch.cuda.empty_cache()
        return {}


def worker_main(kind):
    worker = AotirtWorker() if kind == "aotirt" else TorchWorker()
    serve({"setup": worker.setup, "rep": worker.rep, "teardown": worker.teardown, "ping": lambda request: {}})


# ----------------------------------------------------------------------- driver

def bench_model(name, folder, workers, reps, quick, case="zoo", aotirt_runners=AOTIRT_RUNNERS):
    """The rows of one model: both workers set up, then `reps` rounds in turns.
    bench/decode.py reuses it with its own case and aotirt worker (runners)."""
    labels = {"aotirt": aotirt_runners, "torch": tuple(TORCH_RUNNERS)}
    answers, notes = {}, {}
    for side, worker in workers.items():
        try:
            answers[side] = worker.ask("setup", folder=folder)
            notes.update(answers[side]["notes"])
        except WorkerError as error:
            for label in labels[side]:
                notes[label] = f"failed: {error}"
    samples, active = {}, [side for side in workers if side in answers]
    if active:
        estimates = [a["est_us"] for a in answers.values() if a.get("est_us")]
        calls, host_calls, gpu_calls = counts(max(estimates, default=1.0), quick)
        in_turns(workers, active, reps,
                 lambda w: w.ask("rep", calls=calls, host_calls=host_calls, gpu_calls=gpu_calls),
                 labels, notes, samples)
    tear_down(workers, answers, "teardown")
    rows = []
    if "check" in answers.get("aotirt", {}):
        rows.append({"case": f"{case}_model", "model": name, **answers["aotirt"]["check"]})
    for label in (*labels["aotirt"], *labels["torch"]):
        row = {"case": case, "model": name, "runner": label, "us_per_call": None, "host_us_per_call": None,
               "gpu_us_per_call": None, "note": notes.get(label, "")}
        if label in samples and len(samples[label]) == reps:
            for key in ("us_per_call", "host_us_per_call", "gpu_us_per_call"):
                row[key] = round(statistics.median(s[key] for s in samples[label]), 3)
            theirs = samples.get(TORCH_SINGLE_THREADED, [])
            if label == "aotirt" and len(theirs) == reps:
                # Each round's GPU ratio to the single-threaded runner, timed in turns with it.
                row["gpu_round_ratios"] = [round(a["gpu_us_per_call"] / t["gpu_us_per_call"], 3)
                                           for a, t in zip(samples[label], theirs)
                                           if a["gpu_us_per_call"] and t["gpu_us_per_call"]]
            if any(s["host_bound"] for s in samples[label]):
                row["note"] = "; ".join(n for n in (row["note"], "GPU time host-bound in some round") if n)
        rows.append(row)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    common_arguments(parser)
    parser.add_argument("--only", default="", help="comma-separated zoo model names")
    parser.add_argument("--cache", help="the models' cache (default: the tests' .cache/aoti)")
    args = parser.parse_args()
    if args.worker:
        worker_main(args.worker)
        return 0
    from zoo_index import cache_key, default_cache, torch_python, zoo_names

    quick = is_quick(args)
    reps = QUICK_REPS if quick else REPS
    cache = args.cache or default_cache()
    root = os.path.join(cache, cache_key("cuda"))
    names = [n for n in args.only.split(",") if n] or zoo_names()
    pythons = {"aotirt": sys.executable, "torch": torch_python()}
    with driving(os.path.abspath(__file__), pythons, args.out) as (emit, workers, missing):
        if "aotirt" in missing:
            emit({"case": "zoo", "model": "all", "runner": "aotirt", "us_per_call": None, "note": missing["aotirt"]})
            return 0
        for name in names:
            folder = os.path.join(root, name)
            if not os.path.exists(os.path.join(folder, "meta.json")):
                log = os.path.join(cache, f"{name}.cuda.log")
                why = f"not compiled (see {log})" if os.path.exists(log) else f"not compiled (no {folder})"
                emit({"case": "zoo_model", "model": name, "ran": False, "missing": [], "note": why})
                for label in (*AOTIRT_RUNNERS, *TORCH_RUNNERS):
                    emit({"case": "zoo", "model": name, "runner": label, "us_per_call": None, "note": why})
                continue
            for row in bench_model(name, folder, workers, reps, quick):
                if "torch" in missing and row.get("runner") in TORCH_RUNNERS:
                    row["note"] = missing["torch"]
                emit(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
