"""What the tests and the benchmarks know of the compiled zoo without
importing torch: the zoo's model names, the cache key build.py files them
under, and a Python that has torch. Standard library only."""

import ast
import hashlib
import importlib.metadata
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


# What the compiled zoo is made of: a change to any of them rebuilds it.
SOURCES = ("zoo.py", "zoo_architectures.py", "op_models.py", "static_decoder.py", "build.py", "torch_runner.py")


def _assignment(variable):
    """The value node of zoo.py's top-level `variable = ...`, read from its source."""
    with open(os.path.join(HERE, "zoo.py")) as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == variable for t in node.targets):
            return node.value
    raise LookupError(f"{HERE}/zoo.py defines no {variable}")


def zoo_names():
    """The keys of zoo.py's ZOO dict, in order."""
    return [ast.literal_eval(key) for key in _assignment("ZOO").keys]


def awaiting_shims():
    """zoo.py's AWAITING_SHIMS: model -> the aoti_torch_* functions it is known to need that aotirt lacks."""
    return ast.literal_eval(_assignment("AWAITING_SHIMS"))


def _version(package):
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def cache_key(device):
    """The folder name (under the cache) of `device`'s models: a hash of the
    zoo's SOURCES (the models, the build, torch's runner helper), the versions of torch,
    torchvision and transformers, and the device."""
    digest = hashlib.sha256()
    for name in SOURCES:
        with open(os.path.join(HERE, name), "rb") as f:
            digest.update(f.read())
    for package in ("torch", "torchvision", "transformers"):
        digest.update(f"{package}={_version(package)};".encode())
    digest.update(device.encode())
    return digest.hexdigest()[:16]


def default_cache():
    return os.environ.get("AOTIRT_AOTI_CACHE", os.path.join(REPO, ".cache", "aoti"))


def torch_python():
    """A Python with torch, found without importing it: AOTIRT_TORCH_PYTHON,
    this interpreter, or the repository's .venv-torch (make torch-venv);
    None when there is none."""
    explicit = os.environ.get("AOTIRT_TORCH_PYTHON")
    if explicit:
        return explicit
    if importlib.util.find_spec("torch") is not None:
        return sys.executable
    candidate = os.path.join(REPO, ".venv-torch", "bin", "python")
    return candidate if os.path.exists(candidate) else None
