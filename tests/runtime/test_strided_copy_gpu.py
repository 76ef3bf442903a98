"""aotirt's strided copies on a GPU (cuda_src/runtime/copy.cu): views of
every rank and element width, gathered by the copy routine (`numpy()`) and
copied between two strided views (`copy_`), against CuPy's own copies;
permutes whose rows stay contiguous, moved in wider words, at aligned and
misaligned addresses; and a view whose offsets pass 31 bits, which takes
the 64-bit kernel.

The views come from CuPy (slices with steps, transposes) through DLPack, so
that aotirt sees them with their strides; the results are read back by
aotirt's copy routine or by CuPy's host copy."""

import numpy as np
import pytest

import aotirt

pytestmark = pytest.mark.gpu


@pytest.fixture
def cupy():
    return pytest.importorskip("cupy", reason="the strided copy tests make their views with cupy")


def random_array(cupy, rng, shape, dtype):
    values = rng.integers(0, 120, size=shape) if np.dtype(dtype).kind in "iu" else rng.standard_normal(shape)
    return cupy.asarray(values.astype(dtype))


def random_view(cupy, rng, base):
    """A view of `base`: each dimension sliced with a random start and step,
    the dimensions in a random order."""
    index = tuple(slice(int(rng.integers(0, 2)), None, int(rng.integers(1, 3))) for _ in range(base.ndim))
    view = base[index]
    return view.transpose(tuple(rng.permutation(base.ndim)))


@pytest.mark.parametrize("dtype", ["uint8", "float16", "float32", "int64"])
def test_views_of_every_rank_gather_and_copy_as_cupy_copies_them(cupy, dtype):
    rng = np.random.default_rng(3)
    for rank in range(1, 7):
        for _ in range(4):
            base = random_array(cupy, rng, tuple(int(s) for s in rng.integers(2, 7, size=rank)), dtype)
            view = random_view(cupy, rng, base)
            expected = cupy.asnumpy(view)
            source = aotirt.from_dlpack(view)
            what = f"rank {rank}, shape {view.shape}, strides {view.strides}"
            # The copy routine's gather into a dense buffer, then to the host.
            np.testing.assert_array_equal(source.numpy(), expected, err_msg=what)
            # A device copy between two strided views: the destination a
            # transposed slice of a larger array, the rest of it untouched.
            outer = cupy.zeros(tuple(s + 1 for s in reversed(view.shape)), dtype=dtype)
            slot = aotirt.from_dlpack(outer[tuple(slice(0, s) for s in reversed(view.shape))].transpose())
            slot.copy_(source)
            # Through DLPack, CuPy's stream waits for the copy on aotirt's.
            np.testing.assert_array_equal(cupy.asnumpy(cupy.from_dlpack(slot)), expected, err_msg=what)
            untouched = cupy.asnumpy(outer).copy()
            untouched[tuple(slice(0, s) for s in reversed(view.shape))] = 0
            assert not untouched.any(), what


@pytest.mark.parametrize("dtype", ["uint8", "float16", "float32", "int64"])
@pytest.mark.parametrize("row", [64, 24, 6])
@pytest.mark.parametrize("start", [0, 1, 4])
def test_permutes_that_keep_rows_contiguous_copy_as_cupy_copies_them(cupy, dtype, row, start):
    # Attention's heads split, [B, L, H, D] viewed as [B, H, L, D]: rows of D
    # elements contiguous on both sides, moved in words wider than the
    # elements where the row length and both addresses allow
    # (strided::widen). `start` elements into its buffer, the source is
    # aligned to less than 16 bytes.
    rng = np.random.default_rng(row + start)
    flat = random_array(cupy, rng, (start + 2 * 33 * 4 * row,), dtype)
    view = flat[start:].reshape(2, 33, 4, row).transpose(0, 2, 1, 3)
    expected = cupy.asnumpy(view)
    source = aotirt.from_dlpack(view)
    what = f"rows of {row}, {start} elements in"
    np.testing.assert_array_equal(source.numpy(), expected, err_msg=what)
    dense = aotirt.empty(view.shape, dtype, device=0)
    dense.copy_(source)
    np.testing.assert_array_equal(dense.numpy(), expected, err_msg=what)
    # Into the same layout back ([B, L, H, D] storage), one element in.
    outer = cupy.zeros(1 + view.size, dtype=dtype)
    back = aotirt.from_dlpack(outer[1:].reshape(2, 33, 4, row).transpose(0, 2, 1, 3))
    back.copy_(dense)
    # Through DLPack, CuPy's stream waits for the copy on aotirt's.
    np.testing.assert_array_equal(cupy.asnumpy(cupy.from_dlpack(back)), expected, err_msg=what)
    assert cupy.asnumpy(outer)[0] == 0, what


def test_a_gather_of_six_dimensions_as_im2col_makes_it(cupy):
    # Whisper conv1's windows (conv_view.h's im2col_of): [1, 1, 3000, 80, 1, 3]
    # over a [1, 80, 1, 3002] zero-padded input.
    rng = np.random.default_rng(5)
    padded = random_array(cupy, rng, (1, 80, 1, 3002), "float32")
    item = padded.itemsize
    windows = cupy.lib.stride_tricks.as_strided(
        padded, shape=(1, 1, 3000, 80, 1, 3),
        strides=tuple(item * s for s in (80 * 3002, 3002, 1, 3002, 3002, 1)))
    np.testing.assert_array_equal(aotirt.from_dlpack(windows).numpy(), cupy.asnumpy(windows))


def test_offsets_past_31_bits_take_the_64_bit_copy(cupy):
    # A [3, 5] byte view whose rows are 2^30 + 3 bytes apart: its last
    # element lies past 2^31 bytes from its first.
    rows = (1 << 30) + 3
    try:
        base = cupy.empty(2 * rows + 64, dtype="uint8")
    except cupy.cuda.memory.OutOfMemoryError:
        pytest.fail("the 64-bit copy test needs 2 GiB of GPU memory")
    marks = cupy.arange(15, dtype="uint8").reshape(3, 5) + 1
    for r in range(3):
        base[r * rows:r * rows + 5] = marks[r]
    view = cupy.lib.stride_tricks.as_strided(base, shape=(3, 5), strides=(rows, 1))
    source = aotirt.from_dlpack(view)
    np.testing.assert_array_equal(source.numpy(), cupy.asnumpy(marks))
    dense = aotirt.empty((3, 5), "uint8", device=0)
    dense.copy_(source)
    np.testing.assert_array_equal(dense.numpy(), cupy.asnumpy(marks))
    del source, view, base
