"""Inputs of real AOTInductor libraries are checked against what the library
was compiled for before it runs, naming the input.

torch's generated code checks each input's dtype, static sizes, the bounds of
its dynamic sizes, strides and device when AOTI_RUNTIME_CHECK_INPUTS is set;
aotirt sets it (unless the user did) and names the input in the error. A
wrong input used to fail deep inside a matmul shim."""

import gc
import os
import sys

import numpy as np
import pytest

import aotirt
from support.helpers import REPO, run_python

sys.path.insert(0, os.path.join(REPO, "tests", "aoti"))
from test_aoti_models import model_folder  # noqa: E402


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
    _, h, x, _ = model
    with pytest.raises(ValueError, match=r"input 0 \(arg6_1\) does not match what the model was compiled for: "
                                         r"unmatched dim value at 1, expected: 64, but got: 32; the input is "
                                         r"float32 \[8, 32\]"):
        h.run([np.ascontiguousarray(x[:, :32])])


def test_wrong_dtype_is_a_type_error(model):
    _, h, x, _ = model
    with pytest.raises(TypeError, match=r"input 0 \(arg6_1\) .*the model takes float32, got float64"):
        h.run([x.astype(np.float64)])


def test_wrong_rank_says_so(model):
    _, h, x, _ = model
    with pytest.raises(ValueError, match=r"it has 1 dimension\(s\), fewer than the model's"):
        h.run([np.ascontiguousarray(x[:, 0])])       # shape (8,): dimension 0 fits
    with pytest.raises(ValueError, match=r"input 0 \(arg6_1\)"):
        h.run([np.ascontiguousarray(x[:, None, :])])


def test_strided_view_is_refused_not_misread(model):
    _, h, x, _ = model
    wide = np.zeros((8, 128), np.float32)
    wide[:, :64] = x
    view = aotirt.asarray(wide).narrow(1, 0, 64)          # strides (128, 1): not what it was compiled for
    with pytest.raises(ValueError, match=r"unmatched stride value at 0, expected: 64, but got: 128"):
        h.run([view])


def test_failed_checks_leak_nothing_and_the_handle_runs_on(model):
    # The check fails before the model takes its input handles: aotirt frees
    # them, or each failure would keep the input's buffer alive for good.
    _, h, x, expected = model
    bad = np.ascontiguousarray(x[:, :32])
    before = sys.getrefcount(bad)
    for _ in range(20):
        with pytest.raises(ValueError):
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
        with pytest.raises(ValueError, match="dim value is too large at 0, expected to be <= 64, but got: 65"):
            h.run([big])
        # torch compiles a dynamic size for >= 2 (sizes 0 and 1 are specialised
        # away): its check refuses 1, as the exported program's constraints do.
        with pytest.raises(ValueError, match="dim value is too small at 0, expected it to be >= 2, but got: 1"):
            h.run([np.ascontiguousarray(x[:1])])


def test_static_model_refuses_another_batch():
    h, x, _ = load("mlp")
    with h, pytest.raises(ValueError, match="unmatched dim value at 0, expected: 8, but got: 3"):
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
