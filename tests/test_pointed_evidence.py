"""The span pointer: per-question evidence laid beside each question, positions restarted per
question, a pointer that learns gold evidence, and a pointed model that trains, saves and decides."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from decision_engine.backends.native import NativeBackend, pad_positions
from decision_engine.datasets.contractnli import LABELS
from decision_engine.decoding.layout import build_prefix, lay_out
from decision_engine.model.loader import load_checkpoint, random_model, save_checkpoint
from decision_engine.model.transformer import BlockDiffusionConfig
from decision_engine.reader.span_pointer import SpanPointer, pointer_loss
from decision_engine.retrieval.pointed import PointedContext, PointerFeatures
from decision_engine.training.pointer import PointerExample, hit_at_1, train_pointer
from decision_engine.validation import request_from_object

DOCUMENT = (
    "1. Purpose. The parties wish to explore a business opportunity together.\n"
    "2. Return of materials. The Recipient shall return or destroy all Confidential Information on request.\n"
    "3. Term. This Agreement lasts five years from the Effective Date.\n"
    "4. Law. This Agreement is governed by the laws of Ohio."
)
WORDS = ["purpose", "return", "destroy", "term", "years", "law", "ohio", "governed", "agreement", "parties"]


class WordEmbedder:
    """Unit bag-of-words vectors over a few words: span and question vectors without the base encoder."""

    def __init__(self):
        self.calls = 0

    def _vector(self, text: str) -> torch.Tensor:
        v = torch.zeros(384)
        for i, word in enumerate(WORDS):
            v[i] = text.lower().count(word)
        v[383] = 0.1  # no text is the zero vector
        return torch.nn.functional.normalize(v, dim=0)

    def embed_spans(self, document, spans):
        self.calls += 1
        return torch.stack([self._vector(s.text) for s in spans])

    def embed_questions(self, questions):
        return torch.stack([self._vector(q) for q in questions])


def nli_request(questions: list[str]) -> object:
    return request_from_object({
        "document": {"text": DOCUMENT},
        "questions": [{"id": f"q{i}", "text": t, "schema": {"type": "string", "enum": list(LABELS)}} for i, t in enumerate(questions)],
    })


def test_each_question_gets_the_spans_its_pointer_ranks_best(vocab):
    context = PointedContext(vocab, SpanPointer(), WordEmbedder(), evidence_tokens=24)
    choice = context(DOCUMENT, ["Which law governs, Ohio?", "Must the recipient return or destroy materials?"], 300)
    assert choice.token_ids == [] and len(choice.per_question) == 2
    first, second = (e[0] for e in choice.evidence)
    assert "Ohio" in first.text and "return or destroy" in second.text
    assert DOCUMENT[first.start : first.end] == first.text
    assert 0 < first.score <= 1 and first.score >= choice.evidence[0][-1].score  # best first
    assert vocab.encode("ohio")[0] in choice.per_question[0]
    assert vocab.encode("ohio")[0] not in choice.per_question[1]
    assert all(len(tokens) <= 24 for tokens in choice.per_question)
    assert choice.question_ranges[0] == sorted(choice.question_ranges[0])  # evidence in document order


def test_a_segmented_prefix_restarts_positions_and_tags_evidence_with_its_question(vocab):
    prefix = build_prefix(vocab, [(1, [101, 102]), (2, [103])], [], per_question=[[7, 8, 9], [10]])
    markers = [len(vocab.marker_ids[k]) for k in range(2)]
    first = markers[0] + 2 + 1 + 3  # marker, question, [SEP], evidence
    second = markers[1] + 1 + 1 + 1
    assert prefix.slot_ids == [0] + [1] * first + [2] * second + [0]
    assert prefix.positions == [0, *range(1, first + 1), *range(1, second + 1), first + 1]
    assert prefix.token_ids[1 + first - 3 : 1 + first] == [7, 8, 9]


def test_the_engine_lays_out_per_question_evidence_in_every_mode(vocab):
    context = PointedContext(vocab, SpanPointer(), WordEmbedder(), evidence_tokens=20)
    request = nli_request(["Which law governs, Ohio?", "For how many years does it last?"])
    joint = lay_out(request, "joint", vocab, context, 512)
    assert len(joint.blocks) == 1 and joint.blocks[0].prefix.positions is not None
    assert "Ohio" in joint.evidence[0][0].text and "years" in joint.evidence[1][0].text
    assert joint.shown_ranges[0] != joint.shown_ranges[1]  # each question shows its own evidence
    alone = lay_out(request, "independent", vocab, context, 512)
    assert [b.slots for b in alone.blocks] == [[0], [1]]
    assert [e[0].text for e in alone.evidence] == [e[0].text for e in joint.evidence]


def test_restarted_positions_change_the_prefix_and_numbering_them_in_order_changes_nothing():
    cfg = replace(BlockDiffusionConfig.from_name("tiny"), question_summary=True)
    model = random_model(cfg, seed=1)
    ids = torch.randint(1000, 2000, (2, 9))
    slots = torch.tensor([[0, 1, 1, 1, 2, 2, 2, 2, 0]] * 2)
    mask = torch.ones_like(ids, dtype=torch.bool)
    block = torch.full((2, 3), 103)
    block_slots = torch.tensor([[1, 2, 2]] * 2)
    with torch.no_grad():
        plain = model.logits(model.block_hidden(model.encode_prefix(ids, slots, mask), block, block_slots))
        counted = torch.arange(9).expand(2, 9)
        same = model.logits(model.block_hidden(model.encode_prefix(ids, slots, mask, counted), block, block_slots))
        restarted = torch.tensor([[0, 1, 2, 3, 1, 2, 3, 4, 5]] * 2)
        state = model.encode_prefix(ids, slots, mask, restarted)
        other = model.logits(model.block_hidden(state, block, block_slots))
    assert torch.allclose(plain, same, atol=1e-5)
    assert state.block_start.tolist() == [6, 6]
    assert not torch.allclose(plain, other, atol=1e-3)


def test_positions_are_padded_only_when_some_prefix_has_them(vocab):
    plain = build_prefix(vocab, [(1, [101])], [5, 6])
    segmented = build_prefix(vocab, [(1, [101])], [], per_question=[[5, 6, 7]])
    assert pad_positions([plain, plain], "cpu") is None
    padded = pad_positions([plain, segmented], "cpu")
    assert padded[0, : len(plain.token_ids)].tolist() == list(range(len(plain.token_ids)))
    assert padded[1, : len(segmented.token_ids)].tolist() == segmented.positions


def synthetic_examples(count: int, seed: int) -> list[PointerExample]:
    """Documents of random span vectors where the gold span is the one nearest a hidden rotation of the question."""
    generator = torch.Generator().manual_seed(seed)
    rotation = torch.linalg.qr(torch.randn(384, 384, generator=torch.Generator().manual_seed(99)))[0]
    out = []
    for _ in range(count):
        spans = torch.nn.functional.normalize(torch.randn(12, 384, generator=generator), dim=1)
        answer = torch.randint(0, 12, (4,), generator=generator)
        questions = torch.nn.functional.normalize(spans[answer] @ rotation.T + 0.1 * torch.randn(4, 384, generator=generator), dim=1)
        gold = torch.zeros(4, 12, dtype=torch.bool)
        gold[torch.arange(4), answer] = True
        out.append(PointerExample(PointerFeatures([], spans, questions, torch.zeros(4, 12)), gold))
    return out


def test_the_pointer_learns_to_find_gold_spans_on_documents_it_never_saw():
    train, held_out = synthetic_examples(200, seed=0), synthetic_examples(40, seed=1)
    pointer = SpanPointer()
    before = hit_at_1(pointer, held_out)
    fitted = train_pointer(pointer, train, epochs=8, learning_rate=5e-3, log=lambda _: None)
    after = hit_at_1(pointer, held_out)
    assert before < 0.3 and after > 0.8, (before, after)
    assert fitted["hit_at_1_after"] > fitted["hit_at_1_before"]


def test_pointer_loss_is_zero_without_gold_and_falls_as_gold_gains_mass():
    logits = torch.tensor([[0.0, 0.0, 0.0]])
    assert pointer_loss(logits, torch.zeros(1, 3, dtype=torch.bool)) == 0
    gold = torch.tensor([[False, True, False]])
    assert pointer_loss(torch.tensor([[0.0, 2.0, 0.0]]), gold) < pointer_loss(logits, gold)


def test_a_checkpoint_without_a_pointer_grows_one_that_ranks_by_cosine(tmp_path):
    cfg = replace(BlockDiffusionConfig.from_name("tiny"), question_summary=True)
    save_checkpoint(random_model(cfg), tmp_path, "plain")
    grown, _ = load_checkpoint(tmp_path, cfg=replace(cfg, points_at_spans=True))
    assert torch.equal(grown.span_pointer.question.weight, torch.eye(384))
    assert NativeBackend(grown, None, "grown").span_pointer is grown.span_pointer


@pytest.mark.parametrize("mode", ["joint", "independent"])
def test_a_pointed_model_trains_saves_and_decides_with_its_pointer_evidence(tmp_path, mode):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from test_contractnli import synthetic_file

    from decision_engine.factory import build_engine
    from decision_engine.options import EngineOptions
    from decision_engine.training.config import TrainConfig
    from decision_engine.training.loop import train

    cfg = TrainConfig(
        name="pointed-smoke", model="tiny", from_base=False, generated_groups_per_epoch=4, epochs=1, batch_size=4,
        max_steps=2, warmup_steps=1, context_tokens=128, freeze_word_embeddings=False, points_at_spans=True,
        pointer_epochs=2, contractnli_path=str(synthetic_file(tmp_path)), contractnli_validation_fraction=0.0,
    )
    summary = train(cfg, tmp_path / "model")
    assert summary["retrieval"] == "pointed" and summary["pointer"]["examples"] == 2
    engine = build_engine(EngineOptions(model=str(tmp_path / "model")))
    request = nli_request(["The agreement is governed by the laws of Ohio.", "The term lasts five years."])
    response = engine.decide(request, mode)
    for answer in response.answers:
        assert answer.value in LABELS
        assert answer.evidence and all(DOCUMENT[e.start : e.end] == e.text for e in answer.evidence)


def test_segments_read_alone_keeps_each_question_blind_to_the_others_evidence():
    cfg = replace(BlockDiffusionConfig.from_name("tiny"), question_summary=True, segments_read_alone=True)
    model = random_model(cfg, seed=2)
    slots = torch.tensor([[0, 1, 1, 1, 2, 2, 2, 0]])
    positions = torch.tensor([[0, 1, 2, 3, 1, 2, 3, 4]])
    mask = torch.ones_like(slots, dtype=torch.bool)
    ids = torch.randint(1000, 2000, (1, 8))
    changed = ids.clone()
    changed[0, 5] += 1  # a token of question 2's evidence
    with torch.no_grad():
        a = model.encode_prefix(ids, slots, mask, positions)
        b = model.encode_prefix(changed, slots, mask, positions)
    assert torch.allclose(a.summaries[0, 1], b.summaries[0, 1], atol=1e-6)  # question 1 did not see it
    assert not torch.allclose(a.summaries[0, 2], b.summaries[0, 2], atol=1e-4)
    assert not torch.allclose(a.keys[-1][0, :, 0], b.keys[-1][0, :, 0], atol=1e-4)  # [CLS] reads every question


def trained_pointed_model(tmp_path):
    """A tiny pointed model trained for one step into `tmp_path / "model"`; returns its ContractNLI file."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from test_contractnli import synthetic_file

    from decision_engine.training.config import TrainConfig
    from decision_engine.training.loop import train

    data = synthetic_file(tmp_path)
    cfg = TrainConfig(
        name="pointed-smoke", model="tiny", from_base=False, generated_groups_per_epoch=4, epochs=1, batch_size=4,
        max_steps=1, warmup_steps=1, context_tokens=128, freeze_word_embeddings=False, points_at_spans=True,
        pointer_epochs=1, contractnli_path=str(data), contractnli_validation_fraction=0.0,
    )
    train(cfg, tmp_path / "model")
    return data


def test_fit_pointer_fits_the_pointer_again_and_leaves_the_reader_alone(tmp_path, capsys):
    import json

    from decision_engine.cli import main

    data = trained_pointed_model(tmp_path)
    capsys.readouterr()
    out = tmp_path / "refitted"
    assert main(["fit-pointer", "--model", str(tmp_path / "model"), "--out", str(out), "--contractnli", str(data), "--epochs", "3"]) == 0
    fitted = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert fitted["epochs"] == 3 and fitted["identity_penalty"] == 0.0 and fitted["examples"] >= 1
    assert 0 <= fitted["held_out_hit_at_1"] <= 1
    before, _ = load_checkpoint(tmp_path / "model")
    after, meta = load_checkpoint(out)
    assert meta["training"]["pointer"]["epochs"] == 3
    assert not torch.equal(after.span_pointer.question.weight, before.span_pointer.question.weight)
    reader = {k: v for k, v in after.state_dict().items() if not k.startswith("span_pointer.")}
    assert all(torch.equal(v, before.state_dict()[k]) for k, v in reader.items())


def test_fit_pointer_names_what_it_cannot_use(tmp_path, capsys):
    from decision_engine.cli import main

    cfg = replace(BlockDiffusionConfig.from_name("tiny"), question_summary=True)
    save_checkpoint(random_model(cfg), tmp_path / "plain", "plain")
    data = tmp_path / "missing.json"
    assert main(["fit-pointer", "--model", str(tmp_path / "plain"), "--out", str(tmp_path / "o"), "--contractnli", str(data)]) == 2
    assert "no such file" in capsys.readouterr().err
    data.write_text("{}")
    assert main(["fit-pointer", "--model", str(tmp_path / "plain"), "--out", str(tmp_path / "o"), "--contractnli", str(data)]) == 2
    assert "no span pointer" in capsys.readouterr().err


class CountingPointer(SpanPointer):
    """A span pointer that counts the questions it scores."""

    def __init__(self):
        super().__init__()
        self.questions = 0

    def forward(self, questions, spans, lexical):
        self.questions += len(questions)
        return super().forward(questions, spans, lexical)


def test_each_document_and_question_is_pointed_once_until_the_questions_are_forgotten(vocab):
    pointer = CountingPointer()
    context = PointedContext(vocab, pointer, WordEmbedder(), evidence_tokens=24)
    questions = ["Which law governs, Ohio?", "Must the recipient return or destroy materials?"]
    first = context(DOCUMENT, questions, 300)
    assert pointer.questions == 2
    looked = context.question_evidence(DOCUMENT, questions[1:])  # the value chooser asks of one question
    again = context(DOCUMENT, questions, 300)
    assert pointer.questions == 2  # both answered from what was pointed
    assert again == first
    assert looked[0].shown == first.question_ranges[1]
    fresh = PointedContext(vocab, SpanPointer(), WordEmbedder(), evidence_tokens=24)
    fresh.pointer.load_state_dict(pointer.state_dict())
    assert fresh(DOCUMENT, questions[::-1], 300).evidence == first.evidence[::-1]  # alone or together, the same
    context.forget_questions()
    context(DOCUMENT, questions, 300)
    assert pointer.questions == 4
    context.clear_cache()
    assert context(DOCUMENT, questions, 300) == first and pointer.questions == 6


def test_summary_from_marker_sums_each_question_up_by_its_first_token():
    cfg = replace(BlockDiffusionConfig.from_name("tiny"), question_summary=True, segments_read_alone=True)
    slots = torch.tensor([[0, 1, 1, 1, 2, 2, 2, 0]])
    positions = torch.tensor([[0, 1, 2, 3, 1, 2, 3, 4]])
    mask = torch.ones_like(slots, dtype=torch.bool)
    ids = torch.randint(1000, 2000, (1, 8))
    states = {}
    for marker in (False, True):
        model = random_model(replace(cfg, summary_from_marker=marker), seed=2)
        hook = model.layers[-1].register_forward_hook(lambda _, __, out: states.__setitem__(marker, out))
        with torch.no_grad():
            summaries = model.encode_prefix(ids, slots, mask, positions).summaries
        hook.remove()
        last = states[marker][0]  # (T, C) the prefix's final states
        if marker:
            assert torch.allclose(summaries[0, 1], last[1], atol=1e-6) and torch.allclose(summaries[0, 2], last[4], atol=1e-6)
        else:
            assert torch.allclose(summaries[0, 1], last[1:4].mean(dim=0), atol=1e-6)


def test_a_document_read_again_after_it_left_the_cache_is_laid_out_as_before(vocab, monkeypatch):
    import decision_engine.retrieval.pointed as pointed

    monkeypatch.setattr(pointed, "DOCUMENT_CACHE", 1)
    context = PointedContext(vocab, SpanPointer(), WordEmbedder(), evidence_tokens=24)
    questions = ["Which law governs, Ohio?", "Must the recipient return or destroy materials?"]
    first = context(DOCUMENT, questions, 300)
    context("Another document. It says nothing of law.", questions, 300)  # pushes DOCUMENT out
    assert context(DOCUMENT, questions, 300) == first  # its questions' pointing is still kept
