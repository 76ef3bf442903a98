"""Lists what each cached AOTInductor library needs that libaotirt lacks.

    python scripts/aoti-needs.py CACHE_ROOT

Reads each model.pt2's library from its symbol table (nothing is loaded):
the aoti_torch_* shims it calls, and those aotirt does not export.
"""

import os
import sys
import tempfile
import zipfile

import aotirt
from aotirt._library import library_undefined_symbols

root = sys.argv[1]
core = os.path.join(os.path.dirname(aotirt.__file__), "libaotirt.so")
exported = set(os.popen(f"nm -D --defined-only {core}").read().split())
for name in sorted(os.listdir(root)):
    package = os.path.join(root, name, "model.pt2")
    if not os.path.exists(package):
        print(f"{name}: not built")
        continue
    with zipfile.ZipFile(package) as z, tempfile.TemporaryDirectory() as tmp:
        so = [n for n in z.namelist() if n.endswith(".so")][0]
        path = z.extract(so, tmp)
        needed = library_undefined_symbols(path, "aoti_torch_")
        cuda = library_undefined_symbols(path, "cu")
    missing = [n for n in needed if n not in exported]
    print(f"{name}: {len(needed)} shims, missing {missing}; CUDA calls: {' '.join(sorted(set(cuda)))[:300]}")
