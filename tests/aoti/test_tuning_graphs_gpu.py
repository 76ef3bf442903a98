"""The opt-in cuDNN tuning (AOTIRT_CUDNN_TUNE=1) with CUDA graphs, on a zoo
model that convolves (conv1d_stack, compiled by torch with its default
configs), each run in a fresh process (the switch is read once).

A shape's measurement is queued by its first eager call and read by a
later eager call that finds it done; a graph replay calls no shim. So a
graph captured while a measurement is unfinished would keep the untuned
engine for good and never record the choice. Automatic graphs keep
running a signature's calls eagerly while the last one left a measurement
unfinished (cuda_src/runtime/unfinished_measurement.h): every measurement
an eager process finishes, the automatic graphs' process finishes too,
then captures and replays, and its results match torch eager. An explicit
capture does not wait; in a later process, which builds the recorded
choices without measuring, it takes them at once."""

import json
import os
import re
import sys

import numpy as np
import pytest

from support.helpers import REPO, TESTS, run_python
from test_aoti_models import model_folder

sys.path.insert(0, os.path.join(REPO, "tests", "aoti"))
from zoo_check import bound, read_meta, relative_error  # noqa: E402

pytestmark = pytest.mark.gpu

MODEL = "conv1d_stack"

PROGRAM = """
import json, os, sys
import numpy as np
sys.path.insert(0, {tests!r})
import aotirt
folder, mode = {folder!r}, {mode!r}
meta = json.load(open(os.path.join(folder, "meta.json")))
inputs = [aotirt.asarray(np.load(os.path.join(folder, f"input{{i}}.npy")), device="cuda:0")
          for i in range(len(meta["inputs"]))]
if mode == "eager":
    handle = aotirt.load(os.path.join(folder, "model.pt2"))
    for _ in range(10):
        out = handle.run(inputs)[0].numpy()   # read back: the next call finds the measurements done
elif mode == "auto":
    handle = aotirt.load(os.path.join(folder, "model.pt2"), graphs=True)
    calls = 0
    # Nothing read back until a graph is captured: the host queues the
    # calls while the GPU works through the measurements.
    while handle.graph_stats["captures"] == 0 and calls < 20000:
        outs = handle.run(inputs)
        calls += 1
    for _ in range(3):
        outs = handle.run(inputs)            # replays
    out = outs[0].numpy()
    print("STATS " + json.dumps(dict(handle.graph_stats, calls=calls)))
else:
    handle = aotirt.load(os.path.join(folder, "model.pt2"))
    with handle.capture(inputs, warmup=1) as graph:
        for _ in range(3):
            outs = graph.replay()
        out = outs[0].numpy()
np.save({out!r}, out)
print("CALLS OK")
"""


def run_tuned(tmp_path, mode, cache=None):
    """The program in `mode` with the tuning on, the choices' file under
    `cache` (a fresh folder by default) and the debug log; (the tuning's
    'measured' lines, the choices' file's lines, the program's stdout, its
    output)."""
    folder, _meta = model_folder(MODEL, "cuda")
    cache, out = cache or tmp_path / f"cache-{mode}", tmp_path / f"out-{mode}.npy"
    code = PROGRAM.format(tests=TESTS, folder=folder, mode=mode, out=str(out))
    proc = run_python(code, env={"AOTIRT_CUDNN_TUNE": "1", "AOTIRT_CACHE": str(cache), "AOTIRT_LOG": "debug"})
    assert proc.returncode == 0 and "CALLS OK" in proc.stdout, proc.stdout + proc.stderr[-4000:]
    measured = [ln for ln in proc.stderr.splitlines() if re.search(r"cuDNN tuning measured \d+ engines", ln)]
    # The cache folder also holds the unpacked packages (its pt2/ folder);
    # the tuning's choices are the files at its top.
    records = [ln for path in cache.iterdir() if path.is_file() for ln in path.read_text().splitlines()] \
        if cache.exists() else []
    return measured, records, proc.stdout, np.load(out)


def assert_matches_torch(out):
    folder, _meta = model_folder(MODEL, "cuda")
    meta = read_meta(folder)
    expected = np.load(os.path.join(folder, "expected0.npy"))   # torch eager's output, saved at compile time
    assert relative_error(out, expected) <= bound(meta, 0), relative_error(out, expected)


@pytest.fixture(scope="module")
def eager_tuning(tmp_path_factory):
    """An eager process's tuning: its choices' folder and how many shapes it measured."""
    folder = tmp_path_factory.mktemp("eager")
    measured, records, _, out = run_tuned(folder, "eager")
    assert measured and len(records) == len(measured), (measured, records)
    assert_matches_torch(out)
    return folder / "cache-eager", len(measured)


def test_automatic_graphs_capture_once_the_measurements_are_done(tmp_path, eager_tuning):
    _, shapes = eager_tuning
    measured, records, stdout, out = run_tuned(tmp_path, "auto")
    assert len(measured) == shapes and len(records) == shapes, "\n".join(measured)
    stats = json.loads(next(ln for ln in stdout.splitlines() if ln.startswith("STATS "))[len("STATS "):])
    assert stats["enabled"] and stats["captures"] >= 1 and stats["hits"] >= 3, stats
    # The calls before the capture all ran eagerly, the 2 of any signature and those awaiting the measurements.
    assert stats["eager_runs"] == stats["calls"] - 1 >= 2, stats
    assert_matches_torch(out)


def test_a_later_process_captures_the_recorded_choices_at_once(tmp_path, eager_tuning):
    cache, shapes = eager_tuning
    before = sorted(path.read_text() for path in cache.iterdir() if path.is_file())
    measured, records, _, out = run_tuned(tmp_path, "capture", cache=cache)
    assert measured == [] and len(records) == shapes, measured   # built from the record: nothing measured
    assert sorted(path.read_text() for path in cache.iterdir() if path.is_file()) == before
    assert_matches_torch(out)
