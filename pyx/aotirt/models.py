"""The example model libraries that ship inside the package.

``add_mul`` (out = a * b + c) takes no weights. ``encoder`` and ``decoder``
are a speech-style pipeline whose weights ship beside the libraries
(:func:`weights`); :func:`open` gives a handle with them loaded.
"""

import builtins
import os

from aotirt import _layout
from aotirt._device import DEVICE_CPU, parse_device

_FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")


def available():
    """Names of the example models built into this installation."""
    if not os.path.isdir(_FOLDER):
        return []
    names = set()
    for entry in os.listdir(_FOLDER):
        for suffix in ("_cpu.so", "_cuda.so"):
            # Names with a leading underscore are test libraries, not models.
            if entry.endswith(suffix) and not entry.startswith("_"):
                names.add(entry[: -len(suffix)])
    return sorted(names)


def path(name, device="cpu"):
    """Path of example model `name` built for `device`.

    Parameters
    ----------
    name : str
        e.g. ``"add_mul"``.
    device : "cpu", "cuda", "cuda:N" or int
        Any CUDA device selects the CUDA build.

    Examples
    --------
    >>> aotirt.models.path("add_mul", "cpu")        # doctest: +ELLIPSIS
    '.../aotirt/models/add_mul_cpu.so'
    """
    kind = "cpu" if parse_device(device)[0] == DEVICE_CPU else "cuda"
    if name not in available():
        raise ValueError(f"no example model named {name!r}; available: {', '.join(available()) or 'none'}")
    file = os.path.join(_FOLDER, f"{name}_{kind}.so")
    if not os.path.isfile(file):
        raise ValueError(f"example model {name!r} was not built for {kind}")
    return file


def weights(name):
    """Path of the weights file of example model `name`.

    Examples
    --------
    >>> aotirt.models.weights("encoder")            # doctest: +ELLIPSIS
    '.../aotirt/models/encoder.weights'
    """
    if name not in _layout.LAYOUT:
        if name in available():
            raise ValueError(f"example model {name!r} has no weights")
        raise ValueError(f"no example model named {name!r} with weights; "
                         f"those with weights: {', '.join(sorted(_layout.LAYOUT))}")
    file = os.path.join(_FOLDER, f"{name}.weights")
    if not os.path.isfile(file):
        raise ValueError(f"the weights of example model {name!r} were not built ({file} is missing)")
    return file


def open(name, device="cpu", weights=None, stream=None, *, graphs=False, max_graphs=8, outputs="copy"):
    """A handle on example model `name` for `device`, its weights loaded.

    The weights are loaded by name, through the container's constant
    functions (:meth:`~aotirt.AotiHandle.update_constants`), as for a torch
    library: ``handle.constants`` lists them, and ``update_constants`` and
    ``swap_constants`` replace them later.

    Parameters
    ----------
    name : str
        ``"encoder"``, ``"decoder"`` or ``"add_mul"`` (which has no weights).
    device : "cpu", "cuda", "cuda:N" or int
        The CPU gives an :class:`~aotirt.AotiHandle`, a GPU a
        :class:`~aotirt.CudaHandle` (on the device's shared stream).
    weights : str, os.PathLike, Weights or mapping, optional
        Instead of the weights that ship with the model: a weights file in
        the model's blob layout (its size is checked first), a
        ``.safetensors`` file, or ``{name: array}`` (see
        :func:`aotirt.load_weights`).
    stream : Stream, object with ``__cuda_stream__``, or None
        For a GPU: the stream to run on (None: the device's shared stream).
    graphs, max_graphs, outputs
        Automatic CUDA graphs, as for :class:`~aotirt.CudaHandle` (a no-op
        on the CPU).

    Examples
    --------
    >>> with aotirt.models.open("encoder", "cpu") as encoder:   # doctest: +SKIP
    ...     (hidden,) = encoder.run([frames])
    """
    from aotirt.loader import open_handle

    library = path(name, device)
    named = None
    if name in _layout.LAYOUT or weights is not None:
        named = _named_weights(name, weights)
    return open_handle(library, device, stream, graphs=graphs, max_graphs=max_graphs, outputs=outputs, named=named)


def _named_weights(name, given):
    """The mapping open() gives update_constants."""
    if name not in _layout.LAYOUT:
        raise ValueError(f"example model {name!r} has no weights")
    if given is not None and not isinstance(given, (str, bytes, os.PathLike)):
        return given                                # Weights or {name: array}
    file = os.fsdecode(given) if given is not None else weights(name)
    if file.endswith(".safetensors"):
        from aotirt.weights import load_weights

        return load_weights(file)
    from aotirt.weights import Weights

    # One source of truth for the blob's layout: _layout.LAYOUT, which the
    # libraries' constants and make_weights.py are checked against.
    return Weights(_layout.split(name, _read_blob(name, file)), source=file)


def _read_blob(name, file):
    """The blob of `file`, checked to be model `name`'s size (writable: the
    arrays split from it are handed on as they are)."""
    expected = _layout.nbytes(name)
    blob = bytearray(expected + 1)
    with builtins.open(file, "rb") as f:
        size = f.readinto(blob)
    if size != expected:
        size = f"more than {expected}" if size > expected else str(size)
        raise ValueError(f"{file} has {size} bytes, the {name} model's weights are {expected} bytes "
                         f"(a truncated file, or not this model's weights)")
    return memoryview(blob)[:expected]
