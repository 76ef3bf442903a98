"""Where a zoo model's GPU time goes: aotirt against torch's AOTI runner
(run_single_threaded, the zoo's anchor) on the same library, every GPU activity (kernels, copies, memsets) of one batch
of calls, read by torch's profiler (CUPTI), each runner in its own process.

    python3 bench/model_trace.py --only resnet18,mobilenet_v2 [--out FILE]
    python3 bench/model_trace.py --only mobilenet_v2 --tune 1 [--out FILE]
    python3 bench/model_trace.py --only resnet18 --adopted [--out FILE]

A diagnostic for the zoo table's `GPU us` columns, not a benchmark: the
profiler slows the host, so only the GPU's side is read. The batch is queued
behind bench/gpu_timer.py's spin kernel, as the zoo benchmark's GPU figure
is, so the GPU runs it back to back. Per call: the activities, the sum of
their durations (`busy`), and the span from the first one's start to the
last one's end (`span`; span minus busy is the GPU's time between
activities). Then the kernel names whose count or time per call differs
between the two runners, largest difference first; the same for the GPU's
idle time after each kernel name; and the host's CUDA calls per call,
counted and timed.

With --tune MODE (1 or wide: AOTIRT_CUDNN_TUNE's tuned modes) the row
compares aotirt with itself instead: untuned, tuned in the process that
measures (an empty choices' folder; its warm-up calls each wait for the
GPU, so that every measurement is read and chosen before the trace), and
tuned in a later process on the choices that one recorded. Session 23's
tuned zoo ran its graph replays faster than untuned on all ten conv models
and its eager calls slower on eight (bench/runs/s23-h100-check.md); the
kernels whose count or time moves, and the idle time after them, say
which engines or which work between them make that. The tuned sides'
debug log gives each layer's choice ("kept" or "chose", with the
measured times).

With --adopted the row adds a third side: aotirt on a stream it adopts
(a torch stream), which has no block cache, so each of the model's
tensors is a cudaMallocAsync from the device's pool and a cudaFreeAsync
back. Session 33 found aotirt's Triton kernels that read a convolution's
output slower than the same kernels under torch's runner, with the same
launches: if the adopted side's kernels run at torch's times, the block
cache's choice of blocks is the cause (PYTORCH_CUDA_ALLOC_CONF=
backend:cudaMallocAsync puts torch's side on the pool too).

The aotirt process imports torch for its profiler only: the model still
runs through aotirt alone (Python opens torch's libraries RTLD_LOCAL, so the
model library's aoti_torch_* references bind to libaotirt's). One JSON row
per model on stdout (and appended to --out), and a one-line summary of
it on stderr, for a log of which only the tail is read.
"""

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
sys.path.insert(0, os.path.join(REPO, "tests", "aoti"))
from gpu_timer import SPIN_KERNEL  # noqa: E402

CALLS = 10  # a traced batch
WARMUP_CALLS = 5
# Batches under the profiler: its host overhead lengthens the spin of the
# later ones, so the last is queued before its spin ends. Only it is read.
PROFILED_BATCHES = 3
# The spin under the profiler, over the slowest batch seen: torch's runner
# stayed host-bound behind gpu_timer's usual 1.5x in session 13's traces,
# which left its idle time between kernels unread.
PROFILED_SPIN_MARGIN = 6.0
GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
API_CATEGORIES = ("cuda_runtime", "cuda_driver")  # the host's CUDA calls
LISTED_DIFFERENCES = 12
TUNE_MODES = ("1", "wide")  # AOTIRT_CUDNN_TUNE's tuned modes (cuda_src/shims/libs/cudnn_tuning.h)
UNTUNED, MEASURING, RECORDED = "aotirt", "aotirt tuned, measuring", "aotirt tuned, recorded"
ADOPTED = "aotirt adopted stream"
CHOICE_LINE = "cuDNN tuning measured"  # the debug log's line of each choice (cudnn_measure.h)
LISTED_CHOICES = 80


def open_side(side, folder, scratch):
    """(call, clock) of one runner on the model, as bench/zoo.py's workers make them."""
    import zoo_check

    meta = zoo_check.read_meta(folder)
    package = os.path.join(folder, "model.pt2")
    if side.startswith("aotirt"):
        import aotirt
        from gpu_timer import AotirtClock

        stream = None
        if side == ADOPTED:
            import torch  # already imported for the profiler

            stream = aotirt.Stream.from_external(torch.cuda.Stream(device=0))
        handle = aotirt.load(package, stream=stream)
        inputs = zoo_check.aotirt_inputs(folder, meta, stream=stream)
        return (lambda: handle.run(inputs)), AotirtClock(stream)
    import torch_runner
    from gpu_timer import TorchClock

    inputs = zoo_check.torch_inputs(folder, meta)
    # run_single_threaded: the runner whose GPU figure the zoo's target
    # compares with. Its default run() queued resnet18 at 474 us where this
    # one queued it at 345 (session 31's zoo), host-bound even behind the
    # spin, and under the profiler more so: the idle time read from it was
    # the host's, not the GPU's.
    runner, _so = torch_runner.open_runner(package, scratch, single_threaded=True)
    return (lambda: runner.run(inputs)), TorchClock()


def trace_side(side, folder):
    """The GPU activities of the last profiled batch of one runner, in start
    order, and the host's CUDA calls per call over all profiled batches."""
    from torch.profiler import ProfilerActivity, profile

    with tempfile.TemporaryDirectory(prefix="aotirt-trace-") as scratch:
        call, clock = open_side(side, folder, scratch)
        # Each warm-up call waits for the GPU: a tuned plan chooses in a
        # later call that finds its measurement done (cudnn_measure.h), so
        # by the last one every choice is made.
        for _ in range(WARMUP_CALLS):
            call()
            clock.wait()
        for _ in range(2):  # sizes the spin to the host's pace of this call
            clock.timer.us_per_call(call, CALLS, clock.wait)
        clock.timer.spin_margin = PROFILED_SPIN_MARGIN
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(PROFILED_BATCHES):
                gpu_us, host_bound = clock.timer.us_per_call(call, CALLS, clock.wait)
        trace = os.path.join(scratch, "trace.json")
        prof.export_chrome_trace(trace)
        with open(trace) as f:
            events = json.load(f)["traceEvents"]
    spin_ends = [e["ts"] + e["dur"] for e in events if e.get("cat") == "kernel" and SPIN_KERNEL in e.get("name", "")]
    last_spin_end = max(spin_ends, default=float("-inf"))
    activities = sorted((e["ts"], e["dur"], e["name"], e["cat"]) for e in events
                        if e.get("cat") in GPU_CATEGORIES and SPIN_KERNEL not in e.get("name", "")
                        and e["ts"] >= last_spin_end)
    # Work queued besides the kernels (event records and waits, stream-ordered
    # allocations) shows in the host's calls.
    api_counts, api_us = host_calls(events, PROFILED_BATCHES * CALLS)
    return {"side": side, "events_gpu_us_per_call": gpu_us, "host_bound": host_bound,
            "recorded_choices": recorded_choices(os.environ["AOTIRT_CACHE"]) if side in (MEASURING, RECORDED) else None,
            "api_calls_per_call": api_counts, "api_us_per_call": api_us,
            "activities": [{"ts": ts, "dur": dur, "name": name, "cat": cat} for ts, dur, name, cat in activities]}


def host_calls(events, calls):
    """({name: count per call}, {name: host us per call}) of the host's CUDA
    calls among a trace's `events`, over `calls` model calls. The time is
    the count times the median call's duration: behind the spin the launch
    queue fills, and a launch into a full queue waits there for the GPU
    (session 39: the sum of mobilenet_v3_small's launch times came to 87 ms
    a call), a wait the median leaves out. It includes the profiler's own
    cost, alike on both sides: where a host-bound model's queueing goes."""
    durations = collections.defaultdict(list)
    for e in events:
        if e.get("cat") in API_CATEGORIES:
            durations[api_call_name(e)].append(e.get("dur", 0.0))
    by_count = sorted(durations.items(), key=lambda item: -len(item[1]))
    by_time = sorted(((name, len(d) * statistics.median(d)) for name, d in durations.items()),
                     key=lambda item: -item[1])
    return ({name: round(len(d) / calls, 2) for name, d in by_count},
            {name: round(us / calls, 2) for name, us in by_time})


def api_call_name(event):
    """A host CUDA call's name in the trace. The profiler names a call it has
    no name for "INVALID" (session 33: 17 of them per call of mobilenet_v2 in
    aotirt's process, one per depthwise convolution, none in torch's), so
    such a call is named by its API and CUPTI callback id instead, which
    CUPTI's cupti_runtime_cbid.h and cupti_driver_cbid.h turn into a name."""
    name = event.get("name") or "INVALID"
    cbid = (event.get("args") or {}).get("cbid")
    if name != "INVALID" or cbid is None:
        return name
    return f"INVALID ({event['cat'].removeprefix('cuda_')} callback {cbid})"


def recorded_choices(cache):
    """How many choices the tuning's files in the folder `cache` hold."""
    try:
        names = [n for n in os.listdir(cache) if n.startswith("cudnn-tuned-") and n.endswith(".tsv")]
    except OSError:
        return 0
    count = 0
    for name in names:
        with open(os.path.join(cache, name)) as f:
            count += sum(1 for line in f if "\t" in line.strip())
    return count


def choices_of(log):
    """The debug log's choices ("kept ..." or "chose ..."), each with what it
    was measured for, from a tuned side's stderr."""
    out = []
    for line in log.splitlines():
        if CHOICE_LINE not in line:
            continue
        # "<shim>: cuDNN tuning measured N engines for a <what>: kept|chose <engine> at ..."
        rest = line.split(CHOICE_LINE, 1)[1]
        out.append(" ".join(rest.split())[:300])
    return out


def summarise(trace):
    acts = trace["activities"]
    if not acts:
        return {"activities_per_call": 0, "busy_us_per_call": 0.0, "span_us_per_call": 0.0, "idle_us_per_call": 0.0}
    busy = sum(a["dur"] for a in acts)
    span = max(a["ts"] + a["dur"] for a in acts) - acts[0]["ts"]
    by_category = collections.Counter(a["cat"] for a in acts)
    return {"activities_per_call": len(acts) / CALLS, "busy_us_per_call": round(busy / CALLS, 2),
            "span_us_per_call": round(span / CALLS, 2), "idle_us_per_call": round((span - busy) / CALLS, 2),
            "per_category": {k: v / CALLS for k, v in by_category.items()},
            "events_gpu_us_per_call": round(trace["events_gpu_us_per_call"], 2), "host_bound": trace["host_bound"]}


def per_call(pairs):
    """{name: (count per call, us per call)} of (name, us) pairs of a batch."""
    table = collections.defaultdict(lambda: [0, 0.0])
    for name, us in pairs:
        table[name][0] += 1
        table[name][1] += us
    return {name: (count / CALLS, us / CALLS) for name, (count, us) in table.items()}


def by_name(trace):
    """Each kernel name's count and GPU time."""
    return per_call((a["name"], a["dur"]) for a in trace["activities"])


def gaps_by_name(trace):
    """The GPU's idle time after each kernel name, until the next activity starts."""
    acts = trace["activities"]
    return per_call(("after " + before["name"], max(0.0, after["ts"] - (before["ts"] + before["dur"])))
                    for before, after in zip(acts, acts[1:]))


def differences(ours_trace, theirs_trace, table=by_name, labels=("aotirt", "torch")):
    """The names whose count or time per call differs most between two
    traces, `labels` naming their columns (ours first); diff_us is ours
    minus theirs."""
    ours, theirs = table(ours_trace), table(theirs_trace)
    mine, other = labels
    rows = []
    for name in set(ours) | set(theirs):
        (n_a, us_a), (n_t, us_t) = ours.get(name, (0, 0.0)), theirs.get(name, (0, 0.0))
        rows.append({"name": name[:160], f"{mine}_count": n_a, f"{other}_count": n_t,
                     f"{mine}_us": round(us_a, 2), f"{other}_us": round(us_t, 2), "diff_us": round(us_a - us_t, 2)})
    rows.sort(key=lambda r: -abs(r["diff_us"]))
    return rows[:LISTED_DIFFERENCES]


def summary_line(row):
    """One short line of a row's per-call figures, for a log whose tail is
    all that comes back: each side's time in activities (busy) and between
    them (idle), and which side's queue ran dry behind the spin."""
    sides = [k for k, v in row.items() if isinstance(v, dict) and "busy_us_per_call" in v]
    if "error" in row or not sides:
        return f"{row['model']}: {row.get('error', 'no trace')}"
    parts = [f"{side} busy {row[side]['busy_us_per_call']} idle {row[side]['idle_us_per_call']}"
             + (" (host-bound)" if row[side].get("host_bound") else "") for side in sides]
    listed = row.get("differences") or row.get("recorded_differences") or []
    top = "; ".join(f"{d['name'][:48]} {d['diff_us']:+}" for d in listed[:3])
    tail = f" | largest kernel differences: {top}" if top else ""
    host = row.get("api_us_per_call") or {}
    if host:
        tail += " | host us in CUDA calls per call: " + ", ".join(
            f"{side} {round(sum(host[side].values()), 1)}" for side in host)
    return f"{row['model']}: GPU us per call: " + ", ".join(parts) + tail


def side_env(side, tune, choices):
    """The environment of `side`'s process: this one's, but the untuned
    sides without AOTIRT_CUDNN_TUNE, and the tuned ones with the mode
    `tune`, the choices' folder `choices` (shared by the measuring side and
    the recorded one after it) and the debug log that names each choice."""
    env = {k: v for k, v in os.environ.items() if k != "AOTIRT_CUDNN_TUNE"}
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(REPO, "pyx"), os.environ.get("PYTHONPATH", "")])
    if side in (MEASURING, RECORDED):
        env.update(AOTIRT_CUDNN_TUNE=tune, AOTIRT_CACHE=choices, AOTIRT_LOG="debug")
    return env


def run_side(side, folder, tune=None, choices=None):
    """One side in a fresh process (no two sides share one): its trace, and
    for a tuned side its choices from the debug log."""
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--side", side, "--folder", folder],
                          capture_output=True, text=True, env=side_env(side, tune, choices), timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{side} trace failed ({done.returncode}): {done.stderr.strip()[-800:]}")
    trace = json.loads(done.stdout.strip().splitlines()[-1])
    if side in (MEASURING, RECORDED):
        choices_made = choices_of(done.stderr)
        trace["choices"] = choices_made[:LISTED_CHOICES]
        trace["chose_another"] = sum(1 for c in choices_made if ": chose " in c)
        trace["kept"] = sum(1 for c in choices_made if ": kept " in c)
    return trace


def compare_runners(folder, adopted=False):
    """The row's figures of aotirt against torch's runner (and, with
    `adopted`, of aotirt on an adopted stream against both)."""
    sides = ("aotirt", "torch") + ((ADOPTED,) if adopted else ())
    traces = {side: run_side(side, folder) for side in sides}
    row = {**{side: summarise(trace) for side, trace in traces.items()},
           "differences": differences(traces["aotirt"], traces["torch"]),
           "gap_differences": differences(traces["aotirt"], traces["torch"], gaps_by_name),
           "api_calls_per_call": {side: trace["api_calls_per_call"] for side, trace in traces.items()},
           "api_us_per_call": {side: trace["api_us_per_call"] for side, trace in traces.items()}}
    if adopted:
        row["adopted_differences"] = differences(traces[ADOPTED], traces["aotirt"], labels=("adopted", "aotirt"))
        row["adopted_torch_differences"] = differences(traces[ADOPTED], traces["torch"], labels=("adopted", "torch"))
    return row


def compare_tuning(folder, tune):
    """The row's figures of aotirt untuned against tuned, in the process that
    measures and in one on its recorded choices (one fresh choices' folder
    for both)."""
    with tempfile.TemporaryDirectory(prefix="aotirt-trace-choices-") as choices:
        traces = {side: run_side(side, folder, tune, choices) for side in (UNTUNED, MEASURING, RECORDED)}
    row = {"mode": tune, **{side: summarise(trace) for side, trace in traces.items()},
           "api_calls_per_call": {side: trace["api_calls_per_call"] for side, trace in traces.items()}}
    for side, short in ((MEASURING, "measuring"), (RECORDED, "recorded")):
        labels = (short, "untuned")
        row[f"{short}_differences"] = differences(traces[side], traces[UNTUNED], labels=labels)
        row[f"{short}_gap_differences"] = differences(traces[side], traces[UNTUNED], gaps_by_name, labels)
        for key in ("recorded_choices", "chose_another", "kept", "choices"):
            row[f"{short}_{key}"] = traces[side].get(key)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="resnet18", help="comma-separated zoo model names")
    parser.add_argument("--cache", help="the models' cache (default: the tests' .cache/aoti)")
    parser.add_argument("--out")
    parser.add_argument("--tune", choices=TUNE_MODES,
                        help="compare aotirt untuned with aotirt tuned in this mode (measuring, then recorded)")
    parser.add_argument("--adopted", action="store_true",
                        help="add aotirt on an adopted stream (no block cache: every tensor from the pool)")
    parser.add_argument("--side", choices=("aotirt", "torch", MEASURING, RECORDED, ADOPTED), help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        print(json.dumps(trace_side(args.side, args.folder)))
        return 0
    from zoo_index import cache_key, default_cache

    root = os.path.join(args.cache or default_cache(), cache_key("cuda"))
    for name in filter(None, args.only.split(",")):
        folder = os.path.join(root, name)
        case = "model_trace_tuning" if args.tune else "model_trace"
        try:
            figures = compare_tuning(folder, args.tune) if args.tune else compare_runners(folder, args.adopted)
            row = {"case": case, "model": name, **figures}
        except (RuntimeError, OSError, ValueError, subprocess.TimeoutExpired) as error:
            row = {"case": case, "model": name, "error": str(error)}
        line = json.dumps(row)
        print(line, flush=True)
        print(summary_line(row), file=sys.stderr, flush=True)
        if args.out:
            with open(args.out, "a") as f:
                f.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
