"""The random shims on the CPU (aoti_torch_cpu_{rand,randn,randint,
randint_low,randint_low_out}), through ctypes as a model calls them, and
inside a CPU handle (the _random_ops test model) with its own seed.

Philox4x32-10 is checked against its published known answers; the
distributions by their range and moments over many draws (tolerances many
standard errors wide, so a correct generator never fails them); seeds by
reproducibility. aotirt's values are not torch's (not required, not tested).
"""

import ctypes
import os
import subprocess
import sys

import numpy as np
import pytest

import aotirt
from aotirt._testing import tensor_handle
from support.helpers import run_host_check
from support.random_shims import call, draw, fill_out, seed
from support.shims import I64, H, Handle, _reinterpret, dense, last_error, layout, read, view

RANDOM_OPS_CPU = os.path.join(os.path.dirname(aotirt.__file__), "models", "_random_ops_cpu.so")
FLOATS = ["float32", "float64", "float16", "bfloat16"]


def test_philox_matches_the_published_known_answers(tmp_path):
    run_host_check(tmp_path, "philox_check.cpp", includes=("cuda_src",), timeout=60)


def test_32_bit_integer_draws_are_the_raw_philox_words():
    # Seed 0 is the key {0, 0}; the first draw reads counter 0: the first
    # known answer, one word per value when the range is 2**32.
    seed(0)
    values = read(draw("randint_low", [6], "int64", low=0, high=2**32))
    assert [int(v) for v in values[:4]] == [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]


@pytest.mark.parametrize("op", ["rand", "randn"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_a_seed_draws_the_same_numbers_again_and_the_next_draw_differs(op, dtype):
    seed(1234)
    first, second = read(draw(op, [3, 50], dtype)), read(draw(op, [3, 50], dtype))
    seed(1234)
    again = read(draw(op, [3, 50], dtype))
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, second)
    seed(1235)
    assert not np.array_equal(first, read(draw(op, [3, 50], dtype)))


@pytest.mark.parametrize("dtype", FLOATS)
def test_rand_is_uniform_in_zero_one(dtype):
    seed(5)
    h = draw("rand", [400, 500], dtype)
    assert layout(h) == ((400, 500), (500, 1), dtype, 0)
    u = read(h).ravel()
    assert u.min() >= 0.0 and u.max() < 1.0
    step = {"float32": 2.0**-24, "float64": 2.0**-53, "float16": 2.0**-11, "bfloat16": 2.0**-8}[dtype]
    np.testing.assert_array_equal(np.round(u / step), u / step)   # every value a multiple of 2^-digits
    assert abs(u.mean() - 0.5) < 5e-3 and abs(u.var() - 1 / 12) < 5e-3
    assert np.histogram(u, bins=10, range=(0, 1))[0].min() > 0.09 * u.size


@pytest.mark.parametrize("dtype", FLOATS)
def test_randn_is_standard_normal(dtype):
    seed(6)
    z = read(draw("randn", [400, 500], dtype)).ravel()
    assert np.isfinite(z).all()
    assert abs(z.mean()) < 0.01 and abs(z.var() - 1) < 0.02
    assert abs(np.mean(np.abs(z) < 1) - 0.6827) < 0.01   # the one-sigma mass
    assert abs(np.mean(z ** 3)) < 0.03 and abs(np.mean(z ** 4) - 3) < 0.1


def test_default_dtypes_are_torchs():
    assert layout(draw("rand", [2, 3]))[2] == "float32"
    assert layout(draw("randn", [4]))[2] == "float32"
    assert layout(draw("randint", [4], high=3))[2] == "int64"
    assert layout(draw("randint_low", [], low=0, high=3))[:3] == ((), (), "int64")


@pytest.mark.parametrize("dtype,low,high", [
    ("int64", -5, 7), ("int64", -2**62, 2**62), ("int64", 0, 2**63 - 1), ("int32", -2**31, 2**31 - 1),
    ("int16", -3, 3), ("int8", -128, 128), ("uint8", 0, 256), ("bool", 0, 2), ("float32", -10, 10),
    ("float64", 0, 1000), ("float16", -4, 4), ("bfloat16", 0, 3),
])
def test_randint_draws_integers_in_low_high(dtype, low, high):
    seed(7)
    v = read(draw("randint_low", [100000], dtype, low=low, high=high)).astype(np.float64)
    assert v.min() >= low and v.max() <= high - 1
    np.testing.assert_array_equal(v, np.round(v))
    span = float(high) - float(low)
    assert abs(v.mean() - (float(low) + (span - 1) / 2)) < 0.02 * span
    if span <= 256:
        assert set(np.unique(v)) == set(np.arange(low, high, dtype=np.float64))


def test_randint_low_out_fills_a_strided_out_in_logical_order():
    seed(8)
    want = read(draw("randint_low", [4, 6], "int64", low=0, high=1000))
    out, _ = view(np.full(60, -1, np.int64), (4, 6), (1, 10), 2)   # a transposed, offset view
    seed(8)
    assert fill_out(out, 0, 1000, [4, 6]) == 0, last_error()
    np.testing.assert_array_equal(read(out), want)


def test_inductors_seed_draw_fills_int64_seeds():
    seed(9)
    out, _ = dense(np.zeros(64, np.int64))
    assert fill_out(out, 0, 2**63 - 1, [64]) == 0, last_error()
    seeds = read(out)
    assert seeds.min() >= 0 and len(set(seeds.tolist())) == 64


def test_empty_shapes_draw_nothing():
    seed(10)
    empty = draw("rand", [0, 5])
    assert layout(empty)[0] == (0, 5)
    after = read(draw("rand", [4]))
    seed(10)
    np.testing.assert_array_equal(after, read(draw("rand", [4])))


@pytest.mark.parametrize("kwargs,message", [
    (dict(op="randint_low", size=[3], low=5, high=5), "expects 'from' to be less than 'to'"),
    (dict(op="randint_low", size=[3], dtype="int8", low=0, high=200), "to - 1 is out of bounds for int8"),
    (dict(op="randint_low", size=[3], dtype="uint8", low=-1, high=2), "from is out of bounds for uint8"),
    (dict(op="rand", size=[3], dtype="int64"), "floating dtypes only"),
    (dict(op="randn", size=[3], dtype="bool"), "floating dtypes only"),
    (dict(op="rand", size=[3], layout=1), "only the strided layout"),
    (dict(op="rand", size=[3], device_type=1), "given to the CPU shim"),
    (dict(op="rand", size=[-1]), "size"),
])
def test_bad_arguments_fail_with_torchs_reason(kwargs, message):
    status, handle = call(**kwargs)
    assert status != 0 and handle is None
    assert message in last_error()


def test_randint_low_out_checks_its_out():
    out, _ = dense(np.zeros((2, 3), np.int64))
    assert fill_out(out, 0, 10, [3, 2]) != 0
    assert "aotirt does not resize" in last_error()
    small, _ = dense(np.zeros(3, np.int8))
    assert fill_out(small, 0, 1000, [3]) != 0 and "out of bounds for int8" in last_error()
    frozen = aotirt.asarray(np.frombuffer(bytes(24), np.int64))
    ro = H()
    assert _reinterpret(tensor_handle(frozen), 1, (I64 * 1)(3), (I64 * 1)(1), 0, ctypes.byref(ro)) == 0
    assert fill_out(Handle(ro, keep=frozen), 0, 10, [3]) != 0 and "read-only" in last_error()


def test_a_cpu_handle_draws_from_its_own_seed():
    x = np.zeros((3, 40), np.float32)
    with aotirt.AotiHandle(RANDOM_OPS_CPU) as handle:
        assert handle.seed(77) == 77
        first = [t.numpy() for t in handle.run([x])]
        second = [t.numpy() for t in handle.run([x])]
        assert handle.seed(77) == 77
        again = [t.numpy() for t in handle.run([x])]
        for a, b in zip(first, again):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(first, second):
            assert not np.array_equal(a, b)
        u, n, i, seeds = first
        assert u.shape == n.shape == i.shape == (3, 40) and seeds.shape == (8,)
        assert u.dtype == np.float32 and i.dtype == np.int64 and seeds.dtype == np.int64
        assert 0 <= u.min() and u.max() < 1 and -5 <= i.min() and i.max() <= 6 and seeds.min() >= 0
        # The handle's generator is its own: the default one does not move it.
        seed(77)
        handle.seed(77)
        np.testing.assert_array_equal(handle.run([x])[0].numpy(), first[0])
        # ... and the model's first draw is what a shim call draws from the same seed and counter.
        seed(77)
        np.testing.assert_array_equal(read(draw("rand", [3, 40], "float32")), first[0].astype(np.float64))
        with pytest.raises(ValueError):
            handle.seed(-1)
        with pytest.raises(TypeError):
            handle.seed(1.5)


def test_aotirt_seed_sets_a_new_handles_seed(tmp_path):
    code = ("import aotirt, sys; "
            f"h = aotirt.AotiHandle({RANDOM_OPS_CPU!r}); print(h.seed())")
    env = dict(os.environ, AOTIRT_SEED="0x2a")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "42"
    env["AOTIRT_SEED"] = "not a number"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "AOTIRT_SEED" in out.stderr
