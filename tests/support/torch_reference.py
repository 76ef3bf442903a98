"""References computed by torch itself, for the tests of the convolution and
attention shims. torch runs in a process of its own (the test process never
imports torch), on a whole batch of calls at once: importing torch and
starting CUDA in it cost seconds, so a test module computes every reference
it needs in one call of `compute`, from a module-scoped fixture.

    outputs = compute([Call("conv", {"x": x, "w": w, "b": b}, {"stride": [2], "dtype": "float16"}), ...],
                      folder, device="cuda")

A Call names a torch.nn.functional op by its family: "conv" (conv1d, conv2d
or conv3d, by the input's dimensions), "conv_transpose" (conv_transpose1d,
2d or 3d) or "sdpa" (scaled_dot_product_attention). Its arrays are the
operands by the op's argument names (x, w, b; q, k, v, mask), as the values
the shim's tensors hold: floating ones become tensors of options["dtype"]
(values already rounded to it pass exactly), bool ones stay bool. Its
options are the op's keyword arguments and "dtype", "channels_last" (input
and weight in torch's channels-last memory format, as a model moved to it
has them) and "allow_tf32" (torch.backends.cudnn.allow_tf32, default True
as in torch). The arrays travel in an .npz, the calls in JSON, to
torch_reference_worker.py; `compute` returns the outputs, float64, one per
call.

The Python with torch is zoo_index.torch_python(): AOTIRT_TORCH_PYTHON, this
interpreter when it has torch, or the repository's .venv-torch. When there
is none, when it cannot import torch, or (device "cuda") when its torch sees
no GPU, the calling test skips, saying why.
"""

import json
import os
import subprocess
from dataclasses import dataclass, field

import numpy as np
import pytest

from support.torch_reference_worker import SKIP_STATUS
from zoo_index import torch_python

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_reference_worker.py")


@dataclass
class Call:
    op: str
    arrays: dict
    options: dict = field(default_factory=dict)


def _stored(array, dtype):
    """What the .npz holds of an operand: bool as it is; floating values as
    float32 (exact for float32, float16 and bfloat16 values), float64 for a
    float64 call."""
    array = np.asarray(array)
    if array.dtype == np.bool_:
        return array
    return np.ascontiguousarray(array, np.float64 if dtype == "float64" else np.float32)


def compute(calls, folder, device="cuda", python=None, timeout=900):
    """torch's outputs of `calls` on `device` ("cuda" or "cpu"), computed in
    one torch process with `folder` (a pathlib folder) for its files."""
    python = python or torch_python()
    if python is None:
        pytest.skip("no Python with torch for the torch references "
                    "(set AOTIRT_TORCH_PYTHON, or run make torch-venv)")
    arrays, described = {}, []
    for i, call in enumerate(calls):
        dtype = call.options.get("dtype", "float32")
        for name, array in call.arrays.items():
            if array is not None:
                arrays[f"{i}.{name}"] = _stored(array, dtype)
        described.append({"op": call.op, "arrays": sorted(n for n, a in call.arrays.items() if a is not None),
                          "options": call.options})
    (folder / "calls.json").write_text(json.dumps(described))
    np.savez(folder / "inputs.npz", **arrays)
    proc = subprocess.run([python, WORKER, str(folder), device], capture_output=True, text=True, timeout=timeout)
    if proc.returncode == SKIP_STATUS:
        reasons = [line for line in proc.stdout.splitlines() if line.startswith("SKIP: ")]
        pytest.skip(reasons[0][len("SKIP: "):] if reasons else f"{python} cannot compute torch references")
    if proc.returncode != 0:
        pytest.fail(f"the torch references failed ({python} {WORKER}, exit status {proc.returncode}):\n"
                    f"{proc.stdout[-2000:]}\n{proc.stderr[-6000:]}")
    with np.load(folder / "outputs.npz") as outputs:
        return [outputs[str(i)].astype(np.float64) for i in range(len(calls))]


def max_error(out, ref):
    """max |out - ref| / max |ref|: the error of the worst element, on the
    scale of the output (elements near zero are not held to a relative bound
    that rounding of larger terms cannot meet)."""
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    assert out.shape == ref.shape, (out.shape, ref.shape)
    assert np.all(np.isfinite(out)), "not finite"
    scale = np.max(np.abs(ref)) if ref.size else 0.0
    return float(np.max(np.abs(out - ref)) / (scale if scale else 1.0)) if ref.size else 0.0
