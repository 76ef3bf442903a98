"""The exceptions aotirt raises, and the one helper that raises them."""

from aotirt._capi cimport (
    AOTIRT_ERROR_CLOSED, AOTIRT_ERROR_CUDA, AOTIRT_ERROR_MEMORY, AOTIRT_ERROR_TYPE,
    AOTIRT_ERROR_VALUE, AOTIRT_OK, aotirt_last_error_cuda_code, aotirt_last_error_cuda_name,
    aotirt_last_error_message, aotirt_status,
)


class CudaError(RuntimeError):
    """A CUDA call failed.

    Attributes
    ----------
    code : int
        The ``cudaError_t`` value.
    name : str
        Its name, e.g. ``"cudaErrorNoDevice"``; the message starts with it.
    """

    def __init__(self, message, code=0, name=""):
        super().__init__(message)
        self.code = code
        self.name = name


class AotiError(RuntimeError):
    """Loading a model library or running it failed.

    The message names the library file and the symbol or container call that
    failed, followed by the model's own reason when it gave one.
    """


cdef int _raise_last_error(aotirt_status status) except -1:
    message = aotirt_last_error_message().decode("utf-8", "replace")
    if status == AOTIRT_ERROR_CUDA:
        raise CudaError(message, aotirt_last_error_cuda_code(),
                        aotirt_last_error_cuda_name().decode("ascii", "replace"))
    if status == AOTIRT_ERROR_VALUE:
        raise ValueError(message)
    if status == AOTIRT_ERROR_TYPE:
        raise TypeError(message)
    if status == AOTIRT_ERROR_CLOSED:
        raise ValueError(message)
    if status == AOTIRT_ERROR_MEMORY:
        raise MemoryError(message)
    raise AotiError(message)


cdef int check(aotirt_status status) except -1 nogil:
    if status == AOTIRT_OK:
        return 0
    # The core's last error is thread-local, so it is still ours to read here.
    with gil:
        return _raise_last_error(status)
