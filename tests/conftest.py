"""GPU tests carry @pytest.mark.gpu: skipped with a reason where there is no
GPU, and with AOTIRT_REQUIRE_GPU=1 any skip at all fails the run, so a GPU
runner can never pass by skipping."""

import os

import pytest

REQUIRE_GPU = os.environ.get("AOTIRT_REQUIRE_GPU") == "1"


def _gpu_count():
    import aotirt

    return aotirt.device_count()


def pytest_collection_modifyitems(config, items):
    if _gpu_count() > 0:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (aotirt.device_count() is 0)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and os.environ.get("AOTIRT_REPORT_NOW") == "1":
        # Print at once: a later crash of the interpreter would lose it.
        print(f"\n--- {item.nodeid} ({report.when}) failed:\n{report.longreprtext}\n---", flush=True)
    if REQUIRE_GPU and report.skipped:
        report.outcome = "failed"
        report.longrepr = f"AOTIRT_REQUIRE_GPU=1 but {item.nodeid} was skipped: {report.longrepr}"
