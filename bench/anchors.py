"""What aotirt is measured against, each in a fresh process so that neither
torch nor CuPy is ever imported into the process that times aotirt, and a
crash of one anchor (seen: torch 2.11's AOTI runner) is recorded, not fatal.

Each function returns the code of a small program that prints one JSON
object; bench.py runs it and adds the result to its JSON lines.
"""

import os
import textwrap

CALLS = 20000

# Each program defines sync() (its device wait) and times with bench/timing.py.
_TIMING = f"""
import json, sys
sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
from timing import host_us_per_call, median_of, us_per_call
def per_call_us(fn, calls={CALLS}):
    for _ in range(200): fn()
    sync()
    return median_of(lambda: us_per_call(fn, calls, lambda _: sync()))
def host_us(fn, calls=2000):
    return median_of(lambda: host_us_per_call(fn, calls, lambda _: sync(), batch=20))
"""


def cupy_empty_kernel():
    return _TIMING + textwrap.dedent("""
        import cupy
        kernel = cupy.RawKernel(r'extern "C" __global__ void k() {}', "k")
        stream = cupy.cuda.Stream(non_blocking=True)
        def sync(): stream.synchronize()
        with stream:
            us = per_call_us(lambda: kernel((1,), (32,), ()))
        print(json.dumps({"case": "anchor", "what": "empty kernel launch", "via": "CuPy RawKernel",
                          "us_per_call": round(us, 3)}))
    """)


def cuda_core_empty_kernel():
    return _TIMING + textwrap.dedent("""
        try:
            from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch
        except ImportError:
            from cuda.core.experimental import Device, LaunchConfig, Program, ProgramOptions, launch
        device = Device()
        device.set_current()
        arch = "sm_" + "".join(str(v) for v in device.compute_capability)
        program = Program('extern "C" __global__ void k() {}', code_type="c++", options=ProgramOptions(arch=arch))
        kernel = program.compile("cubin").get_kernel("k")
        stream = device.create_stream()
        config = LaunchConfig(grid=1, block=32)
        def sync(): stream.sync()
        us = per_call_us(lambda: launch(stream, config, kernel))
        print(json.dumps({"case": "anchor", "what": "empty kernel launch", "via": "cuda.core launch",
                          "us_per_call": round(us, 3)}))
    """)


def torch_add_out():
    return _TIMING + textwrap.dedent("""
        import torch
        a, b = torch.ones(4, device="cuda"), torch.ones(4, device="cuda")
        out = torch.empty(4, device="cuda")
        def sync(): torch.cuda.synchronize()
        us = per_call_us(lambda: torch.add(a, b, out=out))
        print(json.dumps({"case": "anchor", "what": "small elementwise op", "via": "torch.add(out=)",
                          "us_per_call": round(us, 3)}))
    """)


def torch_aoti_runner(package, single_threaded):
    # The package is built with link_libtorch=False, as aotirt needs: its
    # aoti_torch_* references are left for the loading process to provide.
    # torch has them, but Python opened libtorch with RTLD_LOCAL, so dlopen
    # cannot see them ("undefined symbol: aoti_torch_layout_strided");
    # re-opening the already loaded libraries with RTLD_GLOBAL publishes them
    # and torch's own runner can load the very same library aotirt runs.
    # aoti_load_package first; should it fail, torch's container runner on
    # the library itself.
    return _TIMING + textwrap.dedent(f"""
        import ctypes, glob, os, tempfile, zipfile, numpy as np, torch
        torch_lib = os.path.join(os.path.dirname(torch.__file__), "lib")
        for name in ("libc10.so", "libtorch_cpu.so", "libc10_cuda.so", "libtorch_cuda.so"):
            if os.path.exists(os.path.join(torch_lib, name)):
                ctypes.CDLL(os.path.join(torch_lib, name), mode=os.RTLD_GLOBAL | os.RTLD_NOLOAD)
        x = torch.from_numpy(np.load({package!r}.replace("model.pt2", "input0.npy"))).cuda()
        label, note = "torch aoti_load_package", ""
        try:
            model = torch._inductor.aoti_load_package({package!r}, run_single_threaded={single_threaded})
            call = lambda: model(x)
        except Exception as error:
            note = "aoti_load_package failed: " + str(error).strip().splitlines()[-1][:150]
            folder = tempfile.mkdtemp()
            zipfile.ZipFile({package!r}).extractall(folder)
            so = glob.glob(os.path.join(folder, "**", "*.so"), recursive=True)[0]
            runner = torch._C._aoti.AOTIModelContainerRunnerCuda(so, 1, "cuda", os.path.dirname(so),
                                                                 {single_threaded})
            call = lambda: runner.run([x])
            label = "torch AOTIModelContainerRunnerCuda"
        def sync(): torch.cuda.synchronize()
        us = per_call_us(call, calls=2000)
        print(json.dumps({{"case": "aoti_runner", "runner": label
                          + (" (run_single_threaded)" if {single_threaded} else ""),
                          "model": "mlp", "us_per_call": round(us, 3), "host_us_per_call": round(host_us(call), 3),
                          "note": note}}))
    """)


def torch_eager(zoo_folder):
    return _TIMING + textwrap.dedent(f"""
        import sys, numpy as np, torch
        sys.path.insert(0, {zoo_folder!r})
        from zoo import MLP
        torch.manual_seed(0)
        module = MLP().eval().cuda()
        x = torch.from_numpy(np.random.default_rng(0).standard_normal((8, 64)).astype(np.float32)).cuda()
        def sync(): torch.cuda.synchronize()
        with torch.no_grad():
            us = per_call_us(lambda: module(x), calls=2000)
            host = host_us(lambda: module(x))
        print(json.dumps({{"case": "aoti_runner", "runner": "torch eager (same module)", "model": "mlp",
                          "us_per_call": round(us, 3), "host_us_per_call": round(host, 3)}}))
    """)
