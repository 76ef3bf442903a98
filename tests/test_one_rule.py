"""The one rule, checked in the source: the host waits for the GPU only in
the copy routine (shared/DESIGN.md). A run-time count lives in the GPU tests."""

import os
import re

from helpers import REPO

CODE_DIRS = ["cuda_src", "include", "pyx", "bench"]
CODE_SUFFIXES = (".c", ".cc", ".cpp", ".cu", ".cuh", ".h", ".hpp", ".pyx", ".pxd", ".py")
OTHER_WAITS = ["cudaDeviceSynchronize", "cudaEventSynchronize", "cudaThreadSynchronize",
               "cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize",
               # cuBLAS documents that destroying a handle synchronizes the device.
               "cublasDestroy", "cublasDestroy_v2"]


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
    pattern = re.compile(r"\b%s\s*\(" % function)
    return [(path, n) for path, n, line in code_lines() if pattern.search(line)]


def test_stream_synchronize_is_called_once_in_the_copy_routine():
    sites = calls("cudaStreamSynchronize")
    assert len(sites) == 1, sites
    path, line = sites[0]
    assert path == os.path.join("cuda_src", "core", "copy.cu")
    source = open(os.path.join(REPO, path)).read().splitlines()
    enclosing = [l for l in source[:line] if re.match(r"^\w.*\b\w+\(.*\{\s*$", l)]
    assert enclosing and "copy_to_host(" in enclosing[-1], enclosing[-1:]


def test_no_other_host_waits():
    for function in OTHER_WAITS:
        assert calls(function) == [], function


def test_no_synchronous_memcpy_or_free_in_the_core():
    assert calls("cudaMemcpy") == []
    assert calls("cudaFree") == []
    assert calls("cudaMalloc") == []
