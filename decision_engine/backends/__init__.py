"""Models the denoiser can drive: the bundled block-diffusion model and Hugging Face masked LMs."""
