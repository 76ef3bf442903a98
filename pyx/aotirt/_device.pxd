# ("cpu" | "cuda" | "cuda:N" | N) -> (device type, index). cpdef: the Python
# modules (loader, models, pipeline) parse devices with it too, comparing the
# type with DEVICE_CPU.
cpdef tuple parse_device(object device)

# "cpu" or "cuda:N", as Tensor.device and AotiHandle.device say it.
cdef str device_name(int device_type, int device_index)
