"""A tiny block diffusion LM with SDAR's cache interface.

`model(input_ids, attention_mask, position_ids, past_key_values, store_kv)`: `attention_mask` is a
boolean (B, 1, Q, K) mask over the cached keys followed by the new ones; with `store_kv` the new
keys and values are appended to the cache (reading a prompt), without it they are only attended to
(a denoising step over a block).
"""

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedModel
from transformers.modeling_outputs import CausalLMOutputWithPast

from .configuration_sdar_standin import SDARStandInConfig


def cached(cache, layer):
    """The keys and values a cache holds for one layer, or None."""
    layers = getattr(cache, "layers", None)
    if cache is None or layers is None or len(layers) <= layer:
        return None
    entry = layers[layer]
    keys = getattr(entry, "keys", None)
    return None if keys is None else (keys, entry.values)


class Layer(nn.Module):
    def __init__(self, config, index):
        super().__init__()
        self.index = index
        self.heads = config.num_attention_heads
        d = config.hidden_size
        self.norm1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.norm2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x, mask, cache, store_kv):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        if cache is not None and store_kv:
            k, v = cache.update(k, v, self.index)
        elif (past := cached(cache, self.index)) is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        attended = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.out(attended.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.norm2(x))


class SDARStandInForCausalLM(PreTrainedModel):
    config_class = SDARStandInConfig
    base_model_prefix = "model"

    def __init__(self, config):
        super().__init__(config)
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.positions = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.layers = nn.ModuleList(Layer(config, i) for i in range(config.num_hidden_layers))
        self.norm = nn.LayerNorm(config.hidden_size)
        self.head = nn.Linear(config.hidden_size, config.vocab_size)
        self.post_init()

    def forward(self, input_ids, attention_mask=None, position_ids=None, past_key_values=None, use_cache=False,
                store_kv=False, **kwargs):
        b, t = input_ids.shape
        if position_ids is None:
            position_ids = torch.arange(t, device=input_ids.device)[None].expand(b, t)
        if attention_mask is not None and attention_mask.dim() == 2:
            attention_mask = attention_mask.bool()[:, None, None, :]
        x = self.embed(input_ids) + self.positions(position_ids)
        for layer in self.layers:
            x = layer(x, attention_mask, past_key_values, store_kv)
        return CausalLMOutputWithPast(logits=self.head(self.norm(x)), past_key_values=past_key_values)
