"""Compiles the small AOTInductor models the constants-by-name tests use
(tests/python/test_constants_aoti.py), with the torch of the interpreter that
runs it, into a cache folder kept apart from the zoo's (so that changing one
does not rebuild the other).

    python tests/aoti/build_weights.py --device cpu --cache .cache/aoti-weights

Per variant (`embedded`: torch's default, the weights compiled into the
library; `blob`: package_constants_on_disk_format="binary_blob", the weights
in a blob beside it) it writes model.pt2, the module's state_dict as
state_a.safetensors, a second module's (other random weights) as
state_b.safetensors, input.npy, the outputs of both modules on it
(expected_a.npy, expected_b.npy) and meta.json (every state_dict entry's
dtype and shape). The last line it prints is "cache: <folder>".
"""

import argparse
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# `large` (CUDA only): the blob variant with 16 MiB of weights, for the
# shared-weights memory figure.
VARIANTS = {"cpu": ("embedded", "blob"), "cuda": ("embedded", "blob", "large")}


def cache_folder(cache, device):
    import torch

    digest = hashlib.sha256()
    with open(os.path.abspath(__file__), "rb") as f:
        digest.update(f.read())
    digest.update(f"torch={torch.__version__};{device}".encode())
    return os.path.join(cache, digest.hexdigest()[:16])


def make_module(seed, width=32):
    import torch

    class WeightsNet(torch.nn.Module):
        """Parameters in submodules (dotted FQNs) and two buffers: `offset`,
        added to activations, stays a constant of the library; `shift`,
        added to fc2's bias, is folded with it into the code by torch (CPU
        and CUDA alike), so every library has a state_dict entry that is no
        constant."""

        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(16, width)
            self.norm = torch.nn.LayerNorm(width)
            self.fc2 = torch.nn.Linear(width, 8)
            self.register_buffer("offset", torch.randn(width))
            self.register_buffer("shift", torch.randn(8))

        def forward(self, x):
            return self.fc2(torch.nn.functional.gelu(self.norm(self.fc1(x))) + self.offset) + self.shift

    torch.manual_seed(seed)
    module = WeightsNet().eval()
    with torch.no_grad():  # LayerNorm starts at ones/zeros: make it matter
        module.norm.weight.uniform_(0.5, 1.5)
        module.norm.bias.uniform_(-0.5, 0.5)
    return module


def build(variant, device, folder):
    import numpy as np
    import torch
    from safetensors.torch import save_file

    os.makedirs(folder, exist_ok=True)
    width = 262144 if variant == "large" else 32   # 27 floats per unit: 27 MiB
    a, b = make_module(0, width).to(device), make_module(1, width).to(device)
    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(2)).to(device)
    with torch.no_grad():
        np.save(os.path.join(folder, "expected_a.npy"), a(x).cpu().numpy())
        np.save(os.path.join(folder, "expected_b.npy"), b(x).cpu().numpy())
    np.save(os.path.join(folder, "input.npy"), x.cpu().numpy())
    for name, module in (("a", a), ("b", b)):
        save_file({k: v.detach().cpu().contiguous() for k, v in module.state_dict().items()},
                  os.path.join(folder, f"state_{name}.safetensors"))
    configs = {"aot_inductor.link_libtorch": False}
    if variant in ("blob", "large"):
        configs["aot_inductor.package_constants_on_disk_format"] = "binary_blob"
    if device == "cuda":
        configs["aot_inductor.embed_kernel_binary"] = True
    exported = torch.export.export(a, (x,))
    torch._inductor.aoti_compile_and_package(exported, package_path=os.path.join(folder, "model.pt2"),
                                             inductor_configs=configs)
    state = {k: {"dtype": str(v.dtype).replace("torch.", ""), "shape": list(v.shape)}
             for k, v in a.state_dict().items()}
    with open(os.path.join(folder, "meta.json"), "w") as f:
        json.dump({"variant": variant, "device": device, "torch": torch.__version__, "configs": configs,
                   "state_dict": state}, f, indent=1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", choices=["cpu", "cuda"], required=True)
    parser.add_argument("--cache", required=True)
    args = parser.parse_args()
    root = cache_folder(args.cache, args.device)
    for variant in VARIANTS[args.device]:
        folder = os.path.join(root, variant)
        if os.path.exists(os.path.join(folder, "meta.json")):
            continue
        print(f"[{variant}] compiling for {args.device}", flush=True)
        build(variant, args.device, folder)
    print(f"cache: {root}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
