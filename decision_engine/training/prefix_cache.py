"""Prefix states encoded once and reused across steps and epochs, for models with `answer_layers`.

Such a model reads its prefix as the frozen base encodes it, so an example's per-layer keys and values
never change during training: the first time a prefix is seen it is encoded without gradients and
kept (fp16, bounded in bytes); every later step that meets the same prefix skips the prefix pass
and trains only the answer layers on top of it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import torch

from ..backends.native import pad_positions, pad_prefixes
from ..backends.protocol import PrefixInput
from ..model.transformer import BlockDiffusionModel, PrefixState

_STORED = torch.float16


def prefix_key(prefix: PrefixInput) -> bytes:
    """What makes two prefixes encode alike: tokens, slot numbers (the segments) and positions."""
    digest = hashlib.blake2b(digest_size=16)
    for part in (prefix.token_ids, prefix.slot_ids, prefix.positions or ()):
        digest.update(len(part).to_bytes(4, "little"))
        digest.update(b"".join(int(v).to_bytes(4, "little", signed=True) for v in part))
    return digest.digest()


class FrozenPrefixCache:
    """Each prefix's frozen states: per layer keys and values (H, T, D), and its question summaries."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self._held: dict[bytes, tuple] = {}  # key -> (keys per layer, values per layer, summaries, block start)

    def __len__(self) -> int:
        return len(self._held)

    def states(self, model: BlockDiffusionModel, prefixes: Sequence[PrefixInput], pad_id: int, device) -> PrefixState:
        """The padded `PrefixState` of `prefixes` (no gradients), encoding only those not held yet.

        Held entries are kept until the byte bound is reached; past it new prefixes are encoded each
        time they come (a training pool that fits is the case this is for)."""
        keys = [prefix_key(p) for p in prefixes]
        missing = [i for i, k in enumerate(keys) if k not in self._held]
        self.hits += len(prefixes) - len(missing)
        self.misses += len(missing)
        fresh = {}
        if missing:
            fresh = self._encode(model, [prefixes[i] for i in missing], [keys[i] for i in missing], pad_id, device)
        rows = [self._held.get(k) or fresh[k] for k in keys]
        return _padded(rows, device)

    def answer_state(
        self, model: BlockDiffusionModel, prefixes: Sequence[PrefixInput], slots, pad_id: int, device
    ) -> PrefixState:
        """`states` as the answer layers read them (`answer_view`); slots (B, T) as the batch pads them."""
        return model.answer_view(self.states(model, prefixes, pad_id, device), slots)

    def _encode(self, model, prefixes, keys, pad_id, device) -> dict:
        ids, slots, mask = pad_prefixes(prefixes, pad_id, device)
        with torch.no_grad():
            state = model.prefix_states(ids, slots, mask, pad_positions(prefixes, device))
        out = {}
        for row, (key, prefix) in enumerate(zip(keys, prefixes)):
            n = len(prefix.token_ids)
            entry = (
                [k[row, :, :n].to(_STORED).clone() for k in state.keys],
                [v[row, :, :n].to(_STORED).clone() for v in state.values],
                None if state.summaries is None else state.summaries[row].to(_STORED).clone(),
                n if state.block_start is None else int(state.block_start[row]),  # where its block's positions start
            )
            out[key] = entry
            size = sum(t.numel() * t.element_size() for t in [*entry[0], *entry[1]])
            if key not in self._held and self.bytes + size <= self.max_bytes:
                self._held[key] = entry
                self.bytes += size
        return out


def _padded(rows, device) -> PrefixState:
    """Rows of held states right-padded into one batch, as `prefix_states` would have returned it."""
    width = max(r[0][0].shape[1] for r in rows)
    layers = len(rows[0][0])

    def stack(which: int, layer: int) -> torch.Tensor:
        first = rows[0][which][layer]
        out = first.new_zeros((len(rows), first.shape[0], width, first.shape[2]), dtype=torch.float32)
        for i, r in enumerate(rows):
            t = r[which][layer]
            out[i, :, : t.shape[1]] = t
        return out.to(device)

    lengths = torch.tensor([r[0][0].shape[1] for r in rows], device=device)
    mask = torch.arange(width, device=device)[None, :] < lengths[:, None]
    summaries = None
    if rows[0][2] is not None:
        summaries = torch.stack([r[2] for r in rows]).float().to(device)
    block_start = torch.tensor([r[3] for r in rows], device=device)
    return PrefixState(
        [stack(0, i) for i in range(layers)], [stack(1, i) for i in range(layers)], mask, lengths, summaries, block_start
    )
