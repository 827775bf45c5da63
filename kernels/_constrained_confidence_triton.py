"""The Triton kernel of `constrained_confidence` (imported by its launcher, never at package import)."""

import triton
import triton.language as tl


@triton.jit
def _constrained_confidence_kernel(
    logits_ptr,  # (P, V)
    bits_ptr,  # (P, W) int32 packed allowed mask
    confidence_ptr,  # (P,) float32 out
    token_ptr,  # (P,) int64 out
    V,
    stride_logits,
    stride_bits,
    BLOCK_V: tl.constexpr,
):
    """One program per row: an online softmax over the allowed columns, one tile of BLOCK_V at a time.

    Confidence is exp(max - max) / sum(exp(x - max)) = 1 / sum, so only the running maximum,
    the running sum rescaled to it, and the maximum's column are carried.
    """
    row = tl.program_id(0).to(tl.int64)
    logits_row = logits_ptr + row * stride_logits
    bits_row = bits_ptr + row * stride_bits
    offsets = tl.arange(0, BLOCK_V)
    top = tl.full([], float("-inf"), tl.float32)
    total = tl.zeros([], tl.float32)
    best = tl.full([], -1, tl.int32)
    for start in range(0, V, BLOCK_V):
        cols = start + offsets
        inside = cols < V
        words = tl.load(bits_row + (cols >> 5), mask=inside, other=0)
        allowed = ((words >> (cols & 31)) & 1) != 0
        x = tl.load(logits_row + cols, mask=inside, other=float("-inf")).to(tl.float32)
        x = tl.where(allowed, x, float("-inf"))
        tile_top = tl.max(x, axis=0)
        tile_best = tl.argmax(x, axis=0)  # first maximum of the tile
        new_top = tl.maximum(top, tile_top)
        shift = tl.where(new_top == float("-inf"), 0.0, new_top)  # all -inf so far: nothing to rescale
        total = total * tl.exp(top - shift) + tl.sum(tl.exp(x - shift), axis=0)
        best = tl.where(tile_top > top, start + tile_best, best)  # strict: earlier tiles win ties
        top = new_top
    shift = tl.where(top == float("-inf"), 0.0, top)
    tl.store(confidence_ptr + row, tl.exp(top - shift) / total)
    tl.store(token_ptr + row, best.to(tl.int64))
