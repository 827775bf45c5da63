"""A Fast-dLLM v2-style configuration for the tiny block-cached stand-in (copied into a checkpoint folder by the tests).

Like Fast-dLLM v2's `Fast_dLLM_QwenConfig` it gives the diffusion block as `bd_size` and names no
mask token (that lives in the tokenizer's added tokens).
"""

from transformers import PretrainedConfig


class FastDLLMStandInConfig(PretrainedConfig):
    model_type = "Fast_dLLM_Qwen"

    def __init__(
        self,
        vocab_size=64,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        max_position_embeddings=512,  # learned positions
        bd_size=32,
        **kwargs,
    ):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.max_position_embeddings = max_position_embeddings
        self.bd_size = bd_size
        super().__init__(**kwargs)
