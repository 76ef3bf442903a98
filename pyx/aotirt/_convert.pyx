"""Making Tensors: from run arguments, from arrays (asarray, from_dlpack), and
new ones (empty).

A run's inputs are gathered here (gather_inputs) for the handles and graphs:
Tensors as they are, host arrays wrapped (CPU) or uploaded (CUDA), DLPack and
CUDA-array-interface objects used where they are.

Module order: cimports _errors, _dtypes, _device, _stream, _host, _interop and
_tensor; _graph and _handle cimport it.
"""

from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport malloc

from aotirt._capi cimport (
    AOTIRT_DEVICE_CPU, AOTIRT_DEVICE_CUDA, AOTIRT_MAX_DIMS, aotirt_status, aotirt_stream, aotirt_tensor,
    aotirt_tensor_device_index, aotirt_tensor_device_type, aotirt_tensor_empty, kDLCPU, kDLCUDA,
)
from aotirt._device cimport parse_device
from aotirt._dtypes cimport dtype_code_of
from aotirt._errors cimport check
from aotirt._host cimport shape_of, upload, wrap_host
from aotirt._interop cimport import_array, is_interop, mismatch, takes_interop_path
from aotirt._stream cimport Stream, as_stream
from aotirt._tensor cimport Tensor, wrap_tensor


# ---- run arguments ---------------------------------------------------------

cdef Tensor as_input(object obj, Py_ssize_t index, int device_type, int device_index,
                     aotirt_stream* stream):
    if isinstance(obj, Tensor):
        return <Tensor>obj
    what = f"input {index}"
    # Host arrays (numpy, anything with the buffer protocol) keep their own
    # path even though numpy has __dlpack__: wrapped on the CPU, uploaded for
    # a GPU. Everything else that speaks DLPack or the CUDA array interface
    # (torch, CuPy, Numba, cuda.core) is used where it is, without a copy.
    if takes_interop_path(obj):
        return wrap_tensor(import_array(obj, device_type, device_index, stream, None, what, True, True))
    if device_type == AOTIRT_DEVICE_CPU:
        return wrap_tensor(wrap_host(obj, what))
    return wrap_tensor(upload(obj, device_index, stream, what))


cdef list gather_inputs(object inputs, Py_ssize_t n, aotirt_tensor** inline_in, aotirt_tensor*** c_in,
                        int device_type, int device_index, aotirt_stream* stream):
    c_in[0] = inline_in
    if n > INLINE_ARGS:
        c_in[0] = <aotirt_tensor**>malloc(n * sizeof(aotirt_tensor*))
        if c_in[0] is NULL:
            raise MemoryError()
    cdef aotirt_tensor** arr = c_in[0]
    cdef list made = None
    cdef Tensor t
    cdef Py_ssize_t i
    for i in range(n):
        obj = inputs[i]
        if type(obj) is Tensor:  # the common case, without as_input's checks
            arr[i] = (<Tensor>obj)._t
            continue
        t = as_input(obj, i, device_type, device_index, stream)
        if made is None:
            made = []
        made.append(t)
        arr[i] = t._t
    return made


cdef int _index(object value, str what) except -1:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} takes ints, got {value!r}")
    if value < 0:
        raise ValueError(f"{what} indices are 0 or more, got {value!r}")
    return 0


cdef list feedback_pairs(object feedback):
    if feedback is None:
        return []
    try:
        items = list(feedback)
    except TypeError:
        raise TypeError(f"feedback takes a sequence of (output index, input index) pairs, "
                        f"got {type(feedback).__name__}") from None
    pairs = []
    for item in items:
        try:
            output, input = item
        except (TypeError, ValueError):
            raise TypeError(f"feedback takes (output index, input index) pairs, got {item!r}") from None
        _index(output, "feedback")
        _index(input, "feedback")
        pairs.append((output, input))
    return pairs


cdef list output_indices(object collect):
    if collect is None:
        return []
    try:
        items = list(collect)
    except TypeError:
        raise TypeError(f"collect takes a sequence of output indices, got {type(collect).__name__}") from None
    for item in items:
        _index(item, "collect")
    return items


# ---- arrays in, new tensors -------------------------------------------------

def asarray(obj, device="cpu", stream=None, dtype=None):
    """A Tensor with the data of an array, on `device`.

    Parameters
    ----------
    obj : Tensor or array
        A Tensor (returned as it is when already on `device`), any object
        with the buffer protocol (numpy arrays, memoryviews, ...), or any
        object with ``__dlpack__`` or ``__cuda_array_interface__`` (torch,
        CuPy, Numba, ...): see :func:`from_dlpack`.
    device : "cpu", "cuda", "cuda:N" or int
        On the CPU the Tensor shares the array's memory and keeps the array
        alive. On a GPU host data is uploaded with ``cudaMemcpyAsync`` on
        `stream` and nothing waits for it; device data already there is used
        without a copy.
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
        raise ValueError(f"the tensor is on {t.device}, not on {device!r}: Tensor.to({device!r}) moves it "
                         f"(asarray never copies a Tensor)")
    if takes_interop_path(obj):
        return wrap_tensor(import_array(obj, device_type, device_index, NULL, stream, "asarray", False, True))
    if device_type == AOTIRT_DEVICE_CPU:
        return wrap_tensor(wrap_host(obj, "asarray", dtype))
    cdef Stream s = as_stream(stream, device_index)
    return wrap_tensor(upload(obj, device_index, s._stream, "asarray", dtype))


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
    shape = shape_of(shape, "empty")
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


def from_dlpack(x, /, *, device=None, copy=None, stream=None):
    """A Tensor over another library's array, without a copy.

    Takes anything with ``__dlpack__`` (torch, CuPy, JAX, cuda.core buffers,
    numpy, ...) or ``__cuda_array_interface__`` (Numba, CuPy, ...), on the
    CPU or a GPU, and shares its memory: the Tensor keeps the producer's
    memory alive until the Tensor and everything made from it are gone.

    Ordering with the producer's stream needs no host wait: DLPack producers
    are handed the Tensor's stream (``__dlpack__(stream=...)``) and make it
    wait for their pending work with an event; for the CUDA array interface,
    aotirt records an event on the interface's ``stream`` and makes the
    Tensor's stream wait on it. Memory is given back to the producer only
    once the GPU has finished aotirt's work on it (checked, never waited for,
    at later aotirt calls).

    Parameters
    ----------
    x : object with ``__dlpack__`` or ``__cuda_array_interface__``
        DLPack is used when both are there.
    device : "cpu", "cuda:N", int, DLPack ``(type, id)`` or None
        Where the data must already be (checked, never moved).
    copy : None or False
        aotirt does not copy here; True raises ValueError.
    stream : Stream, object with ``__cuda_stream__``, or None
        For device data, the stream the Tensor belongs to: runs and copies
        order themselves after it. None is the device's shared stream (the
        one every CudaHandle of the device runs on).

    Returns
    -------
    Tensor

    Raises
    ------
    TypeError
        `x` speaks neither protocol, or its dtype is not one aotirt has.
    ValueError
        The data is not on `device`, has negative strides, or ``copy=True``.

    Examples
    --------
    >>> a = np.arange(6, dtype=np.float32).reshape(2, 3)
    >>> t = aotirt.from_dlpack(a)
    >>> t.data_ptr == a.ctypes.data
    True
    >>> x = torch.ones(1024, device="cuda")           # doctest: +SKIP
    >>> t = aotirt.from_dlpack(x)                     # doctest: +SKIP
    >>> t.data_ptr == x.data_ptr()                    # doctest: +SKIP
    True
    """
    if copy:
        raise ValueError("from_dlpack: copy=True is not supported: aotirt imports without a copy "
                         "(asarray() uploads host data; copy_to_host() makes a host copy)")
    cdef int device_type = -1
    cdef int device_index = -1
    if device is not None:
        if isinstance(device, tuple):
            if device == (kDLCPU, 0) or (len(device) == 2 and device[0] == kDLCPU):
                device_type, device_index = AOTIRT_DEVICE_CPU, 0
            elif len(device) == 2 and device[0] == kDLCUDA:
                device_type, device_index = AOTIRT_DEVICE_CUDA, device[1]
            else:
                raise ValueError(f"from_dlpack: device {device!r} is not a DLPack CPU or CUDA device")
        else:
            device_type, device_index = parse_device(device)
    if isinstance(x, Tensor):
        t = <Tensor>x
        if device_type >= 0 and (aotirt_tensor_device_type(t._t) != device_type or (
                device_type == AOTIRT_DEVICE_CUDA and aotirt_tensor_device_index(t._t) != device_index)):
            raise mismatch("from_dlpack", t.device, device_type, device_index, False)
        return t
    if not is_interop(x):
        raise TypeError(f"from_dlpack: expected an object with __dlpack__ or __cuda_array_interface__, "
                        f"got {type(x).__name__}")
    if device_type == AOTIRT_DEVICE_CPU:
        device_index = 0
    return wrap_tensor(import_array(x, device_type, device_index, NULL, stream, "from_dlpack", False, False))
