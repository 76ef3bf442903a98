"""A greedy decoder step with a static KV cache, for torch.export and
AOTInductor (issue 16): a transformers Llama (or Gemma: issue 18) model's own
modules, wrapped so that one call is one token.

    token int64 [1, 1], position int64 [1]  ->  next_token int64 [1, 1], position + 1

The keys and values of every position live in buffers of the module
(k_cache<i>, v_cache<i>: [1, kv heads, MAX_LEN, head size]) that forward
writes with copy_, so torch.export lifts them as mutable buffers and
AOTInductor keeps them as state of the library, updated in place by each run.
The outputs are the next step's inputs as they are, so a loop can feed them
back on the device without the host.

Why this wrapper and not transformers' StaticCache through the model's
forward: StaticCache's constructor and the cache_position protocol changed
across transformers versions (4.4x to 5.x), and its update is an index_copy_
whose lowering may call a fallback op; this module only calls the Llama
modules' forwards (norms, projections, MLP, rotary embedding), whose
interfaces have been stable, and writes the cache with an elementwise select
(no indirect store: nothing a shim must implement, and a position past the
cache writes nothing instead of out of bounds). Positions after `position`
are masked out, so whatever an earlier run left there is never read: every
run from position 0 decodes the same tokens.
"""

import torch

MAX_LEN = 512               # cache slots: positions 0 .. MAX_LEN - 1
START_TOKEN = 1             # the references' first token, at position 0
LOOP_STEPS = 256            # tokens in the build's greedy reference


def llama_config():
    """Llama-style: 2 layers, hidden 256, 4 query heads over 2 key/value heads, vocab 1024."""
    from transformers import LlamaConfig

    return LlamaConfig(vocab_size=1024, hidden_size=256, intermediate_size=688, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=MAX_LEN,
                       attn_implementation="sdpa")


def gemma_config():
    """Gemma-style: 2 layers, hidden 256, 4 query heads over one key/value head of size 64, vocab 1024.
    Its output projection is its own (Gemma ties it to the token embedding by
    default: with random weights the embedding, scaled by 16, then dominates
    and every step decodes its own input token again)."""
    from transformers import GemmaConfig

    return GemmaConfig(vocab_size=1024, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=1, head_dim=64, max_position_embeddings=MAX_LEN,
                       tie_word_embeddings=False, attn_implementation="sdpa")


def _embedding_scale(model):
    """What the model multiplies its token embeddings by: Gemma's
    sqrt(hidden size) (in the model's forward before transformers 5, inside
    its embedding module, which then has an embed_scale, from 5), else None."""
    if model.config.model_type != "gemma" or hasattr(model.model.embed_tokens, "embed_scale"):
        return None
    return model.config.hidden_size ** 0.5


def _rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class StaticKVDecoder(torch.nn.Module):
    def __init__(self, llama, max_len=MAX_LEN):
        super().__init__()
        config = llama.config
        self.embed, self.layers = llama.model.embed_tokens, llama.model.layers
        self.norm, self.lm_head = llama.model.norm, llama.lm_head
        self.rotary = getattr(llama.model, "rotary_emb", None)
        if self.rotary is None:
            raise RuntimeError("this transformers' LlamaModel has no rotary_emb module (transformers < 4.45?)")
        self.heads, self.kv_heads = config.num_attention_heads, config.num_key_value_heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // self.heads
        self.max_len = max_len
        self.embed_scale = _embedding_scale(llama)
        for i in range(len(self.layers)):
            shape = (1, self.kv_heads, max_len, self.head_dim)
            self.register_buffer(f"k_cache{i}", torch.zeros(shape))
            self.register_buffer(f"v_cache{i}", torch.zeros(shape))
        # The whole transformers model, out of the module tree (a tuple is not
        # registered): its modules are this module's, for reference checks only.
        self.full_model = (llama,)

    def reset(self):
        for name, buffer in self.named_buffers():
            if "_cache" in name:
                buffer.zero_()

    def _attention(self, i, layer, x, cos, sin, write, mask):
        attn, groups = layer.self_attn, self.heads // self.kv_heads
        q = attn.q_proj(x).view(1, 1, self.heads, self.head_dim).transpose(1, 2)
        k = attn.k_proj(x).view(1, 1, self.kv_heads, self.head_dim).transpose(1, 2)
        v = attn.v_proj(x).view(1, 1, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin
        caches = []
        for new, cache in ((k, getattr(self, f"k_cache{i}")), (v, getattr(self, f"v_cache{i}"))):
            cache.copy_(torch.where(write, new, cache))      # this position's slot, in place
            # Grouped-query heads: each key/value head serves `groups` query heads.
            caches.append(cache[:, :, None].expand(1, self.kv_heads, groups, self.max_len, self.head_dim)
                          .reshape(1, self.heads, self.max_len, self.head_dim))
        out = torch.nn.functional.scaled_dot_product_attention(q, caches[0], caches[1], attn_mask=mask)
        return attn.o_proj(out.transpose(1, 2).reshape(1, 1, self.heads * self.head_dim))

    def forward(self, token, position):
        h = self.embed(token)                                       # [1, 1, hidden]
        if self.embed_scale is not None:                            # Gemma's sqrt(256) = 16: exact in any dtype
            h = h * self.embed_scale
        cos, sin = self.rotary(h, position[None])                   # [1, 1, head size] each
        cos, sin = cos[:, None], sin[:, None]                       # over the heads
        slots = torch.arange(self.max_len, device=position.device)
        write = (slots == position)[None, None, :, None]            # [1, 1, MAX_LEN, 1]
        mask = torch.where(slots <= position, 0.0, torch.finfo(h.dtype).min).to(h.dtype)[None, None, None, :]
        for i, layer in enumerate(self.layers):
            h = h + self._attention(i, layer, layer.input_layernorm(h), cos, sin, write, mask)
            h = h + layer.mlp(layer.post_attention_layernorm(h))
        logits = self.lm_head(self.norm(h))                         # [1, 1, vocab]
        return logits.argmax(-1), position + 1


def llama_static_decoder():
    from transformers import LlamaForCausalLM

    return StaticKVDecoder(LlamaForCausalLM(llama_config()))


def gemma_static_decoder():
    from transformers import GemmaForCausalLM

    return StaticKVDecoder(GemmaForCausalLM(gemma_config()))


def step_inputs(device):
    """The first step's inputs: START_TOKEN at position 0."""
    return (torch.tensor([[START_TOKEN]], dtype=torch.int64, device=device),
            torch.tensor([0], dtype=torch.int64, device=device))


@torch.no_grad()
def greedy_tokens(module, steps=LOOP_STEPS):
    """int64 [steps]: the tokens `steps` eager calls decode from step_inputs,
    each call's outputs fed back as the next one's inputs (the cache reset first)."""
    module.reset()
    token, position = step_inputs(module.k_cache0.device)
    tokens = []
    for _ in range(steps):
        token, position = module(token, position)
        tokens.append(token.reshape(()))
    module.reset()
    return torch.stack(tokens)


@torch.no_grad()
def transformers_agreement(module, tokens):
    """(how many of `tokens` transformers' own forward of the whole sequence
    predicts, the smallest gap between its top two logits): a check that the
    wrapper is the same model (teacher-forced, no cache), and how near a tie
    the decode came. Float sums in another order may flip a near tie, so the
    count is a diagnostic, not a rule."""
    (llama,) = module.full_model
    start = torch.tensor([START_TOKEN], dtype=torch.int64, device=tokens.device)
    logits = llama(input_ids=torch.cat([start, tokens[:-1]])[None], use_cache=False).logits[0]
    top2 = logits.topk(2, dim=-1).values
    return int((logits.argmax(-1) == tokens).sum()), float((top2[:, 0] - top2[:, 1]).min())
