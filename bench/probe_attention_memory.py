"""Whether where the operands lie, or their values, moves float16/bfloat16
attention's GPU time: the second diagnostic for bench/ops.py's attention
rows, not a benchmark.

    python3 bench/probe_attention_memory.py [--rounds N] [--out FILE]

bench/probe_attention_streams.py found the kind of stream moves neither
side, and Nsight Compute found both sides launch the same cuDNN kernel with
the same grid, block, registers and shared memory, yet aotirt's took
0.4 to 0.5 us longer than torch's under ncu's cache flush. What differs is
the memory the operands lie in (aotirt's block cache over the stream-ordered
pool, against torch's caching allocator) and their values (numpy's normal
draws against torch.randn's). This process imports both, so one run can
cross them, all on aotirt's shared stream, the variants taking turns:

  torch op / torch memory      torch's SDPA on torch tensors of numpy's values
  torch op / aotirt memory     the same op on aotirt's tensors (DLPack views)
  aotirt shim / aotirt memory  the shim, as bench/ops.py calls it
  aotirt shim / torch memory   the shim on torch's tensors (DLPack views)
  torch op / torch randn       torch's SDPA on torch.randn's values, as
                               bench/ops.py's torch worker makes them

Each figure: GPU us per call (events around calls queued behind a spin
kernel, bench/gpu_timer.py), the median over the rounds; one JSON row per
shape and variant on stdout (and appended to --out). Needs torch: run it
with the Python that has it.
"""

import argparse
import json
import os
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
sys.path.insert(0, os.path.join(REPO, "tests"))
from gpu_timer import GpuTimer, RuntimeEvents, Spinner  # noqa: E402
from probe_attention_streams import CASES, run_rounds  # noqa: E402
from workers import Rows  # noqa: E402

SHAPE = (2, 8)   # batch, heads


def operands(np, torch, aotirt, sc, dtype, seq, dim):
    """{memory: {seed: (aotirt handle, torch tensor)}} for q, k, v (seeds 1, 2, 3) in both memories."""
    shape = [*SHAPE, seq, dim]
    strides = [SHAPE[1] * seq * dim, seq * dim, dim, 1]
    made = {"aotirt": {}, "torch": {}, "randn": {}}
    for seed in (1, 2, 3):
        base = np.random.default_rng(seed).standard_normal(int(np.prod(shape)), dtype=np.float32)
        handle, _ = sc.view(base, shape, strides, 0, "cuda:0", dtype)
        made["aotirt"][seed] = (handle, torch.from_dlpack(handle.keep).view(shape))
        theirs = torch.from_numpy(base).cuda().to(getattr(torch, dtype)).view(shape)
        adopted = aotirt.from_dlpack(theirs)
        made["torch"][seed] = (sc.view_of(adopted, shape, strides, keep=(adopted, theirs)), theirs)
        g = torch.Generator(device="cuda").manual_seed(seed)
        made["randn"][seed] = (None, torch.randn(shape, generator=g, device="cuda").to(getattr(torch, dtype)))
    return made


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out")
    parser.add_argument("--ncu", action="store_true",
                        help="the first shape only, each variant called twice in the order above, untimed "
                             "(for ncu: its kernels come in that order)")
    args = parser.parse_args()
    if args.ncu:
        del CASES[1:]

    import numpy as np
    import torch
    import torch.nn.functional as F

    import aotirt
    from ops import AotirtWorker
    from support import shims as sc

    torch.cuda.init()
    shared = aotirt.Stream.shared(0)
    address = shared.__cuda_stream__()[1]
    torch.cuda.set_stream(torch.cuda.ExternalStream(address))   # both sides on aotirt's shared stream
    marker = aotirt.asarray(np.zeros(1, np.float32), device=0)
    spinner = Spinner(0)

    def wait():
        aotirt.copy_to_host(marker)

    class GivenOperands(AotirtWorker):
        """ops.py's worker, its q, k, v (seeds 1, 2, 3) the ones given."""
        given = {}

        def tensor(self, shape, dtype, channels_last=False, seed=0):
            return self.given[seed][0]

    worker = GivenOperands()
    variants, keep = {}, []
    for dtype, seq, dim, causal in CASES:
        made = operands(np, torch, aotirt, sc, dtype, seq, dim)
        keep.append(made)
        key = (dtype, seq, dim, causal)
        for memory in ("torch", "aotirt", "randn"):
            q, k, v = (made[memory][seed][1] for seed in (1, 2, 3))

            def op(q=q, k=k, v=v, c=causal):
                F.scaled_dot_product_attention(q, k, v, is_causal=c)
            variants[(key, "torch op", memory)] = op
        for memory in ("aotirt", "torch"):
            worker.given = made[memory]
            case = {"op": "sdpa", "batch": SHAPE[0], "heads": SHAPE[1], "kv_heads": SHAPE[1], "seq": seq,
                    "head_dim": dim, "causal": causal, "dtype": dtype}
            call, _ = worker.setup_sdpa(case, "cudnn")
            keep.append(worker.keep)
            worker.keep = []
            variants[(key, "aotirt shim", memory)] = call
    if args.ncu:
        with torch.inference_mode():
            for name, call in variants.items():
                for _ in range(2):
                    call()
                wait()
                print(json.dumps({"called": list(name[1:])}), flush=True)
        return 0
    timer = GpuTimer(address, RuntimeEvents(address), spinner)
    with torch.inference_mode():
        for call in variants.values():
            for _ in range(3):
                call()
            timer.us_per_call(call, 3, wait)
        figures = run_rounds({name: (timer, call, wait) for name, call in variants.items()}, args.rounds)
    emit = Rows(args.out)
    for (key, op, memory), us in figures.items():
        dtype, seq, dim, causal = key
        emit({"dtype": dtype, "seq": seq, "head_dim": dim, "causal": causal, "op": op, "memory": memory,
              "us": round(us, 3)})
    emit.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
