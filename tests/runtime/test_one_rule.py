"""The one rule, checked in the source: the host waits for the GPU only in
the copy routine (docs/design.md). A run-time count lives in the GPU tests."""

import os
import re

from support.helpers import REPO

CODE_DIRS = ["cuda_src", "include", "pyx", "bench"]
CODE_SUFFIXES = (".c", ".cc", ".cpp", ".cu", ".cuh", ".h", ".hpp", ".pyx", ".pxd", ".py")


def interposer_waits():
    """The calls that may block the host, as the run-time counter
    (tests/runtime/interposer/count_waits.c) lists them: one list for both checks."""
    source = open(os.path.join(REPO, "tests", "runtime", "interposer", "count_waits.c")).read()
    block = source[source.index("#define WAITS(X)"):source.index("#define COUNTER")]
    return re.findall(r"X\((\w+)\)", block)


# cuBLAS documents that destroying a handle synchronizes the device; the
# interposer does not count it (aotirt never destroys its handle).
CUBLAS_WAITS = ["cublasDestroy", "cublasDestroy_v2"]
# Likewise cudnnDestroy (aotirt keeps its cuDNN handles for the process).
CUDNN_WAITS = ["cudnnDestroy"]
# Where a blocking call is allowed, and why: freeing a pinned numpy array
# when it is garbage collected (never on a run or copy path; documented on
# empty_pinned), and the benchmark harness freeing its pinned buffer at exit.
ALLOWED = {"cudaFreeHost": {os.path.join("cuda_src", "runtime", "api_interop.cpp"), os.path.join("bench", "harness.cu")}}


def code_lines():
    """(path, line number, line) for every line of code, comments removed."""
    for top in CODE_DIRS:
        for folder, _dirs, files in os.walk(os.path.join(REPO, top)):
            for name in files:
                if not name.endswith(CODE_SUFFIXES):
                    continue
                path = os.path.join(folder, name)
                if name.endswith(".cpp") and os.path.exists(path[:-4] + ".pyx"):
                    continue  # Cython's generated C++
                comment = "#" if name.endswith((".py", ".pyx", ".pxd")) else "//"
                with open(path, encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        yield os.path.relpath(path, REPO), number, line.split(comment)[0]


def calls(function):
    pattern = re.compile(rf"\b{function}\s*\(")
    return [(path, n) for path, n, line in code_lines() if pattern.search(line)]


def test_stream_synchronize_is_called_once_in_the_copy_routine():
    sites = calls("cudaStreamSynchronize")
    assert len(sites) == 1, sites
    path, line = sites[0]
    assert path == os.path.join("cuda_src", "runtime", "copy.cu")
    source = open(os.path.join(REPO, path)).read().splitlines()
    enclosing = [ln for ln in source[:line] if re.match(r"^\w.*\b\w+\(.*\{\s*$", ln)]
    assert enclosing and "copy_to_host(" in enclosing[-1], enclosing[-1:]


def test_the_interposer_counts_the_calls_this_test_forbids():
    waits = interposer_waits()
    assert "cudaStreamSynchronize" in waits and "cudaMemcpy" in waits and len(waits) >= 16, waits


def test_no_other_host_waits():
    # Synchronous copies, memsets, frees and mallocs included: each may wait.
    for function in interposer_waits() + CUBLAS_WAITS + CUDNN_WAITS:
        if function == "cudaStreamSynchronize":
            continue  # the copy routine's, checked above
        sites = {path for path, _ in calls(function)}
        assert sites <= ALLOWED.get(function, set()), (function, sites)
