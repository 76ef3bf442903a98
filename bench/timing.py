"""Per-call timing, shared by bench.py and the anchor programs that
bench/anchors.py runs in fresh processes: aotirt's figures and the anchors'
are timed by the same code. Imports nothing but the standard library.

`drain(result)` waits for the device (given the last call's result) and is
always called outside the timed region.
"""

import statistics
import time

REPS = 7


def median_of(measure, reps=REPS):
    return statistics.median(measure() for _ in range(reps))


def us_per_call(call, calls, drain):
    """Microseconds per call of `calls` calls back to back, the drain at the
    end included: the pace of a loop of calls, whichever of the host and the
    device sets it. (Without the drain, calls that the launch queue still
    holds would count as done: a graph replay of 300 us of GPU work read as
    6 us per call.)"""
    start = time.perf_counter()
    for _ in range(calls):
        result = call()
    drain(result)
    return (time.perf_counter() - start) / calls * 1e6


def host_us_per_call(call, calls, drain, batch=100):
    """The host's own cost per call: batches short enough that the launch
    queue never fills (so the device's pace cannot set the host's), drained
    in between outside the timed region."""
    elapsed = 0.0
    for _ in range(calls // batch):
        start = time.perf_counter()
        for _ in range(batch):
            result = call()
        elapsed += time.perf_counter() - start
        drain(result)
    return elapsed / (calls // batch * batch) * 1e6
