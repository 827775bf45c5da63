"""Prefix attention when each question's tokens read only their own segment (`segments_read_alone`).

The mask of `transformer.segment_mask` is block-diagonal: a question's tokens attend to their own
question and evidence, and only the shared tokens (slot 0, such as [CLS]) attend to the whole
prefix. `SegmentLayout` runs that attention without the (T, T) mask: every segment becomes a row of
its own, padded to the longest segment, and the few shared tokens attend to their whole prefix.
Eight questions with 190 tokens each then cost eight 190-token attentions, not one of 1,520.
Segments are padded in buckets of like length (`length_buckets`): a question laid out without
evidence (about 20 tokens) is not padded to the width of one laid out with 160 tokens of it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass
class SegmentLayout:
    """Where each segment's tokens sit in the flattened (B * T) prefix, and the shared tokens."""

    # per bucket of segments of like length: (n, L) flat indices of each segment's tokens (0 where
    # padding) and (n, L) True on real tokens, L the bucket's longest segment
    buckets: list[tuple[torch.Tensor, torch.Tensor]]
    shared_positions: torch.Tensor  # (B, S) each row's shared tokens (0 where padding)
    shared_real: torch.Tensor  # (B, S) True on real shared tokens
    key_mask: torch.Tensor  # (B, T) real tokens: what a shared token attends to

    @classmethod
    def of(cls, slots: torch.Tensor, mask: torch.Tensor) -> SegmentLayout:
        """slots, mask: (B, T). A segment is a row's real tokens of one slot number above 0."""
        b, t = slots.shape
        device = slots.device
        flat = torch.arange(b * t, device=device).view(b, t)
        keyed = (torch.arange(b, device=device)[:, None] * (slots.max() + 1) + slots)[mask & (slots > 0)]
        tokens = flat[mask & (slots > 0)]
        segment_ids, counts = torch.unique(keyed, return_counts=True)  # sorted, so tokens group by segment
        order = torch.argsort(keyed, stable=True)
        tokens = tokens[order]
        width = int(counts.max()) if counts.numel() else 1
        starts = torch.cumsum(counts, 0) - counts
        offsets = torch.arange(tokens.numel(), device=device) - torch.repeat_interleave(starts, counts)
        rows = torch.repeat_interleave(torch.arange(segment_ids.numel(), device=device), counts)
        segment_tokens = torch.zeros((segment_ids.numel(), width), dtype=torch.long, device=device)
        segment_real = torch.zeros((segment_ids.numel(), width), dtype=torch.bool, device=device)
        segment_tokens[rows, offsets] = tokens
        segment_real[rows, offsets] = True
        buckets = []
        for members in length_buckets(counts.tolist()):
            index = torch.tensor(members, dtype=torch.long, device=device)
            longest = int(counts[index].max())
            buckets.append((segment_tokens[index, :longest], segment_real[index, :longest]))
        shared = mask & (slots == 0)
        count = shared.sum(dim=1)
        shared_real = torch.arange(max(int(count.max()), 1), device=device)[None, :] < count[:, None]
        shared_positions = torch.zeros(shared_real.shape, dtype=torch.long, device=device)
        shared_positions[shared_real] = torch.arange(t, device=device).expand(b, t)[shared]
        return cls(buckets, shared_positions, shared_real, mask)

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Attention (B, H, T, D) of q over k, v (each (B, H, T, D)) as the segment mask allows; padding
        positions come out as zeros."""
        b, h, t, d = q.shape
        flat = [x.transpose(1, 2).reshape(b * t, h, d) for x in (q, k, v)]  # (B * T, H, D)
        out = torch.zeros_like(flat[0])
        for tokens, real in self.buckets:
            qs, ks, vs = (x[tokens].transpose(1, 2) for x in flat)  # (n, H, L, D)
            read = F.scaled_dot_product_attention(qs, ks, vs, attn_mask=real[:, None, None, :]).transpose(1, 2)  # (n, L, H, D)
            out[tokens[real]] = read[real]
        out = out.view(b, t, h, d)
        if self.shared_real.any():
            index = self.shared_positions[:, None, :, None].expand(b, h, -1, d)
            qs = torch.gather(q, 2, index)  # (B, H, S, D)
            read = F.scaled_dot_product_attention(qs, k, v, attn_mask=self.key_mask[:, None, None, :])  # (B, H, S, D)
            rows = torch.arange(b, device=q.device)[:, None].expand_as(self.shared_real)[self.shared_real]
            out[rows, self.shared_positions[self.shared_real]] = read.transpose(1, 2)[self.shared_real]
        return out.transpose(1, 2)


def length_buckets(lengths: list[int]) -> list[list[int]]:
    """Indices of segments grouped by length, longest first: each bucket is padded to its longest
    segment, and a segment joins it only while it is more than half as long, so padding never
    doubles a segment's attention."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    buckets: list[list[int]] = []
    for i in order:
        if buckets and 2 * lengths[i] > lengths[buckets[-1][0]]:
            buckets[-1].append(i)
        else:
            buckets.append([i])
    return buckets
