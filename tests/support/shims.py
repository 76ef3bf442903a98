"""Calling libaotirt.so's aoti_torch_* shims from tests, through ctypes, as a
model library would: tensors go in as AtenTensorHandles, results come back
through ret pointers and are read with the shims' own getters and copy_.
One set of declarations (LIB, shim()) serves two ways of making operands:

- view()/dense(): views made with _reinterpret_tensor over an aotirt.asarray
  1-D base, so a test can give any sizes, strides and offset; numpy's
  as_strided of the same base, with the same strides, is the reference's view.
- Space/Operand (the matmul tests): strided views of a one-dimensional numpy
  buffer, its *base*. On the CPU the handle wraps the base's memory itself
  (aoti_torch_create_tensor_from_blob), so a shim writes into the numpy base;
  on CUDA the base is uploaded once (aotirt_tensor_upload) and views of it are
  made with aoti_torch__reinterpret_tensor, so two operands of one base share
  device memory exactly as they share the numpy buffer. Results come back
  through the copy routine (aotirt_copy_to_host).

bfloat16 values travel as their uint16 bit patterns (numpy has no bfloat16).
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
I64P = ctypes.POINTER(I64)

LIB.aotirt_last_error_message.restype = ctypes.c_char_p
DTYPES = {"uint8": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "float16": 5, "float32": 6,
          "float64": 7, "bool": 11, "bfloat16": 15}
# float8 codes: not among DTYPES (tests loop over those), but named in layouts.
FLOAT8 = {"float8_e5m2": 23, "float8_e4m3fn": 24}
NAMES = {code: name for name, code in {**DTYPES, **FLOAT8}.items()}


def shim(name, *argtypes):
    f = getattr(LIB, name)
    f.restype = I32
    f.argtypes = list(argtypes)
    return f


_reinterpret = shim("aoti_torch__reinterpret_tensor", H, I64, I64P, I64P, I64, ctypes.POINTER(H))
_delete = shim("aoti_torch_delete_tensor_object", H)
_copy = shim("aoti_torch_copy_", H, H, I32)
_dim = shim("aoti_torch_get_dim", H, ctypes.POINTER(I64))
_sizes = shim("aoti_torch_get_sizes", H, ctypes.POINTER(ctypes.POINTER(I64)))
_strides = shim("aoti_torch_get_strides", H, ctypes.POINTER(ctypes.POINTER(I64)))
_dtype = shim("aoti_torch_get_dtype", H, ctypes.POINTER(I32))
_device_type = shim("aoti_torch_get_device_type", H, ctypes.POINTER(I32))
_from_blob = shim("aoti_torch_create_tensor_from_blob", P, I64, I64P, I64P, I64, I32, I32, I32, ctypes.POINTER(P))
_upload = shim("aotirt_tensor_upload", P, I64, I64P, I32, I32, P, ctypes.POINTER(P))
shim("aotirt_copy_to_host", P, P, ctypes.c_size_t)
shim("aotirt_tensor_stream", P).restype = P
shim("aotirt_stream_handle", P).restype = P
shim("aotirt_cublas_load")
for _device in ("cpu", "cuda"):
    shim(f"aoti_torch_{_device}_mm_out", P, P, P)
    shim(f"aoti_torch_{_device}_addmm_out", P, P, P, P, F64, F64)
    shim(f"aoti_torch_{_device}_bmm_out", P, P, P)


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


def view(base, shape, strides, offset=0, device="cpu", dtype=None, stream=None):
    """A tensor handle over the 1-D array `base` (uploaded to `device`, on
    `stream`: None is the shared stream) with element `shape`, `strides` and
    `offset`, and numpy's view of the same elements. `dtype` "bfloat16" takes
    float data and rounds it."""
    base = np.ascontiguousarray(base).ravel()
    if dtype == "bfloat16":
        tensor = aotirt.asarray(to_bf16_bits(base), device=device, stream=stream, dtype="bfloat16")
        values = from_bf16_bits(to_bf16_bits(base))
    else:
        base = base.astype(dtype) if dtype else base
        tensor = aotirt.asarray(base, device=device, stream=stream)
        values = base
    item = values.itemsize
    ref = np.lib.stride_tricks.as_strided(values[offset:], shape=shape, strides=[s * item for s in strides])
    return view_of(tensor, shape, strides, offset), ref.astype(np.float64)


def view_of(tensor, shape, strides, offset=0, keep=None):
    """A tensor handle viewing the aotirt Tensor `tensor` with element
    `shape`, `strides` and `offset` (aoti_torch__reinterpret_tensor); it keeps
    `keep` (by default `tensor`) alive."""
    n = len(shape)
    out = H()
    status = _reinterpret(tensor_handle(tensor), n, (I64 * n)(*shape), (I64 * n)(*strides), offset, ctypes.byref(out))
    assert status == 0, last_error()
    return Handle(out, keep=tensor if keep is None else keep)


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


# Space/Operand: operands over numpy bases (the matmul tests).

BF16 = "bfloat16"
DTYPE_CODES = {np.dtype(np.float16): 5, np.dtype(np.float32): 6, np.dtype(np.float64): 7, BF16: 15,
               np.dtype(np.int32): 3, np.dtype(np.int8): 1}
# Values are stored as: numpy dtype (bf16 as uint16 bits).
STORAGE = {BF16: np.dtype(np.uint16)}


def _int64s(values):
    return (I64 * max(len(values), 1))(*values)


def encode(values, dtype):
    """float64 values -> the stored representation of `dtype`."""
    return to_bf16_bits(values) if dtype == BF16 else np.asarray(values).astype(dtype)


def decode(stored, dtype):
    """The stored representation -> float64 values."""
    return (from_bf16_bits(stored) if dtype == BF16 else stored).astype(np.float64)


class Operand:
    """One strided view of a base buffer, with its shim tensor handle."""

    def __init__(self, space, base, shape, strides, offset, dtype):
        self.space, self.base, self.dtype = space, base, dtype
        self.shape, self.strides, self.offset = tuple(shape), tuple(strides), offset
        item = base.itemsize
        self.view = np.lib.stride_tricks.as_strided(base[offset:], shape, [s * item for s in strides])
        self.handle = space._handle(self)

    def values(self):
        """The view's current values as float64 (read back from the device for CUDA)."""
        if self.space.device == "cpu":
            return decode(self.view.copy(), self.dtype)
        host = np.empty(self.shape, self.base.dtype)
        assert LIB.aotirt_copy_to_host(self.handle, host.ctypes.data, host.nbytes) == 0, last_error()
        return decode(host, self.dtype)

    def base_values(self):
        """Every element of the base buffer as float64, as the device holds it now."""
        whole = Operand(self.space, self.base, (self.base.size,), (1,), 0, self.dtype)
        return whole.values()


class Space:
    """Operands on one device ("cpu" or "cuda"), freed by close()."""

    def __init__(self, device):
        self.device = device
        self._handles = []
        self._uploaded = {}  # id(base) -> the device tensor holding it
        self._bases = []

    def make(self, shape, strides=None, offset=0, dtype=np.float64, values=None, fill=np.nan, base=None):
        """A view of `shape` with element `strides` (default contiguous) at
        `offset` in a new base buffer, or in `base` (an earlier Operand's),
        holding `values` (float64, rounded to `dtype`); the rest of a new
        base holds `fill`."""
        if strides is None:
            strides = [int(np.prod([max(n, 1) for n in shape[d + 1:]])) for d in range(len(shape))]
        if base is None:
            # Room for negative strides before the first element.
            offset -= sum((n - 1) * s for n, s in zip(shape, strides) if n > 0 and s < 0)
            size = offset + sum((n - 1) * s for n, s in zip(shape, strides) if n > 0 and s > 0) + 1
            buffer = encode(np.full(size, fill), dtype)
        else:
            buffer = base.base
            # A CUDA base is uploaded with its first view: later values would not reach the device.
            assert values is None or id(buffer) not in self._uploaded, "set values before the base is uploaded"
        if values is not None:
            item = buffer.itemsize
            view = np.lib.stride_tricks.as_strided(buffer[offset:], shape, [s * item for s in strides])
            view[...] = encode(values, dtype)
        return Operand(self, buffer, shape, strides, offset, dtype)

    def _handle(self, operand):
        sizes, strides = _int64s(operand.shape), _int64s(operand.strides)
        out = P()
        code = DTYPE_CODES[operand.dtype if operand.dtype == BF16 else np.dtype(operand.dtype)]
        if self.device == "cpu":
            status = _from_blob(
                operand.base.ctypes.data, len(operand.shape), sizes, strides, operand.offset, code, 0, 0,
                ctypes.byref(out))
        else:
            whole = self._uploaded.get(id(operand.base))
            if whole is None:
                whole = P()
                size = _int64s([operand.base.size])
                assert _upload(operand.base.ctypes.data, 1, size, code, 0, None,
                                                ctypes.byref(whole)) == 0, last_error()
                self._uploaded[id(operand.base)] = whole
                self._handles.append(whole)
            status = _reinterpret(whole, len(operand.shape), sizes, strides, operand.offset,
                                                        ctypes.byref(out))
        assert status == 0, last_error()
        self._handles.append(out)
        self._bases.append(operand.base)  # a CPU handle borrows the memory
        return out

    def close(self):
        for h in self._handles:
            LIB.aoti_torch_delete_tensor_object(h)
        self._handles = []
        self._uploaded = {}
        self._bases = []
