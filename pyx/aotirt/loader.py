"""aotirt.load: open an AOTInductor model library or .pt2 package.

A .pt2 package (what ``torch._inductor.aoti_compile_and_package`` writes) is a
zip file; its library and kernels are under ``<root>/data/aotinductor/<model>/``.
They are extracted once into aotirt's cache folder (``$AOTIRT_CACHE``, else
``~/.cache/aotirt``), in a folder named by the package's SHA-256, and reused.

Packages are untrusted input until loaded: extraction refuses entries whose
paths escape their folder, links, and sizes past a limit, and writes nothing
outside its own cache folder. Loading the library then runs its code:
load only packages you trust.
"""

import hashlib
import json
import os
import shutil
import stat
import tempfile
import zipfile

# Largest single entry and largest total that extraction accepts. A package's
# declared sizes are checked before anything is written; zipfile then checks
# that each entry inflates to exactly its declared size and CRC.
MAX_ENTRY_BYTES = int(os.environ.get("AOTIRT_PT2_MAX_ENTRY_BYTES", 8 << 30))
MAX_TOTAL_BYTES = int(os.environ.get("AOTIRT_PT2_MAX_TOTAL_BYTES", 32 << 30))

_AOTI_DIR = "data/aotinductor/"


def cache_root():
    """The folder packages are extracted into."""
    root = os.environ.get("AOTIRT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "aotirt")
    return os.path.join(root, "pt2")


def load(path, device=None, *, stream=None, model=None):
    """Open an AOTInductor model: a library (.so) or a package (.pt2).

    Parameters
    ----------
    path : str or os.PathLike
    device : "cpu", "cuda", "cuda:N", int or None
        None: the device the package was compiled for (its metadata), or for
        a bare library, CUDA when it calls the CUDA runtime and the CPU
        otherwise.
    stream : Stream or object with ``__cuda_stream__``, optional
        For a CUDA model: the stream to run on (default: the shared stream).
    model : str, optional
        Which model of a package holding several.

    Returns
    -------
    AotiHandle or CudaHandle
        With the package's separately written weights blob, if any, loaded.

    Raises
    ------
    AotiError
        A package that is not a zip, lacks an AOTInductor library, or has an
        entry that escapes its folder, is a link, or is too large.

    Examples
    --------
    >>> handle = aotirt.load("model.pt2")                  # doctest: +SKIP
    >>> outputs = handle.run([x])                          # doctest: +SKIP
    """
    from aotirt._errors import AotiError

    path = os.fspath(path)
    if not os.path.isfile(path):
        raise AotiError(f"cannot open model {path}: no such file")
    library, blob, package_device = path, None, None
    if zipfile.is_zipfile(path):
        library, blob, package_device = _extract_package(path, model)
    if device is None:
        device = package_device or ("cuda" if _calls_cuda(library) else "cpu")
    if blob is not None:
        with open(blob, "rb") as f:
            blob = f.read()
    return open_handle(library, device, stream, blob)


def open_handle(library, device, stream=None, blob=None):
    """An AotiHandle (CPU) or CudaHandle on `library`, with weights `blob`
    (bytes-like or None) loaded; load() and models.open() share it.

    The handle is closed when the blob cannot be loaded, so that a failed
    load leaves no container behind.
    """
    from aotirt._device import DEVICE_CPU, parse_device
    from aotirt._handle import AotiHandle, CudaHandle

    if parse_device(device)[0] == DEVICE_CPU:
        handle = AotiHandle(library)
    else:
        handle = CudaHandle(library, device, stream=stream)
    if blob is not None:
        try:
            handle.update_constants_from_blob(blob)
        except BaseException:
            handle.close()
            raise
    return handle


def _calls_cuda(library):
    """Whether a bare library calls the CUDA runtime or driver."""
    from aotirt._handle import library_undefined_symbols

    names = library_undefined_symbols(library, "cu")
    return any(n.startswith(("cuda", "cuLaunch", "cuModule")) for n in names)


def _extract_package(path, model):
    from aotirt._errors import AotiError

    digest = _sha256(path)
    target = os.path.join(cache_root(), digest[:32])
    if not os.path.isdir(target):
        _extract_safely(path, target)
    models_dir = os.path.join(target, "aotinductor")
    names = sorted(os.listdir(models_dir)) if os.path.isdir(models_dir) else []
    if not names:
        raise AotiError(f"{path} has no AOTInductor library (no entries under <root>/{_AOTI_DIR})")
    if model is None:
        if len(names) > 1:
            raise AotiError(f"{path} holds several models ({', '.join(names)}): choose one with model=")
        model = names[0]
    if model not in names:
        raise AotiError(f"{path} has no model {model!r} (it has {', '.join(names)})")
    folder = os.path.join(models_dir, model)
    files = sorted(os.listdir(folder))
    libraries = [f for f in files if f.endswith(".so")]
    wrappers = [f for f in libraries if f.endswith(".wrapper.so")] or libraries
    if len(wrappers) != 1:
        raise AotiError(f"{path}: expected one model library in {_AOTI_DIR}{model}/, found "
                        f"{', '.join(libraries) or 'none'}")
    library = os.path.join(folder, wrappers[0])
    blobs = [f for f in files if f.endswith("_weights.blob")]
    blob = os.path.join(folder, blobs[0]) if blobs else None
    device = None
    for meta in (f for f in files if f.endswith("_metadata.json")):
        with open(os.path.join(folder, meta)) as f:
            key = json.load(f).get("AOTI_DEVICE_KEY")
        if key in ("cpu", "cuda"):
            device = key
            if meta.startswith(wrappers[0][: -len(".so")]):
                break
    return library, blob, device


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _extract_safely(path, target):
    """Extracts the AOTInductor entries of `path` into `target`, atomically."""
    from aotirt._errors import AotiError

    parent = os.path.dirname(target)
    os.makedirs(parent, exist_ok=True)
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as e:
        raise AotiError(f"cannot read package {path}: {e}") from None
    with archive:
        members = _checked_members(path, archive)
        staging = tempfile.mkdtemp(prefix=".extracting-", dir=parent)
        try:
            for info, relative in members:
                destination = os.path.join(staging, "aotinductor", relative)
                # Belt and braces: the checks above already exclude escapes.
                if not os.path.realpath(destination).startswith(os.path.realpath(staging) + os.sep):
                    raise AotiError(f"{path}: entry {info.filename!r} escapes the extraction folder")
                os.makedirs(os.path.dirname(destination), exist_ok=True)
                with archive.open(info) as source, open(destination, "xb") as sink:
                    shutil.copyfileobj(source, sink, 1 << 20)
            try:
                os.rename(staging, target)   # another process may have won the race: fine
            except OSError:
                if not os.path.isdir(target):
                    raise
        except (zipfile.BadZipFile, EOFError) as e:
            raise AotiError(f"cannot extract package {path}: {e}") from None
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def _checked_members(path, archive):
    """The (entry, path under data/aotinductor/) pairs to extract, all checked."""
    from aotirt._errors import AotiError

    members, total = [], 0
    for info in archive.infolist():
        name = info.filename
        marker = name.find(_AOTI_DIR)
        if marker < 0 or name.endswith("/"):
            continue
        relative = name[marker + len(_AOTI_DIR):]
        parts = relative.split("/")
        if (name.startswith("/") or "\\" in name or any(p in ("", ".", "..") for p in parts)
                or len(parts) != 2):
            raise AotiError(f"{path}: entry {name!r} has an unsafe path (absolute, '..', or not "
                            f"<root>/{_AOTI_DIR}<model>/<file>)")
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise AotiError(f"{path}: entry {name!r} is a symbolic link; packages may hold regular files only")
        if info.file_size > MAX_ENTRY_BYTES:
            raise AotiError(f"{path}: entry {name!r} is {info.file_size} bytes, over the limit of "
                            f"{MAX_ENTRY_BYTES} (AOTIRT_PT2_MAX_ENTRY_BYTES)")
        total += info.file_size
        if total > MAX_TOTAL_BYTES:
            raise AotiError(f"{path}: its AOTInductor entries exceed {MAX_TOTAL_BYTES} bytes "
                            f"(AOTIRT_PT2_MAX_TOTAL_BYTES)")
        members.append((info, relative))
    return members
