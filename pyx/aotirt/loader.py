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
import zlib

# Largest single entry and largest total that extraction accepts. A package's
# declared sizes are checked before anything is written; zipfile then checks
# that each entry inflates to exactly its declared size and CRC. The
# environment variables are read at each extraction (a bad value is an
# AotiError then, not an import failure).
MAX_ENTRY_BYTES = 8 << 30
MAX_TOTAL_BYTES = 32 << 30


def _limit(variable, default):
    from aotirt._errors import AotiError

    text = os.environ.get(variable)
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise AotiError(f"{variable}={text!r} is not a number of bytes (an integer, e.g. {default})") from None
    if value < 0:
        raise AotiError(f"{variable}={text!r} is negative: it is a number of bytes")
    return value

_AOTI_DIR = "data/aotinductor/"


def cache_root():
    """The folder packages are extracted into."""
    root = os.environ.get("AOTIRT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "aotirt")
    return os.path.join(root, "pt2")


def load(path, device=None, *, stream=None, model=None, graphs=False, max_graphs=8, outputs="copy",
         weights=None, share_weights_with=None):
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
    graphs : bool
        Automatic CUDA graphs (see :class:`CudaHandle`): runs of a repeated
        input signature are captured once and replayed. Accepted and a no-op
        for a CPU model, so device-agnostic code runs either.
    max_graphs : int
        Graphs kept per handle (least recently used dropped past it).
    outputs : "copy" or "static"
        What graph replays return: outputs valid after later calls ("copy":
        aliases of a free instance's static outputs, copies when the caller
        keeps the last calls' outputs), or the static outputs, rewritten by
        the next call ("static").
    weights : path of a .safetensors file, Weights or mapping, optional
        The model's constants by name or module path (see
        :meth:`AotiHandle.update_constants`), loaded before any run; the
        package's own weights blob is then not loaded at all.
    share_weights_with : AotiHandle, optional
        Another handle of the same model on the same device whose weights
        aotirt loaded by name: this one uses the same device memory.

    Returns
    -------
    AotiHandle or CudaHandle
        With the package's separately written weights blob, if any, loaded
        (or `weights`, or the other handle's).

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
    if weights is not None and share_weights_with is not None:
        raise ValueError("give weights or share_weights_with, not both")
    library, blob, package_device = locate(path, model)
    if device is None:
        device = default_device(library, package_device)
        if share_weights_with is not None:
            device = share_weights_with.device
    named = _named_weights(weights, share_weights_with, device)
    if blob is not None and named is None:
        with open(blob, "rb") as f:
            blob = f.read()
    else:
        blob = None
    return open_handle(library, device, stream, blob, graphs=graphs, max_graphs=max_graphs, outputs=outputs,
                       named=named)


def _named_weights(weights, share_weights_with, device):
    """The mapping load() gives update_constants, or None."""
    if share_weights_with is not None:
        from aotirt._device import DEVICE_CPU, parse_device

        kind, index = parse_device(device)
        if ("cpu" if kind == DEVICE_CPU else f"cuda:{index}") != share_weights_with.device:
            raise ValueError(f"share_weights_with is a handle on {share_weights_with.device}, this model loads "
                             f"on {device}: weights are shared on one device only")
        return share_weights_with.weights
    if weights is None:
        return None
    if isinstance(weights, (str, os.PathLike)):
        from aotirt.weights import load_weights

        return load_weights(weights)
    return weights


def locate(path, model=None):
    """What :func:`load` opens: ``(library, weights_blob_file or None,
    package_device or None)``. A package is extracted (or its cached
    extraction verified) first; a bare library is itself."""
    from aotirt._errors import AotiError

    path = os.fspath(path)
    if not os.path.isfile(path):
        raise AotiError(f"cannot open model {path}: no such file")
    if zipfile.is_zipfile(path):
        return _extract_package(path, model)
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic == b"PK\x03\x04" or path.endswith(".pt2"):
        # Not a library either: say what it looks like instead of "not an ELF file".
        raise AotiError(f"cannot read package {path}: not a complete zip file (truncated or damaged: its "
                        f"central directory cannot be found)")
    return path, None, None


def open_handle(library, device, stream=None, blob=None, *, graphs=False, max_graphs=8, outputs="copy",
                named=None):
    """An AotiHandle (CPU) or CudaHandle on `library`, with weights `blob`
    (bytes-like or None) loaded and automatic graphs as asked; load() and
    models.open() share it. The weights are loaded before any run, so no
    graph ever reads the library's weights from before the blob.

    `named`: constants by name (a mapping for update_constants), instead of
    or after the blob. The handle is closed when the weights cannot be
    loaded, so that a failed load leaves no container behind.
    """
    from aotirt._device import DEVICE_CPU, parse_device
    from aotirt._handle import AotiHandle, CudaHandle

    if parse_device(device)[0] == DEVICE_CPU:
        handle = AotiHandle(library, graphs=graphs, max_graphs=max_graphs, outputs=outputs)
    else:
        handle = CudaHandle(library, device, stream=stream, graphs=graphs, max_graphs=max_graphs, outputs=outputs)
    try:
        if blob is not None:
            handle.update_constants_from_blob(blob)
        if named is not None:
            handle.update_constants(named)
    except BaseException:
        handle.close()
        raise
    return handle


def default_device(library, package_device=None):
    """The device a model runs on when none is asked for: the package's (its
    metadata), else CUDA for a library that calls the CUDA runtime, else the CPU."""
    return package_device or ("cuda" if _calls_cuda(library) else "cpu")


def _calls_cuda(library):
    """Whether a bare library calls the CUDA runtime or driver."""
    from aotirt._library import library_undefined_symbols

    names = library_undefined_symbols(library, "cu")
    return any(n.startswith(("cuda", "cuLaunch", "cuModule")) for n in names)


def _extract_package(path, model):
    from aotirt._errors import AotiError

    digest = _sha256(path)
    target = os.path.join(cache_root(), digest[:32])
    entries = _verified_manifest(target)
    if entries is None:
        entries = _extract_safely(path, target)
    models_dir = os.path.join(target, "aotinductor")
    names = sorted({relative.split("/")[0] for relative in entries})
    if not names:
        raise AotiError(f"{path} has no AOTInductor library (no entries under <root>/{_AOTI_DIR})")
    if model is None:
        if len(names) > 1:
            raise AotiError(f"{path} holds several models ({', '.join(names)}): choose one with model=")
        model = names[0]
    if model not in names:
        raise AotiError(f"{path} has no model {model!r} (it has {', '.join(names)})")
    folder = os.path.join(models_dir, model)
    # What the package holds (the manifest), not what the folder holds now.
    files = sorted(relative.split("/")[1] for relative in entries if relative.split("/")[0] == model)
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
        key = _metadata(path, f"{_AOTI_DIR}{model}/{meta}", os.path.join(folder, meta)).get("AOTI_DEVICE_KEY")
        if key in ("cpu", "cuda"):
            device = key
            if meta.startswith(wrappers[0][: -len(".so")]):
                break
    return library, blob, device


def _metadata(package, entry, file):
    """A metadata entry's JSON object; AotiError naming the package and the entry."""
    from aotirt._errors import AotiError

    try:
        with open(file, "rb") as f:
            value = json.loads(f.read().decode("utf-8"))
    except (ValueError, RecursionError) as e:   # JSONDecodeError, UnicodeDecodeError, nesting too deep
        raise AotiError(f"{package}: entry {entry!r} is not valid JSON metadata: {e}") from None
    if not isinstance(value, dict):
        raise AotiError(f"{package}: entry {entry!r} holds a JSON {type(value).__name__}, "
                        f"not the object of AOTInductor metadata")
    return value


_MANIFEST = "manifest.json"


def _verified_manifest(target):
    """The entries of a cached extraction (relative path -> [size, crc32]), or
    None when there is none or it no longer holds what was extracted.

    Checked at every load, cheaply: each file's size and modification time
    against those recorded when it was written. A file changed or removed
    since (a damaged disk, a cleaner, a hand edit) makes the extraction be
    redone: the loader never trusts a cache file the package did not write.
    """
    try:
        with open(os.path.join(target, _MANIFEST)) as f:
            manifest = json.load(f)
        entries = manifest["entries"]
        for relative, (size, _crc, mtime_ns) in entries.items():
            info = os.stat(os.path.join(target, "aotinductor", relative))
            if info.st_size != size or info.st_mtime_ns != mtime_ns or not stat.S_ISREG(info.st_mode):
                return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return entries


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _extract_safely(path, target):
    """Extracts the AOTInductor entries of `path` into `target`, atomically,
    with a manifest of what it wrote; returns the manifest's entries. A
    damaged extraction already at `target` is replaced."""
    from aotirt._errors import AotiError

    parent = os.path.dirname(target)
    try:
        os.makedirs(parent, exist_ok=True)
        archive = zipfile.ZipFile(path)
    except _extraction_errors() as e:   # its directory: damaged, or from a zip version Python cannot read
        raise AotiError(f"cannot read package {path}: {e}") from None
    with archive:
        members = _checked_members(path, archive)
        staging = tempfile.mkdtemp(prefix=".extracting-", dir=parent)
        entry = None
        try:
            entries = {}
            for info, relative in members:
                entry = info.filename
                destination = os.path.join(staging, "aotinductor", relative)
                # Belt and braces: the checks above already exclude escapes.
                if not os.path.realpath(destination).startswith(os.path.realpath(staging) + os.sep):
                    raise AotiError(f"{path}: entry {info.filename!r} escapes the extraction folder")
                os.makedirs(os.path.dirname(destination), exist_ok=True)
                with archive.open(info) as source, open(destination, "xb") as sink:
                    shutil.copyfileobj(source, sink, 1 << 20)
                written = os.stat(destination)
                entries[relative] = [written.st_size, info.CRC, written.st_mtime_ns]
            entry = None
            with open(os.path.join(staging, _MANIFEST), "w") as f:
                json.dump({"package": os.path.abspath(path), "entries": entries}, f)
            _install(staging, target)
            return entries
        except _extraction_errors() as e:
            # A corrupt or encrypted entry, an unsupported compression, a full disk...
            where = f" (entry {entry!r})" if entry else ""
            raise AotiError(f"cannot extract package {path}{where}: {e}") from None
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def _extraction_errors():
    """What reading a damaged entry can raise: zipfile's own errors and those of
    each decompressor (lzma and bz2 are optional parts of Python)."""
    errors = [zipfile.BadZipFile, EOFError, zlib.error, RuntimeError, NotImplementedError, OSError, ValueError]
    try:
        import lzma
        errors.append(lzma.LZMAError)
    except ImportError:
        pass
    return tuple(errors)


def _install(staging, target):
    """Moves a finished extraction to `target`, replacing a damaged one there."""
    from aotirt._errors import AotiError

    try:
        os.rename(staging, target)
        return
    except OSError:
        if not os.path.isdir(target):
            raise
    if _verified_manifest(target) is not None:
        return   # another process extracted the same package meanwhile: fine
    # What is there no longer matches what it was extracted as: set it aside
    # (a process may still have its library mapped: renaming is safe), put the
    # new one in its place, then delete the old one.
    damaged = tempfile.mkdtemp(prefix=".damaged-", dir=os.path.dirname(target))
    try:
        os.rename(target, os.path.join(damaged, "old"))
        os.rename(staging, target)
    except OSError as e:
        raise AotiError(f"the cached extraction at {target} is damaged (a file changed or went missing since it "
                        f"was extracted) and could not be replaced ({e}): delete that folder") from None
    finally:
        shutil.rmtree(damaged, ignore_errors=True)


def _checked_members(path, archive):
    """The (entry, path under data/aotinductor/) pairs to extract, all checked."""
    from aotirt._errors import AotiError

    max_entry = _limit("AOTIRT_PT2_MAX_ENTRY_BYTES", MAX_ENTRY_BYTES)
    max_total = _limit("AOTIRT_PT2_MAX_TOTAL_BYTES", MAX_TOTAL_BYTES)
    members, total, seen = [], 0, set()
    for info in archive.infolist():
        name = info.filename
        marker = name.find(_AOTI_DIR)
        if marker < 0 or name.endswith("/"):
            continue
        relative = name[marker + len(_AOTI_DIR):]
        parts = relative.split("/")
        if (name.startswith("/") or "\\" in name or "\0" in name or any(p in ("", ".", "..") for p in parts)
                or len(parts) != 2):
            raise AotiError(f"{path}: entry {name!r} has an unsafe path (absolute, '..', or not "
                            f"<root>/{_AOTI_DIR}<model>/<file>)")
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise AotiError(f"{path}: entry {name!r} is a symbolic link; packages may hold regular files only")
        if relative in seen:
            raise AotiError(f"{path}: entry {name!r} appears twice (a package names each file once)")
        seen.add(relative)
        if info.file_size > max_entry:
            raise AotiError(f"{path}: entry {name!r} is {info.file_size} bytes, over the limit of "
                            f"{max_entry} (AOTIRT_PT2_MAX_ENTRY_BYTES)")
        total += info.file_size
        if total > max_total:
            raise AotiError(f"{path}: its AOTInductor entries exceed {max_total} bytes "
                            f"(AOTIRT_PT2_MAX_TOTAL_BYTES)")
        members.append((info, relative))
    return members
