"""GPU time per call from CUDA events, for the workers of bench/ops.py and
bench/zoo.py: the same code times aotirt (events from cuda.bindings on
aotirt's stream, AotirtClock) and torch (torch.cuda.Event on torch's
stream, TorchClock). Imports nothing at import but the standard library;
cuda.bindings, aotirt and torch when used.

Events around a batch of calls also count the GPU's idle gaps while the host
is still launching, which would make a slower host look like a slower op.
So each batch is preceded, on the same stream, by a kernel that spins for
longer than the host takes to queue the whole batch: the start event follows
the spin, and the two events then bracket the batch's own GPU work, back to
back. The spin is sized from the host's queueing time of earlier batches; a
batch the host had not finished queueing when the spin ended is reported as
host-bound (its figure may include gaps).

    clock = AotirtClock()                      # or TorchClock(), in a torch process
    us, host_bound = clock.timer.us_per_call(call, calls, clock.wait)
"""

import ctypes
import os
import time

SPIN_KERNEL = "aotirt_bench_spin"  # its name, as profilers list it

# A kernel of one thread that returns `ns` nanoseconds (the GPU's global
# timer) after it starts. Hand-written PTX, loaded by the driver: no
# compiler is needed at run time. Tried with each (ISA version, target)
# until the driver takes one.
_SPIN_PTX = """
.version {version}
.target {target}
.address_size 64
.visible .entry {name}(.param .u64 {name}_ns)
{{
    .reg .pred %p<2>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [{name}_ns];
    mov.u64 %rd2, %globaltimer;
    add.s64 %rd3, %rd2, %rd1;
$L_spin:
    mov.u64 %rd4, %globaltimer;
    setp.lt.u64 %p1, %rd4, %rd3;
    @%p1 bra $L_spin;
    ret;
}}
"""

MIN_SPIN_NS = 200_000
MAX_SPIN_NS = 2_000_000_000


def _check(result, what):
    """The values of a cuda.bindings call's result tuple; raises on an error code."""
    code = result[0]
    if int(code) != 0:
        raise RuntimeError(f"{what} failed: {getattr(code, 'name', code)}")
    return result[1] if len(result) == 2 else result[1:]


def _current_context(device):
    """Makes `device`'s primary context current on this thread (the one
    aotirt's and torch's runtimes use)."""
    from cuda.bindings import driver, runtime

    _check(runtime.cudaSetDevice(device), "cudaSetDevice")
    if int(_check(driver.cuCtxGetCurrent(), "cuCtxGetCurrent")) == 0:
        _check(driver.cuInit(0), "cuInit")
        handle = _check(driver.cuDeviceGet(device), "cuDeviceGet")
        _check(driver.cuCtxSetCurrent(_check(driver.cuDevicePrimaryCtxRetain(handle), "cuDevicePrimaryCtxRetain")),
               "cuCtxSetCurrent")


class Spinner:
    """The spin kernel, loaded into `device`'s primary context."""

    def __init__(self, device=0):
        from cuda.bindings import driver

        _current_context(device)
        handle = _check(driver.cuDeviceGet(device), "cuDeviceGet")
        attribute = driver.CUdevice_attribute
        major = _check(driver.cuDeviceGetAttribute(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, handle),
                       "cuDeviceGetAttribute")
        minor = _check(driver.cuDeviceGetAttribute(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, handle),
                       "cuDeviceGetAttribute")
        errors = []
        for version, target in (("8.7", f"sm_{major}{minor}"), ("7.8", f"sm_{major}{minor}"), ("7.0", "sm_70")):
            # Kept alive with the module: the driver reads it while loading.
            ptx = _SPIN_PTX.format(version=version, target=target, name=SPIN_KERNEL)
            self._image = ctypes.create_string_buffer(ptx.encode())
            code, module = driver.cuModuleLoadData(ctypes.addressof(self._image))
            if int(code) == 0:
                break
            errors.append(f"PTX {version}/{target}: {getattr(code, 'name', code)}")
        else:
            raise RuntimeError("the spin kernel does not load: " + "; ".join(errors))
        self._module = module
        self._function = _check(driver.cuModuleGetFunction(module, SPIN_KERNEL.encode()), "cuModuleGetFunction")
        self._ns = ctypes.c_uint64(0)
        self._params = (ctypes.c_void_p * 1)(ctypes.addressof(self._ns))

    def spin(self, stream_address, ns):
        from cuda.bindings import driver

        self._ns.value = int(ns)
        _check(driver.cuLaunchKernel(self._function, 1, 1, 1, 1, 1, 1, 0, driver.CUstream(stream_address),
                                     ctypes.addressof(self._params), 0), "cuLaunchKernel (spin)")


class RuntimeEvents:
    """A start and a stop event on a raw CUDA stream, through cuda.bindings."""

    def __init__(self, stream_address):
        from cuda.bindings import runtime

        self._runtime = runtime
        self._stream = runtime.cudaStream_t(stream_address)
        self._start = _check(runtime.cudaEventCreate(), "cudaEventCreate")
        self._stop = _check(runtime.cudaEventCreate(), "cudaEventCreate")

    def start(self):
        _check(self._runtime.cudaEventRecord(self._start, self._stream), "cudaEventRecord")

    def stop(self):
        _check(self._runtime.cudaEventRecord(self._stop, self._stream), "cudaEventRecord")

    def elapsed_ms(self):
        """Only once the stream has been waited for (by the caller's own wait)."""
        return float(_check(self._runtime.cudaEventElapsedTime(self._start, self._stop), "cudaEventElapsedTime"))


class GpuTimer:
    """GPU microseconds per call of batches of calls on one stream."""

    # How much longer than the host's slowest pace so far the spin lasts.
    # A profiler's overhead varies from batch to batch: its callers raise it.
    spin_margin = 1.5

    def __init__(self, stream_address, events, spinner=None):
        self.stream_address = stream_address
        self.events = events
        self.spinner = spinner
        self._host_ns_per_call = 0.0

    def reset(self):
        """Forgets the host's pace (a new kind of call follows)."""
        self._host_ns_per_call = 0.0

    def us_per_call(self, call, calls, wait):
        """(GPU microseconds per call, host_bound) of `calls` calls of
        `call()`; `wait()` waits for the stream (aotirt: the copy routine),
        outside the timed region."""
        if self.spinner is not None:
            spin_ns = min(MAX_SPIN_NS, max(MIN_SPIN_NS, int(self.spin_margin * self._host_ns_per_call * calls)))
            begun = time.perf_counter_ns()
            self.spinner.spin(self.stream_address, spin_ns)
        else:
            spin_ns, begun = 0, time.perf_counter_ns()
        self.events.start()
        for _ in range(calls):
            call()
        self.events.stop()
        queued = time.perf_counter_ns() - begun
        wait()
        self._host_ns_per_call = max(self._host_ns_per_call, queued / calls)
        return self.events.elapsed_ms() * 1e3 / calls, queued > spin_ns


def _spinner(device):
    """(Spinner or None, note): without one the figures may include launch gaps, and the note says so."""
    try:
        return Spinner(device), ""
    except Exception as error:  # noqa: BLE001 - timed without it, and said so
        return None, f"no spin kernel ({error})"


class AotirtClock:
    """aotirt's shared stream of device 0 (or `stream`, an aotirt.Stream of
    device 0): a GpuTimer with cuda.bindings events on it, and its wait,
    which is the copy routine (the one rule)."""

    def __init__(self, stream=None):
        import numpy as np

        import aotirt

        self._aotirt = aotirt
        # Held: the shims' and the handles' work runs on it.
        self.stream = stream if stream is not None else aotirt.Stream.shared(0)
        address = self.stream.__cuda_stream__()[1]
        self._marker = aotirt.asarray(np.zeros(1, np.float32), device=0, stream=self.stream)
        spinner, self.note = _spinner(0)
        self.timer = GpuTimer(address, RuntimeEvents(address), spinner)

    def wait(self):
        self._aotirt.copy_to_host(self._marker)


class TorchEvents:
    """torch.cuda.Event on torch's current stream."""

    def __init__(self, torch):
        self.begin = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)

    def start(self):
        self.begin.record()

    def stop(self):
        self.end.record()

    def elapsed_ms(self):
        return self.begin.elapsed_time(self.end)


class TorchClock:
    """torch's current stream: a GpuTimer with torch.cuda.Event, and torch's wait.

    AOTIRT_BENCH_TORCH_STREAM=side (a diagnostic, bench/probe_workers.py)
    first makes a non-blocking stream of its own current, for the clock's
    life, in place of the legacy default stream: aotirt's stream is
    non-blocking, and the kind of stream was seen to move the same kernels'
    GPU time. The clock's note then says so."""

    def __init__(self):
        import torch

        self._torch = torch
        torch.cuda.init()
        self.side_stream = None
        if os.environ.get("AOTIRT_BENCH_TORCH_STREAM") == "side":
            self.side_stream = torch.cuda.Stream()   # held: current for the clock's life
            torch.cuda.set_stream(self.side_stream)
        spinner, note = _spinner(torch.cuda.current_device())
        self.note = "; ".join(n for n in (note, self.side_stream is not None and "torch on a stream of its own") if n)
        self.timer = GpuTimer(torch.cuda.current_stream().cuda_stream, TorchEvents(torch), spinner)

    def wait(self):
        self._torch.cuda.current_stream().synchronize()
