"""Interop on a GPU: torch, CuPy, Numba, cuda.core and cuda.bindings.

Each library is imported by the test that needs it and the test is skipped,
with the reason, when it is missing (on the GPU runner all are installed, and
AOTIRT_REQUIRE_GPU=1 turns a skip into a failure). The tests read results
back through aotirt's copy routine or the other library's own host copy.
"""

import gc
import weakref

import numpy as np
import pytest

import aotirt
from support.helpers import assert_add_mul_close, random_inputs
from test_gpu_handle import cuda_path, handle  # noqa: F401  (fixtures shared with the handle tests)

pytestmark = pytest.mark.gpu

# torch.cuda._sleep cycles: tens of milliseconds on an H200, far longer than
# the Python between queueing the work and reading its result.
SLEEP_CYCLES = 100_000_000


@pytest.fixture
def torch():
    torch = pytest.importorskip("torch", reason="the torch interop tests need torch")
    if not torch.cuda.is_available():
        pytest.skip("torch was built without CUDA or sees no GPU")
    return torch


@pytest.fixture
def cupy():
    return pytest.importorskip("cupy", reason="the CuPy interop tests need cupy")


@pytest.fixture
def numba_cuda():
    return pytest.importorskip("numba.cuda", reason="the Numba interop tests need numba-cuda")



class CAIOnly:
    """Exposes only a given __cuda_array_interface__, and keeps `owner` alive."""

    def __init__(self, interface, owner):
        self._interface = interface
        self.owner = owner

    @property
    def __cuda_array_interface__(self):
        return self._interface


def torch_interface(x, stream):
    """torch's interface (version 2, no stream), as version 3 naming `stream`."""
    return dict(x.__cuda_array_interface__, version=3, stream=stream)


# ---- torch and CuPy round trips without a copy ---------------------------------------------

@pytest.mark.parametrize("name", ["float32", "float16", "bfloat16", "float64", "int64", "int32", "int8", "uint8", "bool"])
def test_torch_round_trip_without_a_copy(torch, name):
    dtype = getattr(torch, name)
    x = (torch.arange(60, device="cuda") % 7).to(dtype).reshape(3, 4, 5)
    t = aotirt.from_dlpack(x)
    assert t.device == "cuda:0" and t.shape == (3, 4, 5)
    assert t.data_ptr == x.data_ptr()
    assert t.strides == tuple(s * x.element_size() for s in x.stride())
    assert t.stream == aotirt.Stream.shared(0)   # the handshake's consumer stream
    y = torch.from_dlpack(t)
    assert y.data_ptr() == x.data_ptr()
    assert y.dtype == dtype and y.device == x.device and y.stride() == x.stride()
    assert torch.equal(y, x)


def test_torch_strided_round_trip(torch):
    x = torch.arange(48.0, device="cuda").reshape(6, 8).t()[1:, ::2]
    t = aotirt.from_dlpack(x)
    assert t.data_ptr == x.data_ptr() and not t.is_contiguous
    assert t.strides == tuple(4 * s for s in x.stride())
    np.testing.assert_array_equal(t.numpy(), x.cpu().numpy())
    y = torch.from_dlpack(t)
    assert y.data_ptr() == x.data_ptr() and y.stride() == x.stride()
    assert torch.equal(y, x)


@pytest.mark.parametrize("name", ["float32", "float16", "float64", "int64", "int16", "uint8", "bool"])
def test_cupy_round_trip_without_a_copy(cupy, name):
    x = (cupy.arange(60) % 7).astype(name).reshape(3, 4, 5)
    t = aotirt.from_dlpack(x)
    assert t.data_ptr == x.data.ptr and t.shape == x.shape and t.strides == x.strides
    y = cupy.from_dlpack(t)
    assert y.data.ptr == x.data.ptr and y.dtype == x.dtype and y.strides == x.strides
    assert bool((y == x).all())


def test_cupy_strided_round_trip(cupy):
    x = cupy.arange(24, dtype=cupy.float32).reshape(4, 6).T
    t = aotirt.from_dlpack(x)
    assert t.data_ptr == x.data.ptr and t.strides == x.strides
    y = cupy.from_dlpack(t)
    assert y.data.ptr == x.data.ptr and y.strides == x.strides
    np.testing.assert_array_equal(cupy.asnumpy(y), cupy.asnumpy(x))


def test_torch_to_cupy_through_aotirt(torch, cupy):
    x = torch.linspace(0, 1, 1000, device="cuda")
    y = cupy.from_dlpack(aotirt.from_dlpack(x))
    assert y.data.ptr == x.data_ptr()
    np.testing.assert_array_equal(cupy.asnumpy(y), x.cpu().numpy())


# ---- a CudaHandle runs on other libraries' arrays --------------------------------------------

def test_cuda_handle_runs_torch_inputs(torch, handle):
    a, b, c = (torch.randn(1000, 33, device="cuda") for _ in range(3))
    (out,) = handle.run([a, b, c])
    assert out.device == "cuda:0" and out.stream == handle.stream and out.shape == (1000, 33)
    assert_add_mul_close(out.numpy(), a.cpu().numpy(), b.cpu().numpy(), c.cpu().numpy())
    torch.testing.assert_close(torch.from_dlpack(out), a * b + c, rtol=1e-5, atol=1e-5)


def test_cuda_handle_runs_cupy_inputs(cupy, handle):
    a, b, c = (cupy.random.standard_normal((517, 9), dtype=cupy.float32) for _ in range(3))
    (out,) = handle.run([a, b, c])
    assert_add_mul_close(out.numpy(), cupy.asnumpy(a), cupy.asnumpy(b), cupy.asnumpy(c))
    y = cupy.from_dlpack(out)
    assert y.data.ptr == out.data_ptr


def test_cuda_handle_runs_mixed_inputs(torch, cupy, handle):
    rng = np.random.default_rng(6)
    a, b, c = random_inputs(rng, (4096,))
    (out,) = handle.run([torch.from_numpy(a).cuda(), cupy.asarray(b), c])   # torch, CuPy, numpy
    assert_add_mul_close(out.numpy(), a, b, c)


def test_cuda_handle_uploads_torch_cpu_tensors(torch, handle):
    rng = np.random.default_rng(7)
    a, b, c = random_inputs(rng, (64, 3))
    (out,) = handle.run([torch.from_numpy(a), torch.from_numpy(b).t().contiguous().t(), c])
    assert_add_mul_close(out.numpy(), a, b, c)


def test_device_tensors_are_refused_by_a_cpu_handle(torch):
    x = torch.ones(3, device="cuda")
    with aotirt.AotiHandle(aotirt.models.path("add_mul", "cpu")) as cpu:
        with pytest.raises(ValueError, match="input 1 is on cuda:0, the model runs on cpu"):
            cpu.run([np.ones(3, np.float32), x, np.ones(3, np.float32)])


# ---- ordering with the producer's stream: events, no host wait -------------------------------

def test_dlpack_import_waits_for_the_producer_stream(torch, handle):
    n = 1 << 20
    x = torch.zeros(n, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(SLEEP_CYCLES)   # the GPU is busy for a while ...
        x.fill_(7.0)                      # ... before the data is final
        # torch is handed aotirt's stream (the shared one, the handle's) and
        # makes it wait for `side` on the device.
        t = aotirt.from_dlpack(x)
        (out,) = handle.run([x, x, x])
    np.testing.assert_array_equal(t.numpy(), np.full(n, 7.0, np.float32))
    np.testing.assert_array_equal(out.numpy(), np.full(n, 56.0, np.float32))


def test_cuda_array_interface_import_waits_for_its_stream(torch):
    n = 1 << 20
    x = torch.zeros(n, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(SLEEP_CYCLES)
        x.fill_(3.0)
    # Outside the `with`: only the interface's `stream` says where the work is.
    t = aotirt.from_dlpack(CAIOnly(torch_interface(x, side.cuda_stream), x))
    assert t.data_ptr == x.data_ptr()
    np.testing.assert_array_equal(t.numpy(), np.full(n, 3.0, np.float32))


def test_dlpack_export_makes_the_consumer_stream_wait(torch):
    n = 1 << 20
    producer = torch.cuda.Stream()
    t = aotirt.empty((n,), "float32", device=0, stream=aotirt.Stream.from_external(producer))
    view = torch.from_dlpack(t.__dlpack__(stream=-1))   # a torch view of t, no ordering asked
    assert view.data_ptr() == t.data_ptr
    with torch.cuda.stream(producer):                   # t's stream
        view.fill_(1.0)
        torch.cuda._sleep(SLEEP_CYCLES)
        view.fill_(5.0)
    # torch.from_dlpack passes its current stream (the default one): aotirt
    # makes it wait for t's stream with an event.
    y = torch.from_dlpack(t)
    assert y.data_ptr() == t.data_ptr
    assert bool((y == 5.0).all())


def test_cuda_array_interface_export_names_the_tensor_stream(torch):
    producer = torch.cuda.Stream()
    t = aotirt.empty((1 << 20,), "float32", device=0, stream=aotirt.Stream.from_external(producer))
    view = torch.from_dlpack(t.__dlpack__(stream=-1))
    with torch.cuda.stream(producer):
        view.fill_(1.0)
        torch.cuda._sleep(SLEEP_CYCLES)
        view.fill_(4.0)
    interface = t.__cuda_array_interface__
    assert interface["stream"] == producer.cuda_stream
    # What a consumer does with the interface's stream: wait for it with an event.
    consumer = torch.cuda.ExternalStream(interface["stream"])
    event = torch.cuda.Event()
    event.record(consumer)
    torch.cuda.current_stream().wait_event(event)
    assert bool((view == 4.0).all())


def test_borrowed_memory_goes_back_only_after_the_gpu_is_done(torch, handle):
    x = torch.ones(1 << 20, device="cuda")
    owner = CAIOnly(torch_interface(x, None), x)
    ref = weakref.ref(owner)
    busy = torch.cuda.ExternalStream(handle.stream.handle)   # the shared stream, seen from torch
    with torch.cuda.stream(busy):
        torch.cuda._sleep(2 * SLEEP_CYCLES)
    (out,) = handle.run([owner, owner, owner])   # queued behind the sleep
    del owner
    gc.collect()
    # The input tensor is gone, but the kernel that reads it has not run:
    # aotirt still holds the owner, so its memory cannot be handed out again.
    assert ref() is not None
    np.testing.assert_array_equal(out.numpy(), np.full(1 << 20, 2.0, np.float32))  # waits for the stream ...
    gc.collect()
    assert ref() is None                         # ... after which the owner was let go


# ---- adopted streams ---------------------------------------------------------------------------

def test_cuda_handle_on_a_torch_stream(torch, cuda_path):
    s = torch.cuda.Stream()
    assert aotirt.Stream.from_external(s).handle == s.cuda_stream
    with aotirt.CudaHandle(cuda_path, stream=s) as h:
        assert h.stream.handle == s.cuda_stream and h.stream.device == 0
        with torch.cuda.stream(s):
            a, b, c = (torch.full((4096,), v, device="cuda") for v in (2.0, 3.0, 1.0))
            (out,) = h.run([a, b, c])
        assert out.stream == h.stream
        np.testing.assert_array_equal(out.numpy(), np.full(4096, 7.0, np.float32))
        assert bool((torch.from_dlpack(out) == 7.0).all())


def test_torch_default_stream_is_adopted_as_the_legacy_stream(torch, cuda_path):
    default = torch.cuda.default_stream()
    s = aotirt.Stream.from_external(default)
    assert s.handle == default.cuda_stream == 0
    t = aotirt.empty((4,), "float32", device=0, stream=s)
    assert t.__cuda_array_interface__["stream"] == 1   # never 0: the interface's legacy default stream
    with aotirt.CudaHandle(cuda_path, stream=default) as h:
        (out,) = h.run([np.ones(4, np.float32)] * 3)
        np.testing.assert_array_equal(out.numpy(), np.full(4, 2.0, np.float32))


def test_cuda_handle_on_a_cupy_stream(cupy, cuda_path):
    s = cupy.cuda.Stream(non_blocking=True)
    with aotirt.CudaHandle(cuda_path, stream=s) as h:
        assert h.stream.handle == s.ptr and h.stream.device == 0
        with s:
            a, b, c = (cupy.full(4096, v, cupy.float32) for v in (2.0, 3.0, 1.0))
            (out,) = h.run([a, b, c])
        assert out.stream == h.stream
        np.testing.assert_array_equal(out.numpy(), np.full(4096, 7.0, np.float32))


def test_cuda_bindings_streams_are_adopted(cuda_path):
    runtime = pytest.importorskip("cuda.bindings.runtime", reason="needs cuda-bindings")
    err, raw = runtime.cudaStreamCreateWithFlags(runtime.cudaStreamNonBlocking)
    assert err == runtime.cudaError_t.cudaSuccess, err
    try:
        assert aotirt.Stream.from_external(raw).handle == int(raw)
        with aotirt.CudaHandle(cuda_path, stream=raw) as h:
            assert h.stream.handle == int(raw)
            (out,) = h.run([np.full(8, 2.0, np.float32)] * 3)
            np.testing.assert_array_equal(out.numpy(), np.full(8, 6.0, np.float32))
        del out, h
        gc.collect()
    finally:
        (err,) = runtime.cudaStreamDestroy(raw)   # queued work finishes first; no host wait
        assert err == runtime.cudaError_t.cudaSuccess, err


def test_cuda_core_streams_are_adopted(cuda_path):
    pytest.importorskip("cuda.core", reason="needs cuda-core")
    try:
        from cuda.core import Device
    except ImportError:  # cuda.core before 0.4
        from cuda.core.experimental import Device
    device = Device(0)
    device.set_current()
    stream = device.create_stream()
    try:
        adopted = aotirt.Stream.from_external(stream)
        assert adopted.handle == int(stream.handle) and adopted.device == 0
        with aotirt.CudaHandle(cuda_path, stream=stream) as h:
            assert h.stream.handle == int(stream.handle)
            (out,) = h.run([np.full(8, 3.0, np.float32)] * 3)
            np.testing.assert_array_equal(out.numpy(), np.full(8, 12.0, np.float32))
        del out, h, adopted
        gc.collect()
    finally:
        stream.close()


# ---- __cuda_array_interface__ out and in -------------------------------------------------------

def test_cuda_array_interface_consumed_by_cupy(cupy):
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    t = aotirt.asarray(a, device=0)
    interface = t.__cuda_array_interface__
    assert interface["version"] == 3
    assert interface["shape"] == (4, 6) and interface["typestr"] == "<f4"
    assert interface["data"] == (t.data_ptr, False)
    assert interface["strides"] is None
    assert interface["stream"] == t.stream.handle != 0
    y = cupy.asarray(t)
    assert y.data.ptr == t.data_ptr
    np.testing.assert_array_equal(cupy.asnumpy(y), a)


def test_strided_cuda_array_interface_consumed_by_cupy(cupy):
    x = cupy.arange(24, dtype=cupy.int32).reshape(4, 6).T
    t = aotirt.from_dlpack(x)
    assert t.__cuda_array_interface__["strides"] == x.strides
    y = cupy.asarray(t)
    assert y.data.ptr == x.data.ptr and y.strides == x.strides
    np.testing.assert_array_equal(cupy.asnumpy(y), cupy.asnumpy(x))


def test_cuda_array_interface_consumed_by_numba(numba_cuda):
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    t = aotirt.asarray(a, device=0)
    d = numba_cuda.as_cuda_array(t)
    assert d.device_ctypes_pointer.value == t.data_ptr
    assert d.shape == (3, 4)
    np.testing.assert_array_equal(d.copy_to_host(), a)


def test_numba_arrays_are_handle_inputs(numba_cuda, handle):
    rng = np.random.default_rng(11)
    a, b, c = random_inputs(rng, (300,))
    da, db, dc = (numba_cuda.to_device(x) for x in (a, b, c))
    t = aotirt.from_dlpack(da)
    assert t.data_ptr == da.device_ctypes_pointer.value
    (out,) = handle.run([da, db, dc])
    assert_add_mul_close(out.numpy(), a, b, c)


def test_cupy_array_interface_keeps_its_owner_and_stream(cupy):
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        x = cupy.full(1 << 16, 9.0, cupy.float32)
        interface = x.__cuda_array_interface__   # CuPy names its current stream
    owner = CAIOnly(interface, x)
    ref = weakref.ref(owner)
    t = aotirt.from_dlpack(owner)
    assert t.data_ptr == x.data.ptr
    del owner
    gc.collect()
    assert ref() is not None                     # the tensor keeps its producer
    np.testing.assert_array_equal(t.numpy(), np.full(1 << 16, 9.0, np.float32))
    del t
    aotirt.asarray(np.ones(1), device=0).numpy()  # any later aotirt call lets finished memory go
    gc.collect()
    assert ref() is None


def test_host_memory_behind_a_cuda_array_interface_is_refused():
    a = np.ones(3, np.float32)
    fake = CAIOnly({"shape": (3,), "typestr": "<f4", "data": (a.ctypes.data, False), "version": 3,
                    "strides": None, "stream": None}, a)
    with pytest.raises(ValueError, match="is not CUDA device memory"):
        aotirt.from_dlpack(fake)
    pinned = aotirt.empty_pinned(3, np.float32)
    fake = CAIOnly(dict(fake.__cuda_array_interface__, data=(pinned.ctypes.data, False)), pinned)
    with pytest.raises(ValueError, match="is pinned host memory"):
        aotirt.from_dlpack(fake)


def test_device_dlpack_export_arguments():
    t = aotirt.asarray(np.ones(3, np.float32), device=0)
    assert t.__dlpack_device__() == (2, 0)
    with pytest.raises(ValueError, match="stream=0 is disallowed"):
        t.__dlpack__(stream=0)
    with pytest.raises(BufferError, match=r"not \(1, 0\)"):
        t.__dlpack__(dl_device=(1, 0))
    with pytest.raises(BufferError, match="copy=True"):
        t.__dlpack__(copy=True)
    own = aotirt.Stream.create(0)   # alive while streams wait on it
    for stream in (None, -1, 1, 2, own.handle):
        t.__dlpack__(stream=stream, max_version=(1, 0))
    np.testing.assert_array_equal(t.numpy(), np.ones(3, np.float32))


# ---- pinned host memory ------------------------------------------------------------------------

def test_copy_to_host_into_pinned_memory(handle):
    runtime = pytest.importorskip("cuda.bindings.runtime", reason="needs cuda-bindings")
    rng = np.random.default_rng(12)
    a, b, c = random_inputs(rng, (1 << 20,))
    out = aotirt.empty_pinned(a.shape, np.float32)
    assert out.shape == a.shape and out.dtype == np.float32
    assert out.flags.c_contiguous and out.flags.writeable
    err, attributes = runtime.cudaPointerGetAttributes(out.ctypes.data)
    assert err == runtime.cudaError_t.cudaSuccess, err
    assert attributes.type == runtime.cudaMemoryType.cudaMemoryTypeHost
    (y,) = handle.run([a, b, c])
    assert aotirt.copy_to_host(y, out=out) is out
    assert_add_mul_close(out, a, b, c)


@pytest.mark.parametrize("shape, expected", [(5, (5,)), ((), ()), ((0,), (0,)), ((3, 4), (3, 4)),
                                             ((2, 0, 3), (2, 0, 3)), ([np.int64(2), 3], (2, 3))])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64, np.uint8, np.bool_, "float64", np.complex64])
def test_empty_pinned_shapes_and_dtypes(shape, expected, dtype):
    out = aotirt.empty_pinned(shape, dtype)
    assert out.shape == expected and out.dtype == np.dtype(dtype)
    assert out.flags.c_contiguous and out.flags.writeable
    out[...] = 1
    assert (out == 1).all()
    owner = out
    while True:   # through views, and the memoryview numpy may put in between
        if isinstance(owner, np.ndarray) and owner.base is not None:
            owner = owner.base
        elif isinstance(owner, memoryview):
            owner = owner.obj
        else:
            break
    assert type(owner).__name__ == "_PinnedMemory"   # the array owns its pinned memory


def test_pinned_arrays_are_freed_when_collected():
    runtime = pytest.importorskip("cuda.bindings.runtime", reason="needs cuda-bindings")
    out = aotirt.empty_pinned(1 << 20, np.float32)
    address = out.ctypes.data
    del out
    gc.collect()
    # cudaFreeHost ran: CUDA no longer knows the address as pinned memory.
    err, attributes = runtime.cudaPointerGetAttributes(address)
    assert err == runtime.cudaError_t.cudaSuccess, err
    assert attributes.type != runtime.cudaMemoryType.cudaMemoryTypeHost
