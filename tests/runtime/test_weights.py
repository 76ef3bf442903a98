"""Weights blobs are checked against what the library says it reads before
AOTInductorModelUpdateConstantsFromBlob gets the bare pointer: on every path
(update_constants_from_blob, aotirt.load of a .pt2, the CLI's --weights,
models.open). Cases that crashed before run in a subprocess."""

import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import aotirt
from support.helpers import run_python
from support.model_files import pt2_package, stand_in_model
from test_aoti_models import model_folder

ENCODER = aotirt.models.path("encoder", "cpu")


def encoder_blob():
    with open(aotirt.models.weights("encoder"), "rb") as f:
        return f.read()


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AOTIRT_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize("cut", [0, 1, 4, 1000, 511996])
def test_a_short_blob_is_refused_before_the_library_reads_it(cut):
    blob = encoder_blob()[:cut]
    with aotirt.AotiHandle(ENCODER) as h:
        with pytest.raises(ValueError, match=rf"the weights blob has {cut} bytes, .*encoder_cpu\.so reads "
                                             r"exactly 512000 \(AOTInductorModelContainerGetConstantsBlobSize\)"):
            h.update_constants_from_blob(blob)
        with pytest.raises(aotirt.AotiError, match="weights not loaded"):   # nothing was loaded
            h.run([np.zeros((64, 80), np.float32)])


def test_a_long_blob_is_refused_and_the_right_one_loads():
    with aotirt.AotiHandle(ENCODER) as h:
        with pytest.raises(ValueError, match="has 512001 bytes"):
            h.update_constants_from_blob(encoder_blob() + b"\0")
        h.update_constants_from_blob(np.frombuffer(encoder_blob(), np.uint8))   # any buffer
        (hidden,) = h.run([np.zeros((64, 80), np.float32)])
        assert np.all(np.isfinite(hidden.numpy()))


def test_load_of_a_package_with_a_short_blob_in_a_subprocess(tmp_path):
    # aotirt.load of such a package was a segmentation fault.
    pt2 = pt2_package(tmp_path / "enc.pt2", ENCODER, encoder_blob()[:4096])
    proc = run_python("import aotirt\n"
                      "try:\n"
                      f"    aotirt.load({pt2!r})\n"
                      "except ValueError as e:\n"
                      "    print('ValueError:', e)\n", env={"AOTIRT_CACHE": str(tmp_path / "c")})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ValueError: the weights blob has 4096 bytes"), proc.stdout
    with aotirt.load(pt2_package(tmp_path / "ok.pt2", ENCODER, encoder_blob())) as h:
        assert np.all(np.isfinite(h.run([np.zeros((64, 80), np.float32)])[0].numpy()))


def test_cli_weights_of_the_wrong_size(tmp_path):
    # python -m aotirt run --weights <short file> segfaulted or printed NaN outputs.
    short = tmp_path / "short.weights"
    short.write_bytes(encoder_blob()[:100])
    np.save(tmp_path / "frames.npy", np.zeros((64, 80), np.float32))
    proc = subprocess.run([sys.executable, "-m", "aotirt", "run", ENCODER, "--input", str(tmp_path / "frames.npy"),
                           "--weights", str(short)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert "ValueError: the weights blob has 100 bytes" in proc.stderr, proc.stderr
    assert "hidden" not in proc.stdout


def test_models_open_refuses_a_short_weights_file(tmp_path):
    short = tmp_path / "cut.weights"
    short.write_bytes(encoder_blob()[:-4])
    with pytest.raises(ValueError, match="cut.weights has 511996 bytes"):
        aotirt.models.open("encoder", "cpu", weights=short)


# ---- real AOTInductor libraries, compiled by torch ----------------------------

def blob_package():
    """mlp_blob: weights written beside the library (binary_blob)."""
    folder, meta = model_folder("mlp_blob", "cpu")
    return os.path.join(folder, "model.pt2"), folder, meta


def extracted(pt2, tmp_path):
    """The library and the blob of a package, as files."""
    with zipfile.ZipFile(pt2) as z:
        names = z.namelist()
        lib = next(n for n in names if n.endswith(".wrapper.so"))
        blob = next(n for n in names if n.endswith("_weights.blob"))
        (tmp_path / "model.so").write_bytes(z.read(lib))
        data = z.read(blob)
    return str(tmp_path / "model.so"), data


def test_torch_library_says_its_blob_size_and_refuses_a_cut_blob(tmp_path):
    pt2, folder, meta = blob_package()
    library, blob = extracted(pt2, tmp_path)
    x = np.load(os.path.join(folder, "input0.npy"))
    with aotirt.AotiHandle(library) as h:
        with pytest.raises(ValueError, match=rf"has {len(blob) - 64} bytes, .* reads exactly {len(blob)}"):
            h.update_constants_from_blob(blob[:-64])       # once: NaN outputs
        h.update_constants_from_blob(blob)
        out = h.run([x])[0].numpy()
    np.testing.assert_allclose(out, np.load(os.path.join(folder, "expected0.npy")), rtol=1e-4, atol=1e-5)


def test_torch_package_with_a_cut_blob(tmp_path):
    pt2, _, _ = blob_package()
    cut = tmp_path / "cut.pt2"
    with zipfile.ZipFile(pt2) as source, zipfile.ZipFile(cut, "w") as sink:
        for info in source.infolist():
            data = source.read(info)
            sink.writestr(info, data[: len(data) // 2] if info.filename.endswith("_weights.blob") else data)
    with pytest.raises(ValueError, match="reads exactly"):
        aotirt.load(cut)


def test_torch_library_run_before_its_weights_in_a_subprocess(tmp_path):
    # Its constants are missing until the blob is loaded: a run was a segfault.
    pt2, folder, _ = blob_package()
    library, _ = extracted(pt2, tmp_path)
    proc = run_python("import aotirt, numpy as np\n"
                      f"h = aotirt.AotiHandle({library!r})\n"
                      "try:\n"
                      f"    h.run([np.load({os.path.join(folder, 'input0.npy')!r})])\n"
                      "except aotirt.AotiError as e:\n"
                      "    print('AotiError:', e)\n")
    assert proc.returncode == 0, proc.stderr
    assert "weights not loaded: its 6 constants are kept in a separate weights blob" in proc.stdout, proc.stdout


def test_torch_library_with_weights_compiled_in_refuses_a_blob():
    # Its UpdateConstantsFromBlob does nothing: the blob would be ignored silently.
    folder, _ = model_folder("mlp", "cpu")
    with aotirt.load(os.path.join(folder, "model.pt2")) as h:
        with pytest.raises(aotirt.AotiError, match="reads no weights blob: its weights are compiled into the library"):
            h.update_constants_from_blob(b"\0" * 1024)


# ---- a library that says nothing about its weights' size ----------------------

# Its Run does nothing and its blob loader fails for a first byte of 0xFF; it
# exports neither GetConstantsBlobSize nor GetConstantDataSize.
UNSIZED_MODEL = r"""
int AOTInductorModelContainerRun(void* c, void** in, size_t ni, void** out, size_t no, void* s, void* p) { return 0; }
int AOTInductorModelUpdateConstantsFromBlob(void* c, const uint8_t* blob) { return blob[0] == 0xFF; }
"""


@pytest.fixture(scope="module")
def unsized_model(tmp_path_factory):
    return stand_in_model(tmp_path_factory.mktemp("unsized"), "unsized", 0, 0, UNSIZED_MODEL)


def test_a_library_that_says_nothing_gets_a_sized_blob_unchecked(unsized_model):
    with aotirt.AotiHandle(unsized_model) as h:
        h.update_constants_from_blob(b"\0" * 16)
        with pytest.raises(aotirt.AotiError, match=r"\(the library does not say how large its weights blob is: "
                                                   r"the blob's 16 bytes could not be checked\)"):
            h.update_constants_from_blob(b"\xff" * 16)


def test_the_unsized_c_call_is_refused_where_nothing_can_be_checked(unsized_model):
    import ctypes

    from support.shims import LIB, last_error

    handle = ctypes.c_void_p()
    LIB.aotirt_handle_open.argtypes = [ctypes.c_char_p, ctypes.c_int32, ctypes.c_int32, ctypes.c_void_p,
                                       ctypes.POINTER(ctypes.c_void_p)]
    assert LIB.aotirt_handle_open(unsized_model.encode(), 0, 0, None, ctypes.byref(handle)) == 0
    try:
        blob = ctypes.create_string_buffer(16)
        LIB.aotirt_handle_update_constants_from_blob.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        assert LIB.aotirt_handle_update_constants_from_blob(handle, blob) == 3          # AOTIRT_ERROR_VALUE
        assert "does not say how large its weights blob is, and the blob came without a size" in last_error()
        size, exact = ctypes.c_uint64(), ctypes.c_bool()
        LIB.aotirt_handle_constants_blob_size.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64),
                                                          ctypes.POINTER(ctypes.c_bool)]
        assert LIB.aotirt_handle_constants_blob_size(handle, ctypes.byref(size), ctypes.byref(exact)) == 3
        # The encoder says: 512000 bytes, exactly.
        encoder = ctypes.c_void_p()
        assert LIB.aotirt_handle_open(ENCODER.encode(), 0, 0, None, ctypes.byref(encoder)) == 0
        assert LIB.aotirt_handle_constants_blob_size(encoder, ctypes.byref(size), ctypes.byref(exact)) == 0
        assert (size.value, exact.value) == (512000, True)
        LIB.aotirt_handle_free.argtypes = [ctypes.c_void_p]
        LIB.aotirt_handle_free(encoder)
    finally:
        LIB.aotirt_handle_free(handle)


def test_opening_torch_libraries_prints_nothing():
    # Asking GetConstantsBlobSize of a library whose weights are compiled in
    # makes torch print "Error: constant blob size is only available for
    # mmap'd weights" to stderr: it is asked only where it answers.
    for name in ("mlp", "mlp_blob", "int_ops"):
        folder, _ = model_folder(name, "cpu")
        proc = run_python(f"import aotirt\naotirt.load({os.path.join(folder, 'model.pt2')!r}).close()\n")
        assert proc.returncode == 0 and proc.stderr == "", (name, proc.stderr)


def test_torch_library_without_constants_refuses_a_blob():
    folder, _ = model_folder("int_ops", "cpu")
    with aotirt.load(os.path.join(folder, "model.pt2")) as h:
        with pytest.raises(aotirt.AotiError, match="reads no weights blob: it has no constants"):
            h.update_constants_from_blob(b"\0" * 8)
