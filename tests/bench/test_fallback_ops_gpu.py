"""bench/fallback_ops.py's calls on the GPU, before the benchmark times
them: every case's aotirt side runs through its shim (status 0, a GPU time
measured) in this process, which has no torch, and every case's torch side
builds and runs in a torch worker, as the benchmark starts them. A case
that fails here would give a benchmark row without figures."""

import os
import sys

import pytest

from support.helpers import REPO

sys.path.insert(0, os.path.join(REPO, "bench"))
import fallback_ops  # noqa: E402
from workers import start_workers  # noqa: E402
from zoo_index import torch_python  # noqa: E402

pytestmark = pytest.mark.gpu
CASES = fallback_ops.cases()
IDS = [f"{c['op']}-{c['model']}-{c['dtype']}" for c in CASES]


@pytest.fixture(scope="module")
def aotirt_worker():
    return fallback_ops.AotirtWorker()


@pytest.fixture(scope="module")
def torch_worker():
    python = torch_python()
    if python is None:
        pytest.skip("no Python with torch (AOTIRT_TORCH_PYTHON, or make torch-venv)")
    workers, missing = start_workers(os.path.join(REPO, "bench", "fallback_ops.py"), {"torch": python})
    if missing:
        pytest.fail(f"the torch worker did not start: {missing['torch']}")
    yield workers["torch"]
    workers["torch"].close()


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_aotirt_side_runs(aotirt_worker, case):
    answer = aotirt_worker.setup({"case": case, "shim": case["shim"]})
    try:
        assert answer["us"] > 0
        assert aotirt_worker.rep({"calls": 3})["us"] > 0
    finally:
        aotirt_worker.teardown({})


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_torch_side_runs(torch_worker, case):
    answer = torch_worker.ask("setup", case=case)
    try:
        assert answer["us"] > 0 and answer["backend"] == "native"
    finally:
        torch_worker.ask("teardown")
