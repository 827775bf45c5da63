"""An SDAR-style configuration for the tiny block-cached remote-code stand-in (copied into a checkpoint folder by the tests)."""

from transformers import PretrainedConfig


class SDARStandInConfig(PretrainedConfig):
    model_type = "sdar"

    def __init__(
        self,
        vocab_size=64,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        max_position_embeddings=512,  # learned positions
        block_size=4,  # the diffusion block the prompt is read in
        mask_token_id=3,
        **kwargs,
    ):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.max_position_embeddings = max_position_embeddings
        self.block_size = block_size
        self.mask_token_id = mask_token_id
        super().__init__(**kwargs)
