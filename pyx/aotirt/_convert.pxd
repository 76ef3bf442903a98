from aotirt._capi cimport aotirt_stream, aotirt_tensor
from aotirt._tensor cimport Tensor

# A Tensor for run input `index`: `obj` itself when it is a Tensor, else a
# new Tensor over its data (zero-copy on the CPU, uploaded on `stream` for CUDA).
cdef Tensor as_input(object obj, Py_ssize_t index, int device_type, int device_index,
                     aotirt_stream* stream)

# Runs and replays with at most this many inputs (or outputs) use arrays on
# the C stack: no allocation on the common path.
cdef enum:
    INLINE_ARGS = 16

# Sets *c_in to the n run inputs `inputs` as aotirt tensors (see as_input):
# `inline_in` (INLINE_ARGS long) when they fit, else a malloc'd array that the
# caller frees whenever *c_in is not inline_in, even when this raises (*c_in
# is set before anything can fail). Returns the Tensors made for non-Tensor
# inputs (None when there are none): the caller keeps them alive until its
# work is queued.
cdef list gather_inputs(object inputs, Py_ssize_t n, aotirt_tensor** inline_in, aotirt_tensor*** c_in,
                        int device_type, int device_index, aotirt_stream* stream)

# The (output index, input index) pairs of a graph's or a loop's feedback,
# checked (TypeError, ValueError); None is no pairs.
cdef list feedback_pairs(object feedback)
# A loop's collect: output indices, checked; None is none.
cdef list output_indices(object collect)
