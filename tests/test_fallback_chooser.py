"""Generic value choosers behind a model's own: they answer only the slots its value choosers are unsure of."""

from __future__ import annotations

import math
from dataclasses import replace

import torch
from torch import nn

from decision_engine.cli import main
from decision_engine.grounding.grounder import grounder_for_model
from decision_engine.model.loader import load_checkpoint, random_model, save_checkpoint
from decision_engine.model.transformer import BlockDiffusionConfig
from decision_engine.reader.chooser_ensemble import ChooserEnsemble
from decision_engine.reader.fallback_chooser import FallbackChooser, grounding_chooser


class FixedChooser(nn.Module):
    """A chooser that gives every batch the same rows of logits, recording what it was asked."""

    def __init__(self, rows: list[list[float]], operations: int = 10):
        super().__init__()
        self.rows, self.operations, self.asked = torch.tensor(rows), operations, []

    def forward(self, *inputs, siblings=None):
        self.asked.append((inputs[0].shape[0], siblings is not None))
        return self.rows[-inputs[0].shape[0] :]  # the last rows: those of the slots it is handed


def _inputs(batch: int) -> tuple[torch.Tensor, ...]:
    return (torch.zeros(batch, 4), torch.zeros(batch, 2, 3), torch.zeros(batch, 3, dtype=torch.long),
            torch.zeros(batch, 3, 4, dtype=torch.long), torch.zeros(batch, 3, 7), torch.ones(batch, 3, dtype=torch.bool))


def test_a_sure_slot_keeps_the_value_choosers_answer_and_an_unsure_one_takes_the_generic_ones():
    sure = [8.0, 0.0, 0.0, 0.0]  # top probability about 0.999
    unsure = [0.1, 0.0, 0.0, 0.0]  # about 0.27
    primary = FixedChooser([sure, unsure])
    generic = FixedChooser([[0.0, 0.0, 5.0, 0.0]])
    out = FallbackChooser(primary, generic, below=0.5)(*_inputs(2))
    assert torch.allclose(out[0], torch.tensor(sure).log_softmax(-1))
    assert int(out[1].argmax()) == 2 and torch.allclose(out[1].exp().sum(), torch.tensor(1.0))
    assert generic.asked == [(1, False)]  # only the unsure row, and without what the other questions answer


def test_when_every_slot_is_sure_the_generic_choosers_are_not_asked():
    generic = FixedChooser([[0.0, 9.0, 0.0, 0.0]])
    out = FallbackChooser(FixedChooser([[9.0, 0.0, 0.0, 0.0]]), generic, below=0.2)(*_inputs(1), siblings=torch.zeros(1, 3, 3))
    assert int(out[0].argmax()) == 0 and generic.asked == []


def test_invalid_candidates_stay_impossible_whichever_chooser_answers():
    primary = FixedChooser([[0.0, 0.0, -math.inf, 0.0]])
    generic = FixedChooser([[0.0, 0.0, -math.inf, 1.0]])
    out = FallbackChooser(primary, generic, below=0.9)(*_inputs(1))
    assert out[0, 2] == -math.inf and int(out[0].argmax()) == 3


def test_the_slots_offer_only_operations_both_have_forms_for():
    assert FallbackChooser(FixedChooser([[0.0]], 10), FixedChooser([[0.0]], 9), 0.2).operations == 9


def _tiny(generic: int) -> BlockDiffusionConfig:
    return replace(BlockDiffusionConfig.from_name("tiny"), chooses_values=True, value_choosers=2, generic_choosers=generic,
                   generic_below=0.3)


def test_a_model_with_generic_choosers_saves_loads_and_grounds_with_them(tmp_path):
    model = random_model(_tiny(2), seed=1)
    with torch.no_grad():
        model.generic_chooser.members[0].write.weight.add_(1.0)
    save_checkpoint(model, tmp_path / "generic", "generic")
    loaded, _ = load_checkpoint(tmp_path / "generic")
    assert isinstance(loaded.generic_chooser, ChooserEnsemble)
    assert torch.allclose(loaded.generic_chooser.members[0].write.weight, model.generic_chooser.members[0].write.weight.half().float())
    chooser = grounding_chooser(loaded)
    assert isinstance(chooser, FallbackChooser) and chooser.below == 0.3 and chooser.primary is loaded.value_chooser
    assert isinstance(grounder_for_model(loaded).chooser, FallbackChooser)
    plain, _ = load_checkpoint(tmp_path / "generic", cfg=_tiny(0))  # a config without them leaves them out
    assert plain.generic_chooser is None and grounding_chooser(plain) is plain.value_chooser


def test_fit_chooser_generic_refuses_new_operations_and_a_threshold_out_of_range(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["fit-chooser", "--generic", "--new-operations", "--out", str(out), "--groups", "1"]) == 2
    assert "--new-operations" in capsys.readouterr().err
    assert main(["fit-chooser", "--generic", "--generic-below", "1.5", "--out", str(out), "--groups", "1"]) == 2
    assert "--generic-below" in capsys.readouterr().err
    assert not out.exists()
