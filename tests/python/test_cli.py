"""`python -m aotirt`: exit codes and one-line messages."""

import os
import subprocess
import sys

import numpy as np

import aotirt
from support.helpers import assert_one_line_error, cli
from support.model_files import pt2_package


def test_info():
    proc = cli("info")
    assert proc.returncode == 0, proc.stderr
    assert "aotirt " in proc.stdout and "CUDA devices:" in proc.stdout and "add_mul" in proc.stdout
    assert "float32 attention on CUDA: " in proc.stdout


def test_info_says_why_it_sees_no_device():
    proc = subprocess.run([sys.executable, "-m", "aotirt", "info"], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, CUDA_VISIBLE_DEVICES=""))
    assert proc.returncode == 0, proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("CUDA devices:"))
    assert line.startswith("CUDA devices: 0 (cudaError"), line   # e.g. no NVIDIA driver found, no device


def test_demo_on_cuda_without_a_gpu_fails_with_the_reason():
    # It used to run on the CPU and exit 0.
    proc = subprocess.run([sys.executable, "-m", "aotirt", "demo", "--device", "cuda", "--steps", "2"],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ, CUDA_VISIBLE_DEVICES=""))
    assert_one_line_error(proc, 1, "--device cuda: no usable CUDA GPU here: cudaError")
    assert "tokens" not in proc.stdout


def test_compare_sync_on_the_cpu_explains_instead_of_a_ratio():
    # `make demo` without a GPU printed "ratio: 0.98x faster without a wait per step".
    proc = cli("demo", "--compare-sync", "--device", "cpu", "--steps", "2")
    assert proc.returncode == 0, proc.stderr
    assert "x faster" not in proc.stdout
    assert "ratio: not measured" in proc.stdout and "needs" not in proc.stderr
    assert "Run it with a CUDA GPU" in proc.stdout


def test_run_saves_outputs(tmp_path):
    rng = np.random.default_rng(0)
    files = []
    for name in "abc":
        path = tmp_path / f"{name}.npy"
        np.save(path, rng.standard_normal((4, 5)).astype(np.float32))
        files += ["--input", str(path)]
    proc = cli("run", aotirt.models.path("add_mul", "cpu"), *files, "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert "out: shape (4, 5) dtype float32" in proc.stdout
    a, b, c = (np.load(tmp_path / f"{n}.npy") for n in "abc")
    result = np.load(tmp_path / "out" / "out.npy")
    np.testing.assert_allclose(result, a * b + c, rtol=1e-6, atol=1e-6)


def test_run_missing_model(tmp_path):
    assert_one_line_error(cli("run", str(tmp_path / "nope.so")), 2, "model library not found")


def test_run_missing_input():
    assert_one_line_error(cli("run", aotirt.models.path("add_mul", "cpu"), "--input", "/no/x.npy"), 2,
                          "input file not found: /no/x.npy")


def test_run_unreadable_input(tmp_path):
    bad = tmp_path / "bad.npy"
    bad.write_text("not numpy")
    assert_one_line_error(cli("run", aotirt.models.path("add_mul", "cpu"), "--input", str(bad)), 2,
                          "cannot read", "bad.npy")


def test_run_wrong_input_count(tmp_path):
    x = tmp_path / "x.npy"
    np.save(x, np.ones(3, np.float32))
    assert_one_line_error(cli("run", aotirt.models.path("add_mul", "cpu"), "--input", str(x)), 1,
                          "ValueError", "takes 3 inputs, got 1")


def test_run_broken_library(tmp_path):
    broken = tmp_path / "broken.so"
    broken.write_bytes(b"\x7fELF" + b"\0" * 10)
    assert_one_line_error(cli("run", str(broken)), 1, "AotiError", "broken.so")


def test_bad_arguments_exit_2():
    for args in [("frobnicate",), ("demo", "--steps", "0"), ("demo", "--device", "tpu"), ()]:
        proc = cli(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "Traceback" not in proc.stderr


def test_run_with_weights_matches_the_reference(tmp_path):
    from aotirt import _layout, reference

    frames = np.random.default_rng(3).standard_normal((_layout.T, _layout.F)).astype(np.float32)
    np.save(tmp_path / "frames.npy", frames)
    proc = cli("run", aotirt.models.path("encoder", "cpu"), "--input", str(tmp_path / "frames.npy"),
               "--weights", aotirt.models.weights("encoder"), "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert f"hidden: shape ({_layout.T}, {_layout.D}) dtype float32" in proc.stdout
    hidden = np.load(tmp_path / "out" / "hidden.npy")
    expected = reference.encoder(frames)
    assert np.linalg.norm(hidden - expected) / np.linalg.norm(expected) < 1e-5


def test_run_with_a_missing_weights_file(tmp_path):
    np.save(tmp_path / "frames.npy", np.zeros((4, 4), np.float32))
    assert_one_line_error(cli("run", aotirt.models.path("encoder", "cpu"), "--input", str(tmp_path / "frames.npy"),
                              "--weights", str(tmp_path / "none.weights")), 2, "weights file not found")


def test_run_takes_a_package(tmp_path):
    # It refused .pt2 packages, which aotirt.load takes.
    from aotirt import _layout, reference

    env = dict(os.environ, AOTIRT_CACHE=str(tmp_path / "cache"))
    frames = np.random.default_rng(5).standard_normal((_layout.T, _layout.F)).astype(np.float32)
    np.save(tmp_path / "frames.npy", frames)
    with open(aotirt.models.weights("encoder"), "rb") as f:
        package = pt2_package(tmp_path / "encoder.pt2", aotirt.models.path("encoder", "cpu"), f.read())
    proc = subprocess.run([sys.executable, "-m", "aotirt", "run", package, "--input", str(tmp_path / "frames.npy"),
                           "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    hidden = np.load(tmp_path / "out" / "hidden.npy")
    expected = reference.encoder(frames)
    assert np.linalg.norm(hidden - expected) / np.linalg.norm(expected) < 1e-5
    # --weights replaces the package's own blob, and is checked as every blob is.
    short = tmp_path / "short.weights"
    short.write_bytes(b"\0" * 64)
    proc = subprocess.run([sys.executable, "-m", "aotirt", "run", package, "--input", str(tmp_path / "frames.npy"),
                           "--weights", str(short)], capture_output=True, text=True, timeout=300, env=env)
    assert_one_line_error(proc, 1, "ValueError", "the weights blob has 64 bytes")


def test_run_a_package_of_another_device_without_a_gpu(tmp_path):
    package = pt2_package(tmp_path / "cuda.pt2", aotirt.models.path("add_mul", "cuda"), device="cuda")
    proc = subprocess.run([sys.executable, "-m", "aotirt", "run", package], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, AOTIRT_CACHE=str(tmp_path / "cache"),
                                                CUDA_VISIBLE_DEVICES=""))
    assert_one_line_error(proc, 1, "CudaError", "cudaError")


def test_run_a_broken_package(tmp_path):
    bad = tmp_path / "bad.pt2"
    import zipfile

    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("m/data/aotinductor/model/x.wrapper.so", b"\x7fELF")
        z.writestr("m/data/aotinductor/model/x.wrapper_metadata.json", "[1, 2]")
    proc = subprocess.run([sys.executable, "-m", "aotirt", "run", str(bad)], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, AOTIRT_CACHE=str(tmp_path / "cache")))
    assert_one_line_error(proc, 1, "AotiError", "bad.pt2: entry", "holds a JSON list")


def test_output_names_cannot_write_outside_out():
    from aotirt.__main__ import _file_names

    assert _file_names(["hidden", "logits"], 2) == ["hidden", "logits"]
    assert _file_names(["../../etc/x", "/abs", "a/b", "", ".hidden", "ok", "ok", "x\0y"], 8) == [
        "output0", "output1", "output2", "output3", "output4", "ok", "output6", "output7"]
    assert _file_names(None, 2) == ["output0", "output1"]
