from aotirt._capi cimport aotirt_graph, aotirt_handle, aotirt_stream

cdef class Graph:
    cdef aotirt_graph* _g
    # Plain fields, read-only from Python (with the docs help() shows).
    # `handle` also keeps the handle alive: its library holds the graph's kernels.
    cdef readonly object handle
    """The handle whose run was captured."""
    cdef aotirt_stream* _stream  # the handle's stream (a reference): uploads of host inputs
    cdef readonly tuple inputs
    """The static inputs (Tensors), in the model's input order."""
    cdef readonly tuple outputs
    """The static outputs (Tensors), the same objects after every replay."""
    cdef int _device_index

# Captures one run of `h`, the CUDA handle of the Python object `handle`
# (which the Graph keeps alive). The arguments are those of CudaHandle.capture.
cdef Graph capture_graph(object handle, aotirt_handle* h, object example_inputs, object warmup, object feedback)

# The automatic graphs' options, checked (graphs on or off: a wrong value is
# a mistake either way): (graphs, max_graphs, static_outputs).
cdef tuple auto_graph_options(object graphs, object max_graphs, object outputs)

# handle.graph_stats of the handle `h`: the automatic graphs' counters.
cdef dict auto_graph_stats(aotirt_handle* h)
