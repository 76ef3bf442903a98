"""Where a graph replay's GPU time goes on the zoo's small models: a
diagnostic, not a benchmark. No torch in the process unless --profile.

    PYTHONPATH=$PWD/pyx python3 bench/probe_replay.py --only sdpa_bf16,int4_linear_bf16 [--profile]

Session 29's zoo (bench/runs/s29-bench.jsonl) had aotirt's graph replays
take more GPU time than its eager calls on the smallest models: sdpa_bf16
44.8 us a replay against 18.3 eagerly, sdpa_f32 70.7 against 61.1,
int4_linear_bf16 7.9 against 5.6. A replay of bench/zoo.py copies each input
into the graph's static input and then launches the graph, so per model
this times (GPU time per call, bench/gpu_timer.py, the median of 5 batches):
the eager call; `replay(inputs)` as the zoo times it (since session 30 its
device inputs go in one kernel, runtime/copy_batch.h); `copy_` of each
input into its static input and then `replay()`, which is what
`replay(inputs)` did before (a cudaMemcpyAsync an input); `replay()`, the
graph alone on the static inputs; and the `copy_`s alone. If the copies
account for the difference, a replay's inputs are what to make cheaper; if
the graph alone is slower than the eager call, its launch is.

--profile: then each model's `replay(inputs)` under torch's profiler
(CUPTI; torch imported for it alone), every GPU activity of one replay
with its start (us from the first) and duration, on stdout.
"""

import argparse
import os
import statistics
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path[:0] = [BENCH, os.path.join(REPO, "tests", "aoti")]

BATCHES = 5
CALLS = 50


def per_call_us(clock, call):
    # Warm first, untimed: the spin is sized from the host's slowest pace
    # seen since the reset, and a first call (lazy loading) would make every
    # later batch spin for as long.
    for _ in range(3):
        call()
    clock.wait()
    clock.timer.reset()
    for _ in range(3):  # sizes the spin, untimed
        clock.timer.us_per_call(call, CALLS, clock.wait)
    return statistics.median(clock.timer.us_per_call(call, CALLS, clock.wait)[0] for _ in range(BATCHES))


def profile_replay(replay, wait):
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):
        replay()
    wait()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        replay()
        wait()
    events = sorted((e for e in prof.events() if e.device_type.name == "CUDA"), key=lambda e: e.time_range.start)
    if not events:
        print("  (no GPU activity seen)")
        return
    first = events[0].time_range.start
    for e in events:
        print(f"  {e.time_range.start - first:8.2f} us  {e.time_range.elapsed_us():7.2f} us  {e.name[:110]}")


def probe(name, folder, clock, profile):
    """One model's line (and with `profile`, its replay's activities)."""
    import aotirt
    import zoo_check

    meta = zoo_check.read_meta(folder)
    handle = aotirt.load(os.path.join(folder, "model.pt2"))
    inputs = zoo_check.aotirt_inputs(folder, meta)
    graph = handle.capture(inputs)
    statics = list(graph.inputs)

    def copies():
        for static, given in zip(statics, inputs):
            static.copy_(given)

    def copies_then_replay():
        copies()
        graph.replay()

    figures = {
        "eager": per_call_us(clock, lambda: handle.run(inputs)),
        "replay(inputs)": per_call_us(clock, lambda: graph.replay(inputs)),
        "copy_ each, replay()": per_call_us(clock, copies_then_replay),
        "replay()": per_call_us(clock, lambda: graph.replay()),
        "copy_ each": per_call_us(clock, copies),
    }
    sizes = ", ".join(f"{t.dtype}{list(t.shape)}" for t in inputs)
    print(f"{name}: {len(inputs)} inputs ({sizes}); GPU us per call: " +
          ", ".join(f"{k} {v:.2f}" for k, v in figures.items()), flush=True)
    if profile:
        profile_replay(lambda: graph.replay(inputs), clock.wait)
    graph.close()
    handle.close()
    clock.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", required=True, help="zoo model names, comma-separated")
    parser.add_argument("--cache", help="the models' cache (default: the tests' .cache/aoti)")
    parser.add_argument("--profile", action="store_true", help="list one replay's GPU activities")
    args = parser.parse_args()
    from gpu_timer import AotirtClock
    from zoo_index import cache_key, default_cache

    clock = AotirtClock()
    root = os.path.join(args.cache or default_cache(), cache_key("cuda"))
    for name in args.only.split(","):
        probe(name, os.path.join(root, name), clock, args.profile)


if __name__ == "__main__":
    main()
