"""Handles: a loaded model library, run from Python at C speed.

Module order: cimports _errors, _device, _stream, _tensor, _convert, _graph,
_library, _loop and _constants; only _testing cimports it (_handle.pxd declares the classes).
"""

import operator
import os
import warnings

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport int32_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc

from aotirt._capi cimport (
    AOTIRT_DEVICE_CPU, AOTIRT_DEVICE_CUDA, aotirt_handle, aotirt_handle_close,
    aotirt_handle_enable_graphs, aotirt_handle_free, aotirt_handle_input_name, aotirt_handle_is_closed,
    aotirt_handle_take_graph_warning,
    aotirt_handle_num_inputs, aotirt_handle_num_outputs, aotirt_handle_open, aotirt_handle_output_name,
    aotirt_handle_run, aotirt_handle_seed, aotirt_handle_set_seed, aotirt_handle_stream,
    aotirt_handle_update_constants_from_blob_sized,
    aotirt_status, aotirt_stream, aotirt_stream_retain,
    aotirt_tensor,
)
from aotirt._constants cimport constant_rows, constant_value, swap_constants, update_constants
from aotirt._convert cimport INLINE_ARGS, gather_inputs
from aotirt._device cimport device_name, parse_device
from aotirt._errors cimport check
from aotirt._graph cimport auto_graph_options, auto_graph_stats, capture_graph
from aotirt._library cimport register_wheel_dirs
from aotirt._loop cimport run_loop
from aotirt._stream cimport Stream, as_stream, stream_from_reference
from aotirt._tensor cimport wrap_tensors


cdef class AotiHandle:
    """A model library that exports the AOTInductor container C ABI.

    ``AotiHandle`` runs libraries built for the CPU; :class:`CudaHandle`
    (a subclass) adds the CUDA stream and graph capture. Loading a library
    runs its code: load only libraries you trust.

    Parameters
    ----------
    path : str or os.PathLike
        The model library (``.so``).
    device : "cpu"
        The device the library was built for.
    graphs : bool
        Accepted so that device-agnostic code (``aotirt.load(pkg,
        graphs=True)``) runs CPU packages too; it does nothing on the CPU
        (CUDA graphs record GPU work), and :attr:`graph_stats` says so.
    max_graphs : int
        As for :class:`CudaHandle` (checked, unused on the CPU).
    outputs : "copy" or "static"
        As for :class:`CudaHandle` (checked, unused on the CPU).

    Examples
    --------
    >>> h = aotirt.AotiHandle(aotirt.models.path("add_mul", "cpu"))
    >>> a = np.ones(4, np.float32)
    >>> h.run([a, a, a])[0].numpy()
    array([2., 2., 2., 2.], dtype=float32)
    """

    def __init__(self, path, device="cpu", *, graphs=False, max_graphs=8, outputs="copy"):
        if parse_device(device)[0] != AOTIRT_DEVICE_CPU:
            raise ValueError(f"AotiHandle runs CPU libraries; use CudaHandle for device {device!r}")
        options = auto_graph_options(graphs, max_graphs, outputs)
        self._open(path, AOTIRT_DEVICE_CPU, 0, NULL)
        self._enable_graphs(options)

    cdef int _enable_graphs(self, tuple options) except -1:
        graphs, max_graphs, static_outputs = options
        if graphs:
            check(aotirt_handle_enable_graphs(self._h, max_graphs, 1 if static_outputs else 0))
            self._graphs = True
        return 0

    cdef int _warn_if_graphs_went_off(self) except -1:
        # Once per handle, after the call whose capture failed (it still ran,
        # eagerly). stacklevel 1: Cython frames are not Python frames, so the
        # current Python frame is the caller's.
        cdef const char* reason = NULL
        if aotirt_handle_take_graph_warning(self._h, &reason):
            warnings.warn(f"aotirt: CUDA graphs are off for {self.path}, which now runs eagerly: "
                          f"{reason.decode('utf-8', 'replace')}", RuntimeWarning, stacklevel=1)
        return 0

    cdef int _open(self, path, int32_t device_type, int device_index, aotirt_stream* stream) except -1:
        register_wheel_dirs()
        self.path = os.fspath(path)
        cdef bytes encoded = os.fsencode(self.path)
        cdef const char* c_path = encoded
        cdef aotirt_handle* h = NULL
        cdef aotirt_status status
        with nogil:
            status = aotirt_handle_open(c_path, device_type, device_index, stream, &h)
        check(status)
        self._h = h
        self._device_type = device_type
        self._device_index = device_index
        self.num_inputs = aotirt_handle_num_inputs(h)
        self.num_outputs = aotirt_handle_num_outputs(h)
        return 0

    def __dealloc__(self):
        if self._h is not NULL:
            # Closing deletes the container; a CUDA library is unloaded only
            # once its queued kernels are done, so nothing waits here.
            aotirt_handle_free(self._h)
            self._h = NULL

    def run(self, inputs):
        """Run the model once and return its outputs.

        Parameters
        ----------
        inputs : sequence of Tensor or arrays
            One per model input. Tensors are passed without a copy; host
            arrays are wrapped (CPU) or uploaded on the handle's stream (CUDA)
            without a host wait. Strided host arrays are copied first.
            Objects with ``__dlpack__`` or ``__cuda_array_interface__``
            (torch, CuPy, Numba, cuda.core) are used where they are, without
            a copy, ordered after their producer's stream by an event (see
            :func:`aotirt.from_dlpack`); host data of that kind is uploaded.
            An aotirt Tensor of another GPU is moved to the handle's device
            by a peer copy on the handle's stream, after an event on the
            tensor's (no host wait; :meth:`Tensor.to`).

        Returns
        -------
        list of Tensor
            As soon as the work is queued; the data is there once read back.
            With ``graphs=True`` (CUDA), a replay's outputs are valid after
            later calls, as eager ones are: aliases of the static outputs of
            an instance of the graph that nobody else holds (no copy), or
            copies when the caller keeps the last calls' outputs; with
            ``outputs="static"`` the static outputs themselves, which the
            next call of the same input signature rewrites.
        """
        if self._h is NULL:
            raise ValueError("the handle failed to open")
        cdef Py_ssize_t n = len(inputs)
        if <size_t>n != self.num_inputs:
            raise ValueError(f"the model takes {self.num_inputs} inputs, got {n}")
        cdef aotirt_tensor* inline_in[INLINE_ARGS]
        cdef aotirt_tensor* inline_out[INLINE_ARGS]
        cdef aotirt_tensor** c_in = inline_in
        cdef aotirt_tensor** c_out = inline_out
        cdef size_t n_out = self.num_outputs
        if n_out > INLINE_ARGS:
            c_out = <aotirt_tensor**>malloc(n_out * sizeof(aotirt_tensor*))
        # Tensors made from host arrays for this call; they stay alive until
        # the run is queued (the model takes its own aliases).
        cdef list _made
        cdef aotirt_status status
        try:
            if c_out is NULL:
                raise MemoryError()
            _made = gather_inputs(inputs, n, inline_in, &c_in, self._device_type, self._device_index,
                                  aotirt_handle_stream(self._h))
            with nogil:
                status = aotirt_handle_run(self._h, c_in, n, c_out, n_out)
            if self._graphs:
                self._warn_if_graphs_went_off()
            check(status)
            return wrap_tensors(c_out, n_out)
        finally:
            if c_in is not inline_in:
                free(c_in)
            if c_out is not inline_out:
                free(c_out)

    def __call__(self, *inputs):
        """``handle(x, y)``: ``tuple(handle.run([x, y]))``."""
        return tuple(self.run(inputs))

    @property
    def constants(self):
        """The model's constants, as the library lists them: a list of
        :class:`aotirt.weights.Constant` (``name``, ``fqn``: the module's
        state_dict key, ``dtype``, ``shape``: None until a value is loaded,
        ``nbytes``, ``kind``, ``folded``, ``shared``)."""
        from aotirt.weights import Constant
        return [Constant(*row) for row in constant_rows(self._live())]

    def update_constants(self, mapping, *, inactive=False):
        """Replace constants by name: ``{name_or_fqn: array}``.

        Values are numpy arrays, aotirt Tensors, DLPack or CUDA array
        interface objects, or an :class:`aotirt.Weights` (whose device
        tensors several handles share without a copy). Every one is checked
        first (unknown names, folded constants, dtypes, shapes, parameters
        left out: one ValueError naming each, and nothing changes); then
        they are copied on the handle's stream, without a host wait.
        Buffers and tensor constants left out keep their values.

        With ``inactive=True`` they fill the second buffer, which
        :meth:`swap_constants` makes active: a server updates weights while
        it serves, and a swap takes effect between two runs.
        """
        from aotirt.weights import naming_source, prepare_update
        with naming_source(mapping):
            update_constants(self._live(), prepare_update(self, mapping), inactive)

    def swap_constants(self):
        """Make the buffer filled by ``update_constants(..., inactive=True)``
        active: runs queued before use the old weights, later runs the new."""
        swap_constants(self._live())

    @property
    def weights(self):
        """The active constants as an :class:`aotirt.Weights` that another
        handle of the model takes without a copy (``update_constants`` or
        ``aotirt.load(..., share_weights_with=handle)``); only weights that
        aotirt loaded by name (the library's own cannot outlive it)."""
        from aotirt.weights import weights_of
        return weights_of(self)

    def _constant_value(self, i):
        return constant_value(self._live(), i)

    cdef aotirt_handle* _live(self) except NULL:
        if self._h is NULL:
            raise ValueError("the handle failed to open")
        return self._h

    def loop(self, inputs, steps, *, feedback=(), collect=()):
        """Run `steps` steps of the model on the device, without a host wait.

        Step 0 runs on `inputs`; each later step on the same inputs, but for
        those fed back: for each ``(i, j)`` in `feedback`, output ``i`` of a
        step is input ``j`` of the next, on the device. The outputs named in
        `collect` are stacked, step by step, into device tensors. With
        ``graphs=True`` (CUDA) the loop captures a graph with the feedback
        pairs (once per input signature and pairs, in the handle's graph
        cache) and each step is one replay; else each step is a run.

        Parameters
        ----------
        inputs : sequence
            One per model input, as for :meth:`run`.
        steps : int
            1 or more.
        feedback : sequence of (int, int)
            (output index, input index) pairs; the output must have the
            input's dtype and shape (ValueError naming both).
        collect : sequence of int
            Output indices to collect.

        Returns
        -------
        (list of Tensor, list of Tensor)
            ``collected``: one Tensor per index in `collect`, of shape
            ``(steps, *output_shape)`` on the handle's device (an output
            whose shape changes between steps is a ValueError); and the last
            step's outputs, valid after later calls (with ``outputs="static"``
            and graphs, the static outputs, rewritten by the next call).

        Examples
        --------
        >>> (tokens,), _ = decoder.loop([hidden, token], 16, feedback=[(1, 1)], collect=[1])
        >>> tokens.numpy()[:, 0]                     # the one host wait
        """
        if self._h is NULL:
            raise ValueError("the handle failed to open")
        try:
            return run_loop(self._h, inputs, steps, feedback, collect, self._device_type, self._device_index)
        finally:
            if self._graphs:
                self._warn_if_graphs_went_off()

    @property
    def graph_stats(self):
        """The automatic graphs' counters, a dict.

        ``enabled`` (graphs are captured and replayed), ``graphs`` (cached
        now, one per signature), ``instances`` (their captured instances:
        up to 2 per graph with ``outputs="copy"``), ``hits`` (runs and
        loops served by a cached graph), ``captures`` (instances captured),
        ``evictions`` (past ``max_graphs``), ``invalidations`` (weights
        replaced), ``eager_runs`` (runs and loop steps that ran eagerly
        while graphs were on), ``output_copies`` (calls whose outputs were
        copied out of a graph's, because the caller kept the outputs of the
        last calls), ``memory_bytes`` (device memory every instance holds:
        static inputs and the graph allocations alive between launches) and
        ``disabled_reason`` (None while enabled).
        """
        if self._h is NULL:
            raise ValueError("the handle failed to open")
        return auto_graph_stats(self._h)

    def update_constants_from_blob(self, blob):
        """Load the model's weights from one blob (bytes, numpy array, ...).

        Calls the library's ``AOTInductorModelUpdateConstantsFromBlob``; the
        blob is read during the call (CUDA uploads are queued on the
        handle's stream), so it may be freed afterwards.

        That call takes a bare pointer, so the blob's size is checked first
        against what the library says it reads (torch's libraries and the
        example models say: ``AOTInductorModelContainerGetConstantsBlobSize``).

        Raises
        ------
        ValueError
            The blob's size is not the one the library reads (a truncated
            file, or another model's weights).
        AotiError
            The library takes no blob (no such function, or, for torch, its
            weights are compiled into the library), or loading failed.
        """
        if self._h is NULL:
            raise ValueError("the handle failed to open")
        cdef Py_buffer view
        PyObject_GetBuffer(blob, &view, PyBUF_SIMPLE)
        cdef aotirt_status status
        try:
            with nogil:
                status = aotirt_handle_update_constants_from_blob_sized(self._h, <const uint8_t*>view.buf,
                                                                        <size_t>view.len)
            check(status)
        finally:
            PyBuffer_Release(&view)

    def seed(self, seed=None):
        """Seed the random numbers this handle's runs draw, and return the seed.

        The model's rand, randn and randint (and the seeds Inductor draws
        for its own random kernels) come from the handle's Philox generator.
        ``seed(n)`` (0 <= n < 2**64) restarts it: the runs after it, eager
        or replayed CUDA graphs, draw the same numbers as after any other
        ``seed(n)``. ``seed()`` only returns the seed (``AOTIRT_SEED``, else
        torch's default seed, until one is set). Not torch's numbers.
        """
        if self._h is NULL:
            raise ValueError("the handle failed to open")
        cdef uint64_t value
        if seed is not None:
            seed = operator.index(seed)
            if not 0 <= seed < 2**64:
                raise ValueError(f"seed must be in [0, 2**64), got {seed}")
            value = seed
            check(aotirt_handle_set_seed(self._h, value))
        check(aotirt_handle_seed(self._h, &value))
        return value

    def close(self):
        """Delete the model container. Closing a closed handle does nothing."""
        if self._h is NULL:
            return
        with nogil:
            check(aotirt_handle_close(self._h))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def closed(self):
        return self._h is NULL or aotirt_handle_is_closed(self._h)

    @property
    def input_names(self):
        """Input names, or None when the library does not export them."""
        return self._names(True)

    @property
    def output_names(self):
        """Output names, or None when the library does not export them."""
        return self._names(False)

    cdef object _names(self, bint inputs):
        cdef size_t count = self.num_inputs if inputs else self.num_outputs
        cdef const char* name
        names = []
        for i in range(count):
            name = aotirt_handle_input_name(self._h, i) if inputs else aotirt_handle_output_name(self._h, i)
            if name is NULL:
                return None
            names.append(name.decode("utf-8", "replace"))
        return names

    @property
    def device(self):
        return device_name(self._device_type, self._device_index)

    def __repr__(self):
        state = "closed" if self.closed else f"{self.num_inputs} inputs, {self.num_outputs} outputs"
        return f"<aotirt.{type(self).__name__} {self.path!r} on {self.device}, {state}>"


cdef class CudaHandle(AotiHandle):
    """A model library built for CUDA, run on a stream without host waits.

    Parameters
    ----------
    path : str or os.PathLike
        The model library (``.so``).
    device : int or "cuda:N"
        The GPU; an index past the machine's GPUs raises ValueError. Runs
        leave the thread's current device as they found it.
    stream : Stream, another library's stream, or None
        None (the default) is the device's shared stream, which every
        CudaHandle of the device uses: their runs are ordered one after the
        other with no host wait between them. Anything
        :meth:`Stream.from_external` takes (torch, CuPy, cuda.core streams,
        cuda.bindings handles, an int address) runs the handle on that
        stream, which must outlive the handle, its outputs and the
        :class:`Stream` that wraps it (:attr:`stream`): from then on the
        stream keeps a cache of device memory, as aotirt's own streams do,
        and frees it onto the stream when the wrapper goes.
    graphs : bool
        Automatic CUDA graphs: :meth:`run` keys each call by its input
        signature (dtypes, shapes, strides, devices); the first 2 calls of a
        signature run eagerly (with the opt-in cuDNN tuning, more until its
        measurements are done, so that the graph runs the tuned choices),
        the next captures it, and later ones copy their inputs into the
        graph's static inputs on the stream and replay it (one launch). A
        library that cannot be captured runs eagerly from then on (one
        RuntimeWarning says why). :meth:`loop` replays a graph with its
        feedback pairs.
    max_graphs : int
        Graphs kept (1 or more, default 8), the least recently used dropped
        past it; replaced weights drop the graphs that read the old ones.
        :attr:`graph_stats` counts it all.
    outputs : "copy" or "static"
        What a replay returns: "copy" (default), outputs that stay valid
        after later calls, as eager ones do (aliases of one of two captured
        instances' static outputs that nobody holds, or copies of them);
        "static", the one instance's static outputs, without a copy,
        rewritten by the next call of the same signature.

    Raises
    ------
    CudaError
        When there is no usable GPU (the error carries CUDA's name, e.g.
        ``cudaErrorNoDevice``).
    """

    def __init__(self, path, device=0, stream=None, *, graphs=False, max_graphs=8, outputs="copy"):
        device_type, device_index = parse_device(device)
        if device_type != AOTIRT_DEVICE_CUDA:
            raise ValueError(f"CudaHandle runs on a GPU; use AotiHandle for device {device!r}")
        options = auto_graph_options(graphs, max_graphs, outputs)
        cdef Stream chosen = None
        if stream is not None:
            chosen = as_stream(stream, device_index)
        self._open(path, AOTIRT_DEVICE_CUDA, device_index, chosen._stream if chosen is not None else NULL)
        self._stream = stream_from_reference(aotirt_stream_retain(aotirt_handle_stream(self._h)),
                                             chosen._owner if chosen is not None else None)
        self._enable_graphs(options)

    @property
    def stream(self):
        """The :class:`Stream` this handle runs on."""
        return self._stream

    def capture(self, example_inputs, *, warmup=2, feedback=None):
        """Capture one run as a CUDA graph, to replay it with one launch.

        `example_inputs` are copied into static inputs on the device, run
        `warmup` times eagerly (lazy loading and first allocations happen
        outside the capture), then captured once on a private stream and the
        graph launched once on the handle's stream: its outputs hold what
        ``run(example_inputs)`` would give. Nothing waits for the GPU.

        Parameters
        ----------
        example_inputs : sequence
            One per model input, as for :meth:`run`: their dtypes and shapes
            are the graph's for good.
        warmup : int
            Eager runs before the capture (default 2). The graph keeps the
            cuDNN engines of its capture: with ``AOTIRT_CUDNN_TUNE``, finish
            the tuning first (three eager calls with their outputs read back).
        feedback : sequence of (int, int), optional
            (output index, input index) pairs: the graph ends by copying that
            output into that static input on the device, so that
            ``replay()`` with no inputs runs the next step of a loop (a
            greedy decoder feeds ``next_token`` back as ``token``:
            ``feedback=[(1, 1)]``).

        Returns
        -------
        Graph

        Raises
        ------
        AotiError
            When the run cannot be captured (it fails, waits for the host,
            allocates with cudaMalloc, queries an event, ...); the message
            says why, and the handle still runs eagerly.
        """
        if self._h is NULL:
            raise ValueError("the handle failed to open")
        return capture_graph(self, self._h, example_inputs, warmup, feedback)
