"""Carries a finished build of aotirt to a GPU machine, so that a command that
lands on a fresh machine does not spend minutes rebuilding it.

The device tool lends a GPU machine for a few minutes at a time, and a command
that lands on a fresh one used to rebuild libaotirt from scratch (about 320 s
of a 600 s limit). The build needs no GPU: it can be made on the developer's
machine, with the same CUDA toolkit and the GPU machine's Python version and
headers, packed here, carried, and unpacked there in place of the build.

    python3 scripts/prebuilt.py pack DIR     # after setup.py build_ext --inplace
    python3 scripts/prebuilt.py unpack DIR   # on the GPU machine, before the tests

A pack holds what the build writes into the package (libaotirt.so, the Cython
modules, the example model libraries), the cudnn-frontend headers the build
used (header-only and not on the GPU machine: the host checks compiled
against them, tests/shims/test_cudnn_knobs.py, need them there; gpu-check.sh
points AOTIRT_CUDNN_FRONTEND_INCLUDE at them) and a stamp: a hash of every build
input in this tree, the Python tag the modules were built for, and the CUDA
compiler and architectures they were built with. unpack refuses a pack whose
inputs differ from this tree's or whose modules are for another Python, so a
stale build can never be tested in place of the code.
"""

import ctypes
import glob
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join("pyx", "aotirt")
# Everything setup.py reads to make what it writes into the package.
BUILD_INPUTS = ("setup.py", "pyproject.toml", "cuda_src", "include", PACKAGE)
INPUT_SUFFIXES = (".cpp", ".cu", ".c", ".h", ".hpp", ".cuh", ".inc", ".pyx", ".pxd")
# What a pack may put in the package: libraries and the example models' weights.
OUTPUT_SUFFIXES = (".so", ".weights")
STAMP = "STAMP.json"
# Where a pack keeps the cudnn-frontend headers: a folder named include, as
# the headers reach each other through "../include/".
FRONTEND = os.path.join("cudnn-frontend", "include")
# The device tool carries at most this much with the tree.
CARRY_LIMIT = 64 << 20


def build_inputs():
    for entry in BUILD_INPUTS:
        path = os.path.join(ROOT, entry)
        if os.path.isfile(path):
            yield entry
            continue
        for folder, dirs, names in os.walk(path):
            dirs[:] = sorted(d for d in dirs if d != "models" or folder != os.path.join(ROOT, PACKAGE))
            for name in sorted(names):
                relative = os.path.relpath(os.path.join(folder, name), ROOT)
                # Cython's generated C++ sits beside the .pyx; it is an output.
                # Under cuda_src, Python writes the example models' weights.
                generated = relative.startswith(PACKAGE) and name.endswith(".cpp")
                script = relative.startswith("cuda_src") and name.endswith(".py")
                if (name.endswith(INPUT_SUFFIXES) and not generated) or script:
                    yield relative


def inputs_digest():
    digest = hashlib.sha256()
    for relative in build_inputs():
        digest.update(relative.encode() + b"\0")
        with open(os.path.join(ROOT, relative), "rb") as f:
            digest.update(hashlib.sha256(f.read()).digest())
    return digest.hexdigest()


def nvcc_version():
    try:
        out = subprocess.run(["nvcc", "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "no nvcc on PATH"
    return out.strip().splitlines()[-1]


def built_archs(library):
    """The SM versions whose machine code `library` holds: cuobjdump's list,
    else the newest compile command setup.py recorded for this Python, else
    what AOTIRT_CUDA_ARCHS says."""
    try:
        out = subprocess.run(["cuobjdump", "--list-elf", library], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        tag = f"cpython-{sys.version_info.major}{sys.version_info.minor}"
        records = glob.glob(os.path.join(ROOT, "build", f"temp.*-{tag}", "aotirt", "commands", "*core_*.cmd"))
        out = ""
        if records:
            with open(max(records, key=os.path.getmtime)) as f:
                out = f.read()
    archs = sorted(set(re.findall(r"sm_(\d+)", out)), key=int)
    return ";".join(archs) if archs else os.environ.get("AOTIRT_CUDA_ARCHS", "80;90 (the default)")


def stale_inputs(files):
    """Build inputs edited after the last build: newer than every built file.
    (An incremental build rewrites only what an edit touches, so an input may
    well be newer than some outputs of a current build, never than all.)"""
    newest = max(os.path.getmtime(os.path.join(ROOT, f)) for f in files)
    return [r for r in build_inputs() if os.path.getmtime(os.path.join(ROOT, r)) > newest]


def built_files():
    """The build's outputs in the package, relative to the repository."""
    package = os.path.join(ROOT, PACKAGE)
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    files = [os.path.join(PACKAGE, name) for name in sorted(os.listdir(package))
             if name == "libaotirt.so" or name.endswith(suffix)]
    for folder, _, names in os.walk(os.path.join(package, "models")):
        files += sorted(os.path.relpath(os.path.join(folder, name), ROOT) for name in names)
    return files


def frontend_headers():
    """The folder of the cudnn-frontend headers the build uses (setup.py's
    own finder), or None: a tree whose setup.py cannot say builds without
    them."""
    try:
        spec = importlib.util.spec_from_file_location("aotirt_setup", os.path.join(ROOT, "setup.py"))
        setup = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(setup)  # imported, setup.py defines its finders and builds nothing
        return setup.find_cudnn_frontend(setup.find_cuda_home())
    except (Exception, SystemExit):
        return None


def copy_frontend(folder, dest):
    """Copies cudnn-frontend's own headers from `folder` (a site-packages
    include folder that may hold other packages' headers too)."""
    def others(where, names):
        return [n for n in names if where == folder and not n.startswith(("cudnn_frontend", "cudnn_backend"))]
    shutil.copytree(folder, dest, ignore=others)
    return sum(os.path.getsize(os.path.join(d, n)) for d, _, names in os.walk(dest) for n in names)


def pack(dest):
    files = built_files()
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    if not any(f.endswith("libaotirt.so") for f in files):
        sys.exit(f"prebuilt: no {PACKAGE}/libaotirt.so here: build first (setup.py build_ext --inplace)")
    if not any(f.endswith(suffix) for f in files):
        sys.exit(f"prebuilt: no Cython module for this Python ({suffix}) in {PACKAGE}: build with this Python first")
    stale = stale_inputs(files)
    if stale:
        sys.exit(f"prebuilt: {len(stale)} build input(s) changed after the build ({stale[0]}, ...): build again first")
    if os.path.exists(dest):
        # Only an earlier pack is replaced: a mistyped destination must not
        # delete anything else.
        if not os.path.isdir(dest) or (os.listdir(dest) and not os.path.exists(os.path.join(dest, STAMP))):
            sys.exit(f"prebuilt: {dest} exists and is not a pack: refused")
        shutil.rmtree(dest)
    for relative in files:
        os.makedirs(os.path.join(dest, os.path.dirname(relative)), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, relative), os.path.join(dest, relative))
    size = sum(os.path.getsize(os.path.join(dest, r)) for r in files)
    headers = frontend_headers()
    if headers:
        size += copy_frontend(headers, os.path.join(dest, FRONTEND))
    stamp = {"inputs": inputs_digest(), "ext_suffix": suffix, "nvcc": nvcc_version(),
             "archs": built_archs(os.path.join(ROOT, PACKAGE, "libaotirt.so")), "files": files,
             "frontend": FRONTEND if headers else None}
    with open(os.path.join(dest, STAMP), "w") as f:
        json.dump(stamp, f, indent=1)
    print(f"prebuilt: packed {len(files)} files ({size / 2**20:.1f} MiB, sm {stamp['archs']}"
          f"{', with the cudnn-frontend headers of ' + headers if headers else ''}) into {dest}")
    if size > CARRY_LIMIT:
        print(f"prebuilt: more than the device tool's {CARRY_LIMIT >> 20} MiB: build for the GPU's architecture alone "
              "(AOTIRT_CUDA_ARCHS=90)", file=sys.stderr)


def unpack(source):
    try:
        with open(os.path.join(source, STAMP)) as f:
            stamp = json.load(f)
    except (OSError, ValueError) as error:
        sys.exit(f"prebuilt: no readable {STAMP} in {source}: {error}")
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    keys = ("inputs", "ext_suffix", "nvcc", "archs", "files")
    if not isinstance(stamp, dict) or not all(key in stamp for key in keys):
        sys.exit(f"prebuilt: {STAMP} in {source} is not a pack's stamp")
    if stamp["ext_suffix"] != suffix:
        sys.exit(f"prebuilt: the pack's modules are for {stamp['ext_suffix']}, this Python needs {suffix}")
    if stamp["inputs"] != inputs_digest():
        sys.exit("prebuilt: the pack was built from other sources than this tree's (pack it again)")
    targets = {}
    for relative in stamp["files"]:
        target = os.path.normpath(os.path.join(ROOT, relative))
        if not target.startswith(os.path.join(ROOT, PACKAGE) + os.sep):
            sys.exit(f"prebuilt: the pack names {relative!r}, outside {PACKAGE}: refused")
        if not relative.endswith(OUTPUT_SUFFIXES):
            sys.exit(f"prebuilt: the pack names {relative!r}, which no build writes: refused")
        if not os.path.isfile(os.path.join(source, relative)):
            sys.exit(f"prebuilt: the pack lists {relative!r} but does not hold it: nothing unpacked")
        targets[relative] = target
    for relative, target in targets.items():
        os.makedirs(os.path.dirname(target), exist_ok=True)
        # A new file put in place whole: a library some process has mapped
        # must not be rewritten under it.
        shutil.copy2(os.path.join(source, relative), target + ".unpacking")
        os.replace(target + ".unpacking", target)
    # The library must load here (its CUDA runtime found): a clear message now
    # rather than an import error in every test.
    try:
        ctypes.CDLL(os.path.join(ROOT, PACKAGE, "libaotirt.so"))
    except OSError as error:
        sys.exit(f"prebuilt: the unpacked libaotirt.so does not load on this machine: {error}")
    here = nvcc_version()
    print(f"prebuilt: unpacked {len(stamp['files'])} files, built with {stamp['nvcc']} for sm {stamp['archs']}"
          + ("" if here == stamp["nvcc"] else f" (this machine's nvcc: {here})"))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("pack", "unpack"):
        sys.exit(__doc__)
    (pack if sys.argv[1] == "pack" else unpack)(os.path.abspath(sys.argv[2]))
