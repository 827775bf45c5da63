"""Grounded integer and date slots: the choice position, its constraints, and a copied mention end to end."""

from __future__ import annotations

import math
import random

import pytest
import torch

from conftest import FakeModel
from decision_engine.decoding.grounded_space import CHOICE_BASE, GroundedSpace, is_choice_token
from decision_engine.decoding.denoise import run_denoising
from decision_engine.decoding.layout import ContextChoice, LeadingContext, lay_out
from decision_engine.decoding.slot_space import build_space
from decision_engine.engine import DecisionEngine
from decision_engine.grounding.candidates import integer_candidates
from decision_engine.grounding.grounder import Grounder
from decision_engine.grounding.mentions import find_mentions
from decision_engine.grounding.slot_candidates import candidate_text, slot_candidates
from decision_engine.reader.chooser_ensemble import ChooserEnsemble
from decision_engine.reader.value_chooser import (
    MENTION_DIM, MENTION_FEATURES, CandidateTable, ValueChooser, candidate_features, place_features,
)
from decision_engine.rules import RuleSet
from decision_engine.training.value_choice import choice_accuracy, choice_examples, drop_words, train_chooser
from decision_engine.types import AnswerSchema, Rule
from decision_engine.validation import request_from_object

DOCUMENT = (
    "Tenancy record.\n"
    "The deposit of $1,450 was paid on 8 March 2024.\n"
    "The rent is 900 a month, and notice takes 30 days.\n"
    "The tenant gave notice on 2 May 2024."
)
AMOUNT = AnswerSchema(type="integer", minimum=0, maximum=100000)
DAY = AnswerSchema(type="string", format="date")


def _space(schema, vocab, logits_of, rules=None, index=0):
    """A grounded space over DOCUMENT's candidates for `schema`, with chooser logits from `logits_of(values)`."""
    rules = rules or RuleSet.compile([schema], ["q"], [])
    inner = build_space(schema, vocab, rules.classes[index], "schema")
    mentions = find_mentions(DOCUMENT)
    candidates = slot_candidates(schema, mentions)
    values = [candidate_text(c) for c in candidates]
    return GroundedSpace(inner, values, logits_of(values), candidates, mentions)


def test_the_choice_comes_first_and_a_chosen_value_fixes_every_digit(vocab):
    space = _space(AMOUNT, vocab, lambda values: torch.zeros(len(values) + 1))
    pattern = [None] * space.length
    assert space.ready(pattern, 0) and not space.ready(pattern, 1)
    allowed = space.allowed(pattern, space.reachable(pattern))
    assert all(is_choice_token(t) for t in allowed[0]) and space.write_id in allowed[0]
    k = space.values.index(1450)
    pattern[0] = CHOICE_BASE + k
    forced = space.allowed(pattern, space.reachable(pattern))
    assert all(len(options) == 1 for options in forced[1:])
    digits = [options[0] for options in forced[1:]]
    assert space.decode([pattern[0], *digits]) == 1450
    assert space.encode(1450)[0] == CHOICE_BASE + k
    assert space.encode(77)[0] == space.write_id  # a value no mention reaches is written


def test_a_rule_leaves_out_candidates_it_forbids(vocab):
    flag = AnswerSchema(type="boolean")
    rules = RuleSet.compile([flag, AMOUNT], ["flag", "amount"], [Rule(if_={"flag": [True]}, then={"amount": [900]})])
    space = _space(AMOUNT, vocab, lambda values: torch.zeros(len(values) + 1), rules, index=1)
    classes = rules.classes[1]
    only_900 = {classes.named.index(900)}
    pattern = [None] * space.length
    offered = space.allowed(pattern, only_900)[0]
    assert offered == [CHOICE_BASE + space.values.index(900), space.write_id]  # 900 copied, or written
    other = set(range(len(classes.named) + 1)) - only_900
    offered = space.allowed(pattern, other)[0]
    assert CHOICE_BASE + space.values.index(900) not in offered
    assert CHOICE_BASE + space.values.index(1450) in offered and space.write_id in offered


def _request(questions, rules=()):
    return request_from_object({"document": {"text": DOCUMENT}, "questions": questions, "rules": list(rules)})


class FixedGrounder:
    """Grounds every integer and date slot with chooser logits from `pick(values)`."""

    def __init__(self, pick):
        self.pick = pick

    def __call__(self, document, questions, spaces, joint=True):
        mentions = find_mentions(document)
        out = list(spaces)
        for i, q in enumerate(questions):
            candidates = slot_candidates(q.schema, mentions)
            if candidates:
                values = [candidate_text(c) for c in candidates]
                out[i] = GroundedSpace(spaces[i], values, self.pick(values), candidates, mentions)
        return out


def _prefer(value, margin=20.0):
    def pick(values):
        logits = torch.zeros(len(values) + 1)
        if value in values:
            logits[values.index(value)] = margin
        else:
            logits[-1] = margin
        return logits
    return pick


def test_the_model_never_reads_a_choice_token_and_a_confident_choice_costs_no_pass(vocab):
    fake = FakeModel(vocab, lambda call, rows, ids: torch.zeros(ids.shape[0], ids.shape[1], 30522))
    request = _request([{"id": "deposit", "text": "How much was the deposit?", "schema": {"type": "integer", "minimum": 0, "maximum": 100000}}])
    layout = lay_out(request, "joint", vocab, LeadingContext(vocab), 512, grounder=FixedGrounder(_prefer(1450)))
    run_denoising(fake, layout.blocks)
    assert layout.group.constraints.value(0) == 1450
    assert fake.calls == 0  # the choice is the only open position: no forward pass needed


def test_a_step_that_only_chooses_values_counts_as_a_step_and_not_as_a_pass(vocab):
    flat = lambda call, rows, ids: torch.zeros(ids.shape[0], ids.shape[1], 30522)  # noqa: E731
    fake = FakeModel(vocab, flat)
    amount = {"type": "integer", "minimum": 0, "maximum": 100000}
    request = _request([
        {"id": "flag", "text": "Was the deposit paid?", "schema": {"type": "boolean"}},
        {"id": "deposit", "text": "How much was the deposit?", "schema": amount},
        {"id": "rent", "text": "What is the rent?", "schema": amount},
    ])
    unsure = lambda values: torch.zeros(len(values) + 1)  # noqa: E731 - no choice passes the threshold
    layout = lay_out(request, "joint", vocab, LeadingContext(vocab), 512, grounder=FixedGrounder(unsure))
    run_denoising(fake, layout.blocks)
    (block,) = layout.blocks
    assert block.passes == fake.calls == 1  # the boolean needed the model once
    assert block.steps == 3  # then each unsure choice took a step of its own, with no forward pass


def _flag_and_amounts():
    amount = {"type": "integer", "minimum": 0, "maximum": 100000}
    return _request([
        {"id": "flag", "text": "Was the deposit paid?", "schema": {"type": "boolean"}},
        {"id": "deposit", "text": "How much was the deposit?", "schema": amount},
        {"id": "rent", "text": "What is the rent?", "schema": amount},
    ])


class SameEvidenceForAll:
    """A context builder laying the same evidence tokens (ids 2000 to 2002) beside every question."""

    def __call__(self, document, questions, budget):
        return ContextChoice(
            [], [(0, 15)], [[] for _ in questions],
            per_question=[[2000, 2001, 2002] for _ in questions], question_ranges=[[(0, 15)] for _ in questions],
        )


class ComparingGrounder(FixedGrounder):
    """Grounds integer and date slots as FixedGrounder does, and every boolean as a comparison would."""

    def __call__(self, document, questions, spaces, joint=True):
        out = super().__call__(document, questions, spaces, joint)
        return [GroundedSpace(space, [False, True], torch.zeros(3)) if q.schema.type == "boolean" else space
                for q, space in zip(questions, out)]


@pytest.mark.parametrize("grounder", [FixedGrounder(_prefer(1450)), ComparingGrounder(_prefer(1450))])
def test_grounded_integer_and_date_slots_are_laid_out_without_evidence(vocab, grounder):
    joint = lay_out(_flag_and_amounts(), "joint", vocab, SameEvidenceForAll(), 512, grounder=grounder)
    prefix = joint.blocks[0].prefix
    shown_to = {slot for token, slot in zip(prefix.token_ids, prefix.slot_ids) if token == 2000}
    assert shown_to == {1}  # the boolean's segment, compared or not; the two amounts are chosen from mentions
    assert joint.shown_ranges == [[(0, 15)], [], []]
    alone = lay_out(_flag_and_amounts(), "independent", vocab, SameEvidenceForAll(), 512, grounder=grounder)
    assert [2000 in block.prefix.token_ids for block in alone.blocks] == [True, False, False]
    plain = lay_out(_flag_and_amounts(), "joint", vocab, SameEvidenceForAll(), 512)
    assert plain.shown_ranges == [[(0, 15)]] * 3  # without a grounder every question keeps its evidence


class SureComparingGrounder(FixedGrounder):
    """Grounds every boolean as a comparison answering alone, with "write" at the given logit."""

    def __init__(self, prefer, write: float):
        super().__init__(prefer)
        self.write = write

    def __call__(self, document, questions, spaces, joint=True):
        out = super().__call__(document, questions, spaces, joint)
        logits = torch.tensor([0.0, 0.0, self.write])
        return [GroundedSpace(space, [False, True], logits, alone=True) if q.schema.type == "boolean" else space
                for q, space in zip(questions, out)]


@pytest.mark.parametrize("write, keeps_evidence", [(-20.0, False), (20.0, True), (-2.0, True)])
def test_a_boolean_the_comparison_surely_answers_alone_is_laid_out_without_evidence(vocab, write, keeps_evidence):
    grounder = SureComparingGrounder(_prefer(1450), write)
    joint = lay_out(_flag_and_amounts(), "joint", vocab, SameEvidenceForAll(), 512, grounder=grounder)
    prefix = joint.blocks[0].prefix
    shown_to = {slot for token, slot in zip(prefix.token_ids, prefix.slot_ids) if token == 2000}
    assert shown_to == ({1} if keeps_evidence else set())  # "write" at 0.06 (-2.0) may still hand it over
    assert joint.shown_ranges[0] == ([(0, 15)] if keeps_evidence else [])


def test_values_the_document_gives_settle_before_the_model_reads_the_block(vocab):
    seen = []

    def record(call, rows, ids):
        seen.append(ids.clone())
        return torch.zeros(ids.shape[0], ids.shape[1], 30522)

    fake = FakeModel(vocab, record)
    layout = lay_out(_flag_and_amounts(), "joint", vocab, LeadingContext(vocab), 512, grounder=FixedGrounder(_prefer(1450, margin=1.0)))
    run_denoising(fake, layout.blocks)
    (block,) = layout.blocks
    assert fake.calls == 1 and layout.group.constraints.value(1) == 1450
    flag_position = [i for i, (s, _) in enumerate(block.positions) if s == 0][0]
    first = seen[0][0].tolist()
    read_slots = [block.positions[i][0] for i in block.read]
    assert first[block.read.index(flag_position)] == vocab.mask_id  # the model answers the flag...
    assert vocab.mask_id not in [t for t, s in zip(first, read_slots) if s != 0]  # ...with both amounts in view
    assert block.group.fixed_step[1] < block.group.fixed_step[0] and block.group.fixed_step[2] < block.group.fixed_step[0]


def test_a_sequential_block_still_answers_left_to_right(vocab):
    fake = FakeModel(vocab, lambda call, rows, ids: torch.zeros(ids.shape[0], ids.shape[1], 30522))
    layout = lay_out(_flag_and_amounts(), "sequential", vocab, LeadingContext(vocab), 512, grounder=FixedGrounder(_prefer(1450)))
    run_denoising(fake, layout.blocks)
    steps = layout.group.fixed_step
    assert steps[0] < steps[1] < steps[2]  # the flag first, though the amounts' choices need no pass


def test_max_steps_counts_forward_passes_not_steps_that_only_choose(vocab):
    fake = FakeModel(vocab, lambda call, rows, ids: torch.zeros(ids.shape[0], ids.shape[1], 30522))
    request = _flag_and_amounts()
    request.options.max_steps = 1
    unsure = lambda values: torch.zeros(len(values) + 1)  # noqa: E731 - no choice passes the threshold
    layout = lay_out(request, "joint", vocab, LeadingContext(vocab), 512, grounder=FixedGrounder(unsure))
    run_denoising(fake, layout.blocks)
    (block,) = layout.blocks
    assert block.passes == fake.calls == 1  # two steps chose values, then the one allowed pass read the flag
    assert all(layout.group.constraints.slot_done(s) for s in range(3))


def test_write_lets_the_model_write_the_digits(vocab):
    def digits_of_77(call, rows, ids):
        logits = torch.zeros(ids.shape[0], ids.shape[1], 30522)
        for j, d in enumerate("000077"):
            logits[:, j, vocab.digit_ids[int(d)]] = 30.0
        return logits

    fake = FakeModel(vocab, digits_of_77)
    request = _request([{"id": "n", "text": "How many?", "schema": {"type": "integer", "minimum": 0, "maximum": 100000}}])
    layout = lay_out(request, "joint", vocab, LeadingContext(vocab), 512, grounder=FixedGrounder(_prefer(-1)))
    run_denoising(fake, layout.blocks)
    assert layout.group.constraints.value(0) == 77
    assert fake.calls >= 1
    assert all(shape[1] == 6 for shape in fake.block_shapes)  # the choice position is never sent to the model


def test_a_slot_copies_a_mention_end_to_end_with_a_tiny_model(tiny_backend):
    lines = [{
        "document": {"text": DOCUMENT},
        "questions": [
            {"id": "deposit", "text": "How much was the deposit?", "schema": {"type": "integer", "minimum": 0, "maximum": 100000}},
            {"id": "notice_end", "text": "On what date does the notice period end?", "schema": {"type": "string", "format": "date"}},
        ],
        "labels": {"deposit": 1450, "notice_end": "2024-06-01"},
    }]
    grounder = Grounder(ValueChooser())
    examples = choice_examples(lines, grounder.embedder)
    torch.manual_seed(0)
    train_chooser(grounder.chooser, examples, epochs=60, log=lambda _: None)
    assert choice_accuracy(grounder.chooser, examples)["accuracy"] == 1.0
    engine = DecisionEngine(tiny_backend, grounder=grounder)
    request = _request(lines[0]["questions"])
    for mode in ("joint", "independent", "sequential"):
        response = engine.decide(request, mode)
        deposit, notice_end = response.answers
        assert deposit.value == 1450 and notice_end.value == "2024-06-01"  # 2 May 2024 + 30 days
        assert deposit.evidence[0].text == "$1,450"
        assert {e.text for e in notice_end.evidence[:2]} == {"2 May 2024", "30 days"}
        assert deposit.fixed_by == "model" and 0 < deposit.confidence <= 1


@pytest.mark.parametrize("chooser", [ValueChooser(), ChooserEnsemble(2)])
def test_every_slot_is_chosen_in_one_pass_as_it_would_be_alone(chooser):
    torch.manual_seed(0)
    chooser.eval()
    mentions = find_mentions(DOCUMENT)
    inputs = []
    for schema in (AMOUNT, DAY, AnswerSchema(type="integer", minimum=0, maximum=100)):
        candidates = slot_candidates(schema, mentions)
        table = CandidateTable.of(candidates, mentions)
        inputs.append((torch.nn.functional.normalize(torch.randn(1, 384), dim=-1), torch.randn(1, len(mentions), MENTION_FEATURES),
                       table.operations[None], table.operands[None], table.features[None],
                       torch.ones((1, len(candidates)), dtype=torch.bool)))
    assert len({x[2].shape[1] for x in inputs}) > 1  # slots with different numbers of candidates
    together = Grounder(chooser)._choose(inputs)
    with torch.no_grad():
        for row, x in zip(together, inputs):
            assert torch.allclose(row, chooser(*x)[0], atol=1e-5)


def test_place_features_say_where_a_mention_stands_among_the_values_of_its_kind():
    mentions = find_mentions(DOCUMENT)
    rows = {m.text: row for m, row in zip(mentions, place_features(mentions, len(DOCUMENT)).tolist())}
    march, may = rows["8 March 2024"], rows["2 May 2024"]
    assert (march[1], march[2], march[3]) == (0.0, 0.0, 1.0)  # the earliest of the two dates
    assert (may[1], may[2], may[3]) == (1.0, 1.0, 0.0)  # the latest
    assert (march[4], may[4]) == (0.0, 1.0)  # and their order in the text
    assert rows["$1,450"][2] == 1.0 and rows["900"][3] == 1.0  # the largest and the smallest number
    assert 0 < march[0] < may[0] < 1  # places in the text, as shares of its length
    assert all(row[6] == 0.0 for row in rows.values())  # no value is written twice


def test_candidate_features_measure_how_far_apart_the_operands_are_written():
    mentions = find_mentions(DOCUMENT)
    candidates = slot_candidates(DAY, mentions)
    steps = {c.describe(): row for c, row in zip(candidates, candidate_features(candidates, mentions).tolist())}
    near, far = steps["2024-05-02 + 30 days"], steps["2024-03-08 + 30 days"]
    march, days, may = (DOCUMENT.index(t) for t in ("8 March 2024", "30 days", "2 May 2024"))
    assert abs(far[1] - math.log1p(days - march) / 8) < 1e-6 and abs(near[1] - math.log1p(may - days) / 8) < 1e-6
    assert far[2] == 1.0 and near[2] == 0.0  # the date written before the duration, or after it
    assert steps["copy 2024-03-08"][:3] == [0.0, 0.0, 0.0]  # a copy has one operand


def test_relevance_features_say_which_mentions_the_pointer_lays_beside_the_question():
    from decision_engine.reader.value_chooser import relevance_features

    mentions = find_mentions(DOCUMENT)
    lines = [(DOCUMENT.index(line), DOCUMENT.index(line) + len(line)) for line in DOCUMENT.split("\n")]
    ranked = [lines[2], lines[1]]  # the notice line first, then the deposit line; the tenant's line unranked
    rows = {m.text: row for m, row in zip(mentions, relevance_features(mentions, ranked, shown=[lines[2]]).tolist())}
    assert rows["30 days"] == [1.0, 1.0]  # laid beside the question, in its best span
    assert rows["$1,450"] == [0.0, 0.5]  # in its second span, not laid beside it
    assert rows["2 May 2024"] == [0.0, 0.0]  # nowhere the pointer looks
    assert relevance_features(mentions).abs().sum() == 0  # no pointer: nothing to say


def test_the_grounder_reads_the_pointed_evidence_of_each_question(tiny_backend):
    from decision_engine.retrieval.pointed import QuestionEvidence

    class Pointer:
        """Points every question at the notice line only."""

        def __init__(self):
            self.asked = []

        def question_evidence(self, document, questions):
            self.asked.append(list(questions))
            line = (document.index("The rent"), document.index("The tenant gave"))
            return [QuestionEvidence([line], [line]) for _ in questions]

    pointer = Pointer()
    seen = []
    chooser = ValueChooser()
    real_forward = chooser.forward
    chooser.forward = lambda q, mentions, *rest: seen.append(mentions) or real_forward(q, mentions, *rest)
    grounder = Grounder(chooser, pointer=pointer)
    request = _request([
        {"id": "deposit", "text": "How much was the deposit?", "schema": {"type": "integer", "minimum": 0, "maximum": 100000}},
        {"id": "flag", "text": "Was it paid?", "schema": {"type": "boolean"}},
    ])
    lay_out(request, "joint", tiny_backend.vocab, LeadingContext(tiny_backend.vocab), 512, grounder=grounder)
    # one call for every question of the group: the layout asks the same pointer for them all next
    assert pointer.asked == [["How much was the deposit?", "Was it paid?"]]
    (features,) = seen
    inside = {m.text: float(features[0, i, -2]) for i, m in enumerate(find_mentions(DOCUMENT))}
    assert inside["900"] == inside["30 days"] == 1.0 and inside["$1,450"] == 0.0


def test_each_candidate_value_has_the_class_its_tokens_reach(vocab):
    rules = RuleSet.compile([AMOUNT, DAY], ["a", "d"], [Rule(if_={"a": [1450]}, then={"d": ["2024-03-08"]})])
    for index, schema in enumerate((AMOUNT, DAY)):
        space = _space(schema, vocab, lambda values: torch.zeros(len(values) + 1), rules, index)
        assert space.values
        for value, sequence, classes in zip(space.values, space.sequences, space._class_of):
            assert classes == space.inner.reachable(sequence), value


class ZeroEmbedder:
    """Zero question and mention vectors: a grounder without the base encoder."""

    def embed_questions(self, questions):
        return torch.zeros((len(questions), 384))

    def embed_mentions(self, text, mentions):
        return torch.zeros((len(mentions), MENTION_DIM))


def test_the_grounder_reads_a_document_once_and_keeps_candidates_per_slot_bounds(vocab, monkeypatch):
    import decision_engine.grounding.grounder as grounding

    reads = []
    monkeypatch.setattr(grounding, "find_mentions", lambda text: reads.append(text) or find_mentions(text))
    grounder = Grounder(ValueChooser(), ZeroEmbedder())
    small = AnswerSchema(type="integer", minimum=0, maximum=1000)
    request = _request([
        {"id": "big", "text": "How much was the deposit?", "schema": {"type": "integer", "minimum": 0, "maximum": 100000}},
        {"id": "small", "text": "What is the rent?", "schema": {"type": "integer", "minimum": 0, "maximum": 1000}},
    ])

    def ground():
        rules = RuleSet.compile([AMOUNT, small], ["big", "small"], [])
        spaces = [build_space(s, vocab, rules.classes[i], "schema") for i, s in enumerate((AMOUNT, small))]
        return grounder(DOCUMENT, request.questions, spaces)

    first = ground()
    assert 1450 in first[0].values and 1450 not in first[1].values and 900 in first[1].values
    again = ground()
    assert len(reads) == 1 and [s.values for s in again] == [s.values for s in first]
    grounder.clear_cache()
    ground()
    assert len(reads) == 2


def test_candidate_features_say_whether_operands_are_one_whole_written_list():
    text = "Budget 91,000 approved.\nAward: pumps 860; tyres 110; cleaning 380.\nPaid."
    mentions = find_mentions(text)
    candidates = integer_candidates(mentions, 0, 10**6)
    rows = {c.describe(): row for c, row in zip(candidates, candidate_features(candidates, mentions).tolist())}
    assert rows["860 + 110 + 380"][5:] == [1.0, 1.0]  # the whole list
    assert rows["860 + 110"][5:] == [1.0, 0.0]  # part of it
    assert rows["91000 + 860"][5:] == [0.0, 0.0]  # two lines
    assert rows["0 (nothing written to count)"] == [0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0]


def test_a_slot_answers_zero_from_no_mention_end_to_end_with_a_tiny_model(tiny_backend):
    questions = [{"id": "owed", "text": "How many days of pay in lieu are owed?", "schema": {"type": "integer", "minimum": 0, "maximum": 365}}]
    lines = [{"document": {"text": DOCUMENT}, "questions": questions, "labels": {"owed": 0}}]
    grounder = Grounder(ValueChooser())
    examples = choice_examples(lines, grounder.embedder)
    assert examples[0].target[:-1].sum() == 1 and not examples[0].target[-1]  # 0 is a candidate, not written
    torch.manual_seed(0)
    train_chooser(grounder.chooser, examples, epochs=60, log=lambda _: None)
    response = DecisionEngine(tiny_backend, grounder=grounder).decide(_request(questions), "joint")
    assert response.answers[0].value == 0 and response.answers[0].fixed_by == "model"


def test_question_variants_leave_words_out_and_keep_each_answer():
    asked = "How many days of notice did the tenant give in writing?"
    rng = random.Random(0)
    reworded = [drop_words(asked, rng) for _ in range(20)]
    assert all(r.split() == [w for w in asked.split() if w in r.split()] for r in reworded)  # words kept in order
    assert len(set(reworded)) > 5  # the words left out differ from variant to variant
    assert drop_words("deposit?", random.Random(0), share=1.0) == "deposit?"  # a question never becomes empty
    lines = [{
        "document": {"text": DOCUMENT},
        "questions": [{"id": "deposit", "text": "How much was the deposit?", "schema": {"type": "integer", "minimum": 0, "maximum": 100000}}],
        "labels": {"deposit": 1450},
    }]
    grounder = Grounder(ValueChooser())
    plain = choice_examples(lines, grounder.embedder)
    varied = choice_examples(lines, grounder.embedder, variants=3, seed=1)
    assert len(plain) == 1 and len(varied) == 4
    assert torch.equal(varied[0].question, plain[0].question)  # the question as asked comes first
    assert all(torch.equal(v.target, plain[0].target) and v.table is varied[0].table for v in varied[1:])
    assert any(not torch.allclose(v.question, plain[0].question) for v in varied[1:])


def test_a_reworded_document_keeps_its_values_lines_and_negations_where_its_mentions_point():
    from decision_engine.grounding.mentions import find_mentions
    from decision_engine.training.value_choice import carries_meaning, reworded_document

    text = "Terms\nThe tenant must give 30 days' written notice.  Notice was not received until 8 March 2024.\nDeposit: $1,450 held.\n"
    mentions = find_mentions(text)
    rewordings = set()
    for seed in range(20):
        new_text, moved = reworded_document(text, mentions, random.Random(seed))
        assert [new_text[m.start : m.end] for m in moved] == [m.text for m in mentions]
        assert [(m.kind, m.value) for m in moved] == [(m.kind, m.value) for m in mentions]
        assert new_text.count("\n") == text.count("\n") and "not" in new_text.split()
        assert new_text.split() == [w for w in text.split() if w in new_text.split()]  # words kept in order
        rewordings.add(new_text)
    assert len(rewordings) > 10
    assert carries_meaning("not") and carries_meaning("(no") and carries_meaning("1,450") and not carries_meaning("notice")


def test_reworded_documents_give_each_question_copy_its_own_mention_vectors():
    lines = [{
        "document": {"text": DOCUMENT},
        "questions": [{"id": "deposit", "text": "How much was the deposit?", "schema": {"type": "integer", "minimum": 0, "maximum": 100000}}],
        "labels": {"deposit": 1450},
    }]
    grounder = Grounder(ValueChooser())
    same = choice_examples(lines, grounder.embedder, variants=2, seed=1)
    varied = choice_examples(lines, grounder.embedder, variants=2, seed=1, reword_documents=True)
    assert len(varied) == len(same) == 3
    assert torch.equal(varied[0].mentions, same[0].mentions)  # the question as asked reads the document as written
    width = varied[0].mentions.shape[1]
    for copy in varied[1:]:
        assert copy.mentions.shape == (varied[0].mentions.shape[0], width) and copy.table is varied[0].table
        assert not torch.equal(copy.mentions, varied[0].mentions)
        assert torch.equal(copy.mentions[:, 3 * 384 :], varied[0].mentions[:, 3 * 384 :])  # kind, place and relevance kept


def test_a_chooser_reads_the_cue_its_weights_were_fitted_on():
    from decision_engine.reader.value_chooser import DIM, MENTION_FEATURES, READ_FEATURES, cue_view

    mentions = torch.arange(2 * MENTION_FEATURES, dtype=torch.float32).view(2, MENTION_FEATURES)
    around, before = cue_view(mentions, True), cue_view(mentions, False)
    assert around.shape == before.shape == (2, READ_FEATURES)
    assert torch.equal(around[:, DIM : 2 * DIM], mentions[:, 2 * DIM : 3 * DIM])
    assert torch.equal(before[:, DIM : 2 * DIM], mentions[:, DIM : 2 * DIM])
    for view in (around, before):  # the mention's own vector and the rest, whichever cue
        assert torch.equal(view[:, :DIM], mentions[:, :DIM]) and torch.equal(view[:, 2 * DIM :], mentions[:, 3 * DIM :])
    assert ValueChooser().around_cue == 0 and ValueChooser(around=True).around_cue == 1


def test_a_chooser_saved_before_the_cue_around_existed_loads_reading_the_cue_before():
    from decision_engine.model.loader import _fit_part_state

    saved = {f"value_chooser.{k}": v for k, v in ValueChooser().state_dict().items() if k != "around_cue"}
    state = {"embed.position.weight": torch.zeros(4, 8), **saved}
    _fit_part_state(state, "value_chooser", ValueChooser, False, None, "fit-chooser")
    chooser = ValueChooser()
    chooser.load_state_dict({k[len("value_chooser.") :]: v for k, v in state.items() if k.startswith("value_chooser.")})
    assert chooser.around_cue == 0
    assert torch.equal(state["value_chooser.key.weight"], saved["value_chooser.key.weight"])  # its weights kept


def test_an_ensemble_answers_with_its_members_mean_probabilities():
    from decision_engine.reader.chooser_ensemble import ChooserEnsemble, first_chooser, value_chooser

    torch.manual_seed(0)
    ensemble = ChooserEnsemble(2).eval()
    assert [float(m.around_cue) for m in ensemble.members] == [0.0, 1.0]
    lines = [{
        "document": {"text": DOCUMENT},
        "questions": [{"id": "deposit", "text": "How much was the deposit?", "schema": {"type": "integer", "minimum": 0, "maximum": 100000}}],
        "labels": {"deposit": 1450},
    }]
    example = choice_examples(lines, Grounder(ValueChooser()).embedder)[0]
    k = len(example.table.operations)
    valid = torch.ones((1, k), dtype=torch.bool)
    valid[0, 0] = False  # a candidate left out stays impossible
    inputs = (example.question[None], example.mentions[None], example.table.operations[None],
              example.table.operands[None], example.table.features[None], valid)
    with torch.no_grad():
        mixed = ensemble(*inputs).exp()
        each = [m(*inputs).softmax(dim=-1) for m in ensemble.members]
    assert torch.allclose(mixed, (each[0] + each[1]) / 2, atol=1e-6)
    assert mixed[0, 0] == 0 and torch.isclose(mixed.sum(), torch.tensor(1.0))
    assert not torch.allclose(each[0], each[1])  # the two cues read the mentions differently
    ensemble(*inputs)[0, 1:].logsumexp(dim=0).backward()  # trained through, as a comparison's sides are
    grads = [p.grad for p in ensemble.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)  # the impossible column gives no NaN
    assert first_chooser(ensemble) is ensemble.members[0] and isinstance(value_chooser(1), ValueChooser)
    with pytest.raises(ValueError, match="at least two"):
        ChooserEnsemble(1)


def test_an_ensemble_copies_a_mention_end_to_end_with_a_tiny_model(tiny_backend):
    from decision_engine.reader.chooser_ensemble import ChooserEnsemble
    from decision_engine.training.value_choice import train_choosers

    questions = [{"id": "deposit", "text": "How much was the deposit?", "schema": {"type": "integer", "minimum": 0, "maximum": 100000}}]
    lines = [{"document": {"text": DOCUMENT}, "questions": questions, "labels": {"deposit": 1450}}]
    torch.manual_seed(0)
    grounder = Grounder(ChooserEnsemble(2))
    examples = choice_examples(lines, grounder.embedder)
    fitted = train_choosers(grounder.chooser, examples, epochs=60, log=lambda _: None)
    assert len(fitted["members"]) == 2 and fitted["after"]["accuracy"] == 1.0
    response = DecisionEngine(tiny_backend, grounder=grounder).decide(_request(questions), "joint")
    assert response.answers[0].value == 1450 and response.answers[0].evidence[0].text == "$1,450"


def test_a_count_in_months_never_takes_a_value_written_in_years(vocab):
    document = "The restriction lasts 18 months. The agreement ends on its second anniversary."
    grounder = Grounder(ValueChooser(), ZeroEmbedder())
    request = request_from_object({"document": {"text": document}, "questions": [
        {"id": "q", "text": "For how many months does the restriction apply?", "schema": {"type": "integer", "minimum": 0, "maximum": 365}},
    ]})
    schema = request.questions[0].schema
    space = build_space(schema, vocab, RuleSet.compile([schema], ["q"], []).classes[0], "schema")
    grounded = grounder(document, request.questions, [space])[0]
    odds = dict(zip(grounded.values, grounded.choice_logits[:-1].tolist()))
    assert odds[18] > float("-inf") and odds[2] == float("-inf")  # "second anniversary" is 2 years


def _unsure(margins):
    """Chooser logits that favour each value of `margins` by its margin over the other candidates: no
    choice is sure."""
    def pick(values):
        logits = torch.zeros(len(values) + 1)
        for value, margin in margins.items():
            logits[values.index(value)] = margin
        logits[-1] = -20.0  # never "write"
        return logits
    return pick


@pytest.mark.parametrize("flag_odds, amount, flag", [
    (None, 1450, False),  # nothing weighs against the surest choice: 1450 goes in and the rule forces the flag
    ({True: 4.0, False: -4.0}, 900, True),  # the readers think the flag true: a value forcing it false gives way
    ({True: -4.0, False: 4.0}, 1450, False),  # they think it false: the surest value goes in as before
])
def test_an_unsure_choice_forced_in_weighs_what_the_rules_would_force_with_it(vocab, flag_odds, amount, flag):
    fake = FakeModel(vocab, lambda call, rows, ids: torch.zeros(ids.shape[0], ids.shape[1], 30522))
    request = _request(
        [{"id": "late", "text": "Was the deposit paid late?", "schema": {"type": "boolean"}},
         {"id": "amount", "text": "How much was paid?", "schema": {"type": "integer", "minimum": 0, "maximum": 100000}}],
        [{"if": {"late": [True]}, "then": {"amount": [900]}}],
    )
    grounded = FixedGrounder(_unsure({1450: 1.0, 900: 0.5}))

    def grounder(document, questions, spaces, joint=True):  # the flag's odds, as a choice reader adds them
        out = grounded(document, questions, spaces, joint)
        if flag_odds is not None:
            out[0].choice_bias = [flag_odds[v] for v in out[0].values]
        return out

    layout = lay_out(request, "joint", vocab, LeadingContext(vocab), 512, grounder=grounder)
    constraints = layout.group.constraints
    run_denoising(fake, layout.blocks)
    assert constraints.value(1) == amount and constraints.value(0) is flag
