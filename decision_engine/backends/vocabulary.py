"""The token ids the engine needs from a tokenizer: mask, padding, digits, signs, yes/no, slot markers."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

ASCII_DIGIT = re.compile(r"[0-9]")
SPACE_BETWEEN_DIGITS = re.compile(r"(?<=[0-9]) (?=[0-9])")


def spell_digits(text: str) -> str:
    """`text` with every digit standing alone ("on 2026-03-14" -> "on  2 0 2 6 - 0 3 - 1 4 "), so a
    number reads as the same digit tokens an answer slot writes."""
    return ASCII_DIGIT.sub(r" \g<0> ", text)


# LLaDA's, Dream's and Fast-dLLM v2's mask tokens, which LLaDA's and Fast-dLLM v2's tokenizers leave undeclared
MASK_TOKENS = ("<|mdm_mask|>", "<|mask|>", "|<MASK>|")


def _first_id(*ids: int | None) -> int | None:
    return next((i for i in ids if i is not None), None)


class VocabularyError(ValueError):
    """The tokenizer lacks something the answer slots need."""


@dataclass(frozen=True)
class Vocabulary:
    """A tokenizer plus the special ids answer slots are built from."""

    tokenizer: Any
    size: int
    mask_id: int
    pad_id: int
    cls_id: int
    sep_id: int
    digit_ids: tuple[int, ...]  # ids of "0" .. "9", each a single token
    plus_id: int
    minus_id: int
    yes_ids: tuple[int, ...]
    no_ids: tuple[int, ...]
    marker_ids: tuple[tuple[int, ...], ...]  # marker_ids[k - 1] marks question k in the prefix
    split_digits: bool = False  # encode numbers digit by digit (models trained that way)

    @classmethod
    def from_tokenizer(
        cls, tokenizer: Any, split_digits: bool = False, mask_id: int | None = None, pad_id: int | None = None
    ) -> Vocabulary:
        """The answer-slot ids of `tokenizer`. Diffusion LLMs often declare no mask, pad, cls or sep token:
        the mask is then `mask_id` or a known mask token of the vocabulary (LLaDA's `<|mdm_mask|>`), the
        padding `pad_id` or the eos token, cls falls back to bos, then eos (Qwen's tokenizers declare no
        bos), and sep to eos."""

        def single(text: str) -> int:
            ids = tokenizer.encode(text, add_special_tokens=False)
            if len(ids) != 1:
                raise VocabularyError(f"the tokenizer splits {text!r} into {len(ids)} tokens; answer slots need one")
            return ids[0]

        tokenizer.model_max_length = 1 << 30  # documents are cut by the layout, not the tokenizer
        vocab = tokenizer.get_vocab()
        mask_id = _first_id(mask_id, tokenizer.mask_token_id, *(vocab.get(t) for t in MASK_TOKENS))
        pad_id = _first_id(pad_id, tokenizer.pad_token_id, tokenizer.eos_token_id)
        if mask_id is None:
            raise VocabularyError(f"the tokenizer has no mask token (nor any of {', '.join(MASK_TOKENS)})")
        if pad_id is None:
            raise VocabularyError("the tokenizer has no pad token (nor an eos token to pad with)")
        cls_id = _first_id(tokenizer.cls_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id)
        sep_id = _first_id(tokenizer.sep_token_id, tokenizer.eos_token_id)
        if cls_id is None or sep_id is None:
            raise VocabularyError("the tokenizer has neither cls/sep nor bos/eos tokens")
        markers = []
        for k in range(1, 9):
            unused = f"[unused{k}]"
            if unused in vocab:
                markers.append((vocab[unused],))
            else:
                markers.append(tuple(tokenizer.encode(f"question {k}:", add_special_tokens=False)))
        return cls(
            tokenizer=tokenizer,
            size=len(tokenizer),
            mask_id=mask_id,
            pad_id=pad_id,
            cls_id=cls_id,
            sep_id=sep_id,
            digit_ids=tuple(single(str(d)) for d in range(10)),
            plus_id=single("+"),
            minus_id=single("-"),
            yes_ids=tuple(tokenizer.encode("yes", add_special_tokens=False)),
            no_ids=tuple(tokenizer.encode("no", add_special_tokens=False)),
            marker_ids=tuple(markers),
            split_digits=split_digits,
        )

    def encode(self, text: str) -> list[int]:
        """Token ids of `text` without special tokens."""
        if self.split_digits:
            text = spell_digits(text)
        return self.tokenizer.encode(text, add_special_tokens=False)

    def decode(self, ids: list[int]) -> str:
        text = self.tokenizer.decode(ids)
        return SPACE_BETWEEN_DIGITS.sub("", text) if self.split_digits else text
