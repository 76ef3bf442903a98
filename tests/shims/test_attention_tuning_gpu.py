"""cuDNN tuning of float16/bfloat16 attention (AOTIRT_CUDNN_TUNE=1 and wide,
cuda_src/shims/libs/cudnn_tuning.h) on the GPU, each run in a fresh process
(the switch is read once): the attention shims' cuDNN plans are tuned as
convolutions' are. How many configurations cuDNN lists or accepts for an
attention graph is cuDNN's to say (a key with one measures nothing), so
what is checked is what holds whatever it says: every call's result matches
float64 numpy within the dtype's tolerance, measured and unmeasured; a key
measured records its choice, which a second process builds alone without
measuring; the wide mode's plans say what they built to measure; and the
host never waits."""

import os
import re

import pytest

from support.gpu_shim_tests import IMPORT_PATHS
from support.helpers import run_python
from support.waits import waits_when_tuned

pytestmark = pytest.mark.gpu

# Three keys, as the ops benchmark's attention rows have them: float16, a
# causal bfloat16 one of head size 128, and bfloat16 grouped-query heads.
# Each runs three times with its result read back (the copy routine's
# wait), so that a later call finds the measurement done.
PROGRAM = IMPORT_PATHS + """
import numpy as np
from support import attention_ref as ref
from support.attention_shims import cudnn, inputs
from support.shims import read
rng = np.random.default_rng(0)
for name, dtype, sizes, causal in (("f16", "float16", (2, 8, 128, 128, 64, 64, 8), False),
                                   ("bf16-causal", "bfloat16", (1, 8, 256, 256, 128, 128, 8), True),
                                   ("bf16-gqa", "bfloat16", (2, 8, 128, 128, 64, 64, 2), False)):
    B, H, L, S, E, Ev, Hk = sizes
    (q, qr), (k, kr), (v, vr) = inputs(rng, dtype, B, H, L, S, E, Ev, Hk)
    want = ref.sdpa(qr, kr, vr, causal="top_left" if causal else None)[0]
    for call in range(3):
        error = ref.relative_error(read(cudnn(q, k, v, causal=causal).ok().out), want)
        assert error < 2e-2, (name, call, error)
print("CALLS OK")
"""
KEYS = 3


def run(**env):
    proc = run_python(PROGRAM, env={"AOTIRT_LOG": "debug", **env})
    assert proc.returncode == 0 and "CALLS OK" in proc.stdout, proc.stdout + proc.stderr
    return [line for line in proc.stderr.splitlines() if line.startswith("aotirt: attention: cuDNN")]


@pytest.mark.parametrize("mode", ["1", "wide"])
def test_tuned_attention_records_what_it_measured_and_builds_it_from_the_record(tmp_path, mode):
    cache = tmp_path / "cache"
    log = run(AOTIRT_CUDNN_TUNE=mode, AOTIRT_CACHE=str(cache))
    plans = [line for line in log if "cuDNN plan " in line]
    assert len(plans) == KEYS, "\n".join(log)
    # The wide mode's plan line: "tuning, wide: the heuristics' N configurations
    # and A of T one knob away that cuDNN accepted; B built to measure".
    wide = [re.search(r"tuning, wide: the heuristics' (\d+) configurations and (\d+) of (\d+) one knob away", line)
            for line in plans]
    if mode == "wide":
        assert all(wide), "\n".join(plans)
        assert all(int(m.group(2)) <= int(m.group(3)) for m in wide), "\n".join(plans)
    else:
        assert not any(wide), "\n".join(plans)
    measured = [line for line in log if "cuDNN tuning measured" in line]
    assert len(measured) <= KEYS, "\n".join(log)
    records = []
    for name in os.listdir(cache) if cache.exists() else []:
        records += (cache / name).read_text().splitlines()
    assert len(records) == len(measured), (records, log)

    again = run(AOTIRT_CUDNN_TUNE=mode, AOTIRT_CACHE=str(cache))
    assert not any("tuning measured" in line or "tuning's first round" in line for line in again), "\n".join(again)
    assert sum("tuned, recorded in" in line for line in again) == len(measured), "\n".join(again)


@pytest.mark.parametrize("mode", ["1", "wide"])
def test_tuned_attention_never_waits(tmp_path, monkeypatch, mode):
    waits = waits_when_tuned(tmp_path, monkeypatch, mode, setup=f"""
        {IMPORT_PATHS}
        import numpy as np
        from support.attention_shims import cudnn, inputs
        from support.shims import read
        rng = np.random.default_rng(0)
        (q, _), (k, _), (v, _) = inputs(rng, "bfloat16", 2, 8, 128, 128, 64, 64)
    """, body="""
        for _ in range(20):          # the first measures, a later one chooses
            result = cudnn(q, k, v).ok()
        read(result.out)
    """)
    assert waits == {"cudaStreamSynchronize": 1}, waits  # the read
