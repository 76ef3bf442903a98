"""float32 attention on CUTLASS's fused kernel
(cuda_src/shims/attention/sdpa_fmha.cu): which problems it takes and which
stay on cuBLAS (AOTIRT_LOG=debug names the path, once per shape), that
each is right against float64 numpy either way, that AOTIRT_ATTENTION_FUSED=0
keeps every one on cuBLAS, and the log-sum-exp's padding.

The float32 rows of test_attention_cublas_gpu.py and
test_attention_torch_gpu.py (the shapes this kernel takes among them) run
on it too. Every test here skips, with the reason, in a build without the
CUTLASS headers (setup.py says so when it builds).
"""

import ctypes
import os
import re
import subprocess
import sys
import textwrap

import pytest

from support.gpu_shim_tests import IMPORT_PATHS, SHIMS_TESTS
from support.shims import LIB

LIB.aotirt_has_fused_attention.restype = ctypes.c_int
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not LIB.aotirt_has_fused_attention(),
                                 reason="this aotirt was built without CUTLASS's fused attention kernel "
                                        "(no CUTLASS headers at build time)")]

FUSED = "CUTLASS's fused attention kernel"

# One problem a line, each checked against float64; the log's order is the
# calls' order (a shape is logged once, on its first call).
PROBLEMS = """
{paths}
import numpy as np
import test_attention_cublas_gpu as t
from support.shims import dense, read, view
rng = np.random.default_rng(0)
# 1. contiguous, head size 64, with the log-sum-exp padded to 128 rows (+inf after row 100)
(q, qr), (k, kr), (v, vr) = t.qkv(rng, 1, 8, 8, 100, 100, 64, 64, "contiguous")
r = t.efficient(q, k, v).ok()
t.check(r, t.reference(qr, kr, vr), "1")
assert np.all(read(r.lse)[..., 100:] == np.inf)
# 2. batch-first projections, causal, head size 128
(q, qr), (k, kr), (v, vr) = t.qkv(rng, 2, 8, 8, 300, 300, 128, 128, "blhe")
t.check(t.efficient(q, k, v, causal=True).ok(), t.reference(qr, kr, vr, causal="top_left"), "2")
# 3. head size 256 (the output accumulated in memory), another key length, no log-sum-exp
(q, qr), (k, kr), (v, vr) = t.qkv(rng, 1, 4, 4, 64, 200, 256, 256, "contiguous")
t.check(t.efficient(q, k, v, lse=False).ok(), t.reference(qr, kr, vr), "3", lse=False)
# 4. flash's bottom-right causal mask over more keys than rows; its log-sum-exp is [B, H, L], L = 128
(q, qr), (k, kr), (v, vr) = t.qkv(rng, 1, 8, 8, 128, 160, 64, 64, "blhe")
t.check(t.flash(q, k, v, causal=True).ok(), t.reference(qr, kr, vr, causal="bottom_right"), "4")
# 5. grouped-query heads: cuBLAS
(q, qr), (k, kr), (v, vr) = t.qkv(rng, 1, 8, 2, 128, 128, 64, 64, "contiguous")
t.check(t.efficient(q, k, v).ok(), t.reference(qr, kr, vr), "5")
# 6. a float bias, with the log-sum-exp: cuBLAS
(q, qr), (k, kr), (v, vr) = t.qkv(rng, 1, 8, 8, 96, 96, 32, 32, "contiguous")
bias, br = dense(rng.standard_normal((96, 96)), "cuda:0", "float32")
t.check(t.efficient(q, k, v, bias=bias).ok(), t.reference(qr, kr, vr, bias=br), "6")
# 7. flash with 100 rows: its unpadded log-sum-exp is not the kernel's layout, so cuBLAS
(q, qr), (k, kr), (v, vr) = t.qkv(rng, 1, 8, 8, 100, 100, 64, 64, "blhe")
t.check(t.flash(q, k, v).ok(), t.reference(qr, kr, vr), "7")
# 8. head size 30, not a multiple of 4: cuBLAS
(q, qr), (k, kr), (v, vr) = t.qkv(rng, 1, 8, 8, 64, 64, 30, 30, "contiguous")
t.check(t.efficient(q, k, v).ok(), t.reference(qr, kr, vr), "8")
# 9. bottom-right causal with fewer keys than rows (rows that see no key): cuBLAS
(q, qr), (k, kr), (v, vr) = t.qkv(rng, 1, 8, 8, 128, 64, 64, 64, "blhe")
t.check(t.flash(q, k, v, causal=True).ok(), t.reference(qr, kr, vr, causal="bottom_right"), "9")
# 10. a float bias, one [L, S] mask for every batch and head, no log-sum-exp (as inference asks): fused
(q, qr), (k, kr), (v, vr) = t.qkv(rng, 2, 8, 8, 96, 128, 64, 64, "blhe")
bias, br = dense(rng.standard_normal((96, 128)), "cuda:0", "float32")
t.check(t.efficient(q, k, v, bias=bias, lse=False).ok(), t.reference(qr, kr, vr, bias=br), "10", lse=False)
# 11. a bias of its own for every batch and head, causal, head size 128: fused
(q, qr), (k, kr), (v, vr) = t.qkv(rng, 2, 4, 4, 200, 200, 128, 128, "contiguous")
bias, br = dense(rng.standard_normal((2, 4, 200, 200)), "cuda:0", "float32")
t.check(t.efficient(q, k, v, bias=bias, causal=True, lse=False).ok(),
        t.reference(qr, kr, vr, bias=br, causal="top_left"), "11", lse=False)
# 12. torch's own form of a mask: rows padded to 16 keys, expanded over batch and heads: fused
(q, qr), (k, kr), (v, vr) = t.qkv(rng, 2, 4, 4, 40, 50, 32, 32, "blhe")
bias, br = view(rng.standard_normal(40 * 64), (2, 4, 40, 50), (0, 0, 64, 1), 0, "cuda:0", "float32")
t.check(t.efficient(q, k, v, bias=bias, lse=False).ok(), t.reference(qr, kr, vr, bias=br), "12", lse=False)
# 13. rows whose every key a -inf bias masks: zeros, as the other paths and torch's kernel give: fused
(q, qr), (k, kr), (v, vr) = t.qkv(rng, 1, 4, 4, 70, 300, 64, 64, "contiguous")
keep = rng.random((70, 300)) > 0.5
keep[[3, 40, 69]] = False
bias, br = dense(np.where(keep, 0.0, -np.inf), "cuda:0", "float32")
r = t.efficient(q, k, v, bias=bias, lse=False).ok()
assert np.all(read(r.out)[:, :, [3, 40, 69]] == 0)
t.check(r, t.reference(qr, kr, vr, bias=br), "13", lse=False)
# 14. a bias whose rows are 8 bytes off 16 (30 keys): cuBLAS
(q, qr), (k, kr), (v, vr) = t.qkv(rng, 1, 4, 4, 20, 30, 32, 32, "contiguous")
bias, br = dense(rng.standard_normal((20, 30)), "cuda:0", "float32")
t.check(t.efficient(q, k, v, bias=bias, lse=False).ok(), t.reference(qr, kr, vr, bias=br), "14", lse=False)
print("PROBLEMS OK")
"""
# 6: a bias beside a wanted log-sum-exp stays on cuBLAS (sdpa_fmha_layout.h says why).
TAKEN = [True, True, True, True, False, False, False, False, False, True, True, True, True, False]


def run(**env):
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(PROBLEMS.format(paths=IMPORT_PATHS))],
                          capture_output=True, text=True, cwd=SHIMS_TESTS, timeout=600,
                          env={**os.environ, "AOTIRT_LOG": "debug", **env})
    assert proc.returncode == 0 and "PROBLEMS OK" in proc.stdout, proc.stdout + proc.stderr
    return [line for line in proc.stderr.splitlines() if line.startswith("aotirt debug: attention")]


def test_the_problems_it_takes_and_those_left_to_cublas():
    lines = run()
    assert len(lines) == len(TAKEN), "\n".join(lines)
    for n, (line, taken) in enumerate(zip(lines, TAKEN), 1):
        assert (FUSED in line) == taken, (n, line)
        if not taken:
            assert "cuBLAS" in line, (n, line)


def test_fused_off_keeps_every_problem_on_cublas():
    lines = run(AOTIRT_ATTENTION_FUSED="0")
    assert len(lines) == len(TAKEN) and not any(FUSED in line for line in lines), "\n".join(lines)
    assert all(re.search("cuBLAS", line) for line in lines), "\n".join(lines)
