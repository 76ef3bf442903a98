from aotirt._capi cimport aotirt_status

# Raises the exception that matches a failed status (with the core's message).
# Callable without the GIL: it takes the GIL only on failure.
cdef int check(aotirt_status status) except -1 nogil
