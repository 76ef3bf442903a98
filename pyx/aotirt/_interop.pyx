"""DLPack and the CUDA array interface: other libraries' arrays in (torch,
CuPy, Numba, cuda.core, JAX, numpy), without a copy, and aotirt's tensors out.

Imports give core tensors (aotirt_tensor*), which the caller wraps; the
exports are the parts of Tensor.__dlpack__ and __cuda_array_interface__ that
need no Tensor.

Module order: cimports _errors, _dtypes, _device, _stream and _host.
"""

from cpython.buffer cimport PyObject_CheckBuffer
from cpython.exc cimport PyErr_Fetch, PyErr_Restore
from cpython.number cimport PyNumber_Index
from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid, PyCapsule_New, PyCapsule_SetName
from cpython.ref cimport Py_INCREF, Py_XDECREF, PyObject
from libc.stdint cimport int32_t, int64_t, uintptr_t

from aotirt._capi cimport (
    AOTIRT_DEVICE_CPU, AOTIRT_DEVICE_CUDA, AOTIRT_MAX_DIMS, AOTIRT_OK, DLManagedTensor, DLManagedTensorVersioned,
    aotirt_dtype_itemsize, aotirt_pointer_device, aotirt_status, aotirt_stream, aotirt_stream_device,
    aotirt_stream_handle, aotirt_tensor, aotirt_tensor_from_dlpack, aotirt_tensor_from_dlpack_versioned,
    aotirt_tensor_mark_read_only, aotirt_tensor_to_dlpack, aotirt_tensor_to_dlpack_versioned,
    aotirt_tensor_wrap_device, kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged,
)
from aotirt._device cimport device_name
from aotirt._dtypes cimport numpy_module, typestr_dtype
from aotirt._errors cimport check
from aotirt._host cimport as_int64, upload
from aotirt._stream cimport Stream, as_stream

# The standard's capsule names. A consumer renames the capsule it takes over,
# so that the capsule's destructor leaves the tensor (and its deleter) to it.
cdef const char* _DLTENSOR = b"dltensor"
cdef const char* _USED_DLTENSOR = b"used_dltensor"
cdef const char* _DLTENSOR_VERSIONED = b"dltensor_versioned"
cdef const char* _USED_DLTENSOR_VERSIONED = b"used_dltensor_versioned"


# ---- other libraries' arrays in -------------------------------------------

cdef bint is_interop(object obj):
    return hasattr(obj, "__dlpack__") or hasattr(obj, "__cuda_array_interface__")


cdef bint takes_interop_path(object obj):
    """Whether an input goes through DLPack / the CUDA array interface rather
    than the buffer protocol. Device arrays always do, even when their type
    claims the buffer protocol only to refuse it (CuPy's ndarray); host arrays
    (numpy, which also has __dlpack__) keep the buffer path."""
    if hasattr(type(obj), "__cuda_array_interface__"):
        return True
    return not PyObject_CheckBuffer(obj) and is_interop(obj)


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


cdef object mismatch(str what, str found, int device_type, int device_index, bint for_model):
    wanted = device_name(device_type, device_index)
    if for_model:
        return ValueError(f"{what} is on {found}, the model runs on {wanted}")
    return ValueError(f"{what}: the array is on {found}, not on {wanted} (aotirt does not move data "
                      f"between devices here; copy_to_host() brings device data to the host)")


cdef uintptr_t consumer_stream_value(aotirt_stream* stream):
    # The consumer stream aotirt hands a DLPack producer: its cudaStream_t,
    # or 1 for the legacy default stream (0, which the standard disallows).
    cdef uintptr_t handle = <uintptr_t>aotirt_stream_handle(stream)
    return handle if handle != 0 else 1


cdef aotirt_tensor* import_array(object obj, int device_type, int device_index, aotirt_stream* stream,
                                 object stream_obj, str what, bint for_model, bint upload_host) except NULL:
    """A tensor over the data of a DLPack or CUDA-array-interface object.

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
                raise mismatch(what, f"cuda:{dl_id}", device_type, device_index, for_model)
            if stream is NULL and stream_obj is not None:
                keep = as_stream(stream_obj, dl_id)
                stream = keep._stream
            return _import_dlpack(obj, True, dl_id, stream, what)
        if dl_type == kDLCPU or dl_type == kDLCUDAHost:
            if device_type != AOTIRT_DEVICE_CUDA:
                return _import_dlpack(obj, False, 0, NULL, what)
            if not upload_host:
                raise mismatch(what, "cpu", device_type, device_index, for_model)
            # Host data for a GPU: uploaded, exactly as a host array is.
            if stream is NULL and stream_obj is not None:
                keep = as_stream(stream_obj, device_index)
                stream = keep._stream
            return upload(numpy_module().from_dlpack(obj), device_index, stream, what)
        raise ValueError(f"{what}: DLPack device type {dl_type} is not supported (aotirt takes "
                         f"kDLCPU 1, kDLCUDA 2, kDLCUDAHost 3, kDLCUDAManaged 13)")
    if hasattr(obj, "__cuda_array_interface__"):
        if device_type == AOTIRT_DEVICE_CPU:
            raise mismatch(what, "a CUDA device (__cuda_array_interface__)", device_type, device_index, for_model)
        return _import_cai(obj, device_index, stream, stream_obj, what, for_model)
    raise TypeError(f"{what}: expected an object with __dlpack__ or __cuda_array_interface__, "
                    f"got {type(obj).__name__}")


cdef aotirt_tensor* _import_dlpack(object obj, bint cuda, int device_index, aotirt_stream* stream,
                                   str what) except NULL:
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
        consumer = consumer_stream_value(stream)
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
    return t


cdef aotirt_tensor* _import_cai(object obj, int device_index, aotirt_stream* stream, object stream_obj,
                                str what, bint for_model) except NULL:
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
    cdef int32_t dtype = typestr_dtype(typestr, what)
    cdef int64_t itemsize = aotirt_dtype_itemsize(dtype)
    cdef int ndim = len(shape)
    if ndim > AOTIRT_MAX_DIMS:
        raise ValueError(f"{what}: {ndim} dimensions, at most {AOTIRT_MAX_DIMS} are supported")
    cdef int64_t sizes[AOTIRT_MAX_DIMS]
    cdef int64_t strides[AOTIRT_MAX_DIMS]
    cdef int64_t* c_strides = NULL
    cdef int d
    for d in range(ndim):
        sizes[d] = as_int64(shape[d], f"{what}: __cuda_array_interface__ shape")
    byte_strides = cai.get("strides")
    if byte_strides is not None:
        if len(byte_strides) != ndim:
            raise ValueError(f"{what}: __cuda_array_interface__ has {len(byte_strides)} strides "
                             f"for {ndim} dimensions")
        for d in range(ndim):
            stride = as_int64(byte_strides[d], f"{what}: __cuda_array_interface__ stride")
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
        raise mismatch(what, f"cuda:{device}", AOTIRT_DEVICE_CUDA, device_index, for_model)
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
    if data[1]:
        aotirt_tensor_mark_read_only(t)  # the interface's read-only flag
    return t


# ---- aotirt's tensors out ---------------------------------------------------

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


cdef object dlpack_capsule(aotirt_tensor* t, bint versioned):
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


cdef uintptr_t dlpack_consumer_stream(object stream) except? 0:
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
