"""Checks every model backend must pass, shared by the backend tests: answers that do not depend on the batch."""

from __future__ import annotations

import torch

from decision_engine.backends.protocol import PrefixInput


def random_prefix(seed: int, length: int, vocab) -> PrefixInput:
    """A prefix of `length` tokens, [CLS] random tokens [SEP], the same for the same seed."""
    body = torch.randint(4, vocab.size, (length - 2,), generator=torch.Generator().manual_seed(seed)).tolist()
    ids = [vocab.cls_id, *body, vocab.sep_id]
    return PrefixInput(ids, [0] * len(ids))


def check_batch_padding_invariance(backend, short: PrefixInput, long: PrefixInput, select: bool = True) -> None:
    """Block logits of a short and a long prefix, each alone and batched together (and, with `select`,
    the short one picked out of a batched cache), agree within 1e-5."""
    vocab = backend.vocab
    mask, digit = vocab.mask_id, vocab.digit_ids[3]
    short_ids, short_slots = torch.tensor([[mask, digit, mask]]), torch.tensor([[1, 1, 2]])
    long_ids, long_slots = torch.tensor([[mask, mask, digit, mask, mask]]), torch.tensor([[1, 1, 1, 2, 3]])
    alone_short = backend.block_logits(backend.encode_prefix([short]), short_ids, short_slots)
    alone_long = backend.block_logits(backend.encode_prefix([long]), long_ids, long_slots)
    ids = torch.full((2, 5), vocab.pad_id, dtype=torch.long)
    slots = torch.zeros((2, 5), dtype=torch.long)
    ids[0, :3], slots[0, :3] = short_ids[0], short_slots[0]
    ids[1], slots[1] = long_ids[0], long_slots[0]
    batched = backend.block_logits(backend.encode_prefix([short, long]), ids, slots)
    torch.testing.assert_close(batched[0, :3], alone_short[0], atol=1e-5, rtol=0)
    torch.testing.assert_close(batched[1], alone_long[0], atol=1e-5, rtol=0)
    if select:
        selected = backend.encode_prefix([long, short]).select([1])
        torch.testing.assert_close(backend.block_logits(selected, short_ids, short_slots), alone_short, atol=1e-5, rtol=0)
