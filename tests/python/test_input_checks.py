"""Inputs of real AOTInductor libraries are checked against what the library
was compiled for before it runs, naming the input.

torch's generated code checks each input's dtype, static sizes, the bounds of
its dynamic sizes, strides and device when AOTI_RUNTIME_CHECK_INPUTS is set;
aotirt sets it (unless the user did) and names the input in the error. A
wrong input used to fail deep inside a matmul shim.

Libraries of torch < 2.12 export no AOTInductorGetLastError: their check's
reason goes to stderr only, and aotirt says (AotiError) that the library's
own input check refused the inputs, naming each input given. Which ABI a
library has is read from its exported symbols, never skipped."""

import gc
import os
import re
import sys
import zipfile

import numpy as np
import pytest

import aotirt
from support.helpers import run_python
from test_aoti_models import model_folder  # noqa: E402


def reports_reasons(name):
    """Whether `name`'s library exports AOTInductorGetLastError (torch >= 2.12)."""
    folder, _ = model_folder(name, "cpu")
    with zipfile.ZipFile(os.path.join(folder, "model.pt2")) as z:
        library = z.read(next(n for n in z.namelist() if n.endswith(".wrapper.so")))
    return b"AOTInductorGetLastError\0" in library


def refused(name, reason, given, error=ValueError):
    """pytest.raises for a bad input: `reason` (the library's own words) with
    AOTInductorGetLastError, else aotirt's AotiError naming the input `given`."""
    if reports_reasons(name):
        return pytest.raises(error, match=reason)
    return pytest.raises(aotirt.AotiError, match=r"refused its inputs before taking them: the library's own input "
                                                 r"check .*\(torch < 2\.12\) has no AOTInductorGetLastError.*"
                                                 r"input 0 \(arg6_1\) is " + re.escape(given))


def load(name):
    folder, _ = model_folder(name, "cpu")
    x = np.load(os.path.join(folder, "input0.npy"))
    expected = np.load(os.path.join(folder, "expected0.npy"))
    return aotirt.load(os.path.join(folder, "model.pt2")), x, expected


@pytest.fixture(scope="module", params=["mlp", "mlp_blob"])
def model(request):
    handle, x, expected = load(request.param)
    with handle:
        yield request.param, handle, x, expected


def test_wrong_size_names_the_input(model):
    name, h, x, _ = model
    with refused(name, r"input 0 \(arg6_1\) does not match what the model was compiled for: "
                       r"unmatched dim value at 1, expected: 64, but got: 32; the input is "
                       r"float32 \[8, 32\]", "float32 [8, 32] (strides [32, 1]) on cpu"):
        h.run([np.ascontiguousarray(x[:, :32])])


def test_wrong_dtype_is_a_type_error(model):
    name, h, x, _ = model
    with refused(name, r"input 0 \(arg6_1\) .*the model takes float32, got float64", "float64 [8, 64]", TypeError):
        h.run([x.astype(np.float64)])


def test_wrong_rank_says_so(model):
    name, h, x, _ = model
    with refused(name, r"it has 1 dimension\(s\), fewer than the model's", "float32 [8] "):
        h.run([np.ascontiguousarray(x[:, 0])])       # shape (8,): dimension 0 fits
    with refused(name, r"input 0 \(arg6_1\)", "float32 [8, 1, 64]"):
        h.run([np.ascontiguousarray(x[:, None, :])])


def test_strided_view_is_refused_not_misread(model):
    name, h, x, _ = model
    wide = np.zeros((8, 128), np.float32)
    wide[:, :64] = x
    view = aotirt.asarray(wide).narrow(1, 0, 64)          # strides (128, 1): not what it was compiled for
    with refused(name, r"unmatched stride value at 0, expected: 64, but got: 128",
                 "float32 [8, 64] (strides [128, 1])"):
        h.run([view])


def test_failed_checks_leak_nothing_and_the_handle_runs_on(model):
    # The check fails before the model takes its input handles: aotirt frees
    # them, or each failure would keep the input's buffer alive for good.
    name, h, x, expected = model
    bad = np.ascontiguousarray(x[:, :32])
    before = sys.getrefcount(bad)
    for _ in range(20):
        with refused(name, r"unmatched dim value at 1, expected: 64, but got: 32", "float32 [8, 32]"):
            h.run([bad])
    gc.collect()
    assert sys.getrefcount(bad) == before
    np.testing.assert_allclose(h.run([x])[0].numpy(), expected, rtol=1e-4, atol=1e-5)


def test_dynamic_batch_within_its_bounds():
    h, x, expected = load("mlp_blob")
    with h:
        for batch in (2, 3, 8):
            out = h.run([np.ascontiguousarray(x[:batch])])[0].numpy()
            np.testing.assert_allclose(out, expected[:batch], rtol=1e-4, atol=1e-5)
        big = np.concatenate([x] * 8 + [x[:1]])                 # 65 rows: past the bound of 64
        with refused("mlp_blob", "dim value is too large at 0, expected to be <= 64, but got: 65", "float32 [65, 64]"):
            h.run([big])
        # torch compiles a dynamic size for >= 2 (sizes 0 and 1 are specialised
        # away): its check refuses 1, as the exported program's constraints do.
        with refused("mlp_blob", "dim value is too small at 0, expected it to be >= 2, but got: 1", "float32 [1, 64]"):
            h.run([np.ascontiguousarray(x[:1])])


def test_static_model_refuses_another_batch():
    h, x, _ = load("mlp")
    with h, refused("mlp", "unmatched dim value at 0, expected: 8, but got: 3", "float32 [3, 64]"):
        h.run([np.ascontiguousarray(x[:3])])


def test_the_user_can_turn_the_checks_off():
    folder, _ = model_folder("mlp_blob", "cpu")
    proc = run_python("import aotirt, numpy as np, os\n"
                      f"h = aotirt.load({os.path.join(folder, 'model.pt2')!r})\n"
                      f"x = np.load({os.path.join(folder, 'input0.npy')!r})\n"
                      "print(h.run([np.ascontiguousarray(x[:1])])[0].shape)\n",
                      env={"AOTI_RUNTIME_CHECK_INPUTS": "0"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "(1, 32)"
