from libc.stdint cimport uintptr_t

from aotirt._capi cimport aotirt_stream, aotirt_tensor

# Whether `obj` has __dlpack__ or __cuda_array_interface__.
cdef bint is_interop(object obj)

# Whether an input takes the interop path rather than the buffer protocol:
# device arrays always do, host arrays with the buffer protocol (numpy) never.
cdef bint takes_interop_path(object obj)

# The ValueError for data found on `found`, not on the device wanted; worded
# for a run input (`for_model`) or for a conversion.
cdef object mismatch(str what, str found, int device_type, int device_index, bint for_model)

# A new tensor over the data of a DLPack or CUDA-array-interface object,
# without a copy (host data for a GPU is uploaded when `upload_host`).
# `device_type`/`device_index` is where the data must be (-1: anywhere);
# device data belongs to `stream`, else to `stream_obj` adopted, else to the
# device's shared stream. Errors name `what`.
cdef aotirt_tensor* import_array(object obj, int device_type, int device_index, aotirt_stream* stream,
                                 object stream_obj, str what, bint for_model, bint upload_host) except NULL

# The stream value aotirt gives a DLPack producer or a CUDA-array-interface
# consumer: the cudaStream_t, or 1 for the legacy default stream (never 0).
cdef uintptr_t consumer_stream_value(aotirt_stream* stream)

# A new DLPack capsule that owns an export of `t` ("dltensor_versioned" when
# `versioned`, else "dltensor").
cdef object dlpack_capsule(aotirt_tensor* t, bint versioned)

# The consumer stream of __dlpack__(stream=...) to order before; 0: none.
cdef uintptr_t dlpack_consumer_stream(object stream) except? 0
