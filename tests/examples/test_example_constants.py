"""The example models' constants by name (issue #17): their container
implements torch's constant functions, models.open loads their weights by
name, and update_constants / swap_constants work on them as on a torch
library. Outputs are checked exactly where the new weights make them exact:
with the layer norm's gamma zero the encoder's output is beta in every row;
with w2 zero the decoder's logits are b2 and its next token b2's argmax.
"""

import numpy as np
import pytest

import aotirt
from aotirt import _layout, models, reference
from support.helpers import relative_error

CPU_TOLERANCE = 1e-5
GPU_TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def frames():
    return np.random.default_rng(0).standard_normal((_layout.T, _layout.F)).astype(np.float32)


def encoder_weights(**changes):
    """The shipped encoder weights, with `changes` replacing some."""
    return dict(reference.load_weights("encoder"), **changes)


def zero_gamma():
    """Encoder weights whose output is beta in every row (exactly)."""
    beta = np.linspace(-1, 1, _layout.D, dtype=np.float32)
    return encoder_weights(gamma=np.zeros(_layout.D, np.float32), beta=beta), beta


def constant_b2_decoder():
    """Decoder weights whose logits are b2 (exactly): w2 zero."""
    b2 = np.arange(_layout.V, dtype=np.float32) / _layout.V
    b2[517] = 2.0
    w = dict(reference.load_weights("decoder"), w2=np.zeros((_layout.H, _layout.V), np.float32), b2=b2)
    return w, b2


def write_safetensors(path, arrays):
    from safetensors.numpy import save_file

    save_file({k: np.ascontiguousarray(v) for k, v in arrays.items()}, str(path))
    return str(path)


# --- what the container says --------------------------------------------------


@pytest.mark.parametrize("name", ["encoder", "decoder"])
def test_constants_are_the_layout(name):
    with models.open(name, "cpu") as h:
        listed = [(c.name, c.fqn, c.dtype, c.shape, c.nbytes, c.kind, c.folded, c.shared) for c in h.constants]
    assert listed == [(t, t, "float32", shape, 4 * _layout.count(shape), "parameter", False, True)
                      for t, shape in _layout.LAYOUT[name]]


def test_shapes_are_unknown_until_loaded_and_the_librarys_after_a_blob():
    with aotirt.AotiHandle(models.path("encoder", "cpu")) as h:
        assert [c.shape for c in h.constants] == [None] * len(_layout.LAYOUT["encoder"])
        with open(models.weights("encoder"), "rb") as f:
            h.update_constants_from_blob(f.read())
        assert [(c.shape, c.shared) for c in h.constants] == [(s, False) for _t, s in _layout.LAYOUT["encoder"]]


def test_models_without_weights_list_no_constants():
    with models.open("add_mul", "cpu") as h:
        assert h.constants == []


# --- loading and updating by name ---------------------------------------------


def test_by_name_gives_the_same_outputs_as_the_blob(frames):
    with models.open("encoder", "cpu") as by_name, aotirt.AotiHandle(models.path("encoder", "cpu")) as by_blob:
        with open(models.weights("encoder"), "rb") as f:
            by_blob.update_constants_from_blob(f.read())
        np.testing.assert_array_equal(by_name.run([frames])[0].numpy(), by_blob.run([frames])[0].numpy())
        assert relative_error(by_name.run([frames])[0].numpy(), reference.encoder(frames)) < CPU_TOLERANCE


def test_update_by_name_changes_the_outputs(frames):
    weights, beta = zero_gamma()
    with models.open("encoder", "cpu") as h:
        h.update_constants(weights)
        np.testing.assert_array_equal(h.run([frames])[0].numpy(), np.broadcast_to(beta, (_layout.T, _layout.D)))
        h.update_constants(encoder_weights())
        assert relative_error(h.run([frames])[0].numpy(), reference.encoder(frames)) < CPU_TOLERANCE


def test_decoder_update_by_name_changes_its_token():
    weights, b2 = constant_b2_decoder()
    hidden = reference.encoder(np.zeros((_layout.T, _layout.F), np.float32)).astype(np.float32)
    with models.open("decoder", "cpu", weights=weights) as h:
        logits, token = h.run([hidden, np.array([3], np.int64)])
        np.testing.assert_array_equal(logits.numpy(), b2)
        assert int(token.numpy()[0]) == 517


def test_a_bare_handle_takes_its_first_weights_by_name(frames):
    with aotirt.AotiHandle(models.path("encoder", "cpu")) as h:
        with pytest.raises(aotirt.AotiError, match="weights not loaded"):
            h.run([frames])
        with pytest.raises(ValueError, match=r"1 constant\(s\) of the model are missing: 'beta'"):
            h.update_constants({k: v for k, v in encoder_weights().items() if k != "beta"})
        h.update_constants(encoder_weights())
        assert relative_error(h.run([frames])[0].numpy(), reference.encoder(frames)) < CPU_TOLERANCE


def test_swap_makes_the_second_buffer_active(frames):
    weights, beta = zero_gamma()
    rows = np.broadcast_to(beta, (_layout.T, _layout.D))
    with models.open("encoder", "cpu") as h:
        with pytest.raises(ValueError, match="second constant buffer holds no weights"):
            h.swap_constants()
        original = h.run([frames])[0].numpy()
        h.update_constants(weights, inactive=True)
        np.testing.assert_array_equal(h.run([frames])[0].numpy(), original)   # still the active weights
        h.swap_constants()
        np.testing.assert_array_equal(h.run([frames])[0].numpy(), rows)
        h.swap_constants()                                                    # and back
        np.testing.assert_array_equal(h.run([frames])[0].numpy(), original)


def test_a_bare_handle_cannot_swap_back_to_nothing(frames):
    with aotirt.AotiHandle(models.path("encoder", "cpu")) as h:
        h.update_constants(encoder_weights(), inactive=True)
        h.swap_constants()
        assert relative_error(h.run([frames])[0].numpy(), reference.encoder(frames)) < CPU_TOLERANCE
        with pytest.raises(ValueError, match="second constant buffer holds no weights"):
            h.swap_constants()


@pytest.mark.parametrize("change, fragments", [
    ({"lin_x": np.zeros(4, np.float32)}, ["'lin_x' is not a constant of the model", "lin_w"]),
    ({"lin_w": np.zeros((_layout.D, _layout.D), np.float64)}, ["'lin_w'", "float32, the new value is float64"]),
    ({"conv_b": np.zeros(4, np.float32)}, ["'conv_b'", "shape is [256], the new value's [4]"]),
])
def test_a_bad_update_names_the_constant_and_changes_nothing(frames, change, fragments):
    with models.open("encoder", "cpu") as h:
        before = h.run([frames])[0].numpy()
        for inactive in (False, True):
            with pytest.raises(ValueError) as e:
                h.update_constants(encoder_weights(**change), inactive=inactive)
            for fragment in fragments + ["nothing changed", "encoder_cpu.so"]:
                assert fragment in str(e.value)
        np.testing.assert_array_equal(h.run([frames])[0].numpy(), before)


def test_the_container_refuses_a_shape_the_table_cannot_know(frames):
    # Before any value is loaded only the bytes are known: lin_w flattened
    # passes that check, and the container itself refuses it.
    flat = encoder_weights()
    flat["lin_w"] = flat["lin_w"].reshape(-1)
    with aotirt.AotiHandle(models.path("encoder", "cpu")) as h:
        with pytest.raises(aotirt.AotiError, match=r"constant 'lin_w': it has shape \[65536\], the model's is "
                                                   r"\[256, 256\]"):
            h.update_constants(flat)
        with pytest.raises(aotirt.AotiError, match="weights not loaded"):
            h.run([frames])
        h.update_constants(encoder_weights())
        assert relative_error(h.run([frames])[0].numpy(), reference.encoder(frames)) < CPU_TOLERANCE


def test_weights_of_a_handle_load_another(frames):
    weights, beta = zero_gamma()
    with models.open("encoder", "cpu", weights=weights) as first:
        with aotirt.load(models.path("encoder", "cpu"), "cpu", share_weights_with=first) as second:
            np.testing.assert_array_equal(second.run([frames])[0].numpy(),
                                          np.broadcast_to(beta, (_layout.T, _layout.D)))


def test_a_blob_after_named_weights_replaces_them(frames):
    with models.open("encoder", "cpu", weights=zero_gamma()[0]) as h:
        with open(models.weights("encoder"), "rb") as f:
            h.update_constants_from_blob(f.read())
        assert relative_error(h.run([frames])[0].numpy(), reference.encoder(frames)) < CPU_TOLERANCE
        assert not any(c.shared for c in h.constants)        # the library's own again


# --- files ----------------------------------------------------------------------


def test_models_open_takes_a_safetensors_file(tmp_path, frames):
    weights, beta = zero_gamma()
    path = write_safetensors(tmp_path / "enc.safetensors", weights)
    with models.open("encoder", "cpu", weights=path) as h:
        np.testing.assert_array_equal(h.run([frames])[0].numpy(), np.broadcast_to(beta, (_layout.T, _layout.D)))


def test_errors_name_the_safetensors_file(tmp_path):
    path = write_safetensors(tmp_path / "bad.safetensors", encoder_weights(conv_b=np.zeros(4, np.float32)))
    with models.open("encoder", "cpu") as h:
        with pytest.raises(ValueError) as e:
            h.update_constants(aotirt.load_weights(path))
    for fragment in ["'conv_b'", "the new value's [4]", "encoder_cpu.so", "nothing changed",
                     f"the new values came from {path}"]:
        assert fragment in str(e.value)
    with pytest.raises(ValueError, match=r"'conv_b'.*came from .*bad\.safetensors"):
        models.open("encoder", "cpu", weights=path)
    with pytest.raises(ValueError, match=r"'conv_b'.*came from .*bad\.safetensors"):
        aotirt.load(models.path("encoder", "cpu"), "cpu", weights=path)
    # The container's own refusal names it too.
    flat = write_safetensors(tmp_path / "flat.safetensors",
                             encoder_weights(lin_w=encoder_weights()["lin_w"].reshape(-1)))
    with aotirt.AotiHandle(models.path("encoder", "cpu")) as h:
        with pytest.raises(aotirt.AotiError, match=r"'lin_w': it has shape .*came from .*flat\.safetensors"):
            h.update_constants(aotirt.load_weights(flat))


def test_errors_name_a_blob_file_split_by_name(tmp_path, frames):
    # A blob of the right size always splits into the right shapes; what
    # can still fail is named with the file: here a mapping key.
    with pytest.raises(ValueError, match=r"'lin_x' is not a constant"):
        models.open("encoder", "cpu", weights=encoder_weights(lin_x=np.zeros(1, np.float32)))
    blob = tmp_path / "copy.weights"
    with open(models.weights("encoder"), "rb") as f:
        blob.write_bytes(f.read())
    with models.open("encoder", "cpu", weights=blob) as h:
        assert relative_error(h.run([frames])[0].numpy(), reference.encoder(frames)) < CPU_TOLERANCE


# --- GPU ----------------------------------------------------------------------------


@pytest.mark.gpu
def test_gpu_constants_are_loaded_by_name(frames):
    with models.open("encoder", 0) as h:
        assert [(c.name, c.shape, c.shared) for c in h.constants] == [
            (t, s, True) for t, s in _layout.LAYOUT["encoder"]]
        assert relative_error(h.run([frames])[0].numpy(), reference.encoder(frames)) < GPU_TOLERANCE


@pytest.mark.gpu
def test_gpu_update_by_name_and_swap_between_queued_runs(frames):
    weights, beta = zero_gamma()
    with models.open("encoder", 0) as h:
        (first,) = h.run([frames])                        # queued with the shipped weights
        h.update_constants(weights, inactive=True)
        (second,) = h.run([frames])                       # still the active ones
        h.swap_constants()
        (third,) = h.run([frames])                        # the new ones
        h.update_constants(encoder_weights())             # the active buffer, by name
        (fourth,) = h.run([frames])
        ref = reference.encoder(frames)
        assert relative_error(first.numpy(), ref) < GPU_TOLERANCE
        assert relative_error(second.numpy(), ref) < GPU_TOLERANCE
        np.testing.assert_array_equal(third.numpy(), np.broadcast_to(beta, (_layout.T, _layout.D)))
        assert relative_error(fourth.numpy(), ref) < GPU_TOLERANCE


@pytest.mark.gpu
def test_gpu_shared_weights_from_a_safetensors_file(tmp_path, frames):
    weights, beta = zero_gamma()
    shared = aotirt.load_weights(write_safetensors(tmp_path / "enc.safetensors", weights), device=0)
    with models.open("encoder", 0, weights=shared) as a, models.open("encoder", 0, weights=shared) as b:
        rows = np.broadcast_to(beta, (_layout.T, _layout.D))
        np.testing.assert_array_equal(a.run([frames])[0].numpy(), rows)
        np.testing.assert_array_equal(b.run([frames])[0].numpy(), rows)
        assert all(c.shared for c in a.constants)


@pytest.mark.gpu
def test_gpu_graphs_read_the_new_weights():
    weights, b2 = constant_b2_decoder()
    hidden = aotirt.asarray(reference.encoder(np.zeros((_layout.T, _layout.F), np.float32)).astype(np.float32),
                            device=0)
    token = np.array([3], np.int64)
    with models.open("decoder", 0, graphs=True) as h:
        for _ in range(4):                                # eager runs, then a capture and a replay
            h.run([hidden, token])
        assert h.graph_stats["captures"] == 1, h.graph_stats
        h.update_constants(weights)                       # by name: the graph read the old tensors
        for _ in range(4):
            logits, after = h.run([hidden, token])
            np.testing.assert_array_equal(logits.numpy(), b2)
            assert int(after.numpy()[0]) == 517
        assert h.graph_stats["invalidations"] == 1, h.graph_stats


@pytest.mark.gpu
def test_gpu_errors_name_the_safetensors_file(tmp_path):
    path = write_safetensors(tmp_path / "bad.safetensors", encoder_weights(conv_b=np.zeros(4, np.float32)))
    with models.open("encoder", 0) as h:
        for device in (None, 0):
            with pytest.raises(ValueError, match=r"'conv_b'.*came from .*bad\.safetensors"):
                h.update_constants(aotirt.load_weights(path, device=device))
