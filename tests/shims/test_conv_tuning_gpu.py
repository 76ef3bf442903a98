"""cuDNN tuning of CUDA convolutions (AOTIRT_CUDNN_TUNE=1 and wide,
cuda_src/shims/libs/cudnn_tuning.h), on the GPU, each in a fresh process
(the switch is read once): the first call measures every engine and the
next one that finds the measurements done keeps the heuristics' engine
unless another was faster by more than the 3% margin, recording the choice;
a second process builds the recorded engine (in the wide mode possibly a
configuration the heuristics do not list) and measures nothing; the
results are those of the heuristics' engine within the dtype's tolerance
(a depthwise convolution too, where the cold measurement chose engines 10x
slower); the alternatives (cuBLAS's GEMM for a 1x1; im2col and one
product for a patch embedding, a stem, a 1-D convolution and a small
channels-last one; channels-last
copies for other contiguous ones) are timed where offered and run right
when recorded; the wide mode measures more configurations than the list;
an engine the host takes milliseconds to queue is left out untimed; and
the host never waits for the measuring (the wait counter)."""

import os
import re

import pytest

from support.gpu_shim_tests import IMPORT_PATHS
from support.helpers import run_python
from support.waits import waits_when_tuned

pytestmark = pytest.mark.gpu

# What every program below starts with: its imports, and nhwc(shape, dtype),
# a random channels-last CUDA tensor drawn from the program's own `rng`.
PRELUDE = IMPORT_PATHS + """
import numpy as np
from support import conv_shims as t
from support.shims import dense, read, view
def nhwc(shape, dtype):
    n, c, h, w = shape
    return view(rng.standard_normal(n * c * h * w), shape, (h * w * c, 1, w * c, c), 0, "cuda:0", dtype)[0]
"""

# A resnet-style 3x3 convolution, channels-last as Inductor hands it, in
# float32 (TF32 allowed, torch's default) and float16, and a mobilenet-style
# depthwise one in float16; each result read back (the copy routine's
# wait), so the second call finds the measurements done.
PROGRAM = PRELUDE + """
rng = np.random.default_rng(0)
for name, dtype, x_shape, w_shape, groups in (("float32", "float32", (2, 64, 28, 28), (64, 64, 3, 3), 1),
                                              ("float16", "float16", (2, 64, 28, 28), (64, 64, 3, 3), 1),
                                              ("depthwise", "float16", (2, 32, 28, 28), (32, 1, 3, 3), 32)):
    x, w = nhwc(x_shape, dtype), nhwc(w_shape, dtype)
    for call in range(3):
        status, out = t.conv(x, w, padding=(1,), groups=groups)
        assert status == 0
        np.save(f"{OUT}/{name}-{call}.npy", read(out))
print("CALLS OK")
"""


def run(tmp_path, name, program=PROGRAM, **env):
    """Runs `program` (each call's result saved in {OUT}, the folder `name`
    made under tmp_path) with the debug log on; returns the folder and the
    log's cuDNN lines."""
    out = tmp_path / name
    out.mkdir()
    proc = run_python(program.replace("{OUT}", str(out)), env={"AOTIRT_LOG": "debug", **env})
    assert proc.returncode == 0 and "CALLS OK" in proc.stdout, proc.stdout + proc.stderr
    return out, [ln for ln in proc.stderr.splitlines() if "cuDNN" in ln]


def relative_error(a, b):
    import numpy as np

    return float(np.linalg.norm(a.astype(np.float64) - b) / np.linalg.norm(b))


def record_everywhere(cache, choice):
    """Makes `choice` the record of every key in the choices' file under
    `cache`; returns how many keys it holds."""
    (path,) = [cache / name for name in os.listdir(cache)]
    lines = path.read_text().splitlines()
    path.write_text("".join(line.split("\t")[0] + f"\t{choice}\n" for line in lines))
    return len(lines)


def assert_results_match(plain, folder, bounds):
    """Each call's result in `folder` within its bound (relative) of the
    untuned run's first, in `plain`; `bounds` is {name: bound}."""
    import numpy as np

    for name, bound in bounds.items():
        want = np.load(plain / f"{name}-0.npy").astype(np.float64)
        for call in range(3):
            assert relative_error(np.load(folder / f"{name}-{call}.npy"), want) < bound, (folder.name, name, call)


MEASURED = re.compile(r"cuDNN tuning measured (\d+) engines for a (.+?): (kept|chose) ")
ACCEPTED = re.compile(r"configurations and (\d+) of \d+ one knob away that cuDNN accepted")


@pytest.mark.parametrize("mode, file_name", [("1", r"cudnn-tuned-v2-sm\d+-cudnn\d+\.tsv"),
                                             ("wide", r"cudnn-tuned-wide-v2-sm\d+-cudnn\d+\.tsv")])
def test_measured_then_recorded_then_built_from_the_record(tmp_path, mode, file_name):
    cache = str(tmp_path / "cache")
    plain, plain_log = run(tmp_path, "plain")
    assert not any("tuning" in ln for ln in plain_log), plain_log

    tuned, log = run(tmp_path, "tuned", AOTIRT_CUDNN_TUNE=mode, AOTIRT_CACHE=cache)
    measured = [ln for ln in log if "cuDNN tuning measured" in ln]
    nothing = [ln for ln in log if "nothing measured" in ln]
    # One per key, on its second call (none for a key with a single engine).
    assert len(measured) + len(nothing) <= 3, "\n".join(log)
    assert len(measured) >= 2, "\n".join(log)   # the dense 3x3 keys have many engines
    for line in measured:
        assert int(re.search(r"measured (\d+) engines", line).group(1)) >= 2, line
        # The margin rule as the log states it: the heuristics' engine kept,
        # or one faster than it by more than 3%.
        if "did not run" in line:      # the heuristics' engine failed to run: the fastest, no margin
            continue
        got = re.search(r": (kept|chose) (.+?) at ([\d.]+) us a run \(the heuristics' (.+?) at ([\d.]+) us\)$", line)
        assert got, line
        verb, engine, us, heuristic, heuristic_us = got.groups()
        if verb == "kept":
            assert engine == heuristic, line
        else:
            assert engine != heuristic and float(us) <= 0.97 * float(heuristic_us) + 1e-5, line
    files = os.listdir(cache)
    assert len(files) == 1 and re.fullmatch(file_name, files[0]), files
    assert len(open(os.path.join(cache, files[0])).read().splitlines()) == len(measured)

    again, log = run(tmp_path, "again", AOTIRT_CUDNN_TUNE=mode, AOTIRT_CACHE=cache)
    assert not any("tuning measured" in ln for ln in log), "\n".join(log)
    assert sum("tuned, recorded in" in ln for ln in log) == len(measured), "\n".join(log)

    for folder in (tuned, again):
        assert_results_match(plain, folder, {"float32": 5e-3, "float16": 2e-2, "depthwise": 2e-2})


def test_the_wide_mode_measures_configurations_the_heuristics_do_not_list(tmp_path):
    """Per key, the wide mode measures at least the list's engines, and more
    for some key: the configurations one knob away are built and timed."""
    counts, accepted = {}, {}
    for mode in ("1", "wide"):
        _out, log = run(tmp_path, f"mode-{mode}", AOTIRT_CUDNN_TUNE=mode, AOTIRT_CACHE=str(tmp_path / f"cache-{mode}"))
        counts[mode] = {m.group(2): int(m.group(1)) for m in map(MEASURED.search, log) if m}
        # The plan's line: "... and A of T one knob away that cuDNN accepted" (wide only).
        accepted[mode] = [int(m.group(1)) for m in map(ACCEPTED.search, log) if m]
    assert not accepted["1"] and len(accepted["wide"]) == 3 and max(accepted["wide"]) > 0, accepted
    # (A key with fewer than two engines in the list measures nothing there,
    # and may have neighbours to measure in the wide mode.)
    assert counts["1"] and set(counts["1"]) <= set(counts["wide"]), counts
    assert all(counts["wide"][key] >= n for key, n in counts["1"].items()), counts
    assert any(n > counts["1"].get(key, 0) for key, n in counts["wide"].items()), counts


@pytest.mark.parametrize("mode", ["1", "wide"])
def test_tuning_never_waits(tmp_path, monkeypatch, mode):
    waits = waits_when_tuned(tmp_path, monkeypatch, mode, setup=f"""
        {IMPORT_PATHS}
        import numpy as np
        from support import conv_shims as t
        from support.shims import dense, read, view
        rng = np.random.default_rng(0)
        # Contiguous operands (the channels-last copies are measured beside
        # cuDNN's engines), and a channels-last stem (so is im2col).
        x, _ = dense(rng.standard_normal((2, 16, 14, 14)), "cuda:0", "float16")
        w, _ = dense(rng.standard_normal((32, 16, 3, 3)), "cuda:0", "float16")
        stem_x, _ = view(rng.standard_normal(2 * 3 * 32 * 32), (2, 3, 32, 32), (3072, 1, 96, 3), 0, "cuda:0",
                         "float16")
        stem_w, _ = view(rng.standard_normal(8 * 3 * 3 * 3), (8, 3, 3, 3), (27, 1, 9, 3), 0, "cuda:0", "float16")
    """, body="""
        for _ in range(20):          # the first measures, a later one chooses
            status, out = t.conv(x, w, padding=(1,))
            assert status == 0
            status, stem = t.conv(stem_x, stem_w, stride=(2,), padding=(1,))
            assert status == 0
        read(out)
        read(stem)
    """)
    assert waits == {"cudaStreamSynchronize": 2}, waits  # the two reads


# Calls queued back to back, a bias on each (a launch of aotirt's own
# kernel, checked with cudaGetLastError): the first queues a round of the
# measurement behind a hold of the GPU, so the next ones poll it while
# it still runs and get "not ready", which CUDA keeps as its last error
# unless it is cleared; every call must succeed, with the untuned results.
# The reads let each round finish, so that the last call chooses.
POLLED = PRELUDE + """
rng = np.random.default_rng(2)
x, w = nhwc((2, 64, 28, 28), "float32"), nhwc((64, 64, 3, 3), "float32")
b = dense(rng.standard_normal(64), "cuda:0", "float32")[0]
def calls(n):
    outs = []
    for call in range(n):
        status, out = t.conv(x, w, b, padding=(1,))
        assert status == 0, (call, status)
        outs.append(out)
    return outs
outs = calls(10)       # the first round queued, then polled unfinished
for call in range(3):
    np.save(f"{OUT}/bias-{call}.npy", read(outs[call]))
read(calls(3)[-1])     # the first round done: the final round queued, then polled unfinished
read(calls(1)[0])      # the final round done: the choice
print("CALLS OK")
"""


def test_calls_that_poll_an_unfinished_measurement_still_launch_their_kernels(tmp_path):
    plain, _ = run(tmp_path, "plain", program=POLLED)
    tuned, log = run(tmp_path, "tuned", program=POLLED, AOTIRT_CUDNN_TUNE="1",
                     AOTIRT_CACHE=str(tmp_path / "cache"))
    assert any("cuDNN tuning measured" in ln for ln in log), "\n".join(log)  # the last call chose
    assert_results_match(plain, tuned, {"bias": 5e-3})


# mobilenet_v2's widest depthwise convolution, float32 (TF32), where cuDNN
# 9.19 lists engines that launch per group: on an H100 they took the host
# 3 to 50 ms to queue one run (bench/runs/s21-h100-tuning.md).
DEPTHWISE = PRELUDE + """
rng = np.random.default_rng(3)
x, w = nhwc((2, 960, 7, 7), "float32"), nhwc((960, 1, 3, 3), "float32")
for call in range(3):
    status, out = t.conv(x, w, padding=(1,), groups=960)
    assert status == 0
    np.save(f"{OUT}/depthwise-{call}.npy", read(out))
print("CALLS OK")
"""
HOST_BOUND = re.compile(r"leaves out engine (\S+) for a .*? us to queue, over the [\d.]+ us bound")


def test_engines_that_take_the_host_milliseconds_a_run_are_left_out_untimed(tmp_path):
    plain, _ = run(tmp_path, "plain", program=DEPTHWISE)
    tuned, log = run(tmp_path, "tuned", program=DEPTHWISE, AOTIRT_CUDNN_TUNE="1",
                     AOTIRT_CACHE=str(tmp_path / "cache"))
    left_out = {m.group(1) for ln in log for m in [HOST_BOUND.search(ln)] if m}
    assert left_out, "no engine over the host bound:\n" + "\n".join(log)
    timed = " ".join(ln for ln in log if "us to queue" in ln and "hold" in ln)
    assert not any(f"runs of {engine} " in timed for engine in left_out), timed
    assert any(MEASURED.search(ln) for ln in log), "\n".join(log)  # the others measured, a choice made
    assert_results_match(plain, tuned, {"depthwise": 5e-3})


# 1x1 convolutions, channels-last, that are one matrix product each
# (conv_layout::as_matmul): mobilenet_v2's shapes in float32 (TF32) and
# float16, and a bias; then a strided 1x1 one, which is not.
POINTWISE = PRELUDE + """
rng = np.random.default_rng(1)
for name, dtype, x_shape, w_shape, stride, bias in (
        ("f32", "float32", (2, 24, 56, 56), (144, 24, 1, 1), 1, False),
        ("f16", "float16", (2, 576, 14, 14), (96, 576, 1, 1), 1, False),
        ("bias", "float32", (2, 96, 14, 14), (576, 96, 1, 1), 1, True),
        ("strided", "float32", (2, 64, 56, 56), (128, 64, 1, 1), 2, False)):
    x, w = nhwc(x_shape, dtype), nhwc(w_shape, dtype)
    b = dense(rng.standard_normal(w_shape[0]), "cuda:0", dtype)[0] if bias else None
    for call in range(3):
        status, out = t.conv(x, w, b, stride=(stride,))
        assert status == 0
        np.save(f"{OUT}/{name}-{call}.npy", read(out))
print("CALLS OK")
"""


def test_a_1x1_convolution_times_cublas_beside_cudnn_and_a_recorded_gemm_runs_right(tmp_path):
    """Tuned, each 1x1 stride-1 convolution times cuBLAS's GEMM with cuDNN's
    engines (the strided one does not); a record naming the GEMM makes the
    next process run it, with the heuristics' engine's results."""
    plain, _ = run(tmp_path, program=POINTWISE, name="plain")
    cache = tmp_path / "cache"
    _tuned, log = run(tmp_path, program=POINTWISE, name="tuned", AOTIRT_CUDNN_TUNE="1", AOTIRT_CACHE=str(cache))
    timed = [ln for ln in log if "cuDNN tuning timed cublas_gemm" in ln]
    assert len(timed) == 3, "\n".join(log)                       # f32, f16, bias: not the strided one
    assert not any("leaves out engine cublas_gemm" in ln for ln in log), "\n".join(log)
    assert not any("cublas_gemm" in ln and "stride [2, 2]" in ln for ln in log), "\n".join(log)

    # Every record the GEMM: the 1x1 stride-1 keys then run it from the start;
    # the strided key, which never offers it, measures again.
    record_everywhere(cache, "cublas_gemm")
    gemm, log = run(tmp_path, program=POINTWISE, name="gemm", AOTIRT_CUDNN_TUNE="1", AOTIRT_CACHE=str(cache))
    assert sum("cublas_gemm (tuned, recorded in" in ln for ln in log) == 3, "\n".join(log)
    assert not any("cuDNN tuning timed" in ln for ln in log if "stride [1, 1]" in ln), "\n".join(log)
    assert_results_match(plain, gemm, {"f32": 5e-3, "f16": 2e-2, "bias": 5e-3, "strided": 5e-3})


# Patch embeddings (kernel = stride, unpadded: conv_alternatives.cpp offers
# them im2col): ViT-B/16's and ConvNeXt's stems channels-last in float32
# (TF32), one on contiguous float16 operands with a bias whose last rows
# and columns are past the last whole patch; and a padded one of eight
# channels on contiguous operands, which is neither a patch embedding nor a
# stem (channels-last, its small window matrix would be offered im2col:
# test_a_small_channels_last_convolution_times_im2col...).
PATCHES = PRELUDE + """
rng = np.random.default_rng(4)
def contiguous(shape, dtype):
    return dense(rng.standard_normal(shape), "cuda:0", dtype)[0]
for name, dtype, layout, x_shape, w_shape, bias, stride, padding in (
        ("vit", "float32", nhwc, (2, 3, 64, 64), (768, 3, 16, 16), False, 16, 0),
        ("contiguous", "float16", contiguous, (2, 3, 36, 40), (64, 3, 8, 8), True, 8, 0),
        ("convnext", "float32", nhwc, (2, 3, 64, 64), (96, 3, 4, 4), False, 4, 0),
        ("padded", "float32", contiguous, (2, 8, 64, 64), (96, 8, 4, 4), False, 4, 1)):
    x, w = layout(x_shape, dtype), layout(w_shape, dtype)
    b = dense(rng.standard_normal(w_shape[0]), "cuda:0", dtype)[0] if bias else None
    for call in range(3):
        status, out = t.conv(x, w, b, stride=(stride,), padding=(padding,))
        assert status == 0
        np.save(f"{OUT}/{name}-{call}.npy", read(out))
print("CALLS OK")
"""
PATCH_INPUTS = ("input [2, 3, 64, 64] strides [12288, 1, 192, 3], weight [768,", "input [2, 3, 36, 40]",
                "input [2, 3, 64, 64] strides [12288, 1, 192, 3], weight [96, 3, 4, 4] strides [48, 1, 12, 3], "
                "output [2, 96, 16, 16]")


def test_a_patch_embedding_times_im2col_and_one_product_and_a_recorded_one_runs_right(tmp_path):
    """Tuned, each convolution whose kernel is its stride, unpadded, also
    times its patches gathered by one copy and one cuBLAS product (the
    padded one does not); a record naming it makes the next process run it,
    with the heuristics' engine's results, on both layouts, with a bias."""
    plain, _ = run(tmp_path, program=PATCHES, name="plain")
    cache = tmp_path / "cache"
    _tuned, log = run(tmp_path, program=PATCHES, name="tuned", AOTIRT_CUDNN_TUNE="1", AOTIRT_CACHE=str(cache))
    timed = [ln for ln in log if "cuDNN tuning timed cublas_im2col" in ln]
    assert len(timed) == 3 and all(any(key in ln for ln in timed) for key in PATCH_INPUTS), "\n".join(log)
    assert not any("cublas_im2col" in ln and ("leaves out" in ln or "padding [1, 1]" in ln) for ln in log), \
        "\n".join(log)

    # Every record im2col: the three then run it from the start; the padded
    # key, which never offers it, measures again.
    record_everywhere(cache, "cublas_im2col")
    patches, log = run(tmp_path, program=PATCHES, name="patches", AOTIRT_CUDNN_TUNE="1", AOTIRT_CACHE=str(cache))
    assert sum("cublas_im2col (tuned, recorded in" in ln for ln in log) == 3, "\n".join(log)
    assert not any("cuDNN tuning timed" in ln for ln in log if "padding [0, 0]" in ln), "\n".join(log)
    assert_results_match(plain, patches, {"vit": 5e-3, "contiguous": 2e-2, "convnext": 5e-3, "padded": 5e-3})


# Stems of few input channels (conv_alternatives.cpp offers them im2col):
# resnet's in float32 (TF32) and mobilenet's in float16, channels-last as
# Inductor hands them, both padded and strided, and a raw waveform's first
# layer (one channel, 1-D), whose operands stay contiguous.
STEMS = PRELUDE + """
rng = np.random.default_rng(2)
for name, dtype, x, w, stride, padding in (
        ("resnet", "float32", nhwc((2, 3, 224, 224), "float32"), nhwc((64, 3, 7, 7), "float32"), 2, 3),
        ("mobilenet", "float16", nhwc((2, 3, 64, 64), "float16"), nhwc((32, 3, 3, 3), "float16"), 2, 1),
        ("waveform", "float32", dense(rng.standard_normal((1, 1, 16000)), "cuda:0", "float32")[0],
         dense(rng.standard_normal((512, 1, 10)), "cuda:0", "float32")[0], 5, 0)):
    for call in range(3):
        status, out = t.conv(x, w, stride=(stride,), padding=(padding,))
        assert status == 0
        np.save(f"{OUT}/{name}-{call}.npy", read(out))
print("CALLS OK")
"""
STEM_INPUTS = ("input [2, 3, 224, 224]", "input [2, 3, 64, 64]", "input [1, 1, 1, 16000]")


def test_a_stem_times_im2col_and_a_recorded_one_runs_right(tmp_path):
    """Tuned, each convolution of few input channels also times im2col and
    one product; a record naming it makes the next process run it (the
    input padded into scratch and gathered every call), with the
    heuristics' engine's results."""
    plain, _ = run(tmp_path, program=STEMS, name="plain")
    cache = tmp_path / "cache"
    _tuned, log = run(tmp_path, program=STEMS, name="tuned", AOTIRT_CUDNN_TUNE="1", AOTIRT_CACHE=str(cache))
    timed = [ln for ln in log if "cuDNN tuning timed cublas_im2col" in ln]
    assert sorted(stem for ln in timed for stem in STEM_INPUTS if stem in ln) == sorted(STEM_INPUTS), "\n".join(log)
    assert len(timed) == 3 and not any("cublas_im2col" in ln and "leaves out" in ln for ln in log), "\n".join(log)

    assert record_everywhere(cache, "cublas_im2col") == 3
    im2col, log = run(tmp_path, program=STEMS, name="im2col", AOTIRT_CUDNN_TUNE="1", AOTIRT_CACHE=str(cache))
    assert sum("cublas_im2col (tuned, recorded in" in ln for ln in log) == 3, "\n".join(log)
    assert not any("cuDNN tuning timed" in ln for ln in log), "\n".join(log)
    assert_results_match(plain, im2col, {"resnet": 5e-3, "mobilenet": 2e-2, "waveform": 5e-3})


# resnet18's 3x3 layers at batch 2, channels-last as Inductor hands them
# (conv_view.h's im2col_suits offers them im2col: their window matrices are
# small), in float32 (TF32, a bias) and bfloat16, one strided; and one at
# batch 32, whose window matrix (231 MB) is past the most it offers.
SMALL_PRODUCTS = PRELUDE + """
rng = np.random.default_rng(6)
for name, dtype, x_shape, w_shape, stride, bias in (
        ("layer4", "float32", (2, 512, 7, 7), (512, 512, 3, 3), 1, True),
        ("layer3", "bfloat16", (2, 128, 28, 28), (256, 128, 3, 3), 2, False),
        ("batch32", "float32", (32, 64, 56, 56), (64, 64, 3, 3), 1, False)):
    x, w = nhwc(x_shape, dtype), nhwc(w_shape, dtype)
    b = dense(rng.standard_normal(w_shape[0]), "cuda:0", dtype)[0] if bias else None
    for call in range(3):
        status, out = t.conv(x, w, b, stride=(stride,), padding=(1,))
        assert status == 0
        np.save(f"{OUT}/{name}-{call}.npy", read(out))
print("CALLS OK")
"""
SMALL_INPUTS = ("input [2, 512, 7, 7]", "input [2, 128, 28, 28]")


def test_a_small_channels_last_convolution_times_im2col_and_a_recorded_one_runs_right(tmp_path):
    """Tuned, each channels-last convolution whose window matrix is small
    also times im2col and one product (the batch-32 one does not); a record
    naming it makes the next process run it (padded, strided, with a bias),
    with the heuristics' engine's results."""
    plain, _ = run(tmp_path, program=SMALL_PRODUCTS, name="plain")
    cache = tmp_path / "cache"
    _tuned, log = run(tmp_path, program=SMALL_PRODUCTS, name="tuned", AOTIRT_CUDNN_TUNE="1",
                      AOTIRT_CACHE=str(cache))
    timed = [ln for ln in log if "cuDNN tuning timed cublas_im2col" in ln]
    assert sorted(key for ln in timed for key in SMALL_INPUTS if key in ln) == sorted(SMALL_INPUTS), "\n".join(log)
    assert not any("cublas_im2col" in ln and "input [32, 64, 56, 56]" in ln for ln in log), "\n".join(log)

    # Every record im2col: the two small keys then run it from the start;
    # the batch-32 key, which never offers it, measures again.
    assert record_everywhere(cache, "cublas_im2col") == 3
    im2col, log = run(tmp_path, program=SMALL_PRODUCTS, name="im2col", AOTIRT_CUDNN_TUNE="1",
                      AOTIRT_CACHE=str(cache))
    assert sum("cublas_im2col (tuned, recorded in" in ln for ln in log) == 2, "\n".join(log)
    assert not any("cuDNN tuning timed" in ln for ln in log if "input [2, " in ln), "\n".join(log)
    assert_results_match(plain, im2col, {"layer4": 5e-3, "layer3": 2e-2, "batch32": 5e-3})


# Whisper's front end: 1-D convolutions on contiguous operands, as Inductor
# leaves them, padded, the second strided, in float32 (TF32) and float16
# (conv_alternatives.cpp offers them im2col), batch 2 so that the output
# takes a product per image.
FRONT_END = PRELUDE + """
rng = np.random.default_rng(3)
for name, dtype, x_shape, w_shape, stride in (("conv1", "float32", (2, 80, 3000), (384, 80, 3), 1),
                                              ("conv2", "float16", (2, 384, 3000), (384, 384, 3), 2)):
    x = dense(rng.standard_normal(x_shape), "cuda:0", dtype)[0]
    w = dense(rng.standard_normal(w_shape) / np.sqrt(w_shape[1] * 3), "cuda:0", dtype)[0]
    for call in range(3):
        status, out = t.conv(x, w, stride=(stride,), padding=(1,))
        assert status == 0
        np.save(f"{OUT}/{name}-{call}.npy", read(out))
print("CALLS OK")
"""


def test_a_1d_convolution_times_im2col_and_a_recorded_one_runs_right(tmp_path):
    """Tuned, each contiguous 1-D convolution also times im2col (its input
    padded into scratch, its windows gathered, one product per image); a
    record naming it makes the next process run it, with the heuristics'
    engine's results."""
    plain, _ = run(tmp_path, program=FRONT_END, name="plain")
    cache = tmp_path / "cache"
    _tuned, log = run(tmp_path, program=FRONT_END, name="tuned", AOTIRT_CUDNN_TUNE="1", AOTIRT_CACHE=str(cache))
    timed = [ln for ln in log if "cuDNN tuning timed cublas_im2col" in ln]
    assert len(timed) == 2 and not any("cublas_im2col" in ln and "leaves out" in ln for ln in log), "\n".join(log)

    assert record_everywhere(cache, "cublas_im2col") == 2
    im2col, log = run(tmp_path, program=FRONT_END, name="im2col", AOTIRT_CUDNN_TUNE="1", AOTIRT_CACHE=str(cache))
    assert sum("cublas_im2col (tuned, recorded in" in ln for ln in log) == 2, "\n".join(log)
    assert not any("cuDNN tuning timed" in ln for ln in log), "\n".join(log)
    assert_results_match(plain, im2col, {"conv1": 5e-3, "conv2": 2e-2})


# 2-D and 3-D convolutions on contiguous operands (conv_alternatives.h's
# channels-last route), in float32 (TF32) and float16.
CONTIGUOUS = PRELUDE + """
rng = np.random.default_rng(5)
for name, dtype, x_shape, w_shape in (("conv2d", "float32", (2, 64, 28, 28), (64, 64, 3, 3)),
                                      ("conv3d", "float16", (1, 16, 8, 12, 12), (32, 16, 3, 3, 3))):
    x = dense(rng.standard_normal(x_shape), "cuda:0", dtype)[0]
    w = dense(rng.standard_normal(w_shape) / np.sqrt(np.prod(w_shape[1:])), "cuda:0", dtype)[0]
    for call in range(3):
        status, out = t.conv(x, w, padding=(1,))
        assert status == 0
        np.save(f"{OUT}/{name}-{call}.npy", read(out))
print("CALLS OK")
"""


def test_a_contiguous_convolution_times_channels_last_copies_and_a_recorded_route_runs_right(tmp_path):
    """Tuned, each contiguous 2-D and 3-D convolution also times the same
    one on channels-last copies of its operands (its result copied back); a
    record naming it makes the next process run it, with the heuristics'
    engine's results."""
    plain, _ = run(tmp_path, program=CONTIGUOUS, name="plain")
    cache = tmp_path / "cache"
    _tuned, log = run(tmp_path, program=CONTIGUOUS, name="tuned", AOTIRT_CUDNN_TUNE="1", AOTIRT_CACHE=str(cache))
    timed = [ln for ln in log if "cuDNN tuning timed cudnn_channels_last" in ln]
    assert len(timed) == 2 and not any("cudnn_channels_last" in ln and "leaves out" in ln for ln in log), \
        "\n".join(log)

    assert record_everywhere(cache, "cudnn_channels_last") == 2
    route, log = run(tmp_path, program=CONTIGUOUS, name="route", AOTIRT_CUDNN_TUNE="1", AOTIRT_CACHE=str(cache))
    assert sum("cudnn_channels_last (tuned, recorded in" in ln for ln in log) == 2, "\n".join(log)
    assert not any("cuDNN tuning timed" in ln for ln in log), "\n".join(log)
    assert_results_match(plain, route, {"conv2d": 5e-3, "conv3d": 2e-2})
