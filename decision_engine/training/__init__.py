"""Training the block-diffusion decision model with a masked-diffusion objective."""
