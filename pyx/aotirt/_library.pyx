"""What libaotirt knows about libraries rather than models: the shims it
implements, the ones a model library needs, and the optional libraries
(cuBLAS, cuDNN) it opens on first use.

Module order: cimports _errors only; _handle cimports it (a handle registers
the wheel folders before its model can call a cuDNN shim).
"""

import os
import sys

from aotirt._capi cimport (
    aotirt_has_fused_attention, aotirt_library_undefined_symbols, aotirt_load_optional_library,
    aotirt_set_cudnn_allow_tf32, aotirt_set_wheel_dirs, aotirt_shim_at, aotirt_shim_count,
)
from aotirt._errors cimport check


def library_undefined_symbols(path, prefix=""):
    """Names of the undefined symbols of a library that start with `prefix`.

    Read from its ELF symbol table without loading it (no code runs): what
    the library expects the process to provide, e.g. ``aoti_torch_*`` shims.
    """
    cdef bytes c_path = os.fsencode(os.fspath(path))
    cdef bytes c_prefix = prefix.encode()
    cdef const char* names = NULL
    check(aotirt_library_undefined_symbols(c_path, c_prefix, &names))
    return names.decode().split()


def shim_table():
    """The ``aoti_torch_*`` functions libaotirt implements: a list of
    ``(name, family, devices)``, from include/aotirt/shim_table.h."""
    cdef const char* name
    cdef const char* family
    cdef const char* devices
    rows = []
    for i in range(aotirt_shim_count()):
        check(aotirt_shim_at(i, &name, &family, &devices))
        rows.append((name.decode(), family.decode(), devices.decode()))
    return rows


def has_fused_attention():
    """Whether this build has CUTLASS's fused attention kernel, which float32
    attention on CUDA runs on (else cuBLAS GEMMs around a softmax)."""
    return aotirt_has_fused_attention() == 1


def load_optional_library(name):
    """Opens the optional library `name` ("cublas" or "cudnn") now, as the
    shims that need it do on their first call; returns the file loaded.

    Raises AotiError naming every file tried, and how to install it.
    """
    register_wheel_dirs()
    cdef bytes c_name = name.encode()
    cdef const char* path = NULL
    check(aotirt_load_optional_library(c_name, &path))
    return os.fsdecode(path)


def set_cudnn_allow_tf32(flag):
    """Whether float32 CUDA convolutions may use TF32 tensor cores, as
    ``torch.backends.cudnn.allow_tf32`` (True by default, and here unless
    ``AOTIRT_CUDNN_ALLOW_TF32=0``). Convolutions planned afterwards follow it.
    """
    check(aotirt_set_cudnn_allow_tf32(1 if flag else 0))


cdef bint _wheel_dirs_registered = False


cdef register_wheel_dirs():
    # The site-packages folders where the cuDNN loader looks for a pip
    # wheel's copy (nvidia/cudnn/lib/libcudnn.so.9): strings only, nothing
    # is opened or looked at until a shim needs cuDNN.
    global _wheel_dirs_registered
    if _wheel_dirs_registered:
        return
    dirs = os.pathsep.join(os.path.abspath(p) for p in sys.path if p and os.pathsep not in p)
    check(aotirt_set_wheel_dirs(os.fsencode(dirs)))
    _wheel_dirs_registered = True
