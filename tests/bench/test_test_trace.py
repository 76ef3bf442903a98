"""The test trace (AOTIRT_TEST_TRACE, tests/conftest.py) and its reader
(scripts/test-trace.py): every test's start and end, from several pytest
processes into one file, and the tests that never ended named."""

import os
import subprocess
import sys

import pytest

from support.helpers import REPO

READER = os.path.join(REPO, "scripts", "test-trace.py")


def reader(*args):
    return subprocess.run([sys.executable, READER, *args], capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(os.environ.get("AOTIRT_SANITIZED") == "1",
                    reason="a pytest run inside the test: run by make test, not under the sanitizers")
def test_two_workers_trace_every_test_they_run(tmp_path):
    trace = tmp_path / "trace.log"
    env = dict(os.environ, AOTIRT_TEST_TRACE=str(trace),
               PYTHONPATH=os.pathsep.join([os.path.join(REPO, "pyx"), os.environ.get("PYTHONPATH", "")]))
    env.pop("AOTIRT_REQUIRE_GPU", None)  # this file's tests may skip here; the inner run is not the check
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml", str(tmp_path / "j.xml")]
    try:
        import xdist  # noqa: F401
        args += ["-n", "2"]
    except ImportError:
        pass
    proc = subprocess.run([*args, os.path.join("tests", "runtime", "test_devices.py")], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [line.split(" ", 4) for line in trace.read_text().splitlines()]
    starts = sorted(parts[4] for parts in lines if parts[2] == "start")
    ends = sorted(parts[4] for parts in lines if parts[2] == "end")
    assert starts and starts == ends
    # The file's own tests, each once (a pytest run inside one of them, here
    # test_marks.py's, inherits the variable and traces its tests too).
    own = [nodeid for nodeid in starts if nodeid.startswith("tests/runtime/test_devices.py::")]
    assert len(own) == len(set(own)) == (tmp_path / "j.xml").read_text().count("<testcase ")
    out = reader(str(trace))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"{len(starts)} tests ended, 0 started and never ended\n"), out.stdout


def test_the_reader_names_the_tests_that_never_ended(tmp_path):
    trace = tmp_path / "trace.log"
    trace.write_text("100.0 7 start - tests/a.py::slow[a b]\n"
                     "100.5 8 start - tests/b.py::quick\n"
                     "101.0 8 end 0.50s tests/b.py::quick\n"
                     "101.0 8 start - tests/b.py::quicker\n"
                     "101.2 8 end 0.20s tests/b.py::quicker\n"
                     "130.0 9 start - tests/c.py::stuck\n"
                     "160.0 9 end 1.00s tests/c.py::other\n")
    out = reader(str(trace), "--slowest", "2")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "3 tests ended, 2 started and never ended",
        "  never ended: tests/a.py::slow[a b] (process 7, running 60.0 s when the trace stopped)",
        "  never ended: tests/c.py::stuck (process 9, running 30.0 s when the trace stopped)",
        "slowest 2 that ended:",
        "      1.00 s  tests/c.py::other",
        "      0.50 s  tests/b.py::quick",
    ]


def test_the_reader_refuses_what_is_not_a_trace(tmp_path):
    bad = tmp_path / "bad.log"
    bad.write_text("100.0 7 start - tests/a.py::x\n100.0 7 end tests/a.py::x\n")
    out = reader(str(bad))
    assert out.returncode == 1 and f"{bad}:2: not a trace line" in out.stderr, out.stderr
    out = reader(str(tmp_path / "missing.log"))
    assert out.returncode == 1 and "missing.log" in out.stderr, out.stderr
