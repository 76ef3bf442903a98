from libc.stdint cimport int32_t

# One row of the dtype table (aotirt._dtypes.DTYPES), read-only from Python.
cdef class DType:
    cdef readonly int32_t code
    cdef readonly str name
    cdef readonly Py_ssize_t itemsize
    # "bool", "signed", "unsigned" or "floating".
    cdef readonly str kind
    # The buffer-protocol format character, or None where numpy has no such
    # dtype of its own (bfloat16, the float8s: ml_dtypes has them).
    cdef readonly str format
    # The __cuda_array_interface__ typestr, or None (as for `format`).
    cdef readonly str typestr

# numpy, imported on first use: never by `import aotirt`.
cdef object numpy_module()

# The table's row of dtype `code`, or None when aotirt does not support it.
cdef DType dtype_row(int32_t code)

# The name of dtype `code` ("float32"), or None when aotirt does not support it.
cdef str dtype_name(int32_t code)

# Whether dtype `code` is a floating-point one (float16/32/64, bfloat16, float8s).
cdef bint is_floating(int32_t code) noexcept nogil

# The code of a numpy dtype, a dtype name ("float32") or a scalar type
# (np.float32); TypeError when aotirt does not support it.
cdef int32_t dtype_code_of(object dtype) except -1

# The numpy dtype of `code` (ml_dtypes' where numpy has none), cached;
# TypeError when there is none.
cdef object numpy_dtype(int32_t code)

# The code of an array whose dtype numpy has no buffer format for (an
# ml_dtypes bfloat16 or float8 array: numpy refuses to export it, "cannot
# include dtype 'E' in a buffer"), from the array's dtype name and item
# size; -1 for anything else.
cdef int32_t formatless_dtype(object array)

# A buffer's format string; "B" when the exporter gives none.
cdef str buffer_format(Py_buffer* view)

# The code of a buffer's items; TypeError naming `what` when unsupported.
cdef int32_t buffer_dtype(Py_buffer* view, str what) except -1

# The code of a __cuda_array_interface__ typestr; TypeError naming `what`
# when unsupported.
cdef int32_t typestr_dtype(object typestr, str what) except -1
