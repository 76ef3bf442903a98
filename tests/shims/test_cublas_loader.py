"""The cuBLAS loader (cuda_src/shims/libs/cublas.cpp), which the matmul and
float32 attention shims open on first use: AOTIRT_CUBLAS (a path, tried
alone), the pip wheels' copies before the system's, and what a failure
names. A load, or a failure, is final for a process, so every test that
chooses what is loaded runs it in a fresh interpreter. The two marked gpu
need a GPU machine."""

import subprocess

import pytest

from support.helpers import in_tests, run_python
from support.shims import LIB, last_error

LOAD_WITH_ENV = """
import ctypes, os, aotirt
from support.shims import LIB, last_error
status = LIB.aotirt_cublas_load()
print(status)
print(last_error())
"""


def test_cublas_named_by_the_environment_is_tried_alone(tmp_path):
    # A deterministic failure on any machine: AOTIRT_CUBLAS is tried alone,
    # never replaced by whatever cuBLAS the linker would find.
    missing = str(tmp_path / "libcublas.so.13")
    proc = run_python(in_tests(LOAD_WITH_ENV), env={"AOTIRT_CUBLAS": missing})
    assert proc.returncode == 0, proc.stderr
    status, message = proc.stdout.splitlines()[:2]
    assert status == "2"  # AOTIRT_ERROR_AOTI
    assert message.startswith(f"aotirt_cublas_load: cuBLAS could not be loaded from AOTIRT_CUBLAS={missing} (")
    assert "No such file" in message and "unset it to search libcublas.so.13, libcublas.so.12" in message


def test_a_file_that_is_not_cublas_is_named(tmp_path):
    # libaotirt itself: a loadable library without cuBLAS's entry points.
    import os

    import aotirt

    core = os.path.join(os.path.dirname(aotirt.__file__), "libaotirt.so")
    proc = run_python(in_tests(LOAD_WITH_ENV), env={"AOTIRT_CUBLAS": core})
    status, message = proc.stdout.splitlines()[:2]
    assert status == "2"
    assert f"{core}: has no cublasCreate_v2" in message


def test_a_library_with_the_entry_points_loads(tmp_path):
    # The success path of the loader, without cuBLAS: a stand-in that only
    # has the symbols (never called: aotirt_cublas_load opens and resolves).
    source = tmp_path / "fake_cublas.c"
    source.write_text("\n".join(
        f"int {name}(void) {{ return 0; }}"
        for name in ["cublasCreate_v2", "cublasSetStream_v2", "cublasGemmEx", "cublasGemmStridedBatchedEx",
                     "cublasGemmBatchedEx"]))
    library = str(tmp_path / "libfake_cublas.so")
    subprocess.run(["cc", "-shared", "-fPIC", str(source), "-o", library], check=True)
    proc = run_python(in_tests(LOAD_WITH_ENV), env={"AOTIRT_CUBLAS": library})
    assert proc.stdout.splitlines()[0] == "0", proc.stdout + proc.stderr


def _fake_site_packages(tmp_path, with_cublas):
    """A site-packages folder holding a loaded library (the process finds the
    folder through it) and, if asked, a stand-in for the nvidia-cublas
    wheel's libcublas.so.13 that says when it is opened."""
    site = tmp_path / "lib" / "python3" / "site-packages"
    (site / "anchor").mkdir(parents=True)
    subprocess.run(["cc", "-shared", "-fPIC", "-x", "c", "-", "-o", str(site / "anchor" / "libanchor.so")],
                   input="int anchor(void) { return 0; }", text=True, check=True)
    if with_cublas:
        lib = site / "nvidia" / "cu13" / "lib"
        lib.mkdir(parents=True)
        source = "\n".join(["#include <stdio.h>",
                             "__attribute__((constructor)) static void opened(void) { puts(\"wheel cublas\"); }"] +
                            [f"int {name}(void) {{ return 0; }}" for name in
                             ["cublasCreate_v2", "cublasSetStream_v2", "cublasGemmEx", "cublasGemmStridedBatchedEx",
                              "cublasGemmBatchedEx"]])
        subprocess.run(["cc", "-shared", "-fPIC", "-x", "c", "-", "-o", str(lib / "libcublas.so.13")],
                       input=source, text=True, check=True)
    return site


# Without numpy (or anything else of this environment's site-packages): the
# anchor's folder is the only site-packages the search finds.
LOAD_AFTER_ANCHOR = """
import ctypes, os
ctypes.CDLL({anchor!r})
import aotirt
lib = ctypes.CDLL(os.path.join(os.path.dirname(aotirt.__file__), "libaotirt.so"))
lib.aotirt_last_error_message.restype = ctypes.c_char_p
print(lib.aotirt_cublas_load())
print(lib.aotirt_last_error_message().decode())
"""


def test_the_pip_wheels_copy_comes_before_the_system_one(tmp_path):
    site = _fake_site_packages(tmp_path, with_cublas=True)
    code = in_tests(LOAD_AFTER_ANCHOR.format(anchor=str(site / "anchor" / "libanchor.so")))
    proc = run_python(code, env={"AOTIRT_CUBLAS": ""})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "wheel cublas" in lines and lines[lines.index("wheel cublas") + 1] == "0", proc.stdout


@pytest.mark.without_system_cublas
def test_a_failure_names_the_wheels_files_and_their_packages(tmp_path):
    site = _fake_site_packages(tmp_path, with_cublas=False)
    code = in_tests(LOAD_AFTER_ANCHOR.format(anchor=str(site / "anchor" / "libanchor.so")))
    proc = run_python(code, env={"AOTIRT_CUBLAS": ""})
    assert proc.returncode == 0, proc.stderr
    status, message = proc.stdout.splitlines()[:2]
    assert status != "0", "a cuBLAS was found: conftest should have deselected this test"
    assert message.startswith("aotirt_cublas_load: cuBLAS could not be loaded; tried "), message
    assert f"{site}/nvidia/cu13/lib/libcublas.so.13" in message and "libcublas.so.12 and libcublas.so (" in message
    assert "`pip install nvidia-cublas`" in message and "nvidia-cublas-cu12" in message


@pytest.mark.gpu
def test_cuda_mm_names_cublas_when_it_cannot_be_loaded(tmp_path):
    missing = str(tmp_path / "nothing" / "libcublas.so.13")
    code = in_tests("""
        import numpy as np
        from support.shims import LIB, Space, last_error
        s = Space("cuda")
        status = LIB.aoti_torch_cuda_mm_out(s.make((2, 2)).handle, s.make((2, 3)).handle, s.make((3, 2)).handle)
        print(status)
        print(last_error())
    """)
    proc = run_python(code, env={"AOTIRT_CUBLAS": missing})
    assert proc.returncode == 0, proc.stderr
    status, message = proc.stdout.splitlines()[:2]
    assert status == "1"
    assert message.startswith(f"aoti_torch_cuda_mm_out: cuBLAS could not be loaded from AOTIRT_CUBLAS={missing}")


@pytest.mark.gpu
def test_cublas_loads_on_the_gpu_machine():
    assert LIB.aotirt_cublas_load() == 0, last_error()



def test_cublas_named_without_a_slash_is_refused():
    # dlopen would search the library path for a bare name, not open the file
    # the user meant: the variable takes a path.
    proc = run_python(in_tests(LOAD_WITH_ENV), env={"AOTIRT_CUBLAS": "libcublas.so.13"})
    assert proc.returncode == 0, proc.stderr
    status, message = proc.stdout.splitlines()[:2]
    assert status == "2"
    assert message.startswith("aotirt_cublas_load: AOTIRT_CUBLAS=libcublas.so.13 is not a path (it has no '/')")
