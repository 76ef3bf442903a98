"""The encoder and decoder example models against the numpy reference.

Tolerances: both models are short chains of float32 dot products (at most
512 terms) and elementwise functions. Summed in float32 such a chain is off
by a few hundred eps at worst and typically by sqrt(n) eps, about 1e-6 of the
output's norm (the CPU builds show 5e-7). The CPU builds are held to 1e-5 of
the norm; the CUDA builds to 1e-4, for their other summation orders (tiles,
tree reductions), fused multiply-adds and tanhf/expf (2 ulp).

Greedy tokens are compared exactly. That is sound only where the winning
logit beats the runner-up by more than the tolerance allows them to move,
so the tests check that margin on the reference first (a seed or weights
that gave a near tie would fail there, with that reason, not flakily).
"""

import importlib.util
import os
import re

import numpy as np
import pytest

import aotirt
from aotirt import _layout, models, reference
from support.helpers import REPO, relative_error, run_python

CPU_TOLERANCE = 1e-5
GPU_TOLERANCE = 1e-4
STEPS = 16
START_TOKEN = 0
FRAMES_SEED = 0  # 16 distinct tokens in 16 steps, smallest margin 2.8e-4 of the norm


@pytest.fixture(scope="module")
def frames():
    return np.random.default_rng(FRAMES_SEED).standard_normal((_layout.T, _layout.F)).astype(np.float32)


@pytest.fixture(scope="module")
def weights():
    return reference.load_weights("encoder"), reference.load_weights("decoder")


@pytest.fixture(scope="module")
def ref_hidden(frames, weights):
    return reference.encoder(frames, weights[0])


@pytest.fixture(scope="module")
def ref_path(ref_hidden, weights):
    """The reference's greedy path from START_TOKEN: each step's logits, and the tokens produced."""
    logits, produced = [], []
    token = START_TOKEN
    for _ in range(STEPS):
        step_logits, token = reference.decoder_step(ref_hidden, token, weights[1])
        logits.append(step_logits)
        produced.append(token)
    return logits, produced


@pytest.fixture
def encoder_cpu():
    with models.open("encoder", "cpu") as h:
        yield h


@pytest.fixture
def decoder_cpu():
    with models.open("decoder", "cpu") as h:
        yield h


@pytest.fixture
def encoder_gpu():
    with models.open("encoder", 0) as h:
        yield h


@pytest.fixture
def decoder_gpu():
    with models.open("decoder", 0) as h:
        yield h


def assert_margins_allow_exact_tokens(logits_per_step, tolerance):
    # If |out - ref| <= tolerance * |ref| (2-norm), two logits move apart by
    # at most sqrt(2) * tolerance * |ref|: a wider margin keeps the argmax.
    for step, logits in enumerate(logits_per_step):
        top = np.sort(logits)[-2:]
        margin = top[1] - top[0]
        needed = np.sqrt(2) * tolerance * np.linalg.norm(logits)
        assert margin > needed, f"step {step}: a near tie ({margin:.3g} <= {needed:.3g}); pick another FRAMES_SEED"


# --- what the three copies of the sizes and layouts agree on -----------------


def load_make_weights():
    spec = importlib.util.spec_from_file_location("make_weights", os.path.join(REPO, "cuda_src", "models",
                                                                               "make_weights.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sizes_and_layouts_agree():
    header = open(os.path.join(REPO, "cuda_src", "models", "pipeline.h")).read()
    constants = dict(re.findall(r"constexpr int64_t k(\w) = (\d+);", header))
    make_weights = load_make_weights()
    for name in "TFDHV":
        assert int(constants[name]) == getattr(_layout, name) == getattr(make_weights, name), name
    for model in ("encoder", "decoder"):
        assert [(t, s) for t, s, _kind, _scale in make_weights.LAYOUT[model]] == _layout.LAYOUT[model]
        source = open(os.path.join(REPO, "cuda_src", "models", f"{model}.cpp")).read()
        names = re.findall(r'\{"(\w+)", \{', source)
        assert names == [t for t, _s in _layout.LAYOUT[model]], model


def test_weights_files_are_whole_and_reproducible(tmp_path):
    load_make_weights().main(["make_weights.py", str(tmp_path)])
    for model in ("encoder", "decoder"):
        shipped = models.weights(model)
        assert os.path.getsize(shipped) == _layout.nbytes(model)
        assert open(shipped, "rb").read() == (tmp_path / f"{model}.weights").read_bytes(), model


def test_reference_does_not_import_numpy_on_import():
    proc = run_python("import sys, aotirt.reference, aotirt.models; print('numpy' in sys.modules)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_activations_stay_of_order_one(ref_hidden, ref_path):
    # The weights' 1/sqrt(fan_in) scaling: nothing blows up or vanishes.
    assert 0.5 < ref_hidden.std() < 2
    for logits in ref_path[0]:
        assert 0.1 < logits.std() < 10


def test_available_lists_the_models_not_the_test_library():
    names = models.available()
    assert {"add_mul", "encoder", "decoder"} <= set(names)
    assert not any(n.startswith("_") for n in names)


# --- CPU ----------------------------------------------------------------------


def test_metadata(encoder_cpu, decoder_cpu):
    assert encoder_cpu.input_names == ["frames"] and encoder_cpu.output_names == ["hidden"]
    assert decoder_cpu.input_names == ["hidden", "token"]
    assert decoder_cpu.output_names == ["logits", "next_token"]


def test_encoder_cpu_matches_reference(encoder_cpu, frames, ref_hidden):
    (hidden,) = encoder_cpu.run([frames])
    assert hidden.shape == (_layout.T, _layout.D) and hidden.dtype == np.float32 and hidden.device == "cpu"
    assert relative_error(hidden.numpy(), ref_hidden) < CPU_TOLERANCE


@pytest.mark.parametrize("token", [0, 1, 517, _layout.V - 1])
def test_decoder_cpu_matches_reference(decoder_cpu, ref_hidden, weights, token):
    hidden = ref_hidden.astype(np.float32)
    logits, next_token = decoder_cpu.run([hidden, np.array([token], np.int64)])
    assert logits.shape == (_layout.V,) and logits.dtype == np.float32
    assert next_token.shape == (1,) and next_token.dtype == np.int64
    ref_logits, ref_next = reference.decoder_step(hidden, token, weights[1])
    assert relative_error(logits.numpy(), ref_logits) < CPU_TOLERANCE
    assert_margins_allow_exact_tokens([ref_logits], CPU_TOLERANCE)
    assert int(next_token.numpy()[0]) == ref_next


def test_greedy_cpu_matches_reference(encoder_cpu, decoder_cpu, frames, ref_path):
    ref_logits, ref_tokens = ref_path
    assert_margins_allow_exact_tokens(ref_logits, CPU_TOLERANCE)
    (hidden,) = encoder_cpu.run([frames])
    token = np.array([START_TOKEN], np.int64)
    tokens = []
    for step in range(STEPS):
        logits, token = decoder_cpu.run([hidden, token])  # next_token is the next step's token as it is
        assert relative_error(logits.numpy(), ref_logits[step]) < CPU_TOLERANCE, step
        tokens.append(int(token.numpy()[0]))
    assert tokens == ref_tokens
    assert len(set(tokens)) > 8  # a path that goes somewhere, not a fixed point


# --- bad input and bad weights (CPU) -------------------------------------------


def test_encoder_wrong_shape_and_dtype(encoder_cpu, frames):
    with pytest.raises(aotirt.AotiError, match=r"input 0 \(frames\) has shape \[63, 80\], encoder takes \[64, 80\]"):
        encoder_cpu.run([frames[:63]])
    with pytest.raises(aotirt.AotiError, match=r"input 0 \(frames\) has shape \[5120\], encoder takes \[64, 80\]"):
        encoder_cpu.run([frames.reshape(-1)])
    with pytest.raises(aotirt.AotiError, match=r"input 0 \(frames\): encoder takes float32, got float64"):
        encoder_cpu.run([frames.astype(np.float64)])
    (hidden,) = encoder_cpu.run([frames])  # still fine
    assert hidden.shape == (_layout.T, _layout.D)


def test_decoder_wrong_inputs(decoder_cpu, ref_hidden):
    hidden = ref_hidden.astype(np.float32)
    token = np.array([3], np.int64)
    with pytest.raises(aotirt.AotiError, match=r"input 1 \(token\): decoder takes int64, got int32"):
        decoder_cpu.run([hidden, token.astype(np.int32)])
    with pytest.raises(aotirt.AotiError, match=r"input 1 \(token\) has shape \[2\], decoder takes \[1\]"):
        decoder_cpu.run([hidden, np.array([3, 4], np.int64)])
    with pytest.raises(aotirt.AotiError, match=r"input 1 \(token\) has shape \[\], decoder takes \[1\]"):
        decoder_cpu.run([hidden, np.array(3, np.int64)])
    with pytest.raises(aotirt.AotiError, match=r"input 0 \(hidden\) has shape \[64, 255\], decoder takes \[64, 256\]"):
        decoder_cpu.run([hidden[:, :255], token])
    with pytest.raises(aotirt.AotiError, match=r"input 0 \(hidden\): decoder takes float32, got float16"):
        decoder_cpu.run([hidden.astype(np.float16), token])
    for bad in [-1, _layout.V, 1 << 40]:
        with pytest.raises(aotirt.AotiError, match=rf"input 1 \(token\) is {bad}, outside the vocabulary \[0, 1024\)"):
            decoder_cpu.run([hidden, np.array([bad], np.int64)])
    with pytest.raises(ValueError, match="the model takes 2 inputs, got 1"):
        decoder_cpu.run([hidden])
    logits, _ = decoder_cpu.run([hidden, token])  # still fine
    assert np.all(np.isfinite(logits.numpy()))


def test_run_before_weights_are_loaded(frames):
    with aotirt.AotiHandle(models.path("encoder", "cpu")) as h:
        with pytest.raises(aotirt.AotiError, match="weights not loaded: call update_constants_from_blob"):
            h.run([frames])
        h.update_constants_from_blob(open(models.weights("encoder"), "rb").read())
        assert h.run([frames])[0].shape == (_layout.T, _layout.D)
    with aotirt.AotiHandle(models.path("decoder", "cpu")) as h:
        with pytest.raises(aotirt.AotiError, match="weights not loaded: call update_constants_from_blob"):
            h.run([np.zeros((_layout.T, _layout.D), np.float32), np.zeros(1, np.int64)])


def test_truncated_or_wrong_weights_file(tmp_path, frames):
    whole = open(models.weights("encoder"), "rb").read()
    cut = tmp_path / "cut.weights"
    cut.write_bytes(whole[:-4])
    with pytest.raises(ValueError, match=r"cut\.weights has 511996 bytes, the encoder model's weights are 512000 bytes"):
        models.open("encoder", "cpu", weights=cut)
    with pytest.raises(ValueError, match=r"has more than 512000 bytes, the encoder model's weights are 512000"):
        models.open("encoder", "cpu", weights=models.weights("decoder"))
    empty = tmp_path / "empty.weights"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="has 0 bytes"):
        models.open("decoder", "cpu", weights=empty)
    with pytest.raises(FileNotFoundError):
        models.open("decoder", "cpu", weights=tmp_path / "missing.weights")
    with pytest.raises(ValueError, match="holds 127999 float32 values, the encoder model has 128000"):
        reference.load_weights("encoder", cut)
    with models.open("encoder", "cpu") as h:  # the process and the models are fine
        assert h.run([frames])[0].shape == (_layout.T, _layout.D)


def test_weights_of_models_without_weights():
    with pytest.raises(ValueError, match="example model 'add_mul' has no weights"):
        models.weights("add_mul")
    with pytest.raises(ValueError, match="no example model named 'nope' with weights"):
        models.weights("nope")
    with pytest.raises(ValueError, match="example model 'add_mul' has no weights"):
        models.open("add_mul", "cpu", weights=models.weights("encoder"))
    with models.open("add_mul", "cpu") as h:  # nothing to load
        assert h.num_inputs == 3


def test_reloading_weights_replaces_them(frames, ref_hidden):
    with models.open("encoder", "cpu") as h:
        # All-zero weights: the layer norm's beta, zero, is the output.
        h.update_constants_from_blob(bytes(_layout.nbytes("encoder")))
        np.testing.assert_array_equal(h.run([frames])[0].numpy(), 0)
        h.update_constants_from_blob(open(models.weights("encoder"), "rb").read())
        assert relative_error(h.run([frames])[0].numpy(), ref_hidden) < CPU_TOLERANCE


# --- GPU ----------------------------------------------------------------------


@pytest.mark.gpu
def test_encoder_gpu_matches_reference(encoder_gpu, frames, ref_hidden):
    (hidden,) = encoder_gpu.run([frames])
    assert hidden.shape == (_layout.T, _layout.D) and hidden.dtype == np.float32 and hidden.device == "cuda:0"
    assert hidden.stream == encoder_gpu.stream
    assert relative_error(hidden.numpy(), ref_hidden) < GPU_TOLERANCE


@pytest.mark.gpu
@pytest.mark.parametrize("token", [0, 1, 517, _layout.V - 1])
def test_decoder_gpu_matches_reference(decoder_gpu, ref_hidden, weights, token):
    hidden = ref_hidden.astype(np.float32)
    logits, next_token = decoder_gpu.run([hidden, np.array([token], np.int64)])
    assert logits.device == next_token.device == "cuda:0"
    assert next_token.shape == (1,) and next_token.dtype == np.int64
    ref_logits, ref_next = reference.decoder_step(hidden, token, weights[1])
    assert relative_error(logits.numpy(), ref_logits) < GPU_TOLERANCE
    assert_margins_allow_exact_tokens([ref_logits], GPU_TOLERANCE)
    assert int(next_token.numpy()[0]) == ref_next


def cpu_tokens(frames):
    with models.open("encoder", "cpu") as enc, models.open("decoder", "cpu") as dec:
        (hidden,) = enc.run([frames])
        token = np.array([START_TOKEN], np.int64)
        tokens = []
        for _ in range(STEPS):
            _logits, token = dec.run([hidden, token])
            tokens.append(int(token.numpy()[0]))
    return tokens


@pytest.mark.gpu
def test_greedy_gpu_tokens_stay_on_the_device(encoder_gpu, decoder_gpu, frames, ref_path):
    ref_logits, ref_tokens = ref_path
    assert_margins_allow_exact_tokens(ref_logits, GPU_TOLERANCE)
    (hidden,) = encoder_gpu.run([frames])
    token = aotirt.asarray(np.array([START_TOKEN], np.int64), device=0)
    all_logits, all_tokens = [], []
    for _ in range(STEPS):
        # No host copy in the loop: the device tensor next_token is the next
        # step's token input as it is; everything is queued on one stream.
        logits, token = decoder_gpu.run([hidden, token])
        assert token.device == "cuda:0" and token.shape == (1,)  # metadata only: no wait
        all_logits.append(logits)
        all_tokens.append(token)
    tokens = [int(t.numpy()[0]) for t in all_tokens]  # the host waits here, once the loop is queued
    for step, logits in enumerate(all_logits):
        assert relative_error(logits.numpy(), ref_logits[step]) < GPU_TOLERANCE, step
    assert tokens == ref_tokens
    assert tokens == cpu_tokens(frames)


@pytest.mark.gpu
def test_gpu_out_of_range_token_gives_nan_logits(decoder_gpu, ref_hidden):
    # Checking the token would mean reading it on the host: the embedding
    # writes NaN instead, and every logit shows it.
    hidden = aotirt.asarray(ref_hidden.astype(np.float32), device=0)
    for bad in [-1, _layout.V]:
        logits, _next = decoder_gpu.run([hidden, np.array([bad], np.int64)])
        assert np.all(np.isnan(logits.numpy())), bad
    logits, _next = decoder_gpu.run([hidden, np.array([5], np.int64)])  # still fine
    assert np.all(np.isfinite(logits.numpy()))


@pytest.mark.gpu
def test_gpu_bad_inputs_and_missing_weights(encoder_gpu, decoder_gpu, frames, ref_hidden):
    with pytest.raises(aotirt.AotiError, match=r"input 0 \(frames\) has shape \[63, 80\], encoder takes \[64, 80\]"):
        encoder_gpu.run([frames[:63]])
    with pytest.raises(aotirt.AotiError, match=r"input 1 \(token\): decoder takes int64, got int32"):
        decoder_gpu.run([ref_hidden.astype(np.float32), np.array([1], np.int32)])
    with aotirt.CudaHandle(models.path("decoder", "cuda")) as bare:
        with pytest.raises(aotirt.AotiError, match="weights not loaded: call update_constants_from_blob"):
            bare.run([ref_hidden.astype(np.float32), np.array([1], np.int64)])
    (hidden,) = encoder_gpu.run([frames])  # both still fine
    assert relative_error(hidden.numpy(), reference.encoder(frames)) < GPU_TOLERANCE


@pytest.mark.gpu
def test_gpu_reloading_weights_replaces_them(frames, ref_hidden):
    with models.open("encoder", 0) as h:
        (before,) = h.run([frames])  # queued with the first weights, which are freed stream-ordered
        h.update_constants_from_blob(bytes(_layout.nbytes("encoder")))
        (zeros,) = h.run([frames])
        h.update_constants_from_blob(open(models.weights("encoder"), "rb").read())
        (after,) = h.run([frames])
        assert relative_error(before.numpy(), ref_hidden) < GPU_TOLERANCE
        np.testing.assert_array_equal(zeros.numpy(), 0)
        assert relative_error(after.numpy(), ref_hidden) < GPU_TOLERANCE
