"""Interop on the CPU besides DLPack (test_dlpack_cpu.py): the CUDA array
interface's checks, pinned memory without a usable GPU, adopted streams (no
CUDA work), type stubs. Runs without a GPU; the GPU side is in
test_interop_gpu.py."""

import ast
import os
import weakref

import numpy as np
import pytest

import aotirt
from support.helpers import REPO, cuda_error_without_gpu, gone

# ---- the CUDA array interface ----------------------------------------------------------


def test_cpu_tensors_have_no_cuda_array_interface():
    t = aotirt.asarray(np.ones(3, np.float32))
    assert not hasattr(t, "__cuda_array_interface__")
    with pytest.raises(AttributeError, match="host memory"):
        t.__cuda_array_interface__  # noqa: B018  (the attribute access is what raises)


class FakeCAI:
    def __init__(self, **entries):
        self.__cuda_array_interface__ = dict({"shape": (3,), "typestr": "<f4", "data": (0, False),
                                              "version": 3, "strides": None}, **entries)


@pytest.mark.parametrize("entries, error, match", [
    (dict(mask=object()), ValueError, "masked arrays"),
    (dict(typestr=">f4"), TypeError, "typestr '>f4' is not a supported dtype"),
    (dict(typestr="<c8"), TypeError, "typestr '<c8' is not a supported dtype"),
    (dict(stream=0), ValueError, "stream 0 is not allowed"),
    (dict(stream=1.5), TypeError, "stream is 1.5, not an int"),
    (dict(strides=(6,)), ValueError, "stride 6 bytes is not a multiple of the item size"),
    (dict(strides=(4, 4)), ValueError, "2 strides for 1 dimensions"),
])
def test_bad_cuda_array_interfaces_are_named(entries, error, match):
    with pytest.raises(error, match=match):
        aotirt.from_dlpack(FakeCAI(**entries))


def test_cuda_array_interface_on_a_cpu_handle_is_refused():
    with aotirt.AotiHandle(aotirt.models.path("add_mul", "cpu")) as handle:
        with pytest.raises(ValueError, match=r"input 1 is on a CUDA device \(__cuda_array_interface__\), "
                                             r"the model runs on cpu"):
            handle.run([np.ones(3, np.float32), FakeCAI(), np.ones(3, np.float32)])


def test_cuda_array_interface_without_a_usable_gpu_raises_cuda_error():
    cuda_error_without_gpu(
        "a = np.ones(3, np.float32)\n"
        "class CAI:\n"
        "    __cuda_array_interface__ = {'shape': (3,), 'typestr': '<f4', 'data': (a.ctypes.data, False),\n"
        "                                'version': 3, 'strides': None, 'stream': None}\n"
        "aotirt.from_dlpack(CAI())\n")


# ---- pinned memory ---------------------------------------------------------------------

def test_empty_pinned_without_a_usable_gpu_raises_cuda_error():
    error = cuda_error_without_gpu("aotirt.empty_pinned((4, 4), 'float32')")
    assert "cudaHostAlloc(64 bytes" in error["message"]


def test_empty_pinned_checks_its_arguments_first():
    with pytest.raises(ValueError, match="negative size -1"):
        aotirt.empty_pinned((2, -1))
    with pytest.raises(TypeError):
        aotirt.empty_pinned((2, 1.5))
    with pytest.raises(TypeError):
        aotirt.empty_pinned(4, "not-a-dtype")


# ---- adopted streams (no CUDA work: adopting only wraps the handle) ---------------------

class StreamProtocol:
    def __init__(self, address):
        self.address = address

    def __cuda_stream__(self):
        return (0, self.address)


class StreamProtocolProperty:  # early cuda.core: a property, not a method
    __cuda_stream__ = (0, 4242)


class TorchLikeStream:  # older torch: .cuda_stream and .device (a torch.device)
    class device:
        type, index = "cuda", 1
    cuda_stream = 0x1234


class CupyLikeStream:  # older CuPy: .ptr and .device_id
    ptr = 0x5678
    device_id = 0


class NullStreamLike:  # a null stream that names no device
    ptr = 0
    device_id = -1


class BindingsLikeHandle:  # cuda.bindings CUstream / cudaStream_t: int() gives the address
    def __int__(self):
        return 0x9ABC


class CoreLikeStream:  # cuda.core: __cuda_stream__ and .device.device_id
    class device:
        device_id = 2

    def __cuda_stream__(self):
        return (0, 0xDEF0)


@pytest.mark.parametrize("obj, address, device", [
    (StreamProtocol(0xBEEF), 0xBEEF, 0),
    (StreamProtocolProperty(), 4242, 0),
    (TorchLikeStream(), 0x1234, 1),
    (CupyLikeStream(), 0x5678, 0),
    (NullStreamLike(), 0, 0),
    (BindingsLikeHandle(), 0x9ABC, 0),
    (CoreLikeStream(), 0xDEF0, 2),
    (0x777, 0x777, 0),
    (np.uint64(0x888), 0x888, 0),
])
def test_from_external_reads_every_kind_of_stream(obj, address, device):
    s = aotirt.Stream.from_external(obj)
    assert isinstance(s, aotirt.Stream)
    assert s.handle == address and s.__cuda_stream__() == (0, address)
    assert s.device == device


def test_from_external_keeps_the_stream_object_alive():
    obj = StreamProtocol(0x10)
    ref = weakref.ref(obj)
    s = aotirt.Stream.from_external(obj)
    del obj
    assert not gone(ref)
    del s
    assert gone(ref)


def test_from_external_checks_the_device():
    assert aotirt.Stream.from_external(TorchLikeStream(), device=1).device == 1
    with pytest.raises(ValueError, match="the stream is on cuda:1, not on cuda:0"):
        aotirt.Stream.from_external(TorchLikeStream(), device=0)
    assert aotirt.Stream.from_external(0x99, device=3).device == 3
    s = aotirt.Stream.from_external(0x99)
    assert aotirt.Stream.from_external(s) is s


def test_from_external_checks_the_device_of_an_aotirt_stream():
    s = aotirt.Stream.from_external(0x99, device=3)
    assert aotirt.Stream.from_external(s, device=3) is s
    with pytest.raises(ValueError, match="the stream is on cuda:3, not on cuda:0"):
        aotirt.Stream.from_external(s, device=0)
    s.close()
    with pytest.raises(ValueError, match="the stream is closed"):
        aotirt.Stream.from_external(s, device=3)


@pytest.mark.parametrize("obj", [1.5, "0x10", None, object(), True])
def test_from_external_refuses_what_is_not_a_stream(obj):
    with pytest.raises(TypeError, match="expected a stream"):
        aotirt.Stream.from_external(obj)


def test_from_external_refuses_a_bad_protocol_answer():
    class Bad:
        def __cuda_stream__(self):
            return 5
    with pytest.raises(TypeError, match=r"__cuda_stream__ gave 5, not \(version, address\)"):
        aotirt.Stream.from_external(Bad())


# ---- type stubs -------------------------------------------------------------------------

def test_stubs_cover_the_public_api_and_ship():
    package = os.path.join(REPO, "pyx", "aotirt")
    assert os.path.isfile(os.path.join(package, "py.typed"))
    tree = ast.parse(open(os.path.join(package, "__init__.pyi")).read())
    declared = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            declared.add(node.name)
        elif isinstance(node, ast.ImportFrom):
            declared.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Assign) and node.targets[0].id == "__all__":
            stub_all = ast.literal_eval(node.value)
    assert sorted(stub_all) == sorted(aotirt.__all__)
    assert set(aotirt.__all__) <= declared
    setup = open(os.path.join(REPO, "setup.py")).read()
    assert '"*.pyi", "py.typed"' in setup
