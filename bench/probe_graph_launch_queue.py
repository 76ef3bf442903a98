"""How far the host runs ahead of torch's own CUDA-graph replays of a zoo
model before cudaGraphLaunch blocks: a diagnostic, not a benchmark. Needs
torch (unlike the aotirt probes), on a GPU.

    python3 bench/probe_graph_launch_queue.py [--only llama_bf16,llama_decode_f32] [--backends cudnn,flash,math]

Session 41's bench/probe_auto_graph_host.py found llama_bf16's graph replays
in aotirt (automatic and explicit alike) fast for the first four calls after
a drain (15 us) and paced by the GPU after that (90 to 175 us a call, its
GPU time 87 us), with no host-blocking CUDA call but the drains: the launch
queue fills after four replays. llama_decode_f32 (88 us of GPU time too)
never blocked in a batch of 20. This asks the same of torch's CUDA graph of
the same module, with each scaled_dot_product_attention backend torch can
use for it, and counts each graph's nodes by kind: whether the queue fills
for any graph of those kernels (cuDNN's attention among them), or only for
aotirt's.
"""

import argparse
import json
import os
import statistics
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(BENCH), "tests", "aoti"))

CALLS_PER_BATCH = 20
BATCHES = 5
BACKENDS = ("cudnn", "flash", "efficient", "math")


def node_kinds(graph):
    """{node kind: count} of a kept torch CUDA graph, or a note why not."""
    try:
        from cuda.bindings import runtime as cudart

        raw = cudart.cudaGraph_t(init_value=graph.raw_cuda_graph())
        err, _, count = cudart.cudaGraphGetNodes(raw, 0)
        err, nodes, count = cudart.cudaGraphGetNodes(raw, count)
        if err != cudart.cudaError_t.cudaSuccess:
            return {"unavailable": f"cudaGraphGetNodes: {err}"}
        kinds = {}
        for node in nodes[:count]:
            _, kind = cudart.cudaGraphNodeGetType(node)
            name = str(kind).split(".")[-1].split(":")[0].replace("cudaGraphNodeType", "")
            kinds[name] = kinds.get(name, 0) + 1
        return kinds
    except Exception as e:  # a diagnostic: say what stopped it and go on
        return {"unavailable": f"{type(e).__name__}: {e}"}


def calls_before_a_slow_one(times, slow_us):
    """How many calls of a batch came before the first that took over `slow_us`."""
    return next((i for i, us in enumerate(times) if us > slow_us), len(times))


def probe(name, backend):
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from zoo import MODELS

    make_module, make_inputs, dtype = MODELS[name]
    torch.manual_seed(0)
    module = make_module().eval().to(getattr(torch, dtype) if dtype in ("bfloat16", "float16") else torch.float32)
    module = module.to("cuda")
    inputs = make_inputs("cuda")
    chosen = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
              "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}[backend]
    try:
        with torch.no_grad(), sdpa_kernel([chosen]):
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                for _ in range(3):
                    module(*inputs)
            torch.cuda.current_stream().wait_stream(stream)
            graph = torch.cuda.CUDAGraph(keep_graph=True)
            with torch.cuda.graph(graph):
                module(*inputs)
    except Exception as e:
        return {"model": name, "backend": backend, "error": f"{type(e).__name__}: {str(e)[:200]}"}
    graph.instantiate()
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(CALLS_PER_BATCH):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    gpu_us = start.elapsed_time(end) * 1e3 / CALLS_PER_BATCH
    batches = []
    for _ in range(BATCHES):
        times = []
        for _ in range(CALLS_PER_BATCH):
            begin = time.perf_counter()
            graph.replay()
            times.append(round((time.perf_counter() - begin) * 1e6, 1))
        torch.cuda.synchronize()
        batches.append(times)
    fast = [calls_before_a_slow_one(times, gpu_us / 2) for times in batches]
    return {"model": name, "backend": backend, "gpu_us_per_replay": round(gpu_us, 2),
            "host_us_median": statistics.median(us for times in batches for us in times),
            "calls_before_the_first_slow_one": fast, "one_batch_us": batches[-1], "nodes": node_kinds(graph)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="llama_bf16,llama_decode_f32")
    parser.add_argument("--backends", default=",".join(BACKENDS))
    args = parser.parse_args()
    for name in args.only.split(","):
        for backend in args.backends.split(","):
            print(json.dumps(probe(name, backend)), flush=True)


if __name__ == "__main__":
    main()
