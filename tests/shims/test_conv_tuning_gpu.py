"""cuDNN tuning of CUDA convolutions (AOTIRT_CUDNN_TUNE=1,
cuda_src/shims/libs/cudnn_tuning.h), on the GPU, each in a fresh process
(the switch is read once): the first call measures every engine and the
next one that finds the measurements done takes the fastest, recording it;
a second process builds the recorded engine and measures nothing; the
results are those of the heuristics' engine within the dtype's tolerance;
and the host never waits for the measuring (the wait counter)."""

import os
import re

import pytest

from support.gpu_shim_tests import IMPORT_PATHS
from support.helpers import run_python
from support.waits import count_waits, interposer_library

pytestmark = pytest.mark.gpu

# A resnet-style 3x3 convolution, channels-last as Inductor hands it, in
# float32 (TF32 allowed, torch's default) and float16; each result read back
# (the copy routine's wait), so the second call finds the measurements done.
PROGRAM = IMPORT_PATHS + """
import numpy as np
from support import conv_shims as t
from support.shims import read, view
rng = np.random.default_rng(0)
def nhwc(shape, dtype):
    n, c, h, w = shape
    return view(rng.standard_normal(n * c * h * w), shape, (h * w * c, 1, w * c, c), 0, "cuda:0", dtype)[0]
for dtype in ("float32", "float16"):
    x, w = nhwc((2, 64, 28, 28), dtype), nhwc((64, 64, 3, 3), dtype)
    for call in range(3):
        status, out = t.conv(x, w, padding=(1,))
        assert status == 0
        np.save(f"{OUT}/{dtype}-{call}.npy", read(out))
print("CALLS OK")
"""


def run(tmp_path, name, **env):
    out = tmp_path / name
    out.mkdir()
    proc = run_python(PROGRAM.replace("{OUT}", str(out)), env={"AOTIRT_LOG": "debug", **env})
    assert proc.returncode == 0 and "CALLS OK" in proc.stdout, proc.stdout + proc.stderr
    return out, [ln for ln in proc.stderr.splitlines() if "cuDNN" in ln]


def relative_error(a, b):
    import numpy as np

    return float(np.linalg.norm(a.astype(np.float64) - b) / np.linalg.norm(b))


def test_measured_then_recorded_then_built_from_the_record(tmp_path):
    import numpy as np

    cache = str(tmp_path / "cache")
    plain, plain_log = run(tmp_path, "plain")
    assert not any("tuning" in ln for ln in plain_log), plain_log

    tuned, log = run(tmp_path, "tuned", AOTIRT_CUDNN_TUNE="1", AOTIRT_CACHE=cache)
    measured = [ln for ln in log if "cuDNN tuning measured" in ln]
    assert len(measured) == 2, "\n".join(log)   # one per dtype's key, on its second call
    for line in measured:
        assert int(re.search(r"measured (\d+) engines", line).group(1)) >= 2, line
    files = os.listdir(cache)
    assert len(files) == 1 and re.fullmatch(r"cudnn-tuned-sm\d+-cudnn\d+\.tsv", files[0]), files
    assert len(open(os.path.join(cache, files[0])).read().splitlines()) == 2

    again, log = run(tmp_path, "again", AOTIRT_CUDNN_TUNE="1", AOTIRT_CACHE=cache)
    assert not any("tuning measured" in ln for ln in log), "\n".join(log)
    assert sum("tuned, recorded in" in ln for ln in log) == 2, "\n".join(log)

    for dtype, bound in (("float32", 5e-3), ("float16", 2e-2)):
        want = np.load(plain / f"{dtype}-0.npy").astype(np.float64)
        for folder in (tuned, again):
            for call in range(3):
                got = np.load(folder / f"{dtype}-{call}.npy")
                assert relative_error(got, want) < bound, (folder.name, dtype, call)


def test_tuning_never_waits(tmp_path, monkeypatch):
    monkeypatch.setenv("AOTIRT_CUDNN_TUNE", "1")
    monkeypatch.setenv("AOTIRT_CACHE", str(tmp_path / "cache"))
    counts = count_waits(interposer_library(str(tmp_path)), setup=f"""
        {IMPORT_PATHS}
        import numpy as np
        from support import conv_shims as t
        from support.shims import dense, read
        rng = np.random.default_rng(0)
        x, _ = dense(rng.standard_normal((2, 16, 14, 14)), "cuda:0", "float16")
        w, _ = dense(rng.standard_normal((32, 16, 3, 3)), "cuda:0", "float16")
    """, body="""
        for _ in range(20):          # the first measures, a later one chooses
            status, out = t.conv(x, w, padding=(1,))
            assert status == 0
        read(out)
    """)
    assert {name: n for name, n in counts.items() if n} == {"cudaStreamSynchronize": 1}, counts
