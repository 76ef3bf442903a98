from libc.stdint cimport int32_t

from aotirt._capi cimport aotirt_handle, aotirt_stream
from aotirt._stream cimport Stream


cdef class AotiHandle:
    cdef aotirt_handle* _h
    cdef readonly str path
    cdef readonly size_t num_inputs
    cdef readonly size_t num_outputs
    cdef int32_t _device_type
    cdef int _device_index
    cdef bint _graphs  # automatic graphs enabled: runs may have a warning to give

    cdef int _enable_graphs(self, tuple options) except -1
    cdef int _warn_if_graphs_went_off(self) except -1
    cdef int _open(self, path, int32_t device_type, int device_index, aotirt_stream* stream) except -1
    cdef object _names(self, bint inputs)
    cdef aotirt_handle* _live(self) except NULL


cdef class CudaHandle(AotiHandle):
    cdef Stream _stream
