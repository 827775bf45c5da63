"""A LLaDA2-style configuration for the tiny block-cached stand-in (copied into a checkpoint folder by the tests).

Like LLaDA2.0's `LLaDA2MoeConfig` it names neither a mask token nor a block size, and defaults
`use_cache` to True.
"""

from transformers import PretrainedConfig


class LLaDA2StandInConfig(PretrainedConfig):
    model_type = "llada2_moe"

    def __init__(
        self,
        vocab_size=64,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        max_position_embeddings=512,  # learned positions
        use_cache=True,
        **kwargs,
    ):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.max_position_embeddings = max_position_embeddings
        self.use_cache = use_cache
        super().__init__(**kwargs)
