"""The fast PyTorch paths of the decoding hot spots agree with their references."""

from __future__ import annotations

import pytest
import torch

from decision_engine.kernels.block_attention import block_attention_fused, block_attention_reference


@pytest.mark.parametrize(("batch", "prefix", "block"), [(1, 7, 3), (3, 64, 17), (4, 200, 1)], ids=lambda v: str(v))
def test_fused_block_attention_matches_reference(batch, prefix, block):
    generator = torch.Generator().manual_seed(batch * 1000 + prefix)
    heads, dim = 4, 16

    def rand(*shape):
        return torch.randn(*shape, generator=generator)

    q, bk, bv = rand(batch, heads, block, dim), rand(batch, heads, block, dim), rand(batch, heads, block, dim)
    pk, pv = rand(batch, heads, prefix, dim), rand(batch, heads, prefix, dim)
    lengths = torch.randint(1, prefix + 1, (batch,), generator=generator)
    prefix_mask = torch.arange(prefix)[None, :] < lengths[:, None]  # prefixes of different lengths
    block_mask = torch.ones(batch, block, dtype=torch.bool)
    block_mask[0, block // 2 + 1 :] = False  # a padded block row
    expected = block_attention_reference(q, pk, pv, prefix_mask, bk, bv, block_mask)
    got = block_attention_fused(q, pk, pv, prefix_mask, bk, bv, block_mask)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-4)
