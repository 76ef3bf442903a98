"""Tensors: device or host memory with a shape, strides and dtype, and their
interop with other libraries (DLPack, the CUDA array interface, pinned memory).

numpy is imported only when a result needs it (dtype, numpy(), copies
without `out`, pinned arrays), never by ``import aotirt``.
"""

from cpython.buffer cimport (
    PyBUF_ANY_CONTIGUOUS, PyBUF_C_CONTIGUOUS, PyBUF_FORMAT, PyBUF_ND, PyBUF_STRIDES, PyBUF_WRITABLE,
    PyBuffer_Release, PyObject_CheckBuffer, PyObject_GetBuffer,
)
from cpython.exc cimport PyErr_Fetch, PyErr_Restore
from cpython.number cimport PyNumber_Index
from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid, PyCapsule_New, PyCapsule_SetName
from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF
from libc.stdint cimport int32_t, int64_t, uintptr_t
from libc.stdlib cimport free, malloc

from aotirt._capi cimport (
    AOTIRT_DEVICE_CPU, AOTIRT_DEVICE_CUDA, AOTIRT_MAX_DIMS, AOTIRT_OK, DLManagedTensor, DLManagedTensorVersioned,
    aotirt_copy_to_host, aotirt_dtype_itemsize, aotirt_host_alloc_pinned, aotirt_tensor_copy,
    aotirt_tensor_narrow, aotirt_host_free_pinned,
    aotirt_pointer_device, aotirt_status, aotirt_stream, aotirt_stream_device, aotirt_stream_handle,
    aotirt_stream_retain, aotirt_tensor, aotirt_tensor_data, aotirt_tensor_device_index,
    aotirt_tensor_device_type, aotirt_tensor_dtype, aotirt_tensor_empty, aotirt_tensor_free,
    aotirt_tensor_from_dlpack, aotirt_tensor_from_dlpack_versioned, aotirt_tensor_is_contiguous,
    aotirt_tensor_is_read_only, aotirt_tensor_mark_read_only,
    aotirt_tensor_ndim, aotirt_tensor_numel, aotirt_tensor_order_before, aotirt_tensor_sizes,
    aotirt_tensor_stream, aotirt_tensor_strides, aotirt_tensor_to_dlpack, aotirt_tensor_to_dlpack_versioned,
    aotirt_tensor_upload, aotirt_tensor_wrap_device, aotirt_tensor_wrap_host, kDLCPU, kDLCUDA, kDLCUDAHost,
    kDLCUDAManaged,
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


# numpy dtypes by dtype code, filled on first use: np.dtype(name) is a parse
# that copy_to_host() and Tensor.dtype would otherwise repeat on every call,
# and filling it at import time would import numpy with aotirt.
cdef dict _NUMPY_DTYPES = {}


cdef object _numpy_dtype(int32_t code):
    dt = _NUMPY_DTYPES.get(code)
    if dt is not None:
        return dt
    name = _DTYPE_NAMES.get(code)
    if name is None:
        raise TypeError(f"dtype code {code} has no numpy equivalent")
    if name == "bfloat16":
        try:
            import ml_dtypes
        except ImportError:
            # Not cached: installing ml_dtypes later makes it work.
            raise TypeError("numpy has no bfloat16: install ml_dtypes, or read the raw bits with "
                            "copy_to_host(t, out=numpy.empty(t.shape, numpy.uint16))") from None
        dt = _numpy().dtype(ml_dtypes.bfloat16)
    else:
        dt = _numpy().dtype(name)
    _NUMPY_DTYPES[code] = dt
    return dt


cdef str _format(Py_buffer* view):
    # The buffer protocol says a NULL format means unsigned bytes.
    return (<bytes>view.format).decode("ascii") if view.format is not NULL else "B"


cdef int32_t _dtype_code(Py_buffer* view, str what) except -1:
    fmt = _format(view)
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


cdef int64_t _as_int64(object value, str what) except? -1:
    """An integer from a user, with operator.index semantics: ints and
    objects with __index__ (numpy integers) only, never a float's truncation.
    ValueError past int64 (what the core's checks then see as out of range)."""
    try:
        index = PyNumber_Index(value)
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {type(value).__name__} {value!r}") from None
    if not -(1 << 63) <= index < (1 << 63):
        raise ValueError(f"{what} {index} does not fit in int64")
    return index


cdef tuple _shape_of(object shape, str what):
    """A shape from a user: an integer or a sequence of integers (each with
    operator.index semantics), none negative."""
    try:
        dims = (PyNumber_Index(shape),)
    except TypeError:
        try:
            dims = tuple(shape)
        except TypeError:
            raise TypeError(f"{what}: shape must be an integer or a sequence of integers, "
                            f"got {type(shape).__name__}") from None
    out = tuple([_as_int64(size, f"{what}: size") for size in dims])
    for size in out:
        if size < 0:
            raise ValueError(f"{what}: negative size {size} in shape {out}")
    return out


# parse_device's device types, for its Python callers.
DEVICE_CPU = AOTIRT_DEVICE_CPU
DEVICE_CUDA = AOTIRT_DEVICE_CUDA


cpdef tuple parse_device(object device):
    if not isinstance(device, (bool, float, str)) and hasattr(device, "__index__"):
        index = PyNumber_Index(device)   # ints and numpy integers, not floats or bools
        if not 0 <= index < (1 << 31):
            raise ValueError(f"device index must be >= 0 (and fit in an int), got {device}")
        return (AOTIRT_DEVICE_CUDA, index)
    if isinstance(device, str):
        if device == "cpu":
            return (AOTIRT_DEVICE_CPU, 0)
        if device == "cuda":
            return (AOTIRT_DEVICE_CUDA, 0)
        if device.startswith("cuda:") and device[5:].isascii() and device[5:].isdigit() and len(device) < 15:
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
    if view.readonly:
        aotirt_tensor_mark_read_only(t)  # bytes, writeable=False arrays: never written through aotirt
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
    # Host arrays (numpy, anything with the buffer protocol) keep their own
    # path even though numpy has __dlpack__: wrapped on the CPU, uploaded for
    # a GPU. Everything else that speaks DLPack or the CUDA array interface
    # (torch, CuPy, Numba, cuda.core) is used where it is, without a copy.
    if _takes_interop_path(obj):
        return _import_to(obj, device_type, device_index, stream, None, what, True, True)
    if device_type == AOTIRT_DEVICE_CPU:
        return _wrap_host(obj, what)
    return _upload(obj, device_index, stream, what)


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


# ---- interop: DLPack and the CUDA array interface ---------------------------

# The standard's capsule names. A consumer renames the capsule it takes over,
# so that the capsule's destructor leaves the tensor (and its deleter) to it.
cdef const char* _DLTENSOR = b"dltensor"
cdef const char* _USED_DLTENSOR = b"used_dltensor"
cdef const char* _DLTENSOR_VERSIONED = b"dltensor_versioned"
cdef const char* _USED_DLTENSOR_VERSIONED = b"used_dltensor_versioned"

# __cuda_array_interface__ typestrs: the kind and size after the byte order.
_TYPESTR_CODES = {"u1": 0, "i1": 1, "i2": 2, "i4": 3, "i8": 4, "f2": 5, "f4": 6, "f8": 7, "b1": 11}
_CODE_TYPESTRS = {0: "|u1", 1: "|i1", 2: "<i2", 3: "<i4", 4: "<i8", 5: "<f2", 6: "<f4", 7: "<f8", 11: "|b1"}


cdef bint _is_interop(object obj):
    return hasattr(obj, "__dlpack__") or hasattr(obj, "__cuda_array_interface__")


cdef bint _takes_interop_path(object obj):
    """Whether an input goes through DLPack / the CUDA array interface rather
    than the buffer protocol. Device arrays always do, even when their type
    claims the buffer protocol only to refuse it (CuPy's ndarray); host arrays
    (numpy, which also has __dlpack__) keep the buffer path."""
    if hasattr(type(obj), "__cuda_array_interface__"):
        return True
    return not PyObject_CheckBuffer(obj) and _is_interop(obj)


cdef void _release_object(void* obj) noexcept nogil:
    # The release of borrowed device memory: drops aotirt's reference to the
    # object that owns it. The core calls it from whichever thread it is on,
    # once the GPU is done with the memory.
    with gil:
        Py_XDECREF(<PyObject*>obj)


cdef int _check_for(aotirt_status status, str what) except -1:
    """check(), naming `what` in a ValueError or TypeError."""
    try:
        check(status)
    except (ValueError, TypeError) as e:
        raise type(e)(f"{what}: {e}") from None
    return 0


cdef str _where(int device_type, int device_index):
    return "cpu" if device_type == AOTIRT_DEVICE_CPU else f"cuda:{device_index}"


cdef object _mismatch(str what, str found, int device_type, int device_index, bint for_model):
    wanted = _where(device_type, device_index)
    if for_model:
        return ValueError(f"{what} is on {found}, the model runs on {wanted}")
    return ValueError(f"{what}: the array is on {found}, not on {wanted} (aotirt does not move data "
                      f"between devices here; copy_to_host() brings device data to the host)")


cdef uintptr_t _consumer_stream_value(aotirt_stream* stream):
    # The consumer stream aotirt hands a DLPack producer: its cudaStream_t,
    # or 1 for the legacy default stream (0, which the standard disallows).
    cdef uintptr_t handle = <uintptr_t>aotirt_stream_handle(stream)
    return handle if handle != 0 else 1


cdef Tensor _import_to(object obj, int device_type, int device_index, aotirt_stream* stream,
                       object stream_obj, str what, bint for_model, bint upload_host):
    """A Tensor over the data of a DLPack or CUDA-array-interface object.

    `device_type`/`device_index` is where the data must be (-1: anywhere).
    Device data is used without a copy and belongs to `stream` (or, when that
    is NULL, to `stream_obj` adopted, or to the device's shared stream); host
    data is wrapped on the CPU, or uploaded when a GPU is wanted and
    `upload_host`.
    """
    cdef Stream keep = None
    if hasattr(obj, "__dlpack__"):
        try:
            dl_type, dl_id = obj.__dlpack_device__()
            dl_type, dl_id = int(dl_type), int(dl_id)
        except AttributeError:
            raise TypeError(f"{what}: {type(obj).__name__} has __dlpack__ but no __dlpack_device__") from None
        if dl_type == kDLCUDA or dl_type == kDLCUDAManaged:
            if device_type == AOTIRT_DEVICE_CPU or (device_index >= 0 and dl_id != device_index):
                raise _mismatch(what, f"cuda:{dl_id}", device_type, device_index, for_model)
            if stream is NULL and stream_obj is not None:
                keep = as_stream(stream_obj, dl_id)
                stream = keep._stream
            return _import_dlpack(obj, True, dl_id, stream, what)
        if dl_type == kDLCPU or dl_type == kDLCUDAHost:
            if device_type != AOTIRT_DEVICE_CUDA:
                return _import_dlpack(obj, False, 0, NULL, what)
            if not upload_host:
                raise _mismatch(what, "cpu", device_type, device_index, for_model)
            # Host data for a GPU: uploaded, exactly as a host array is.
            if stream is NULL and stream_obj is not None:
                keep = as_stream(stream_obj, device_index)
                stream = keep._stream
            return _upload(_numpy().from_dlpack(obj), device_index, stream, what)
        raise ValueError(f"{what}: DLPack device type {dl_type} is not supported (aotirt takes "
                         f"kDLCPU 1, kDLCUDA 2, kDLCUDAHost 3, kDLCUDAManaged 13)")
    if hasattr(obj, "__cuda_array_interface__"):
        if device_type == AOTIRT_DEVICE_CPU:
            raise _mismatch(what, "a CUDA device (__cuda_array_interface__)", device_type, device_index, for_model)
        return _import_cai(obj, device_index, stream, stream_obj, what, for_model)
    raise TypeError(f"{what}: expected an object with __dlpack__ or __cuda_array_interface__, "
                    f"got {type(obj).__name__}")


cdef Tensor _import_dlpack(object obj, bint cuda, int device_index, aotirt_stream* stream, str what):
    """Takes over a DLPack capsule from `obj`: zero-copy.

    For device data `stream` (NULL: the device's shared stream) is the
    consumer stream of the handshake: the producer orders its pending work
    before it, on the device, and the Tensor belongs to it.
    """
    cdef Stream keep = None
    if cuda:
        if stream is NULL:
            keep = Stream.shared(device_index)
            stream = keep._stream
        elif aotirt_stream_device(stream) != device_index:
            raise ValueError(f"{what} is on cuda:{device_index}, the stream on cuda:{aotirt_stream_device(stream)}")
        consumer = _consumer_stream_value(stream)
        try:
            capsule = obj.__dlpack__(stream=consumer, max_version=(1, 0))
        except TypeError:  # a producer older than DLPack 1.0 takes no max_version
            capsule = obj.__dlpack__(stream=consumer)
    else:
        stream = NULL
        try:
            capsule = obj.__dlpack__(max_version=(1, 0))
        except TypeError:
            capsule = obj.__dlpack__()

    cdef aotirt_tensor* t = NULL
    cdef aotirt_status status
    cdef DLManagedTensorVersioned* versioned
    cdef DLManagedTensor* legacy
    if PyCapsule_IsValid(capsule, _DLTENSOR_VERSIONED):
        versioned = <DLManagedTensorVersioned*>PyCapsule_GetPointer(capsule, _DLTENSOR_VERSIONED)
        with nogil:
            status = aotirt_tensor_from_dlpack_versioned(versioned, stream, &t)
        # On failure the capsule keeps its name: its destructor deletes the tensor.
        _check_for(status, what)
        PyCapsule_SetName(capsule, _USED_DLTENSOR_VERSIONED)  # aotirt's to delete now
    elif PyCapsule_IsValid(capsule, _DLTENSOR):
        legacy = <DLManagedTensor*>PyCapsule_GetPointer(capsule, _DLTENSOR)
        with nogil:
            status = aotirt_tensor_from_dlpack(legacy, stream, &t)
        _check_for(status, what)
        PyCapsule_SetName(capsule, _USED_DLTENSOR)
    else:
        raise TypeError(f"{what}: {type(obj).__name__}.__dlpack__() returned {type(capsule).__name__}, "
                        f"not an unused DLPack capsule")
    return wrap_tensor(t)


cdef Tensor _import_cai(object obj, int device_index, aotirt_stream* stream, object stream_obj,
                        str what, bint for_model):
    """Wraps the memory of a ``__cuda_array_interface__`` object: zero-copy.

    The Tensor keeps `obj` alive. When the interface names a stream, the
    Tensor's stream waits for it on the device (an event, no host wait).
    `device_index` -1: the data may be on any device.
    """
    cai = obj.__cuda_array_interface__
    if not isinstance(cai, dict):
        raise TypeError(f"{what}: __cuda_array_interface__ is a {type(cai).__name__}, not a dict")
    try:
        shape = tuple(cai["shape"])
        typestr = cai["typestr"]
        data = cai["data"]
    except KeyError as e:
        raise ValueError(f"{what}: __cuda_array_interface__ has no {e.args[0]!r} entry") from None
    if cai.get("mask") is not None:
        raise ValueError(f"{what}: masked arrays (a __cuda_array_interface__ 'mask') are not supported")
    code = _TYPESTR_CODES.get(typestr[1:]) if isinstance(typestr, str) and typestr[:1] in ("<", "|", "=") else None
    if code is None:
        raise TypeError(f"{what}: __cuda_array_interface__ typestr {typestr!r} is not a supported dtype "
                        f"(supported: {', '.join(sorted(_CODE_TYPESTRS.values()))})")
    cdef int32_t dtype = code
    cdef int64_t itemsize = aotirt_dtype_itemsize(dtype)
    cdef int ndim = len(shape)
    if ndim > AOTIRT_MAX_DIMS:
        raise ValueError(f"{what}: {ndim} dimensions, at most {AOTIRT_MAX_DIMS} are supported")
    cdef int64_t sizes[AOTIRT_MAX_DIMS]
    cdef int64_t strides[AOTIRT_MAX_DIMS]
    cdef int64_t* c_strides = NULL
    cdef int d
    for d in range(ndim):
        sizes[d] = _as_int64(shape[d], f"{what}: __cuda_array_interface__ shape")
    byte_strides = cai.get("strides")
    if byte_strides is not None:
        if len(byte_strides) != ndim:
            raise ValueError(f"{what}: __cuda_array_interface__ has {len(byte_strides)} strides "
                             f"for {ndim} dimensions")
        for d in range(ndim):
            stride = _as_int64(byte_strides[d], f"{what}: __cuda_array_interface__ stride")
            if stride % itemsize != 0:
                raise ValueError(f"{what}: stride {stride} bytes is not a multiple of the "
                                 f"item size ({itemsize} bytes)")
            strides[d] = stride // itemsize
        c_strides = strides
    # Version 3's stream: the consumer must order itself after it. None: the
    # data is ready; 1 and 2 are the legacy and per-thread default streams.
    producer = cai.get("stream") if cai.get("version", 0) >= 3 else None
    cdef uintptr_t producer_stream = 0
    if producer is not None:
        if isinstance(producer, bool) or not isinstance(producer, int):
            raise TypeError(f"{what}: __cuda_array_interface__ stream is {producer!r}, not an int")
        if producer <= 0:
            raise ValueError(f"{what}: __cuda_array_interface__ stream {producer} is not allowed "
                             f"(the interface says 1 for the legacy default stream, 2 for per-thread)")
        producer_stream = producer
    if not isinstance(data, tuple) or len(data) != 2:
        raise TypeError(f"{what}: __cuda_array_interface__ data must be (address, read_only), got {data!r}")
    address_value = PyNumber_Index(data[0]) if hasattr(data[0], "__index__") else None
    if address_value is None or not 0 <= address_value < (1 << 64):
        raise TypeError(f"{what}: __cuda_array_interface__ data address {data[0]!r} is not a pointer")
    cdef uintptr_t address = address_value
    cdef int32_t device = 0
    cdef aotirt_status status
    if address != 0:
        with nogil:
            status = aotirt_pointer_device(<void*>address, &device)
        _check_for(status, f"{what} (__cuda_array_interface__)")
    elif device_index >= 0:
        device = device_index  # an empty array has no address to ask about
    elif stream is not NULL:
        device = aotirt_stream_device(stream)
    if device_index >= 0 and device != device_index:
        raise _mismatch(what, f"cuda:{device}", AOTIRT_DEVICE_CUDA, device_index, for_model)
    cdef Stream keep = None
    if stream is NULL:
        keep = as_stream(stream_obj, device)
        stream = keep._stream
    cdef aotirt_tensor* t = NULL
    cdef void* owner = <void*>obj
    Py_INCREF(obj)  # the Tensor's; dropped by _release_object
    with nogil:
        status = aotirt_tensor_wrap_device(<void*>address, ndim, sizes, c_strides, dtype, device,
                                           <void*>producer_stream, stream, _release_object, owner, &t)
    if status != AOTIRT_OK:
        Py_XDECREF(<PyObject*>owner)
        _check_for(status, what)
    if len(data) > 1 and data[1]:
        aotirt_tensor_mark_read_only(t)  # the interface's read-only flag
    return wrap_tensor(t)


cdef void _dlpack_capsule_destructor(object capsule) noexcept:
    # The standard's capsule destructor: a capsule no consumer took over
    # still has its name and deletes its tensor; a consumer renamed the
    # capsule it took over ("used_...") and calls the deleter itself.
    cdef PyObject* error_type
    cdef PyObject* error_value
    cdef PyObject* error_traceback
    cdef DLManagedTensorVersioned* versioned
    cdef DLManagedTensor* legacy
    PyErr_Fetch(&error_type, &error_value, &error_traceback)
    if PyCapsule_IsValid(capsule, _DLTENSOR_VERSIONED):
        versioned = <DLManagedTensorVersioned*>PyCapsule_GetPointer(capsule, _DLTENSOR_VERSIONED)
        if versioned.deleter is not NULL:
            versioned.deleter(versioned)
    elif PyCapsule_IsValid(capsule, _DLTENSOR):
        legacy = <DLManagedTensor*>PyCapsule_GetPointer(capsule, _DLTENSOR)
        if legacy.deleter is not NULL:
            legacy.deleter(legacy)
    PyErr_Restore(error_type, error_value, error_traceback)


cdef object _dlpack_capsule(aotirt_tensor* t, bint versioned):
    cdef DLManagedTensorVersioned* v = NULL
    cdef DLManagedTensor* m = NULL
    cdef void* pointer
    cdef const char* name
    if versioned:
        check(aotirt_tensor_to_dlpack_versioned(t, &v))
        pointer = v
        name = _DLTENSOR_VERSIONED
    else:
        check(aotirt_tensor_to_dlpack(t, &m))
        pointer = m
        name = _DLTENSOR
    try:
        return PyCapsule_New(pointer, name, _dlpack_capsule_destructor)
    except BaseException:
        # No capsule owns the managed tensor: delete it here. The two
        # deleters have different types, hence the test rather than a
        # deleter picked above.
        if v is not NULL:
            v.deleter(v)
        else:
            m.deleter(m)
        raise


cdef uintptr_t _dlpack_consumer_stream(object stream) except? 0:
    """The stream a DLPack consumer asks a CUDA producer to order before; 0: none."""
    if stream is None:
        return 1  # the standard: None means the consumer uses the legacy default stream
    if isinstance(stream, bool) or not isinstance(stream, int):
        raise TypeError(f"__dlpack__: stream must be an int or None, got {type(stream).__name__}")
    if stream == -1:
        return 0  # the consumer asks for no synchronisation
    if stream == 0:
        raise ValueError("__dlpack__: stream=0 is disallowed by the DLPack standard (ambiguous): "
                         "pass 1 for the legacy default stream, 2 for per-thread, or the stream's address")
    if stream < -1 or stream >= (1 << 64):
        raise ValueError(f"__dlpack__: stream={stream} is not a cudaStream_t")
    return stream


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
    def _handle(self):
        """The AtenTensorHandle (``aotirt_tensor*``) behind this Tensor, as an int.

        For tests only: they call the ``aoti_torch_*`` shims through ctypes
        with it. The handle stays owned by this Tensor; never delete it.
        """
        return <uintptr_t>self._t

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

    def narrow(self, dim, start, length):
        """A view of elements ``[start, start + length)`` along `dim`.

        The view shares this tensor's memory and keeps it alive. Integers
        only (operator.index semantics); ``0 <= start <= size`` and
        ``0 <= length <= size - start``, a negative `dim` counts from the end.
        """
        cdef int64_t c_dim = _as_int64(dim, "narrow: dim")
        cdef int64_t c_start = _as_int64(start, "narrow: start")
        cdef int64_t c_length = _as_int64(length, "narrow: length")
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
        code = aotirt_tensor_dtype(self._t)
        typestr = _CODE_TYPESTRS.get(code)
        if typestr is None:
            raise AttributeError(f"{_DTYPE_NAMES.get(code)} tensors have no __cuda_array_interface__ "
                                 f"typestr: use DLPack (__dlpack__)")
        cdef aotirt_stream* s = aotirt_tensor_stream(self._t)
        stream = None
        if s is not NULL:
            # Never 0: the interface says 1 for the legacy default stream.
            stream = _consumer_stream_value(s)
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
            consumer = _dlpack_consumer_stream(stream)
            if consumer != 0:
                with nogil:
                    status = aotirt_tensor_order_before(self._t, <void*>consumer)
                check(status)
        elif stream is not None:
            raise BufferError(f"__dlpack__: a CPU tensor takes stream=None, got {stream!r}")
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        return _dlpack_capsule(self._t, versioned)

    def __repr__(self):
        name = _DTYPE_NAMES.get(aotirt_tensor_dtype(self._t), "?")
        return f"<aotirt.Tensor shape={self.shape} dtype={name} device={self.device}>"


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
        raise ValueError(f"the tensor is on {t.device}; moving tensors between devices is "
                         f"done with copy_to_host() and asarray()")
    if _takes_interop_path(obj):
        return _import_to(obj, device_type, device_index, NULL, stream, "asarray", False, True)
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
    shape = _shape_of(shape, "empty")
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


cdef int _check_out(Py_buffer* view, int32_t code, tuple shape) except -1:
    """copy_to_host's checks of a caller's `out`: the tensor's dtype and shape."""
    if code == 15:
        # bfloat16 has no buffer format of its own (ml_dtypes exports raw
        # 2-byte items): only the item size can be checked.
        if view.itemsize != 2:
            raise TypeError("copy_to_host: out must have 2-byte items for a bfloat16 tensor")
    elif _dtype_code(view, "copy_to_host: out") != code:
        raise TypeError(f"copy_to_host: out has format {_format(view)!r}, "
                        f"the tensor is {_DTYPE_NAMES.get(code)}")
    out_shape = tuple([view.shape[d] for d in range(view.ndim)]) if view.shape is not NULL else ()
    if out_shape != shape:
        raise ValueError(f"copy_to_host: out has shape {out_shape}, the tensor {shape}")
    return 0


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
    cdef aotirt_tensor* t = tensor._t
    cdef int32_t code = aotirt_tensor_dtype(t)
    shape = tensor.shape
    # An array made here has the tensor's shape and dtype by construction:
    # only a caller's `out` needs checking.
    cdef bint check_out = out is not None
    if out is None:
        out = _numpy().empty(shape, dtype=_numpy_dtype(code))
    cdef Py_buffer view
    try:
        PyObject_GetBuffer(out, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE)
    except (BufferError, ValueError) as e:  # numpy raises ValueError for these
        raise ValueError(f"copy_to_host: out must be a writable C-contiguous array ({e})") from None
    except TypeError:
        raise TypeError(f"copy_to_host: out must be an array, got {type(out).__name__}") from None
    cdef aotirt_status status
    try:
        if check_out:
            _check_out(&view, code, shape)
        with nogil:
            status = aotirt_copy_to_host(t, view.buf, <size_t>view.len)
        check(status)
    finally:
        PyBuffer_Release(&view)
    return out


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
            raise _mismatch("from_dlpack", t.device, device_type, device_index, False)
        return t
    if not _is_interop(x):
        raise TypeError(f"from_dlpack: expected an object with __dlpack__ or __cuda_array_interface__, "
                        f"got {type(x).__name__}")
    if device_type == AOTIRT_DEVICE_CPU:
        device_index = 0
    return _import_to(x, device_type, device_index, NULL, stream, "from_dlpack", False, False)


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
    np = _numpy()
    try:
        dt = _numpy_dtype(dtype_code_of(dtype))
    except TypeError:
        dt = np.dtype(dtype)
    shape = _shape_of(shape, "empty_pinned")
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
