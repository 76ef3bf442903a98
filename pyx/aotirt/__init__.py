"""aotirt: run ahead-of-time compiled models (AOTInductor libraries) from Python.

One loaded model library is a handle. Every CUDA handle of a device runs on
one shared stream, and the host waits for the GPU only when data is copied
back to it (:func:`copy_to_host`, :meth:`Tensor.numpy`).

``import aotirt`` does no CUDA work and does not import numpy.
"""

from aotirt._convert import asarray, empty, from_dlpack
from aotirt._device import device_count
from aotirt._errors import AotiError, CudaError
from aotirt._graph import Graph
from aotirt._handle import AotiHandle, CudaHandle
from aotirt._host import empty_pinned
from aotirt._library import set_cudnn_allow_tf32
from aotirt._stream import Stream
from aotirt._tensor import Tensor, copy_to_host

__version__ = "0.1.0"

__all__ = [
    "AotiError", "AotiHandle", "CudaError", "CudaHandle", "Graph", "Stream", "Tensor",
    "Weights", "asarray", "copy_to_host", "device_count", "empty", "empty_pinned", "from_dlpack", "load",
    "load_weights", "models", "set_cudnn_allow_tf32",
]


def __getattr__(name):
    # Submodules that import time does not need load on first use.
    if name == "models":
        import aotirt.models
        return aotirt.models
    if name == "load":
        from aotirt.loader import load
        return load
    if name in ("Weights", "load_weights"):
        import aotirt.weights
        return getattr(aotirt.weights, name)
    raise AttributeError(f"module 'aotirt' has no attribute {name!r}")
