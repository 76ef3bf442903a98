from aotirt._capi cimport aotirt_stream

cdef class Stream:
    cdef aotirt_stream* _stream
    # The object whose stream was adopted, kept alive as long as we use it.
    cdef object _owner
    # The stream, or ValueError once closed.
    cdef aotirt_stream* get(self) except NULL

# Wraps a new reference (the Stream takes it over).
cdef Stream stream_from_reference(aotirt_stream* stream, object owner=*)
# A Stream from an aotirt Stream, an object with __cuda_stream__, or None
# (the shared stream of `device`).
cdef Stream as_stream(object obj, int device)
