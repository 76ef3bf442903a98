from aotirt._capi cimport aotirt_handle

# handle.constants: one tuple per constant (see _constants.pyx).
cdef list constant_rows(aotirt_handle* h)

# handle.update_constants: `prepared` is [(key, Tensor, share), ...].
cdef int update_constants(aotirt_handle* h, list prepared, bint inactive) except -1

# A Tensor aliasing constant `i`'s active value (aotirt's own only).
cdef object constant_value(aotirt_handle* h, size_t i)

# handle.swap_constants: the second buffer becomes the active one.
cdef int swap_constants(aotirt_handle* h) except -1
