"""AotiHandle on the CPU build of add_mul, against numpy."""

import numpy as np
import pytest

import aotirt
from support.helpers import assert_add_mul_close, random_inputs

SHAPES = [(), (1,), (7,), (3, 5), (2, 3, 4), (0,), (4, 0, 3), (1, 1, 129)]


@pytest.fixture
def handle():
    with aotirt.AotiHandle(aotirt.models.path("add_mul", "cpu")) as h:
        yield h


def test_metadata(handle):
    assert handle.num_inputs == 3
    assert handle.num_outputs == 1
    assert handle.input_names == ["a", "b", "c"]
    assert handle.output_names == ["out"]
    assert handle.device == "cpu"
    assert not handle.closed
    assert "add_mul_cpu.so" in repr(handle)


@pytest.mark.parametrize("shape", SHAPES)
def test_matches_numpy_on_random_shapes(handle, shape):
    rng = np.random.default_rng(abs(hash(shape)) % 2**32)
    a, b, c = random_inputs(rng, shape)
    (out,) = handle.run([a, b, c])
    assert isinstance(out, aotirt.Tensor)
    assert out.shape == shape
    assert out.dtype == np.float32
    assert out.device == "cpu"
    assert out.stream is None
    assert_add_mul_close(out.numpy(), a, b, c)


def test_many_random_shapes(handle):
    rng = np.random.default_rng(1234)
    for _ in range(50):
        shape = tuple(rng.integers(1, 9, size=rng.integers(1, 4)))
        a, b, c = random_inputs(rng, shape)
        assert_add_mul_close(handle.run([a, b, c])[0].numpy(), a, b, c)


def test_outputs_chain_into_the_next_run(handle):
    rng = np.random.default_rng(7)
    a, b, c = random_inputs(rng, (16, 16))
    (y,) = handle.run([a, b, c])
    (z,) = handle.run([y, b, c])
    y_host = y.numpy()
    assert_add_mul_close(y_host, a, b, c)
    assert_add_mul_close(z.numpy(), y_host, b, c)


def test_inputs_are_not_consumed(handle):
    # The model steals its input handles; aotirt must hand it aliases so the
    # caller's tensors stay usable.
    rng = np.random.default_rng(3)
    a, b, c = random_inputs(rng, (5,))
    ta, tb, tc = (aotirt.asarray(x) for x in (a, b, c))
    first = handle.run([ta, tb, tc])[0].numpy()
    second = handle.run([ta, tb, tc])[0].numpy()
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(ta.numpy(), a)


def test_asarray_shares_host_memory():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = aotirt.asarray(a)
    assert t.data_ptr == a.ctypes.data
    assert t.shape == (2, 3)
    assert t.strides == a.strides
    a[0, 0] = 42.0
    assert t.numpy()[0, 0] == 42.0


def test_tensor_keeps_its_array_alive():
    t = aotirt.asarray(np.full(1000, 3.5, np.float32))
    import gc

    gc.collect()
    np.testing.assert_array_equal(t.numpy(), np.full(1000, 3.5, np.float32))


def test_output_outlives_its_handle():
    h = aotirt.AotiHandle(aotirt.models.path("add_mul", "cpu"))
    x = np.full(4, 2.0, np.float32)
    (y,) = h.run([x, x, x])
    h.close()
    del h
    np.testing.assert_array_equal(y.numpy(), np.full(4, 6.0, np.float32))


def test_strided_host_input_is_copied_to_contiguous(handle):
    # Strided host arrays are copied to contiguous memory before the run
    # (documented in AotiHandle.run): the model sees the right elements.
    rng = np.random.default_rng(11)
    base = rng.standard_normal((6, 8)).astype(np.float32)
    a = base[:, ::2]            # every other column: strided rows
    b = base.T[:4].T            # Fortran order
    c = base[::-1, 4:]          # negative row stride
    assert not (a.flags.c_contiguous or b.flags.c_contiguous or c.flags.c_contiguous)
    assert_add_mul_close(handle.run([a, b, c])[0].numpy(), a, b, c)


def test_copy_to_host_into_given_array(handle):
    a = np.full((2, 2), 1.5, np.float32)
    (y,) = handle.run([a, a, a])
    out = np.empty((2, 2), np.float32)
    result = aotirt.copy_to_host(y, out=out)
    assert result is out
    np.testing.assert_array_equal(out, np.full((2, 2), 3.75, np.float32))


def test_dtypes_round_trip_through_asarray():
    for dtype in [np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32, np.float64, np.bool_]:
        a = (np.arange(12) % 3).astype(dtype).reshape(3, 4)
        t = aotirt.asarray(a)
        assert t.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(t.numpy(), a)


def test_empty_makes_tensors_of_every_dtype():
    for dtype in ["uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "bool",
                  np.float32, np.dtype("int64")]:
        t = aotirt.empty((2, 5), dtype)
        assert t.shape == (2, 5) and t.dtype == np.dtype(dtype) and t.device == "cpu"
        assert t.is_contiguous and t.nbytes == 10 * np.dtype(dtype).itemsize
    with pytest.raises(TypeError, match="not supported"):
        aotirt.empty((2,), "complex64")
    with pytest.raises(ValueError, match="negative"):
        aotirt.empty((2, -1))


def test_narrow_and_copy_on_the_cpu():
    a = np.arange(12, dtype=np.int64).reshape(3, 4)
    t = aotirt.asarray(a.copy())
    row = t.narrow(0, 1, 1)
    assert row.shape == (1, 4)
    np.testing.assert_array_equal(row.numpy(), a[1:2])
    cols = t.narrow(1, 1, 2)
    assert not cols.is_contiguous
    np.testing.assert_array_equal(cols.numpy(), a[:, 1:3])
    row.copy_(aotirt.asarray(np.full((1, 4), -1, np.int64)))
    np.testing.assert_array_equal(t.numpy()[1], [-1, -1, -1, -1])
    cols.copy_(aotirt.asarray(np.zeros((3, 2), np.int64)))
    np.testing.assert_array_equal(t.numpy()[:, 1:3], np.zeros((3, 2)))
    with pytest.raises(ValueError, match="outside dimension 0 of size 3"):
        t.narrow(0, 2, 2)
    with pytest.raises(ValueError, match="out of range"):
        t.narrow(2, 0, 1)
    with pytest.raises(TypeError, match="dtype conversion"):
        t.copy_(aotirt.asarray(np.zeros((3, 4), np.float32)))
    with pytest.raises(ValueError, match="shapes differ"):
        t.copy_(aotirt.asarray(np.zeros((3, 5), np.int64)))


def test_bfloat16_travels_as_raw_bits():
    values = np.array([1.0, -2.5, 3.140625, 0.0], np.float32)
    bits = (values.view(np.uint32) >> 16).astype(np.uint16)      # exact in bfloat16
    t = aotirt.asarray(bits, dtype="bfloat16")
    assert t.strides == (2,)
    out = aotirt.copy_to_host(t, out=np.empty(4, np.uint16))
    np.testing.assert_array_equal((out.astype(np.uint32) << 16).view(np.float32), values)
    with pytest.raises(TypeError, match="cannot view 4-byte items as bfloat16"):
        aotirt.asarray(values, dtype="bfloat16")
