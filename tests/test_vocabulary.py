"""How the vocabulary encodes numbers, with and without digit splitting."""

from __future__ import annotations

from decision_engine.backends.native import base_tokenizer
from decision_engine.backends.vocabulary import Vocabulary, spell_digits


def test_split_digits_encodes_every_digit_as_the_slot_digit_token():
    vocab = Vocabulary.from_tokenizer(base_tokenizer(), split_digits=True)
    ids = vocab.encode("Notice given on 2026-03-14 for EUR 1,500.")
    digit_of = {t: str(d) for d, t in enumerate(vocab.digit_ids)}
    assert "".join(digit_of[t] for t in ids if t in digit_of) == "20260314" + "1500"
    words = vocab.tokenizer.convert_ids_to_tokens(ids)
    assert not any(w.startswith("##") and w[2:].isdigit() for w in words)


def test_without_split_digits_numbers_stay_whole_word_pieces():
    plain = Vocabulary.from_tokenizer(base_tokenizer())
    assert plain.encode("2026") != [plain.digit_ids[d] for d in (2, 0, 2, 6)]
    assert plain.encode("no numbers here") == Vocabulary.from_tokenizer(base_tokenizer(), True).encode("no numbers here")


def test_decode_joins_the_digits_of_a_number_again():
    vocab = Vocabulary.from_tokenizer(base_tokenizer(), split_digits=True)
    assert vocab.decode(vocab.encode("paid 19300 on 2022")) == "paid 19300 on 2022"
    assert spell_digits("a1b") == "a 1 b"
