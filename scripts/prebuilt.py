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
modules, the example model libraries) and a stamp: a hash of every build
input in this tree, the Python tag the modules were built for, and the CUDA
compiler and architectures they were built with. unpack refuses a pack whose
inputs differ from this tree's or whose modules are for another Python, so a
stale build can never be tested in place of the code.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join("pyx", "aotirt")
# Everything setup.py reads to make what it writes into the package.
BUILD_INPUTS = ("setup.py", "pyproject.toml", "cuda_src", "include", PACKAGE)
INPUT_SUFFIXES = (".cpp", ".cu", ".c", ".h", ".hpp", ".cuh", ".inc", ".pyx", ".pxd")
STAMP = "STAMP.json"


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
                if name.endswith(INPUT_SUFFIXES) and not (relative.startswith(PACKAGE) and name.endswith(".cpp")):
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


def built_files():
    """The build's outputs in the package, relative to the repository."""
    package = os.path.join(ROOT, PACKAGE)
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    files = [os.path.join(PACKAGE, name) for name in sorted(os.listdir(package))
             if name == "libaotirt.so" or name.endswith(suffix)]
    for folder, _, names in os.walk(os.path.join(package, "models")):
        files += sorted(os.path.relpath(os.path.join(folder, name), ROOT) for name in names)
    return files


def pack(dest):
    files = built_files()
    if not any(f.endswith("libaotirt.so") for f in files):
        sys.exit(f"prebuilt: no {PACKAGE}/libaotirt.so here: build first (setup.py build_ext --inplace)")
    if os.path.exists(dest):
        shutil.rmtree(dest)
    for relative in files:
        os.makedirs(os.path.join(dest, os.path.dirname(relative)), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, relative), os.path.join(dest, relative))
    stamp = {"inputs": inputs_digest(), "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX"),
             "nvcc": nvcc_version(), "archs": os.environ.get("AOTIRT_CUDA_ARCHS", "80;90 (the default)"),
             "files": files}
    with open(os.path.join(dest, STAMP), "w") as f:
        json.dump(stamp, f, indent=1)
    size = sum(os.path.getsize(os.path.join(dest, r)) for r in files)
    print(f"prebuilt: packed {len(files)} files ({size / 2**20:.1f} MiB) into {dest}")


def unpack(source):
    try:
        with open(os.path.join(source, STAMP)) as f:
            stamp = json.load(f)
    except (OSError, ValueError) as error:
        sys.exit(f"prebuilt: no readable {STAMP} in {source}: {error}")
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    if stamp["ext_suffix"] != suffix:
        sys.exit(f"prebuilt: the pack's modules are for {stamp['ext_suffix']}, this Python needs {suffix}")
    if stamp["inputs"] != inputs_digest():
        sys.exit("prebuilt: the pack was built from other sources than this tree's (pack it again)")
    targets = {}
    for relative in stamp["files"]:
        target = os.path.normpath(os.path.join(ROOT, relative))
        if not target.startswith(os.path.join(ROOT, PACKAGE) + os.sep):
            sys.exit(f"prebuilt: the pack names {relative!r}, outside {PACKAGE}: refused")
        targets[relative] = target
    for relative, target in targets.items():
        os.makedirs(os.path.dirname(target), exist_ok=True)
        # A new file put in place whole: a library some process has mapped
        # must not be rewritten under it.
        shutil.copy2(os.path.join(source, relative), target + ".unpacking")
        os.replace(target + ".unpacking", target)
    here = nvcc_version()
    print(f"prebuilt: unpacked {len(stamp['files'])} files, built with {stamp['nvcc']} for sm {stamp['archs']}"
          + ("" if here == stamp["nvcc"] else f" (this machine's nvcc: {here})"))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("pack", "unpack"):
        sys.exit(__doc__)
    (pack if sys.argv[1] == "pack" else unpack)(os.path.abspath(sys.argv[2]))
