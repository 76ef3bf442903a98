"""A graph replay's inputs copied in one kernel (cuda_src/runtime/copy_batch.h).

Graph.replay(inputs) copies each input into its static input. Contiguous
inputs of the graph's device, apart from every static input, go in one
kernel launch where there are two or more of them (a lone one by
cudaMemcpyAsync, which was measured cheaper for one); the rest (host
arrays, strided views) are copied one by one first, as before. An input
that reads a static input (another position's) is read as it is when the
replay is called: copied to scratch before any static input is rewritten.
Every replay here is compared exactly with an eager run of the same inputs
(add_mul has no atomics).
"""

import numpy as np
import pytest

import aotirt
from support.helpers import run_host_check
from support.waits import count_queued_copies, interposer_library

SHAPE = (1024, 1031)  # 4.2 MB a tensor: 258 chunks of 16 KiB, the last one short


def test_the_plan_shares_out_every_byte_once(tmp_path):
    run_host_check(tmp_path, "copy_batch_check.cpp", flags=("-Wall", "-Wextra", "-Werror"), timeout=120)


@pytest.fixture(scope="module")
def add_mul():
    with aotirt.CudaHandle(aotirt.models.path("add_mul", "cuda")) as h:
        yield h


def arrays(rng, count=3, shape=SHAPE):
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(count)]


@pytest.mark.gpu
def test_device_inputs_of_every_alignment_replay_as_eager_runs(add_mul):
    rng = np.random.default_rng(0)
    with add_mul.capture(arrays(rng)) as g:
        for trial in range(4):
            a, b, c = arrays(rng)
            # Contiguous device tensors: 256-byte aligned, and views that start
            # 4 and 8 bytes past a 16-byte boundary (a narrowed first row of
            # 1031 floats is 4124 bytes long).
            rows = trial + 1
            padded_b = np.concatenate([rng.standard_normal((rows, SHAPE[1])).astype(np.float32), b])
            padded_c = np.concatenate([rng.standard_normal((2, SHAPE[1])).astype(np.float32), c])
            inputs = [aotirt.asarray(a, device=0),
                      aotirt.asarray(padded_b, device=0).narrow(0, rows, SHAPE[0]),
                      aotirt.asarray(padded_c, device=0).narrow(0, 2, SHAPE[0])]
            assert inputs[1].data_ptr % 16 == (4 * rows * SHAPE[1]) % 16
            np.testing.assert_array_equal(g.replay(inputs)[0].numpy(), add_mul.run([a, b, c])[0].numpy())


@pytest.mark.gpu
def test_batched_and_one_by_one_inputs_mix_in_one_replay(add_mul):
    rng = np.random.default_rng(1)
    with add_mul.capture(arrays(rng)) as g:
        a, b, c = arrays(rng)
        wide = np.concatenate([c, rng.standard_normal((SHAPE[0], 5)).astype(np.float32)], axis=1)
        strided_c = aotirt.asarray(wide, device=0).narrow(1, 0, SHAPE[1])  # rows 1036 floats apart
        assert not strided_c.is_contiguous
        # A host array, a device tensor (batched) and a strided view (one by one).
        out = g.replay([a, aotirt.asarray(b, device=0), strided_c])[0].numpy()
        np.testing.assert_array_equal(out, add_mul.run([a, b, c])[0].numpy())


@pytest.mark.gpu
def test_an_input_that_is_another_static_input_is_read_before_it_is_rewritten(add_mul):
    rng = np.random.default_rng(2)
    with add_mul.capture(arrays(rng)) as g:
        a, b, c = arrays(rng)
        g.replay([a, b, c])
        # Input 0 is static input 1 (still b); input 1 is a new device
        # tensor, batched. Input 0 is copied first, from b, and then b's
        # place is rewritten with the new one: (b, d, c), as copies in order.
        d = arrays(rng, 1)[0]
        out = g.replay([g.inputs[1], aotirt.asarray(d, device=0), aotirt.asarray(c, device=0)])[0].numpy()
        np.testing.assert_array_equal(out, add_mul.run([b, d, c])[0].numpy())
        np.testing.assert_array_equal(g.inputs[0].numpy(), b)
        np.testing.assert_array_equal(g.inputs[1].numpy(), d)


# Static inputs fed back at other positions, each case (the replay's inputs,
# the values they hold at the call) from the last replay's a, b, c and a new d.
FED_BACK = {
    # Inputs 0 and 2 swapped (a * b + c is not symmetric in them). Copied in
    # input order, static input 0 would take c and input 2 then read c back.
    "swapped": lambda g, a, b, c, d: ([g.inputs[2], g.inputs[1], g.inputs[0]], [c, b, a]),
    # A host array at position 0 (copied one by one), then static input 0,
    # which still holds a: position 1 is a, not the new array.
    "behind_its_own_position": lambda g, a, b, c, d: ([d, g.inputs[0], aotirt.asarray(c, device=0)], [d, a, c]),
}


@pytest.mark.gpu
@pytest.mark.parametrize("case", sorted(FED_BACK))
def test_static_inputs_fed_to_other_positions_are_read_as_they_are_at_the_call(add_mul, case):
    rng = np.random.default_rng(3)
    with add_mul.capture(arrays(rng)) as g:
        a, b, c, d = arrays(rng, 4)
        g.replay([a, b, c])
        given, meant = FED_BACK[case](g, a, b, c, d)
        out = g.replay(given)[0].numpy()
        np.testing.assert_array_equal(out, add_mul.run(meant)[0].numpy())
        for static, value in zip(g.inputs, meant):
            np.testing.assert_array_equal(static.numpy(), value)


@pytest.fixture(scope="module")
def counter(tmp_path_factory):
    return interposer_library(str(tmp_path_factory.mktemp("interposer")))


@pytest.mark.gpu
def test_device_inputs_take_no_memcpy_but_a_lone_one_and_host_ones_take_one_each(counter):
    setup = """
        import numpy as np, aotirt
        h = aotirt.CudaHandle(aotirt.models.path("add_mul", "cuda"))
        x = np.ones((64, 64), np.float32)
        g = h.capture([x, x, x])
        device = [aotirt.asarray(x, device=0) for _ in range(3)]
    """
    batched = count_queued_copies(counter, setup=setup, body="""
        for _ in range(100):
            g.replay(device)
        assert float(g.outputs[0].numpy()[0, 0]) == 2.0
    """)
    # The result's copy back to the host is the one cudaMemcpyAsync.
    assert batched == {"cudaMemcpyAsync": 1}, batched
    one_by_one = count_queued_copies(counter, setup=setup, body="""
        for _ in range(100):
            g.replay([x, x, x])
    """)
    assert one_by_one == {"cudaMemcpyAsync": 300}, one_by_one
    # Inputs 0 and 1 are the static inputs themselves (nothing to copy): the
    # lone device input left goes by cudaMemcpyAsync.
    lone = count_queued_copies(counter, setup=setup, body="""
        for _ in range(100):
            g.replay([g.inputs[0], g.inputs[1], device[2]])
    """)
    assert lone == {"cudaMemcpyAsync": 100}, lone
