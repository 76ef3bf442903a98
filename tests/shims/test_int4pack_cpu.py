"""aoti_torch_cpu__weight_int4pack_mm_cpu_tensor through ctypes, against the
dequantised product in numpy, with weights packed by support/int4pack.py's
re-implementation of torch's CPU packing, in each CPU capability's layout
(chosen through ATEN_CPU_CAPABILITY, as torch's own). Where a Python with
torch is found, torch's own packing (in a subprocess, per capability) is
checked against that re-implementation byte for byte, and torch's product
against the shim's.
"""

import ctypes
import os
import subprocess

import numpy as np
import pytest

from support.int4pack import CPU_CAPABILITIES, CPU_CAPABILITY_FLAGS, cpu_pack, cpu_runs, dequantised
from support.shims import H, dense, last_error, layout, owned, read, rounded, shim
from zoo_index import torch_python

MM = shim("aoti_torch_cpu__weight_int4pack_mm_cpu_tensor", H, H, H, H, ctypes.c_void_p)


@pytest.fixture
def capability(request, monkeypatch):
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", request.param)
    return request.param


def problem(m, n, k, group, dtype, rng):
    q = rng.integers(0, 16, (n, k))
    scales = rng.uniform(0.01, 0.1, (k // group, n))
    zeros = rng.uniform(-0.5, 0.5, (k // group, n))
    sz = rounded(np.stack([scales, zeros], axis=-1), dtype)
    x = rounded(rng.standard_normal((m, k)), dtype)
    return q, sz, x


def call(x, w, group, sz, dtype, sz_dtype=None):
    xh, _ = dense(x, dtype=dtype)
    wh, _ = dense(w)
    gh, _ = dense(np.array(group, np.int64))
    szh, _ = dense(sz, dtype=sz_dtype or dtype)
    out = H()
    status = MM(xh.ptr, wh.ptr, gh.ptr, szh.ptr, ctypes.byref(out))
    return status, owned([out])[0]


@pytest.mark.parametrize("capability", sorted(CPU_CAPABILITIES), indirect=True)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("n", [16, 48, 64, 80, 128])
def test_matches_the_dequantised_product(capability, dtype, n):
    rng = np.random.default_rng(n)
    group = 32
    q, sz, x = problem(5, n, 128, group, dtype, rng)
    status, out = call(x, cpu_pack(q, capability), group, sz, dtype)
    assert status == 0, last_error()
    assert layout(out)[:3] == ((5, n), (n, 1), dtype)
    want = x @ dequantised(q, sz, group).T
    tol = {"bfloat16": 1e-2, "float16": 2e-3, "float32": 1e-5}[dtype]
    np.testing.assert_allclose(read(out), want, rtol=tol, atol=tol * np.abs(want).max())


@pytest.mark.parametrize("capability", ["avx512"], indirect=True)
@pytest.mark.parametrize("group", [32, 64, 128, 256])
def test_groups(capability, group):
    rng = np.random.default_rng(group)
    q, sz, x = problem(3, 64, 256, group, "float32", rng)
    status, out = call(x, cpu_pack(q, capability), group, sz, "float32")
    assert status == 0, last_error()
    np.testing.assert_allclose(read(out), x @ dequantised(q, sz, group).T, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("capability", ["avx2"], indirect=True)
def test_a_layout_is_not_another(capability):
    """The layouts differ: an AVX512-packed weight read as AVX2's is wrong."""
    rng = np.random.default_rng(7)
    q, sz, x = problem(2, 64, 64, 32, "float32", rng)
    status, out = call(x, cpu_pack(q, "avx512"), 32, sz, "float32")
    assert status == 0, last_error()
    assert not np.allclose(read(out), x @ dequantised(q, sz, 32).T, rtol=1e-3)


def test_bad_arguments_are_refused():
    rng = np.random.default_rng(3)
    q, sz, x = problem(2, 32, 64, 32, "float32", rng)
    w = cpu_pack(q, "avx512")
    for group, words in [(16, "qGroupSize"), (128, "multiple of qGroupSize")]:
        status, out = call(x, w, group, sz, "float32")
        assert status != 0 and out is None and words in last_error()
    status, _ = call(x[:, :32], w, 32, sz, "float32")
    assert status != 0 and "values per row" in last_error()
    status, _ = call(x, w, 32, sz, "float32", "bfloat16")   # scales of another dtype than X's
    assert status != 0 and "qScaleAndZeros" in last_error()
    status, _ = call(x, w.astype(np.int32), 32, sz, "float32")
    assert status != 0 and "uint8" in last_error()


TORCH_SCRIPT = r"""
import sys, numpy as np, torch
d = np.load(sys.argv[1])
q = torch.from_numpy(d["q"].astype(np.int32))
packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(q, 1)
x = torch.from_numpy(d["x"]).to(torch.bfloat16)
sz = torch.from_numpy(d["sz"]).to(torch.bfloat16)
y = torch.ops.aten._weight_int4pack_mm_for_cpu(x, packed, int(d["group"]), sz)
np.savez(sys.argv[2], packed=packed.numpy(), y=y.float().numpy())
"""


@pytest.mark.parametrize("capability", sorted(CPU_CAPABILITIES), indirect=True)
def test_torch_packs_and_multiplies_the_same(capability, tmp_path):
    python = torch_python()
    if python is None:
        pytest.skip("no Python with torch (AOTIRT_TORCH_PYTHON, or make torch-venv)")
    if not cpu_runs(capability):
        # aotirt's packing in this layout is still checked above; only torch's side needs the instructions.
        pytest.skip(f"this CPU lacks {' '.join(sorted(CPU_CAPABILITY_FLAGS[capability]))}: torch forced to "
                    f"ATEN_CPU_CAPABILITY={capability} would run those instructions and die of SIGILL")
    rng = np.random.default_rng(11)
    group = 64
    q, sz, x = problem(4, 80, 128, group, "bfloat16", rng)
    np.savez(tmp_path / "in.npz", q=q, x=x.astype(np.float32), sz=sz.astype(np.float32), group=group)
    env = dict(os.environ, ATEN_CPU_CAPABILITY=capability)
    done = subprocess.run([python, "-c", TORCH_SCRIPT, str(tmp_path / "in.npz"), str(tmp_path / "out.npz")],
                          env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0 and "No module named 'torch'" in done.stderr:
        pytest.skip(f"{python} cannot import torch")
    assert done.returncode == 0, done.stderr
    torch_out = np.load(tmp_path / "out.npz")
    np.testing.assert_array_equal(torch_out["packed"], cpu_pack(q, capability))
    status, out = call(x, torch_out["packed"], group, sz, "bfloat16")
    assert status == 0, last_error()
    np.testing.assert_allclose(read(out), torch_out["y"], rtol=1e-2, atol=1e-2 * np.abs(torch_out["y"]).max())

