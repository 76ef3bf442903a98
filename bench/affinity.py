"""Pins a benchmark driver, and so the workers it starts, to the CPUs next
to the GPU (the ones Linux lists as local to the GPU's PCI device).

Why: the zoo's GPU time per call of eager runs moved by 3 to 5% between two
runs of the same kernels (sessions 14 and 15), in a direction shared by
nearly every model of one worker, while the graph replays of the same
kernels in the same worker moved by under 1% (bench/runs/s15-full-check.md).
A graph replay is one launch a call; an eager run is one launch a kernel,
which the GPU reads from the process's command buffers, in host memory. So
where the operating system placed each worker (its memory on the GPU's
socket or the far one) is the suspect for a per-worker shift of eager runs
only; not yet proven. Binding to the GPU's NUMA node is what GPU benchmarks
do against it: a child inherits its parent's CPU set, and Linux places a
process's memory on the node of the CPU that first touches it. Where every
CPU is local (one node), pinning changes nothing and the row says so.

AOTIRT_BENCH_PIN=0 leaves the processes where the operating system puts
them; AOTIRT_BENCH_PIN=remote pins them to the CPUs that are not local to
the GPU, the other side of the comparison (bench/probe_workers.py). Either
way the driver emits one "affinity" row saying what was done, and the
report's header quotes it.
"""

import os

SYSFS_PCI = "/sys/bus/pci/devices"


def parse_cpulist(text):
    """CPU numbers of a Linux CPU list ("0-3,8,10-11"), ascending."""
    cpus = set()
    for part in text.strip().split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        first, last = int(low), int(high or low)
        if last < first:
            raise ValueError(f"not a CPU list: {text!r}")
        cpus.update(range(first, last + 1))
    return sorted(cpus)


def format_cpulist(cpus):
    """The Linux CPU list of CPU numbers: [0, 1, 2, 5] -> "0-2,5"."""
    ranges, ordered = [], sorted(set(cpus))
    for cpu in ordered:
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def sysfs_name(bus_id):
    """CUDA's PCI bus id ("0000:3B:00.0", or with an 8-digit domain) as
    sysfs names the device ("0000:3b:00.0")."""
    try:
        domain, bus, rest = bus_id.strip().split(":")
        device, function = rest.split(".")
        return f"{int(domain, 16):04x}:{int(bus, 16):02x}:{int(device, 16):02x}.{int(function, 16):x}"
    except ValueError:
        raise ValueError(f"not a PCI bus id: {bus_id!r}") from None


def cuda_bus_id(device=0):
    """The PCI bus id of CUDA device `device` (CUDA_VISIBLE_DEVICES applies),
    from the driver API: no context is made."""
    from cuda.bindings import driver

    def check(result, what):
        code = result[0]
        if int(code) != 0:
            raise RuntimeError(f"{what} failed: {getattr(code, 'name', code)}")
        return result[1] if len(result) > 1 else None

    check(driver.cuInit(0), "cuInit")
    handle = check(driver.cuDeviceGet(device), "cuDeviceGet")
    raw = check(driver.cuDeviceGetPCIBusId(64, handle), "cuDeviceGetPCIBusId")
    return (raw.decode() if isinstance(raw, bytes) else str(raw)).split("\0")[0]


def local_cpus(bus_id, sysfs=SYSFS_PCI):
    """(CPUs local to the PCI device, its NUMA node or None) from sysfs."""
    folder = os.path.join(sysfs, sysfs_name(bus_id))
    with open(os.path.join(folder, "local_cpulist")) as f:
        cpus = parse_cpulist(f.read())
    node = None
    try:
        with open(os.path.join(folder, "numa_node")) as f:
            node = int(f.read().strip())
    except (OSError, ValueError):
        pass
    return cpus, (node if node is not None and node >= 0 else None)


def pin_to_gpu(device=0, bus_id=None, sysfs=SYSFS_PCI):
    """Restricts this process (and the children it starts after) to the CPUs
    local to GPU `device` that it may run on; returns the "affinity" row
    that says what was done and why."""
    row = {"case": "affinity", "device": device, "pinned": False}
    allowed = sorted(os.sched_getaffinity(0))
    row["allowed"] = format_cpulist(allowed)
    mode = os.environ.get("AOTIRT_BENCH_PIN", "local")
    if mode == "0":
        row["note"] = "not pinned (AOTIRT_BENCH_PIN=0)"
        return row
    try:
        bus_id = bus_id or cuda_bus_id(device)
        local, node = local_cpus(bus_id, sysfs)
    except Exception as error:  # noqa: BLE001 - no pinning is no reason to stop a benchmark: the row says why
        row["note"] = f"not pinned: the GPU's local CPUs are unknown ({type(error).__name__}: {error})"
        return row
    row["bus_id"], row["numa_node"] = bus_id, node
    remote = mode == "remote"
    chosen = sorted(set(allowed) - set(local)) if remote else sorted(set(local) & set(allowed))
    if not chosen:
        row["note"] = (f"not pinned: every CPU this process may use ({row['allowed']}) is local to the GPU "
                       f"({format_cpulist(local)})" if remote else
                       f"not pinned: none of the GPU's local CPUs ({format_cpulist(local)}) is among those this "
                       f"process may use ({row['allowed']})")
        return row
    os.sched_setaffinity(0, chosen)
    row.update(pinned=True, cpus=format_cpulist(chosen))
    where = f"NUMA node {node}" if node is not None else "no NUMA node reported"
    row["note"] = (f"CPUs {row['cpus']} of {row['allowed']}, those {'not ' if remote else ''}local to the GPU "
                   f"({bus_id}, {where})" + ("; that is every CPU here" if chosen == allowed else ""))
    return row
