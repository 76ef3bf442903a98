"""cuDNN is opened on first use, never at import (cuda_src/shims/libs/cudnn.cpp):
where it is looked for, what a failure says, the TF32 switch, and the CUDA
convolution's checks that run before any GPU work. No GPU needed: every
process that loads or fails to load runs in a subprocess, since a load, or a
failure, is final for the process."""

import ctypes
import glob
import os
import subprocess
import sys

import pytest

import aotirt
from support.helpers import run_python
from support.shims import I32, I64, H, P, dense, last_error, shim

CORE = os.path.join(os.path.dirname(aotirt.__file__), "libaotirt.so")
LOAD = """
import aotirt
from aotirt._library import load_optional_library
try:
    print("OK " + load_optional_library({name!r}))
except aotirt.AotiError as e:
    print("ERROR " + str(e))
"""


def load_in_subprocess(name="cudnn", env=None):
    proc = run_python(LOAD.format(name=name), env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1]


def wheel_copy():
    """The nvidia-cudnn wheel's libcudnn.so.9 on sys.path, if one is installed."""
    for site in sys.path:
        path = os.path.join(site, "nvidia", "cudnn", "lib", "libcudnn.so.9")
        if site and os.path.isfile(path):
            return os.path.realpath(path)
    return None


def test_import_and_a_model_run_leave_cudnn_unloaded():
    proc = run_python(
        "import aotirt, numpy as np\n"
        "h = aotirt.AotiHandle(aotirt.models.path('add_mul', 'cpu'))\n"
        "x = np.ones(8, np.float32)\n"
        "assert (h.run([x, x, x])[0].numpy() == 2).all()\n"
        "print('libcudnn' in open('/proc/self/maps').read())\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_the_file_named_by_aotirt_cudnn_is_tried_alone(tmp_path):
    missing = str(tmp_path / "nowhere" / "libcudnn.so.9")
    line = load_in_subprocess(env={"AOTIRT_CUDNN": missing})
    assert line.startswith("ERROR aotirt_load_optional_library: cuDNN could not be loaded from "
                           f"AOTIRT_CUDNN={missing} (")
    assert "No such file" in line and "pip install nvidia-cudnn-cu13" in line and "libcudnn.so.9" in line


def test_the_c_api_reports_the_failure(tmp_path):
    code = (f"import ctypes, os\n"
            f"lib = ctypes.CDLL({CORE!r})\n"
            "lib.aotirt_last_error_message.restype = ctypes.c_char_p\n"
            "path = ctypes.c_char_p()\n"
            "print(lib.aotirt_load_optional_library(b'cudnn', ctypes.byref(path)))\n"
            "print(lib.aotirt_last_error_message().decode())\n")
    proc = run_python(code, env={"AOTIRT_CUDNN": "/nonexistent"})
    status, message = proc.stdout.splitlines()[:2]
    assert status == "2"  # AOTIRT_ERROR_AOTI
    assert "AOTIRT_CUDNN=/nonexistent" in message and "pip install nvidia-cudnn-cu13" in message


def test_a_file_that_is_not_cudnn_is_named():
    line = load_in_subprocess(env={"AOTIRT_CUDNN": CORE})
    assert f"{CORE}: has no cudnnGetVersion (not a cuDNN library)" in line


def _fake_cudnn(tmp_path, version):
    source = tmp_path / "fake_cudnn.c"
    source.write_text(
        "#include <stddef.h>\n"
        f"size_t cudnnGetVersion(void) {{ return {version}; }}\n"
        "int cudnnCreate(void** h) { *h = 0; return 0; }\n"
        "int cudnnSetStream(void* h, void* s) { return 0; }\n"
        "const char* cudnnGetErrorString(int s) { return \"CUDNN_STATUS_FAKE\"; }\n")
    library = str(tmp_path / f"libfake_cudnn_{version}.so")
    subprocess.run(["cc", "-shared", "-fPIC", str(source), "-o", library], check=True)
    return library


def test_cudnn_8_is_refused_with_its_version(tmp_path):
    line = load_in_subprocess(env={"AOTIRT_CUDNN": _fake_cudnn(tmp_path, 8907)})
    assert "is cuDNN 8.9.7; aotirt needs cuDNN 9.0 or newer" in line


def test_a_library_with_the_entry_points_loads_and_is_reported(tmp_path):
    library = _fake_cudnn(tmp_path, 91000)
    assert load_in_subprocess(env={"AOTIRT_CUDNN": library}) == f"OK {os.path.realpath(library)}"


def loadable_wheel_copy():
    """wheel_copy(), or a skip where there is none or it cannot be loaded here."""
    wheel = wheel_copy()
    if wheel is None:
        pytest.skip("no nvidia-cudnn-cu13/-cu12 wheel on sys.path")
    if os.environ.get("AOTIRT_SANITIZED") == "1":
        # Seen in make asan: cuDNN's own libcudnn.so.9 aborts the process
        # ("Invalid handle. Cannot load symbol cudnnGetVersion") when its
        # dlopen of its sub-libraries fails under AddressSanitizer.
        pytest.skip("cuDNN cannot be loaded under AddressSanitizer (make asan)")
    return wheel


def test_the_pip_wheel_copy_is_found_through_sys_path():
    wheel = loadable_wheel_copy()
    env = {"AOTIRT_CUDNN": ""}  # unset: the search
    assert load_in_subprocess(env=env) == f"OK {wheel}"


NVRTC_MAPPED = LOAD.format(name="cudnn") + """
with open("/proc/self/maps") as maps:
    files = {line.split()[-1] for line in maps}
print("NVRTC " + " ".join(sorted(f for f in files if "libnvrtc.so" in f)))
print("BUILTINS " + " ".join(sorted(f for f in files if "libnvrtc-builtins.so" in f)))
"""


def nvrtc_beside_the_cudnn_wheel():
    """The cuDNN wheel's file and the NVRTC its run path finds first (cu<major>/lib, then cuda_nvrtc/lib)."""
    wheel = loadable_wheel_copy()
    lib_dir = os.path.dirname(wheel)
    found = [os.path.realpath(path) for pattern in ("../../cu[0-9]*/lib/libnvrtc.so.*", "../../cuda_nvrtc/lib/libnvrtc.so.*")
             for path in sorted(glob.glob(os.path.join(lib_dir, pattern)))]
    beside = list(dict.fromkeys(found))
    if not beside:
        pytest.skip("no NVRTC wheel beside the cuDNN wheel (pip install nvidia-cuda-nvrtc)")
    return wheel, beside[0]


def mapped_with_decoys_first_on_the_linker_path(tmp_path, sonames):
    """Loads cuDNN in a subprocess whose LD_LIBRARY_PATH starts with a folder
    of decoy libraries under these sonames (a toolkit's copies stand there on
    the GPU machines); returns the NVRTC and builtins files it mapped."""
    decoy_dir = tmp_path / "toolkit"
    decoy_dir.mkdir()
    source = tmp_path / "decoy.c"
    source.write_text("int aotirt_decoy_nvrtc(void) { return 1; }\n")
    for soname in sonames:
        subprocess.run(["cc", "-shared", "-fPIC", f"-Wl,-soname,{soname}", str(source), "-o", str(decoy_dir / soname)],
                       check=True)
    linker_path = os.pathsep.join(p for p in (str(decoy_dir), os.environ.get("LD_LIBRARY_PATH")) if p)
    proc = run_python(NVRTC_MAPPED, env={"AOTIRT_CUDNN": "", "LD_LIBRARY_PATH": linker_path})
    assert proc.returncode == 0, proc.stderr
    loaded, nvrtc, builtins = proc.stdout.strip().splitlines()[-3:]
    return loaded, nvrtc.split()[1:], builtins.split()[1:]


def test_cudnn_compiles_with_the_nvrtc_beside_it_not_one_on_the_linker_path(tmp_path):
    # cuDNN's runtime-compiled engines open libnvrtc.so.<major> by soname,
    # and a wheel's cuDNN looks beside itself first (its run path). aotirt
    # opens NVRTC before cuDNN asks; opening it by soname first would hand
    # cuDNN any other NVRTC on the linker's path (a toolkit's), which
    # compiles the same attention kernels into slower code. A decoy with
    # that soname on LD_LIBRARY_PATH must not be the one mapped.
    wheel, nvrtc = nvrtc_beside_the_cudnn_wheel()
    loaded, mapped, _ = mapped_with_decoys_first_on_the_linker_path(tmp_path, [os.path.basename(nvrtc)])
    assert loaded == f"OK {wheel}"
    assert mapped == [nvrtc]


def test_nvrtc_compiles_with_the_builtins_beside_it_not_ones_on_the_linker_path(tmp_path):
    # NVRTC opens libnvrtc-builtins.so.<major>.<minor> by name when it
    # compiles; on the GPU machines that found the toolkit's copy on the
    # linker's path, not the one beside the wheel's NVRTC (session 37:
    # attention kernels up to 0.5 us slower than torch's). aotirt opens the
    # builtins beside the NVRTC it chose, so a decoy under that soname on
    # LD_LIBRARY_PATH must not be mapped.
    wheel, nvrtc = nvrtc_beside_the_cudnn_wheel()
    builtins = sorted(glob.glob(os.path.join(os.path.dirname(nvrtc), "libnvrtc-builtins.so.*")))
    if not builtins:
        pytest.skip(f"no NVRTC builtins beside {nvrtc}")
    loaded, mapped, mapped_builtins = mapped_with_decoys_first_on_the_linker_path(
        tmp_path, [os.path.basename(path) for path in builtins])
    assert loaded == f"OK {wheel}"
    assert mapped == [nvrtc]
    assert [os.path.realpath(path) for path in mapped_builtins] == [os.path.realpath(builtins[0])]


def test_unknown_library_names_are_refused():
    from aotirt._library import load_optional_library

    with pytest.raises(ValueError, match='unknown library "cufft" \\(cublas or cudnn\\)'):
        load_optional_library("cufft")


def test_info_names_the_optional_libraries():
    proc = subprocess.run([sys.executable, "-m", "aotirt", "info"], check=False, capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, AOTIRT_CUDNN="/nonexistent"))
    assert proc.returncode == 0, proc.stderr
    assert "cuBLAS: " in proc.stdout
    assert "cuDNN: not loadable (aotirt_load_optional_library: cuDNN could not be loaded from " \
           "AOTIRT_CUDNN=/nonexistent" in proc.stdout


def test_tf32_switch():
    code = (f"import ctypes, aotirt\n"
            f"lib = ctypes.CDLL({CORE!r})\n"
            "first = lib.aotirt_cudnn_allow_tf32()\n"
            "aotirt.set_cudnn_allow_tf32(not first)\n"
            "print(first, lib.aotirt_cudnn_allow_tf32())\n")
    default = run_python(code)
    assert default.returncode == 0, default.stderr
    assert default.stdout.split() == ["1", "0"]  # torch's default: TF32 allowed for convolutions
    for value in ("0", "false", "OFF"):
        assert run_python(code, env={"AOTIRT_CUDNN_ALLOW_TF32": value}).stdout.split() == ["0", "1"]
    assert run_python(code, env={"AOTIRT_CUDNN_ALLOW_TF32": "1"}).stdout.split() == ["1", "0"]


CUDA_CONV = shim("aoti_torch_cuda_convolution", H, H, P, P, I64, P, I64, P, I64, I32, P, I64, I64, P)


def test_the_cuda_convolution_checks_its_operands_first():
    import numpy as np

    x, _ = dense(np.zeros((1, 2, 4, 4), np.float32))
    w, _ = dense(np.zeros((3, 2, 3, 3), np.float32))
    one = (I64 * 1)(1)
    zero = (I64 * 1)(0)
    out = H()
    status = CUDA_CONV(x.ptr, w.ptr, None, one, 1, zero, 1, one, 1, 0, zero, 1, 1, ctypes.byref(out))
    assert status != 0 and not out
    assert last_error() == "aoti_torch_cuda_convolution: input must be a CUDA tensor on cuda:0, got a CPU tensor"
    assert CUDA_CONV(None, w.ptr, None, one, 1, zero, 1, one, 1, 0, zero, 1, 1, ctypes.byref(out)) != 0
    assert "NULL" in last_error()


def test_no_cudnn_library_is_linked():
    # Loaded with dlopen on first use only: libaotirt.so does not need it.
    needed = subprocess.run(["readelf", "-d", CORE], check=True, capture_output=True, text=True).stdout
    assert "libcudnn" not in needed and "libnvrtc" not in needed
    assert not glob.glob(os.path.join(os.path.dirname(CORE), "libcudnn*"))
