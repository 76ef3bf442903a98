import faulthandler
faulthandler.enable()
import numpy as np
import aotirt
x = np.ones(3, np.float32)
with aotirt.AotiHandle(aotirt.models.path("add_mul", "cpu")) as h:
    print("cpu", h.run([x, x, x])[0].numpy(), flush=True)
print("cpu closed", flush=True)
h = aotirt.CudaHandle(aotirt.models.path("add_mul", "cuda"))
print("cuda opened", flush=True)
try:
    out = h.run([x, x, x])
    print("cuda ran", out[0].numpy(), flush=True)
except Exception as e:
    print("cuda run failed:", type(e).__name__, e, flush=True)
h.close()
print("cuda closed", flush=True)
