from libc.stdint cimport int64_t

from aotirt._capi cimport aotirt_stream, aotirt_tensor

# An integer from a user, with operator.index semantics (ints and objects with
# __index__, never a float's truncation): TypeError naming `what` otherwise,
# ValueError past int64.
cdef int64_t as_int64(object value, str what) except? -1
# A shape from a user: an integer or a sequence of them (as_int64 each), none
# negative.
cdef tuple shape_of(object shape, str what)

# A CPU tensor over the memory of a host array (buffer protocol), which it
# keeps alive; a strided array is copied first. `as_dtype` (None: the
# array's own) reinterprets the bytes as a dtype of the same item size.
# Errors name `what`.
cdef aotirt_tensor* wrap_host(object obj, str what, object as_dtype=*) except NULL

# A new device tensor with the data of a host array, uploaded on `stream`
# (NULL: the device's shared stream) without a host wait.
cdef aotirt_tensor* upload(object obj, int device_index, aotirt_stream* stream, str what,
                           object as_dtype=*) except NULL

# Copies `t` (of shape `shape`) into `out` (None: a new numpy array) and
# returns it: copy_to_host(), the one host wait for device data.
cdef object copy_out(const aotirt_tensor* t, tuple shape, object out)
