import faulthandler, sys
faulthandler.enable()
import numpy as np
import aotirt
h = aotirt.CudaHandle(aotirt.models.path("add_mul", "cuda"))
print("opened", h, flush=True)
a = np.ones((), np.float32)
out = h.run([a, a, a])
print("ran", out, flush=True)
print("value", out[0].numpy(), out[0].stream, h.stream, out[0].stream == h.stream, flush=True)
h.close()
print("closed ok", flush=True)
del out, h
print("end", flush=True)
