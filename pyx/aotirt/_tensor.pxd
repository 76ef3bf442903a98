from aotirt._capi cimport aotirt_tensor

cdef class Tensor:
    cdef aotirt_tensor* _t

# Wraps a tensor the caller owns (the Tensor takes it over).
cdef Tensor wrap_tensor(aotirt_tensor* t)
