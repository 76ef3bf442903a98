from libc.stdint cimport int32_t

from aotirt._capi cimport aotirt_stream, aotirt_tensor

cdef class Tensor:
    cdef aotirt_tensor* _t

# Wraps a tensor the caller owns (the Tensor takes it over).
cdef Tensor wrap_tensor(aotirt_tensor* t)

# A Tensor for run input `index`: `obj` itself when it is a Tensor, else a
# new Tensor over its data (zero-copy on the CPU, uploaded on `stream` for CUDA).
cdef Tensor as_input(object obj, Py_ssize_t index, int device_type, int device_index,
                     aotirt_stream* stream)

# ("cpu" | "cuda" | "cuda:N" | N) -> (device type, index)
cdef tuple parse_device(object device)

# The c10 dtype code of a numpy dtype, a name ("float32") or a scalar type.
cdef int32_t dtype_code_of(object dtype) except -1
