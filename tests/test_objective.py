"""The masked-token loss: per token (the 1/t weighting) and per question."""

from __future__ import annotations

import math

import torch

from decision_engine.training.objective import masked_token_loss


def _logits_for(losses: list[float]) -> tuple[torch.Tensor, torch.Tensor]:
    """(1, L, 2) logits whose cross-entropy at target column 0 is each of `losses`, and the targets."""
    rows = []
    for loss in losses:  # two columns: p(target) = exp(-loss)
        p = math.exp(-loss)
        rows.append([math.log(p), math.log(1 - p)])
    return torch.tensor(rows)[None], torch.zeros((1, len(losses)), dtype=torch.long)


def test_per_token_loss_is_the_mean_over_masked_positions():
    logits, target = _logits_for([0.2, 1.0, 2.0, 3.0])
    masked = torch.tensor([[True, True, True, False]])
    loss = masked_token_loss(logits, target, masked)
    assert abs(loss.item() - (0.2 + 1.0 + 2.0) / 3) < 1e-5


def test_per_question_loss_weighs_a_one_token_answer_as_a_long_one():
    logits, target = _logits_for([0.2, 1.0, 2.0, 3.0, 5.0])
    slots = torch.tensor([[1, 2, 2, 2, 0]])  # a boolean, a three-token answer, then padding
    masked = torch.tensor([[True, True, True, False, False]])
    loss = masked_token_loss(logits, target, masked, slots)
    assert abs(loss.item() - (0.2 + (1.0 + 2.0) / 2) / 2) < 1e-5  # not (0.2 + 1 + 2) / 3
    unmasked_question = torch.tensor([[False, True, True, False, False]])
    loss = masked_token_loss(logits, target, unmasked_question, slots)
    assert abs(loss.item() - 1.5) < 1e-5  # a question with nothing masked does not count


def test_per_question_loss_averages_examples_alike():
    logits, target = _logits_for([1.0, 2.0])
    logits, target = logits.repeat(2, 1, 1), target.repeat(2, 1)
    slots = torch.tensor([[1, 2], [1, 1]])
    masked = torch.tensor([[True, True], [True, True]])
    loss = masked_token_loss(logits, target, masked, slots)
    assert abs(loss.item() - ((1.0 + 2.0) / 2 + 1.5) / 2) < 1e-5
