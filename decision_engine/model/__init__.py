"""The bundled block-diffusion transformer and its loader."""
