"""The real models of issue 4, as torch modules (imported only by build.py).

Each entry: name -> (module factory, example-input factory, dtype name).
Inputs are seeded so that the references are reproducible.
"""

import torch


class MLP(torch.nn.Module):
    def __init__(self, d_in=64, d_hidden=256, d_out=32):
        super().__init__()
        self.fc1 = torch.nn.Linear(d_in, d_hidden)
        self.fc2 = torch.nn.Linear(d_hidden, d_hidden)
        self.fc3 = torch.nn.Linear(d_hidden, d_out)

    def forward(self, x):
        return self.fc3(torch.nn.functional.gelu(self.fc2(torch.relu(self.fc1(x)))))


class TransformerBlock(torch.nn.Module):
    def __init__(self, d=128, heads=4):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(d)
        self.attn = torch.nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = torch.nn.LayerNorm(d)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(), torch.nn.Linear(4 * d, d))

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class ConvBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(16)
        self.conv2 = torch.nn.Conv2d(16, 8, 3, stride=2, padding=1)

    def forward(self, x):
        return self.conv2(torch.relu(self.bn(self.conv1(x))))


class TwoOutputs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(32, 16)

    def forward(self, x, mask):
        y = self.fc(x)
        return y.softmax(-1), (y > 0) & mask


class StridedViewOutput(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(24, 48)

    def forward(self, x):
        y = self.fc(x)
        return y.t()[::2]          # a transposed, stepped view of an intermediate


class IntOps(torch.nn.Module):
    def forward(self, tokens, counts):
        return (tokens * 3 + counts.to(torch.int64)).cumsum(-1), counts.to(torch.float32).sum(-1)


def _seeded(*shapes_and_dtypes):
    def make(device):
        g = torch.Generator().manual_seed(1234)
        out = []
        for shape, dtype in shapes_and_dtypes:
            if dtype == torch.bool:
                out.append((torch.rand(shape, generator=g) > 0.5).to(device))
            elif dtype in (torch.int32, torch.int64):
                out.append(torch.randint(0, 100, shape, generator=g, dtype=dtype).to(device))
            else:
                out.append(torch.randn(shape, generator=g).to(dtype).to(device))
        return tuple(out)
    return make


MODELS = {
    "mlp": (MLP, _seeded(((8, 64), torch.float32)), "float32"),
    "transformer_f32": (TransformerBlock, _seeded(((2, 16, 128), torch.float32)), "float32"),
    "transformer_bf16": (TransformerBlock, _seeded(((2, 16, 128), torch.bfloat16)), "bfloat16"),
    "conv_block": (ConvBlock, _seeded(((2, 3, 32, 32), torch.float32)), "float32"),
    "two_outputs": (TwoOutputs, _seeded(((4, 32), torch.float32), ((4, 16), torch.bool)), "float32"),
    "strided_view": (StridedViewOutput, _seeded(((6, 24), torch.float32)), "float32"),
    "int_ops": (IntOps, _seeded(((3, 10), torch.int64), ((3, 10), torch.int32)), "int64"),
    "mlp_default_gemm": (MLP, _seeded(((8, 64), torch.float32)), "float32"),
    "mlp_f16": (MLP, _seeded(((8, 64), torch.float16)), "float16"),
}

# Models compiled without Triton GEMMs: they call the cuBLAS / CPU mm fallbacks.
DEFAULT_GEMM = {"mlp_default_gemm"}

# The weights and bad-input tests' model: its weights are written beside the
# library (aot_inductor.package_constants_on_disk_format="binary_blob", a
# *_weights.blob entry that AOTInductorModelUpdateConstantsFromBlob loads) and
# the batch dimension of its input is dynamic, within these bounds.
MODELS["mlp_blob"] = (MLP, _seeded(((8, 64), torch.float32)), "float32")
BLOB_WEIGHTS = {"mlp_blob"}
DYNAMIC_BATCH = {"mlp_blob": (1, 64)}
