"""Small helpers shared by the tests."""

import os
import subprocess
import sys

import numpy as np

# tests/support/helpers.py: the repository is two folders up from this one.
TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(TESTS)


def run_host_check(tmp_path, source, includes=("cuda_src", "include"), flags=("-Wall",), timeout=300,
                   sources=(), libs=()):
    """Builds tests/shims/`source`, a host-only C++ check of a header's
    arithmetic (no GPU), with g++, the folders `includes` of the
    repository, the repository's `sources` beside it and `libs` after them,
    runs it, and asserts that it exited 0 and reported "0 failures" last.
    Returns its output."""
    exe = str(tmp_path / os.path.splitext(source)[0])
    command = ["g++", "-std=c++17", "-O2", *flags]
    for folder in includes:
        command += ["-I", os.path.join(REPO, folder)]
    files = [os.path.join(REPO, "tests", "shims", source)] + [os.path.join(REPO, path) for path in sources]
    subprocess.run([*command, *files, "-o", exe, *libs], check=True)
    proc = subprocess.run([exe], capture_output=True, text=True, timeout=timeout, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.split()[-2:] == ["0", "failures"], proc.stdout
    return proc.stdout


def usage_error(main, argv, monkeypatch, capsys):
    """What a script's `main()` writes to stderr when `argv` (its sys.argv)
    is refused as argparse refuses a usage error: exit status 2. A test
    that also patches out the script's work checks that nothing ran first."""
    import pytest

    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 2
    return capsys.readouterr().err


def random_inputs(rng, shape, count=3):
    """`count` float32 arrays of `shape` drawn from a normal distribution."""
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(count)]


def add_mul_reference(a, b, c):
    """a * b + c computed in float64."""
    return a.astype(np.float64) * b + c


def assert_add_mul_close(out, a, b, c):
    """`out` is a float32 a * b + c: within two roundings of the exact value.

    A relative tolerance alone fails near cancellation (a*b close to -c), so
    the bound scales with the operands, as float32 error does.
    """
    out = np.asarray(out)
    assert out.dtype == np.float32 and out.shape == np.shape(a)
    exact = add_mul_reference(a, b, c)
    bound = 2 * np.finfo(np.float32).eps * (np.abs(a.astype(np.float64) * b) + np.abs(c))
    assert np.all(np.isfinite(out))
    assert np.all(np.abs(out - exact) <= bound + 1e-30), np.max(np.abs(out - exact) - bound)


def run_python(code, env=None):
    """Runs `code` in a fresh interpreter; returns the completed process."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full_env, timeout=120)


def in_tests(code):
    """`code` for a fresh interpreter that imports from tests/ (the support package)."""
    import textwrap

    return f"import sys\nsys.path.insert(0, {TESTS!r})\n" + textwrap.dedent(code)


NO_GPU_ERRORS = {"cudaErrorNoDevice": 100, "cudaErrorInsufficientDriver": 35}


def cuda_error_without_gpu(code):
    """Runs `code` (after `import aotirt, numpy as np`) in a fresh interpreter
    that sees no GPU (CUDA_VISIBLE_DEVICES="": the same on a GPU runner and
    on a machine with no GPU or no driver) and returns the aotirt.CudaError
    it raised as a dict: name, code, message, is_runtime_error. Fails the
    test if it raised nothing or something else."""
    import json
    import textwrap

    script = ("import json, aotirt, numpy as np\n"
              "try:\n" + textwrap.indent(textwrap.dedent(code), "    ") +
              "\nexcept aotirt.CudaError as e:\n"
              "    print(json.dumps({'name': e.name, 'code': e.code, 'message': str(e),\n"
              "                      'is_runtime_error': isinstance(e, RuntimeError)}))\n"
              "else:\n"
              "    print('no error')\n")
    proc = run_python(script, env={"CUDA_VISIBLE_DEVICES": ""})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() != "no error", f"no CudaError from {code!r}"
    error = json.loads(proc.stdout.strip().splitlines()[-1])
    assert error["name"] in NO_GPU_ERRORS, error
    assert error["code"] == NO_GPU_ERRORS[error["name"]], error
    return error


def gone(ref):
    """Whether the object of weak reference `ref` is gone, after a collection."""
    import gc

    gc.collect()
    return ref() is None


def device_free_bytes():
    """Free device memory as the driver reports it (cuda-bindings, not aotirt)."""
    from cuda.bindings import runtime

    err, free, _total = runtime.cudaMemGetInfo()
    assert err == runtime.cudaError_t.cudaSuccess, err
    return free


def relative_error(out, ref):
    """||out - ref|| / ||ref||, in float64."""
    out = np.asarray(out, np.float64)
    ref = np.asarray(ref, np.float64)
    return float(np.linalg.norm(out - ref) / np.linalg.norm(ref))


def models_folder():
    """The folder of the built example libraries (and of the test kernels)."""
    import aotirt

    return os.path.dirname(aotirt.models.path("add_mul", "cpu"))


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "aotirt", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def assert_one_line_error(proc, code, *fragments):
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
