"""The CUDA runtime's per-thread current device and the driver's contexts,
read through the very libcudart that libaotirt uses (one runtime per
process: its current device is the one aotirt saves and restores)."""

import ctypes
import os


def _loaded(name):
    """The loaded library whose file name starts with `name` (aotirt loads it)."""
    import aotirt

    aotirt.device_count()  # libaotirt, and the CUDA runtime with it, are loaded from here on
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            if os.path.basename(path).startswith(name):
                return ctypes.CDLL(path)
    raise RuntimeError(f"{name} is not loaded in this process")


def current_device():
    """cudaGetDevice on this thread."""
    device = ctypes.c_int(-1)
    assert _loaded("libcudart.so").cudaGetDevice(ctypes.byref(device)) == 0
    return device.value


def set_current_device(device):
    """cudaSetDevice on this thread."""
    assert _loaded("libcudart.so").cudaSetDevice(device) == 0


def can_access_peer(device, peer):
    """cudaDeviceCanAccessPeer: whether `device` can map `peer`'s memory."""
    can = ctypes.c_int(0)
    assert _loaded("libcudart.so").cudaDeviceCanAccessPeer(ctypes.byref(can), device, peer) == 0
    return bool(can.value)


def primary_context_active(device):
    """Whether `device`'s primary context exists (someone in the process used
    the device): cuDevicePrimaryCtxGetState."""
    driver = _loaded("libcuda.so")
    handle, flags, active = ctypes.c_int(0), ctypes.c_uint(0), ctypes.c_int(0)
    assert driver.cuDeviceGet(ctypes.byref(handle), device) == 0
    assert driver.cuDevicePrimaryCtxGetState(handle, ctypes.byref(flags), ctypes.byref(active)) == 0
    return bool(active.value)
