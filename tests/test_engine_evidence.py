"""Long documents through the engine: a retrieved context within the model's positions, evidence per answer."""

from __future__ import annotations

from decision_engine.engine import DecisionEngine
from decision_engine.retrieval.builder import RetrievalContext
from decision_engine.types import AnswerSchema, DecisionRequest, Document, Question

FILLER = "The parties met to discuss catering arrangements for the annual picnic. "
NOTICE = "12.3 Either party may terminate this Agreement by giving ninety days written notice to the other party."


def _request(mode: str) -> DecisionRequest:
    text = FILLER * 80 + NOTICE + " " + FILLER * 80  # the clause sits in the middle of ~12,000 characters
    questions = [
        Question(id="notice", text="How many days of written notice are needed to terminate?",
                 schema=AnswerSchema(type="integer", minimum=0, maximum=365)),
        Question(id="may_terminate", text="May either party terminate the agreement?", schema=AnswerSchema(type="boolean")),
    ]
    return DecisionRequest(document=Document(text=text), questions=questions, mode=mode)


def test_answers_carry_evidence_from_the_document(tiny_backend):
    engine = DecisionEngine(tiny_backend, context=RetrievalContext.create(tiny_backend.vocab, dense=False))
    for mode in ("joint", "independent"):
        request = _request(mode)
        response = engine.decide(request)
        text = request.document.text
        for answer in response.answers:
            assert answer.evidence, (mode, answer.id)
            for span in answer.evidence:
                assert text[span.start : span.end] == span.text
        assert "terminate" in response.answers[0].evidence[0].text  # the notice clause ranks first


def test_retrieved_context_fits_and_holds_the_relevant_clause(tiny_backend, vocab):
    engine = DecisionEngine(tiny_backend, context=RetrievalContext.create(vocab, dense=False))
    prepared = engine.prepare(_request("joint"), "joint")
    prefix = prepared.blocks[0].prefix.token_ids
    assert len(prefix) + len(prepared.blocks[0].positions) <= tiny_backend.max_positions
    clause = vocab.encode(NOTICE)
    assert any(prefix[i : i + len(clause)] == clause for i in range(len(prefix)))
    start = prepared.request.document.text.index(NOTICE)
    assert any(s <= start < e for s, e in prepared.shown_ranges[0])


def test_independent_blocks_report_only_the_text_each_one_shows(tiny_backend, vocab):
    """Evidence recall in independent mode counts a question's own context, not the union of all blocks'."""
    deposit = "7.1 The landlord shall return the security deposit within fourteen days after the lease ends."
    text = NOTICE + " " + FILLER * 60 + deposit + " " + FILLER * 60
    questions = [
        Question(id="notice", text="How many days of written notice are needed to terminate?",
                 schema=AnswerSchema(type="integer", minimum=0, maximum=365)),
        Question(id="deposit", text="Within how many days must the landlord return the security deposit?",
                 schema=AnswerSchema(type="integer", minimum=0, maximum=365)),
    ]
    engine = DecisionEngine(tiny_backend, context=RetrievalContext.create(vocab, dense=False))
    engine.context_tokens = 24  # room for about one clause per block
    both = engine.prepare(DecisionRequest(document=Document(text=text), questions=questions), "independent")
    notice_at, deposit_at = text.index(NOTICE), text.index(deposit)
    shows = [[any(s <= at < e for s, e in ranges) for at in (notice_at, deposit_at)] for ranges in both.shown_ranges]
    assert shows == [[True, False], [False, True]]
    for i, question in enumerate(questions):
        alone = engine.prepare(DecisionRequest(document=Document(text=text), questions=[question]), "independent")
        assert alone.shown_ranges[0] == both.shown_ranges[i]
