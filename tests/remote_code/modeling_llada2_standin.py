"""A tiny block diffusion LM with LLaDA2.0's cache interface.

`model(input_ids, attention_mask, position_ids, past_key_values, use_cache)`: `attention_mask` is a
4-D (B, 1, Q, K) mask over the cached keys followed by the new ones, handed to scaled-dot-product
attention as LLaDA2's sdpa path hands it (its own generate() passes it additive: 0 where attended,
a large negative elsewhere). Any cache given is appended to: there is no flag to attend to a cache
without storing into it. `use_cache` (None: the config's, True) only says whether the cache is
returned, one being made when none is given. Logits at i score the token at i. The backbone
(`LLaDA2StandInModel`, what auto_map's AutoModel names) has no head; the LM keeps it as `model`.
"""

import torch
import torch.nn.functional as F
from torch import nn
from transformers import DynamicCache, PreTrainedModel
from transformers.modeling_outputs import BaseModelOutputWithPast, CausalLMOutputWithPast

from .configuration_llada2_standin import LLaDA2StandInConfig


class Attention(nn.Module):
    def __init__(self, config, index):
        super().__init__()
        self.index = index
        self.heads = config.num_attention_heads
        self.query_key_value = nn.Linear(config.hidden_size, 3 * config.hidden_size)
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, x, mask, cache):
        b, t, d = x.shape
        q, k, v = self.query_key_value(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        if cache is not None:
            k, v = cache.update(k, v, self.index)  # always stored, as LLaDA2's attention does
        attended = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.dense(attended.transpose(1, 2).reshape(b, t, d))


class Layer(nn.Module):
    def __init__(self, config, index):
        super().__init__()
        d = config.hidden_size
        self.input_layernorm = nn.LayerNorm(d)
        self.attention = Attention(config, index)
        self.post_attention_layernorm = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x, mask, cache):
        x = x + self.attention(self.input_layernorm(x), mask, cache)
        return x + self.mlp(self.post_attention_layernorm(x))


class LLaDA2StandInModel(PreTrainedModel):
    config_class = LLaDA2StandInConfig
    base_model_prefix = "model"

    def __init__(self, config):
        super().__init__(config)
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.positions = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.layers = nn.ModuleList(Layer(config, i) for i in range(config.num_hidden_layers))
        self.norm = nn.LayerNorm(config.hidden_size)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, past_key_values=None,
                inputs_embeds=None, use_cache=None, output_attentions=None, output_hidden_states=None,
                output_router_logits=None, return_dict=None, **kwargs):
        use_cache = self.config.use_cache if use_cache is None else use_cache
        if use_cache and past_key_values is None:
            past_key_values = DynamicCache()
        seen = past_key_values.get_seq_length() if past_key_values is not None else 0
        if position_ids is None:
            position_ids = torch.arange(seen, seen + input_ids.shape[1], device=input_ids.device)[None]
        if attention_mask is not None and attention_mask.dim() != 4:
            raise ValueError("this stand-in takes the 4-D block-diffusion mask LLaDA2's generate() passes")
        x = self.word_embeddings(input_ids) + self.positions(position_ids)
        for layer in self.layers:
            x = layer(x, attention_mask, past_key_values)
        returned = past_key_values if use_cache else None
        return BaseModelOutputWithPast(last_hidden_state=self.norm(x), past_key_values=returned)


class LLaDA2StandInModelLM(PreTrainedModel):
    config_class = LLaDA2StandInConfig
    base_model_prefix = "model"

    def __init__(self, config):
        super().__init__(config)
        self.model = LLaDA2StandInModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, past_key_values=None,
                inputs_embeds=None, labels=None, use_cache=None, output_attentions=None, output_hidden_states=None,
                output_router_logits=None, return_dict=None, **kwargs):
        outputs = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                             past_key_values=past_key_values, use_cache=use_cache)
        logits = self.lm_head(outputs.last_hidden_state).float()
        return CausalLMOutputWithPast(logits=logits, past_key_values=outputs.past_key_values)
