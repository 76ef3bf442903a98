"""Shim-level tensors for tests: numpy data placed behind AtenTensorHandles.

The matmul shims take AtenTensorHandles, which Python's aotirt.Tensor does not
expose; these helpers call libaotirt's exported C functions through ctypes
instead. Every operand is a strided view (shape, element strides, storage
offset) of a one-dimensional numpy buffer, its *base*:
- on the CPU the handle wraps the base's memory itself
  (aoti_torch_create_tensor_from_blob), so a shim writes into the numpy base;
- on CUDA the base is uploaded once (aotirt_tensor_upload) and views of it are
  made with aoti_torch__reinterpret_tensor, so two operands of one base share
  device memory exactly as they share the numpy buffer. Results come back
  through the copy routine (aotirt_copy_to_host).

bfloat16 values travel as their uint16 bit patterns (numpy has no bfloat16).
"""

import ctypes
import os

import numpy as np

import aotirt

P, I32, I64 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64
I64P = ctypes.POINTER(ctypes.c_int64)

BF16 = "bfloat16"
DTYPE_CODES = {np.dtype(np.float16): 5, np.dtype(np.float32): 6, np.dtype(np.float64): 7, BF16: 15,
               np.dtype(np.int32): 3}
# Values are stored as: numpy dtype (bf16 as uint16 bits).
STORAGE = {BF16: np.dtype(np.uint16)}


def _library():
    lib = ctypes.CDLL(os.path.join(os.path.dirname(aotirt.__file__), "libaotirt.so"))
    signatures = {
        "aoti_torch_create_tensor_from_blob": [P, I64, I64P, I64P, I64, I32, I32, I32, ctypes.POINTER(P)],
        "aoti_torch__reinterpret_tensor": [P, I64, I64P, I64P, I64, ctypes.POINTER(P)],
        "aoti_torch_delete_tensor_object": [P],
        "aotirt_tensor_upload": [P, I64, I64P, I32, I32, P, ctypes.POINTER(P)],
        "aotirt_copy_to_host": [P, P, ctypes.c_size_t],
        "aotirt_tensor_stream": [P],
        "aotirt_stream_handle": [P],
        "aotirt_cublas_load": [],
        "aoti_torch_cpu_mm_out": [P, P, P],
        "aoti_torch_cpu_addmm_out": [P, P, P, P, ctypes.c_double, ctypes.c_double],
        "aoti_torch_cpu_bmm_out": [P, P, P],
        "aoti_torch_cuda_mm_out": [P, P, P],
        "aoti_torch_cuda_addmm_out": [P, P, P, P, ctypes.c_double, ctypes.c_double],
        "aoti_torch_cuda_bmm_out": [P, P, P],
    }
    for name, argtypes in signatures.items():
        fn = getattr(lib, name)
        fn.argtypes = argtypes
        fn.restype = ctypes.c_int
    lib.aotirt_tensor_stream.restype = P
    lib.aotirt_stream_handle.restype = P
    lib.aotirt_last_error_message.restype = ctypes.c_char_p
    return lib


LIB = _library()


def last_error():
    return LIB.aotirt_last_error_message().decode()


def _int64s(values):
    return (ctypes.c_int64 * max(len(values), 1))(*values)


def to_bf16_bits(x):
    """float values -> bfloat16 bit patterns, rounded to nearest even."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16_bits(bits):
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


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
            status = LIB.aoti_torch_create_tensor_from_blob(
                operand.base.ctypes.data, len(operand.shape), sizes, strides, operand.offset, code, 0, 0,
                ctypes.byref(out))
        else:
            whole = self._uploaded.get(id(operand.base))
            if whole is None:
                whole = P()
                size = _int64s([operand.base.size])
                assert LIB.aotirt_tensor_upload(operand.base.ctypes.data, 1, size, code, 0, None,
                                                ctypes.byref(whole)) == 0, last_error()
                self._uploaded[id(operand.base)] = whole
                self._handles.append(whole)
            status = LIB.aoti_torch__reinterpret_tensor(whole, len(operand.shape), sizes, strides, operand.offset,
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
