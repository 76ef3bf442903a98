"""Devices: how many GPUs there are, and how a device is written.

Module order: this module cimports only the C API (_capi).
"""

from cpython.number cimport PyNumber_Index

from aotirt._capi cimport AOTIRT_DEVICE_CPU, AOTIRT_DEVICE_CUDA, aotirt_device_count, aotirt_peer_access_enabled

# parse_device's device types, for its Python callers.
DEVICE_CPU = AOTIRT_DEVICE_CPU
DEVICE_CUDA = AOTIRT_DEVICE_CUDA


def device_count():
    """Number of usable CUDA devices; 0 when there is no GPU or no driver.

    Unlike every other CUDA entry point this never raises, so it is the way
    to ask whether a GPU is there.
    """
    return aotirt_device_count()


def peer_access_enabled(int consumer, int producer):
    """Whether copies of `producer`'s memory to `consumer` go over direct peer
    access (NVLink or PCIe), enabled at the first copy between the two where
    the hardware allows. False before that copy, and where the driver stages
    the copy through host memory instead (still stream-ordered, no host wait).
    """
    return aotirt_peer_access_enabled(consumer, producer) == 1


cpdef tuple parse_device(object device):
    if not isinstance(device, (bool, float, str)) and hasattr(device, "__index__"):
        index = PyNumber_Index(device)   # ints and numpy integers, not floats or bools
        if not 0 <= index < (1 << 31):
            raise ValueError(f"device index must be >= 0 (and fit in an int), got {device}")
        return (AOTIRT_DEVICE_CUDA, index)
    if isinstance(device, str):
        if device == "cpu":
            return (AOTIRT_DEVICE_CPU, 0)
        if device == "cuda":
            return (AOTIRT_DEVICE_CUDA, 0)
        if device.startswith("cuda:") and device[5:].isascii() and device[5:].isdigit() and len(device) < 15:
            return (AOTIRT_DEVICE_CUDA, int(device[5:]))
    raise ValueError(f"device must be 'cpu', 'cuda', 'cuda:N' or an int, got {device!r}")


cdef str device_name(int device_type, int device_index):
    return "cpu" if device_type == AOTIRT_DEVICE_CPU else f"cuda:{device_index}"
