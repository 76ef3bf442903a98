"""Constants by name on real AOTInductor libraries (issue #17): listed as the
module's state_dict, replaced by name (a safetensors file, numpy arrays),
double-buffered and swapped, shared between handles; every bad update
refused naming the constant, with nothing changed.

The libraries are compiled by tests/aoti/build_weights.py with the torch of
another interpreter (this one never imports torch): `embedded` keeps the
weights in the library (torch's default), `blob` beside it in a weights
blob, `large` (CUDA) is `blob` with 27 MiB of weights. References are torch
eager's outputs for the two modules (expected_a.npy, expected_b.npy) and a
numpy forward pass for mixes of their weights.
"""

import json
import math
import os
import subprocess

import numpy as np
import pytest

import aotirt
from support.helpers import REPO, cli, device_free_bytes
from zoo_index import torch_python

CACHE = os.environ.get("AOTIRT_WEIGHTS_CACHE", os.path.join(REPO, ".cache", "aoti-weights"))
BUILD = os.path.join(REPO, "tests", "aoti", "build_weights.py")
_roots = {}


def folder(variant, device):
    if device not in _roots:
        python = torch_python()
        if python is None:
            pytest.skip("no Python with torch to compile AOTInductor models "
                        "(set AOTIRT_TORCH_PYTHON, or run make torch-venv)")
        proc = subprocess.run([python, BUILD, "--device", device, "--cache", CACHE],
                              capture_output=True, text=True, timeout=3000)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("cache: ")]
        if not lines:
            pytest.fail(f"build_weights.py failed for {device}:\n{proc.stdout}\n{proc.stderr[-4000:]}")
        _roots[device] = lines[-1].split()[1]
    return os.path.join(_roots[device], variant)


class Model:
    def __init__(self, variant, device):
        self.dir = folder(variant, device)
        self.device = device
        self.pt2 = os.path.join(self.dir, "model.pt2")
        with open(os.path.join(self.dir, "meta.json")) as f:
            self.meta = json.load(f)
        self.x = np.load(os.path.join(self.dir, "input.npy"))
        self.expected = {k: np.load(os.path.join(self.dir, f"expected_{k}.npy")) for k in "ab"}
        self.state = {k: os.path.join(self.dir, f"state_{k}.safetensors") for k in "ab"}

    def load(self, **kwargs):
        return aotirt.load(self.pt2, "cpu" if self.device == "cpu" else 0, **kwargs)

    def arrays(self, which):
        return dict(aotirt.load_weights(self.state[which]))

    def given(self, handle, which):
        """`which`'s arrays for the constants the library has. torch folds
        what it can compute at compile time into the code (here fc2.bias +
        shift, inlined into a kernel): those stay the compiled module's."""
        names = {c.fqn for c in handle.constants if not c.folded}
        return {k: v for k, v in self.arrays(which).items() if k in names}

    def expected_after(self, handle, which):
        """The outputs once `which`'s weights replaced every constant the library has."""
        if len(self.given(handle, which)) == len(self.meta["state_dict"]):
            return self.expected[which]
        return forward(dict(self.arrays("a"), **self.given(handle, which)), self.x)


def forward(state, x):
    """The module's forward pass in float64 numpy (torch's exact GELU)."""
    h = x.astype(np.float64) @ state["fc1.weight"].T.astype(np.float64) + state["fc1.bias"]
    mean, var = h.mean(-1, keepdims=True), h.var(-1, keepdims=True)
    h = (h - mean) / np.sqrt(var + 1e-5) * state["norm.weight"] + state["norm.bias"]
    h = 0.5 * h * (1 + np.vectorize(math.erf)(h / math.sqrt(2))) + state["offset"]
    return h @ state["fc2.weight"].T.astype(np.float64) + state["fc2.bias"] + state["shift"]


def out(handle, x):
    (y,) = handle(x)
    return y.numpy()


def close(actual, expected):
    return np.allclose(actual, expected, rtol=1e-4, atol=1e-5)


VARIANTS = ["embedded", "blob"]
BUFFERS = ("offset", "shift")


@pytest.fixture(params=[(v, d) for d in ("cpu", "cuda") for v in VARIANTS],
                ids=lambda p: f"{p[0]}-{p[1]}")
def model(request):
    variant, device = request.param
    if device == "cuda":
        request.applymarker(pytest.mark.gpu)
        if aotirt.device_count() == 0:
            pytest.skip("needs a CUDA GPU")
    return Model(variant, device)


def test_constants_are_the_state_dict(model):
    with model.load() as h:
        constants = [c for c in h.constants if not c.folded]
        listed = {c.fqn: (c.dtype, list(c.shape), c.nbytes, c.kind) for c in constants}
        expected = {k: (v["dtype"], v["shape"], 4 * math.prod(v["shape"]), "buffer" if k in BUFFERS else "parameter")
                    for k, v in model.meta["state_dict"].items()}
        # torch's CPU libraries round each constant's size up to 64 bytes.
        align = (lambda n: -(-n // 64) * 64) if model.device == "cpu" else (lambda n: n)
        expected = {k: (d, s, align(n), kind) for k, (d, s, n, kind) in expected.items()}
        # Every weight matrix stays a constant; what torch folded into code is not listed.
        assert {"fc1.weight", "fc2.weight", "norm.weight"} <= set(listed)
        assert listed == {k: expected[k] for k in listed}
        assert all(c.name and not c.shared for c in constants)


def test_numpy_reference_is_the_module(model):
    assert close(forward(model.arrays("a"), model.x), model.expected["a"])
    assert close(forward(model.arrays("b"), model.x), model.expected["b"])


def test_update_by_fqn_gives_the_new_modules_outputs(model):
    with model.load() as h:
        assert close(out(h, model.x), model.expected["a"])
        h.update_constants(model.given(h, "b"))
        assert close(out(h, model.x), model.expected_after(h, "b"))
        assert all(c.shared for c in h.constants if not c.folded)


def test_a_state_dict_entry_folded_into_code_is_refused_by_name(model):
    with model.load() as h:
        folded_away = set(model.meta["state_dict"]) - {c.fqn for c in h.constants}
        if not folded_away:
            pytest.skip("torch kept every state_dict entry as a constant")
        with pytest.raises(ValueError) as e:
            h.update_constants(aotirt.load_weights(model.state["b"]))
        for name in folded_away:
            assert f"'{name}' is not a constant of the model" in str(e.value)
        assert "compile time" in str(e.value)
        assert close(out(h, model.x), model.expected["a"])


def test_update_by_library_name(model):
    with model.load() as h:
        by_fqn = {c.fqn: c.name for c in h.constants}
        h.update_constants({by_fqn[k]: v for k, v in model.given(h, "b").items()})
        assert close(out(h, model.x), model.expected_after(h, "b"))


def test_load_with_weights(model):
    with model.load() as probe:
        given, expected = model.given(probe, "b"), model.expected_after(probe, "b")
    with model.load(weights=given) as h:
        assert close(out(h, model.x), expected)
    if len(given) == len(model.meta["state_dict"]):
        with model.load(weights=model.state["b"]) as h:     # a .safetensors path
            assert close(out(h, model.x), model.expected["b"])


def test_a_buffer_left_out_keeps_its_value(model):
    with model.load() as h:
        b = model.given(h, "b")
        assert "offset" in b, "torch folded the buffer added to activations (tests/aoti/build_weights.py)"
        del b["offset"]
        h.update_constants(b)
        mixed = dict(model.arrays("a"), **b)
        assert close(out(h, model.x), forward(mixed, model.x))


def test_safetensors_round_trip(model, tmp_path):
    from safetensors.numpy import save_file

    path = str(tmp_path / "b.safetensors")
    save_file(model.arrays("b"), path)
    read = aotirt.load_weights(path)
    assert set(read) == set(model.meta["state_dict"])
    for k, v in model.arrays("b").items():
        np.testing.assert_array_equal(read[k], v)
    with model.load() as h:
        h.update_constants({k: v for k, v in read.items() if k in model.given(h, "b")})
        assert close(out(h, model.x), model.expected_after(h, "b"))


@pytest.mark.parametrize("change, fragments", [
    (lambda s: s.update({"fc9.weight": s["fc1.weight"]}), ["'fc9.weight' is not a constant of the model"]),
    (lambda s: s.update({"fc1.weight": s["fc1.weight"].astype(np.float64)}),
     ["'fc1.weight'", "the model's is float32, the new value is float64"]),
    (lambda s: s.update({"fc1.bias": s["fc1.bias"][:4]}), ["'fc1.bias'", "shape is [32], the new value's [4]"]),
    (lambda s: s.pop("norm.weight"), ["missing", "'norm.weight'"]),
])
def test_a_bad_update_names_the_constant_and_changes_nothing(model, change, fragments):
    with model.load() as h:
        b = model.given(h, "b")
        change(b)
        for inactive in (False, True):
            with pytest.raises(ValueError) as e:
                h.update_constants(b, inactive=inactive)
            for fragment in fragments + ["nothing changed", os.path.basename(h.path)]:
                assert fragment in str(e.value)
        assert close(out(h, model.x), model.expected["a"])
        with pytest.raises(ValueError, match="second constant buffer holds no weights"):
            h.swap_constants()


def test_swap_makes_the_second_buffer_active(model):
    with model.load() as h:
        h.update_constants(model.given(h, "b"), inactive=True)
        assert close(out(h, model.x), model.expected["a"])      # still the active weights
        h.swap_constants()
        assert close(out(h, model.x), model.expected_after(h, "b"))
        h.swap_constants()                                       # and back
        assert close(out(h, model.x), model.expected["a"])


def test_share_weights_with(model):
    with model.load() as probe:
        given, expected = model.given(probe, "b"), model.expected_after(probe, "b")
    with model.load(weights=given) as first, model.load(share_weights_with=first) as second:
        assert close(out(second, model.x), expected)
        assert close(out(first, model.x), expected)


def test_the_librarys_own_weights_cannot_be_shared(model):
    with model.load() as h:
        with pytest.raises(ValueError, match="the library's own"):
            _ = h.weights


def test_torch_save_files_are_refused(tmp_path):
    path = tmp_path / "model.pt"
    path.write_bytes(b"PK\x03\x04" + bytes(60))   # what torch.save writes: a zip
    with pytest.raises(ValueError, match="torch.save"):
        aotirt.load_weights(str(path))


def test_call_is_run(model):
    with model.load() as h:
        result = h(model.x)
        assert isinstance(result, tuple) and len(result) == 1
        np.testing.assert_array_equal(result[0].numpy(), h.run([model.x])[0].numpy())


def test_inspect_reads_the_package_without_opening_it(model):
    proc = cli("inspect", model.pt2, "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["device"] == model.device and report["missing_shims"] == []
    assert [i["name"] for i in report["inputs"]] and len(report["outputs"]) == 1
    listed = {c["fqn"]: c["shape"] for c in report["constants"] if not c["folded"]}
    with model.load() as h:       # what the opened library says: the same
        assert listed == {c.fqn: list(c.shape) for c in h.constants if not c.folded}
    assert listed == {k: model.meta["state_dict"][k]["shape"] for k in listed}
    text = cli("inspect", model.pt2)
    assert text.returncode == 0 and f"constants: {len(report['constants'])}," in text.stdout, text.stdout


# ---- the GPU only ---------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.reads_device_free_memory
def test_shared_weights_hold_one_copy():
    large = Model("large", "cuda")
    with large.load() as probe:
        names = set(large.given(probe, "b"))
        expected = large.expected_after(probe, "b")
    uploaded = aotirt.load_weights(large.state["b"], device=0)
    weights = aotirt.Weights({k: v for k, v in uploaded.items() if k in names}, device=0)
    nbytes = weights.nbytes
    assert nbytes > 20 * 2**20
    first = large.load(weights=weights)
    out(first, large.x)                      # lazy loading and first allocations out of the figure
    before = device_free_bytes()
    handles = [large.load(weights=weights) for _ in range(4)]
    for h in handles:
        assert close(out(h, large.x), expected)
    used = before - device_free_bytes()
    # Four more handles of one model: less than one copy of the weights (unshared, they would add four).
    assert used < nbytes, (used, nbytes)
    for h in handles + [first]:
        h.close()


@pytest.mark.gpu
def test_a_swap_between_queued_loops_orders_the_weights():
    model = Model("blob", "cuda")
    with model.load() as probe:
        a, b, expected_b = model.given(probe, "a"), model.given(probe, "b"), model.expected_after(probe, "b")
    with model.load(weights=a) as h:
        x = aotirt.asarray(model.x, device=0)
        h.update_constants(b, inactive=True)
        (before,), _ = h.loop([x], 32, collect=[0])          # queued, not waited for
        h.swap_constants()
        (after,), _ = h.loop([x], 32, collect=[0])
        before, after = before.numpy(), after.numpy()         # the only host wait
        assert all(close(step, model.expected["a"]) for step in before)
        assert all(close(step, expected_b) for step in after)


@pytest.mark.gpu
def test_update_and_swap_do_not_wait(tmp_path):
    from support.waits import count_waits, interposer_library

    model = Model("blob", "cuda")
    counts = count_waits(interposer_library(str(tmp_path)), setup=f"""
        import numpy as np, aotirt
        with aotirt.load({model.pt2!r}, 0) as probe:
            names = {{c.fqn for c in probe.constants if not c.folded}}
        a, b = ({{k: v for k, v in aotirt.load_weights(path).items() if k in names}}
                for path in ({model.state['a']!r}, {model.state['b']!r}))
        h = aotirt.load({model.pt2!r}, 0, weights=a)
        x = aotirt.asarray(np.load({os.path.join(model.dir, 'input.npy')!r}), device=0)
        h(x)[0].numpy()
    """, body="""
        h.update_constants(b, inactive=True)
        h(x)
        h.swap_constants()
        h.update_constants(b)
        y = h(x)[0].numpy()
    """)
    unexpected = {name: n for name, n in counts.items() if n and name != "cudaStreamSynchronize"}
    assert unexpected == {} and counts["cudaStreamSynchronize"] == 1, counts
