"""CUDA streams: the per-device shared stream, owned streams, adopted ones."""

from libc.stdint cimport uintptr_t

from aotirt._capi cimport (
    aotirt_device_count, aotirt_stream, aotirt_stream_adopt, aotirt_stream_create,
    aotirt_stream_device, aotirt_stream_handle, aotirt_stream_release, aotirt_stream_shared,
)
from aotirt._errors cimport check


def device_count():
    """Number of usable CUDA devices; 0 when there is no GPU or no driver.

    Unlike every other CUDA entry point this never raises, so it is the way
    to ask whether a GPU is there.
    """
    return aotirt_device_count()


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
    def shared(int device=0):
        """The stream every CudaHandle of `device` runs on by default."""
        cdef aotirt_stream* s = NULL
        with nogil:
            check(aotirt_stream_shared(device, &s))
        return stream_from_reference(s)

    @staticmethod
    def create(int device=0):
        """A new non-blocking stream of its own on `device`."""
        cdef aotirt_stream* s = NULL
        with nogil:
            check(aotirt_stream_create(device, &s))
        return stream_from_reference(s)

    @staticmethod
    def from_external(obj, int device=0):
        """Adopt a stream someone else owns.

        Parameters
        ----------
        obj : object with ``__cuda_stream__`` or int
            A torch, CuPy or cuda.core stream, or a raw ``cudaStream_t``
            address. A reference to `obj` is kept so it outlives our use.
        device : int
            The device the stream belongs to.
        """
        cdef uintptr_t address
        if hasattr(obj, "__cuda_stream__"):
            version, address = obj.__cuda_stream__()
        elif isinstance(obj, int):
            address = obj
        else:
            raise TypeError(
                f"expected an object with __cuda_stream__ or an int, got {type(obj).__name__}")
        cdef aotirt_stream* s = NULL
        check(aotirt_stream_adopt(<void*>address, device, &s))
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
