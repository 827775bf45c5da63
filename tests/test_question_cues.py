"""Question cues: the words that say which step a value takes, as flags a value chooser weighs per operation."""

from __future__ import annotations

import pytest
import torch

from decision_engine.reader.question_cues import CUES, QUESTION_CUES, question_cues, with_cues
from decision_engine.reader.value_chooser import DIM, ValueChooser, operation_slices, with_operations

NAMES = [name for name, _ in CUES]


@pytest.mark.parametrize(("text", "on"), [
    ("By what date must the insurer decide the claim?", {"deadline"}),
    ("What was the payment deadline for the invoice?", {"deadline"}),
    ("On what date did the tenant move out?", {"happened"}),
    ("When was the employee given notice of dismissal?", {"happened"}),
    ("On what date did payment of the invoice fall due?", {"deadline", "happened"}),
    ("How many records in total were exposed?", {"total"}),
    ("After the excess, how much must the insurer pay on this claim?", {"remaining", "deadline", "owed"}),
    ("How many days passed between the notice and the move?", {"between"}),
    ("What ownership threshold, in percent, applies?", {"percent"}),
    ("What share (%) does the largest holder own?", {"percent"}),
    ("What payment is the policyholder entitled to receive?", {"owed"}),
    ("What is the monthly rent?", set()),
    ("Who signed the agreement?", set()),
])
def test_each_cue_reads_its_words(text, on):
    flags = question_cues([text])[0]
    assert {name for name, flag in zip(NAMES, flags) if flag} == on


def test_cues_follow_the_sentence_vector():
    vectors = torch.randn(2, DIM)
    texts = ["By what date?", "How much in total?"]
    read = with_cues(vectors, question_cues(texts))
    assert read.shape == (2, DIM + QUESTION_CUES)
    assert torch.equal(read[:, :DIM], vectors) and torch.equal(read[:, DIM:], question_cues(texts))
    assert question_cues([]).shape == (0, QUESTION_CUES)


def _inputs(questions: torch.Tensor):
    torch.manual_seed(1)
    b, m, k = questions.shape[0], 3, 4
    from decision_engine.reader.value_chooser import CANDIDATE_FEATURES, MAX_OPERANDS, MENTION_FEATURES

    mentions = torch.randn(b, m, MENTION_FEATURES)
    operations = torch.tensor([[0, 1, 2, 1]] * b)
    operands = torch.tensor([[[0, -1, -1, -1], [0, 1, -1, -1], [1, 2, -1, -1], [2, 0, -1, -1]]] * b)
    return questions, mentions, operations, operands, torch.randn(b, k, CANDIDATE_FEATURES), torch.ones(b, k, dtype=torch.bool)


def test_a_chooser_scores_as_before_until_its_cue_weights_are_fitted():
    chooser = ValueChooser().eval()
    vectors = torch.nn.functional.normalize(torch.randn(2, DIM), dim=-1)
    plain = chooser(*_inputs(vectors))
    cued = chooser(*_inputs(with_cues(vectors, question_cues(["By what date?", "When did it happen?"]))))
    assert torch.allclose(plain, cued)
    with torch.no_grad():
        chooser.cue_weights[1, NAMES.index("deadline")] = 3.0  # operation 1 wants deadlines
    moved = chooser(*_inputs(with_cues(vectors, question_cues(["By what date?", "When did it happen?"]))))
    assert torch.allclose(moved[0, [1, 3]], plain[0, [1, 3]] + 3.0)  # the deadline question's operation-1 candidates
    assert torch.allclose(moved[0, [0, 2]], plain[0, [0, 2]])
    assert torch.allclose(moved[1], plain[1])  # no deadline words: nothing moves


def test_cue_weights_grow_with_new_operations_and_are_zero_where_a_state_lacks_them():
    state = ValueChooser(operations=9).state_dict()
    assert "cue_weights" in operation_slices(0, 9)
    grown = with_operations(state, 10)
    assert grown["cue_weights"].shape == (10, QUESTION_CUES) and not grown["cue_weights"][9].any()
    old = {k: v for k, v in state.items() if k != "cue_weights"}
    assert "cue_weights" not in with_operations(old, 10)


def test_the_bundled_choosers_fitted_before_cues_load_with_zero_cue_weights_and_the_generic_ones_weigh_them():
    from pathlib import Path

    import decision_engine
    from decision_engine.model.loader import load_checkpoint

    model, _ = load_checkpoint(Path(decision_engine.__file__).parent / "weights")
    weights = {name: p for name, p in model.named_parameters() if name.endswith("cue_weights")}
    before = [p for name, p in weights.items() if name.startswith(("value_chooser.", "comparison_chooser."))]
    generic = [p for name, p in weights.items() if name.startswith("generic_chooser.")]
    assert before and all(not w.any() for w in before)
    assert generic and all(w.any() for w in generic)
