"""The Triton kernel of `block_attention_triton` (imported by its launcher, never at package import)."""

import triton
import triton.language as tl


@triton.jit
def _attend_tile(q, k, v, key_ok, top, total, acc, qk_scale, DOT_PRECISION: tl.constexpr):
    """Fold one key tile into the running (max, sum, weighted values) of BLOCK_M query rows (base-2 exponents)."""
    scores = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION) * qk_scale  # (BLOCK_M, BLOCK_N)
    scores = tl.where(key_ok[None, :], scores, float("-inf"))
    new_top = tl.maximum(top, tl.max(scores, axis=1))
    shift = tl.where(new_top == float("-inf"), 0.0, new_top)  # rows with no key yet: nothing to rescale
    weights = tl.exp2(scores - shift[:, None])
    rescale = tl.exp2(top - shift)
    total = total * rescale + tl.sum(weights, axis=1)
    acc = acc * rescale[:, None] + tl.dot(weights.to(v.dtype), v, input_precision=DOT_PRECISION)
    return new_top, total, acc


@triton.jit
def _block_attention_kernel(
    q_ptr,  # (B, H, L, D), any strides with the last dimension contiguous
    prefix_k_ptr,  # (total_T, H, D) contiguous: every request's real prefix tokens, one after another
    prefix_v_ptr,
    cu_seqlens_ptr,  # (B + 1,) int32: request b owns packed rows cu[b] to cu[b + 1]
    block_k_ptr,  # (B, H, L, D)
    block_v_ptr,
    block_mask_ptr,  # (B, L) uint8, 1 on real block positions
    out_ptr,  # (B, H, L, D)
    H, L, D, qk_scale,
    stride_qb, stride_qh, stride_ql,
    stride_pt, stride_ph,
    stride_kb, stride_kh, stride_kl,
    stride_vb, stride_vh, stride_vl,
    stride_mb,
    stride_ob, stride_oh, stride_ol,
    BLOCK_M: tl.constexpr,  # block queries per program
    BLOCK_N: tl.constexpr,  # keys per tile
    BLOCK_D: tl.constexpr,  # head dimension, padded to a power of two
    DOT_PRECISION: tl.constexpr,
):  # fmt: skip
    """One program per (request, head, tile of block queries): prefix key tiles of its own length, then the block's."""
    pid_bh = tl.program_id(0)
    b = (pid_bh // H).to(tl.int64)
    h = (pid_bh % H).to(tl.int64)
    rows = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, BLOCK_D)
    row_ok = rows < L
    dim_ok = dims < D
    q = tl.load(
        q_ptr + b * stride_qb + h * stride_qh + rows[:, None] * stride_ql + dims[None, :],
        mask=row_ok[:, None] & dim_ok[None, :], other=0.0,
    )  # fmt: skip
    top = tl.full([BLOCK_M], float("-inf"), tl.float32)
    total = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    keys = tl.arange(0, BLOCK_N)

    start = tl.load(cu_seqlens_ptr + b)
    end = tl.load(cu_seqlens_ptr + b + 1)
    for first in range(start, end, BLOCK_N):
        token = (first + keys).to(tl.int64)
        key_ok = token < end
        offsets = token[:, None] * stride_pt + h * stride_ph + dims[None, :]
        k = tl.load(prefix_k_ptr + offsets, mask=key_ok[:, None] & dim_ok[None, :], other=0.0)
        v = tl.load(prefix_v_ptr + offsets, mask=key_ok[:, None] & dim_ok[None, :], other=0.0)
        top, total, acc = _attend_tile(q, k, v, key_ok, top, total, acc, qk_scale, DOT_PRECISION)

    for first in range(0, L, BLOCK_N):
        position = first + keys
        inside = position < L
        real = tl.load(block_mask_ptr + b * stride_mb + position, mask=inside, other=0)
        key_ok = inside & (real != 0)
        k = tl.load(
            block_k_ptr + b * stride_kb + h * stride_kh + position[:, None] * stride_kl + dims[None, :],
            mask=key_ok[:, None] & dim_ok[None, :], other=0.0,
        )  # fmt: skip
        v = tl.load(
            block_v_ptr + b * stride_vb + h * stride_vh + position[:, None] * stride_vl + dims[None, :],
            mask=key_ok[:, None] & dim_ok[None, :], other=0.0,
        )  # fmt: skip
        top, total, acc = _attend_tile(q, k, v, key_ok, top, total, acc, qk_scale, DOT_PRECISION)

    out = acc / tl.where(total == 0.0, 1.0, total)[:, None]  # a row with nothing to attend to gives 0
    tl.store(
        out_ptr + b * stride_ob + h * stride_oh + rows[:, None] * stride_ol + dims[None, :],
        out.to(out_ptr.dtype.element_ty),
        mask=row_ok[:, None] & dim_ok[None, :],
    )
