"""Retrieval: span splitting, BM25, sentence embeddings with their cache, and budgeted context building."""

from __future__ import annotations

import random
import time

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from decision_engine.retrieval.context import Retriever, SelectedContext
from decision_engine.retrieval.embedder import SpanEmbedder
from decision_engine.retrieval.lexical import bm25_scores, tokenize
from decision_engine.retrieval.spans import Span, split_spans

CONTRACT = """MUTUAL NON-DISCLOSURE AGREEMENT

1. Purpose. The parties wish to evaluate a joint venture, e.g. the gripper project (the "Purpose"). \
Acme Inc. signs for Lumen. See Schedule No. 5 for the fee of 1.5 million euros.
2. Confidential Information
2.1 "Confidential Information" means all technical and commercial information disclosed for the Purpose.
2.2 It does not include information that (a) is or becomes public; (b) was lawfully known before \
disclosure; or (c) is independently developed without use of the Confidential Information.
3. Return. On termination the Receiving Party shall return or destroy all Confidential Information.
• The Receiving Party shall not reverse engineer any prototype.
• Mr. J. Smith of the U.S. office is the contact person. He signs for both parties!
4. Term. This Agreement lasts three years. Obligations survive termination for five years.
"""


def assert_valid(text: str, spans: list[Span], max_chars: int) -> None:
    last_end = 0
    for span in spans:
        assert span.text == text[span.start : span.end]
        assert span.start >= last_end, "spans overlap or are out of order"
        assert 0 < len(span.text) <= max_chars
        assert span.text == span.text.strip()
        assert not text[last_end : span.start].strip(), "non-whitespace text fell between spans"
        last_end = span.end
    assert not text[last_end:].strip()


# --- spans -------------------------------------------------------------------------------------


def test_spans_cover_text_in_order_with_exact_offsets():
    spans = split_spans(CONTRACT)
    assert_valid(CONTRACT, spans, 400)
    texts = [s.text for s in spans]
    assert "The Receiving Party shall not reverse engineer any prototype." in " ".join(texts)
    assert any(t.startswith("4. Term.") for t in texts)
    assert "This Agreement lasts three years." in texts


@pytest.mark.parametrize(
    "phrase",
    ["e.g. the gripper", "Acme Inc. signs", "No. 5", "1.5 million", "Mr. J. Smith of the U.S. office"],
    ids=["eg", "inc", "number", "decimal", "names"],
)
def test_abbreviations_and_decimals_do_not_split(phrase):
    assert any(phrase in s.text for s in split_spans(CONTRACT))


def test_sentences_list_items_and_clauses_split():
    texts = [s.text for s in split_spans(CONTRACT)]
    assert "(b) was lawfully known before disclosure; or" in texts
    assert any(t.startswith("2.1 ") for t in texts)
    assert "He signs for both parties!" in texts
    assert "Obligations survive termination for five years." in texts
    # a bare clause number never stands alone
    assert all(t not in ("1.", "2.1", "(a)", "•") for t in texts)


@pytest.mark.parametrize("max_chars", [20, 57, 200, 400])
def test_max_chars_respected(max_chars):
    long_text = CONTRACT + " ".join(["word"] * 300) + "; " + "x" * 900 + ", tail, end."
    assert_valid(long_text, split_spans(long_text, max_chars), max_chars)


@given(st.text(alphabet=st.sampled_from(list("ab .,;:()\n•1.Xy")), max_size=400), st.integers(5, 120))
@settings(max_examples=150, deadline=None)
def test_spans_valid_on_arbitrary_text(text, max_chars):
    assert_valid(text, split_spans(text, max_chars), max_chars)


def test_empty_and_blank_text_give_no_spans():
    assert split_spans("") == []
    assert split_spans(" \n\t ") == []


def _best_split_seconds(text: str) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        split_spans(text)
        best = min(best, time.perf_counter() - start)
    return best


def test_splitting_grows_linearly_with_the_text():
    words = "The Receiving Party shall, e.g. under clause 3.2, return No. 5 items; (a) or destroy them."
    text = "\n".join(f"{i}. {words}" for i in range(1200))[:100_000]
    eighth = text[: len(text) // 8]
    assert len(split_spans(text)) > 1000  # also the warm-up
    ratio = _best_split_seconds(text) / max(_best_split_seconds(eighth), 1e-6)
    assert ratio < 24, f"8x the text took {ratio:.1f}x the time (linear is 8x, quadratic 64x)"


# --- BM25 --------------------------------------------------------------------------------------


def test_bm25_ranks_the_span_with_the_query_words_first():
    spans = [
        "The agreement is governed by the laws of England.",
        "The Receiving Party shall not reverse engineer any prototype or sample.",
        "Notices must be given in writing to the address above.",
        "Each party bears its own costs.",
    ]
    scores = bm25_scores(["May the receiving party reverse engineer prototypes?", "Which laws govern?"], spans)
    assert scores.shape == (2, 4)
    assert int(np.argmax(scores[0])) == 1
    assert int(np.argmax(scores[1])) == 0
    assert scores[0, 2] == 0.0  # no shared word


def test_bm25_edge_cases_and_tokenizer():
    assert bm25_scores(["anything"], []).shape == (1, 0)
    assert bm25_scores([], ["a span"]).shape == (0, 1)
    assert tokenize("The Party SHALL return it, 5 days.") == ["party", "shall", "return", "5", "days"]


# --- embedder ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def embedder() -> SpanEmbedder:
    return SpanEmbedder(cache_size=2)


def test_embedder_loads_lazily():
    assert SpanEmbedder()._model is None


def test_paraphrases_are_closer_than_unrelated_sentences(embedder):
    vectors = embedder.embed(
        [
            "The recipient must return or destroy all confidential material when the agreement ends.",
            "Upon termination, the receiving party shall give back or destroy confidential information.",
            "This agreement is governed by the laws of the State of New York.",
        ]
    )
    assert vectors.shape == (3, 384)
    assert torch.allclose(vectors.norm(dim=1), torch.ones(3), atol=1e-5)
    paraphrase = float(vectors[0] @ vectors[1])
    unrelated = float(vectors[0] @ vectors[2])
    assert paraphrase > unrelated + 0.2


def test_batching_and_order_do_not_change_embeddings(embedder):
    texts = ["short", "a much longer sentence about confidential information and its return", "mid length text"]
    together = embedder.embed(texts)
    alone = torch.cat([embedder.embed([t]) for t in texts])
    assert torch.allclose(together, alone, atol=1e-5)
    assert embedder.embed([]).shape == (0, 384)


def test_matches_sentence_transformers(embedder):
    st_module = pytest.importorskip("sentence_transformers")
    from decision_engine.model.loader import base_model_dir

    texts = ["The Receiving Party shall not reverse engineer any prototype.", "Notices must be in writing."]
    reference = st_module.SentenceTransformer(str(base_model_dir()), device="cpu").encode(
        texts, convert_to_tensor=True, normalize_embeddings=True
    )
    assert torch.allclose(embedder.embed(texts), reference.cpu(), atol=1e-4)


def test_span_cache_hits_on_second_call_and_evicts_least_recent(embedder):
    embedder.clear_cache()
    docs = ["Term. Three years.", "Law. English law applies.", "Notices. In writing only."]
    first = embedder.embed_spans(docs[0], split_spans(docs[0]))
    again = embedder.embed_spans(docs[0], split_spans(docs[0]))
    info = embedder.cache_info()
    assert (info.hits, info.misses, info.size) == (1, 1, 1)
    assert again is first
    embedder.embed_spans(docs[1], split_spans(docs[1]))
    embedder.embed_spans(docs[2], split_spans(docs[2]))  # cache_size 2: docs[0] is evicted
    assert embedder.cache_info().size == 2
    embedder.embed_spans(docs[0], split_spans(docs[0]))
    assert embedder.cache_info().misses == 4


# --- context building --------------------------------------------------------------------------

QUESTIONS = [
    "Shall the Receiving Party return or destroy Confidential Information on termination?",
    "May the Receiving Party reverse engineer prototypes?",
    "Do obligations survive termination?",
]


def check_context(selected: SelectedContext, vocab, budget: int, n_questions: int) -> None:
    assert len(selected.token_ids) <= budget
    starts = [s.start for s in selected.spans]
    assert starts == sorted(starts)
    assert len(selected.evidence) == n_questions
    chosen = set(selected.spans)
    for picks in selected.evidence:
        assert all(span in chosen for span, _ in picks)
        scores = [score for _, score in picks]
        assert scores == sorted(scores, reverse=True)


def random_document(rng: random.Random) -> str:
    words = "party shall return confidential information term survive notice law agreement the of a".split()
    clauses = []
    for i in range(rng.randint(1, 40)):
        sentence = " ".join(rng.choice(words) for _ in range(rng.randint(1, 60)))
        clauses.append(f"{i + 1}. {sentence.capitalize()}.")
    return "\n".join(clauses)


@given(seed=st.integers(0, 10_000), budget=st.integers(1, 400), n_questions=st.integers(1, 8))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_lexical_context_never_exceeds_budget(vocab, seed, budget, n_questions):
    rng = random.Random(seed)
    document = random_document(rng)
    questions = [rng.choice(QUESTIONS) + f" ({q})" for q in range(n_questions)]
    retriever = Retriever(None, max_chars=rng.choice([40, 200, 400]))
    selected = retriever.build_context(document, questions, vocab, budget)
    check_context(selected, vocab, budget, n_questions)
    if selected.spans and len(selected.spans) < len(retriever.score(document, questions)[0]):
        assert selected.token_ids == [t for s in selected.spans for t in vocab.encode(s.text)]


def test_combined_context_puts_each_questions_best_span_in(vocab, embedder):
    retriever = Retriever(embedder)
    selected = retriever.build_context(CONTRACT, QUESTIONS, vocab, budget_tokens=60)
    check_context(selected, vocab, 60, len(QUESTIONS))
    best = [picks[0][0].text for picks in selected.evidence]
    assert "return or destroy" in best[0]
    assert "reverse engineer" in best[1]
    assert "survive termination" in best[2]


def test_whole_document_returned_when_it_fits(vocab):
    selected = Retriever(None).build_context(CONTRACT, QUESTIONS, vocab, budget_tokens=2000)
    assert selected.token_ids == vocab.encode(CONTRACT)
    assert selected.spans == split_spans(CONTRACT)
    assert all(len(picks) == 3 for picks in selected.evidence)


def test_scores_combine_z_scored_parts(embedder):
    spans, lexical = Retriever(None).score(CONTRACT, QUESTIONS)
    _, dense = Retriever(embedder, 1.0, 0.0).score(CONTRACT, QUESTIONS)
    _, both = Retriever(embedder, 1.0, 2.0).score(CONTRACT, QUESTIONS)
    assert lexical.shape == dense.shape == (3, len(spans))
    assert np.allclose(lexical.mean(axis=1), 0.0) and np.allclose(lexical.std(axis=1), 1.0)
    assert np.allclose(both, dense + 2.0 * lexical)


def test_gold_evidence_first_puts_the_gold_span_in_a_one_span_budget(vocab):
    from decision_engine.retrieval.gold_first import GoldFirstRetriever

    question = "Must the Receiving Party return or destroy the information?"
    plain = Retriever(None).build_context(CONTRACT, [question], vocab, budget_tokens=30)
    assert any("return or destroy" in s.text for s in plain.spans)  # what lexical ranking picks on its own
    gold_text = "This Agreement lasts three years."
    start = CONTRACT.index(gold_text)
    gold = {(CONTRACT, question): [(start, start + len(gold_text))]}
    lifted = GoldFirstRetriever(Retriever(None), gold).build_context(CONTRACT, [question], vocab, budget_tokens=30)
    assert any(gold_text in s.text for s in lifted.spans)
    assert gold_text in lifted.evidence[0][0][0].text  # and it is the question's best evidence
    other = GoldFirstRetriever(Retriever(None), gold).build_context(CONTRACT, ["Who signs?"], vocab, budget_tokens=30)
    assert other.spans == Retriever(None).build_context(CONTRACT, ["Who signs?"], vocab, budget_tokens=30).spans


def test_a_mention_is_read_with_the_words_before_it_and_the_words_around_it(embedder):
    from decision_engine.grounding.mentions import find_mentions
    from decision_engine.retrieval.embedder import DIM, MENTION_DIM

    text = "7 May 2024: signed by Northvale Ltd.\nNorthvale Ltd and its adviser Quentin Hartigan countersigned the agreement on 9 May 2024"
    first, second = embedder.embed_mentions(text, find_mentions(text))
    assert first.shape == (MENTION_DIM,)
    own, before, around = first.split(DIM)
    assert before.abs().sum() == 0  # nothing is written before it on its line
    assert torch.isclose(around.norm(), torch.tensor(1.0)) and torch.isclose(own.norm(), torch.tensor(1.0))
    own, before, around = second.split(DIM)  # nothing after it: the words around it are the last words before it
    assert torch.isclose(before.norm(), torch.tensor(1.0)) and torch.isclose(around.norm(), torch.tensor(1.0))
    assert not torch.allclose(before, around)  # the last eight tokens before it; the last sixteen


def test_passages_are_embedded_once_and_kept_with_their_document(embedder):
    document = "Notice is at least 7 days during probation and 45 days after it."
    ranges = [(0, 25), (47, 64), (0, 25)]
    embedder.clear_cache()
    first = embedder.embed_passages(document, ranges)
    assert torch.allclose(first[0], embedder.embed([document[0:25]])[0], atol=1e-5)
    assert torch.equal(first[0], first[2])
    embedder.forget_questions()  # a new group of questions about the same document
    calls = []
    embed = embedder.embed
    embedder.embed = lambda texts: calls.append(texts) or embed(texts)
    try:
        assert torch.equal(embedder.embed_passages(document, ranges[:2]), first[:2])
    finally:
        embedder.embed = embed
    assert calls == []


def test_choice_words_are_kept_when_the_questions_are_forgotten(embedder):
    embedder.clear_cache()
    first = embedder.embed_words(["yes", "no", "partial"])
    assert torch.allclose(first[0], embedder.embed(["yes"])[0], atol=1e-5)
    embedder.forget_questions()  # a new group of questions: its choices are words seen before
    calls = []
    embed = embedder.embed
    embedder.embed = lambda texts: calls.append(texts) or embed(texts)
    try:
        assert torch.equal(embedder.embed_words(["no", "yes"]), first[[1, 0]])
        embedder.embed_questions(["Was the deposit returned?"])
    finally:
        embedder.embed = embed
    assert calls == [["Was the deposit returned?"]]  # the question afresh, the words from the cache
    embedder.clear_cache()
    assert embedder.embed_words(["yes"]).shape == first[:1].shape


MENTIONED = (
    "1. Notice. The tenant may end the lease by giving 30 days' written notice to the landlord.\n"
    "2. Deposit. A deposit of 1,450 is held and returned within 14 days after the end of the lease.\n"
    "3 May 2024: the tenant gave written notice. 21 May 2024: the tenant moved out."
)


def test_mentions_read_in_spans_cost_no_reading_beyond_the_spans():
    from decision_engine.grounding.mentions import find_mentions
    from decision_engine.retrieval.context import SPAN_CHARS
    from decision_engine.retrieval.spans import split_spans

    embedder = SpanEmbedder(cache_size=2, mentions_in_spans=True)
    spans = split_spans(MENTIONED, SPAN_CHARS)
    vectors = embedder.embed_spans(MENTIONED, spans)
    plain = SpanEmbedder(cache_size=0)
    assert torch.allclose(vectors, plain.embed([s.text for s in spans], spans=True), atol=1e-6)  # the pointer's vectors unchanged
    reads = []
    hidden_states = embedder._hidden_states
    embedder._hidden_states = lambda ids, spans=False: reads.append(len(ids)) or hidden_states(ids, spans)
    try:
        mentions = find_mentions(MENTIONED)
        read = embedder.embed_mentions(MENTIONED, mentions)
    finally:
        embedder._hidden_states = hidden_states
    assert len(mentions) >= 5 and reads == []  # every mention read from the spans already encoded
    fresh = SpanEmbedder(cache_size=0, mentions_in_spans=True).embed_mentions(MENTIONED, mentions)
    assert torch.allclose(read, fresh, atol=1e-6)  # kept states read as a fresh reading of the spans
    assert not torch.allclose(read, plain.embed_mentions(MENTIONED, mentions), atol=1e-3)  # not the windows' reading


def test_a_mention_read_in_its_span_sees_only_its_span():
    from decision_engine.grounding.mentions import find_mentions
    from decision_engine.retrieval.embedder import DIM

    embedder = SpanEmbedder(cache_size=0, mentions_in_spans=True)
    alone = "21 May 2024: the tenant moved out."
    in_file = embedder.embed_mentions(MENTIONED, [m for m in find_mentions(MENTIONED) if m.text == "21 May 2024"])
    by_itself = embedder.embed_mentions(alone, find_mentions(alone)[:1])
    assert torch.allclose(in_file[0, :DIM], by_itself[0, :DIM], atol=1e-5)  # its span is its own sentence
    windows = SpanEmbedder(cache_size=0).embed_mentions(MENTIONED, [m for m in find_mentions(MENTIONED) if m.text == "21 May 2024"])
    assert not torch.allclose(windows[0, :DIM], by_itself[0, :DIM], atol=1e-3)  # its window reads the line before it too


def test_a_mention_past_its_spans_token_limit_is_read_in_its_own_window():
    from decision_engine.grounding.mentions import find_mentions

    from decision_engine.retrieval.context import SPAN_CHARS
    from decision_engine.retrieval.embedder import DIM
    from decision_engine.retrieval.spans import split_spans

    long_line = "The parties agree " + "that the works shall be done with care " * 9 + "by 9 June 2025."
    assert len(split_spans(long_line, SPAN_CHARS)) == 1  # one span of about 80 tokens; its window, about 55
    span_reader = SpanEmbedder(cache_size=0, mentions_in_spans=True, max_tokens=64)
    window_reader = SpanEmbedder(cache_size=0, max_tokens=64)
    mentions = find_mentions(long_line)
    assert [m.text for m in mentions] == ["9 June 2025"]
    read = span_reader.embed_mentions(long_line, mentions)
    assert torch.isclose(read[0, :DIM].norm(), torch.tensor(1.0))  # its own tokens were read, in the window
    assert torch.allclose(read, window_reader.embed_mentions(long_line, mentions))


def test_spans_whose_mentions_were_read_first_are_not_read_again():
    from decision_engine.grounding.mentions import find_mentions
    from decision_engine.retrieval.context import SPAN_CHARS
    from decision_engine.retrieval.spans import split_spans

    embedder = SpanEmbedder(cache_size=0, mentions_in_spans=True)  # as every fit reads: no document kept
    embedder.embed_mentions(MENTIONED, find_mentions(MENTIONED))
    reads = []
    hidden_states = embedder._hidden_states
    embedder._hidden_states = lambda ids, spans=False: reads.append(len(ids)) or hidden_states(ids, spans)
    try:
        vectors = embedder.embed_spans(MENTIONED, split_spans(MENTIONED, SPAN_CHARS))
    finally:
        embedder._hidden_states = hidden_states
    assert reads == []
    plain = SpanEmbedder(cache_size=0).embed([s.text for s in split_spans(MENTIONED, SPAN_CHARS)], spans=True)
    assert torch.allclose(vectors, plain, atol=1e-6)
