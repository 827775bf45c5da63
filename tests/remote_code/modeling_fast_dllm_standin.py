"""A tiny block diffusion LM with Fast-dLLM v2's cache interface.

`model(input_ids, position_ids, past_key_values, use_cache, update_past_key_values, block_size,
logits_to_keep)`: outside training the forward ignores `attention_mask` and masks block-causally by
token index, the same for every row: a query at index q (counted on from the cached keys) sees key
k when q // block_size >= k // block_size. `block_size` is a forward keyword (default 32), not the
config's `bd_size`. With `update_past_key_values` the new keys and values are appended to the
cache; without it they are only attended to. Logits at i are to score the token at i + 1 (the token
shift lies in how they are read). The backbone (`FastDLLMStandInModel`, what auto_map's AutoModel
names) has no head; the LM keeps it as `model`. The sub-block cache (`use_block_cache`) is not
reproduced, and the cached keys are read through the cache's layers rather than by indexing it.
"""

import torch
import torch.nn.functional as F
from torch import nn
from transformers import DynamicCache, PreTrainedModel
from transformers.modeling_outputs import BaseModelOutputWithPast, CausalLMOutputWithPast

from .configuration_fast_dllm_standin import FastDLLMStandInConfig


def cached(cache, layer):
    """The keys and values a cache holds for one layer, or None."""
    layers = getattr(cache, "layers", None)
    if cache is None or layers is None or len(layers) <= layer:
        return None
    entry = layers[layer]
    keys = getattr(entry, "keys", None)
    return None if keys is None else (keys, entry.values)


def eval_mask(length, block_size, cached_length, device):
    """(Q, K) boolean: query q + cached_length sees key k when their blocks, by index, allow it."""
    queries = torch.arange(length, device=device) + cached_length
    keys = torch.arange(length + cached_length, device=device)
    return queries[:, None] // block_size >= keys[None, :] // block_size


class Layer(nn.Module):
    def __init__(self, config, index):
        super().__init__()
        self.index = index
        self.heads = config.num_attention_heads
        d = config.hidden_size
        self.input_layernorm = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.o_proj = nn.Linear(d, d)
        self.post_attention_layernorm = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x, mask, cache, update_past_key_values):
        b, t, d = x.shape
        q, k, v = self.qkv(self.input_layernorm(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        if cache is not None and update_past_key_values:
            k, v = cache.update(k, v, self.index)
        elif (past := cached(cache, self.index)) is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        attended = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.o_proj(attended.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.post_attention_layernorm(x))


class FastDLLMStandInModel(PreTrainedModel):
    config_class = FastDLLMStandInConfig
    base_model_prefix = "model"

    def __init__(self, config):
        super().__init__(config)
        self.bd_size = config.bd_size  # kept, as Fast-dLLM v2 keeps it, but only its training mask reads it
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.positions = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.layers = nn.ModuleList(Layer(config, i) for i in range(config.num_hidden_layers))
        self.norm = nn.LayerNorm(config.hidden_size)
        self.post_init()

    def forward(self, input_ids=None, labels=None, attention_mask=None, position_ids=None, past_key_values=None,
                inputs_embeds=None, use_cache=None, cache_position=None, update_past_key_values=False, block_size=32,
                use_block_cache=False, block_past_key_values=None, replace_position=None, **kwargs):
        if use_block_cache:
            raise NotImplementedError("the stand-in does not reproduce Fast-dLLM v2's sub-block cache")
        if use_cache and past_key_values is None:
            past_key_values = DynamicCache()
        seen = past_key_values.get_seq_length() if past_key_values is not None else 0
        length = input_ids.shape[1]
        if cache_position is None:
            cache_position = torch.arange(seen, seen + length, device=input_ids.device)
        if position_ids is None:
            position_ids = cache_position[None]
        mask = eval_mask(length, block_size, seen, input_ids.device)  # whatever attention_mask was given
        x = self.embed_tokens(input_ids) + self.positions(position_ids)
        for layer in self.layers:
            x = layer(x, mask, past_key_values, update_past_key_values)
        returned = past_key_values if use_cache else None
        return BaseModelOutputWithPast(last_hidden_state=self.norm(x), past_key_values=returned)


class FastDLLMStandInForCausalLM(PreTrainedModel):
    config_class = FastDLLMStandInConfig
    base_model_prefix = "model"

    def __init__(self, config):
        super().__init__(config)
        self.model = FastDLLMStandInModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, past_key_values=None,
                inputs_embeds=None, labels=None, use_cache=None, cache_position=None, logits_to_keep=0,
                update_past_key_values=False, block_size=32, use_block_cache=False, block_past_key_values=None,
                replace_position=None, mask_id=151665, **kwargs):
        outputs = self.model(
            input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
            past_key_values=past_key_values, use_cache=use_cache, cache_position=cache_position,
            update_past_key_values=update_past_key_values, block_size=block_size, use_block_cache=use_block_cache,
        )
        hidden = outputs.last_hidden_state[:, slice(-logits_to_keep, None), :]  # 0 keeps every position
        return CausalLMOutputWithPast(logits=self.lm_head(hidden), past_key_values=outputs.past_key_values)
