"""The zoo's architectures of issue 18 from torchvision and transformers,
built with random weights (nothing is downloaded) at sizes that compile in
about a minute each: torchvision's own models at small images, transformers
models from small configs. Imported by zoo.py (torch processes only);
torchvision and transformers are imported when a model is built.
"""

import types

import torch


@torch.no_grad()
def _calibrate_batch_norms(model, side, batches=4):
    """Sets every batch norm's running statistics to those of a few seeded
    random batches (a cumulative average: momentum None), as training would
    have. With the initial statistics (mean 0, variance 1) the activations
    of a randomly initialised deep CNN shrink or grow layer after layer: at
    64x64, efficientnet_b0's logits come out near 1e-14 and resnet50's near
    1e1, which makes a relative-error comparison say little."""
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return model
    generator = torch.Generator().manual_seed(99)
    saved = [m.momentum for m in norms]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    for _ in range(batches):
        model(torch.randn(8, 3, side, side, generator=generator))
    for m, momentum in zip(norms, saved):
        m.momentum = momentum
    return model.eval()


def torchvision_builder(name, side, **kwargs):
    """torchvision.models.<name>(weights=None, **kwargs), the real
    architecture, its batch norms calibrated on side x side images; a
    classifier head that torchvision starts at zero (vit's: every output
    would be 0) starts random instead."""
    def make():
        import torchvision

        torch.manual_seed(0)
        model = getattr(torchvision.models, name)(weights=None, **kwargs)
        head = getattr(getattr(model, "heads", None), "head", None)
        if isinstance(head, torch.nn.Linear) and not head.weight.any():
            torch.nn.init.normal_(head.weight, std=0.02)
        return _calibrate_batch_norms(model, side)
    return make


class Logits(torch.nn.Module):
    """A transformers model called with keyword inputs, returning one field."""

    def __init__(self, model, field, names):
        super().__init__()
        self.model, self.field, self.names = model, field, names

    def forward(self, *inputs):
        return getattr(self.model(**dict(zip(self.names, inputs)), use_cache=False), self.field)


def bert_encoder():
    """BERT-style: 2 layers, hidden 256, 4 heads, vocab 1024: (input_ids, attention_mask) -> last hidden state."""
    from transformers import BertConfig, BertModel

    config = BertConfig(vocab_size=1024, hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=1024, max_position_embeddings=128, attn_implementation="sdpa")

    class Bert(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = BertModel(config, add_pooling_layer=False)

        def forward(self, input_ids, attention_mask):
            return self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    return Bert()


def gpt2_lm():
    """GPT-2: 2 layers, hidden 256, 4 heads, vocab 1024: input_ids -> logits."""
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=1024, n_positions=256, n_embd=256, n_layer=2, n_head=4,
                        attn_implementation="sdpa")
    return Logits(GPT2LMHeadModel(config), "logits", ("input_ids",))


def qwen2_lm():
    """Qwen2-style grouped-query attention: 2 layers, hidden 256, 8 query heads
    over 2 key/value heads (biased q/k/v projections), vocab 1024: input_ids -> logits."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(vocab_size=1024, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                         num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=256,
                         attn_implementation="sdpa")
    return Logits(Qwen2ForCausalLM(config), "logits", ("input_ids",))


def whisper_config():
    """Whisper tiny's widths (d_model 384, 6 heads), 2 decoder layers, vocab 1024
    (the special tokens moved inside it: Whisper's own are past 50000)."""
    from transformers import WhisperConfig

    return WhisperConfig(vocab_size=1024, pad_token_id=1023, bos_token_id=1022, eos_token_id=1023,
                         decoder_start_token_id=1022, d_model=384, encoder_layers=2, encoder_attention_heads=6,
                         encoder_ffn_dim=1536, decoder_layers=2, decoder_attention_heads=6, decoder_ffn_dim=1536,
                         num_mel_bins=80, max_source_positions=1500, max_target_positions=448,
                         attn_implementation="sdpa")


class WhisperDecoderLogits(torch.nn.Module):
    """Whisper's decoder: (input_ids, the encoder's hidden states) -> logits,
    through the token embedding (tied, as WhisperForConditionalGeneration's proj_out)."""

    def __init__(self):
        super().__init__()
        from transformers.models.whisper.modeling_whisper import WhisperDecoder

        self.decoder = WhisperDecoder(whisper_config())

    def forward(self, input_ids, encoder_hidden_states):
        hidden = self.decoder(input_ids=input_ids, encoder_hidden_states=encoder_hidden_states,
                              use_cache=False).last_hidden_state
        return torch.nn.functional.linear(hidden, self.decoder.embed_tokens.weight)


def _static_moe_forward(block, hidden_states):
    """A transformers < 5 Mixtral block's forward without its data-dependent
    loop over the experts hit (which torch.export cannot trace to static
    shapes): each token's top-k experts gathered and applied by bmm, the
    arithmetic of transformers 5's "batched_mm" experts."""
    batch, length, dim = hidden_states.shape
    x = hidden_states.reshape(-1, dim)
    probs = torch.softmax(block.gate(x).float(), dim=-1)
    weights, experts = probs.topk(block.top_k, dim=-1)
    weights = (weights / weights.sum(-1, keepdim=True)).to(x.dtype).reshape(-1, 1)
    picked = experts.reshape(-1)
    tokens = x.repeat_interleave(block.top_k, dim=0)[:, :, None]
    act = block.experts[0].act_fn
    h = act(torch.bmm(block.stacked_w1[picked], tokens)) * torch.bmm(block.stacked_w3[picked], tokens)
    out = torch.bmm(block.stacked_w2[picked], h)[:, :, 0] * weights
    return out.reshape(-1, block.top_k, dim).sum(1).reshape(batch, length, dim)


def mixtral_moe():
    """A small Mixtral-style mixture of experts: 2 layers, hidden 256, 4 experts
    of width 512, 2 per token, 4 query over 2 key/value heads, vocab 1024:
    input_ids -> logits. transformers 5 runs its experts through its own
    "batched_mm" implementation; older versions get the same arithmetic
    (_static_moe_forward), their expert loop being data-dependent."""
    import transformers
    from transformers import MixtralConfig, MixtralForCausalLM

    config = MixtralConfig(vocab_size=1024, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, num_local_experts=4,
                           num_experts_per_tok=2, max_position_embeddings=256, attn_implementation="sdpa",
                           experts_implementation="batched_mm")
    model = MixtralForCausalLM(config)
    if int(transformers.__version__.split(".")[0]) < 5:
        for layer in model.model.layers:
            block = layer.block_sparse_moe
            for name in ("w1", "w2", "w3"):
                stacked = torch.stack([getattr(e, name).weight.detach() for e in block.experts])
                block.register_parameter(f"stacked_{name}", torch.nn.Parameter(stacked))
            block.forward = types.MethodType(_static_moe_forward, block)
    return Logits(model, "logits", ("input_ids",))
