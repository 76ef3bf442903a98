"""Weights by name: what a model's constants are, and new values for them.

``handle.constants`` lists a model's constants as the library says (through
the AOTInductor container ABI); ``handle.update_constants(mapping)`` replaces
them by name or by the module's path (its ``state_dict`` key). This module
turns what users give (numpy arrays, aotirt Tensors, DLPack or CUDA array
interface objects, safetensors files, another handle's weights) into the
tensors the core checks and hands to the library.
"""

import os
from collections.abc import Mapping
from contextlib import contextmanager
from typing import NamedTuple, Optional

from aotirt._errors import AotiError

__all__ = ["Constant", "Weights", "load_weights"]

# What torch.save writes: a zip archive (torch >= 1.6) or a bare pickle.
_TORCH_SAVE_MAGICS = (b"PK\x03\x04", b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")


class Constant(NamedTuple):
    """One constant of a model, as its library lists it."""

    name: str                       # the library's own name
    fqn: Optional[str]              # the module's path, its state_dict key
    dtype: Optional[str]            # "float32", ...
    shape: Optional[tuple[int, ...]]  # None until a value is loaded
    nbytes: int
    kind: str                       # "parameter", "buffer", "tensor constant", "folded", "unknown"
    folded: bool                    # made by constant folding: not given by users
    shared: bool                    # the active value is aotirt's (another handle can share it)


class Weights(Mapping):
    """A set of named arrays for :meth:`AotiHandle.update_constants`.

    On a GPU (``device=0``) they are uploaded once, and every handle of that
    device that takes them uses these tensors as they are, without a copy:
    N handles of one model hold one copy of the weights (buffers, which a
    model may write, are copied per handle). On the CPU (``device=None``)
    they are numpy arrays, copied by each handle.

    Keys are what the model's constants are called: their names or their
    module paths (``state_dict`` keys), as :func:`load_weights` reads them.
    """

    def __init__(self, arrays, *, device=None, source=None):
        self._values = dict(arrays)
        self.device = device
        self.source = source  # the file they came from, for messages

    def __getitem__(self, key):
        return self._values[key]

    def __iter__(self):
        return iter(self._values)

    def __len__(self):
        return len(self._values)

    @property
    def nbytes(self):
        return sum(_nbytes(v) for v in self._values.values())

    def __repr__(self):
        where = f" from {self.source!r}" if self.source else ""
        return f"<aotirt.Weights: {len(self)} arrays, {self.nbytes} bytes on {self.device or 'cpu'}{where}>"


def _nbytes(value):
    nbytes = getattr(value, "nbytes", None)
    if nbytes is not None:
        return int(nbytes)
    import numpy as np

    return int(np.prod(value.shape)) * np.dtype(value.dtype).itemsize


def load_weights(path, device=None):
    """The arrays of a ``.safetensors`` file, as :class:`Weights`.

    Read with the ``safetensors`` library (``pip install safetensors``), in
    its numpy form; keys stay as saved (a ``state_dict`` saved with
    ``safetensors.torch.save_file`` is keyed by module path, which is what
    ``update_constants`` matches). With `device` (``0``, ``"cuda:0"``) the
    arrays are uploaded once, to be shared by every handle that takes them.

    Files written by ``torch.save`` (``.pt``, ``.pth``, ``.bin``) need torch
    to read (they are pickles) and are refused saying so.
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError as e:
        raise ValueError(f"cannot read weights file {path}: {e.strerror or e}") from None
    if head.startswith(_TORCH_SAVE_MAGICS):
        raise ValueError(f"{path} was written by torch.save (a pickle): reading it needs torch, which aotirt "
                         "does not use. Save the weights with safetensors instead "
                         "(safetensors.torch.save_file(module.state_dict(), 'model.safetensors'))")
    try:
        from safetensors import SafetensorError, safe_open
    except ImportError:
        raise ImportError("reading .safetensors files needs the safetensors package: "
                          "pip install safetensors") from None
    arrays = {}
    try:
        with safe_open(path, framework="numpy") as f:
            for key in f.keys():
                arrays[key] = f.get_tensor(key)
    except (SafetensorError, OSError, ValueError, TypeError) as e:
        raise ValueError(f"cannot read weights file {path} with safetensors: {e}") from None
    if device is None or device == "cpu":
        return Weights(arrays, device=None, source=path)
    from aotirt._convert import asarray

    uploaded = {}
    for key, value in arrays.items():
        try:
            uploaded[key] = asarray(value, device=device)
        except (TypeError, ValueError) as e:
            raise type(e)(f"{path}: constant {key!r}: {e}") from None
    return Weights(uploaded, device=device, source=path)


@contextmanager
def naming_source(mapping):
    """Adds the file the values came from to a failure of an update with
    them (a :class:`Weights` read from one), so that the message names the
    constant, the model, the file and the reason."""
    source = mapping.source if isinstance(mapping, Weights) else None
    try:
        yield
    except (ValueError, TypeError, AotiError) as e:
        # Only these: their constructors take the message alone.
        if source is None or type(e) not in (ValueError, TypeError, AotiError) or str(source) in str(e):
            raise
        raise type(e)(f"{e} (the new values came from {source})") from None


def prepare_update(handle, mapping):
    """[(key, Tensor, share), ...] for the core: each value on the handle's
    device or the host, `share` where the core may keep it without a copy."""
    if isinstance(mapping, (str, bytes, os.PathLike)):
        raise TypeError("update_constants takes a mapping {name: array}; for a file, "
                        "pass aotirt.load_weights(path)")
    if not isinstance(mapping, Mapping):
        raise TypeError(f"update_constants takes a mapping {{name: array}}, got {type(mapping).__name__}")
    from aotirt._convert import asarray
    from aotirt._tensor import Tensor

    device = handle.device
    on_gpu = device != "cpu"
    stream = getattr(handle, "stream", None)
    dtypes = {}
    for c in handle.constants:
        dtypes[c.name] = dtypes[c.fqn] = c.dtype
    shared_set = isinstance(mapping, Weights) and mapping.device is not None
    prepared = []
    for key, value in mapping.items():
        if not isinstance(key, str):
            raise TypeError(f"constant names are strings, got {key!r}")
        if isinstance(value, Tensor):
            prepared.append((key, value, shared_set))
            continue
        try:
            import numpy as np

            host = isinstance(value, np.ndarray)
            # bfloat16 host data travels as its bits in uint16.
            dtype = "bfloat16" if host and dtypes.get(key) == "bfloat16" and value.dtype == np.uint16 else None
            if host and not on_gpu:
                tensor = asarray(value, device="cpu", dtype=dtype)   # wrapped: the core copies it
            else:
                tensor = asarray(value, device=device, stream=stream if host else None, dtype=dtype)
        except (TypeError, ValueError) as e:
            raise type(e)(f"constant {key!r}: {e}") from None
        # A host array uploaded for this call belongs to nobody else: kept as it is.
        prepared.append((key, tensor, host and on_gpu))
    return prepared


def weights_of(handle):
    """The handle's active constants that aotirt owns, as shared Weights."""
    values = {}
    for i, c in enumerate(handle.constants):
        if c.folded:
            continue
        values[c.fqn or c.name] = handle._constant_value(i)   # ValueError when the library owns it
    return Weights(values, device=handle.device if handle.device != "cpu" else None, source=handle.path)
