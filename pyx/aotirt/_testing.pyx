"""Hooks for aotirt's own tests: not part of the API.

Nothing in aotirt imports this module; the tests do, to reach what the
public classes do not show.

Module order: cimports _tensor only.
"""

from libc.stdint cimport uintptr_t

from aotirt._tensor cimport Tensor


def tensor_handle(Tensor tensor not None):
    """The AtenTensorHandle (``aotirt_tensor*``) behind `tensor`, as an int.

    The tests call the ``aoti_torch_*`` shims through ctypes with it. The
    handle stays owned by the Tensor: never delete it, and keep the Tensor
    alive while the handle is used.
    """
    return <uintptr_t>tensor._t
