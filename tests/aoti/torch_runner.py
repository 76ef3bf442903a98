"""torch's own AOTInductor runner on a link_libtorch=False package, for torch
processes only (build.py's reference outputs, bench/zoo.py's torch worker).

Such a library leaves its aoti_torch_* references to the process that loads
it. torch has them, but Python opened libtorch with RTLD_LOCAL, so dlopen
cannot see them ("undefined symbol: aoti_torch_layout_strided"): reopening
the loaded libraries with RTLD_GLOBAL publishes them. The package's library
and kernels are extracted next to each other (the kernels are found through
the cubin folder the runner is given), and torch's container runner opens
the library itself (aoti_load_package would need the generated sources,
which build.py drops).
"""

import ctypes
import os
import tempfile
import zipfile

AOTI_DIR = "data/aotinductor/"


def publish_libtorch():
    import torch

    lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    for name in ("libc10.so", "libtorch_cpu.so", "libc10_cuda.so", "libtorch_cuda.so"):
        path = os.path.join(lib, name)
        if os.path.exists(path):
            ctypes.CDLL(path, mode=os.RTLD_GLOBAL | os.RTLD_NOLOAD)


def extract(package, folder=None):
    """Extracts the package's AOTInductor files into `folder` (a new
    temporary one by default); returns the path of its model library."""
    folder = folder or tempfile.mkdtemp(prefix="aoti-torch-")
    os.makedirs(folder, exist_ok=True)
    libraries = []
    with zipfile.ZipFile(package) as z:
        for info in z.infolist():
            marker = info.filename.find(AOTI_DIR)
            if marker < 0 or info.filename.endswith("/"):
                continue
            target = os.path.join(folder, os.path.basename(info.filename))
            with z.open(info) as source, open(target, "wb") as sink:
                sink.write(source.read())
            if target.endswith(".so"):
                libraries.append(target)
    wrappers = [p for p in libraries if p.endswith(".wrapper.so")] or libraries
    if len(wrappers) != 1:
        raise RuntimeError(f"{package}: expected one model library, found {libraries or 'none'}")
    return wrappers[0]


def open_runner(package, folder=None, single_threaded=False):
    """(runner, library path): torch._C._aoti.AOTIModelContainerRunnerCuda
    on the package's library; runner.run(list of CUDA tensors) runs it on
    torch's current stream."""
    publish_libtorch()
    import torch

    so = extract(package, folder)
    runner = torch._C._aoti.AOTIModelContainerRunnerCuda(so, 1, "cuda", os.path.dirname(so), single_threaded)
    return runner, so


def from_numpy(array, dtype, device="cuda"):
    """A torch tensor of a saved input (bfloat16 saved as its uint16 bits)."""
    import numpy as np
    import torch

    if dtype == "bfloat16":
        return torch.from_numpy(np.ascontiguousarray(array).view(np.int16)).view(torch.bfloat16).to(device)
    return torch.from_numpy(np.ascontiguousarray(array)).to(device)
