"""Bad input: each case raises a clear exception and the process lives on."""

import os

import numpy as np
import pytest

import aotirt
from helpers import run_python

@pytest.fixture
def handle():
    with aotirt.AotiHandle(aotirt.models.path("add_mul", "cpu")) as h:
        yield h


def ones(*shape, dtype=np.float32):
    return np.ones(shape, dtype)


def test_missing_file():
    with pytest.raises(aotirt.AotiError, match=r"cannot open model library /no/such/model\.so: No such file"):
        aotirt.AotiHandle("/no/such/model.so")


def test_directory_is_not_a_library(tmp_path):
    with pytest.raises(aotirt.AotiError, match="not a regular file"):
        aotirt.AotiHandle(tmp_path)


def test_file_that_is_not_a_shared_library(tmp_path):
    bogus = tmp_path / "model.so"
    bogus.write_text("this is not an ELF file\n")
    with pytest.raises(aotirt.AotiError, match=r"cannot load model library .*model\.so: .*(invalid ELF header|too short)"):
        aotirt.AotiHandle(bogus)


def test_truncated_library(tmp_path):
    data = open(aotirt.models.path("add_mul", "cpu"), "rb").read()
    cut = tmp_path / "cut.so"
    cut.write_bytes(data[: len(data) // 3])
    with pytest.raises(aotirt.AotiError, match="cannot load model library"):
        aotirt.AotiHandle(cut)


def test_library_without_container_symbols():
    # A real shared library that is not a model: aotirt's own core.
    core = os.path.join(os.path.dirname(aotirt.__file__), "libaotirt.so")
    with pytest.raises(aotirt.AotiError) as info:
        aotirt.AotiHandle(core)
    message = str(info.value)
    assert "is not an AOTInductor model library" in message
    for symbol in ["AOTInductorModelContainerCreateWithDevice", "AOTInductorModelContainerDelete",
                   "AOTInductorModelContainerGetNumInputs", "AOTInductorModelContainerGetNumOutputs",
                   "AOTInductorModelContainerRun"]:
        assert symbol in message


def test_cpu_library_refuses_a_cuda_device():
    with pytest.raises(ValueError, match="use CudaHandle"):
        aotirt.AotiHandle(aotirt.models.path("add_mul", "cpu"), device="cuda:0")


def test_bad_device_strings():
    for device in ["gpu", "cuda:x", -1, 1.5, None]:
        with pytest.raises(ValueError, match="device"):
            aotirt.AotiHandle(aotirt.models.path("add_mul", "cpu"), device=device)


def test_wrong_number_of_inputs(handle):
    with pytest.raises(ValueError, match="the model takes 3 inputs, got 2"):
        handle.run([ones(2), ones(2)])
    with pytest.raises(ValueError, match="the model takes 3 inputs, got 4"):
        handle.run([ones(2)] * 4)


def test_inputs_must_be_a_sequence(handle):
    with pytest.raises(TypeError):
        handle.run(None)


def test_wrong_dtype_names_the_input(handle):
    with pytest.raises(aotirt.AotiError, match=r"input 2 \(c\): add_mul takes float32"):
        handle.run([ones(3), ones(3), ones(3, dtype=np.float64)])


def test_unsupported_dtype_names_the_input(handle):
    with pytest.raises(TypeError, match="input 1: buffer format .* is not a supported dtype"):
        handle.run([ones(3), np.ones(3, np.complex64), ones(3)])


def test_mismatched_shapes_name_the_input(handle):
    with pytest.raises(aotirt.AotiError, match=r"input 1 \(b\) has shape \[3, 2\], input 0 \(a\) has \[2, 3\]"):
        handle.run([ones(2, 3), ones(3, 2), ones(2, 3)])


def test_not_an_array_names_the_input(handle):
    with pytest.raises(TypeError, match="input 2: expected an aotirt.Tensor or an array"):
        handle.run([ones(2), ones(2), "not an array"])


def test_too_many_dimensions(handle):
    deep = np.ones((1,) * 17, np.float32)
    with pytest.raises(ValueError, match="17 dimensions, at most 16"):
        handle.run([deep, deep, deep])


def test_run_on_a_closed_handle():
    h = aotirt.AotiHandle(aotirt.models.path("add_mul", "cpu"))
    h.close()
    assert h.closed
    with pytest.raises(ValueError, match="is closed"):
        h.run([ones(2)] * 3)
    assert "closed" in repr(h)


def test_double_close_is_harmless():
    # Like a Python file: closing twice does nothing (a context manager
    # often closes a handle that was already closed by hand).
    h = aotirt.AotiHandle(aotirt.models.path("add_mul", "cpu"))
    h.close()
    h.close()
    with h:
        pass
    assert h.closed
    with pytest.raises(ValueError, match="is closed"):
        h.run([ones(2)] * 3)


def test_failed_run_leaves_the_handle_usable(handle):
    with pytest.raises(aotirt.AotiError):
        handle.run([ones(3), ones(4), ones(3)])
    np.testing.assert_array_equal(handle.run([ones(3)] * 3)[0].numpy(), np.full(3, 2, np.float32))


def test_copy_to_host_rejects_wrong_out(handle):
    (y,) = handle.run([ones(2, 2)] * 3)
    with pytest.raises(ValueError, match=r"out has shape \(4,\), the tensor \(2, 2\)"):
        aotirt.copy_to_host(y, out=np.empty(4, np.float32))
    with pytest.raises(TypeError, match="the tensor is float32"):
        aotirt.copy_to_host(y, out=np.empty((2, 2), np.int32))
    with pytest.raises(ValueError, match="writable C-contiguous"):
        aotirt.copy_to_host(y, out=np.empty((2, 2), np.float32).T)
    readonly = np.empty((2, 2), np.float32)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="writable"):
        aotirt.copy_to_host(y, out=readonly)
    with pytest.raises(TypeError):
        aotirt.copy_to_host(np.ones(2))


def test_tensors_and_streams_have_no_public_constructor():
    with pytest.raises(TypeError, match="asarray"):
        aotirt.Tensor()
    with pytest.raises(TypeError, match="Stream.shared"):
        aotirt.Stream()


def test_models_path_rejects_unknown_names():
    with pytest.raises(ValueError, match="no example model named 'nope'; available: .*add_mul"):
        aotirt.models.path("nope")
    with pytest.raises(ValueError, match="device"):
        aotirt.models.path("add_mul", "tpu")


def test_cuda_handle_without_a_usable_gpu_raises_cuda_error():
    # CUDA_VISIBLE_DEVICES="" hides every GPU, so this runs the same on a GPU
    # runner and on a machine with no GPU or no driver.
    proc = run_python(
        "import aotirt\n"
        "try:\n"
        "    aotirt.CudaHandle(aotirt.models.path('add_mul', 'cuda'))\n"
        "except aotirt.CudaError as e:\n"
        "    print(e.name, e.code, isinstance(e, RuntimeError))\n"
        "    print(e)\n",
        env={"CUDA_VISIBLE_DEVICES": ""},
    )
    assert proc.returncode == 0, proc.stderr
    first, message = proc.stdout.splitlines()[:2]
    name, code, is_runtime_error = first.split()
    assert name in ("cudaErrorNoDevice", "cudaErrorInsufficientDriver"), proc.stdout
    assert int(code) in (100, 35)
    assert is_runtime_error == "True"
    assert message.startswith(name + ": ")
    assert "add_mul_cuda.so" in message


def test_cuda_upload_without_a_usable_gpu_raises_cuda_error():
    proc = run_python(
        "import aotirt, numpy as np\n"
        "try:\n"
        "    aotirt.asarray(np.ones(3, np.float32), device='cuda')\n"
        "except aotirt.CudaError as e:\n"
        "    print(e.name)\n",
        env={"CUDA_VISIBLE_DEVICES": ""},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() in ("cudaErrorNoDevice", "cudaErrorInsufficientDriver")


def test_weights_for_a_model_without_constants(handle):
    with pytest.raises(aotirt.AotiError, match="does not export AOTInductorModelUpdateConstantsFromBlob"):
        handle.update_constants_from_blob(b"\0" * 16)
    with pytest.raises(TypeError):
        handle.update_constants_from_blob(None)
