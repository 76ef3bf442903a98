"""Hooks for aotirt's own tests: not part of the API.

Nothing in aotirt imports this module; the tests do, to reach what the
public classes do not show.

Module order: cimports _errors, _tensor and _handle.
"""

from libc.stdint cimport uintptr_t
from libc.stdlib cimport free, malloc
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec

from aotirt._capi cimport aotirt_handle_run, aotirt_status, aotirt_tensor, aotirt_tensor_free, AOTIRT_OK
from aotirt._errors cimport check
from aotirt._handle cimport AotiHandle
from aotirt._tensor cimport Tensor, wrap_tensor


def tensor_handle(Tensor tensor not None):
    """The AtenTensorHandle (``aotirt_tensor*``) behind `tensor`, as an int.

    The tests call the ``aoti_torch_*`` shims through ctypes with it. The
    handle stays owned by the Tensor: never delete it, and keep the Tensor
    alive while the handle is used.
    """
    return <uintptr_t>tensor._t


def c_runs(AotiHandle handle not None, inputs, size_t calls):
    """`calls` runs of `handle` on `inputs` (Tensors) from C, as the C
    harness makes them: each output freed when the next one comes (as Python
    does when the name is rebound). Returns (seconds, the last run's first
    output) so that a benchmark can time C dispatch in this process, beside
    Python's, taking turns with it (a second process has other caches and
    another share of the host). Nothing waits for the GPU here.
    """
    cdef size_t n = len(inputs)
    cdef size_t n_out = handle.num_outputs
    if calls == 0 or n_out == 0:
        raise ValueError("c_runs needs at least one call of a model with outputs")
    cdef aotirt_tensor** c_in = <aotirt_tensor**>malloc((n if n else 1) * sizeof(aotirt_tensor*))
    cdef aotirt_tensor** c_out = <aotirt_tensor**>malloc(n_out * sizeof(aotirt_tensor*))
    cdef aotirt_tensor** last = <aotirt_tensor**>malloc(n_out * sizeof(aotirt_tensor*))
    cdef size_t i, k, _call
    cdef aotirt_status status = AOTIRT_OK
    cdef timespec start, end
    try:
        if c_in is NULL or c_out is NULL or last is NULL:
            raise MemoryError()
        # Before anything can raise: the finally below frees what `last` holds.
        for k in range(n_out):
            last[k] = NULL
        for i in range(n):
            c_in[i] = (<Tensor?>inputs[i])._t
        with nogil:
            clock_gettime(CLOCK_MONOTONIC, &start)
            for _call in range(calls):
                status = aotirt_handle_run(handle._h, c_in, n, c_out, n_out)
                if status != AOTIRT_OK:
                    break
                for k in range(n_out):
                    aotirt_tensor_free(last[k])
                    last[k] = c_out[k]
            clock_gettime(CLOCK_MONOTONIC, &end)
        check(status)
        first = wrap_tensor(last[0])
        last[0] = NULL
        return (end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) * 1e-9, first
    finally:
        if last is not NULL:
            for k in range(n_out):
                aotirt_tensor_free(last[k])
        free(c_in)
        free(c_out)
        free(last)
