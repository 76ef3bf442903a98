"""ml_dtypes arrays (bfloat16, the float8s) in and out of aotirt.

numpy will not export an ml_dtypes array through the buffer protocol with
its format ("cannot include dtype 'E' in a buffer"), so aotirt takes such an
array's bits through an unsigned-integer view of the same memory and reads
them as the array's own dtype. Before that, `asarray` of a bfloat16 array
and `copy_to_host` of a bfloat16 tensor both failed wherever ml_dtypes was
installed (session 41 met it on the GPU runner, which has ml_dtypes).
"""

import numpy as np
import pytest

import aotirt

ml_dtypes = pytest.importorskip("ml_dtypes", reason="these tests are about ml_dtypes' arrays")

# Each ml_dtypes type aotirt has, with the unsigned integers of its size.
BITS = {"bfloat16": np.uint16, "float8_e4m3fn": np.uint8, "float8_e5m2": np.uint8}


def values(name, shape=(3, 5)):
    """Values that every dtype of BITS holds exactly, in an ml_dtypes array."""
    rng = np.random.default_rng(41)
    return (rng.integers(-8, 8, size=shape) / 2).astype(getattr(ml_dtypes, name))


def same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a.view(BITS[a.dtype.name]),
                                                                        b.view(BITS[b.dtype.name]))


@pytest.mark.parametrize("name", sorted(BITS))
def test_a_cpu_tensor_of_an_array_has_its_dtype_and_comes_back_bit_for_bit(name):
    array = values(name)
    tensor = aotirt.asarray(array)
    assert tensor.dtype == name and tensor.shape == array.shape
    back = aotirt.copy_to_host(tensor)
    assert back.dtype == array.dtype and same_bits(back, array)
    assert same_bits(tensor.numpy(), array)


def test_a_cpu_tensor_shares_the_arrays_memory():
    array = values("bfloat16")
    tensor = aotirt.asarray(array)
    array[1, 2] = 7.5
    assert aotirt.copy_to_host(tensor)[1, 2] == 7.5


def test_a_strided_array_comes_in_with_its_elements_in_order():
    array = values("bfloat16", (4, 6))[:, ::2].T
    assert not array.flags.c_contiguous
    tensor = aotirt.asarray(array)
    assert tensor.shape == (3, 4) and same_bits(aotirt.copy_to_host(tensor), np.ascontiguousarray(array))


def test_a_dtype_given_reinterprets_the_bits():
    array = values("bfloat16")
    tensor = aotirt.asarray(array, dtype="float16")
    assert tensor.dtype == "float16"
    assert np.array_equal(aotirt.copy_to_host(tensor).view(np.uint16), array.view(np.uint16))


def test_copy_to_host_fills_an_out_of_the_tensors_dtype():
    array = values("bfloat16")
    out = np.zeros(array.shape, ml_dtypes.bfloat16)
    assert aotirt.copy_to_host(aotirt.asarray(array), out=out) is out
    assert same_bits(out, array)


def test_copy_to_host_still_takes_the_raw_bits():
    array = values("bfloat16")
    bits = np.zeros(array.shape, np.uint16)
    aotirt.copy_to_host(aotirt.asarray(array), out=bits)
    assert np.array_equal(bits, array.view(np.uint16))


def test_an_out_of_another_dtype_is_refused_by_name():
    tensor = aotirt.asarray(values("bfloat16"))
    out = np.zeros(tensor.shape, ml_dtypes.float8_e5m2)
    with pytest.raises(TypeError, match="out is float8_e5m2, the tensor is bfloat16"):
        aotirt.copy_to_host(tensor, out=out)
    assert not out.view(np.uint8).any()


def test_an_out_of_another_shape_is_refused():
    tensor = aotirt.asarray(values("bfloat16", (3, 5)))
    with pytest.raises(ValueError, match=r"out has shape \(5, 3\), the tensor \(3, 5\)"):
        aotirt.copy_to_host(tensor, out=np.zeros((5, 3), ml_dtypes.bfloat16))


def test_a_strided_out_is_refused():
    tensor = aotirt.asarray(values("bfloat16", (3, 5)))
    out = np.zeros((5, 3), ml_dtypes.bfloat16).T
    with pytest.raises(ValueError, match="out must be a writable C-contiguous array"):
        aotirt.copy_to_host(tensor, out=out)


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(BITS))
def test_an_array_goes_to_the_gpu_and_back_bit_for_bit(name):
    array = values(name, (64, 33))
    tensor = aotirt.asarray(array, device=0)
    assert tensor.dtype == name and tensor.device == "cuda:0"
    assert same_bits(aotirt.copy_to_host(tensor), array)
    out = np.zeros(array.shape, array.dtype)
    assert aotirt.copy_to_host(tensor, out=out) is out and same_bits(out, array)
