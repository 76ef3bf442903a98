"""Real AOTInductor libraries, compiled by torch (in another process), run by
aotirt in this process, which never imports torch.

tests/aoti/build.py compiles tests/aoti/zoo.py's models with
aot_inductor.link_libtorch=False and keeps the libraries and torch's eager
outputs in a cache folder (.cache/aoti, ignored by git); a later run takes
them as they are. Compiling needs a Python with torch: AOTIRT_TORCH_PYTHON,
this interpreter if it has torch, or .venv-torch (make torch-venv).
Without one these tests skip, saying so.

Tolerances (relative error ‖out − ref‖ / ‖ref‖ against torch eager): float32
1e-4 (Triton and cuBLAS sum in other orders than eager; both are full fp32),
float16 and bfloat16 1e-2 (their own rounding); integer and bool outputs
exactly.
"""

import fcntl
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import aotirt
from support.helpers import REPO

sys.path.insert(0, os.path.join(REPO, "tests", "aoti"))
from zoo_index import torch_python  # noqa: E402

CACHE = os.environ.get("AOTIRT_AOTI_CACHE", os.path.join(REPO, ".cache", "aoti"))
BUILD = os.path.join(REPO, "tests", "aoti", "build.py")
MODELS = ["mlp", "transformer_f32", "transformer_bf16", "conv_block", "two_outputs", "strided_view",
          "int_ops", "mlp_default_gemm", "mlp_f16", "mlp_blob", "sort_ops"]
TOLERANCE = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-2}

_roots = {}


def build(device, only=None):
    """Compiles `device`'s models (those named in `only`, comma-separated,
    or all), keeping what is built already; returns their cache folder."""
    python = torch_python()
    if python is None:
        pytest.skip("no Python with torch to compile AOTInductor models "
                    "(set AOTIRT_TORCH_PYTHON, or run make torch-venv)")
    # One build at a time: pytest-xdist's workers each ask, and two builds
    # of one model would write one folder at once. A later one finds the
    # models built and takes them as they are.
    os.makedirs(CACHE, exist_ok=True)
    with open(os.path.join(CACHE, f".build-{device}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        proc = subprocess.run([python, BUILD, "--device", device, "--cache", CACHE, "--jobs", "8"]
                              + (["--only", only] if only else []), capture_output=True, text=True, timeout=3000)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("cache: ")]
    if not lines:
        pytest.fail(f"building the {device} models failed:\n{proc.stdout}\n{proc.stderr[-4000:]}")
    return lines[-1].split()[1]


def partial_zoo():
    """AOTIRT_ZOO_ONLY's model names (scripts/gpu-check.sh's partial check), or []."""
    return [name for name in os.environ.get("AOTIRT_ZOO_ONLY", "").split(",") if name]


def compiled(device):
    """The cache folder of `device`'s models, compiling what is missing
    (in a partial check, its zoo models alone)."""
    if device not in _roots:
        _roots[device] = build(device, ",".join(partial_zoo()) or None)
    return _roots[device]


def model_folder(name, device):
    folder = os.path.join(compiled(device), name)
    meta_path = os.path.join(folder, "meta.json")
    if not os.path.exists(meta_path) and partial_zoo() and name not in partial_zoo():
        # A partial check built its zoo models alone; a test outside the zoo
        # (tests/python, tests/runtime) still reads its own model: built now.
        folder = os.path.join(build(device, name), name)
        meta_path = os.path.join(folder, "meta.json")
    if not os.path.exists(meta_path):
        log = os.path.join(CACHE, f"{name}.{device}.log")
        text = open(log).read()[-4000:] if os.path.exists(log) else \
            "(no log: not built yet; tests/aoti/build.py prints why)"
        pytest.fail(f"{name} did not compile for {device}:\n{text}")
    with open(meta_path) as f:
        return folder, json.load(f)


def to_float(array, dtype):
    if dtype == "bfloat16":
        return (array.astype(np.uint32) << 16).view(np.float32)
    return array


def inputs_of(folder, meta, device):
    arrays = [np.load(os.path.join(folder, f"input{i}.npy")) for i in range(len(meta["inputs"]))]
    return [aotirt.asarray(a, device=device, dtype=d if d == "bfloat16" else None)
            for a, d in zip(arrays, meta["inputs"])]


def output_array(tensor, dtype):
    if dtype == "bfloat16":
        return aotirt.copy_to_host(tensor, out=np.empty(tensor.shape, np.uint16))
    return tensor.numpy()


def assert_matches(actual, expected, dtype, name):
    if dtype in TOLERANCE:
        a, e = to_float(actual, dtype).astype(np.float64), to_float(expected, dtype).astype(np.float64)
        assert np.all(np.isfinite(a)), name
        error = np.linalg.norm(a - e) / max(np.linalg.norm(e), 1e-30)
        assert error < TOLERANCE[dtype], (name, error)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=name)


def check_model(name, device):
    folder, meta = model_folder(name, device)
    handle = aotirt.load(os.path.join(folder, "model.pt2"), device=device)
    with handle:
        assert handle.num_inputs == len(meta["inputs"]) and handle.num_outputs == len(meta["outputs"])
        outputs = handle.run(inputs_of(folder, meta, device))
        for i, (out, dtype) in enumerate(zip(outputs, meta["outputs"])):
            assert out.device == (device if device == "cpu" else "cuda:0")
            expected = np.load(os.path.join(folder, f"expected{i}.npy"))
            assert out.shape == expected.shape, (name, i)
            assert_matches(output_array(out, dtype), expected, dtype, f"{name} output {i}")
            itemsize = np.dtype("uint16" if dtype == "bfloat16" else dtype).itemsize
            assert tuple(s // itemsize for s in out.strides) == tuple(meta["output_strides"][i]), (name, i)
    return meta


@pytest.mark.parametrize("name", ["mlp", "two_outputs", "strided_view", "int_ops", "conv_block",
                                  "transformer_f32", "mlp_blob", "sort_ops"])
def test_cpu_models_match_torch(name):
    check_model(name, "cpu")


@pytest.mark.gpu
@pytest.mark.parametrize("name", MODELS)
def test_gpu_models_match_torch(name):
    meta = check_model(name, "cuda")
    assert meta["configs"]["aot_inductor.link_libtorch"] is False


@pytest.mark.gpu
def test_two_aoti_models_chained_on_the_shared_stream():
    folder, meta = model_folder("transformer_f32", "cuda")
    package = os.path.join(folder, "model.pt2")
    with aotirt.load(package) as first, aotirt.load(package) as second:
        assert first.stream == second.stream == aotirt.Stream.shared(0)
        (y,) = first.run(inputs_of(folder, meta, "cuda:0"))
        (z,) = second.run([y])
        result = z.numpy()                  # the one copy
    assert_matches(result, np.load(os.path.join(folder, "expected_twice.npy")), "float32", "chained")


def test_this_process_never_imported_torch():
    assert "torch" not in sys.modules
