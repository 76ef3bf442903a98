"""Issue 16: a real decoder's greedy loop on the device.

llama_decode_f32 (tests/aoti/static_decoder.py) is one greedy step of a
transformers Llama model with a static KV cache, exported with the cache as
mutable buffers and compiled by AOTInductor with its default configs plus
link_libtorch=False (tests/aoti/build.py, which also saves torch eager's 256
greedy tokens from token 1 at position 0). Here aotirt decodes them with
`handle.loop`, each step's (next_token, next_position) fed back as its
(token, position), with CUDA graphs and without: the tokens must equal
torch's exactly, and the whole loop, read once, waits for the GPU once (the
copy). This process never imports torch.
"""

import os

import numpy as np
import pytest

import aotirt
from support.waits import count_waits, interposer_library
from test_aoti_models import model_folder

NAME = "llama_decode_f32"
FEEDBACK = [(0, 0), (1, 1)]      # next_token -> token, next_position -> position


@pytest.fixture(scope="module")
def decoder():
    """(package path, meta["loop"], torch eager's tokens)."""
    folder, meta = model_folder(NAME, "cuda")
    configs = {k: v for k, v in meta["configs"].items() if k != "aot_inductor.package"}
    assert configs == {"aot_inductor.link_libtorch": False}, meta["configs"]
    expected = np.load(os.path.join(folder, "loop_tokens.npy"))
    assert expected.shape == (meta["loop"]["steps"],) and expected.dtype == np.int64
    return os.path.join(folder, "model.pt2"), meta["loop"], expected


def first_inputs(loop):
    """Fresh device tensors for the first step (a loop may write its feedback into them)."""
    return [aotirt.asarray(np.array([[loop["start_token"]]], np.int64), device=0),
            aotirt.asarray(np.array([loop["start_position"]], np.int64), device=0)]


def assert_same_tokens(actual, expected, loop, how):
    actual = np.asarray(actual).reshape(-1)
    if np.array_equal(actual, expected):
        return
    first = int(np.argmax(actual != expected)) if actual.shape == expected.shape else 0
    pytest.fail(f"{NAME} ({how}): tokens differ from torch eager's from step {first} "
                f"(aotirt {actual[first:first + 8].tolist()}, torch {expected[first:first + 8].tolist()}); "
                f"{actual.shape[0]} tokens against {expected.shape[0]}; the reference's smallest top-2 logit "
                f"gap is {loop.get('min_top2_gap')} (a near tie can flip under other float sums)",
                pytrace=False)


def decode(handle, loop):
    """(tokens as a device Tensor [steps, 1, 1], the last outputs) of one handle.loop."""
    collected, outputs = handle.loop(first_inputs(loop), loop["steps"], feedback=FEEDBACK, collect=[0])
    assert len(collected) == 1 and len(outputs) == 2, (len(collected), len(outputs))
    (tokens,) = collected
    assert tokens.shape == (loop["steps"], 1, 1) and tokens.dtype == np.int64, (tokens.shape, tokens.dtype)
    return tokens, outputs


@pytest.mark.gpu
def test_decoder_steps_run_one_by_one_match_torch(decoder):
    # The model itself, without the loop: one run per step, each run's
    # outputs fed to the next as they are, read at the end.
    path, loop, expected = decoder
    with aotirt.load(path) as handle:
        inputs, steps = first_inputs(loop), []
        for _ in range(loop["steps"]):
            inputs = handle.run(inputs)
            steps.append(inputs[0])
        assert_same_tokens([int(t.numpy().reshape(())) for t in steps], expected, loop, "run per step")
        assert int(inputs[1].numpy()[0]) == loop["start_position"] + loop["steps"]


@pytest.mark.gpu
@pytest.mark.parametrize("graphs", [True, False], ids=["graphs", "eager"])
def test_decoder_loop_matches_torch(decoder, graphs):
    path, loop, expected = decoder
    with aotirt.load(path, graphs=graphs) as handle:
        tokens, outputs = decode(handle, loop)
        assert_same_tokens(tokens.numpy(), expected, loop, f"loop, graphs={graphs}")
        assert int(outputs[1].numpy()[0]) == loop["start_position"] + loop["steps"], "next_position"
        first = dict(handle.graph_stats)
        # Again from position 0: the cache's slots past the position are
        # masked, so what the first decode left there changes nothing; with
        # graphs on, every step is now a replay of the graph the first captured.
        tokens, _ = decode(handle, loop)
        assert_same_tokens(tokens.numpy(), expected, loop, f"second loop, graphs={graphs}")
        second = dict(handle.graph_stats)
    assert bool(second["enabled"]) == graphs, second
    if graphs:
        # The second decode ran on the graph alone: replays, no eager run, no new capture.
        assert first["captures"] == second["captures"] == 1 and second["graphs"] == 1, (first, second)
        assert second["eager_runs"] == first["eager_runs"] and second["hits"] > first["hits"], (first, second)
        assert second["invalidations"] == second["evictions"] == 0, second
    else:
        assert second["captures"] == second["graphs"] == second["hits"] == 0, second


@pytest.fixture(scope="module")
def counter(tmp_path_factory):
    return interposer_library(str(tmp_path_factory.mktemp("interposer")))


@pytest.mark.gpu
@pytest.mark.parametrize("graphs", [True, False], ids=["graphs", "eager"])
def test_decoder_loop_waits_once(counter, decoder, graphs):
    # A decode after a warm-up one (with graphs, the warm-up captured the
    # step): 256 steps queued and their tokens read, one host wait in all.
    path, loop, expected = decoder
    counts = count_waits(counter, setup=f"""
        import numpy as np
        import aotirt
        loop = {loop!r}
        handle = aotirt.load({path!r}, graphs={graphs})
        def inputs():
            return [aotirt.asarray(np.array([[loop["start_token"]]], np.int64), device=0),
                    aotirt.asarray(np.array([loop["start_position"]], np.int64), device=0)]
        warm, timed = inputs(), inputs()
        collected, _ = handle.loop(warm, loop["steps"], feedback={FEEDBACK!r}, collect=[0])
        collected[0].numpy()
    """, body=f"""
        collected, _ = handle.loop(timed, loop["steps"], feedback={FEEDBACK!r}, collect=[0])
        tokens = collected[0].numpy()
        assert tokens.reshape(-1).tolist() == {expected.tolist()!r}, tokens.reshape(-1).tolist()
    """)
    unexpected = {n: c for n, c in counts.items() if c and n != "cudaStreamSynchronize"}
    assert unexpected == {} and counts["cudaStreamSynchronize"] == 1, counts
