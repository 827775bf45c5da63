"""Segment-by-segment prefix attention equals attention under the full segment mask."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from decision_engine.model.segments import SegmentLayout, length_buckets
from decision_engine.model.transformer import segment_mask


def _slots(*segments: int, shared_end: bool = True) -> list[int]:
    out = [0]
    for number, length in enumerate(segments, start=1):
        out += [number] * length
    return out + ([0] if shared_end else [])


def test_segmented_attention_equals_the_masked_one_on_a_padded_batch():
    rows = [_slots(3, 5, 2), _slots(7), _slots(1, 1, 1, 4, shared_end=False)]
    width = max(len(r) for r in rows)
    slots = torch.zeros((len(rows), width), dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.bool)
    for i, r in enumerate(rows):
        slots[i, : len(r)] = torch.tensor(r)
        mask[i, : len(r)] = True
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(len(rows), 4, width, 8, generator=generator) for _ in range(3))
    masked = F.scaled_dot_product_attention(q, k, v, attn_mask=segment_mask(slots, mask)[:, None])
    segmented = SegmentLayout.of(slots, mask).attend(q, k, v)
    real = mask[:, None, :, None].expand_as(q)
    assert torch.allclose(segmented[real], masked[real], atol=1e-6)
    assert not segmented[~real].any()  # padding comes out as zeros


def test_segments_are_padded_only_beside_segments_of_like_length():
    assert length_buckets([176, 20, 180, 150, 18, 9, 91]) == [[2, 0, 3, 6], [1, 4], [5]]
    assert length_buckets([]) == []
    slots = torch.tensor([_slots(20, 180, 3, 150)])
    layout = SegmentLayout.of(slots, torch.ones_like(slots, dtype=torch.bool))
    assert [tuple(real.shape) for _, real in layout.buckets] == [(2, 180), (1, 20), (1, 3)]


def test_training_gets_the_gradients_the_masked_attention_gives():
    slots = torch.tensor([_slots(3, 5, 2), _slots(4, 6)])
    mask = torch.ones_like(slots, dtype=torch.bool)
    generator = torch.Generator().manual_seed(2)
    inputs = [torch.randn(2, 4, slots.shape[1], 8, generator=generator) for _ in range(3)]
    weights = torch.randn(2, 4, slots.shape[1], 8, generator=generator)

    def gradients(attend):
        leaves = [x.clone().requires_grad_(True) for x in inputs]
        (attend(*leaves) * weights).sum().backward()
        return [leaf.grad for leaf in leaves]

    masked = gradients(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=segment_mask(slots, mask)[:, None]))
    segmented = gradients(SegmentLayout.of(slots, mask).attend)
    for a, b in zip(masked, segmented):
        assert torch.allclose(a, b, atol=1e-5)


def test_a_question_reads_nothing_of_another_question():
    slots = torch.tensor([_slots(3, 3)])
    mask = torch.ones_like(slots, dtype=torch.bool)
    generator = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(1, 2, slots.shape[1], 4, generator=generator) for _ in range(3))
    layout = SegmentLayout.of(slots, mask)
    before = layout.attend(q, k, v)
    changed = v.clone()
    changed[:, :, 4:7] += 10.0  # the second question's values
    after = layout.attend(q, k, changed)
    assert torch.equal(before[:, :, 1:4], after[:, :, 1:4])  # the first question's tokens
    assert not torch.equal(before[:, :, 0], after[:, :, 0])  # [CLS] reads everything


def test_the_bundled_model_reads_its_prefix_alike_both_ways():
    from decision_engine.bench.prefix_attention import measure

    report = measure(groups=1, repeats=1)
    assert report["max_abs_difference"] < 1e-4
    assert report["segmented_p50_ms"] > 0 and report["masked_p50_ms"] > 0
