"""A model's constants by name: the C API of runtime/constants.h, thinly.

Module order: cimports _errors, _dtypes and _tensor; _handle cimports it.
What the values are made of (numpy arrays, safetensors files, another
handle's weights) is decided in plain Python (aotirt/weights.py).
"""

from libc.stdlib cimport free, malloc

from aotirt._capi cimport (
    aotirt_constant_info, aotirt_handle, aotirt_handle_constant_info, aotirt_handle_constant_value,
    aotirt_handle_num_constants, aotirt_handle_swap_constants, aotirt_handle_update_constants, aotirt_status,
    aotirt_tensor,
)
from aotirt._dtypes cimport dtype_name
from aotirt._errors cimport check
from aotirt._tensor cimport Tensor, wrap_tensor

KINDS = {0: "unknown", 1: "parameter", 2: "buffer", 3: "tensor constant", 4: "folded"}


cdef list constant_rows(aotirt_handle* h):
    """(name, fqn, dtype name, shape or None, nbytes, kind, from_folded,
    aotirt_owned) per constant, in the library's order."""
    cdef aotirt_constant_info info
    cdef size_t i
    rows = []
    for i in range(aotirt_handle_num_constants(h)):
        check(aotirt_handle_constant_info(h, i, &info))
        shape = None if info.ndim < 0 else tuple(info.sizes[d] for d in range(info.ndim))
        rows.append((info.name.decode("utf-8", "replace"), info.fqn.decode("utf-8", "replace") or None,
                     dtype_name(info.dtype) if info.dtype >= 0 else None, shape, info.nbytes,
                     KINDS.get(info.kind, "unknown"), bool(info.from_folded), bool(info.aotirt_owned)))
    return rows


cdef int update_constants(aotirt_handle* h, list prepared, bint inactive) except -1:
    cdef size_t n = len(prepared)
    cdef const char** keys = <const char**>malloc(max(n, 1) * sizeof(char*))
    cdef aotirt_tensor** values = <aotirt_tensor**>malloc(max(n, 1) * sizeof(aotirt_tensor*))
    cdef int* share = <int*>malloc(max(n, 1) * sizeof(int))
    cdef list encoded = [(<str>key).encode("utf-8") for key, _value, _share in prepared]
    cdef size_t i
    cdef Tensor value
    cdef aotirt_status status
    try:
        if keys is NULL or values is NULL or share is NULL:
            raise MemoryError()
        for i in range(n):
            keys[i] = <bytes>encoded[i]
            value = <Tensor?>prepared[i][1]
            values[i] = value._t
            share[i] = 1 if prepared[i][2] else 0
        with nogil:
            status = aotirt_handle_update_constants(h, keys, values, share, n, 1 if inactive else 0)
        check(status)
    finally:
        free(keys)
        free(values)
        free(share)
    return 0


cdef object constant_value(aotirt_handle* h, size_t i):
    cdef aotirt_tensor* t = NULL
    check(aotirt_handle_constant_value(h, i, &t))
    return wrap_tensor(t)


cdef int swap_constants(aotirt_handle* h) except -1:
    cdef aotirt_status status
    with nogil:
        status = aotirt_handle_swap_constants(h)
    check(status)
    return 0
