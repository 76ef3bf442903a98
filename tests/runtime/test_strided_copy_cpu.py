"""aotirt's strided copies on the host (cuda_src/runtime/copy.cu): numpy views
of every rank gathered by the copy routine (`numpy()`) and copied between two
strided views (`copy_`), against numpy's own copies; among them permutes
that keep rows contiguous on both sides, which go whole to memcpy."""

import numpy as np
import pytest

import aotirt


def random_view(rng, base):
    """A view of `base`: each dimension sliced with a random start and step,
    the dimensions in a random order (the last kept last half the time)."""
    index = tuple(slice(int(rng.integers(0, 2)), None, int(rng.integers(1, 3))) for _ in range(base.ndim))
    view = base[index]
    order = rng.permutation(base.ndim)
    if base.ndim > 1 and rng.integers(0, 2):
        order = np.append(rng.permutation(base.ndim - 1), base.ndim - 1)
    return view.transpose(tuple(order))


def copy_into_a_strided_slot(view):
    """`view` copied by aotirt into a transposed slice of a larger zeroed
    array; that array, and the slot's own view of it."""
    outer = np.zeros(tuple(s + 1 for s in reversed(view.shape)), dtype=view.dtype)
    slot = outer[tuple(slice(0, s) for s in reversed(view.shape))].transpose()
    aotirt.from_dlpack(slot).copy_(aotirt.from_dlpack(view))
    return outer, slot


@pytest.mark.parametrize("dtype", ["uint8", "float16", "float32", "int64"])
def test_views_of_every_rank_gather_and_copy_as_numpy_copies_them(dtype):
    rng = np.random.default_rng(13)
    for rank in range(1, 7):
        for _ in range(6):
            base = (rng.standard_normal(tuple(int(s) for s in rng.integers(2, 7, size=rank))) * 50).astype(dtype)
            view = random_view(rng, base)
            what = f"rank {rank}, shape {view.shape}, strides {view.strides}"
            np.testing.assert_array_equal(aotirt.from_dlpack(view).numpy(), view, err_msg=what)
            outer, slot = copy_into_a_strided_slot(view)
            np.testing.assert_array_equal(slot, view, err_msg=what)
            untouched = outer.copy()
            untouched[tuple(slice(0, s) for s in reversed(view.shape))] = 0
            assert not untouched.any(), what


@pytest.mark.parametrize("dtype", ["uint8", "float16", "float32", "int64"])
def test_permutes_that_keep_rows_contiguous_copy_whole_rows(dtype):
    # Attention's heads split, [B, L, H, D] viewed as [B, H, L, D], one element
    # into its buffer; then back into that layout.
    rng = np.random.default_rng(17)
    flat = (rng.standard_normal(1 + 2 * 5 * 3 * 24) * 50).astype(dtype)
    view = flat[1:].reshape(2, 5, 3, 24).transpose(0, 2, 1, 3)
    dense = aotirt.empty(view.shape, dtype)
    dense.copy_(aotirt.from_dlpack(view))
    np.testing.assert_array_equal(dense.numpy(), view)
    back = np.zeros(1 + view.size, dtype=dtype)
    aotirt.from_dlpack(back[1:].reshape(2, 5, 3, 24).transpose(0, 2, 1, 3)).copy_(dense)
    np.testing.assert_array_equal(back[1:], flat[1:])
    assert back[0] == 0
