"""A tiny bidirectional mask-predictor with LLaDA's interface: `model(input_ids, attention_mask).logits`."""

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedModel
from transformers.modeling_outputs import CausalLMOutputWithPast

from .configuration_llada_standin import LLaDAStandInConfig


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.heads = config.n_heads
        self.norm1 = nn.LayerNorm(config.d_model)
        self.qkv = nn.Linear(config.d_model, 3 * config.d_model)
        self.out = nn.Linear(config.d_model, config.d_model)
        self.norm2 = nn.LayerNorm(config.d_model)
        self.mlp = nn.Sequential(nn.Linear(config.d_model, 2 * config.d_model), nn.GELU(),
                                 nn.Linear(2 * config.d_model, config.d_model))

    def forward(self, x, keep):  # x (B, T, D); keep (B, 1, 1, T) bool, True on real keys
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        attended = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)  # (B, H, T, D/H)
        x = x + self.out(attended.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.norm2(x))


class LLaDAStandInModelLM(PreTrainedModel):
    config_class = LLaDAStandInConfig
    base_model_prefix = "model"

    def __init__(self, config):
        super().__init__(config)
        self.embed = nn.Embedding(config.vocab_size, config.d_model)
        self.positions = nn.Embedding(config.max_sequence_length, config.d_model)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        self.norm = nn.LayerNorm(config.d_model)
        self.head = nn.Linear(config.d_model, config.vocab_size)
        self.post_init()

    def forward(self, input_ids, attention_mask=None, **kwargs):
        b, t = input_ids.shape
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        keep = attention_mask.bool()[:, None, None, :]
        x = self.embed(input_ids) + self.positions(torch.arange(t, device=input_ids.device))[None]
        for block in self.blocks:
            x = block(x, keep)
        return CausalLMOutputWithPast(logits=self.head(self.norm(x)))
