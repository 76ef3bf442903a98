"""Tensors: device or host memory with a shape, strides and dtype.

numpy is imported only when a result needs it (dtype, numpy(), copies
without `out`), never by ``import aotirt``.
"""

from cpython.buffer cimport (
    PyBUF_ANY_CONTIGUOUS, PyBUF_C_CONTIGUOUS, PyBUF_FORMAT, PyBUF_WRITABLE,
    PyBuffer_Release, PyObject_GetBuffer,
)
from libc.stdint cimport int32_t, int64_t, uintptr_t
from libc.stdlib cimport free, malloc

from aotirt._capi cimport (
    AOTIRT_DEVICE_CPU, AOTIRT_DEVICE_CUDA, AOTIRT_MAX_DIMS, aotirt_copy_to_host, aotirt_dtype_itemsize, aotirt_tensor_copy, aotirt_tensor_empty, aotirt_tensor_narrow,
    aotirt_status, aotirt_stream, aotirt_stream_retain, aotirt_tensor, aotirt_tensor_data,
    aotirt_tensor_device_index, aotirt_tensor_device_type, aotirt_tensor_dtype, aotirt_tensor_free,
    aotirt_tensor_is_contiguous, aotirt_tensor_ndim, aotirt_tensor_numel, aotirt_tensor_sizes,
    aotirt_tensor_stream, aotirt_tensor_strides, aotirt_tensor_upload, aotirt_tensor_wrap_host,
)
from aotirt._errors cimport check
from aotirt._stream cimport Stream, as_stream, stream_from_reference

# c10 dtype codes and their numpy names.
_DTYPE_NAMES = {0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "float16",
                6: "float32", 7: "float64", 11: "bool", 15: "bfloat16"}
# Buffer-protocol format characters (struct module codes) and their dtype codes.
_FORMAT_CODES = {"B": 0, "b": 1, "h": 2, "i": 3, "l": 4, "q": 4, "e": 5, "f": 6, "d": 7, "?": 11}

cdef object _np = None


cdef object _numpy():
    global _np
    if _np is None:
        import numpy
        _np = numpy
    return _np


_NAME_CODES = {name: code for code, name in _DTYPE_NAMES.items()}
_NAME_CODES["bool_"] = 11


cdef int32_t dtype_code_of(object dtype) except -1:
    """The c10 code of a numpy dtype, a dtype name, or a scalar type."""
    name = dtype if isinstance(dtype, str) else getattr(dtype, "name", None)
    if name is None:
        name = _numpy().dtype(dtype).name  # a scalar type such as np.float32
    code = _NAME_CODES.get(name)
    if code is None:
        raise TypeError(f"dtype {dtype!r} is not supported "
                        f"(supported: {', '.join(sorted(_NAME_CODES))})")
    return code


cdef object _numpy_dtype(int32_t code):
    name = _DTYPE_NAMES.get(code)
    if name is None:
        raise TypeError(f"dtype code {code} has no numpy equivalent")
    if name == "bfloat16":
        try:
            import ml_dtypes
        except ImportError:
            raise TypeError("numpy has no bfloat16: install ml_dtypes, or read the raw bits with "
                            "copy_to_host(t, out=numpy.empty(t.shape, numpy.uint16))") from None
        return _numpy().dtype(ml_dtypes.bfloat16)
    return _numpy().dtype(name)


cdef int32_t _dtype_code(Py_buffer* view, str what) except -1:
    fmt = (<bytes>view.format).decode("ascii") if view.format is not NULL else "B"
    if fmt[:1] in ("<", "=", "@", "|"):
        fmt = fmt[1:]
    code = _FORMAT_CODES.get(fmt, -1)
    if code == 4 and view.itemsize != 8:
        code = -1
    if code == -1:
        # ml_dtypes' bfloat16 exports itself as two raw bytes: look at the object.
        raise TypeError(f"{what}: buffer format {fmt!r} is not a supported dtype "
                        f"(supported: {', '.join(sorted(set(_DTYPE_NAMES.values())))})")
    return code


cdef tuple parse_device(object device):
    if isinstance(device, int) and not isinstance(device, bool):
        if device < 0:
            raise ValueError(f"device index must be >= 0, got {device}")
        return (AOTIRT_DEVICE_CUDA, device)
    if isinstance(device, str):
        if device == "cpu":
            return (AOTIRT_DEVICE_CPU, 0)
        if device == "cuda":
            return (AOTIRT_DEVICE_CUDA, 0)
        if device.startswith("cuda:") and device[5:].isdigit():
            return (AOTIRT_DEVICE_CUDA, int(device[5:]))
    raise ValueError(f"device must be 'cpu', 'cuda', 'cuda:N' or an int, got {device!r}")


cdef void _release_buffer(void* view) noexcept nogil:
    # Runs when the last alias of a borrowed host storage goes, possibly from
    # a thread that does not hold the GIL.
    with gil:
        PyBuffer_Release(<Py_buffer*>view)
    free(view)


cdef int _get_c_buffer(object obj, Py_buffer* view, str what) except -1:
    """A C-contiguous buffer view of `obj`; TypeError when `obj` has none."""
    try:
        PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT)
    except BufferError:
        raise
    except TypeError:
        raise TypeError(f"{what}: expected an aotirt.Tensor or an array (buffer protocol), "
                        f"got {type(obj).__name__}") from None
    return 0


cdef object _contiguous(object obj, str what):
    """`obj`, or a C-contiguous copy of it when its memory is strided.

    Strided host arrays are copied (one host copy) rather than refused: a model
    compiled for contiguous inputs would otherwise read the wrong elements.
    """
    cdef Py_buffer view
    try:
        PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT)
    except (BufferError, ValueError):  # numpy says ValueError, the protocol BufferError
        return _numpy().ascontiguousarray(obj)
    except TypeError:
        raise TypeError(f"{what}: expected an aotirt.Tensor or an array (buffer protocol), "
                        f"got {type(obj).__name__}") from None
    PyBuffer_Release(&view)
    return obj


cdef int _buffer_sizes(Py_buffer* view, int64_t* sizes, str what) except -1:
    if view.ndim > AOTIRT_MAX_DIMS:
        raise ValueError(f"{what}: {view.ndim} dimensions, at most {AOTIRT_MAX_DIMS} are supported")
    cdef int d
    for d in range(view.ndim):
        sizes[d] = view.shape[d]
    return 0


cdef int32_t _code_for(Py_buffer* view, object as_dtype, str what) except -1:
    """The dtype code of a buffer, or `as_dtype` when given (same item size:
    the bytes are reinterpreted, e.g. uint16 bits as bfloat16)."""
    if as_dtype is None:
        return _dtype_code(view, what)
    cdef int32_t code = dtype_code_of(as_dtype)
    if <Py_ssize_t>aotirt_dtype_itemsize(code) != view.itemsize:
        raise TypeError(f"{what}: cannot view {view.itemsize}-byte items as {_DTYPE_NAMES[code]}")
    return code


cdef Tensor _wrap_host(object obj, str what, object as_dtype=None):
    obj = _contiguous(obj, what)
    cdef Py_buffer* view = <Py_buffer*>malloc(sizeof(Py_buffer))
    if view is NULL:
        raise MemoryError()
    try:
        _get_c_buffer(obj, view, what)
    except BaseException:
        free(view)
        raise
    cdef int64_t sizes[AOTIRT_MAX_DIMS]
    cdef aotirt_tensor* t = NULL
    cdef int32_t code
    try:
        code = _code_for(view, as_dtype, what)
        _buffer_sizes(view, sizes, what)
        check(aotirt_tensor_wrap_host(view.buf, view.ndim, sizes, NULL, code, _release_buffer, view, &t))
    except BaseException:
        PyBuffer_Release(view)
        free(view)
        raise
    return wrap_tensor(t)


cdef Tensor _upload(object obj, int device_index, aotirt_stream* stream, str what, object as_dtype=None):
    obj = _contiguous(obj, what)
    cdef Py_buffer view
    _get_c_buffer(obj, &view, what)
    cdef int64_t sizes[AOTIRT_MAX_DIMS]
    cdef aotirt_tensor* t = NULL
    cdef int32_t code
    cdef aotirt_status status
    try:
        code = _code_for(&view, as_dtype, what)
        _buffer_sizes(&view, sizes, what)
        with nogil:
            status = aotirt_tensor_upload(view.buf, view.ndim, sizes, code, device_index, stream, &t)
        check(status)
    finally:
        # cudaMemcpyAsync has consumed pageable memory when it returns.
        PyBuffer_Release(&view)
    return wrap_tensor(t)


cdef Tensor wrap_tensor(aotirt_tensor* t):
    cdef Tensor r = Tensor.__new__(Tensor)
    r._t = t
    return r


cdef Tensor as_input(object obj, Py_ssize_t index, int device_type, int device_index,
                     aotirt_stream* stream):
    if isinstance(obj, Tensor):
        return <Tensor>obj
    what = f"input {index}"
    if device_type == AOTIRT_DEVICE_CPU:
        return _wrap_host(obj, what)
    return _upload(obj, device_index, stream, what)


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
        return _numpy_dtype(aotirt_tensor_dtype(self._t))

    @property
    def device(self):
        """``"cpu"`` or ``"cuda:N"``."""
        if aotirt_tensor_device_type(self._t) == AOTIRT_DEVICE_CPU:
            return "cpu"
        return f"cuda:{aotirt_tensor_device_index(self._t)}"

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
        return copy_to_host(self)

    def narrow(self, int64_t dim, int64_t start, int64_t length):
        """A view of elements ``[start, start + length)`` along `dim`.

        The view shares this tensor's memory and keeps it alive.
        """
        cdef aotirt_tensor* out = NULL
        check(aotirt_tensor_narrow(self._t, dim, start, length, &out))
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

    def __repr__(self):
        name = _DTYPE_NAMES.get(aotirt_tensor_dtype(self._t), "?")
        return f"<aotirt.Tensor shape={self.shape} dtype={name} device={self.device}>"


def asarray(obj, device="cpu", stream=None, dtype=None):
    """A Tensor with the data of an array, on `device`.

    Parameters
    ----------
    obj : Tensor or array
        A Tensor (returned as it is when already on `device`) or any object
        with the buffer protocol (numpy arrays, memoryviews, ...).
    device : "cpu", "cuda", "cuda:N" or int
        On the CPU the Tensor shares the array's memory and keeps the array
        alive. On a GPU the data is uploaded with ``cudaMemcpyAsync`` on
        `stream` and nothing waits for it.
    stream : Stream, object with ``__cuda_stream__``, or None
        The upload's stream; None is the device's shared stream.
    dtype : dtype name or numpy dtype, optional
        Reinterpret the array's bytes as this dtype (same item size). This is
        how bfloat16 data comes from numpy without ml_dtypes: as the raw bits
        in a uint16 array, ``asarray(bits, dtype="bfloat16")``.

    Examples
    --------
    >>> x = aotirt.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    >>> x.shape, x.device
    ((2, 3), 'cpu')
    """
    device_type, device_index = parse_device(device)
    if isinstance(obj, Tensor):
        t = <Tensor>obj
        if (aotirt_tensor_device_type(t._t) == device_type and
                (device_type == AOTIRT_DEVICE_CPU or aotirt_tensor_device_index(t._t) == device_index)):
            return t
        raise ValueError(f"the tensor is on {t.device}; moving tensors between devices is "
                         f"done with copy_to_host() and asarray()")
    if device_type == AOTIRT_DEVICE_CPU:
        return _wrap_host(obj, "asarray", dtype)
    cdef Stream s = as_stream(stream, device_index)
    return _upload(obj, device_index, s._stream, "asarray", dtype)


def empty(shape, dtype="float32", device="cpu", stream=None):
    """An uninitialised contiguous Tensor.

    Parameters
    ----------
    shape : tuple of int
    dtype : numpy dtype, scalar type or name
    device : "cpu", "cuda", "cuda:N" or int
    stream : Stream, object with ``__cuda_stream__``, or None
        For CUDA: the memory is allocated stream-ordered on it (None: the
        device's shared stream), and the tensor belongs to it.

    Examples
    --------
    >>> aotirt.empty((2, 3), "float32").shape
    (2, 3)
    """
    cdef int32_t device_type
    cdef int device_index
    device_type, device_index = parse_device(device)
    cdef int32_t code = dtype_code_of(dtype)
    shape = tuple(shape)
    if len(shape) > AOTIRT_MAX_DIMS:
        raise ValueError(f"{len(shape)} dimensions, at most {AOTIRT_MAX_DIMS} are supported")
    cdef int64_t sizes[AOTIRT_MAX_DIMS]
    cdef int ndim = len(shape)
    for d in range(ndim):
        sizes[d] = shape[d]
    cdef aotirt_stream* c_stream = NULL
    cdef Stream s
    if device_type == AOTIRT_DEVICE_CUDA:
        s = as_stream(stream, device_index)
        c_stream = s._stream
    cdef aotirt_tensor* t = NULL
    cdef aotirt_status status
    with nogil:
        status = aotirt_tensor_empty(ndim, sizes, code, device_type, device_index, c_stream, &t)
    check(status)
    return wrap_tensor(t)


def copy_to_host(Tensor tensor not None, out=None):
    """Copy a tensor into host memory and return it as a numpy array.

    For a CUDA tensor the copy is queued on the tensor's stream and then the
    host waits for that stream: the one place aotirt waits for the GPU.

    Parameters
    ----------
    tensor : Tensor
    out : writable C-contiguous array, optional
        Destination with the tensor's shape and dtype (pinned memory makes
        the copy run at full bandwidth). Allocated with numpy when omitted.

    Returns
    -------
    numpy.ndarray
        `out` when given.
    """
    cdef aotirt_tensor* t = tensor._t
    cdef int32_t code = aotirt_tensor_dtype(t)
    if out is None:
        out = _numpy().empty(tensor.shape, dtype=_numpy_dtype(code))
    cdef Py_buffer view
    try:
        PyObject_GetBuffer(out, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE)
    except (BufferError, ValueError) as e:  # numpy raises ValueError for these
        raise ValueError(f"copy_to_host: out must be a writable C-contiguous array ({e})") from None
    except TypeError:
        raise TypeError(f"copy_to_host: out must be an array, got {type(out).__name__}") from None
    cdef aotirt_status status
    try:
        if code == 15:
            # bfloat16 has no buffer format of its own (ml_dtypes exports raw
            # 2-byte items): only the item size can be checked.
            if view.itemsize != 2:
                raise TypeError("copy_to_host: out must have 2-byte items for a bfloat16 tensor")
        elif _dtype_code(&view, "copy_to_host: out") != code:
            raise TypeError(f"copy_to_host: out has format {view.format.decode()!r}, "
                            f"the tensor is {_DTYPE_NAMES.get(code)}")
        shape = tuple([view.shape[d] for d in range(view.ndim)]) if view.shape is not NULL else ()
        if shape != tensor.shape:
            raise ValueError(f"copy_to_host: out has shape {shape}, the tensor {tensor.shape}")
        with nogil:
            status = aotirt_copy_to_host(t, view.buf, <size_t>view.len)
        check(status)
    finally:
        PyBuffer_Release(&view)
    return out
