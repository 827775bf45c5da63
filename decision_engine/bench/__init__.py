"""`decision-engine bench`: throughput and latency of the decoding modes, the prefix cache and the kernels."""
