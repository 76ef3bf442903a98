"""The example model libraries that ship inside the package."""

import os

_FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")


def available():
    """Names of the example models built into this installation."""
    if not os.path.isdir(_FOLDER):
        return []
    names = set()
    for entry in os.listdir(_FOLDER):
        for suffix in ("_cpu.so", "_cuda.so"):
            if entry.endswith(suffix):
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
    if isinstance(device, int) and not isinstance(device, bool):
        kind = "cuda"
    elif device == "cpu":
        kind = "cpu"
    elif isinstance(device, str) and (device == "cuda" or device.startswith("cuda:")):
        kind = "cuda"
    else:
        raise ValueError(f"device must be 'cpu', 'cuda', 'cuda:N' or an int, got {device!r}")
    if name not in available():
        raise ValueError(f"no example model named {name!r}; available: {', '.join(available()) or 'none'}")
    file = os.path.join(_FOLDER, f"{name}_{kind}.so")
    if not os.path.isfile(file):
        raise ValueError(f"example model {name!r} was not built for {kind}")
    return file
