"""Constrained confidence: per masked position, the most probable allowed token and its probability.

Probabilities are renormalised over the allowed tokens only, so confidence is the
model's belief among the continuations that keep the slot valid.

Three ways to compute it: `constrained_confidence_reference` on (P, A) allowed ids (what the
denoiser uses off CUDA), `constrained_confidence_eager` (masked_fill + softmax + max over a
(P, V) bool mask: the plain PyTorch way, for the benchmark), and the Triton kernel
`constrained_confidence` on a bit-packed mask, with `constrained_confidence_masked_reference`
as its like-for-like reference. The kernel itself lives in `_constrained_confidence_triton.py`,
imported only when it is launched.
"""

from __future__ import annotations

import torch

from .dispatch import check_device

WORD_BITS = 32  # allowed-token flags per int32 word of the packed mask
MAX_BLOCK_V = 2048  # vocabulary columns per kernel iteration


def constrained_confidence_reference(
    logits: torch.Tensor,  # (P, V) logits of the positions to score
    allowed: torch.Tensor,  # (P, A) allowed token ids, padded with -1
) -> tuple[torch.Tensor, torch.Tensor]:
    """Return (confidence (P,), token (P,)); every row must allow at least one token."""
    if logits.dim() != 2 or allowed.dim() != 2 or logits.shape[0] != allowed.shape[0]:
        raise ValueError(f"expected logits (P, V) and allowed (P, A), got {tuple(logits.shape)} and {tuple(allowed.shape)}")
    valid = allowed >= 0
    if not bool(valid.any(dim=1).all()):
        raise ValueError("every position needs at least one allowed token")
    picked = logits.float().gather(1, allowed.clamp(min=0))  # (P, A)
    picked = picked.masked_fill(~valid, float("-inf"))
    probs = torch.softmax(picked, dim=1)
    confidence, index = probs.max(dim=1)
    return confidence, allowed.gather(1, index[:, None]).squeeze(1)


def mask_words(vocab_size: int) -> int:
    """int32 words per row of a packed mask over `vocab_size` tokens."""
    return (vocab_size + WORD_BITS - 1) // WORD_BITS


def allowed_mask(allowed: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """(P, A) allowed ids padded with -1 -> (P, V) bool mask."""
    mask = torch.zeros(allowed.shape[0], vocab_size, dtype=torch.bool, device=allowed.device)
    rows, cols = (allowed >= 0).nonzero(as_tuple=True)
    mask[rows, allowed[rows, cols]] = True
    return mask


def pack_mask(mask: torch.Tensor) -> torch.Tensor:
    """(P, V) bool mask -> (P, ceil(V / 32)) int32; token t is bit t % 32 of word t // 32."""
    if mask.dim() != 2 or mask.dtype != torch.bool:
        raise ValueError(f"expected a (P, V) bool mask, got {mask.dtype} {tuple(mask.shape)}")
    rows, vocab = mask.shape
    words = mask_words(vocab)
    padded = mask.new_zeros(rows, words * WORD_BITS)
    padded[:, :vocab] = mask
    weights = torch.ones(WORD_BITS, dtype=torch.int64, device=mask.device) << torch.arange(WORD_BITS, device=mask.device)
    packed = (padded.view(rows, words, WORD_BITS).to(torch.int64) * weights).sum(dim=2)  # in [0, 2**32)
    return torch.where(packed >= 2**31, packed - 2**32, packed).to(torch.int32)  # same bits, as int32


def unpack_mask(bits: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """(P, W) int32 packed mask -> (P, V) bool mask."""
    shifts = torch.arange(WORD_BITS, dtype=torch.int32, device=bits.device)
    flags = (bits[:, :, None] >> shifts) & 1  # (P, W, 32)
    return flags.reshape(bits.shape[0], -1)[:, :vocab_size].bool()


def allowed_bits(allowed: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """(P, A) allowed ids padded with -1 -> (P, ceil(V / 32)) int32 packed mask for the kernel."""
    return pack_mask(allowed_mask(allowed, vocab_size))


def constrained_confidence_eager(
    logits: torch.Tensor,  # (P, V)
    mask: torch.Tensor,  # (P, V) bool, True on allowed tokens
) -> tuple[torch.Tensor, torch.Tensor]:
    """Plain PyTorch: masked_fill + softmax + max over (P, V); (confidence (P,), token (P,))."""
    probs = torch.softmax(logits.float().masked_fill(~mask, float("-inf")), dim=1)
    return probs.max(dim=1)


def constrained_confidence_masked_reference(
    logits: torch.Tensor,  # (P, V)
    bits: torch.Tensor,  # (P, ceil(V / 32)) int32 packed mask
) -> tuple[torch.Tensor, torch.Tensor]:
    """The kernel's semantics on the kernel's inputs; ties go to the lowest token id."""
    mask = unpack_mask(bits, logits.shape[1])
    masked = logits.float().masked_fill(~mask, float("-inf"))
    token = masked.argmax(dim=1)  # first maximum: the lowest id
    confidence = torch.softmax(masked, dim=1).gather(1, token[:, None]).squeeze(1)
    return confidence, token


def constrained_confidence(
    logits: torch.Tensor,  # (P, V) float32, float16 or bfloat16; rows contiguous
    bits: torch.Tensor,  # (P, ceil(V / 32)) int32 packed mask, contiguous
) -> tuple[torch.Tensor, torch.Tensor]:
    """Triton: (confidence (P,) float32, token (P,) int64) in one pass over the logits.

    The mask is bit-packed because the kernel is bound by memory traffic: at V=30522 a row of
    float32 logits is 122 KB, a bool mask would add 31 KB (25%, or 50% against bfloat16 logits),
    the packed mask adds 3.8 KB (3%). A row without allowed tokens gives NaN and token -1.
    """
    if logits.dim() != 2:
        raise ValueError(f"logits must be (P, V), got {tuple(logits.shape)}")
    rows, vocab = logits.shape
    if logits.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        raise ValueError(f"logits must be float32, float16 or bfloat16, got {logits.dtype}")
    if vocab > 1 and logits.stride(1) != 1:
        raise ValueError("logits rows must be contiguous (stride 1 along the vocabulary)")
    if bits.dtype != torch.int32 or tuple(bits.shape) != (rows, mask_words(vocab)) or not bits.is_contiguous():
        raise ValueError(
            f"bits must be a contiguous int32 ({rows}, {mask_words(vocab)}) packed mask, got {bits.dtype} {tuple(bits.shape)}"
        )
    check_device(logits, bits)
    confidence = torch.empty(rows, dtype=torch.float32, device=logits.device)
    token = torch.empty(rows, dtype=torch.int64, device=logits.device)
    if rows == 0:
        return confidence, token
    import triton

    from ._constrained_confidence_triton import _constrained_confidence_kernel

    block_v = min(MAX_BLOCK_V, max(128, triton.next_power_of_2(vocab)))
    _constrained_confidence_kernel[(rows,)](
        logits, bits, confidence, token,
        vocab, logits.stride(0), bits.stride(0),
        BLOCK_V=block_v,
        num_warps=8 if block_v >= 2048 else 4,
    )  # fmt: skip
    return confidence, token
