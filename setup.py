"""Builds aotirt: libaotirt.so (nvcc), the example models, the Cython modules.

Environment:
  CUDA_HOME          the CUDA toolkit (else /usr/local/cuda, else nvcc on PATH)
  AOTIRT_CUDA_ARCHS  SM versions for machine code, e.g. "80;90" (the default);
                     PTX for the highest is added so newer GPUs can JIT it
  AOTIRT_BUILD_JOBS  parallel nvcc/g++ jobs (default: CPU count)
"""

import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
CORE_SOURCES = ["errors.cpp", "elf_check.cpp", "stream.cpp", "tensor.cpp", "copy.cu", "shims.cpp", "handle.cpp", "interop.cpp", "api.cpp"]
# Example models: name -> (sources for both builds, extra sources for CUDA).
MODELS = {
    "add_mul": (["container.cpp", "add_mul.cpp"], ["add_mul_kernel.cu"]),
}
CYTHON_MODULES = ["_errors", "_stream", "_tensor", "_handle"]


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


def gencode_flags():
    archs = os.environ.get("AOTIRT_CUDA_ARCHS", "80;90").replace(",", ";")
    versions = sorted({int(a.strip().replace("sm_", "")) for a in archs.split(";") if a.strip()})
    if not versions:
        sys.exit("aotirt: AOTIRT_CUDA_ARCHS names no architecture (example: 80;90)")
    flags = [f"-gencode=arch=compute_{v},code=sm_{v}" for v in versions]
    top = versions[-1]
    flags.append(f"-gencode=arch=compute_{top},code=compute_{top}")
    return flags


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
        if newer(core, core_sources + core_headers):
            self.build_core(core_sources, core)

        models_dir = os.path.join(ROOT, "cuda_src", "models")
        model_headers = headers + [os.path.join(models_dir, h) for h in os.listdir(models_dir) if h.endswith(".h")]
        builds = []
        for name, (common, cuda_only) in MODELS.items():
            common = [os.path.join(models_dir, s) for s in common]
            cuda_only = [os.path.join(models_dir, s) for s in cuda_only]
            cpu_lib = os.path.join(package_dir, "models", f"{name}_cpu.so")
            cuda_lib = os.path.join(package_dir, "models", f"{name}_cuda.so")
            if newer(cpu_lib, common + model_headers):
                builds.append(lambda c=common, o=cpu_lib: self.build_cpu_model(c, o))
            if newer(cuda_lib, common + cuda_only + model_headers):
                builds.append(lambda c=common + cuda_only, o=cuda_lib: self.build_cuda_model(c, o))
        with ThreadPoolExecutor(self.jobs) as pool:
            for f in [pool.submit(b) for b in builds]:
                f.result()

        for ext in self.extensions:
            ext.library_dirs.append(package_dir)
        super().run()

    def nvcc_compile(self, source, obj, defines=()):
        run([self.nvcc, "-std=c++17", "-O3", "-lineinfo", *gencode_flags(),
             "-Xcompiler", "-fPIC,-fvisibility=hidden,-Wall", *[f"-D{d}" for d in defines],
             "-I", os.path.join(ROOT, "include"), "-c", source, "-o", obj])

    def build_core(self, sources, target):
        obj_dir = os.path.join(self.build_temp, "core")
        os.makedirs(obj_dir, exist_ok=True)
        objects = [os.path.join(obj_dir, os.path.basename(s) + ".o") for s in sources]
        with ThreadPoolExecutor(self.jobs) as pool:
            for f in [pool.submit(self.nvcc_compile, s, o, ["AOTIRT_BUILDING_CORE"]) for s, o in zip(sources, objects)]:
                f.result()
        # cudart is linked dynamically: the core, the models and any test
        # interposer must all see one CUDA runtime (shared/DESIGN.md).
        run([self.nvcc, "-shared", *gencode_flags(), "-cudart", "shared", "-o", target, *objects,
             "-Xlinker", f"-rpath,{self.cuda_lib}", "-Xlinker", "-soname,libaotirt.so", "-ldl"])

    def build_cpu_model(self, sources, target):
        # Like an AOTInductor library built without libtorch: the aoti_torch_*
        # shims stay undefined and are found in the process at dlopen time.
        run(["g++", "-std=c++17", "-O2", "-shared", "-fPIC", "-fvisibility=hidden",
             "-I", os.path.join(ROOT, "include"), *sources, "-o", target])

    def build_cuda_model(self, sources, target):
        obj_dir = os.path.join(self.build_temp, "models", os.path.basename(target))
        os.makedirs(obj_dir, exist_ok=True)
        objects = [os.path.join(obj_dir, os.path.basename(s) + ".o") for s in sources]
        for s, o in zip(sources, objects):
            self.nvcc_compile(s, o, ["AOTIRT_MODEL_CUDA"])
        run([self.nvcc, "-shared", *gencode_flags(), "-cudart", "shared", "-o", target, *objects,
             "-Xlinker", f"-rpath,{self.cuda_lib}"])


def extensions():
    from Cython.Build import cythonize

    exts = [
        Extension(
            f"aotirt.{name}",
            [os.path.join("pyx", "aotirt", f"{name}.pyx")],
            include_dirs=[os.path.join(ROOT, "include")],
            libraries=["aotirt"],
            # The core sits beside the extensions, inside the package.
            extra_link_args=["-Wl,-rpath,$ORIGIN"],
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
