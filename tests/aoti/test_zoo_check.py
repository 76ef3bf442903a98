"""tests/aoti/zoo_check.py on the CPU, without torch: the missing functions
of a library (bare and inside a .pt2 package) against aotirt's shim table,
and the errors the zoo's test and bench/zoo.py compare with the bounds."""

import os
import shutil
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import aotirt
from support.helpers import REPO

sys.path.insert(0, os.path.join(REPO, "tests", "aoti"))
import zoo_check  # noqa: E402
import zoo_index  # noqa: E402


def library_needing(tmp_path, names):
    if shutil.which("cc") is None:
        pytest.skip("needs a C compiler (cc) to build a library with undefined symbols")
    source = tmp_path / "needs.c"
    source.write_text("".join(f"extern int {n}(void);\n" for n in names)
                      + "int AOTInductorModelContainerCreateWithDevice(void) {\n  return 0"
                      + "".join(f" + {n}()" for n in names) + ";\n}\n")
    library = tmp_path / "needs.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    return str(library)


def test_missing_functions_are_the_undefined_shims_aotirt_lacks(tmp_path):
    needs = ["aoti_torch_cuda_logcumsumexp", "aoti_torch_empty_strided", "aoti_torch_cuda_topk",
             "aoti_torch_frobnicate"]
    library = library_needing(tmp_path, needs)
    assert {"aoti_torch_empty_strided", "aoti_torch_cuda_topk"} <= zoo_check.implemented_shims()
    assert zoo_check.missing_functions(library) == ["aoti_torch_cuda_logcumsumexp", "aoti_torch_frobnicate"]
    # What aotirt.load refuses the library for, named the same.
    with pytest.raises(aotirt.AotiError, match="aoti_torch_cuda_logcumsumexp"):
        aotirt.AotiHandle(library)


def test_missing_functions_reads_the_model_library_of_a_package(tmp_path):
    library = library_needing(tmp_path, ["aoti_torch_missing_op", "aoti_torch_get_data_ptr"])
    package = tmp_path / "model.pt2"
    with zipfile.ZipFile(package, "w") as z:
        z.write(library, "model/data/aotinductor/model/abc.wrapper.so")
        z.writestr("model/data/aotinductor/model/abc_metadata.json", "{}")
    assert zoo_check.missing_functions(str(package)) == ["aoti_torch_missing_op"]
    # All it calls, implemented or not (bench/tuning.py picks the models that convolve by it).
    assert zoo_check.needed_functions(str(package)) == {"aoti_torch_missing_op", "aoti_torch_get_data_ptr"}
    assert zoo_check.needed_functions(library) == {"aoti_torch_missing_op", "aoti_torch_get_data_ptr"}
    empty = tmp_path / "empty.pt2"
    with zipfile.ZipFile(empty, "w") as z:
        z.writestr("model/data/aotinductor/model/abc_metadata.json", "{}")
    with pytest.raises(ValueError, match="expected one model library"):
        zoo_check.missing_functions(str(empty))


def test_the_zoos_awaited_functions_are_real_shim_names_aotirt_lacks():
    awaiting = zoo_index.awaiting_shims()
    assert set(awaiting) <= set(zoo_index.zoo_names())
    for names in awaiting.values():
        assert names == sorted(names) and all(n.startswith("aoti_torch_cuda_") for n in names)
    assert not any(set(names) <= zoo_check.implemented_shims() for names in awaiting.values())


def test_errors_and_bounds_of_float_integer_and_bfloat16_outputs():
    meta = {"outputs": ["float32", "int64", "bfloat16"], "tf32_drift": [2e-3, 0.0, 0.0]}
    assert zoo_check.bound(meta, 0) == 4e-3          # twice torch's own TF32 drift, over 1e-3
    assert zoo_check.bound(meta, 1) == 0.0 and zoo_check.bound(meta, 2) == 2e-2
    x = np.array([3.0, 4.0], np.float32)
    assert zoo_check.output_error(x * 1.0001, x, "float32") == pytest.approx(1e-4, rel=1e-3)
    assert zoo_check.output_error(np.array([1.0, np.nan], np.float32), x, "float32") == float("inf")
    assert zoo_check.output_error(np.array([1, 2, 3, 5]), np.array([1, 2, 3, 4]), "int64") == 0.25
    assert zoo_check.output_error(np.zeros(3), np.zeros(4), "int64") == float("inf")
    one = np.array([0x3F80], np.uint16)              # bfloat16 1.0, as its bits
    assert zoo_check.output_error(one, one, "bfloat16") == 0.0
    assert zoo_check.within(0.0, 0.0) and not zoo_check.within(0.25, 0.0)
    assert zoo_check.within(1e-4, 1e-3) and not zoo_check.within(1e-3, 1e-3)


def test_the_worst_output_is_the_one_over_its_bound_first(tmp_path):
    meta = {"outputs": ["float32", "int64"]}
    np.save(tmp_path / "expected0.npy", np.array([1.0, 2.0], np.float32))
    np.save(tmp_path / "expected1.npy", np.array([7, 8], np.int64))
    exact = [np.array([1.0, 2.0], np.float32), np.array([7, 8])]
    assert zoo_check.worst_output(exact, str(tmp_path), meta) == (0.0, 1e-3)
    close = [np.array([1.0, 2.0001], np.float32), np.array([7, 8])]
    error, limit = zoo_check.worst_output(close, str(tmp_path), meta)
    assert 0 < error < 1e-3 and limit == 1e-3
    # A larger float error within its bound ranks below one integer that differs.
    wrong_int = [np.array([1.0, 2.0001], np.float32), np.array([7, 9])]
    assert zoo_check.worst_output(wrong_int, str(tmp_path), meta) == (0.5, 0.0)
    assert zoo_check.worst_output(exact[:1], str(tmp_path), meta) == (float("inf"), 0.0)
