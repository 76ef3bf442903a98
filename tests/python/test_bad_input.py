"""Bad input: each case raises a clear exception and the process lives on."""

import os
import subprocess
import sys

import numpy as np
import pytest

import aotirt
from support.helpers import cuda_error_without_gpu, run_python


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
    error = cuda_error_without_gpu("aotirt.CudaHandle(aotirt.models.path('add_mul', 'cuda'))")
    assert error["is_runtime_error"]
    assert error["message"].startswith(error["name"] + ": ")
    assert "add_mul_cuda.so" in error["message"]


def test_cuda_upload_without_a_usable_gpu_raises_cuda_error():
    cuda_error_without_gpu("aotirt.asarray(np.ones(3, np.float32), device='cuda')")


def test_weights_for_a_model_without_constants(handle):
    with pytest.raises(aotirt.AotiError, match="does not export AOTInductorModelUpdateConstantsFromBlob"):
        handle.update_constants_from_blob(b"\0" * 16)
    with pytest.raises(TypeError):
        handle.update_constants_from_blob(None)


def test_zero_size_inputs_give_zero_size_outputs(handle):
    for shape in [(0,), (3, 0), (0, 5, 2)]:
        (out,) = handle.run([np.ones(shape, np.float32)] * 3)
        assert out.shape == shape and out.numpy().shape == shape


def test_nan_and_inf_pass_through_unchanged(handle):
    a = np.array([np.nan, np.inf, -np.inf, 1.0], np.float32)
    one, zero = np.ones(4, np.float32), np.zeros(4, np.float32)
    result = handle.run([a, one, zero])[0].numpy()
    assert np.isnan(result[0]) and result[1] == np.inf and result[2] == -np.inf and result[3] == 1.0


def test_negative_strides_are_copied_not_misread(handle):
    a = np.arange(10, dtype=np.float32)[::-1]
    one, zero = np.ones(10, np.float32), np.zeros(10, np.float32)
    np.testing.assert_array_equal(handle.run([a, one, zero])[0].numpy(), a)


def test_tensor_outlives_a_closed_handle_and_can_feed_another(handle):
    h = aotirt.AotiHandle(aotirt.models.path("add_mul", "cpu"))
    (y,) = h.run([ones(3)] * 3)
    h.close()
    np.testing.assert_array_equal(handle.run([y, y, y])[0].numpy(), np.full(3, 6, np.float32))


def test_read_only_input_buffers_are_accepted(handle):
    a = np.ones(4, np.float32)
    a.flags.writeable = False
    np.testing.assert_array_equal(handle.run([a, a, memoryview(a)])[0].numpy(), np.full(4, 2, np.float32))


def test_big_endian_input_is_refused(handle):
    big = np.ones(3, dtype=">f4")
    with pytest.raises(TypeError, match="input 0: buffer format '>f' is not a supported dtype"):
        handle.run([big, ones(3), ones(3)])


def test_object_arrays_are_refused(handle):
    with pytest.raises(TypeError, match="input 1"):
        handle.run([ones(2), np.array([object(), object()]), ones(2)])


def test_asarray_refuses_bad_devices_and_non_arrays():
    with pytest.raises(ValueError, match="device"):
        aotirt.asarray(ones(2), device="cuda:-1")
    with pytest.raises(TypeError, match="expected an aotirt.Tensor or an array"):
        aotirt.asarray([1.0, 2.0])


def test_narrow_and_copy_errors():
    t = aotirt.asarray(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="outside"):
        t.narrow(1, -1, 2)
    with pytest.raises(TypeError):
        t.copy_(np.zeros((2, 3), np.float32))


def test_handle_path_must_be_a_path():
    with pytest.raises(TypeError):
        aotirt.AotiHandle(42)
    with pytest.raises((ValueError, aotirt.AotiError)):
        aotirt.AotiHandle("")


@pytest.mark.gpu
def test_closed_stream_is_refused():
    s = aotirt.Stream.create(0)
    s.close()
    s.close()
    assert s.closed and "closed" in repr(s)
    with pytest.raises(ValueError, match="the stream is closed"):
        s.__cuda_stream__()
    with pytest.raises(ValueError, match="the stream is closed"):
        aotirt.CudaHandle(aotirt.models.path("add_mul", "cuda"), stream=s)
    with pytest.raises(ValueError, match="the stream is closed"):
        aotirt.empty((2,), "float32", device=0, stream=s)


@pytest.mark.gpu
def test_closing_a_stream_object_keeps_it_alive_for_its_users():
    s = aotirt.Stream.create(0)
    with aotirt.CudaHandle(aotirt.models.path("add_mul", "cuda"), stream=s) as h:
        s.close()
        (y,) = h.run([ones(1000)] * 3)
        assert y.stream == h.stream
        np.testing.assert_array_equal(y.numpy(), np.full(1000, 2, np.float32))


@pytest.mark.gpu
def test_stream_on_another_device_than_the_handle():
    if aotirt.device_count() < 2:
        s = aotirt.Stream.create(0)
        with pytest.raises(ValueError, match="CUDA device 1 does not exist"):
            aotirt.CudaHandle(aotirt.models.path("add_mul", "cuda"), device=1, stream=s)
    else:
        s = aotirt.Stream.create(1)
        with pytest.raises(ValueError, match="the stream is on cuda:1, the handle on cuda:0"):
            aotirt.CudaHandle(aotirt.models.path("add_mul", "cuda"), device=0, stream=s)


def test_library_needing_missing_shims_names_every_one(tmp_path):
    # Checked before dlopen, from the library's symbol table: no crash at the
    # first call into a function nobody defines.
    source = tmp_path / "needs.c"
    source.write_text(
        "extern int aoti_torch_frobnicate(void);\n"
        "extern int aoti_torch_missing_op(int);\n"
        "extern int aoti_torch_empty_strided();\n"  # one that aotirt has
        "int AOTInductorModelContainerCreateWithDevice(void) {\n"
        "  return aoti_torch_frobnicate() + aoti_torch_missing_op(1) + aoti_torch_empty_strided();\n"
        "}\n")
    library = tmp_path / "needs.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    with pytest.raises(aotirt.AotiError) as info:
        aotirt.AotiHandle(library)
    message = str(info.value)
    assert "needs 2 aoti_torch_* function(s) that aotirt does not implement" in message
    assert "aoti_torch_frobnicate" in message and "aoti_torch_missing_op" in message
    assert "aoti_torch_empty_strided" not in message


# ---- sizes and bounds from users: overflow-safe checks in the core --------

NARROW_CASES = [
    # (dim, start, length): each once made a view outside the buffer, or a
    # shape of 2**62 elements, because start + length overflowed int64.
    (0, 2**63 - 1, 1),
    (0, 1, 2**62),
    (0, 3, 2**63 - 1),
    (0, -1, 1),
    (0, 0, -1),
    (0, 7, 0),
    (1, 0, 1),
    (-2, 0, 1),
]


@pytest.mark.parametrize("dim, start, length", NARROW_CASES)
def test_narrow_out_of_bounds_is_refused_in_a_subprocess(dim, start, length):
    # In a subprocess: before the fix, reading the view crashed the interpreter.
    proc = run_python(
        "import aotirt, numpy as np\n"
        "t = aotirt.asarray(np.arange(6, dtype=np.float32))\n"
        "try:\n"
        f"    v = t.narrow({dim}, {start}, {length})\n"
        "    print('made', v.shape, v.numpy().sum())\n"
        "except ValueError as e:\n"
        "    print('ValueError:', e)\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ValueError: narrow: "), proc.stdout


def test_chained_narrows_stay_inside_the_buffer():
    t = aotirt.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    view = t.narrow(1, 1, 2).narrow(0, 2, 1)
    np.testing.assert_array_equal(view.numpy(), [[9, 10]])
    with pytest.raises(ValueError, match="outside dimension 1 of size 2"):
        view.narrow(1, 2**63 - 1, 2)
    with pytest.raises(ValueError, match="outside dimension 0 of size 1"):
        view.narrow(0, 1, 1)
    assert view.narrow(0, 1, 0).shape == (0, 2)     # start == size, length 0: allowed, as in torch
    assert view.narrow(-1, 0, 1).shape == (1, 1)    # negative dims count from the end


@pytest.mark.parametrize("shape, dtype", [((2**62,), "float32"), ((2**31, 2**31, 4), "int8"), ((2**30, 2**30, 4), "int16"),
                                         ((2**61,), "float64")])
def test_allocation_sizes_that_overflow_are_refused(shape, dtype):
    # numel fits in int64 but numel * itemsize does not: this once wrapped to
    # a tiny allocation, which writes then overran.
    with pytest.raises(ValueError, match="more (bytes|elements) than fit in int64"):
        aotirt.empty(shape, dtype)


def test_a_name_without_a_slash_opens_the_file_in_the_working_folder(tmp_path):
    # The library checked (./model.so) is the one opened: before, dlopen
    # searched the library path for "model.so" and found another file there.
    import shutil

    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    shutil.copy(aotirt.models.path("add_mul", "cpu"), here / "model.so")
    shutil.copy(os.path.join(os.path.dirname(aotirt.__file__), "libaotirt.so"), elsewhere / "model.so")
    package_parent = os.path.dirname(os.path.dirname(aotirt.__file__))
    env = dict(os.environ, LD_LIBRARY_PATH=str(elsewhere),
               PYTHONPATH=os.pathsep.join([package_parent, os.environ.get("PYTHONPATH", "")]))
    code = ("import aotirt, numpy as np\n"
            "with aotirt.AotiHandle('model.so') as h:\n"
            "    print(h.run([np.ones(2, np.float32)] * 3)[0].numpy())\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=here, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[2. 2.]"
    proc = subprocess.run([sys.executable, "-m", "aotirt", "run", "model.so"], cwd=here, env=env,
                          capture_output=True, text=True, timeout=120)
    assert "takes 3 inputs, got 0" in proc.stderr, proc.stderr   # add_mul's container, not libaotirt


def _driver_installed():
    import ctypes

    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


def test_no_driver_says_so_and_keeps_the_cuda_name_and_code():
    error = cuda_error_without_gpu("aotirt.Stream.shared(0)")
    if _driver_installed():
        # A GPU machine with CUDA_VISIBLE_DEVICES="": CUDA's own reason stands.
        assert "no NVIDIA driver found" not in error["message"], error
    else:
        # This machine has the toolkit but no driver: every CUDA path said only
        # cudaErrorInsufficientDriver ("driver version is insufficient").
        assert error["name"] == "cudaErrorInsufficientDriver" and error["code"] == 35, error
        assert error["message"].startswith("cudaErrorInsufficientDriver: no NVIDIA driver found: "
                                           "libcuda.so.1 cannot be loaded"), error


# ---- integers from users: operator.index semantics, never a float's truncation

@pytest.mark.parametrize("make", [
    lambda: aotirt.empty((2.5,)),                 # was shape (2,)
    lambda: aotirt.empty((2, "3")),
    lambda: aotirt.empty(1.0),
    lambda: aotirt.empty_pinned((1.5, 2)),
    lambda: aotirt.asarray(np.zeros(6, np.float32)).narrow(0, 2.5, 1),   # was start 2
    lambda: aotirt.asarray(np.zeros(6, np.float32)).narrow(0.0, 1, 1),
    lambda: aotirt.asarray(np.zeros(6, np.float32)).narrow(0, 1, None),
])
def test_non_integer_sizes_and_indices_are_type_errors(make):
    with pytest.raises(TypeError, match="must be an integer"):
        make()


def test_integer_like_sizes_are_taken():
    assert aotirt.empty((np.int64(2), np.int32(3))).shape == (2, 3)
    assert aotirt.empty(4).shape == (4,)
    t = aotirt.asarray(np.arange(6, dtype=np.float32))
    np.testing.assert_array_equal(t.narrow(np.int64(0), np.int16(2), np.uint8(2)).numpy(), [2, 3])
    with pytest.raises(ValueError, match="does not fit in int64"):
        t.narrow(0, 2**64, 1)
    with pytest.raises(ValueError, match="negative size"):
        aotirt.empty((2, -1))


def test_empty_pinned_sizes_that_overflow():
    # numel * itemsize wrapped in size_t before (a tiny allocation for a huge shape).
    with pytest.raises(ValueError, match="more than fit in int64"):
        aotirt.empty_pinned((2**62,), np.float32)


def test_cuda_array_interface_entries_must_be_integers():
    class Fake:
        def __init__(self, **overrides):
            self.__cuda_array_interface__ = dict({"shape": (4,), "typestr": "<f4", "data": (0, False),
                                                  "version": 3}, **overrides)

    with pytest.raises(TypeError, match="__cuda_array_interface__ shape must be an integer"):
        aotirt.from_dlpack(Fake(shape=(2.5,)))
    with pytest.raises(TypeError, match="__cuda_array_interface__ stride must be an integer"):
        aotirt.from_dlpack(Fake(strides=(4.0,)))
    with pytest.raises(TypeError, match="data address .* is not a pointer"):
        aotirt.from_dlpack(Fake(data=(-8, False)))
    with pytest.raises(TypeError, match=r"data must be \(address, read_only\)"):
        aotirt.from_dlpack(Fake(data=12345))


@pytest.mark.parametrize("device", [1.0, True, "cuda:" + "9" * 30, "cuda:\u0663", -1])
def test_device_indices_are_integers(device):
    with pytest.raises(ValueError, match="device"):
        aotirt.empty((2,), device=device)


@pytest.mark.parametrize("device", [2.5, "0", None, True])
def test_stream_device_indices_are_integers(device):
    # Stream.shared(2.5) was Stream.shared(2).
    with pytest.raises(TypeError, match="a device index must be an integer"):
        aotirt.Stream.shared(device)
    with pytest.raises(TypeError, match="a device index must be an integer"):
        aotirt.Stream.create(device)


def test_stream_device_index_range():
    for device in (-1, 2**40):
        with pytest.raises(ValueError, match="device index must be >= 0"):
            aotirt.Stream.shared(device)


def test_c_api_wrap_host_refuses_negative_strides_and_huge_extents():
    import ctypes

    from support.shims import LIB, last_error

    wrap = LIB.aotirt_tensor_wrap_host
    wrap.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64),
                     ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    wrap.restype = ctypes.c_int
    data = np.zeros(8, np.float32)
    out = ctypes.c_void_p()
    sizes = (ctypes.c_int64 * 1)(8)
    assert wrap(data.ctypes.data, 1, sizes, (ctypes.c_int64 * 1)(-1), 6, None, None, ctypes.byref(out)) == 3
    assert "stride -1 of dimension 0 is negative" in last_error()
    huge = (ctypes.c_int64 * 2)(2**40, 2**40)   # sizes 2**40 x 2**40 overflow before any stride does
    assert wrap(data.ctypes.data, 2, huge, (ctypes.c_int64 * 2)(2**40, 1), 6, None, None, ctypes.byref(out)) == 3
    assert "than fit in int64" in last_error()
    sizes = (ctypes.c_int64 * 2)(3, 3)           # numel fits, but the strides span past int64
    assert wrap(data.ctypes.data, 2, sizes, (ctypes.c_int64 * 2)(2**62, 1), 6, None, None, ctypes.byref(out)) == 3
    assert "span more bytes than fit in int64" in last_error()
