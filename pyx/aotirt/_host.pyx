"""Host memory: arrays in through the buffer protocol, data back out to host
memory (the copy routine), and pinned (page-locked) arrays.

numpy is imported only when an array must be made (a strided input's
contiguous copy, copy_to_host() without `out`, pinned arrays).

Module order: cimports _errors and _dtypes.
"""

from cpython.buffer cimport (
    PyBUF_C_CONTIGUOUS, PyBUF_FORMAT, PyBUF_ND, PyBUF_STRIDES, PyBUF_WRITABLE, PyBuffer_Release,
    PyObject_GetBuffer,
)
from cpython.number cimport PyNumber_Index
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport free, malloc

from aotirt._capi cimport (
    AOTIRT_MAX_DIMS, aotirt_copy_to_host, aotirt_dtype_itemsize, aotirt_host_alloc_pinned, aotirt_host_free_pinned,
    aotirt_status, aotirt_stream, aotirt_tensor, aotirt_tensor_dtype, aotirt_tensor_mark_read_only,
    aotirt_tensor_upload, aotirt_tensor_wrap_host,
)
from aotirt._dtypes cimport (
    DType, buffer_dtype, buffer_format, dtype_code_of, dtype_name, dtype_row, formatless_dtype, numpy_dtype,
    numpy_module,
)
from aotirt._errors cimport check


# ---- host arrays in ---------------------------------------------------------

cdef void _release_buffer(void* view) noexcept nogil:
    # Runs when the last alias of a borrowed host storage goes, possibly from
    # a thread that does not hold the GIL.
    with gil:
        PyBuffer_Release(<Py_buffer*>view)
    free(view)


cdef object _bits(object array, int32_t code):
    """The memory of an ml_dtypes array (formatless_dtype's `code`) seen as
    unsigned integers of its item size, which numpy does export."""
    return array.view(f"uint{8 * dtype_row(code).itemsize}")


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
        return numpy_module().ascontiguousarray(obj)
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
        return buffer_dtype(view, what)
    cdef int32_t code = dtype_code_of(as_dtype)
    if <Py_ssize_t>aotirt_dtype_itemsize(code) != view.itemsize:
        raise TypeError(f"{what}: cannot view {view.itemsize}-byte items as {dtype_name(code)}")
    return code


cdef int64_t as_int64(object value, str what) except? -1:
    try:
        index = PyNumber_Index(value)
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {type(value).__name__} {value!r}") from None
    if not -(1 << 63) <= index < (1 << 63):
        raise ValueError(f"{what} {index} does not fit in int64")
    return index


cdef tuple shape_of(object shape, str what):
    try:
        dims = (PyNumber_Index(shape),)
    except TypeError:
        try:
            dims = tuple(shape)
        except TypeError:
            raise TypeError(f"{what}: shape must be an integer or a sequence of integers, "
                            f"got {type(shape).__name__}") from None
    out = tuple([as_int64(size, f"{what}: size") for size in dims])
    for size in out:
        if size < 0:
            raise ValueError(f"{what}: negative size {size} in shape {out}")
    return out


cdef aotirt_tensor* wrap_host(object obj, str what, object as_dtype=None) except NULL:
    # An ml_dtypes array goes in as its bits, read as its own dtype unless
    # `as_dtype` names another (no tuple made for any other array).
    cdef int32_t formatless = formatless_dtype(obj)
    if formatless >= 0:
        obj, as_dtype = _bits(obj, formatless), dtype_name(formatless) if as_dtype is None else as_dtype
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
    if view.readonly:
        aotirt_tensor_mark_read_only(t)  # bytes, writeable=False arrays: never written through aotirt
    return t


cdef aotirt_tensor* upload(object obj, int device_index, aotirt_stream* stream, str what,
                           object as_dtype=None) except NULL:
    # An ml_dtypes array goes in as its bits, read as its own dtype unless
    # `as_dtype` names another (no tuple made for any other array).
    cdef int32_t formatless = formatless_dtype(obj)
    if formatless >= 0:
        obj, as_dtype = _bits(obj, formatless), dtype_name(formatless) if as_dtype is None else as_dtype
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
    return t


# ---- data back out ----------------------------------------------------------

cdef int _check_out(Py_buffer* view, int32_t code, tuple shape, int32_t out_code) except -1:
    """copy_to_host's checks of a caller's `out`: the tensor's dtype and shape.
    `out_code`: out's dtype where its buffer is its bits (an ml_dtypes
    array), else -1."""
    cdef DType row = dtype_row(code)
    if out_code >= 0:
        if out_code != code:
            raise TypeError(f"copy_to_host: out is {dtype_name(out_code)}, the tensor is {row.name}")
    elif row.format is None:
        # The tensor's dtype has no buffer format, and `out` is not an
        # ml_dtypes array of it: its raw bits (a uint16 array for bfloat16),
        # of which only the item size can be checked.
        if view.itemsize != row.itemsize:
            raise TypeError(f"copy_to_host: out must have {row.itemsize}-byte items for a {row.name} tensor")
    elif buffer_dtype(view, "copy_to_host: out") != code:
        raise TypeError(f"copy_to_host: out has format {buffer_format(view)!r}, "
                        f"the tensor is {row.name}")
    out_shape = tuple([view.shape[d] for d in range(view.ndim)]) if view.shape is not NULL else ()
    if out_shape != shape:
        raise ValueError(f"copy_to_host: out has shape {out_shape}, the tensor {shape}")
    return 0


cdef object copy_out(const aotirt_tensor* t, tuple shape, object out):
    cdef int32_t code = aotirt_tensor_dtype(t)
    # An array made here has the tensor's shape and dtype by construction:
    # only a caller's `out` needs checking.
    cdef bint check_out = out is not None
    cdef int32_t out_code
    if out is None:
        out = numpy_module().empty(shape, dtype=numpy_dtype(code))
        # Made here of the tensor's dtype: an ml_dtypes array exactly when
        # that dtype has no buffer format, with no need to ask the array.
        out_code = code if dtype_row(code).format is None else -1
    else:
        out_code = formatless_dtype(out)
    target = _bits(out, out_code) if out_code >= 0 else out
    cdef Py_buffer view
    try:
        PyObject_GetBuffer(target, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE)
    except (BufferError, ValueError) as e:  # numpy raises ValueError for these
        raise ValueError(f"copy_to_host: out must be a writable C-contiguous array ({e})") from None
    except TypeError:
        raise TypeError(f"copy_to_host: out must be an array, got {type(out).__name__}") from None
    cdef aotirt_status status
    try:
        if check_out:
            _check_out(&view, code, shape, out_code)
        with nogil:
            status = aotirt_copy_to_host(t, view.buf, <size_t>view.len)
        check(status)
    finally:
        PyBuffer_Release(&view)
    return out


# ---- pinned host memory ----------------------------------------------------

cdef char* _FORMAT_BYTE = b"B"


cdef class _PinnedMemory:
    """Page-locked host memory (cudaHostAlloc) behind a numpy array.

    Exposes its bytes through the buffer protocol; the array made over it
    keeps it alive, and it is freed (cudaFreeHost) when the last array over
    it is garbage collected.
    """

    cdef void* _ptr
    cdef Py_ssize_t _nbytes
    cdef Py_ssize_t _one

    def __dealloc__(self):
        # cudaFreeHost may wait for the device: this is why pinned buffers
        # are meant to be allocated once and reused, off the run path.
        if self._ptr is not NULL:
            aotirt_host_free_pinned(self._ptr)
            self._ptr = NULL

    def __getbuffer__(self, Py_buffer* view, int flags):
        self._one = 1
        view.buf = self._ptr
        view.obj = self
        view.len = self._nbytes
        view.readonly = 0
        view.itemsize = 1
        view.format = NULL
        if flags & PyBUF_FORMAT:
            view.format = _FORMAT_BYTE
        view.ndim = 1
        view.shape = &self._nbytes if flags & PyBUF_ND else NULL
        view.strides = &self._one if flags & PyBUF_STRIDES == PyBUF_STRIDES else NULL
        view.suboffsets = NULL
        view.internal = NULL

    def __releasebuffer__(self, Py_buffer* view):
        pass


def empty_pinned(shape, dtype="float32"):
    """An uninitialised numpy array in pinned (page-locked) host memory.

    Copies between the GPU and pinned memory run at the full bandwidth of
    the bus and need no staging: the destination to give
    :func:`copy_to_host` in a loop. The memory comes from ``cudaHostAlloc``
    (portable to every device) and is freed with ``cudaFreeHost`` when the
    array (and every view of it) is garbage collected. ``cudaFreeHost`` may
    wait for the device, so allocate pinned arrays once and reuse them.

    An upload from pinned memory (:func:`asarray` with a device, a CUDA run
    on a pinned input) is truly asynchronous: do not overwrite the array
    until the stream has passed the upload (e.g. after the next
    ``copy_to_host`` from that stream).

    Parameters
    ----------
    shape : int or tuple of int
    dtype : numpy dtype, scalar type or name
        Any numpy dtype (``"bfloat16"`` needs ml_dtypes).

    Returns
    -------
    numpy.ndarray
        C-contiguous and writable; its ``base`` chain owns the memory.

    Raises
    ------
    CudaError
        When pinned memory cannot be allocated: no GPU or driver
        (``cudaErrorNoDevice``, ``cudaErrorInsufficientDriver``), or out of
        memory.

    Examples
    --------
    >>> out = aotirt.empty_pinned((1024,), np.float32)     # doctest: +SKIP
    >>> (y,) = handle.run([a, b, c])                        # doctest: +SKIP
    >>> aotirt.copy_to_host(y, out=out) is out              # doctest: +SKIP
    True
    """
    np = numpy_module()
    try:
        dt = numpy_dtype(dtype_code_of(dtype))
    except TypeError:
        dt = np.dtype(dtype)
    shape = shape_of(shape, "empty_pinned")
    elements = 1   # in Python integers: a product past int64 must not wrap
    for size in shape:
        elements *= size
    total = elements * dt.itemsize
    if total >= (1 << 63):
        raise ValueError(f"empty_pinned: shape {shape} of {dt} is {total} bytes, more than fit in int64")
    cdef Py_ssize_t count = elements
    cdef _PinnedMemory memory = _PinnedMemory.__new__(_PinnedMemory)
    cdef size_t nbytes = total
    cdef void* ptr = NULL
    cdef aotirt_status status
    with nogil:
        status = aotirt_host_alloc_pinned(nbytes, &ptr)
    check(status)
    memory._ptr = ptr
    memory._nbytes = nbytes
    return np.frombuffer(memory, dtype=dt, count=count).reshape(shape)
