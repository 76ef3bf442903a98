from aotirt._capi cimport aotirt_handle

# handle.loop(inputs, steps, feedback=..., collect=...) for the handle `h`
# (device_type/device_index its device): (collected, outputs), two lists of
# Tensors. The arguments are those of AotiHandle.loop.
cdef tuple run_loop(aotirt_handle* h, object inputs, object steps, object feedback, object collect,
                    int device_type, int device_index)
