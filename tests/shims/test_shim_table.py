"""The one table of the shims (include/aotirt/shim_table.h): what the C API
hands out (aotirt_shim_count/aotirt_shim_at) is exactly what libaotirt.so
exports as aoti_torch_*, each shim lives in its family's file or folder under
cuda_src/shims/, and the README's list is the one scripts/shim-table.py
prints. CPU only."""

import ctypes
import importlib.util
import os
import re
import shutil
import subprocess

import pytest

import aotirt
from support.helpers import REPO

CORE = os.path.join(os.path.dirname(aotirt.__file__), "libaotirt.so")
LIB = ctypes.CDLL(CORE)
LIB.aotirt_shim_count.restype = ctypes.c_size_t
LIB.aotirt_shim_at.argtypes = [ctypes.c_size_t] + [ctypes.POINTER(ctypes.c_char_p)] * 3
LIB.aotirt_shim_at.restype = ctypes.c_int
LIB.aotirt_last_error_message.restype = ctypes.c_char_p

# Where each family's shims are defined, under cuda_src/shims/.
FAMILIES = {"tensor": "tensor_attributes.cpp", "memory": "memory.cpp", "stream": "streams.cpp",
            "diagnostics": "diagnostics.cpp", "matmul": "matmul", "attention": "attention",
            "convolution": "convolution", "scan": "scan", "sort": "sort", "control": "control",
            "indexing": "indexing", "random": "random"}
DEVICES = {"cpu", "cuda", "any"}


def script():
    spec = importlib.util.spec_from_file_location("shim_table", os.path.join(REPO, "scripts", "shim-table.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def table():
    rows = []
    for i in range(LIB.aotirt_shim_count()):
        name, family, devices = ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_char_p()
        assert LIB.aotirt_shim_at(i, name, family, devices) == 0
        rows.append((name.value.decode(), family.value.decode(), devices.value.decode()))
    return rows


def exported_shims():
    if shutil.which("nm") is None:
        pytest.skip("needs nm (binutils) to read libaotirt.so's exports")
    out = subprocess.run(["nm", "-D", "--defined-only", CORE], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.split()[-1].startswith("aoti_torch_")}


def test_the_c_api_hands_out_the_header():
    rows = table()
    assert rows == [tuple(r) for r in script().read_table()]
    assert len({name for name, _, _ in rows}) == len(rows), "a shim is listed twice"
    for name, family, devices in rows:
        assert family in FAMILIES and devices in DEVICES, (name, family, devices)


def test_past_the_end_is_an_error():
    name = ctypes.c_char_p()
    assert LIB.aotirt_shim_at(LIB.aotirt_shim_count(), name, None, None) == 3  # AOTIRT_ERROR_VALUE
    assert b"out of range" in LIB.aotirt_last_error_message()


def test_every_shim_in_the_table_is_exported_and_every_export_is_in_the_table():
    listed = {name for name, _, _ in table()}
    exported = exported_shims()
    assert listed - exported == set(), "in shim_table.h but not exported by libaotirt.so"
    assert exported - listed == set(), "exported by libaotirt.so but not in shim_table.h"


def test_each_shim_is_defined_in_its_familys_file_or_folder():
    shims = os.path.join(REPO, "cuda_src", "shims")
    for name, family, _ in table():
        place = os.path.join(shims, FAMILIES[family])
        files = [place] if os.path.isfile(place) else [
            os.path.join(folder, f) for folder, _, names in os.walk(place) for f in names
            if f.endswith((".cpp", ".cu"))]
        # A definition starts a line (calls are indented) and is followed by
        # its body, or is a line that names it to a macro making shims.
        definition = re.compile(rf"^[A-Za-z].*\b{re.escape(name)}[(,)]", re.MULTILINE)
        assert any(definition.search(open(f).read()) for f in files), (name, family)


def test_the_readme_lists_the_table():
    module = script()
    assert module.readme_list() is not None, "README.md has no shim list"
    assert module.readme_list() == module.shim_list(module.read_table()), \
        "README.md's shim list is out of date: run python scripts/shim-table.py --update"
