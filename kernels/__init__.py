"""Decoding hot spots: each op has a pure-PyTorch reference (installed as `decision_engine.kernels`)."""
