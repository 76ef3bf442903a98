"""Issues 14 and 18's zoo: users' models (torchvision's CNNs and vision
transformers, BERT, GPT-2, Llama-, Gemma-, Qwen- and Mixtral-style decoders,
Whisper's encoder and decoder, convolutions, attention, and models written
to reach one op each: sampling, torch.cond, scatters, int4), compiled by torch with its
DEFAULT inductor configs plus link_libtorch=False (tests/aoti/build.py, in
torch processes), loaded and run by aotirt in this process, which never
imports torch.

Each model runs eagerly and as a replayed CUDA graph, and both must match
torch eager (zoo_check.EAGER_ONLY's models eagerly only: their capture must
be refused, saying why). Tolerances (relative error ‖out − ref‖ / ‖ref‖): float32 1e-3,
float16 and bfloat16 2e-2, integer and bool outputs exactly. For float32
models torch's own TF32 convolutions (on by default) move eager away from
full float32 by `tf32_drift` (build.py measures it); where twice that is
more than 1e-3, the bound is twice that. A failure says how far aotirt is
from eager, from full-float32 eager and from torch's own AOTI runner on the
same library, so that one log tells whose numerics moved.

A model that needs a shim aotirt lacks fails here (aotirt.load names the
missing functions): it never skips. The exceptions are zoo.py's
AWAITING_SHIMS, the functions a model is known to need that aotirt does not
implement yet: until aotirt has them, that model's test asserts that its
library lacks exactly those (and that aotirt.load refuses it naming them);
once it has them, the model runs here as any other.
"""

import os
import sys

import numpy as np
import pytest

import aotirt
from support.helpers import REPO
from support.waits import count_waits, interposer_library
from test_aoti_models import inputs_of, model_folder, output_array, to_float

sys.path.insert(0, os.path.join(REPO, "tests", "aoti"))
from zoo_check import EAGER_ONLY, TOLERANCE, bound, implemented_shims, missing_functions  # noqa: E402
from zoo_check import relative_error as _error  # noqa: E402
from zoo_index import awaiting_shims, zoo_names  # noqa: E402

AWAITING = {name: names for name, names in awaiting_shims().items() if not set(names) <= implemented_shims()}
# AOTIRT_ZOO_ONLY=a,b (scripts/gpu-check.sh's partial check): those models alone.
_ONLY = [name for name in os.environ.get("AOTIRT_ZOO_ONLY", "").split(",") if name]
_UNKNOWN = sorted(set(_ONLY) - set(zoo_names()))
if _UNKNOWN:
    raise ValueError(f"AOTIRT_ZOO_ONLY names no zoo model: {', '.join(_UNKNOWN)}")
ZOO = [name for name in zoo_names() if name not in AWAITING and (not _ONLY or name in _ONLY)]


def _reference(folder, stem, i, dtype):
    path = os.path.join(folder, f"{stem}{i}.npy")
    return to_float(np.load(path), dtype) if os.path.exists(path) else None


def check_outputs(name, how, outputs, folder, meta):
    """Every output of `outputs` against torch eager; AssertionError says by how much."""
    assert len(outputs) == len(meta["outputs"]), (name, how, len(outputs))
    for i, (out, dtype) in enumerate(zip(outputs, meta["outputs"])):
        label = f"{name} ({how}) output {i}"
        expected = np.load(os.path.join(folder, f"expected{i}.npy"))
        assert out.shape == expected.shape, (label, out.shape, expected.shape)
        # The layout torch's own runner gives with the same library (the
        # generated code's, as the shims' meta functions make it), else eager's.
        itemsize = np.dtype("uint16" if dtype == "bfloat16" else dtype).itemsize
        strides = tuple(s // itemsize for s in out.strides)
        want = tuple((meta.get("runner_strides") or meta["output_strides"])[i])
        assert strides == want, (f"{label}: strides {strides}, torch's runner {want}, eager "
                                 f"{tuple(meta['output_strides'][i])}")
        actual = output_array(out, dtype)
        if dtype not in TOLERANCE:
            np.testing.assert_array_equal(actual, expected, err_msg=label)
            continue
        actual, expected = to_float(actual, dtype), to_float(expected, dtype)
        drift = (meta.get("tf32_drift") or [0.0] * len(outputs))[i]
        limit = bound(meta, i)
        error = _error(actual, expected)
        finite = bool(np.all(np.isfinite(actual)))
        if finite and error < limit:
            continue
        detail = [f"{label}: relative error against torch eager {error:.3e}, bound {limit:.1e}"
                  + ("" if finite else f"; {int(np.sum(~np.isfinite(actual)))} values are not finite")]
        exact = _reference(folder, "expected_exact", i, dtype)
        if exact is not None:
            detail.append(f"against eager with TF32 off {_error(actual, exact):.3e} "
                          f"(eager's own TF32 drift {drift:.3e})")
        runner = _reference(folder, "runner", i, dtype)
        if runner is not None:
            detail.append(f"against torch's AOTI runner on the same library {_error(actual, runner):.3e} "
                          f"(that runner against eager {_error(runner, expected):.3e})")
        else:
            detail.append(f"torch's AOTI runner: {meta.get('torch_runner', 'not run')}")
        pytest.fail("; ".join(detail), pytrace=False)


def open_model(name):
    folder, meta = model_folder(name, "cuda")
    # Default configs: aoti_compile_and_package adds "aot_inductor.package" itself.
    configs = {k: v for k, v in meta["configs"].items() if k != "aot_inductor.package"}
    assert configs == {"aot_inductor.link_libtorch": False}, meta["configs"]
    try:
        handle = aotirt.load(os.path.join(folder, "model.pt2"))
    except aotirt.AotiError as error:
        pytest.fail(f"aotirt cannot load {name}: {error}", pytrace=False)
    return handle, folder, meta


@pytest.mark.gpu
@pytest.mark.parametrize("name", ZOO)
def test_zoo_model_matches_torch(name):
    handle, folder, meta = open_model(name)
    with handle:
        assert handle.num_inputs == len(meta["inputs"]) and handle.num_outputs == len(meta["outputs"])
        inputs = inputs_of(folder, meta, "cuda:0")
        check_outputs(name, "eager", handle.run(inputs), folder, meta)
        if name in EAGER_ONLY:
            # The capture is refused, saying why, and leaves the handle as it was.
            with pytest.raises(aotirt.AotiError, match="aoti_torch_item_bool"):
                handle.capture(inputs)
            check_outputs(name, "eager after the refused capture", handle.run(inputs), folder, meta)
            return
        with handle.capture(inputs) as graph:
            check_outputs(name, "graph, first launch", graph.outputs, folder, meta)
            handle.run(inputs)                      # an eager run between replays changes nothing
            check_outputs(name, "graph replay", graph.replay(), folder, meta)
        check_outputs(name, "eager after the graph", handle.run(inputs), folder, meta)


@pytest.mark.gpu
def test_zoo_models_awaiting_shims_lack_exactly_those():
    # One test for all of them (none left: nothing to check), so that no
    # parameter set is ever empty: an empty one would be a skip.
    for name, names in AWAITING.items():
        folder, _meta = model_folder(name, "cuda")
        package = os.path.join(folder, "model.pt2")
        assert missing_functions(package) == sorted(names), (name, names)
        with pytest.raises(aotirt.AotiError) as refused:
            aotirt.load(package)
        assert all(n in str(refused.value) for n in names), str(refused.value)


@pytest.fixture(scope="module")
def counter(tmp_path_factory):
    return interposer_library(str(tmp_path_factory.mktemp("interposer")))


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["resnet18", "sdpa_bf16", "llama_bf16"])
def test_zoo_runs_and_replays_wait_only_in_the_copies(counter, name):
    # A convolution model and two attention models (cuDNN convolution and
    # attention plans are built in the warm-up runs, never in a steady one):
    # 20 runs and 20 replays, each batch read back once, wait exactly twice.
    folder, meta = model_folder(name, "cuda")
    counts = count_waits(counter, setup=f"""
        import sys
        sys.path[:0] = [{os.path.join(REPO, 'tests', 'aoti')!r}, {os.path.join(REPO, 'tests')!r}]
        import aotirt
        from test_aoti_models import inputs_of, output_array
        meta = {meta!r}
        handle = aotirt.load({os.path.join(folder, 'model.pt2')!r})
        inputs = inputs_of({folder!r}, meta, "cuda:0")
        for _ in range(3):
            outputs = handle.run(inputs)
        graph = handle.capture(inputs)
        graph.replay()
        output_array(outputs[0], meta["outputs"][0])
    """, body="""
        for _ in range(20):
            outputs = handle.run(inputs)
        output_array(outputs[0], meta["outputs"][0])
        for _ in range(20):
            replayed = graph.replay()
        output_array(replayed[0], meta["outputs"][0])
    """)
    unexpected = {n: c for n, c in counts.items() if c and n != "cudaStreamSynchronize"}
    assert unexpected == {} and counts["cudaStreamSynchronize"] == 2, counts
