"""GPU tests carry @pytest.mark.gpu: skipped with a reason where there is no
GPU, and with AOTIRT_REQUIRE_GPU=1 any skip at all fails the run, so a GPU
runner can never pass by skipping.

Tests of several GPUs carry @pytest.mark.multigpu: skipped with a reason
where there are fewer than two. AOTIRT_REQUIRE_GPU=1 makes that skip an
error only where two GPUs exist: a one-GPU runner still runs everything
else, a two-GPU runner must run these too.

Tests marked `without_system_cublas` check what a user without any cuBLAS
sees (the loader's message); where the dynamic linker finds one (a GPU
machine with the toolkit) their premise is false, and they are deselected,
with a line saying so, rather than skipped."""

import os
import sys

import pytest

# The shared helpers are the package tests/support (`from support.helpers
# import REPO`): tests/ goes first on sys.path for every test folder, whatever
# pytest's import mode.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# Tests of other folders use the real models that tests/aoti compiles
# (`from test_aoti_models import model_folder`): that folder too, so that
# they import whichever folder pytest collects first.
sys.path.insert(1, os.path.join(os.path.dirname(os.path.abspath(__file__)), "aoti"))

REQUIRE_GPU = os.environ.get("AOTIRT_REQUIRE_GPU") == "1"


def _gpu_count():
    import aotirt

    return aotirt.device_count()


def _system_cublas():
    """The cuBLAS aotirt's loader finds here, or None."""
    import ctypes

    import aotirt

    lib = ctypes.CDLL(os.path.join(os.path.dirname(aotirt.__file__), "libaotirt.so"))
    path = ctypes.c_char_p()
    lib.aotirt_load_optional_library.restype = ctypes.c_int
    if lib.aotirt_load_optional_library(b"cublas", ctypes.byref(path)) != 0:
        return None
    return (path.value or b"").decode() or "cuBLAS"


def pytest_collection_modifyitems(config, items):
    needs_none = [item for item in items if "without_system_cublas" in item.keywords]
    found = _system_cublas() if needs_none else None
    if found:
        items[:] = [item for item in items if item not in needs_none]
        config.hook.pytest_deselected(items=needs_none)
        print(f"\ndeselected {len(needs_none)} test(s) about a machine without cuBLAS: this one has {found}")
    count = _gpu_count()
    if count < 2:
        few = pytest.mark.skip(reason=f"needs two CUDA GPUs (aotirt.device_count() is {count})")
        for item in items:
            if "multigpu" in item.keywords:
                item.add_marker(few)
                item.user_properties.append(("aotirt_fewer_than_two_gpus", True))
    if count > 0:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (aotirt.device_count() is 0)")
    for item in items:
        if "gpu" in item.keywords and "multigpu" not in item.keywords:
            item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and os.environ.get("AOTIRT_REPORT_NOW") == "1":
        # Print at once: a later crash of the interpreter would lose it.
        print(f"\n--- {item.nodeid} ({report.when}) failed:\n{report.longreprtext}\n---", flush=True)
    # A test of two GPUs on a machine with fewer is skipped, not failed.
    fewer_than_two = ("aotirt_fewer_than_two_gpus", True) in item.user_properties
    if REQUIRE_GPU and report.skipped and not fewer_than_two:
        report.outcome = "failed"
        report.longrepr = f"AOTIRT_REQUIRE_GPU=1 but {item.nodeid} was skipped: {report.longrepr}"


# AOTIRT_TEST_TRACE=FILE (scripts/gpu-check.sh sets it, under its logs):
# every test's start and end, with the time and the process, appended as
# they happen. A command that a runner's time limit ends prints no summary;
# this file still says which tests had started and not ended, and how long
# each that ended took.
_TRACE = os.environ.get("AOTIRT_TEST_TRACE")


def _trace(event, seconds, nodeid):
    import time

    # The test's id last: a parameter's id may hold spaces.
    line = f"{time.time():.3f} {os.getpid()} {event} {seconds} {nodeid}\n"
    # One write of a short line to a file opened for appending: the lines of
    # several processes (pytest-xdist's workers) never interleave.
    fd = os.open(_TRACE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


if _TRACE:
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        import time

        start = time.monotonic()
        _trace("start", "-", item.nodeid)
        yield
        _trace("end", f"{time.monotonic() - start:.2f}s", item.nodeid)
