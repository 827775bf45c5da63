"""Joint multi-question decisions over one document with a constrained block-diffusion model."""

__version__ = "0.1.0"
