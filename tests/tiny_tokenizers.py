"""Word-level fast tokenizers built in the test, for tiny random diffusion LLMs: digits one token each."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def word_level_tokenizer(texts: Iterable[str], specials: Sequence[str], **special_tokens):
    """A `PreTrainedTokenizerFast` over the lower-cased words of `texts`, `specials` first (ids 0, 1, ...),
    then the ten digits and the engine's slot words; `special_tokens` (bos_token=..., ...) are declared as such."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    split = pre_tokenizers.Whitespace().pre_tokenize_str
    texts = [*texts, "yes no question : + -"]
    words = sorted({w for text in texts for w, _ in split(text.lower()) if not w.isdigit()} - set(specials))
    vocab = {w: i for i, w in enumerate([*specials, *map(str, range(10)), *words])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]" if "[UNK]" in vocab else specials[0]))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Whitespace(), pre_tokenizers.Digits(individual_digits=True)]
    )
    return PreTrainedTokenizerFast(tokenizer_object=tok, **special_tokens)
