"""Device-resident loops: handle.loop runs N steps of a model in the core
(aotirt_handle_loop), outputs fed back as the next step's inputs and
collected into stacked tensors, without a host wait. This module converts
arguments and owns the results.

Module order: cimports _errors, _tensor and _convert; _handle cimports it.
"""

from libc.stdlib cimport free, malloc

from aotirt._capi cimport (
    aotirt_handle, aotirt_handle_loop, aotirt_handle_num_inputs, aotirt_handle_num_outputs, aotirt_handle_stream,
    aotirt_status, aotirt_tensor, aotirt_tensor_free,
)
from aotirt._convert cimport INLINE_ARGS, feedback_pairs, gather_inputs, output_indices
from aotirt._errors cimport check
from aotirt._tensor cimport wrap_tensors


cdef tuple run_loop(aotirt_handle* h, object inputs, object steps, object feedback, object collect,
                    int device_type, int device_index):
    if isinstance(steps, bool) or not isinstance(steps, int):
        raise TypeError(f"steps is a number of steps (an int), got {type(steps).__name__}")
    if steps < 1:
        raise ValueError(f"steps is 1 or more, got {steps}")
    pairs = feedback_pairs(feedback)
    indices = output_indices(collect)
    cdef Py_ssize_t n = len(inputs)
    cdef size_t n_in = aotirt_handle_num_inputs(h)
    if <size_t>n != n_in:
        raise ValueError(f"the model takes {n_in} inputs, got {n}")
    cdef size_t n_out = aotirt_handle_num_outputs(h)
    cdef size_t n_pairs = len(pairs)
    cdef size_t n_collect = len(indices)
    cdef size_t c_steps = steps
    cdef aotirt_tensor* inline_in[INLINE_ARGS]
    cdef aotirt_tensor** c_in = inline_in
    cdef size_t* c_feedback = <size_t*>malloc((2 * n_pairs + 1) * sizeof(size_t))
    cdef size_t* c_collect = <size_t*>malloc((n_collect + 1) * sizeof(size_t))
    cdef aotirt_tensor** c_collected = <aotirt_tensor**>malloc((n_collect + 1) * sizeof(aotirt_tensor*))
    cdef aotirt_tensor** c_out = <aotirt_tensor**>malloc((n_out + 1) * sizeof(aotirt_tensor*))
    cdef aotirt_status status
    cdef size_t i
    # Tensors made from host arrays for this call: alive until the loop is queued.
    cdef list _made
    try:
        if c_feedback is NULL or c_collect is NULL or c_collected is NULL or c_out is NULL:
            raise MemoryError()
        for i in range(n_pairs):
            c_feedback[2 * i] = pairs[i][0]
            c_feedback[2 * i + 1] = pairs[i][1]
        for i in range(n_collect):
            c_collect[i] = indices[i]
        _made = gather_inputs(inputs, n, inline_in, &c_in, device_type, device_index, aotirt_handle_stream(h))
        with nogil:
            status = aotirt_handle_loop(h, c_in, n, c_steps, c_feedback, n_pairs, c_collect, n_collect,
                                        c_collected, c_out, n_out)
        check(status)
        try:
            collected = wrap_tensors(c_collected, n_collect)
        except BaseException:
            for i in range(n_out):
                aotirt_tensor_free(c_out[i])
            raise
        return collected, wrap_tensors(c_out, n_out)
    finally:
        if c_in is not inline_in:
            free(c_in)
        free(c_feedback)
        free(c_collect)
        free(c_collected)
        free(c_out)
