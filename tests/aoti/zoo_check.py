"""What the zoo's GPU test and bench/zoo.py both ask of a compiled zoo model,
without torch: which aoti_torch_* functions its library needs that aotirt
does not implement, and how far aotirt's outputs are from torch eager's
(the test's tolerances, one definition); and a compiled model's saved
inputs, for aotirt or (torch_inputs, in a torch process) for torch's runner.
numpy and aotirt only, torch only where asked.
"""

import ctypes
import functools
import os
import tempfile
import zipfile

import numpy as np

# Relative error bounds, ‖out − ref‖ / ‖ref‖ against torch eager; integer and
# bool outputs must be equal.
TOLERANCE = {"float32": 1e-3, "float16": 2e-2, "bfloat16": 2e-2}
# Zoo models that no CUDA graph can hold, and why: they run eagerly only.
EAGER_ONLY = {"cond_branches": "torch.cond reads its predicate on the host (aoti_torch_item_bool), "
                               "which a CUDA graph cannot record"}
AOTI_DIR = "data/aotinductor/"


def read_meta(folder):
    """The model's meta.json (build.py writes it last: its inputs' dtypes, its outputs')."""
    import json

    with open(os.path.join(folder, "meta.json")) as f:
        return json.load(f)


def _saved_inputs(folder, meta):
    """(array, dtype name) of each saved input; bfloat16 is saved as its uint16 bits."""
    return [(np.load(os.path.join(folder, f"input{i}.npy")), dtype) for i, dtype in enumerate(meta["inputs"])]


def aotirt_inputs(folder, meta, stream=None):
    """The model's inputs as aotirt tensors on cuda:0 (made on `stream`, an
    aotirt.Stream, else the shared stream)."""
    import aotirt

    return [aotirt.asarray(array, device=0, stream=stream, dtype="bfloat16" if dtype == "bfloat16" else None)
            for array, dtype in _saved_inputs(folder, meta)]


def torch_inputs(folder, meta):
    """The model's inputs as torch CUDA tensors (a torch process only)."""
    import torch_runner

    return [torch_runner.from_numpy(array, dtype) for array, dtype in _saved_inputs(folder, meta)]


@functools.lru_cache(maxsize=1)
def implemented_shims():
    """The aoti_torch_* names of aotirt's shim table (include/aotirt/shim_table.h, through its C API)."""
    import aotirt

    lib = ctypes.CDLL(os.path.join(os.path.dirname(aotirt.__file__), "libaotirt.so"))
    lib.aotirt_shim_count.restype = ctypes.c_size_t
    lib.aotirt_shim_at.argtypes = [ctypes.c_size_t] + [ctypes.POINTER(ctypes.c_char_p)] * 3
    lib.aotirt_shim_at.restype = ctypes.c_int
    names = set()
    for i in range(lib.aotirt_shim_count()):
        name = ctypes.c_char_p()
        if lib.aotirt_shim_at(i, ctypes.byref(name), None, None) != 0:
            raise RuntimeError(f"aotirt_shim_at({i}) failed below aotirt_shim_count()")
        names.add(name.value.decode())
    return frozenset(names)


def _undefined(library):
    from aotirt._library import library_undefined_symbols

    return set(library_undefined_symbols(library, "aoti_torch_"))


def needed_functions(path):
    """The aoti_torch_* functions that the model library at `path` (a .so,
    or a .pt2 package: its model library) leaves undefined: those it calls."""
    if not path.endswith(".pt2"):
        return frozenset(_undefined(path))
    with zipfile.ZipFile(path) as z, tempfile.TemporaryDirectory(prefix="aotirt-zoo-check-") as scratch:
        libraries = [n for n in z.namelist() if AOTI_DIR in n and n.endswith(".so")]
        wrappers = [n for n in libraries if n.endswith(".wrapper.so")] or libraries
        if len(wrappers) != 1:
            raise ValueError(f"{path}: expected one model library under {AOTI_DIR}, found {libraries or 'none'}")
        library = os.path.join(scratch, "model.so")
        with z.open(wrappers[0]) as source, open(library, "wb") as sink:
            sink.write(source.read())
        return frozenset(_undefined(library))


def missing_functions(path):
    """Sorted names of the aoti_torch_* functions that the model library at
    `path` needs (needed_functions) and aotirt does not implement: what
    aotirt.load would refuse it for."""
    return sorted(needed_functions(path) - implemented_shims())


def to_float(array, dtype):
    """bfloat16's raw uint16 bits as float32; any other array as it is."""
    if dtype == "bfloat16":
        return (array.astype(np.uint32) << 16).view(np.float32)
    return array


def relative_error(actual, expected):
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    return float(np.linalg.norm(a - e) / max(np.linalg.norm(e), 1e-30))


def bound(meta, i):
    """Output i's bound: its dtype's tolerance, or twice the TF32 drift of
    torch's own eager (build.py's meta["tf32_drift"]) where that is more;
    0 for integer and bool outputs (they must be equal)."""
    dtype = meta["outputs"][i]
    if dtype not in TOLERANCE:
        return 0.0
    drift = (meta.get("tf32_drift") or [0.0] * len(meta["outputs"]))[i]
    return max(TOLERANCE[dtype], 2 * drift)


def output_error(actual, expected, dtype):
    """Relative error of a float output (inf where a value is not finite);
    the fraction of differing elements of an integer or bool one (inf for a
    shape that differs)."""
    if actual.shape != expected.shape:
        return float("inf")
    if dtype not in TOLERANCE:
        return float(np.mean(actual != expected)) if actual.size else 0.0
    actual, expected = to_float(actual, dtype), to_float(expected, dtype)
    if not np.all(np.isfinite(actual)):
        return float("inf")
    return relative_error(actual, expected)


def within(error, limit):
    return error == 0.0 if limit == 0.0 else error < limit


def host_outputs(tensors, meta):
    """Each output's host array (bfloat16 as its uint16 bits): one copy each."""
    import aotirt

    out = []
    for tensor, dtype in zip(tensors, meta["outputs"]):
        if dtype == "bfloat16":
            out.append(aotirt.copy_to_host(tensor, out=np.empty(tensor.shape, np.uint16)))
        else:
            out.append(tensor.numpy())
    return out


def worst_output(arrays, folder, meta):
    """(error, bound) of the output furthest from torch eager relative to its
    bound (an error over its bound first, then the largest error)."""
    if len(arrays) != len(meta["outputs"]):
        return float("inf"), 0.0
    worst = (0.0, bound(meta, 0) if meta["outputs"] else 0.0)
    for i, (actual, dtype) in enumerate(zip(arrays, meta["outputs"])):
        expected = np.load(os.path.join(folder, f"expected{i}.npy"))
        error, limit = output_error(actual, expected, dtype), bound(meta, i)
        key = (not within(error, limit), error)
        if key > (not within(*worst), worst[0]):
            worst = (error, limit)
    return worst
