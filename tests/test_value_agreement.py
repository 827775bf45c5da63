"""The value agreement reader: a joint request's integer and date answers weighed again with its surer
boolean and enum answers."""

from __future__ import annotations

import random

import torch

from decision_engine.decoding.grounded_space import CHOICE_BASE, GroundedSpace
from decision_engine.decoding.slot_space import build_space
from decision_engine.decoding.value_agreement import (
    TOP, agreed_values, candidate_sides, grounded_answers, mention_sides, side_vectors, weighed_values,
)
from decision_engine.grounding.candidates import Candidate
from decision_engine.grounding.mentions import find_mentions
from decision_engine.reader.agreement_reader import DIM, AgreementReader, Decided
from decision_engine.rules import RuleSet
from decision_engine.training.generated_fit import train_epochs
from decision_engine.training.agreement_fit import AgreementExample, agreement_accuracy, agreement_loss
from decision_engine.training.value_agreement_fit import value_agreement_reader
from decision_engine.types import AnswerSchema, Question, Rule

from test_agreement_reader import FakeEmbedder, decided, vector


class PassageEmbedder(FakeEmbedder):
    """A fixed unit vector per text, passages of a document read as their text."""

    def embed_passages(self, document, ranges):
        return self.embed_questions([document[a:b] for a, b in ranges])

NOTICE = "Notice is at least 7 days during probation and 45 days after it.\nThe employee was paid 900 a week."
DAYS = AnswerSchema(type="integer", minimum=0, maximum=365)


def test_a_mention_is_read_with_the_text_up_to_its_neighbours_and_its_line():
    mentions = find_mentions(NOTICE)
    texts = [m.text for m in mentions]
    first, second = texts.index("7 days"), texts.index("45 days")
    read = [[NOTICE[a:b] for a, b in mention_sides(NOTICE, mentions, k)] for k in (first, second)]
    assert read == [["Notice is at least 7 days", "7 days during probation and"], ["during probation and 45 days", "45 days after it."]]


def inner_space(vocab):
    return build_space(DAYS, vocab, RuleSet.compile([DAYS], ["q"], []).classes[0], "schema")


def grounded_space(vocab, logits: list[float]) -> GroundedSpace:
    """7 days, 45 days and 900, copied from NOTICE, with the chooser's `logits` (and one for "write")."""
    mentions = find_mentions(NOTICE)
    candidates = [Candidate(m.value, "copy", (k,), (m.text,)) for k, m in enumerate(mentions)]
    return GroundedSpace(inner_space(vocab), [c.value for c in candidates], torch.tensor([*logits, -9.0]), candidates, mentions)


def test_the_chosen_value_is_always_among_those_weighed(vocab):
    space = grounded_space(vocab, [0.0, 1.0, 2.0])
    assert weighed_values(space, 0) == [2, 1, 0]
    many = GroundedSpace(
        inner_space(vocab), list(range(10)), torch.arange(11, dtype=torch.float) - 10 * (torch.arange(11) == 10),
        [Candidate(v, "zero", (), ()) for v in range(10)],
    )
    picked = weighed_values(many, 0)
    assert len(picked) == TOP and 0 in picked and picked[0] == 9


class Pushing(AgreementReader):
    """A reader that always pushes an answer to its first weighed value, whatever the surer answers say."""

    def __init__(self):
        super().__init__(words=2 * DIM)

    def forward(self, choices, answers, present):
        scores = torch.zeros(choices.shape[:2])
        scores[:, 0] = 10.0
        return scores


def asked() -> list[Question]:
    return [
        Question(id="during", text="Was notice given during probation?", schema=AnswerSchema(type="boolean")),
        Question(id="required", text="How many days of notice were required?", schema=DAYS),
    ]


def test_a_value_answer_is_weighed_with_surer_answers_and_a_rule_can_refuse_the_change(vocab):
    space = grounded_space(vocab, [2.0, 1.0, -9.0])  # 7 days likelier than 45
    pattern = [CHOICE_BASE + 1, *space.sequences[1]]  # yet the model chose 45
    questions = asked()
    grounded = grounded_answers(questions, [None, space], [None, pattern], ["model", "model"], [0.9, 0.5], NOTICE, PassageEmbedder())
    assert [(slot, picked, item.chosen) for slot, picked, item in grounded] == [(1, [0, 1, 2], 1)]
    surer = [decided(1, 0, 0.9)]
    free = RuleSet.compile([q.schema for q in questions], [q.id for q in questions], [])
    values, confidences = agreed_values(Pushing(), grounded, surer, [None, space], [True, 45], [0.9, 0.5], free)
    assert values == [True, 7] and confidences[1] > 0.99
    unsure = [decided(1, 0, 0.4)]  # an answer less sure than the value does not weigh
    assert agreed_values(Pushing(), grounded, unsure, [None, space], [True, 45], [0.9, 0.5], free)[0] == [True, 45]
    rule = Rule(if_={"during": [True]}, then={"required": [45]})
    ruled = RuleSet.compile([q.schema for q in questions], [q.id for q in questions], [rule])
    assert agreed_values(Pushing(), grounded, surer, [None, space], [True, 45], [0.9, 0.5], ruled)[0] == [True, 45]


def test_no_answer_is_moved_to_a_value_resting_on_no_mention(vocab):
    mentions = find_mentions(NOTICE)
    candidates = [Candidate(0, "zero", (), ()), *(Candidate(m.value, "copy", (k,), (m.text,)) for k, m in enumerate(mentions))]
    space = GroundedSpace(inner_space(vocab), [c.value for c in candidates], torch.tensor([2.0, 1.0, 0.5, -9.0, -9.0]), candidates, mentions)
    pattern = [CHOICE_BASE + 1, *space.sequences[1]]  # the model chose 7 days; the reader pushes to 0
    questions = asked()
    grounded = grounded_answers(questions, [None, space], [None, pattern], ["model", "model"], [0.9, 0.5], NOTICE, PassageEmbedder())
    assert grounded[0][1][0] == 0  # 0 is weighed, and first
    free = RuleSet.compile([q.schema for q in questions], [q.id for q in questions], [])
    values, confidences = agreed_values(Pushing(), grounded, [decided(1, 0, 0.9)], [None, space], [True, 7], [0.9, 0.5], free)
    assert values == [True, 7] and confidences == [0.9, 0.5]


def test_a_rule_fixed_or_written_value_is_not_weighed(vocab):
    space = grounded_space(vocab, [2.0, 1.0, -9.0])
    chose = [CHOICE_BASE + 1, *space.sequences[1]]
    wrote = [space.write_id, *space.sequences[1]]
    questions = asked()
    embedder = PassageEmbedder()
    assert grounded_answers(questions, [None, space], [None, chose], ["model", "rule"], [0.9, 0.5], NOTICE, embedder) == []
    assert grounded_answers(questions, [None, space], [None, wrote], ["model", "model"], [0.9, 0.5], NOTICE, embedder) == []


def test_an_unfitted_reader_moves_no_value():
    item = Decided(vector(1), torch.stack([torch.cat([vector(k), vector(k + 50)]) for k in range(3)]), 1, 0.5,
                   torch.log_softmax(torch.tensor([0.0, 1.0, -1.0]), dim=-1))
    reader = value_agreement_reader().eval()
    choices = torch.stack([torch.cat([item.question, c]) for c in item.choices])[None]
    answers = torch.cat([vector(7), vector(8)])[None, None]
    assert reader(choices, answers, torch.ones(1, 1)).abs().max() == 0


def test_a_fitted_reader_learns_which_value_a_surer_answer_picks():
    """Two values, read by their context: the first where the surer boolean says yes, else the second."""
    rng = random.Random(0)
    contexts = [torch.cat([vector(100), vector(101)]), torch.cat([vector(200), vector(201)])]
    examples = []
    for _ in range(400):
        during = rng.randrange(2)
        gold = 0 if during == 0 else 1
        prior = torch.log_softmax(torch.tensor([rng.gauss(0, 0.3), rng.gauss(0, 0.3)]), dim=-1)
        chosen = int(prior.argmax())
        value = Decided(vector(2), torch.stack(contexts), chosen, 0.5, prior)
        examples.append(AgreementExample(value, (decided(1, during, 0.95), decided(3, rng.randrange(2), 0.9)), gold))
    torch.manual_seed(0)
    reader = value_agreement_reader()
    fitted = train_epochs(
        reader, examples, 30, 0, what="value agreement reader", loss_of=agreement_loss,
        accuracy=agreement_accuracy, batch=32, learning_rate=1e-2, log=lambda line: None,
    )
    assert fitted["before"]["accuracy"] == fitted["before"]["as_decided"] < 0.65
    assert fitted["after"]["accuracy"] > 0.95


def test_a_values_sides_are_read_as_passages_of_its_document_and_its_derivation_as_words(vocab):
    space = grounded_space(vocab, [2.0, 1.0, -9.0])
    zero = Candidate(0, "zero", (), ())
    assert candidate_sides(NOTICE, zero, space.mentions) == (zero.describe(), zero.describe())
    sides = [candidate_sides(NOTICE, space.candidates[0], space.mentions)[1], zero.describe()]
    embedder = PassageEmbedder()
    vectors = side_vectors(embedder, NOTICE, sides)
    assert torch.equal(vectors, embedder.embed_questions(["7 days during probation and", zero.describe()]))


def test_a_checkpoint_keeps_its_value_agreement_heads_and_a_one_head_model_cannot_read_them(tmp_path):
    from dataclasses import replace

    import pytest

    from decision_engine.model.loader import ModelLoadError, load_checkpoint, random_model, save_checkpoint
    from decision_engine.model.transformer import BlockDiffusionConfig
    from decision_engine.reader.agreement_reader import AgreementReaders

    cfg = replace(BlockDiffusionConfig.from_name("tiny"), weighs_values=True, value_agreement_readers=2)
    model = random_model(cfg, seed=0)
    assert isinstance(model.value_agreement_reader, AgreementReaders)
    save_checkpoint(model, tmp_path / "heads", "tiny")
    loaded, meta = load_checkpoint(tmp_path / "heads")
    assert meta["config"]["value_agreement_readers"] == 2
    for name, tensor in model.value_agreement_reader.state_dict().items():
        assert torch.allclose(loaded.value_agreement_reader.state_dict()[name], tensor, atol=2e-3), name
    with pytest.raises(ModelLoadError, match="fit-value-agreement"):
        load_checkpoint(tmp_path / "heads", cfg=replace(cfg, value_agreement_readers=1))
