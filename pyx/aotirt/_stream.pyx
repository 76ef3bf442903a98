"""CUDA streams: the per-device shared stream, owned streams, adopted ones.

Module order: cimports _errors (and the C API).
"""

from cpython.number cimport PyNumber_Index
from cpython.ref cimport Py_DECREF, Py_INCREF
from libc.stdint cimport uintptr_t

from aotirt._capi cimport (
    aotirt_cuda_device_count, aotirt_stream, aotirt_stream_adopt, aotirt_stream_adopt_owned, aotirt_stream_create,
    aotirt_stream_device, aotirt_stream_handle, aotirt_stream_release, aotirt_stream_shared,
)
from aotirt._errors cimport check


def _no_device_reason():
    """None when CUDA sees a device, else why it sees none: the message of the
    CudaError any CUDA call would raise (e.g. no NVIDIA driver found)."""
    cdef int count = 0
    try:
        check(aotirt_cuda_device_count(&count))
    except RuntimeError as e:
        return str(e)
    return None if count > 0 else "CUDA sees no device"


cdef class Stream:
    """A CUDA stream that aotirt handles and tensors can run on.

    Not constructed directly: use :meth:`Stream.shared`, :meth:`Stream.create`
    or :meth:`Stream.from_external`. A Stream keeps the underlying stream alive;
    tensors and handles that use it keep their own reference.

    Examples
    --------
    >>> s = aotirt.Stream.shared(0)       # doctest: +SKIP
    >>> s.__cuda_stream__()               # doctest: +SKIP
    (0, 94351684731920)
    """

    def __init__(self):
        raise TypeError("use Stream.shared(), Stream.create() or Stream.from_external()")

    def __dealloc__(self):
        # Releasing never waits: a destroyed stream finishes its queued work.
        if self._stream is not NULL:
            aotirt_stream_release(self._stream)
            self._stream = NULL

    @staticmethod
    def shared(device=0):
        """The stream every CudaHandle of `device` runs on by default."""
        cdef int c_device = _device_index(device)
        cdef aotirt_stream* s = NULL
        with nogil:
            check(aotirt_stream_shared(c_device, &s))
        return stream_from_reference(s)

    @staticmethod
    def create(device=0):
        """A new non-blocking stream of its own on `device`."""
        cdef int c_device = _device_index(device)
        cdef aotirt_stream* s = NULL
        with nogil:
            check(aotirt_stream_create(c_device, &s))
        return stream_from_reference(s)

    @staticmethod
    def from_external(obj, device=None):
        """Adopt a stream someone else owns.

        aotirt never destroys an adopted stream; a reference to `obj` is
        kept so that it outlives aotirt's use of it.

        Parameters
        ----------
        obj : stream object or int
            Any of: an object with ``__cuda_stream__`` (torch, CuPy and
            cuda.core streams); an object with an int ``cuda_stream`` or
            ``ptr`` attribute (older torch and CuPy); a cuda.bindings
            ``CUstream`` / ``cudaStream_t`` (anything ``int()`` accepts); a
            raw ``cudaStream_t`` address as an int (0 is the legacy default
            stream).
        device : int, optional
            The device the stream belongs to. By default it is read from
            `obj` where it says (torch ``.device.index``, CuPy
            ``.device_id``, cuda.core ``.device.device_id``), else 0.

        Returns
        -------
        Stream

        Raises
        ------
        TypeError
            When `obj` is none of the above.
        ValueError
            When `device` disagrees with the device `obj` says it is on.

        Examples
        --------
        >>> s = torch.cuda.Stream()                       # doctest: +SKIP
        >>> with aotirt.CudaHandle(path, stream=s) as h:  # runs on s
        ...     out, = h.run([x, y, z])                   # doctest: +SKIP
        >>> aotirt.Stream.from_external(cupy.cuda.Stream(non_blocking=True))  # doctest: +SKIP
        <aotirt.Stream cuda:0 0x55d0c1a2b3c0>
        """
        if isinstance(obj, Stream):
            # Its device is known: check it as for any other stream (reading
            # it also refuses a closed Stream).
            if device is not None and (<Stream>obj).device != device:
                raise ValueError(f"the stream is on cuda:{(<Stream>obj).device}, not on cuda:{device}")
            return obj
        cdef uintptr_t address = _stream_address(obj)
        said = _stream_device(obj)
        if device is None:
            device = said if said is not None else 0
        elif said is not None and said != device:
            raise ValueError(f"the stream is on cuda:{said}, not on cuda:{device}")
        cdef int c_device = _device_index(device)
        cdef aotirt_stream* s = NULL
        if isinstance(obj, int):
            # A bare address: whoever made it keeps it alive (documented).
            check(aotirt_stream_adopt(<void*>address, c_device, &s))
            return stream_from_reference(s, obj)
        # The owner stays alive as long as any tensor or storage of aotirt
        # may still record an event on its stream, not just as long as this
        # Python object lives (its stream is destroyed with it).
        Py_INCREF(obj)
        try:
            check(aotirt_stream_adopt_owned(<void*>address, c_device, _release_owner, <void*>obj, &s))
        except BaseException:
            Py_DECREF(obj)
            raise
        return stream_from_reference(s, obj)

    cdef aotirt_stream* get(self) except NULL:
        if self._stream is NULL:
            raise ValueError("the stream is closed")
        return self._stream

    def close(self):
        """Drop this object's reference to the stream.

        Handles and tensors that use the stream keep it alive; it is
        destroyed (without waiting for it) when the last of them is gone.
        Using this object afterwards raises ValueError. Closing twice does
        nothing.
        """
        if self._stream is not NULL:
            aotirt_stream_release(self._stream)
            self._stream = NULL
        self._owner = None

    @property
    def closed(self):
        return self._stream is NULL

    @property
    def handle(self):
        """The ``cudaStream_t`` as an int."""
        return <uintptr_t>aotirt_stream_handle(self.get())

    @property
    def device(self):
        return aotirt_stream_device(self.get())

    def __cuda_stream__(self):
        """The CUDA stream protocol: ``(version, address)``."""
        return (0, <uintptr_t>aotirt_stream_handle(self.get()))

    def __eq__(self, other):
        if not isinstance(other, Stream):
            return NotImplemented
        if self._stream is NULL or (<Stream>other)._stream is NULL:
            return self is other
        return self.handle == (<Stream>other).handle

    def __hash__(self):
        return hash(self.handle) if self._stream is not NULL else id(self)

    def __repr__(self):
        if self._stream is NULL:
            return "<aotirt.Stream closed>"
        return f"<aotirt.Stream cuda:{self.device} 0x{self.handle:x}>"


cdef int _device_index(object device) except -1:
    """A device index from a user: an integer (operator.index semantics, so a
    float is refused rather than truncated), 0 or more, fitting in an int."""
    if isinstance(device, bool) or not hasattr(device, "__index__"):
        raise TypeError(f"a device index must be an integer, got {type(device).__name__} {device!r}")
    index = PyNumber_Index(device)
    if not 0 <= index < (1 << 31):
        raise ValueError(f"device index must be >= 0, got {device}")
    return index


cdef object _stream_address(object obj):
    """The cudaStream_t of a stream object of another library, as an int."""
    protocol = getattr(obj, "__cuda_stream__", None)
    if protocol is not None:
        # A method returning (version, address); early cuda.core made it a property.
        value = protocol() if callable(protocol) else protocol
        try:
            _version, address = value
        except (TypeError, ValueError):
            raise TypeError(f"{type(obj).__name__}.__cuda_stream__ gave {value!r}, "
                            f"not (version, address)") from None
        return _address(address, obj)
    for name in ("cuda_stream", "ptr"):  # torch, CuPy (before __cuda_stream__)
        value = getattr(obj, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return _address(value, obj)
    if isinstance(obj, (bool, float, complex, str, bytes)) or not hasattr(obj, "__int__"):
        raise TypeError(
            f"expected a stream: an aotirt Stream, an object with __cuda_stream__, a torch or CuPy "
            f"stream, a cuda.bindings CUstream/cudaStream_t or an int address; got {type(obj).__name__}")
    return _address(int(obj), obj)  # ints, cuda.bindings CUstream / cudaStream_t


cdef object _address(object value, object obj):
    address = int(value)
    if address < 0 or address >= (1 << 64):
        raise ValueError(f"{type(obj).__name__} gave stream address {address}, not a cudaStream_t")
    return address


cdef object _stream_device(object obj):
    """The device a stream object says it is on, or None."""
    # A negative or missing index (a null stream, a torch.device without
    # one) does not say.
    try:
        value = getattr(obj, "device_id", None)       # CuPy
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
        device = getattr(obj, "device", None)         # torch.device, cuda.core Device
        for name in ("index", "device_id"):
            value = getattr(device, name, None)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                return value
    except Exception:  # a property that needs a context, a closed stream: not told
        pass
    return None


cdef void _release_owner(void* owner) noexcept nogil:
    # Runs when aotirt's last reference to an adopted stream goes, from any
    # thread, possibly without the GIL.
    with gil:
        Py_DECREF(<object>owner)


cdef Stream stream_from_reference(aotirt_stream* stream, object owner=None):
    cdef Stream s = Stream.__new__(Stream)
    s._stream = stream
    s._owner = owner
    return s


cdef Stream as_stream(object obj, int device):
    if obj is None:
        return Stream.shared(device)
    if isinstance(obj, Stream):
        (<Stream>obj).get()  # a closed stream cannot be used
        return <Stream>obj
    return Stream.from_external(obj, device)
