"""Answer-slot layout, schema constraints and the block-diffusion denoising loop."""
