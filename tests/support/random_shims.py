"""aoti_torch_{cpu,cuda}_{rand,randn,randint,randint_low,randint_low_out}
through ctypes, as a model library calls them, with the default generator's
seed (aotirt_set_default_seed: shims called outside any run draw from it).
"""

import ctypes

from support.shims import DTYPES, I32, I64, LIB, H, P, last_error, owned, shim

I32P = ctypes.POINTER(I32)
_FACTORY = {}
for _d in ("cpu", "cuda"):
    _FACTORY[_d, "rand"] = shim(f"aoti_torch_{_d}_rand", P, I64, I32P, I32P, I32P, I32, I32P, P)
    _FACTORY[_d, "randn"] = shim(f"aoti_torch_{_d}_randn", P, I64, I32P, I32P, I32P, I32, I32P, P)
    _FACTORY[_d, "randint"] = shim(f"aoti_torch_{_d}_randint", I64, P, I64, I32P, I32P, I32P, I32, I32P, P)
    _FACTORY[_d, "randint_low"] = shim(f"aoti_torch_{_d}_randint_low", I64, I64, P, I64, I32P, I32P, I32P, I32,
                                       I32P, P)
    _FACTORY[_d, "randint_low_out"] = shim(f"aoti_torch_{_d}_randint_low_out", H, I64, I64, P, I64)
shim("aotirt_set_default_seed", ctypes.c_uint64)

DEVICE_TYPE = {"cpu": 0, "cuda": 1}


def seed(value):
    assert LIB.aotirt_set_default_seed(value) == 0, last_error()


def _device(device):
    return "cpu" if device == "cpu" else "cuda"


def _sizes(size):
    return (I64 * max(len(size), 1))(*size)


def call(op, size, dtype=None, device="cpu", low=None, high=None, layout=None, device_type=None):
    """(status, handle or None) of a factory shim; `dtype` a name or None (NULL)."""
    d = _device(device)
    ret = H()
    code = ctypes.byref(I32(DTYPES[dtype])) if dtype else None
    lay = ctypes.byref(I32(layout)) if layout is not None else None
    dev = ctypes.byref(I32(DEVICE_TYPE[d] if device_type is None else device_type))
    index = 0 if d == "cpu" else int(device.split(":")[1]) if ":" in device else 0
    tail = (_sizes(size), len(size), code, lay, dev, index, None, ctypes.byref(ret))
    if op == "randint":
        status = _FACTORY[d, op](high, *tail)
    elif op == "randint_low":
        status = _FACTORY[d, op](low, high, *tail)
    else:
        status = _FACTORY[d, op](*tail)
    return status, owned([ret])[0]


def draw(op, size, dtype=None, device="cpu", low=None, high=None):
    status, handle = call(op, size, dtype, device, low, high)
    assert status == 0, last_error()
    return handle


def fill_out(out, low, high, size, device="cpu"):
    """randint_low_out into `out` (a Handle); the status."""
    return _FACTORY[_device(device), "randint_low_out"](out.ptr, low, high, _sizes(size), len(size))
