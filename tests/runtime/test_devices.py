"""Devices on one GPU (or none): device indices past the machine's GPUs are
clear errors, the thread's current device survives every call and every
error, Tensor.to on its own device is the tensor itself, and to or from the
host is a copy. The tests of two GPUs are in test_multigpu.py."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import aotirt
from support.devices import current_device
from support.helpers import REPO, assert_add_mul_close, random_inputs


def add_mul_path():
    return aotirt.models.path("add_mul", "cuda")


# ---- argument checks: no GPU needed ----------------------------------------

def test_to_checks_the_device_before_any_work():
    t = aotirt.asarray(np.arange(6, dtype=np.float32))
    for bad in ("gpu", "cuda:x", -1, 1.0, True, None):
        with pytest.raises(ValueError, match="device"):
            t.to(bad)


def test_to_on_its_own_device_is_the_tensor_itself():
    t = aotirt.asarray(np.arange(6, dtype=np.float32))
    assert t.to("cpu") is t
    assert t.to("cpu", stream=None) is t


def test_asarray_of_a_tensor_on_another_device_points_to_to():
    t = aotirt.asarray(np.arange(6, dtype=np.float32))
    with pytest.raises(ValueError, match=r"the tensor is on cpu, not on 0: Tensor.to\(0\) moves it"):
        aotirt.asarray(t, device=0)


def test_a_split_pipeline_takes_two_gpus_or_none():
    from aotirt.pipeline import GreedyDecoder

    with pytest.raises(ValueError, match="run on GPUs or both on the CPU"):
        GreedyDecoder("cpu", decoder_device="cuda:1")
    with pytest.raises(ValueError, match="device must be"):
        GreedyDecoder("cuda:0", decoder_device="gpu1")


def test_peer_access_is_off_before_any_copy():
    from aotirt._device import peer_access_enabled

    assert peer_access_enabled(1, 0) is False
    assert peer_access_enabled(0, 0) is False


def test_the_multigpu_marker_skips_with_a_reason_and_never_fails_for_want_of_gpus(tmp_path):
    # The conftest on a machine without GPUs (CUDA_VISIBLE_DEVICES=""), with
    # AOTIRT_REQUIRE_GPU=1: a gpu test fails for being skipped, a multigpu
    # test is skipped and says why (an error only where two GPUs exist).
    (tmp_path / "conftest.py").write_text(open(os.path.join(REPO, "tests", "conftest.py")).read())
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    gpu: x\n    multigpu: x\n")
    (tmp_path / "test_marks.py").write_text(textwrap.dedent("""
        import pytest

        @pytest.mark.gpu
        def test_one_gpu():
            pass

        @pytest.mark.gpu
        @pytest.mark.multigpu
        def test_two_gpus():
            pass
    """))
    package = os.path.dirname(os.path.dirname(os.path.abspath(aotirt.__file__)))   # where this aotirt is
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", AOTIRT_REQUIRE_GPU="1",
               PYTHONPATH=os.pathsep.join([package, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(tmp_path)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    out = proc.stdout
    assert "1 skipped, 1 error" in out, out   # the skip of a gpu test fails its setup
    assert "needs two CUDA GPUs (aotirt.device_count() is 0)" in out, out
    assert "AOTIRT_REQUIRE_GPU=1 but" in out and "test_one_gpu" in out, out


# ---- one GPU ------------------------------------------------------------------

@pytest.mark.gpu
def test_device_index_past_the_machine_is_a_clear_error():
    n = aotirt.device_count()
    message = f"CUDA device {n} does not exist \\(this machine has {n}"
    with pytest.raises(ValueError, match=message):
        aotirt.CudaHandle(add_mul_path(), device=n)
    with pytest.raises(ValueError, match=message):
        aotirt.Stream.shared(n)
    with pytest.raises(ValueError, match=message):
        aotirt.Stream.create(n)
    with pytest.raises(ValueError, match=message):
        aotirt.empty((2,), "float32", device=n)
    with pytest.raises(ValueError, match=message):
        aotirt.asarray(np.ones(2, np.float32), device=n)
    t = aotirt.asarray(np.ones(2, np.float32), device=0)
    with pytest.raises(ValueError, match=message):
        t.to(n)
    with pytest.raises(ValueError, match=message):
        aotirt.asarray(np.ones(2, np.float32)).to(f"cuda:{n}")
    assert current_device() == 0


@pytest.mark.gpu
def test_current_device_is_the_same_after_calls_that_fail():
    rng = np.random.default_rng(3)
    a, b, c = random_inputs(rng, (64,))
    with aotirt.CudaHandle(add_mul_path(), device=0) as h:
        assert current_device() == 0
        with pytest.raises(aotirt.AotiError, match="has shape"):
            h.run([a, b[:10], c])          # refused by the model itself, inside the run
        assert current_device() == 0
        with pytest.raises(aotirt.AotiError, match="add_mul takes float32"):
            h.run([a.astype(np.float64), b, c])
        assert current_device() == 0
        (out,) = h.run([a, b, c])          # and the handle still runs
        assert_add_mul_close(out.numpy(), a, b, c)
    with pytest.raises(aotirt.AotiError):
        aotirt.CudaHandle(os.path.join(REPO, "no_such_model.so"), device=0)
    assert current_device() == 0


@pytest.mark.gpu
def test_to_on_the_same_gpu_is_the_tensor_itself():
    t = aotirt.asarray(np.arange(6, dtype=np.float32), device=0)
    assert t.to(0) is t
    assert t.to("cuda:0") is t
    assert t.to("cuda") is t
    assert t.to(0, stream=aotirt.Stream.create(0)) is t   # no copy, so no stream to queue one on


@pytest.mark.gpu
def test_to_the_host_and_back_copies_contiguously():
    host = np.arange(20, dtype=np.float32).reshape(4, 5)
    on_gpu = aotirt.asarray(host, device=0)
    view = on_gpu.narrow(1, 1, 3)                      # strided: (4, 3) of rows of 5
    back = view.to("cpu")
    assert back.device == "cpu" and back.is_contiguous and back.shape == (4, 3)
    np.testing.assert_array_equal(back.numpy(), host[:, 1:4])
    strided_host = aotirt.asarray(host).narrow(1, 2, 2)
    up = strided_host.to(0)
    assert up.device == "cuda:0" and up.is_contiguous
    assert up.stream == aotirt.Stream.shared(0)
    np.testing.assert_array_equal(up.numpy(), host[:, 2:4])
    mine = aotirt.Stream.create(0)
    up = aotirt.asarray(host).to(0, stream=mine)
    assert up.stream == mine
    np.testing.assert_array_equal(up.numpy(), host)
    with pytest.raises(ValueError, match=r"to\('cpu'\) takes no stream"):
        on_gpu.to("cpu", stream=mine)


@pytest.mark.gpu
def test_a_cuda_tensor_of_the_handles_device_is_used_unchanged():
    rng = np.random.default_rng(4)
    a, b, c = random_inputs(rng, (1000,))
    ta, tb, tc = (aotirt.asarray(x, device=0) for x in (a, b, c))
    before = [(t.data_ptr, t.stream, t.device) for t in (ta, tb, tc)]
    with aotirt.CudaHandle(add_mul_path(), device=0) as h:
        (out,) = h.run([ta, tb, tc])
        assert out.device == "cuda:0" and out.stream == h.stream
        assert_add_mul_close(out.numpy(), a, b, c)
    assert [(t.data_ptr, t.stream, t.device) for t in (ta, tb, tc)] == before
    np.testing.assert_array_equal(ta.numpy(), a)
