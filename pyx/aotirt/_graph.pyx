"""CUDA graphs: one run of a CudaHandle captured once, replayed with one launch.

A decoder step is many small kernels, and each launch costs the host a few
microseconds; a graph replays all of them for about the cost of one. The
capture and the replays are the core's (aotirt_graph_*): this module only
converts arguments and owns the object.

Module order: cimports _errors, _tensor and _convert; _handle cimports it.
Besides CudaHandle.capture's explicit graphs, the automatic graphs' options
and counters are read here (the cache itself lives in the C++ runtime).
"""

from libc.stdlib cimport free, malloc

from aotirt._capi cimport (
    AOTIRT_DEVICE_CUDA, aotirt_graph, aotirt_graph_capture_feedback, aotirt_graph_close, aotirt_graph_free,
    aotirt_graph_input, aotirt_graph_is_closed, aotirt_graph_num_inputs, aotirt_graph_num_outputs,
    aotirt_graph_output, aotirt_graph_replay, aotirt_graph_stats, aotirt_handle, aotirt_handle_device_index,
    aotirt_handle_graph_stats, aotirt_handle_graphs_disabled_reason, aotirt_handle_stream,
    aotirt_status, aotirt_stream, aotirt_stream_release, aotirt_stream_retain, aotirt_tensor, aotirt_tensor_alias,
)
from aotirt._convert cimport INLINE_ARGS, as_input, feedback_pairs, gather_inputs
from aotirt._errors cimport check
from aotirt._tensor cimport Tensor, wrap_tensor


cdef Tensor _alias(aotirt_tensor* t):
    # A Tensor of its own over a static tensor: it stays valid (and keeps the
    # memory) after the graph is closed.
    cdef aotirt_tensor* copy = NULL
    check(aotirt_tensor_alias(t, &copy))
    return wrap_tensor(copy)


cdef class Graph:
    """One run of a :class:`CudaHandle`, captured as a CUDA graph.

    Made by :meth:`CudaHandle.capture`. ``inputs`` are the static inputs:
    device tensors at fixed addresses that the graph reads; ``outputs`` are
    the static outputs, the same Tensor objects after every replay, whose
    data each replay rewrites. Replays run on the handle's stream and never
    wait for the GPU.

    Examples
    --------
    >>> g = decoder.capture([hidden, token], feedback=[(1, 1)])
    >>> logits, next_token = g.outputs          # the results for [hidden, token]
    >>> for _ in range(steps):
    ...     g.replay()                          # next_token became token: the next step
    """

    def __init__(self, *args, **kwargs):
        raise TypeError("Graph objects come from CudaHandle.capture(example_inputs)")

    def __dealloc__(self):
        if self._g is not NULL:
            # Not a wait: launches still queued run to the end; the graph's
            # memory goes once no static output Tensor is left.
            aotirt_graph_free(self._g)
            self._g = NULL
        if self._stream is not NULL:
            aotirt_stream_release(self._stream)
            self._stream = NULL

    def replay(self, inputs=None):
        """Run the captured graph once and return :attr:`outputs`.

        Parameters
        ----------
        inputs : sequence, optional
            None (the default): the static inputs as they are (after a
            feedback copy, the last replay's outputs). Else one per input: a
            static input itself is taken as it is; anything else (a Tensor,
            a host array, a DLPack or CUDA-array-interface object) must have
            the captured dtype and shape (ValueError naming the input) and is
            copied into the static input on the handle's stream, ordered
            after its producer, without a host wait. Each is read as it is
            at the call: a static input passed at another position gives
            the value it holds now, not what this replay copies into it.

        Returns
        -------
        tuple of Tensor
            :attr:`outputs`: valid until the next replay rewrites them. Read
            them (``numpy()``), copy them or feed them to work on the handle's
            stream before replaying again.
        """
        cdef aotirt_status status
        cdef aotirt_graph* g = self._g
        if g is NULL:
            raise ValueError("this Graph was not made by CudaHandle.capture")
        if inputs is None:
            with nogil:
                status = aotirt_graph_replay(g, NULL, 0, NULL)
            check(status)
            return self.outputs
        cdef Py_ssize_t n = len(inputs)
        cdef aotirt_tensor* inline_in[INLINE_ARGS]
        cdef aotirt_tensor** c_in = inline_in
        # Tensors made from other objects for this call: alive until the
        # copies into the static inputs are queued.
        cdef list _made
        try:
            _made = gather_inputs(inputs, n, inline_in, &c_in, AOTIRT_DEVICE_CUDA, self._device_index,
                                  self._stream)
            with nogil:
                status = aotirt_graph_replay(g, c_in, n, NULL)
            check(status)
            return self.outputs
        finally:
            if c_in is not inline_in:
                free(c_in)

    def close(self):
        """Destroy the graph. Queued replays still run; nothing waits.

        :attr:`inputs` and :attr:`outputs` stay readable (they hold the last
        replay's data); replays then raise ValueError. Closing twice does
        nothing.
        """
        cdef aotirt_graph* g = self._g
        if g is NULL:
            return
        with nogil:
            check(aotirt_graph_close(g))

    @property
    def closed(self):
        return self._g is NULL or aotirt_graph_is_closed(self._g)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        if self._g is NULL:
            return "<aotirt.Graph (not captured)>"
        state = "closed" if self.closed else f"{len(self.inputs)} inputs, {len(self.outputs)} outputs"
        return f"<aotirt.Graph of {self.handle.path!r} on cuda:{self._device_index}, {state}>"


cdef Graph capture_graph(object handle, aotirt_handle* h, object example_inputs, object warmup, object feedback):
    if isinstance(warmup, bool) or not isinstance(warmup, int):
        raise TypeError(f"warmup is a number of eager runs (an int), got {type(warmup).__name__}")
    if warmup < 0 or warmup > 1_000_000:
        raise ValueError(f"warmup is a number of eager runs from 0 to 1000000, got {warmup}")
    pairs = feedback_pairs(feedback)
    cdef int device_index = aotirt_handle_device_index(h)
    cdef aotirt_stream* stream = aotirt_handle_stream(h)
    cdef list examples = [as_input(obj, i, AOTIRT_DEVICE_CUDA, device_index, stream)
                          for i, obj in enumerate(example_inputs)]
    cdef size_t n = len(examples)
    cdef size_t n_pairs = len(pairs)
    cdef aotirt_tensor** c_in = <aotirt_tensor**>malloc((n if n else 1) * sizeof(aotirt_tensor*))
    cdef size_t* c_feedback = <size_t*>malloc((2 * n_pairs if n_pairs else 1) * sizeof(size_t))
    cdef int c_warmup = warmup
    cdef aotirt_graph* g = NULL
    cdef aotirt_status status
    cdef size_t i
    try:
        if c_in is NULL or c_feedback is NULL:
            raise MemoryError()
        for i in range(n):
            c_in[i] = (<Tensor>examples[i])._t
        for i in range(n_pairs):
            c_feedback[2 * i] = pairs[i][0]
            c_feedback[2 * i + 1] = pairs[i][1]
        with nogil:
            status = aotirt_graph_capture_feedback(h, c_in, n, c_warmup, c_feedback, n_pairs, &g)
        check(status)
    finally:
        free(c_in)
        free(c_feedback)
    cdef Graph graph = Graph.__new__(Graph)
    graph._g = g
    graph.handle = handle
    graph._device_index = device_index
    graph._stream = aotirt_stream_retain(stream)
    graph.inputs = tuple(_alias(aotirt_graph_input(g, i)) for i in range(aotirt_graph_num_inputs(g)))
    graph.outputs = tuple(_alias(aotirt_graph_output(g, i)) for i in range(aotirt_graph_num_outputs(g)))
    return graph


cdef tuple auto_graph_options(object graphs, object max_graphs, object outputs):
    # Checked for every handle, graphs on or off: a wrong value is a mistake either way.
    if outputs not in ("copy", "static"):
        raise ValueError(f'outputs is "copy" or "static", got {outputs!r}')
    if isinstance(max_graphs, bool) or not isinstance(max_graphs, int):
        raise TypeError(f"max_graphs is a number of graphs (an int), got {type(max_graphs).__name__}")
    if max_graphs < 1:
        raise ValueError(f"max_graphs is 1 or more, got {max_graphs}")
    return bool(graphs), <size_t>max_graphs, outputs == "static"


cdef dict auto_graph_stats(aotirt_handle* h):
    cdef aotirt_graph_stats stats
    check(aotirt_handle_graph_stats(h, &stats))
    cdef const char* reason = aotirt_handle_graphs_disabled_reason(h)
    return {
        "enabled": bool(stats.enabled),
        "graphs": stats.graphs,
        "instances": stats.instances,
        "hits": stats.hits,
        "captures": stats.captures,
        "evictions": stats.evictions,
        "invalidations": stats.invalidations,
        "eager_runs": stats.eager_runs,
        "memory_bytes": stats.memory_bytes,
        "output_copies": stats.output_copies,
        "disabled_reason": None if reason is NULL else reason.decode("utf-8", "replace"),
    }
