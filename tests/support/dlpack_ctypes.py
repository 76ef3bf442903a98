"""The DLPack structs in ctypes, written from the standard (dlpack.h v1.0),
independently of include/aotirt/dlpack.h: the tests read and build capsules
with them to check aotirt's side of the ABI."""

import ctypes
from ctypes import (
    POINTER,
    Structure,
    c_char_p,
    c_int,
    c_int32,
    c_int64,
    c_uint8,
    c_uint16,
    c_uint32,
    c_uint64,
    c_void_p,
)

DELETER = ctypes.CFUNCTYPE(None, c_void_p)  # called with the GIL released


class DLDevice(Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(Structure):
    _fields_ = [
        ("data", c_void_p),
        ("device", DLDevice),
        ("ndim", c_int32),
        ("dtype", DLDataType),
        ("shape", POINTER(c_int64)),
        ("strides", POINTER(c_int64)),
        ("byte_offset", c_uint64),
    ]


class DLManagedTensor(Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", DELETER)]


class DLPackVersion(Structure):
    _fields_ = [("major", c_uint32), ("minor", c_uint32)]


class DLManagedTensorVersioned(Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", c_void_p),
        ("deleter", DELETER),
        ("flags", c_uint64),
        ("dl_tensor", DLTensor),
    ]


assert ctypes.sizeof(DLTensor) == 48
assert ctypes.sizeof(DLManagedTensor) == 64
assert ctypes.sizeof(DLManagedTensorVersioned) == 80
assert DLManagedTensorVersioned.dl_tensor.offset == 32

_api = ctypes.pythonapi
_api.PyCapsule_IsValid.restype = c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, c_char_p]
_api.PyCapsule_GetPointer.restype = c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, c_char_p]
_api.PyCapsule_GetName.restype = c_char_p
_api.PyCapsule_GetName.argtypes = [ctypes.py_object]
_api.PyCapsule_SetName.restype = c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, c_char_p]
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [c_void_p, c_char_p, c_void_p]

# Capsule names must outlive the capsules: these bytes live as long as the module.
NAMES = {name: name for name in (b"dltensor", b"dltensor_versioned", b"used_dltensor", b"used_dltensor_versioned")}


def capsule_name(capsule):
    return _api.PyCapsule_GetName(capsule).decode()


def managed_of(capsule):
    """The managed tensor a fresh capsule holds, as a ctypes struct."""
    name = capsule_name(capsule).encode()
    pointer = _api.PyCapsule_GetPointer(capsule, NAMES[name])
    kind = DLManagedTensorVersioned if name == b"dltensor_versioned" else DLManagedTensor
    return pointer, kind.from_address(pointer)


def take_over(capsule):
    """What a consumer does: rename the capsule, so that its destructor leaves
    the tensor alone. Returns (address, struct); the caller calls the deleter."""
    pointer, managed = managed_of(capsule)
    used = b"used_" + capsule_name(capsule).encode()
    assert _api.PyCapsule_SetName(capsule, NAMES[used]) == 0
    return pointer, managed


def new_capsule(address, name):
    """A capsule without a destructor over a struct the caller keeps alive."""
    return _api.PyCapsule_New(address, NAMES[name], None)
