"""The real models of issues 4 and 14, as torch modules (imported only by
build.py and by torch processes of the benchmarks).

Each entry: name -> (module factory, example-input factory, dtype name).
Inputs are seeded so that the references are reproducible.

ZOO (issue 14) holds users' models as they come: torchvision and
transformers architectures built from configs with random weights (nothing
is downloaded), compiled for CUDA only, with inductor's DEFAULT configs plus
link_libtorch=False (build.py). torchvision and transformers are imported
when a zoo model is built, never by this module itself. llama_decode_f32 is
one greedy step of a Llama decoder with a static KV cache held as mutable
buffers (static_decoder.py, issue 16), gemma_decode_f32 the same of a Gemma
decoder. Issue 18 adds the rest of the zoo: more torchvision and
transformers architectures (zoo_architectures.py) and models written to
reach one op each (op_models.py).
"""

import functools

import torch

from op_models import CondBranches, Int4WeightOnlyLinear, ScatterOps, TopKSampling, TopPSampling
from static_decoder import gemma_static_decoder, llama_static_decoder, step_inputs
from zoo_architectures import WhisperDecoderLogits, bert_encoder, gpt2_lm, mixtral_moe, qwen2_lm, torchvision_builder


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


class SortOps(torch.nn.Module):
    """Top-k sampling's selection and argsort: aten.topk, aten.sort.stable and
    aten.sort, which AOTInductor leaves to the fallback shims. The keys are
    the inputs themselves (times 2, exactly), so orders are exact."""

    def forward(self, logits, ids):
        values, indices = (logits * 2.0).topk(5, dim=-1)
        order = torch.argsort(logits, dim=0, descending=True, stable=True)
        ids_sorted, ids_order = torch.sort(ids, dim=-1, stable=True)
        return values, indices, order, ids_sorted, ids_order, torch.sort(logits, dim=-1).values


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
    "sort_ops": (SortOps, _seeded(((4, 100), torch.float32), ((4, 30), torch.int64)), "float32"),
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

# ---- issue 14: the zoo ----

class Conv1dStack(torch.nn.Module):
    """Conv1d layers with stride, dilation, groups and a depthwise one."""

    def __init__(self):
        super().__init__()
        self.layers = torch.nn.Sequential(
            torch.nn.Conv1d(16, 32, 3, padding=1), torch.nn.GELU(),
            torch.nn.Conv1d(32, 64, 5, stride=2, padding=4, dilation=2, groups=4), torch.nn.ReLU(),
            torch.nn.Conv1d(64, 64, 3, padding=1, groups=64),
            torch.nn.Conv1d(64, 48, 1, bias=False), torch.nn.GELU(),
            torch.nn.Conv1d(48, 32, 3, stride=3, padding=3, dilation=3))

    def forward(self, x):
        return self.layers(x)


class Attention(torch.nn.Module):
    """scaled_dot_product_attention itself: causal, and with an additive mask."""

    def forward(self, q, k, v, mask):
        sdpa = torch.nn.functional.scaled_dot_product_attention
        return sdpa(q, k, v, is_causal=True), sdpa(q, k, v, attn_mask=mask)


class CausalLMLogits(torch.nn.Module):
    """A transformers causal LM as input_ids -> logits, without a KV cache."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, use_cache=False).logits


class EncoderHidden(torch.nn.Module):
    """A transformers encoder as input features -> last hidden state."""

    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder

    def forward(self, input_features):
        return self.encoder(input_features).last_hidden_state


def torchvision_model(name):
    def make():
        import torchvision

        return getattr(torchvision.models, name)(weights=None)
    return make


def whisper_encoder():
    """Whisper tiny's encoder (d_model 384, 4 layers, 6 heads; 80 mel bins x 3000 frames)."""
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    config = WhisperConfig(d_model=384, encoder_layers=4, encoder_attention_heads=6, encoder_ffn_dim=1536,
                           decoder_layers=4, decoder_attention_heads=6, decoder_ffn_dim=1536, num_mel_bins=80,
                           max_source_positions=1500, attn_implementation="sdpa")
    return EncoderHidden(WhisperEncoder(config))


def llama_decoder():
    """Llama-style: 2 layers, hidden 256, 4 query heads over 2 key/value heads (GQA)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=1024, hidden_size=256, intermediate_size=688, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                         attn_implementation="sdpa")
    return CausalLMLogits(LlamaForCausalLM(config))


def gemma_decoder():
    """Gemma-style: 2 layers, hidden 256, 4 query heads over one key/value head, head size 64."""
    from transformers import GemmaConfig, GemmaForCausalLM

    config = GemmaConfig(vocab_size=1024, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=1, head_dim=64, max_position_embeddings=256,
                         attn_implementation="sdpa")
    return CausalLMLogits(GemmaForCausalLM(config))


def _attention_inputs(dtype, B=2, H=8, L=256, E=64):
    return _seeded(((B, H, L, E), dtype), ((B, H, L, E), dtype), ((B, H, L, E), dtype), ((B, 1, L, L), dtype))


_IMAGES = _seeded(((2, 3, 224, 224), torch.float32))
_SMALL_IMAGES = _seeded(((2, 3, 64, 64), torch.float32))     # issue 18's: they compile and run faster
_TOKENS = _seeded(((1, 64), torch.int64))


def _generator():
    return torch.Generator().manual_seed(1234)


def _bert_inputs(device):
    """input_ids [2, 64] and an attention mask whose second row ends in 16 padding positions."""
    ids = torch.randint(0, 1024, (2, 64), generator=_generator(), dtype=torch.int64)
    mask = torch.ones(2, 64, dtype=torch.int64)
    mask[1, 48:] = 0
    return ids.to(device), mask.to(device)


def _sampling_inputs(device, batch=4, vocab=1024):
    """Logits [batch, vocab] and one uniform number in [0, 1) per row."""
    g = _generator()
    return (torch.randn(batch, vocab, generator=g).mul(3.0).to(device),
            torch.rand(batch, 1, generator=g).to(device))


def _scatter_inputs(device, rows=4, width=128, bins=64):
    """src [rows, width], index [rows, width] in [0, bins), ids [256] in [0, bins), and a permutation of
    [0, width) per row."""
    g = _generator()
    perm = torch.stack([torch.randperm(width, generator=g) for _ in range(rows)])
    return (torch.randn(rows, width, generator=g).to(device),
            torch.randint(0, bins, (rows, width), generator=g, dtype=torch.int64).to(device),
            torch.randint(0, bins, (256,), generator=g, dtype=torch.int64).to(device), perm.to(device))

ZOO = {
    "resnet18": (torchvision_model("resnet18"), _IMAGES, "float32"),
    "mobilenet_v2": (torchvision_model("mobilenet_v2"), _IMAGES, "float32"),
    "mobilenet_v3_small": (torchvision_model("mobilenet_v3_small"), _IMAGES, "float32"),
    "conv1d_stack": (Conv1dStack, _seeded(((2, 16, 400), torch.float32)), "float32"),
    "whisper_encoder": (whisper_encoder, _seeded(((1, 80, 3000), torch.float32)), "float32"),
    "llama_bf16": (llama_decoder, _seeded(((1, 64), torch.int64)), "bfloat16"),
    "gemma_f32": (gemma_decoder, _seeded(((1, 64), torch.int64)), "float32"),
    "llama_decode_f32": (llama_static_decoder, step_inputs, "float32"),
    "sdpa_bf16": (Attention, _attention_inputs(torch.bfloat16), "bfloat16"),
    "sdpa_f32": (Attention, _attention_inputs(torch.float32), "float32"),
    # ---- issue 18 ----
    "resnet50": (torchvision_builder("resnet50", 64), _SMALL_IMAGES, "float32"),
    "efficientnet_b0": (torchvision_builder("efficientnet_b0", 64), _SMALL_IMAGES, "float32"),
    "convnext_tiny": (torchvision_builder("convnext_tiny", 64), _SMALL_IMAGES, "float32"),
    "vit_b_16": (torchvision_builder("vit_b_16", 64, image_size=64), _SMALL_IMAGES, "float32"),
    "swin_t": (torchvision_builder("swin_t", 112), _seeded(((2, 3, 112, 112), torch.float32)), "float32"),
    "bert_f32": (bert_encoder, _bert_inputs, "float32"),
    "gpt2_f16": (gpt2_lm, _TOKENS, "float16"),
    "qwen2_gqa_bf16": (qwen2_lm, _TOKENS, "bfloat16"),
    "gemma_decode_f32": (gemma_static_decoder, step_inputs, "float32"),
    "whisper_decoder_f32": (WhisperDecoderLogits, _seeded(((1, 32), torch.int64), ((1, 1500, 384), torch.float32)),
                            "float32"),
    "mixtral_moe_f32": (mixtral_moe, _TOKENS, "float32"),
    "topk_sampling": (TopKSampling, _sampling_inputs, "float32"),
    "top_p_argsort": (TopPSampling, _sampling_inputs, "float32"),
    "cond_branches": (CondBranches, _seeded(((8, 64), torch.float32)), "float32"),
    "scatter_ops": (ScatterOps, _scatter_inputs, "float32"),
    "int4_linear_bf16": (Int4WeightOnlyLinear, _seeded(((16, 512), torch.bfloat16)), "bfloat16"),
    # One row (a decode step) of a 4096-wide layer: the shim's decode kernel, where 16 rows take its mma kernel.
    "int4_decode_bf16": (functools.partial(Int4WeightOnlyLinear, k=4096, n=4096),
                         _seeded(((1, 4096), torch.bfloat16)), "bfloat16"),
}
MODELS.update(ZOO)

# Exported with strict=False (transformers' models do not trace strictly).
NON_STRICT = {"whisper_encoder", "llama_bf16", "gemma_f32", "llama_decode_f32", "bert_f32", "gpt2_f16",
              "qwen2_gqa_bf16", "gemma_decode_f32", "whisper_decoder_f32", "mixtral_moe_f32"}

# Modules whose weights are laid out for their device once they are on it
# (build.py calls module.pack_for(device) before the reference run).
PACKED_FOR_DEVICE = {"int4_linear_bf16", "int4_decode_bf16"}

# aoti_torch_* functions a zoo model is known to need that aotirt does not
# implement yet (on CUDA): its test asserts that the library lacks exactly
# these until aotirt has them, then runs it as any other.
AWAITING_SHIMS = {}

# Greedy decoder steps with a static KV cache (static_decoder.py, issue 16):
# their outputs are their next inputs, and build.py also saves torch eager's
# tokens of a whole greedy decode from their example inputs (loop_tokens.npy).
DECODE_LOOPS = {"llama_decode_f32", "gemma_decode_f32"}
