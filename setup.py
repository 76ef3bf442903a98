"""Builds aotirt: libaotirt.so (nvcc), the example models, the Cython modules.

Environment:
  CUDA_HOME          the CUDA toolkit (else /usr/local/cuda, else nvcc on PATH)
  AOTIRT_CUDA_ARCHS  SM versions for machine code, e.g. "80;90" (the default);
                     PTX for the highest is added so newer GPUs can JIT it
  AOTIRT_BUILD_JOBS  parallel nvcc/g++ jobs (default: CPU count)
  AOTIRT_SANITIZE    e.g. "address,undefined": build every host part with these
                     sanitizers (make asan; never for a release build)
  AOTIRT_CUDNN_INCLUDE, AOTIRT_CUDNN_FRONTEND_INCLUDE
                     the folders with cudnn.h and cudnn_frontend.h (default: the
                     nvidia-cudnn-cu13/-cu12 and nvidia-cudnn-frontend wheels, then
                     the CUDA toolkit's and the system's include folders); without
                     both aotirt builds without cuDNN (CUDA convolutions then fail
                     with a message saying so); AOTIRT_NVRTC_INCLUDE the folder with
                     nvrtc.h, which cudnn-frontend includes (default: the toolkit's,
                     then the nvidia-cuda-nvrtc wheel's)
"""

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from concurrent.futures import ThreadPoolExecutor

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
CORE_SOURCES = ["errors.cpp", "elf_check.cpp", "block_cache.cpp", "stream.cpp", "tensor.cpp", "copy.cu", "shims.cpp",
                "handle.cpp", "graph_memory.cpp", "graph.cpp", "interop.cpp", "api.cpp",
                "matmul_check.cpp", "matmul_cpu.cpp", "matmul_cuda.cpp", "matmul_shims.cpp", "cublas.cpp",
                "attention.cpp", "attention_cpu.cpp", "attention.cu", "conv_cpu.cpp", "scan_cpu.cpp",
                "../shims/libs/dynamic_library.cpp", "../shims/libs/cudnn.cpp",
                "../shims/convolution/conv_cudnn.cpp", "../shims/convolution/conv_bias.cu",
                "../shims/attention/sdpa_cudnn.cpp"]
# Headers of the shims outside cuda_src/core that the core's sources include.
SHIM_HEADER_DIRS = ["shims/libs", "shims/convolution", "shims/attention"]
# The pipeline models' kernels (cuda_src/kernels): plain C++ for the CPU
# builds, CUDA for the CUDA builds.
KERNELS = ("matmul", "conv1d", "pointwise", "layer_norm", "attention", "token")
KERNELS_CPU = [f"kernels/{k}_cpu.cpp" for k in KERNELS]
KERNELS_CUDA = [f"kernels/{k}.cu" for k in KERNELS]
PIPELINE = ["models/container.cpp", "models/pipeline.cpp"]
# Example model libraries, each built for the CPU and for CUDA:
# name -> (sources for both builds, for the CPU build only, for CUDA only),
# under cuda_src/. A leading underscore marks a test library, not a model.
MODELS = {
    "add_mul": (["models/container.cpp", "models/add_mul.cpp"], [], ["models/add_mul_kernel.cu"]),
    "encoder": (PIPELINE + ["models/encoder.cpp"], KERNELS_CPU, KERNELS_CUDA),
    "decoder": (PIPELINE + ["models/decoder.cpp"], KERNELS_CPU, KERNELS_CUDA),
    "_kernels": (["kernels/test_api.cpp"], KERNELS_CPU, KERNELS_CUDA),
}
# Models that keep weights: compiled with AOTIRT_MODEL_HAS_STATE (their
# container owns the weights), which make_weights.py writes beside them.
WEIGHTS = ["encoder", "decoder"]
# The only source that reads AOTIRT_MODEL_HAS_STATE. The CUDA builds pass it
# to no other, so that a source shared by models with and without weights
# (the kernels) is compiled once, not once per set of defines.
STATE_SOURCES = ["models/container.cpp"]
MAKE_WEIGHTS = os.path.join(ROOT, "cuda_src", "models", "make_weights.py")
# Test-only libraries, built for CUDA only into models/testing/.
TESTING_CUDA_MODELS = {
    "fault": ["models/container.cpp", "models/testing/fault.cpp", "models/testing/fault_kernel.cu"],
    "uncapturable": ["models/container.cpp", "models/testing/uncapturable.cpp"],
    "fallback_ops": ["models/container.cpp", "models/testing/fallback_ops.cpp"],
}
CYTHON_MODULES = ["_errors", "_stream", "_tensor", "_graph", "_handle"]


def find_cuda_home():
    candidates = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    nvcc_on_path = shutil.which("nvcc")
    if nvcc_on_path:
        candidates.append(os.path.dirname(os.path.dirname(os.path.realpath(nvcc_on_path))))
    for home in candidates:
        if home and os.path.isfile(os.path.join(home, "bin", "nvcc")):
            return home
    sys.exit("aotirt: the CUDA toolkit was not found (no nvcc): install it, or set CUDA_HOME to its folder")


def cuda_lib_dir(home):
    for sub in ("lib64", "lib", os.path.join("targets", "x86_64-linux", "lib")):
        if os.path.exists(os.path.join(home, sub, "libcudart.so")):
            return os.path.join(home, sub)
    sys.exit(f"aotirt: libcudart.so was not found under {home}: install the CUDA runtime, or set CUDA_HOME")


def _header_dirs(env, relative, fallbacks=()):
    """Folders that may hold a header: `env`'s value alone when set, else
    `relative` under each site-packages folder, then `fallbacks`."""
    if os.environ.get(env):
        return [os.environ[env]]
    sites = [sysconfig.get_paths()[k] for k in ("purelib", "platlib")] + [p for p in sys.path if p]
    dirs = []
    for d in [os.path.join(site, relative) for site in sites] + list(fallbacks):
        if d not in dirs:
            dirs.append(d)
    return dirs


def _find_header(name, dirs):
    return next((d for d in dirs if os.path.isfile(os.path.join(d, name))), None)


def find_cudnn(cuda_home):
    """(include folders, defines) for building the cuDNN shims, or ([], [])
    with a line saying why aotirt builds without them."""
    system = [os.path.join(cuda_home, "include"), "/usr/include", "/usr/local/include"]
    cudnn = _find_header("cudnn.h", _header_dirs("AOTIRT_CUDNN_INCLUDE", os.path.join("nvidia", "cudnn", "include"),
                                                 system))
    frontend = _find_header("cudnn_frontend.h", _header_dirs("AOTIRT_CUDNN_FRONTEND_INCLUDE", "include", system))
    # cudnn-frontend includes NVRTC's header (its experimental engines).
    nvrtc = _find_header("nvrtc.h", [os.path.join(cuda_home, "include")] +
                         _header_dirs("AOTIRT_NVRTC_INCLUDE", os.path.join("nvidia", "cu13", "include")) +
                         _header_dirs("AOTIRT_NVRTC_INCLUDE", os.path.join("nvidia", "cuda_nvrtc", "include")))
    why = None
    if not cudnn:
        why = "cudnn.h not found (pip install nvidia-cudnn-cu13, or set AOTIRT_CUDNN_INCLUDE)"
    elif not frontend:
        why = "cudnn_frontend.h not found (pip install nvidia-cudnn-frontend, or set AOTIRT_CUDNN_FRONTEND_INCLUDE)"
    else:
        with open(os.path.join(frontend, "cudnn_frontend_version.h")) as f:
            text = f.read()
        major, minor = (int(re.search(rf"CUDNN_FRONTEND_{part}_VERSION\s+(\d+)", text).group(1))
                        for part in ("MAJOR", "MINOR"))
        if (major, minor) < (1, 13):
            why = (f"cudnn-frontend {major}.{minor} in {frontend} is older than 1.13 "
                   "(pip install -U nvidia-cudnn-frontend)")
        elif not nvrtc and os.path.exists(os.path.join(frontend, "cudnn_frontend", "experimental", "nvrtc_shim.h")):
            why = "nvrtc.h, which cudnn-frontend includes, not found (pip install nvidia-cuda-nvrtc)"
    if why:
        print(f"aotirt: building without cuDNN: {why}; CUDA convolutions will fail saying so", flush=True)
        return [], []
    dirs = [d for d in (cudnn, frontend, nvrtc) if d]
    print(f"aotirt: building with cuDNN (headers: {', '.join(dirs)})", flush=True)
    flags = [f for d in dirs for f in ("-isystem", d)]
    return flags, ["AOTIRT_HAVE_CUDNN=1", "NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING", "CUDNN_FRONTEND_SKIP_JSON_LIB"]


def gencode_flags():
    archs = os.environ.get("AOTIRT_CUDA_ARCHS", "80;90").replace(",", ";")
    versions = sorted({int(a.strip().replace("sm_", "")) for a in archs.split(";") if a.strip()})
    if not versions:
        sys.exit("aotirt: AOTIRT_CUDA_ARCHS names no architecture (example: 80;90)")
    flags = [f"-gencode=arch=compute_{v},code=sm_{v}" for v in versions]
    top = versions[-1]
    flags.append(f"-gencode=arch=compute_{top},code=compute_{top}")
    return flags


def sanitize_flags():
    """-fsanitize flags for host code, from AOTIRT_SANITIZE (empty by default)."""
    # One flag per sanitizer: nvcc splits -Xcompiler values at commas.
    wanted = [name.strip() for name in os.environ.get("AOTIRT_SANITIZE", "").split(",") if name.strip()]
    return [f"-fsanitize={name}" for name in wanted] + ["-fno-omit-frame-pointer", "-g"] if wanted else []


def newer(target, sources):
    if not os.path.exists(target):
        return True
    t = os.path.getmtime(target)
    return any(os.path.getmtime(s) > t for s in sources)


def run(cmd):
    print(" ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


class BuildAotirt(build_ext):
    """Builds the native libraries with nvcc/g++ before the Cython modules."""

    def run(self):
        self.cuda_home = find_cuda_home()
        self.nvcc = os.path.join(self.cuda_home, "bin", "nvcc")
        self.cuda_lib = cuda_lib_dir(self.cuda_home)
        package_dir = os.path.dirname(self.get_ext_fullpath("aotirt._handle"))
        os.makedirs(os.path.join(package_dir, "models"), exist_ok=True)
        self.jobs = int(os.environ.get("AOTIRT_BUILD_JOBS", os.cpu_count() or 2))
        headers = [os.path.join(ROOT, "include", "aotirt", h) for h in os.listdir(os.path.join(ROOT, "include", "aotirt"))]

        core = os.path.join(package_dir, "libaotirt.so")
        core_dir = os.path.join(ROOT, "cuda_src", "core")
        core_sources = [os.path.join(core_dir, s) for s in CORE_SOURCES]
        core_headers = headers + [os.path.join(core_dir, h) for h in os.listdir(core_dir) if h.endswith(".h")]
        for d in SHIM_HEADER_DIRS:
            folder = os.path.join(ROOT, "cuda_src", d)
            core_headers += [os.path.join(folder, h) for h in os.listdir(folder) if h.endswith(".h")]
        if newer(core, core_sources + core_headers):
            self.build_core(core_sources, core)

        src = os.path.join(ROOT, "cuda_src")
        # .inc: kernels_api.inc, the kernel declarations kernels.h includes.
        model_headers = headers + [os.path.join(src, d, h) for d in ("models", "kernels")
                                   for h in os.listdir(os.path.join(src, d)) if h.endswith((".h", ".cuh", ".inc"))]
        cpu_builds = []
        cuda_targets = []  # (sources, defines, library)
        for name, (common, cpu_only, cuda_only) in MODELS.items():
            defines = ["AOTIRT_MODEL_HAS_STATE"] if name in WEIGHTS else []
            cpu_sources = [os.path.join(src, s) for s in common + cpu_only]
            cuda_sources = [os.path.join(src, s) for s in common + cuda_only]
            cpu_lib = os.path.join(package_dir, "models", f"{name}_cpu.so")
            cuda_lib = os.path.join(package_dir, "models", f"{name}_cuda.so")
            if newer(cpu_lib, cpu_sources + model_headers):
                cpu_builds.append(lambda c=cpu_sources, d=defines, o=cpu_lib: self.build_cpu_model(c, o, d))
            if newer(cuda_lib, cuda_sources + model_headers):
                cuda_targets.append((cuda_sources, ["AOTIRT_MODEL_CUDA"] + defines, cuda_lib))
        weights_dir = os.path.join(package_dir, "models")
        if any(newer(os.path.join(weights_dir, f"{name}.weights"), [MAKE_WEIGHTS]) for name in WEIGHTS):
            cpu_builds.append(lambda: run([sys.executable, MAKE_WEIGHTS, weights_dir]))
        os.makedirs(os.path.join(package_dir, "models", "testing"), exist_ok=True)
        for name, sources in TESTING_CUDA_MODELS.items():
            sources = [os.path.join(src, s) for s in sources]
            target = os.path.join(package_dir, "models", "testing", f"{name}_cuda.so")
            if newer(target, sources + model_headers):
                cuda_targets.append((sources, ["AOTIRT_MODEL_CUDA"], target))
        with ThreadPoolExecutor(self.jobs) as pool:
            futures = [pool.submit(b) for b in cpu_builds]
            self.build_cuda_models(cuda_targets, pool)
            for f in futures:
                f.result()

        for ext in self.extensions:
            ext.library_dirs.append(package_dir)
        super().run()

    def nvcc_compile(self, source, obj, defines=(), includes=()):
        host = ",".join(["-fPIC", "-fvisibility=hidden", "-Wall", *sanitize_flags()])
        run([self.nvcc, "-std=c++17", "-O3", "-lineinfo", *gencode_flags(),
             "-Xcompiler", host, *[f"-D{d}" for d in defines],
             "-I", os.path.join(ROOT, "include"), *includes, "-c", source, "-o", obj])

    def build_core(self, sources, target):
        obj_dir = os.path.join(self.build_temp, "core")
        os.makedirs(obj_dir, exist_ok=True)
        objects = [os.path.join(obj_dir, os.path.basename(s) + ".o") for s in sources]
        cudnn_includes, cudnn_defines = find_cudnn(self.cuda_home)
        defines = ["AOTIRT_BUILDING_CORE", *cudnn_defines]
        with ThreadPoolExecutor(self.jobs) as pool:
            for f in [pool.submit(self.nvcc_compile, s, o, defines, cudnn_includes) for s, o in zip(sources, objects)]:
                f.result()
        # Only the C API and the shims are exported. The C++ template
        # instances the core makes (cudnn-frontend's among them: std
        # containers of its types) stay inside: with libaotirt loaded
        # RTLD_GLOBAL, another copy in the process (torch's frontend, of
        # another version) would otherwise bind to ours.
        exports = os.path.join(obj_dir, "exports.map")
        with open(exports, "w") as f:
            f.write("{\n  global:\n    aoti_torch_*;\n    aotirt_*;\n  local:\n    *;\n};\n")
        # cudart is linked dynamically: the core, the models and any test
        # interposer must all see one CUDA runtime (shared/DESIGN.md).
        run([self.nvcc, "-shared", *gencode_flags(), "-cudart", "shared", "-o", target, *objects,
             *self.sanitize_link(), "-Xlinker", f"-rpath,{self.cuda_lib}", "-Xlinker", "-soname,libaotirt.so",
             "-Xlinker", f"--version-script={exports}", "-ldl"])

    @staticmethod
    def sanitize_link():
        flags = sanitize_flags()
        return ["-Xcompiler", ",".join(flags)] if flags else []

    def build_cpu_model(self, sources, target, defines=()):
        # Like an AOTInductor library built without libtorch: the aoti_torch_*
        # shims stay undefined and are found in the process at dlopen time.
        run(["g++", "-std=c++17", "-O2", "-shared", "-fPIC", "-fvisibility=hidden", *sanitize_flags(),
             *[f"-D{d}" for d in defines], "-I", os.path.join(ROOT, "include"), *sources, "-o", target])

    def build_cuda_models(self, targets, pool):
        # Several libraries share sources (the kernels): each (source,
        # defines) pair is compiled once, all of them in parallel, then each
        # library is linked from its objects. AOTIRT_MODEL_HAS_STATE counts
        # only for STATE_SOURCES, the files that read it.
        state_sources = {os.path.join(ROOT, "cuda_src", s) for s in STATE_SOURCES}

        def key(source, defines):
            if source not in state_sources:
                defines = [d for d in defines if d != "AOTIRT_MODEL_HAS_STATE"]
            return source, tuple(defines)

        objects = {}
        for sources, defines, _target in targets:
            for source in sources:
                k = key(source, defines)
                if k not in objects:
                    tag = "-".join(d.lower() for d in k[1])
                    name = os.path.relpath(source, ROOT).replace(os.sep, "_") + ".o"
                    objects[k] = os.path.join(self.build_temp, "models", tag, name)
        for obj in objects.values():
            os.makedirs(os.path.dirname(obj), exist_ok=True)
        for f in [pool.submit(self.nvcc_compile, s, o, list(d)) for (s, d), o in objects.items()]:
            f.result()
        links = [pool.submit(run, [self.nvcc, "-shared", *gencode_flags(), "-cudart", "shared", "-o", target,
                                   *[objects[key(s, defines)] for s in sources],
                                   *self.sanitize_link(), "-Xlinker", f"-rpath,{self.cuda_lib}"])
                 for sources, defines, target in targets]
        for f in links:
            f.result()


def extensions():
    from Cython.Build import cythonize

    exts = [
        Extension(
            f"aotirt.{name}",
            [os.path.join("pyx", "aotirt", f"{name}.pyx")],
            include_dirs=[os.path.join(ROOT, "include")],
            libraries=["aotirt"],
            extra_compile_args=sanitize_flags(),
            # The core sits beside the extensions, inside the package.
            extra_link_args=["-Wl,-rpath,$ORIGIN", *sanitize_flags()],
            language="c++",
        )
        for name in CYTHON_MODULES
    ]
    return cythonize(
        exts,
        include_path=["pyx"],
        compiler_directives={"language_level": 3, "boundscheck": False, "wraparound": False,
                             "embedsignature": True},
    )


setup(
    packages=["aotirt"],
    package_dir={"": "pyx"},
    package_data={"aotirt": ["*.pxd", "*.pyi", "py.typed"]},
    ext_modules=extensions(),
    cmdclass={"build_ext": BuildAotirt},
    zip_safe=False,
)
