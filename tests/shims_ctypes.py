"""Calling libaotirt.so's aoti_torch_* shims from tests, through ctypes, as a
model library would: tensors go in as AtenTensorHandles, results come back
through ret pointers and are read with the shims' own getters and copy_.

Inputs are views made with _reinterpret_tensor over an uploaded 1-D base
array, so a test can give any sizes, strides and offset; numpy's as_strided
of the same base, with the same strides, is the reference's view.
"""

import ctypes
import os

import numpy as np

import aotirt
from aotirt._testing import tensor_handle

LIB = ctypes.CDLL(os.path.join(os.path.dirname(aotirt.__file__), "libaotirt.so"))
H = ctypes.c_void_p
I32, I64, F64 = ctypes.c_int32, ctypes.c_int64, ctypes.c_double
P = ctypes.c_void_p

LIB.aotirt_last_error_message.restype = ctypes.c_char_p
DTYPES = {"uint8": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "float16": 5, "float32": 6,
          "float64": 7, "bool": 11, "bfloat16": 15}
NAMES = {code: name for name, code in DTYPES.items()}


def shim(name, *argtypes):
    f = getattr(LIB, name)
    f.restype = I32
    f.argtypes = list(argtypes)
    return f


_reinterpret = shim("aoti_torch__reinterpret_tensor", H, I64, P, P, I64, ctypes.POINTER(H))
_delete = shim("aoti_torch_delete_tensor_object", H)
_copy = shim("aoti_torch_copy_", H, H, I32)
_dim = shim("aoti_torch_get_dim", H, ctypes.POINTER(I64))
_sizes = shim("aoti_torch_get_sizes", H, ctypes.POINTER(ctypes.POINTER(I64)))
_strides = shim("aoti_torch_get_strides", H, ctypes.POINTER(ctypes.POINTER(I64)))
_dtype = shim("aoti_torch_get_dtype", H, ctypes.POINTER(I32))
_device_type = shim("aoti_torch_get_device_type", H, ctypes.POINTER(I32))


def last_error():
    return LIB.aotirt_last_error_message().decode()


def to_bf16_bits(array):
    """float32 values rounded to bfloat16 (nearest, ties to even), as uint16 bits."""
    bits = np.ascontiguousarray(array, np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16_bits(bits):
    return (np.asarray(bits).astype(np.uint32) << 16).view(np.float32)


def rounded(array, dtype):
    """`array` as the values a `dtype` tensor of it holds, in float64."""
    if dtype == "bfloat16":
        return from_bf16_bits(to_bf16_bits(array)).astype(np.float64)
    return np.asarray(array).astype(dtype).astype(np.float64)


class Handle:
    """An AtenTensorHandle this test owns: deleted when collected."""

    def __init__(self, value, keep=None):
        self.value = H(value) if isinstance(value, int) else value
        self.keep = keep   # what the handle's memory came from

    def __del__(self):
        if self.value:
            _delete(self.value)
            self.value = H()

    @property
    def ptr(self):
        return self.value


def view(base, shape, strides, offset=0, device="cpu", dtype=None):
    """A tensor handle over the 1-D array `base` (uploaded to `device`) with
    element `shape`, `strides` and `offset`, and numpy's view of the same
    elements. `dtype` "bfloat16" takes float data and rounds it."""
    base = np.ascontiguousarray(base).ravel()
    if dtype == "bfloat16":
        tensor = aotirt.asarray(to_bf16_bits(base), device=device, dtype="bfloat16")
        values = from_bf16_bits(to_bf16_bits(base))
    else:
        base = base.astype(dtype) if dtype else base
        tensor = aotirt.asarray(base, device=device)
        values = base
    n = len(shape)
    out = H()
    status = _reinterpret(tensor_handle(tensor), n, (I64 * n)(*shape), (I64 * n)(*strides), offset, ctypes.byref(out))
    assert status == 0, last_error()
    item = values.itemsize
    ref = np.lib.stride_tricks.as_strided(values[offset:], shape=shape, strides=[s * item for s in strides])
    return Handle(out, keep=tensor), ref.astype(np.float64)


def dense(array, device="cpu", dtype=None):
    """A contiguous tensor handle of `array`, and its values in float64."""
    array = np.array(array, order="C")   # (np.ascontiguousarray makes 0-d arrays 1-d)
    strides = [s // array.itemsize for s in array.strides]
    return view(array, array.shape, strides, 0, device, dtype)


def layout(handle):
    """(sizes, strides in elements, dtype name, device type) of a handle."""
    h = handle.ptr if isinstance(handle, Handle) else handle
    n, sizes, strides, dtype, device = I64(), ctypes.POINTER(I64)(), ctypes.POINTER(I64)(), I32(), I32()
    assert _dim(h, ctypes.byref(n)) == 0
    assert _sizes(h, ctypes.byref(sizes)) == 0 and _strides(h, ctypes.byref(strides)) == 0
    assert _dtype(h, ctypes.byref(dtype)) == 0 and _device_type(h, ctypes.byref(device)) == 0
    return (tuple(sizes[i] for i in range(n.value)), tuple(strides[i] for i in range(n.value)),
            NAMES[dtype.value], device.value)


def read(handle):
    """The values of a handle's tensor as a numpy array (float64 for floating
    dtypes, bfloat16 included), through the shims' copy_ to a CPU tensor:
    from a CUDA tensor that is the copy routine, the one wait."""
    sizes, _strides, dtype, _device = layout(handle)
    h = handle.ptr if isinstance(handle, Handle) else handle
    host = aotirt.empty(sizes, dtype, "cpu")
    assert _copy(tensor_handle(host), h, 0) == 0, last_error()
    if dtype == "bfloat16":
        return from_bf16_bits(aotirt.copy_to_host(host, out=np.empty(sizes, np.uint16))).astype(np.float64)
    array = host.numpy()
    return array.astype(np.float64) if array.dtype.kind == "f" else array


def out_handles(n):
    """`n` empty AtenTensorHandle slots for ret pointers."""
    return [H() for _ in range(n)]


def owned(slots):
    """The handles a shim returned in `slots`, owned by the test (None for empty slots)."""
    return [Handle(s) if s else None for s in slots]
