# Type stubs for aotirt's public API (the package is compiled Cython: these
# are what type checkers and editors see).
import os
from types import TracebackType
from typing import (
    Any,
    Dict,
    List,
    Literal,
    Optional,
    Protocol,
    Sequence,
    SupportsInt,
    Tuple,
    Type,
    TypedDict,
    TypeVar,
    Union,
)

import numpy as np
import numpy.typing as npt

from . import models as models
from .weights import Constant as Constant
from .weights import Weights as Weights
from .weights import load_weights as load_weights

__version__: str
__all__ = [
    "AotiError", "AotiHandle", "CudaError", "CudaHandle", "Graph", "Stream", "Tensor",
    "Weights", "asarray", "copy_to_host", "device_count", "empty", "empty_pinned", "from_dlpack", "load",
    "load_weights", "models", "set_cudnn_allow_tf32",
]

_H = TypeVar("_H", bound="AotiHandle")

class _Cuda_StreamLike(Protocol):
    def __cuda_stream__(self) -> Tuple[int, int]: ...

class _DLPackLike(Protocol):
    def __dlpack__(self, *, stream: Optional[int] = ...) -> Any: ...
    def __dlpack_device__(self) -> Tuple[int, int]: ...

class _CudaStreamAttrLike(Protocol):  # older torch streams
    @property
    def cuda_stream(self) -> int: ...

class _PtrStreamLike(Protocol):  # older CuPy streams
    @property
    def ptr(self) -> int: ...

class _CudaArrayLike(Protocol):
    @property
    def __cuda_array_interface__(self) -> Dict[str, Any]: ...

# "cpu", "cuda", "cuda:N", or a CUDA device index.
_DeviceLike = Union[str, int]
# An aotirt Stream, anything with __cuda_stream__ (torch, CuPy, cuda.core),
# an object with an int .cuda_stream/.ptr, a cuda.bindings CUstream or
# cudaStream_t, or a raw cudaStream_t address.
_StreamLike = Union["Stream", _Cuda_StreamLike, _CudaStreamAttrLike, _PtrStreamLike, SupportsInt]
# A numpy dtype, a scalar type (np.float32) or a name ("float32").
_DTypeLike = Union[str, np.dtype[Any], Type[Any]]
# What a run takes as an input: a Tensor, a host array (buffer protocol), or
# a DLPack / CUDA-array-interface object (torch, CuPy, Numba, cuda.core).
_InputLike = Union["Tensor", npt.ArrayLike, _DLPackLike, _CudaArrayLike]

class CudaError(RuntimeError):
    code: int
    name: str
    def __init__(self, message: str, code: int = ..., name: str = ...) -> None: ...

class AotiError(RuntimeError): ...

class Stream:
    @staticmethod
    def shared(device: int = ...) -> Stream: ...
    @staticmethod
    def create(device: int = ...) -> Stream: ...
    @staticmethod
    def from_external(obj: _StreamLike, device: Optional[int] = ...) -> Stream: ...
    @property
    def handle(self) -> int: ...
    @property
    def device(self) -> int: ...
    def __cuda_stream__(self) -> Tuple[int, int]: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...

class Tensor:
    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def strides(self) -> Tuple[int, ...]: ...
    @property
    def ndim(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def dtype(self) -> np.dtype[Any]: ...
    @property
    def device(self) -> str: ...
    @property
    def is_contiguous(self) -> bool: ...
    @property
    def data_ptr(self) -> int: ...
    @property
    def stream(self) -> Optional[Stream]: ...
    def numpy(self) -> npt.NDArray[Any]: ...
    def narrow(self, dim: int, start: int, length: int) -> Tensor: ...
    def copy_(self, src: Tensor) -> Tensor: ...
    def to(self, device: _DeviceLike, stream: Optional[_StreamLike] = ...) -> Tensor: ...
    @property
    def __cuda_array_interface__(self) -> Dict[str, Any]: ...
    def __dlpack_device__(self) -> Tuple[int, int]: ...
    def __dlpack__(
        self,
        *,
        stream: Optional[int] = ...,
        max_version: Optional[Tuple[int, int]] = ...,
        dl_device: Optional[Tuple[int, int]] = ...,
        copy: Optional[bool] = ...,
    ) -> Any: ...

class _GraphStats(TypedDict):
    enabled: bool
    graphs: int
    instances: int
    hits: int
    captures: int
    evictions: int
    invalidations: int
    eager_runs: int
    memory_bytes: int
    output_copies: int
    disabled_reason: Optional[str]

class AotiHandle:
    path: str
    # graphs=True is accepted and does nothing on the CPU (graph_stats says why).
    def __init__(
        self,
        path: Union[str, os.PathLike[str]],
        device: Literal["cpu"] = ...,
        *,
        graphs: bool = ...,
        max_graphs: int = ...,
        outputs: Literal["copy", "static"] = ...,
    ) -> None: ...
    def run(self, inputs: Sequence[_InputLike]) -> List[Tensor]: ...
    # (collected: one (steps, *shape) Tensor per index in collect, the last step's outputs)
    def loop(
        self,
        inputs: Sequence[_InputLike],
        steps: int,
        *,
        feedback: Sequence[Tuple[int, int]] = ...,
        collect: Sequence[int] = ...,
    ) -> Tuple[List[Tensor], List[Tensor]]: ...
    @property
    def graph_stats(self) -> _GraphStats: ...
    def update_constants_from_blob(self, blob: Any) -> None: ...
    def seed(self, seed: Optional[int] = None) -> int: ...
    def __call__(self, *inputs: _InputLike) -> Tuple[Tensor, ...]: ...
    @property
    def constants(self) -> List[Constant]: ...
    def update_constants(self, mapping: Any, *, inactive: bool = ...) -> None: ...
    def swap_constants(self) -> None: ...
    @property
    def weights(self) -> Weights: ...
    def close(self) -> None: ...
    def __enter__(self: _H) -> _H: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def num_inputs(self) -> int: ...
    @property
    def num_outputs(self) -> int: ...
    @property
    def input_names(self) -> Optional[List[str]]: ...
    @property
    def output_names(self) -> Optional[List[str]]: ...
    @property
    def device(self) -> str: ...

class CudaHandle(AotiHandle):
    def __init__(  # type: ignore[override]
        self,
        path: Union[str, os.PathLike[str]],
        device: _DeviceLike = ...,
        stream: Optional[_StreamLike] = ...,
        *,
        graphs: bool = ...,
        max_graphs: int = ...,
        outputs: Literal["copy", "static"] = ...,
    ) -> None: ...
    @property
    def stream(self) -> Stream: ...
    def capture(
        self,
        example_inputs: Sequence[_InputLike],
        *,
        warmup: int = ...,
        feedback: Optional[Sequence[Tuple[int, int]]] = ...,
    ) -> Graph: ...

class Graph:
    # Made by CudaHandle.capture only.
    def replay(self, inputs: Optional[Sequence[_InputLike]] = ...) -> Tuple[Tensor, ...]: ...
    @property
    def inputs(self) -> Tuple[Tensor, ...]: ...
    @property
    def outputs(self) -> Tuple[Tensor, ...]: ...
    @property
    def handle(self) -> CudaHandle: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    def __enter__(self) -> Graph: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...

def device_count() -> int: ...
def set_cudnn_allow_tf32(flag: bool) -> None: ...
def asarray(obj: _InputLike, device: _DeviceLike = ..., stream: Optional[_StreamLike] = ...,
            dtype: Optional[_DTypeLike] = ...) -> Tensor: ...
def load(path: Union[str, os.PathLike[str]], device: Optional[_DeviceLike] = ..., *,
         stream: Optional[_StreamLike] = ..., model: Optional[str] = ..., graphs: bool = ...,
         max_graphs: int = ..., outputs: Literal["copy", "static"] = ...,
         weights: Any = ..., share_weights_with: Optional[AotiHandle] = ...) -> AotiHandle: ...
def empty(
    shape: Sequence[int], dtype: _DTypeLike = ..., device: _DeviceLike = ..., stream: Optional[_StreamLike] = ...
) -> Tensor: ...
def empty_pinned(shape: Union[int, Sequence[int]], dtype: _DTypeLike = ...) -> npt.NDArray[Any]: ...
def from_dlpack(
    x: Union[Tensor, _DLPackLike, _CudaArrayLike, Any],
    /,
    *,
    device: Union[_DeviceLike, Tuple[int, int], None] = ...,
    copy: Optional[bool] = ...,
    stream: Optional[_StreamLike] = ...,
) -> Tensor: ...
def copy_to_host(tensor: Tensor, out: Optional[Any] = ...) -> npt.NDArray[Any]: ...
