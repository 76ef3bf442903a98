"""CudaHandle on the CUDA build of add_mul (needs a GPU)."""

import gc

import numpy as np
import pytest

import aotirt
from support.helpers import assert_add_mul_close, device_free_bytes, random_inputs

pytestmark = pytest.mark.gpu


@pytest.fixture
def cuda_path():
    return aotirt.models.path("add_mul", "cuda")


@pytest.fixture
def handle(cuda_path):
    with aotirt.CudaHandle(cuda_path) as h:
        yield h


@pytest.mark.parametrize("shape", [(), (1,), (1000,), (33, 65), (2, 3, 4), (0,), (3, 0), (1 << 20,)])
def test_matches_numpy(handle, shape):
    rng = np.random.default_rng(sum(shape) + len(shape))
    a, b, c = random_inputs(rng, shape)
    (out,) = handle.run([a, b, c])
    assert out.device == "cuda:0"
    assert out.shape == shape and out.dtype == np.float32
    assert out.stream == handle.stream
    assert_add_mul_close(out.numpy(), a, b, c)


def test_metadata(handle):
    assert handle.num_inputs == 3 and handle.num_outputs == 1
    assert handle.input_names == ["a", "b", "c"]
    assert handle.device == "cuda:0"
    assert isinstance(handle.stream, aotirt.Stream)
    version, address = handle.stream.__cuda_stream__()
    assert version == 0 and address == handle.stream.handle != 0


def test_handles_share_one_stream_by_default(cuda_path):
    with aotirt.CudaHandle(cuda_path) as h1, aotirt.CudaHandle(cuda_path) as h2:
        assert h1.stream == h2.stream == aotirt.Stream.shared(0)


def test_two_handles_chained_with_one_copy_at_the_end(cuda_path):
    rng = np.random.default_rng(5)
    a, b, c = random_inputs(rng, (257, 31))
    with aotirt.CudaHandle(cuda_path) as first, aotirt.CudaHandle(cuda_path) as second:
        ta, tb, tc = (aotirt.asarray(x, device=0) for x in (a, b, c))
        (y,) = first.run([ta, tb, tc])
        (z,) = second.run([y, tb, tc])   # the output of one is the input of the other
        result = z.numpy()               # the only host wait
    y_host = (a.astype(np.float64) * b + c).astype(np.float32)
    np.testing.assert_allclose(result, y_host * b + c, rtol=1e-5, atol=1e-5)


def test_a_chain_of_many_runs_stays_on_the_device(handle):
    rng = np.random.default_rng(9)
    x = rng.standard_normal(4096).astype(np.float32)
    half = np.full(4096, 0.5, np.float32)
    zero = np.zeros(4096, np.float32)
    t = aotirt.asarray(x, device=0)
    th, tz = aotirt.asarray(half, device=0), aotirt.asarray(zero, device=0)
    for _ in range(20):
        (t,) = handle.run([t, th, tz])
    np.testing.assert_array_equal(t.numpy(), x * np.float32(0.5 ** 20))


def test_shared_stream_outlives_a_closed_handle(cuda_path):
    rng = np.random.default_rng(2)
    a, b, c = random_inputs(rng, (1 << 16,))
    h = aotirt.CudaHandle(cuda_path)
    stream = h.stream
    (y,) = h.run([a, b, c])
    h.close()                              # work may still be queued
    del h
    gc.collect()
    assert_add_mul_close(y.numpy(), a, b, c)  # the tensor kept its stream and memory
    with aotirt.CudaHandle(cuda_path) as again:
        assert again.stream == stream      # still the same shared stream
        assert_add_mul_close(again.run([a, b, c])[0].numpy(), a, b, c)


def test_handle_on_its_own_stream_reads_a_shared_stream_output(cuda_path):
    rng = np.random.default_rng(4)
    a, b, c = random_inputs(rng, (1 << 18,))
    own = aotirt.Stream.create(0)
    with aotirt.CudaHandle(cuda_path) as shared_h, aotirt.CudaHandle(cuda_path, stream=own) as own_h:
        assert own_h.stream == own != shared_h.stream
        (y,) = shared_h.run([a, b, c])
        (z,) = own_h.run([y, b, c])       # ordered after y by an event, not a host wait
        assert z.stream == own
        y_host = y.numpy()
        assert_add_mul_close(z.numpy(), y_host, b, c)


def test_strided_and_int_inputs_upload(handle):
    rng = np.random.default_rng(8)
    base = rng.standard_normal((64, 64)).astype(np.float32)
    a, b, c = base[::2, ::2], base.T[:32, :32], base[32:, 32:]
    assert_add_mul_close(handle.run([a, b, c])[0].numpy(), a, b, c)


def test_device_tensor_round_trips_every_dtype():
    for dtype in [np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32, np.float64, np.bool_]:
        a = (np.arange(60) % 7).astype(dtype).reshape(3, 4, 5)
        t = aotirt.asarray(a, device=0)
        assert t.device == "cuda:0" and t.dtype == np.dtype(dtype) and t.strides == a.strides
        np.testing.assert_array_equal(t.numpy(), a)
        out = np.empty_like(a)
        assert aotirt.copy_to_host(t, out=out) is out
        np.testing.assert_array_equal(out, a)


def test_wrong_device_inputs_are_named(handle):
    cpu = aotirt.asarray(np.ones(3, np.float32))
    gpu = aotirt.asarray(np.ones(3, np.float32), device=0)
    with pytest.raises(ValueError, match="input 1 is on cpu, the model runs on cuda:0"):
        handle.run([gpu, cpu, gpu])
    with aotirt.AotiHandle(aotirt.models.path("add_mul", "cpu")) as cpu_handle:
        with pytest.raises(ValueError, match="input 0 is on cuda:0, the model runs on cpu"):
            cpu_handle.run([gpu, cpu, cpu])


def test_model_errors_on_the_gpu(handle):
    with pytest.raises(aotirt.AotiError, match=r"input 1 \(b\) has shape \[2\], input 0 \(a\) has \[3\]"):
        handle.run([np.ones(3, np.float32), np.ones(2, np.float32), np.ones(3, np.float32)])
    with pytest.raises(aotirt.AotiError, match="add_mul takes float32"):
        handle.run([np.ones(3, np.float32), np.ones(3, np.int32), np.ones(3, np.float32)])
    assert_add_mul_close(handle.run([np.ones(3, np.float32)] * 3)[0].numpy(), *[np.ones(3, np.float32)] * 3)


def test_bad_device_index(cuda_path):
    with pytest.raises(ValueError, match="CUDA device 4096 does not exist"):
        aotirt.CudaHandle(cuda_path, device=4096)


def test_cpu_library_on_a_cuda_handle_names_the_mismatch():
    with pytest.raises(aotirt.AotiError, match="built for cpu, not for \"cuda:0\""):
        aotirt.CudaHandle(aotirt.models.path("add_mul", "cpu"))


@pytest.mark.reads_device_free_memory
def test_ten_thousand_runs_unchanged_and_memory_flat(handle):
    rng = np.random.default_rng(10)
    a, b, c = random_inputs(rng, (1 << 14,))   # 64 KiB per output: a leak would show
    ta, tb, tc = (aotirt.asarray(x, device=0) for x in (a, b, c))
    first = handle.run([ta, tb, tc])[0].numpy()
    assert_add_mul_close(first, a, b, c)
    for _ in range(100):                          # warm the pool
        handle.run([ta, tb, tc])
    free_before = device_free_bytes()
    for i in range(10_000):
        (out,) = handle.run([ta, tb, tc])
        if i % 2500 == 0:
            np.testing.assert_array_equal(out.numpy(), first)
    np.testing.assert_array_equal(out.numpy(), first)
    del out
    free_after = device_free_bytes()
    # 10,000 leaked outputs would be 640 MiB; the pool's granularity is 2 MiB.
    assert free_before - free_after <= 8 << 20, (free_before, free_after)


def test_empty_on_the_gpu_belongs_to_the_stream():
    own = aotirt.Stream.create(0)
    t = aotirt.empty((1000,), "float32", device=0, stream=own)
    assert t.device == "cuda:0" and t.stream == own and t.shape == (1000,)
    assert aotirt.empty((3,), np.int64, device="cuda").stream == aotirt.Stream.shared(0)


def test_gather_on_the_device_then_one_copy():
    rng = np.random.default_rng(12)
    values = rng.integers(0, 1000, size=16).astype(np.int64)
    gathered = aotirt.empty((16,), "int64", device=0)
    for i, v in enumerate(values):
        one = aotirt.asarray(np.array([v], np.int64), device=0)
        gathered.narrow(0, i, 1).copy_(one)
    np.testing.assert_array_equal(gathered.numpy(), values)
    # Strided device-to-device, and device to host / host to device copies.
    m = rng.standard_normal((8, 6)).astype(np.float32)
    dev = aotirt.asarray(m, device=0)
    dst = aotirt.empty((8, 2), "float32", device=0)
    dst.copy_(dev.narrow(1, 2, 2))
    np.testing.assert_array_equal(dst.numpy(), m[:, 2:4])
    host = aotirt.empty((8, 2), "float32")
    host.copy_(dev.narrow(1, 4, 2))
    np.testing.assert_array_equal(host.numpy(), m[:, 4:6])
    back = aotirt.empty((8, 6), "float32", device=0)
    back.copy_(aotirt.asarray(m))
    np.testing.assert_array_equal(back.numpy(), m)
