"""DLPack on the CPU: numpy <-> aotirt without a copy, the capsule rules of
the standard, ownership (who keeps what alive), DLPack inputs of a CPU
handle, bad arguments. Runs without a GPU; the GPU side is in
test_interop_gpu.py, the CUDA array interface and adopted streams in
test_interop_cpu.py."""

import gc
import threading
import weakref

import numpy as np
import pytest

import aotirt
from support import dlpack_ctypes as dl
from support.helpers import assert_add_mul_close, gone, random_inputs

DTYPES = [np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32, np.float64, np.bool_]
# (code, bits) of each dtype in DLPack: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBool 6.
DL_DTYPES = {np.uint8: (1, 8), np.int8: (0, 8), np.int16: (0, 16), np.int32: (0, 32), np.int64: (0, 64),
             np.float16: (2, 16), np.float32: (2, 32), np.float64: (2, 64), np.bool_: (6, 8)}


class Owner(np.ndarray):
    """A numpy array that can be watched with a weak reference."""


def watched(array):
    owner = np.ascontiguousarray(array).view(Owner)
    return owner, weakref.ref(owner)


class DLPackOnly:
    """Exposes only DLPack (no buffer protocol), like a torch CPU tensor.

    `legacy` producers predate DLPack 1.0: their __dlpack__ takes no
    max_version and gives the "dltensor" capsule.
    """

    def __init__(self, array, legacy=False):
        self.array = array
        self.legacy = legacy
        self.calls = []

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()

    def __dlpack__(self, stream=None, **kwargs):
        self.calls.append(dict(kwargs, stream=stream))
        if self.legacy:
            if kwargs:
                raise TypeError("__dlpack__() got an unexpected keyword argument")
            return self.array.__dlpack__(stream=stream)
        return self.array.__dlpack__(stream=stream, **kwargs)


class CapsuleOf:
    """Hands a consumer one given capsule (to watch what the consumer does with it)."""

    def __init__(self, capsule, device=(1, 0)):
        self.capsule = capsule
        self.device = device

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, **kwargs):
        return self.capsule


@pytest.fixture
def handle():
    with aotirt.AotiHandle(aotirt.models.path("add_mul", "cpu")) as h:
        yield h


# ---- numpy <-> aotirt without a copy -------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_numpy_round_trip_shares_memory(dtype):
    a = (np.arange(24) % 5).astype(dtype).reshape(2, 3, 4)
    t = aotirt.from_dlpack(a)
    assert t.device == "cpu" and t.dtype == np.dtype(dtype)
    assert t.shape == a.shape and t.strides == a.strides
    assert t.data_ptr == a.ctypes.data
    back = np.from_dlpack(t)
    assert back.ctypes.data == a.ctypes.data
    assert back.dtype == a.dtype and back.strides == a.strides
    np.testing.assert_array_equal(back, a)
    a[1, 2, 3] = 1
    assert back[1, 2, 3] == 1  # one memory


@pytest.mark.parametrize("view", ["transposed", "sliced", "moved_axes"])
def test_strided_arrays_round_trip_with_their_strides(view):
    base = np.arange(6 * 8, dtype=np.float32).reshape(6, 8)
    a = {"transposed": base.T, "sliced": base[1::2, ::3], "moved_axes": base.reshape(2, 3, 8).transpose(2, 0, 1)}[view]
    t = aotirt.from_dlpack(a)
    assert t.data_ptr == a.ctypes.data
    assert t.shape == a.shape and t.strides == a.strides
    assert not t.is_contiguous
    back = np.from_dlpack(t)
    assert back.ctypes.data == a.ctypes.data and back.strides == a.strides
    np.testing.assert_array_equal(back, a)
    np.testing.assert_array_equal(t.numpy(), a)  # the copy routine gathers strided tensors


@pytest.mark.parametrize("legacy", [False, True], ids=["versioned", "legacy"])
def test_both_capsule_kinds_are_imported(legacy):
    a = np.arange(10, dtype=np.int32)
    producer = DLPackOnly(a, legacy=legacy)
    t = aotirt.from_dlpack(producer)
    assert t.data_ptr == a.ctypes.data
    np.testing.assert_array_equal(t.numpy(), a)
    # aotirt asks for DLPack 1.0 first; a legacy producer refuses and is asked again.
    assert producer.calls[0]["max_version"] == (1, 0)
    assert len(producer.calls) == (2 if legacy else 1)
    assert producer.calls[-1]["stream"] is None  # CPU data: no stream


@pytest.mark.parametrize("max_version, name", [(None, "dltensor"), ((0, 8), "dltensor"),
                                               ((1, 0), "dltensor_versioned"), ((1, 3), "dltensor_versioned"),
                                               ((2, 0), "dltensor_versioned")])
def test_capsule_kind_follows_max_version(max_version, name):
    t = aotirt.asarray(np.arange(6, dtype=np.float64).reshape(2, 3))
    capsule = t.__dlpack__(max_version=max_version)
    assert dl.capsule_name(capsule) == name
    back = np.from_dlpack(CapsuleOf(capsule))
    assert back.ctypes.data == t.data_ptr
    assert dl.capsule_name(capsule) == "used_" + name  # numpy took it over
    np.testing.assert_array_equal(back, np.arange(6.0).reshape(2, 3))


@pytest.mark.parametrize("dtype", DTYPES + ["bfloat16"], ids=lambda d: np.dtype(d).name if d != "bfloat16" else d)
def test_exported_struct_layout(dtype):
    t = aotirt.empty((3, 5), dtype)
    for max_version in (None, (1, 0)):
        capsule = t.__dlpack__(max_version=max_version)
        _, managed = dl.managed_of(capsule)
        if max_version:
            assert (managed.version.major, managed.version.minor) == (1, 0)
            assert managed.flags == 0
        tensor = managed.dl_tensor
        assert tensor.data == t.data_ptr and tensor.byte_offset == 0
        assert (tensor.device.device_type, tensor.device.device_id) == (1, 0)
        assert tensor.ndim == 2
        assert [tensor.shape[i] for i in range(2)] == [3, 5]
        assert [tensor.strides[i] for i in range(2)] == [5, 1]  # elements, not bytes
        code_bits = (4, 16) if dtype == "bfloat16" else DL_DTYPES[dtype]
        assert (tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes) == (*code_bits, 1)


def test_zero_dim_and_empty_tensors_export():
    for a in (np.array(3.5, np.float32), np.zeros((0, 4), np.int16)):
        t = aotirt.asarray(a)
        back = np.from_dlpack(t)
        assert back.shape == a.shape and back.dtype == a.dtype
        np.testing.assert_array_equal(back, a)


def test_dlpack_device():
    assert aotirt.asarray(np.ones(2)).__dlpack_device__() == (1, 0)


def test_byte_offset_is_honoured():
    a = np.arange(8, dtype=np.float32)
    shape, strides = (dl.ctypes.c_int64 * 1)(6), (dl.ctypes.c_int64 * 1)(1)
    managed = dl.DLManagedTensorVersioned()
    managed.version.major, managed.version.minor = 1, 0
    managed.dl_tensor.data = a.ctypes.data
    managed.dl_tensor.byte_offset = 8
    managed.dl_tensor.device.device_type = 1
    managed.dl_tensor.ndim = 1
    managed.dl_tensor.dtype.code, managed.dl_tensor.dtype.bits, managed.dl_tensor.dtype.lanes = 2, 32, 1
    managed.dl_tensor.shape, managed.dl_tensor.strides = shape, strides
    deleted = []
    managed.deleter = dl.DELETER(lambda address: deleted.append(address))
    capsule = dl.new_capsule(dl.ctypes.addressof(managed), b"dltensor_versioned")
    t = aotirt.from_dlpack(CapsuleOf(capsule))
    assert t.data_ptr == a.ctypes.data + 8
    np.testing.assert_array_equal(t.numpy(), a[2:])
    assert dl.capsule_name(capsule) == "used_dltensor_versioned"
    assert deleted == []
    del t
    gc.collect()
    assert deleted == [dl.ctypes.addressof(managed)]  # the producer's deleter, once


def _crafted(version=(1, 0), code=2, bits=32, device_type=1):
    a = np.zeros(4, np.float32)
    shape = (dl.ctypes.c_int64 * 1)(4)
    managed = dl.DLManagedTensorVersioned()
    managed.version.major, managed.version.minor = version
    managed.dl_tensor.data = a.ctypes.data
    managed.dl_tensor.device.device_type = device_type
    managed.dl_tensor.ndim = 1
    managed.dl_tensor.dtype.code, managed.dl_tensor.dtype.bits, managed.dl_tensor.dtype.lanes = code, bits, 1
    managed.dl_tensor.shape = shape
    deleted = []
    managed.deleter = dl.DELETER(lambda address: deleted.append(address))
    capsule = dl.new_capsule(dl.ctypes.addressof(managed), b"dltensor_versioned")
    return capsule, deleted, (a, shape, managed)


@pytest.mark.parametrize("change, error, match", [
    (dict(version=(2, 0)), ValueError, r"version 2\.0; aotirt reads version 1\.x"),
    (dict(code=5, bits=64), TypeError, r"DLPack dtype \(code 5, 64 bits, 1 lanes\) is not supported"),
    (dict(code=2, bits=8), TypeError, "is not supported"),
])
def test_refused_capsules_stay_with_the_producer(change, error, match):
    capsule, deleted, keep = _crafted(**change)
    with pytest.raises(error, match="from_dlpack: .*" + match):
        aotirt.from_dlpack(CapsuleOf(capsule))
    # Not taken over: the name is unchanged, so the capsule's own destructor
    # (the producer's) would delete it; aotirt did not call the deleter.
    assert dl.capsule_name(capsule) == "dltensor_versioned"
    assert deleted == []


def test_a_used_capsule_is_refused():
    capsule = aotirt.asarray(np.ones(3)).__dlpack__()
    np.from_dlpack(CapsuleOf(capsule))
    with pytest.raises(TypeError, match="not an unused DLPack capsule"):
        aotirt.from_dlpack(CapsuleOf(capsule))


def test_unsupported_device_type_is_named():
    capsule, _, keep = _crafted()
    with pytest.raises(ValueError, match="DLPack device type 4 is not supported"):
        aotirt.from_dlpack(CapsuleOf(capsule, device=(4, 0)))


def test_negative_strides_are_refused():
    with pytest.raises(ValueError, match="negative"):
        aotirt.from_dlpack(np.arange(5.0)[::-1])


def test_unsupported_dtype_is_named():
    with pytest.raises(TypeError, match="from_dlpack: DLPack dtype \\(code 5"):
        aotirt.from_dlpack(np.ones(3, np.complex64))


# ---- ownership: who keeps what alive ---------------------------------------------------

def test_producer_lives_until_tensor_and_capsules_are_gone():
    a, ref = watched(np.arange(6, dtype=np.int64))
    t = aotirt.from_dlpack(a)
    unused = t.__dlpack__(max_version=(1, 0))   # never consumed: its destructor deletes it
    unused_legacy = t.__dlpack__()
    consumed = np.from_dlpack(t)                 # numpy owns this one's deleter
    del a
    assert not gone(ref)
    del t
    assert not gone(ref)
    del unused
    assert not gone(ref)
    del unused_legacy
    assert not gone(ref)
    np.testing.assert_array_equal(consumed, np.arange(6))
    del consumed
    assert gone(ref)


def test_tensor_from_a_capsule_outlives_the_source_tensor():
    a, ref = watched(np.arange(4, dtype=np.float32))
    t = aotirt.asarray(a)           # buffer protocol: the Tensor holds the array
    b = np.from_dlpack(t)           # the capsule holds an alias of the Tensor
    del a, t
    assert not gone(ref)
    np.testing.assert_array_equal(b, np.arange(4))
    del b
    assert gone(ref)


@pytest.mark.parametrize("max_version", [None, (1, 0)])
def test_deleter_runs_on_another_thread_without_the_gil(max_version):
    a, ref = watched(np.arange(6, dtype=np.float32))
    t = aotirt.asarray(a)
    capsule = t.__dlpack__(max_version=max_version)
    address, managed = dl.take_over(capsule)   # as a consumer would
    del a, t
    assert not gone(ref)
    # A CFUNCTYPE call releases the GIL: the deleter runs without it, on a
    # thread of its own, and still releases the array (taking the GIL itself).
    worker = threading.Thread(target=managed.deleter, args=(address,))
    worker.start()
    worker.join()
    assert gone(ref)
    del capsule  # renamed: its destructor leaves the (deleted) tensor alone
    gc.collect()


def test_dlpack_input_lives_through_a_cpu_run(handle):
    a, ref = watched(np.full(8, 2.0, np.float32))
    producer = DLPackOnly(a)
    del a
    (out,) = handle.run([producer, producer, producer])
    np.testing.assert_array_equal(out.numpy(), np.full(8, 6.0, np.float32))
    del producer
    assert gone(ref)  # the temporary input tensor let go of it after the run


# ---- handle inputs and asarray ---------------------------------------------------------

def test_cpu_handle_runs_dlpack_only_inputs(handle):
    rng = np.random.default_rng(3)
    a, b, c = random_inputs(rng, (5, 7))
    (out,) = handle.run([DLPackOnly(a), DLPackOnly(b, legacy=True), c])
    assert_add_mul_close(out.numpy(), a, b, c)


def test_asarray_takes_dlpack_objects_without_a_copy():
    a = np.arange(12, dtype=np.int16).reshape(3, 4)
    t = aotirt.asarray(DLPackOnly(a))
    assert t.data_ptr == a.ctypes.data and t.shape == (3, 4)


def test_numpy_inputs_keep_the_buffer_path(handle):
    # Strided numpy inputs are made contiguous (a host copy), as before:
    # they do not reach the model strided through DLPack.
    base = np.ones((8, 8), np.float32)
    (out,) = handle.run([base[::2, ::2], base[::2, ::2], base[::2, ::2]])
    np.testing.assert_array_equal(out.numpy(), np.full((4, 4), 2.0, np.float32))


# ---- bad arguments ---------------------------------------------------------------------

def test_export_refuses_other_devices_and_copies():
    t = aotirt.asarray(np.ones(3, np.float32))
    with pytest.raises(BufferError, match=r"the tensor is on DLPack device \(1, 0\), not \(2, 0\)"):
        t.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError, match="copy=True is not supported"):
        t.__dlpack__(copy=True)
    with pytest.raises(BufferError, match="a CPU tensor takes stream=None"):
        t.__dlpack__(stream=5)
    # The tensor's own device and copy=False are fine.
    assert dl.capsule_name(t.__dlpack__(dl_device=(1, 0), copy=False)) == "dltensor"


def test_from_dlpack_refuses_copies_and_other_devices():
    a = np.ones(3, np.float32)
    with pytest.raises(ValueError, match="copy=True is not supported"):
        aotirt.from_dlpack(a, copy=True)
    with pytest.raises(ValueError, match="the array is on cpu, not on cuda:0"):
        aotirt.from_dlpack(a, device="cuda:0")
    with pytest.raises(ValueError, match="not on cuda:1"):
        aotirt.from_dlpack(a, device=(2, 1))
    assert aotirt.from_dlpack(a, device="cpu").data_ptr == a.ctypes.data
    assert aotirt.from_dlpack(a, device=(1, 0), copy=False).data_ptr == a.ctypes.data
    with pytest.raises(TypeError, match="from_dlpack: expected an object with __dlpack__ or __cuda_array_interface__"):
        aotirt.from_dlpack([1, 2, 3])
    t = aotirt.asarray(a)
    assert aotirt.from_dlpack(t) is t
