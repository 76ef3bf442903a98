"""Runs code under the host-wait counter (tests/runtime/interposer/count_waits.c).

`count_waits(body, setup)` runs `setup`, resets the counters, runs `body` and
returns {function name: calls} for every host-blocking CUDA function, counted
in a fresh interpreter with the counter preloaded. `count_pool_calls` does the
same for the stream-ordered pool's cudaMallocAsync and cudaFreeAsync, and
`count_queued_copies` for cudaMemcpyAsync.
"""

import json
import os
import subprocess
import sys
import textwrap

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = os.path.join(TESTS, "runtime", "interposer", "count_waits.c")

_built = {}


def interposer_library(folder):
    """Builds the counter once per test session into `folder`."""
    if "path" not in _built:
        out = os.path.join(folder, "libcount_waits.so")
        subprocess.run(["cc", "-std=c11", "-O2", "-shared", "-fPIC", "-o", out, SOURCE, "-ldl"], check=True)
        _built["path"] = out
    return _built["path"]


def count_waits(library, body, setup="", names="waits_names"):
    program = "\n".join([
        "import ctypes, json",
        f"counter = ctypes.CDLL({library!r})",
        "counter.waits_count.restype = ctypes.c_long",
        f"counter.{names}.restype = ctypes.c_char_p",
        textwrap.dedent(setup),
        "counter.waits_reset()",
        textwrap.dedent(body),
        f"names = counter.{names}().decode().split()",
        "print('WAITS ' + json.dumps({n: counter.waits_count(n.encode()) for n in names}))",
    ])
    # Keep what is preloaded already (the sanitizer runtimes under make asan).
    preload = " ".join(p for p in [os.environ.get("LD_PRELOAD", ""), library] if p)
    env = dict(os.environ, LD_PRELOAD=preload)
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("WAITS ")][-1]
    return json.loads(line[len("WAITS "):])


def count_pool_calls(library, body, setup=""):
    """count_waits of cudaMallocAsync and cudaFreeAsync."""
    return count_waits(library, body, setup, names="pool_call_names")


def count_queued_copies(library, body, setup=""):
    """count_waits of cudaMemcpyAsync."""
    return count_waits(library, body, setup, names="queued_copy_names")


def waits_when_tuned(tmp_path, monkeypatch, mode, setup, body):
    """count_waits of `body` under AOTIRT_CUDNN_TUNE=mode with an empty
    choices' cache (so the calls measure), the counter built under
    `tmp_path`: only the functions called at least once."""
    monkeypatch.setenv("AOTIRT_CUDNN_TUNE", mode)
    monkeypatch.setenv("AOTIRT_CACHE", str(tmp_path / "cache"))
    counts = count_waits(interposer_library(str(tmp_path)), setup=setup, body=body)
    return {name: n for name, n in counts.items() if n}
