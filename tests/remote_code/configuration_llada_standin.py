"""A LLaDA-style configuration for the tiny remote-code stand-in (copied into a checkpoint folder by the tests)."""

from transformers import PretrainedConfig


class LLaDAStandInConfig(PretrainedConfig):
    model_type = "llada"

    def __init__(
        self,
        vocab_size=64,
        d_model=32,  # hidden width
        n_layers=2,
        n_heads=2,
        max_sequence_length=512,  # learned positions
        mask_token_id=3,
        **kwargs,
    ):
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.n_layers = n_layers
        self.n_heads = n_heads
        self.max_sequence_length = max_sequence_length
        self.mask_token_id = mask_token_id
        super().__init__(**kwargs)
