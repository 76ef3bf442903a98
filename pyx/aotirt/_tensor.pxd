from aotirt._capi cimport aotirt_tensor

cdef class Tensor:
    cdef aotirt_tensor* _t

# Wraps a tensor the caller owns (the Tensor takes it over).
cdef Tensor wrap_tensor(aotirt_tensor* t)

# Tensors over `n` results the core handed to us (each Tensor takes its
# tensor over); should wrapping fail part way, the rest are freed.
cdef list wrap_tensors(aotirt_tensor** tensors, size_t n)
