"""Builds aotirt: libaotirt.so (nvcc), the example models, the Cython modules.

Environment:
  CUDA_HOME          the CUDA toolkit (else /usr/local/cuda, else nvcc on PATH)
  AOTIRT_CUDA_ARCHS  SM versions for machine code, e.g. "80;90" (the default);
                     PTX for the highest is added so newer GPUs can JIT it
  AOTIRT_BUILD_JOBS  parallel nvcc/g++ jobs (default: CPU count)
  AOTIRT_SANITIZE    e.g. "address,undefined": build every host part with these
                     sanitizers (make asan; never for a release build)
  AOTIRT_BUILD_VERBOSE=1   print every command in full (else one line per step)
  AOTIRT_CUDNN_INCLUDE, AOTIRT_CUDNN_FRONTEND_INCLUDE
                     the folders of cudnn.h and cudnn_frontend.h (else those of
                     the installed nvidia-cudnn and nvidia-cudnn-frontend wheels);
                     with both, the core is built with AOTIRT_HAVE_CUDNN=1;
                     AOTIRT_NVRTC_INCLUDE the folder of nvrtc.h, which
                     cudnn-frontend includes (else the toolkit's, then the
                     nvidia-cuda-nvrtc wheel's)
  AOTIRT_CUTLASS_INCLUDE, AOTIRT_CUTLASS_FMHA
                     the folders of cutlass/cutlass.h and of CUTLASS's fused
                     attention kernel (examples/41_fused_multi_head_attention,
                     kernel_forward.h); else those the nvidia-cutlass wheel
                     ships (cutlass_library/source/...); AOTIRT_CURAND_INCLUDE
                     the folder of curand_kernel.h, which that kernel includes
                     (else the toolkit's, then the nvidia-curand wheel's). With
                     all three, float32 attention runs on that kernel
                     (AOTIRT_HAVE_CUTLASS_FMHA=1)

Incremental: each object is rebuilt only when it is missing, when its source
or a header it includes (the compiler's dependency file) is newer, or when its
command changed (flags, architectures, defines); each library is relinked only
when one of its objects is newer or its command changed.
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import threading
from concurrent.futures import ThreadPoolExecutor

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(ROOT, "cuda_src")
# The Cython modules of pyx/aotirt, each linked to libaotirt.so.
CYTHON_MODULES = ["_errors", "_dtypes", "_device", "_stream", "_host", "_interop", "_tensor", "_convert", "_graph",
                  "_loop", "_constants", "_library", "_handle", "_testing"]
# libaotirt.so: every .cpp and .cu under these folders of cuda_src/.
CORE_DIRS = ["runtime", "shims"]
# The pipeline models' kernels (cuda_src/kernels): plain C++ for the CPU
# builds, CUDA for the CUDA builds.
KERNELS = ("matmul", "conv1d", "pointwise", "layer_norm", "attention", "token")
KERNELS_CPU = [f"kernels/{k}_cpu.cpp" for k in KERNELS]
KERNELS_CUDA = [f"kernels/{k}.cu" for k in KERNELS]
PIPELINE = ["models/container.cpp", "models/constant_buffers.cpp", "models/pipeline.cpp"]
# Example model libraries, each built for the CPU and for CUDA:
# name -> (sources for both builds, for the CPU build only, for CUDA only),
# under cuda_src/. A leading underscore marks a test library, not a model.
MODELS = {
    "add_mul": (["models/container.cpp", "models/add_mul.cpp"], [], ["models/add_mul_kernel.cu"]),
    "encoder": (PIPELINE + ["models/encoder.cpp"], KERNELS_CPU, KERNELS_CUDA),
    "decoder": (PIPELINE + ["models/decoder.cpp"], KERNELS_CPU, KERNELS_CUDA),
    "_kernels": (["kernels/test_api.cpp"], KERNELS_CPU, KERNELS_CUDA),
    "_random_ops": (["models/container.cpp", "models/testing/random_ops.cpp"], [], []),
}
# Models that keep weights: compiled with AOTIRT_MODEL_HAS_STATE (their
# container owns the weights), which make_weights.py writes beside them.
WEIGHTS = ["encoder", "decoder"]
# The only source that reads AOTIRT_MODEL_HAS_STATE. No other is compiled
# with it, so that a source shared by models with and without weights (the
# kernels) is compiled once, not once per set of defines.
STATE_SOURCES = ["models/container.cpp"]
MAKE_WEIGHTS = os.path.join(SRC, "models", "make_weights.py")
# Test-only libraries, built for CUDA only into models/testing/.
TESTING_CUDA_MODELS = {
    "fault": ["models/container.cpp", "models/testing/fault.cpp", "models/testing/fault_kernel.cu"],
    "uncapturable": ["models/container.cpp", "models/testing/uncapturable.cpp"],
    "sdpa": ["models/container.cpp", "models/testing/sdpa.cpp"],
    "fallback_ops": ["models/container.cpp", "models/testing/fallback_ops.cpp"],
    "sort_ops": ["models/container.cpp", "models/testing/sort_ops.cpp"],
}
VERBOSE = os.environ.get("AOTIRT_BUILD_VERBOSE") == "1"


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


def _system_includes(cuda_home):
    return [os.path.join(cuda_home, "include"), "/usr/include", "/usr/local/include"]


def find_cudnn_frontend(cuda_home):
    """The folder of cudnn_frontend.h (header-only) that the build uses, or
    None. scripts/prebuilt.py carries it to the GPU machine."""
    return _find_header("cudnn_frontend.h", _header_dirs("AOTIRT_CUDNN_FRONTEND_INCLUDE", "include",
                                                         _system_includes(cuda_home)))


def find_cudnn(cuda_home):
    """(include folders, defines) for building the cuDNN shims, or ([], [])
    with a line saying why aotirt builds without them."""
    cudnn = _find_header("cudnn.h", _header_dirs("AOTIRT_CUDNN_INCLUDE", os.path.join("nvidia", "cudnn", "include"),
                                                 _system_includes(cuda_home)))
    frontend = find_cudnn_frontend(cuda_home)
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


# The one core source that includes CUTLASS (its fused attention kernel).
FMHA_SOURCE = os.path.join(SRC, "shims", "attention", "sdpa_fmha.cu")


def find_cutlass_fmha(cuda_home):
    """(include flags, defines) for sdpa_fmha.cu: CUTLASS's headers and its
    fused attention kernel (the kernel torch's efficient attention is built
    from), or ([], []) with a line saying why float32 attention stays on
    cuBLAS. The kernel includes curand_kernel.h (for its dropout, compiled
    out here): the toolkit's, else the one the nvidia-curand wheels ship,
    searched after the toolkit's own headers (those wheels' folder holds
    other CUDA headers too, which must not shadow the toolkit's)."""
    source = os.path.join("cutlass_library", "source")
    include = _find_header(os.path.join("cutlass", "cutlass.h"),
                           _header_dirs("AOTIRT_CUTLASS_INCLUDE", os.path.join(source, "include")))
    fmha = _find_header("kernel_forward.h", _header_dirs(
        "AOTIRT_CUTLASS_FMHA", os.path.join(source, "examples", "41_fused_multi_head_attention")))
    toolkit = os.path.join(cuda_home, "include")
    curand = _find_header("curand_kernel.h", [toolkit] +
                          _header_dirs("AOTIRT_CURAND_INCLUDE", os.path.join("nvidia", "cu13", "include")) +
                          _header_dirs("AOTIRT_CURAND_INCLUDE", os.path.join("nvidia", "curand", "include")))
    missing = [name for name, found in (("cutlass/cutlass.h", include), ("kernel_forward.h", fmha),
                                        ("curand_kernel.h", curand)) if not found]
    if missing:
        print(f"aotirt: building without CUTLASS's fused attention: {' and '.join(missing)} not found "
              "(pip install nvidia-cutlass, and nvidia-curand for curand_kernel.h; or set AOTIRT_CUTLASS_INCLUDE, "
              "AOTIRT_CUTLASS_FMHA, AOTIRT_CURAND_INCLUDE); float32 attention runs on cuBLAS", flush=True)
        return [], []
    print(f"aotirt: float32 attention on CUTLASS's fused kernel (headers: {include}, {fmha})", flush=True)
    flags = ["-isystem", include, "-isystem", fmha]
    if curand != toolkit:
        flags += ["-Xcompiler", f"-idirafter,{curand}"]
    # NDEBUG: the kernel's device-side asserts cost registers and branches in
    # its inner loop (measured on the H200: float32 attention at E128, L512 to
    # 1024, went from 1.21-1.26x torch's time to 1.12-1.19x without them).
    return flags, ["AOTIRT_HAVE_CUTLASS_FMHA=1", "NDEBUG"]


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


def _search_paths():
    import site

    paths = list(sys.path)
    try:
        paths += site.getsitepackages() + [site.getusersitepackages()]
    except AttributeError:  # virtualenv's old site.py
        pass
    return [p for i, p in enumerate(paths) if p and os.path.isdir(p) and p not in paths[:i]]


# ---- steps: compiles, links, commands; each run only when out of date --------


def _mtime(path):
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def _dependencies(depfile):
    """The files a make-style dependency file lists, or None without one."""
    try:
        with open(depfile) as f:
            text = f.read()
    except OSError:
        return None
    body = text.split(":", 1)[1] if ":" in text else ""
    return [os.path.join(ROOT, d) for d in shlex.split(body.replace("\\\n", " "))]


class Step:
    """One command that writes `outputs` from `inputs`. Needed when an output
    is missing or older than an input (the dependency file's included), or
    was made by another command (the one recorded in `signature`)."""

    def __init__(self, label, cmd, outputs, inputs, signature, depfile=None, quiet=False):
        self.label, self.cmd, self.outputs, self.inputs = label, cmd, outputs, list(inputs)
        self.signature, self.depfile, self.quiet = signature, depfile, quiet

    def needed(self, rebuilt=()):
        made = [_mtime(o) for o in self.outputs]
        if None in made or any(i in rebuilt for i in self.inputs):
            return True
        try:
            with open(self.signature) as f:
                if f.read() != " ".join(self.cmd):
                    return True
        except OSError:
            return True
        inputs = list(self.inputs)
        if self.depfile:
            deps = _dependencies(self.depfile)
            if deps is None:
                return True
            inputs += deps
        oldest = min(made)
        return any((_mtime(i) or float("inf")) > oldest for i in inputs)

    def run(self):
        """(True, what the command printed) or (False, the command and its output)."""
        for path in self.outputs + [self.signature]:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        proc = subprocess.run(self.cmd, cwd=ROOT, capture_output=True, text=True, check=False)
        output = (proc.stdout + proc.stderr).strip()
        if proc.returncode != 0:
            if os.path.exists(self.signature):
                os.remove(self.signature)  # whatever the command left is not its output
            return False, f"{' '.join(self.cmd)}\n{output}"
        with open(self.signature, "w") as f:
            f.write(" ".join(self.cmd))
        return True, output


class Builder:
    """Runs the compiles, then the links (and other commands), `jobs` at a
    time, printing one numbered line per step ("[3/27] nvcc runtime/tensor.cpp");
    nothing when everything is up to date. Each step's command is recorded
    under `records` (the build folder)."""

    def __init__(self, jobs, records, force=False):
        self.jobs, self.records, self.force = jobs, records, force
        self.compiles, self.links = {}, []

    def _signature(self, target):
        return os.path.join(self.records, os.path.abspath(target).strip(os.sep).replace(os.sep, "_") + ".cmd")

    def compile(self, label, cmd, obj, source):
        # Objects are shared between libraries: one step per object file.
        if obj not in self.compiles:
            self.compiles[obj] = Step(label, cmd + ["-MD", "-MF", obj + ".d"], [obj], [source], self._signature(obj),
                                      obj + ".d")
        return obj

    def link(self, label, cmd, outputs, inputs, quiet=False):
        """A step after the compiles; `quiet`: what it prints on success is not shown."""
        self.links.append(Step(label, cmd, outputs, inputs, self._signature(outputs[0]), quiet=quiet))

    def run(self):
        compiles = [s for s in self.compiles.values() if self.force or s.needed()]
        rebuilt = {s.outputs[0] for s in compiles}
        links = [s for s in self.links if self.force or s.needed(rebuilt)]
        total, done, lock = len(compiles) + len(links), [0], threading.Lock()

        def execute(step):
            with lock:
                done[0] += 1
                print(f"[{done[0]}/{total}] {' '.join(step.cmd) if VERBOSE else step.label}", flush=True)
            return step, step.run()

        for phase in (compiles, links):
            with ThreadPoolExecutor(self.jobs) as pool:
                results = list(pool.map(execute, phase))
            for step, (ok, output) in results:
                if ok and output and not step.quiet:  # warnings
                    print(f"{step.label}:\n{output}", flush=True)
            failed = [(step, output) for step, (ok, output) in results if not ok]
            for step, output in failed:
                print(f"aotirt: {step.label} failed:\n{output}", file=sys.stderr, flush=True)
            if failed:
                sys.exit(f"aotirt: the build failed ({len(failed)} of {len(phase)} steps)")


def _relative(path):
    return os.path.relpath(path, SRC if path.startswith(SRC + os.sep) else ROOT)


class BuildAotirt(build_ext):
    """Builds the native libraries with nvcc/g++ before the Cython modules."""

    def run(self):
        self.cuda_home = find_cuda_home()
        self.nvcc = os.path.join(self.cuda_home, "bin", "nvcc")
        self.cuda_lib = cuda_lib_dir(self.cuda_home)
        package_dir = os.path.dirname(self.get_ext_fullpath("aotirt._handle"))
        self.objects = os.path.join(os.path.abspath(self.build_temp), "aotirt")
        jobs = int(os.environ.get("AOTIRT_BUILD_JOBS", os.cpu_count() or 2))
        builder = Builder(jobs, os.path.join(self.objects, "commands"), force=self.force)
        self.add_core(builder, os.path.join(package_dir, "libaotirt.so"))
        self.add_models(builder, os.path.join(package_dir, "models"))
        builder.run()
        for ext in self.extensions:
            ext.library_dirs.append(package_dir)
        super().run()

    # -- commands --

    def nvcc_compile(self, source, obj, defines=(), include=(), extra=()):
        host = ",".join(["-fPIC", "-fvisibility=hidden", "-Wall", *sanitize_flags()])
        return [self.nvcc, "-std=c++17", "-O3", "-lineinfo", *gencode_flags(), "-Xcompiler", host,
                *[f"-D{d}" for d in defines], "-I", os.path.join(ROOT, "include"),
                *[f for d in include for f in ("-I", d)], *extra, "-c", source, "-o", obj]

    def nvcc_link(self, objects, target, extra=()):
        # cudart is linked dynamically: the core, the models and any test
        # interposer must all see one CUDA runtime (docs/design.md).
        flags = sanitize_flags()
        return [self.nvcc, "-shared", *gencode_flags(), "-cudart", "shared", "-o", target, *objects,
                *(["-Xcompiler", ",".join(flags)] if flags else []), "-Xlinker", f"-rpath,{self.cuda_lib}", *extra]

    # -- libaotirt.so --

    def add_core(self, builder, target):
        sources = sorted(os.path.join(folder, name) for d in CORE_DIRS
                         for folder, _dirs, names in os.walk(os.path.join(SRC, d))
                         for name in names if name.endswith((".cpp", ".cu")))
        defines = ["AOTIRT_BUILDING_CORE"]
        # The core's files include each other as "runtime/x.h" and "shims/x.h".
        include = [SRC]
        cudnn_flags, cudnn_defines = find_cudnn(self.cuda_home)
        defines += cudnn_defines
        fmha_flags, fmha_defines = find_cutlass_fmha(self.cuda_home)
        objects = []
        for source in sources:
            obj = os.path.join(self.objects, "core", _relative(source) + ".o")
            fmha = source == FMHA_SOURCE
            cmd = self.nvcc_compile(source, obj, defines + (fmha_defines if fmha else []), include,
                                    cudnn_flags + (fmha_flags if fmha else []))
            objects.append(builder.compile(f"nvcc {_relative(source)}", cmd, obj, source))
        # Only the C API and the shims are exported. The C++ template
        # instances the core makes (cudnn-frontend's among them) stay inside:
        # with libaotirt loaded RTLD_GLOBAL, another copy in the process
        # (torch's frontend, of another version) would otherwise bind to ours.
        exports = os.path.join(self.objects, "core", "exports.map")
        os.makedirs(os.path.dirname(exports), exist_ok=True)
        with open(exports, "w") as f:
            f.write("{\n  global:\n    aoti_torch_*;\n    aotirt_*;\n  local:\n    *;\n};\n")
        link = ["-Xlinker", "-soname,libaotirt.so", "-Xlinker", f"--version-script={exports}", "-ldl"]
        builder.link("link libaotirt.so", self.nvcc_link(objects, target, link), [target], objects)

    # -- the example models --

    def model_object(self, builder, source, defines, cuda):
        """The object of one model source, compiled once for every library
        that has it (AOTIRT_MODEL_HAS_STATE counts only for STATE_SOURCES)."""
        relative = _relative(source)
        if relative not in STATE_SOURCES:
            defines = [d for d in defines if d != "AOTIRT_MODEL_HAS_STATE"]
        state = "AOTIRT_MODEL_HAS_STATE" in defines
        obj = os.path.join(self.objects, "models", ("cuda" if cuda else "cpu") + ("-state" if state else ""),
                           relative + ".o")
        if cuda:
            cmd = self.nvcc_compile(source, obj, defines)
        else:
            # Like an AOTInductor library built without libtorch: the aoti_torch_*
            # shims stay undefined and are found in the process at dlopen time.
            cmd = ["g++", "-std=c++17", "-O2", "-fPIC", "-fvisibility=hidden", *sanitize_flags(),
                   *[f"-D{d}" for d in defines], "-I", os.path.join(ROOT, "include"), "-c", source, "-o", obj]
        return builder.compile(f"{'nvcc' if cuda else 'g++'} {relative}{' (with state)' if state else ''}", cmd, obj,
                               source)

    def add_model(self, builder, sources, defines, target, cuda):
        objects = [self.model_object(builder, os.path.join(SRC, s), defines, cuda) for s in sources]
        label = f"link {os.path.relpath(target, os.path.dirname(os.path.dirname(target)))}"
        if cuda:
            builder.link(label, self.nvcc_link(objects, target), [target], objects)
        else:
            builder.link(label, ["g++", "-shared", "-fPIC", *sanitize_flags(), *objects, "-o", target], [target],
                         objects)

    def add_models(self, builder, models_dir):
        for name, (common, cpu_only, cuda_only) in MODELS.items():
            state = ["AOTIRT_MODEL_HAS_STATE"] if name in WEIGHTS else []
            self.add_model(builder, common + cpu_only, state, os.path.join(models_dir, f"{name}_cpu.so"), False)
            self.add_model(builder, common + cuda_only, ["AOTIRT_MODEL_CUDA"] + state,
                           os.path.join(models_dir, f"{name}_cuda.so"), True)
        for name, sources in TESTING_CUDA_MODELS.items():
            self.add_model(builder, sources, ["AOTIRT_MODEL_CUDA"],
                           os.path.join(models_dir, "testing", f"{name}_cuda.so"), True)
        # One run of the generator writes every model's weights.
        builder.link(f"weights {', '.join(WEIGHTS)}", [sys.executable, MAKE_WEIGHTS, models_dir],
                     [os.path.join(models_dir, f"{name}.weights") for name in WEIGHTS], [MAKE_WEIGHTS], quiet=True)


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


# Run as a script (python setup.py, pip's build backend, which runs it as
# __main__ too); imported, only its finders are wanted (the host checks in
# tests/ build against the headers the way the build finds them).
if __name__ == "__main__":
    setup(
        packages=["aotirt"],
        package_dir={"": "pyx"},
        package_data={"aotirt": ["*.pxd", "*.pyi", "py.typed"]},
        ext_modules=extensions(),
        cmdclass={"build_ext": BuildAotirt},
        zip_safe=False,
    )
