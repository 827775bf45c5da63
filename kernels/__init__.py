"""Decoding hot spots (installed as `decision_engine.kernels`): Triton kernels for CUDA, each with a
pure-PyTorch reference beside it; `dispatch.use_triton` decides which runs."""
