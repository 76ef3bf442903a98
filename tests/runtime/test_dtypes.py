"""The one dtype table (cuda_src/runtime/dtypes.h), read through the C API
(aotirt_dtype_count/code/itemsize/name/kind), against numpy, the aotirt_dtype
enum of include/aotirt/aotirt.h and the shims' aoti_torch_dtype_* getters."""

import ctypes
import os
import re

import numpy as np

import aotirt
from support.helpers import REPO

LIB = ctypes.CDLL(os.path.join(os.path.dirname(aotirt.__file__), "libaotirt.so"))
LIB.aotirt_dtype_count.restype = ctypes.c_size_t
LIB.aotirt_dtype_code.restype = ctypes.c_int32
LIB.aotirt_dtype_code.argtypes = [ctypes.c_size_t]
LIB.aotirt_dtype_itemsize.restype = ctypes.c_size_t
LIB.aotirt_dtype_itemsize.argtypes = [ctypes.c_int32]
LIB.aotirt_dtype_name.restype = ctypes.c_char_p
LIB.aotirt_dtype_name.argtypes = [ctypes.c_int32]
LIB.aotirt_dtype_kind.restype = ctypes.c_int
LIB.aotirt_dtype_kind.argtypes = [ctypes.c_int32]

# torch's c10 ScalarType codes (torch/headeronly/core/ScalarType.h).
TORCH_CODES = {"uint8": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "float16": 5, "float32": 6,
               "float64": 7, "bool": 11, "bfloat16": 15, "float8_e5m2": 23, "float8_e4m3fn": 24}
KIND_NONE, KIND_BOOL, KIND_SIGNED, KIND_UNSIGNED, KIND_FLOATING = 0, 1, 2, 3, 4
NO_NUMPY_DTYPE = {"bfloat16": np.uint16, "float8_e5m2": np.uint8, "float8_e4m3fn": np.uint8}


def table():
    codes = [LIB.aotirt_dtype_code(i) for i in range(LIB.aotirt_dtype_count())]
    return {LIB.aotirt_dtype_name(c).decode(): (c, LIB.aotirt_dtype_itemsize(c), LIB.aotirt_dtype_kind(c))
            for c in codes}


def test_the_table_lists_every_dtype_aotirt_has_in_code_order():
    codes = [LIB.aotirt_dtype_code(i) for i in range(LIB.aotirt_dtype_count())]
    assert codes == sorted(codes) and LIB.aotirt_dtype_code(len(codes)) == -1
    assert set(table()) == {"uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "bool",
                            "bfloat16", "float8_e5m2", "float8_e4m3fn"}


def test_codes_are_torchs_and_sizes_and_kinds_are_numpys():
    for name, (code, itemsize, kind) in table().items():
        assert code == TORCH_CODES[name], name
        # numpy has no bfloat16 or float8: their bits are its unsigned integers of the same size.
        like = np.dtype(NO_NUMPY_DTYPE.get(name, name))
        assert itemsize == like.itemsize, name
        expected = {"b": KIND_BOOL, "i": KIND_SIGNED, "u": KIND_UNSIGNED, "f": KIND_FLOATING}[like.kind]
        assert kind == (KIND_FLOATING if name in NO_NUMPY_DTYPE else expected), name


def test_codes_aotirt_has_no_tensors_of():
    # complex, quantised, and the float8 "fnuz" formats (25, 26), which no GPU here computes with.
    for code in (8, 9, 10, 12, 25, 26, -1, 1000):
        assert LIB.aotirt_dtype_itemsize(code) == 0
        assert LIB.aotirt_dtype_name(code) is None
        assert LIB.aotirt_dtype_kind(code) == KIND_NONE


def test_the_enum_of_the_header_has_torchs_codes():
    header = open(os.path.join(REPO, "include", "aotirt", "aotirt.h")).read()
    enum = header[header.index("typedef enum aotirt_dtype {"):header.index("} aotirt_dtype;")]
    found = {m.group(1).lower(): int(m.group(2)) for m in re.finditer(r"AOTIRT_DTYPE_(\w+) = (\d+)", enum)}
    assert found == TORCH_CODES


def test_the_shims_hand_out_the_same_codes():
    for name, code in TORCH_CODES.items():
        getter = getattr(LIB, f"aoti_torch_dtype_{name}")
        getter.restype = ctypes.c_int32
        assert getter() == code, name
    LIB.aoti_torch_dtype_element_size.restype = ctypes.c_size_t
    LIB.aoti_torch_dtype_element_size.argtypes = [ctypes.c_int32]
    for name, (code, itemsize, _kind) in table().items():
        assert LIB.aoti_torch_dtype_element_size(code) == itemsize, name
