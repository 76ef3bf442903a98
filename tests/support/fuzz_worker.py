"""Runs mutated .pt2 packages and weights blobs through aotirt, one case
after the other, for tests/python/test_fuzz.py (which starts it in a subprocess, so
that a crash is a failure naming the case, not the end of the test run).

    python tests/support/fuzz_worker.py CASES.json

CASES.json: a list of {"name", "kind": "package" | "blob", "path", "library"}.
For each case it prints "start NAME" before and one JSON line after:
{"name", "outcome": "ok" | an exception's class name, "message", "finite"}.
It ends with {"fds": [before, after], "rss_kb": [before, after]}.
"""

import json
import os
import sys

import numpy as np

import aotirt

INPUTS = {1: [np.random.default_rng(0).standard_normal((64, 80)).astype(np.float32)],   # the encoder
          3: [np.full(8, 2.0, np.float32)] * 3}                                          # add_mul


def rss_kb():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def open_fds():
    return len(os.listdir("/proc/self/fd"))


def run_case(case):
    if case["kind"] == "package":
        handle = aotirt.load(case["path"])
    else:
        handle = aotirt.AotiHandle(case["library"])
        try:
            with open(case["path"], "rb") as f:
                handle.update_constants_from_blob(f.read())
        except BaseException:
            handle.close()
            raise
    with handle:
        inputs = INPUTS.get(handle.num_inputs)
        if inputs is None:   # a model of the zoo: its own saved input
            inputs = [np.load(case["input"])]
        outputs = [t.numpy() for t in handle.run(inputs)]
    return all(np.all(np.isfinite(o)) for o in outputs if o.dtype.kind == "f")


def main():
    with open(sys.argv[1]) as f:
        cases = json.load(f)
    fds, rss = open_fds(), rss_kb()
    for case in cases:
        print(f"start {case['name']}", flush=True)
        record = {"name": case["name"], "outcome": "ok", "message": "", "finite": True}
        try:
            record["finite"] = bool(run_case(case))
        except Exception as e:  # the test decides which kinds are allowed
            record["outcome"] = type(e).__name__
            record["message"] = str(e)[:500]
        print(json.dumps(record), flush=True)
    print(json.dumps({"fds": [fds, open_fds()], "rss_kb": [rss, rss_kb()]}), flush=True)


if __name__ == "__main__":
    main()
