from aotirt._capi cimport aotirt_graph, aotirt_handle, aotirt_stream

cdef class Graph:
    cdef aotirt_graph* _g
    cdef object _handle      # the Python handle: its library holds the graph's kernels
    cdef aotirt_stream* _stream  # the handle's stream (a reference): uploads of host inputs
    cdef tuple _inputs
    cdef tuple _outputs
    cdef int _device_index

# Captures one run of `h`, the handle of the Python object `handle` (which the
# Graph keeps alive). The arguments are those of CudaHandle.capture.
cdef Graph capture_graph(object handle, aotirt_handle* h, object example_inputs, object warmup, object feedback)
