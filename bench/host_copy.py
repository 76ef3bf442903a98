"""aotirt's strided copies on the host (cuda_src/runtime/copy.cu) against
numpy's: a strided CPU tensor gathered by the copy routine (`numpy()`) and
`np.ascontiguousarray` of the same view, timed in turns in one process
(host clocks: no GPU is involved). JSON rows on stdout.

    python bench/host_copy.py [--quick] [--out FILE]

No target: the rows say how far the host path is from numpy's, and show
what moving rows contiguous on both sides whole (memcpy) does, against
element by element.
"""

import argparse
import functools
import statistics
import sys
import time

import numpy as np

import aotirt
from workers import Rows, is_quick

# (what, base shape, dtype, the view of the base)
CASES = [
    ("attention heads split", (8, 1024, 16, 64), "float16", lambda a: a.transpose(0, 2, 1, 3)),
    ("channels-last to contiguous", (32, 56, 56, 64), "float32", lambda a: a.transpose(0, 3, 1, 2)),
    ("every other row", (4096, 1024), "float32", lambda a: a[::2]),
    ("transpose", (2048, 2048), "float32", lambda a: a.T),
]


def median_ms(call, reps):
    call()  # a first call pays for page faults of the output
    times = []
    for _ in range(reps):
        began = time.perf_counter()
        call()
        times.append(time.perf_counter() - began)
    return 1e3 * statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 repetitions (also AOTIRT_BENCH_QUICK=1)")
    parser.add_argument("--out")
    args = parser.parse_args()
    reps = 5 if is_quick(args) else 21
    emit = Rows(args.out)
    rng = np.random.default_rng(0)
    for what, shape, dtype, view_of in CASES:
        view = view_of(rng.standard_normal(shape).astype(dtype))
        tensor = aotirt.from_dlpack(view)
        aotirt_ms = median_ms(tensor.numpy, reps)
        numpy_ms = median_ms(functools.partial(np.ascontiguousarray, view), reps)
        emit({"case": "host_copy", "model": what, "shape": "x".join(map(str, view.shape)), "dtype": dtype,
              "strides": ",".join(str(s // view.itemsize) for s in view.strides), "reps": reps,
              "aotirt_ms": round(aotirt_ms, 3), "numpy_ms": round(numpy_ms, 3),
              "ratio": round(aotirt_ms / numpy_ms, 3)})
    emit.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
