"""Tensors: device or host memory with a shape, strides and dtype.

A Tensor owns one reference to a core tensor (aotirt_tensor*); everything
that makes or reads Tensors is beside this: _convert (arrays and run
arguments in), _host (host buffers, the copy back), _interop (DLPack and the
CUDA array interface).

numpy is imported only when a result needs it (dtype, numpy(), copies
without `out`), never by ``import aotirt``.

Module order: cimports _errors, _dtypes, _device, _stream, _host and _interop.
"""

from libc.stdint cimport int32_t, int64_t, uintptr_t

from aotirt._capi cimport (
    AOTIRT_DEVICE_CPU, AOTIRT_DEVICE_CUDA, aotirt_dtype_itemsize, aotirt_status, aotirt_stream,
    aotirt_stream_retain, aotirt_tensor, aotirt_tensor_copy, aotirt_tensor_data, aotirt_tensor_device_index,
    aotirt_tensor_device_type, aotirt_tensor_dtype, aotirt_tensor_free, aotirt_tensor_is_contiguous,
    aotirt_tensor_is_read_only,
    aotirt_tensor_narrow, aotirt_tensor_ndim, aotirt_tensor_numel, aotirt_tensor_order_before,
    aotirt_tensor_sizes, aotirt_tensor_stream, aotirt_tensor_strides, aotirt_tensor_to, kDLCPU, kDLCUDA,
)
from aotirt._device cimport device_name, parse_device
from aotirt._dtypes cimport dtype_name, dtype_row, numpy_dtype
from aotirt._errors cimport check
from aotirt._host cimport as_int64, copy_out
from aotirt._interop cimport consumer_stream_value, dlpack_capsule, dlpack_consumer_stream
from aotirt._stream cimport Stream, as_stream, stream_from_reference


cdef Tensor wrap_tensor(aotirt_tensor* t):
    cdef Tensor r = Tensor.__new__(Tensor)
    r._t = t
    return r


cdef list wrap_tensors(aotirt_tensor** tensors, size_t n):
    cdef list wrapped = []
    cdef size_t done = 0
    try:
        while done < n:
            t = wrap_tensor(tensors[done])
            done += 1  # tensors[done - 1] is t's now: freed with it
            wrapped.append(t)
    except BaseException:
        while done < n:
            aotirt_tensor_free(tensors[done])
            done += 1
        raise
    return wrapped


cdef class Tensor:
    """An n-dimensional array in host or CUDA memory, as models take and return.

    Not constructed directly: handles return Tensors, and :func:`asarray`
    makes one from an array. A Tensor keeps its memory (and its stream) alive
    however long it outlives the handle that made it.

    Strides are in bytes, as in numpy. A CUDA tensor belongs to the stream its
    producing work was queued on; reading it back (:meth:`numpy`,
    :func:`copy_to_host`) waits for that stream and for nothing else.
    """

    def __init__(self):
        raise TypeError("Tensors come from handles or aotirt.asarray()")

    def __dealloc__(self):
        # Frees stream-ordered (cudaFreeAsync): never waits for the GPU.
        if self._t is not NULL:
            aotirt_tensor_free(self._t)
            self._t = NULL

    @property
    def shape(self):
        cdef const int64_t* sizes = aotirt_tensor_sizes(self._t)
        return tuple([sizes[d] for d in range(aotirt_tensor_ndim(self._t))])

    @property
    def strides(self):
        """Bytes to step in each dimension (numpy's convention)."""
        cdef const int64_t* strides = aotirt_tensor_strides(self._t)
        cdef int64_t itemsize = aotirt_dtype_itemsize(aotirt_tensor_dtype(self._t))
        return tuple([strides[d] * itemsize for d in range(aotirt_tensor_ndim(self._t))])

    @property
    def ndim(self):
        return aotirt_tensor_ndim(self._t)

    @property
    def size(self):
        """Number of elements."""
        return aotirt_tensor_numel(self._t)

    @property
    def nbytes(self):
        return aotirt_tensor_numel(self._t) * aotirt_dtype_itemsize(aotirt_tensor_dtype(self._t))

    @property
    def dtype(self):
        """The numpy dtype (imports numpy on first use)."""
        return numpy_dtype(aotirt_tensor_dtype(self._t))

    @property
    def device(self):
        """``"cpu"`` or ``"cuda:N"``."""
        return device_name(aotirt_tensor_device_type(self._t), aotirt_tensor_device_index(self._t))

    @property
    def is_contiguous(self):
        return aotirt_tensor_is_contiguous(self._t)

    @property
    def data_ptr(self):
        """Address of the first element, as an int."""
        return <uintptr_t>aotirt_tensor_data(self._t)

    @property
    def stream(self):
        """The :class:`Stream` that produces this tensor, or None on the CPU."""
        cdef aotirt_stream* s = aotirt_tensor_stream(self._t)
        if s is NULL:
            return None
        return stream_from_reference(aotirt_stream_retain(s))

    def numpy(self):
        """A new numpy array with this tensor's data (waits for its stream)."""
        return copy_out(self._t, self.shape, None)

    def narrow(self, dim, start, length):
        """A view of elements ``[start, start + length)`` along `dim`.

        The view shares this tensor's memory and keeps it alive. Integers
        only (operator.index semantics); ``0 <= start <= size`` and
        ``0 <= length <= size - start``, a negative `dim` counts from the end.
        """
        cdef int64_t c_dim = as_int64(dim, "narrow: dim")
        cdef int64_t c_start = as_int64(start, "narrow: start")
        cdef int64_t c_length = as_int64(length, "narrow: length")
        cdef aotirt_tensor* out = NULL
        check(aotirt_tensor_narrow(self._t, c_dim, c_start, c_length, &out))
        return wrap_tensor(out)

    def copy_(self, Tensor src not None):
        """Copy `src` (same dtype and shape, any device) into this tensor.

        Device copies are queued on this tensor's stream, after the work that
        produces `src`: nothing waits. Only a CPU destination of a CUDA
        source waits, as every copy back to the host does. Returns self.

        Examples
        --------
        >>> tokens = aotirt.empty((16,), "int64", device=0)       # doctest: +SKIP
        >>> tokens.narrow(0, step, 1).copy_(next_token)           # doctest: +SKIP
        """
        cdef aotirt_status status
        with nogil:
            status = aotirt_tensor_copy(self._t, src._t)
        check(status)
        return self

    def to(self, device, stream=None):
        """This tensor on `device`: itself when it is there already, else a copy.

        Between two GPUs the copy is a peer copy (``cudaMemcpyPeerAsync``)
        queued on `stream`, a stream of the target device (None: its shared
        stream), after an event recorded on this tensor's stream: no host
        wait, and nothing but that event touches the source's device. Peer
        access is enabled once per pair of GPUs where the hardware allows;
        without it the driver stages the copy through host memory, still
        stream-ordered. The copy has this tensor's shape and strides and
        holds the bytes its view spans. To the host the copy waits for this
        tensor's stream (the copy routine); from the host it is an upload
        that does not wait; both give contiguous tensors.

        Parameters
        ----------
        device : "cpu", "cuda", "cuda:N" or int
            An index past the machine's GPUs raises ValueError.
        stream : Stream, object with ``__cuda_stream__``, or None
            For a GPU target: the stream the copy is queued on and the new
            tensor belongs to. Unused when no copy is made.

        Returns
        -------
        Tensor
            `self` when it is on `device` already (no copy), else a new one.

        Examples
        --------
        >>> states, = encoder.run([x])        # a handle on cuda:0       # doctest: +SKIP
        >>> decoder.run([states.to(1)])       # a handle on cuda:1       # doctest: +SKIP
        """
        cdef int32_t device_type
        cdef int32_t device_index
        device_type, device_index = parse_device(device)
        if (aotirt_tensor_device_type(self._t) == device_type and
                (device_type == AOTIRT_DEVICE_CPU or aotirt_tensor_device_index(self._t) == device_index)):
            return self
        cdef Stream keep = None
        cdef aotirt_stream* c_stream = NULL
        if stream is not None:
            if device_type == AOTIRT_DEVICE_CPU:
                raise ValueError(f"to('cpu') takes no stream (a copy to the host waits for the tensor's own "
                                 f"stream), got {stream!r}")
            keep = as_stream(stream, device_index)
            c_stream = keep.get()
        cdef aotirt_tensor* out = NULL
        cdef aotirt_status status
        with nogil:
            status = aotirt_tensor_to(self._t, device_type, device_index, c_stream, &out)
        check(status)
        return wrap_tensor(out)

    @property
    def __cuda_array_interface__(self):
        """The CUDA array interface, version 3 (CUDA tensors only).

        ``stream`` is the tensor's stream (the handle's stream, the shared
        stream, or the stream it was made on): a consumer orders its own
        stream after it. ``strides`` is None when the tensor is C-contiguous.
        A CPU tensor raises AttributeError (so that consumers do not take
        host memory for device memory), as does a bfloat16 tensor (the
        interface has no typestr for it: use DLPack).

        Examples
        --------
        >>> t = aotirt.asarray(np.ones((2, 3), np.float32), device=0)   # doctest: +SKIP
        >>> cupy.asarray(t)                                            # doctest: +SKIP
        array([[1., 1., 1.], [1., 1., 1.]], dtype=float32)
        """
        if aotirt_tensor_device_type(self._t) != AOTIRT_DEVICE_CUDA:
            raise AttributeError("a CPU tensor has no __cuda_array_interface__: its memory is host "
                                 "memory (use DLPack or numpy())")
        row = dtype_row(aotirt_tensor_dtype(self._t))
        typestr = row.typestr if row is not None else None
        if typestr is None:
            raise AttributeError(f"{dtype_name(aotirt_tensor_dtype(self._t))} tensors have no "
                                 f"__cuda_array_interface__ typestr: use DLPack (__dlpack__)")
        cdef aotirt_stream* s = aotirt_tensor_stream(self._t)
        stream = None
        if s is not NULL:
            # Never 0: the interface says 1 for the legacy default stream.
            stream = consumer_stream_value(s)
        return {
            "shape": self.shape,
            "typestr": typestr,
            "data": (<uintptr_t>aotirt_tensor_data(self._t), bool(aotirt_tensor_is_read_only(self._t))),
            "strides": None if aotirt_tensor_is_contiguous(self._t) else self.strides,
            "version": 3,
            "stream": stream,
        }

    def __dlpack_device__(self):
        """``(device_type, device_id)`` in DLPack's numbers: ``(1, 0)`` on the
        CPU (kDLCPU), ``(2, N)`` on cuda:N (kDLCUDA)."""
        if aotirt_tensor_device_type(self._t) == AOTIRT_DEVICE_CPU:
            return (kDLCPU, 0)
        return (kDLCUDA, aotirt_tensor_device_index(self._t))

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Export the tensor as a DLPack capsule, without a copy (the Python
        array API standard's protocol; consumers call it through their
        ``from_dlpack``).

        Parameters
        ----------
        stream : int or None
            For a CUDA tensor, the consumer's stream: it is made to wait, on
            the device, for the work queued so far on the tensor's stream (an
            event; the host does not wait). None is the legacy default stream
            (as the standard says), 1 the legacy default stream, 2 the
            per-thread default stream, -1 no ordering at all; 0 is refused.
            A CPU tensor takes None only.
        max_version : (int, int) or None
            The newest DLPack version the consumer reads. ``(1, 0)`` or newer
            gives a ``"dltensor_versioned"`` capsule (DLPack 1.0), anything
            else the legacy ``"dltensor"`` one.
        dl_device : (int, int) or None
            Must be None or the tensor's own ``__dlpack_device__()``.
        copy : bool or None
            None or False; aotirt does not copy here (True raises).

        Returns
        -------
        PyCapsule
            Keeps the tensor's memory (and stream) alive until the consumer
            calls its deleter, from any thread, with or without the GIL.

        Raises
        ------
        BufferError
            For a `dl_device` other than the tensor's, ``copy=True``, or a
            stream on a CPU tensor.

        Examples
        --------
        >>> t = aotirt.asarray(np.arange(4, dtype=np.float32))
        >>> np.from_dlpack(t)
        array([0., 1., 2., 3.], dtype=float32)
        >>> y = torch.from_dlpack(cuda_tensor)   # doctest: +SKIP
        """
        own = self.__dlpack_device__()
        if dl_device is not None and tuple(dl_device) != own:
            raise BufferError(f"__dlpack__: the tensor is on DLPack device {own}, not {tuple(dl_device)}; "
                              f"aotirt does not copy between devices here (copy_to_host() brings "
                              f"device data to the host)")
        if copy:
            raise BufferError("__dlpack__: copy=True is not supported: aotirt exports without a copy "
                              "(copy_to_host() makes a host copy)")
        cdef uintptr_t consumer = 0
        cdef aotirt_status status
        if own[0] == kDLCUDA:
            consumer = dlpack_consumer_stream(stream)
            if consumer != 0:
                with nogil:
                    status = aotirt_tensor_order_before(self._t, <void*>consumer)
                check(status)
        elif stream is not None:
            raise BufferError(f"__dlpack__: a CPU tensor takes stream=None, got {stream!r}")
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        return dlpack_capsule(self._t, versioned)

    def __repr__(self):
        name = dtype_name(aotirt_tensor_dtype(self._t)) or "?"
        return f"<aotirt.Tensor shape={self.shape} dtype={name} device={self.device}>"


def copy_to_host(Tensor tensor not None, out=None):
    """Copy a tensor into host memory and return it as a numpy array.

    For a CUDA tensor the copy is queued on the tensor's stream and then the
    host waits for that stream: the one place aotirt waits for the GPU.

    Parameters
    ----------
    tensor : Tensor
    out : writable C-contiguous array, optional
        Destination with the tensor's shape and dtype. Pinned memory
        (:func:`empty_pinned`) makes the copy run at full bandwidth.
        Allocated with numpy when omitted.

    Returns
    -------
    numpy.ndarray
        `out` when given.
    """
    return copy_out(tensor._t, tensor.shape, out)
