"""Value choosers grown to an operation added since they were fitted, and fitted on it alone."""

from __future__ import annotations

import torch

from decision_engine.grounding.candidates import COUNT, OPERATIONS
from decision_engine.grounding.grounder import Grounder
from decision_engine.grounding.mentions import find_mentions
from decision_engine.grounding.slot_candidates import offers_counts, slot_candidates
from decision_engine.model.transformer import BlockDiffusionConfig
from decision_engine.reader.chooser_ensemble import ChooserEnsemble, value_chooser
from decision_engine.reader.value_chooser import CandidateTable, ValueChooser, operation_slices, with_operations
from decision_engine.training.operation_fit import grown_chooser, learn_only_operations
from decision_engine.types import AnswerSchema

REGISTER = (
    "Owners of 25% or more are beneficial owners; for high-risk customers the threshold is 10%.\n"
    "Register received on 2024-03-01: A 60%; B 18%; C 9%; the remaining 13% is widely held.\n"
    "The deposit of 1,450 was paid on 2024-01-16 and 30 days later the file closed.\n"
)
COUNTED = AnswerSchema(type="integer", minimum=0, maximum=10)


def _inputs(candidates, mentions):
    table = CandidateTable.of(candidates, mentions)
    k = len(candidates)
    torch.manual_seed(1)
    features = torch.randn(1, len(mentions), 3 * 384 + 6 + 4 + 7 + 2)
    question = torch.nn.functional.normalize(torch.randn(1, 384), dim=-1)
    return question, features, table.operations[None], table.operands[None], table.features[None], torch.ones((1, k), dtype=torch.bool)


def test_a_chooser_grown_to_counts_scores_every_other_candidate_as_before():
    torch.manual_seed(0)
    old = ChooserEnsemble(2, COUNT).eval()
    grown = grown_chooser(old).eval()
    assert grown.operations == len(OPERATIONS) and old.operations == COUNT
    mentions = find_mentions(REGISTER)
    without = slot_candidates(COUNTED, mentions, counts=False)
    with torch.no_grad():
        assert torch.allclose(old(*_inputs(without, mentions)), grown(*_inputs(without, mentions)), atol=1e-6)
    with_counts = slot_candidates(COUNTED, mentions)
    assert any(c.operation == "count_at_least" for c in with_counts)
    with torch.no_grad():
        grown(*_inputs(with_counts, mentions))  # a count's index has forms to read


def test_growing_then_trimming_gives_the_chooser_back():
    torch.manual_seed(0)
    state = ValueChooser(operations=COUNT).state_dict()
    grown = with_operations(state, len(OPERATIONS))
    for name, (dim, part) in operation_slices(COUNT, len(OPERATIONS)).items():
        assert grown[name].narrow(dim, part.start, part.stop - part.start).abs().sum() == 0, name
    back = with_operations(grown, COUNT)
    assert all(torch.equal(back[k], v) for k, v in state.items())


def test_only_the_new_operations_forms_learn():
    torch.manual_seed(0)
    chooser = grown_chooser(ChooserEnsemble(2, COUNT))
    before = {k: v.clone() for k, v in chooser.state_dict().items()}
    hooks = learn_only_operations(chooser, COUNT, len(OPERATIONS))
    mentions = find_mentions(REGISTER)
    candidates = slot_candidates(COUNTED, mentions)
    inputs = _inputs(candidates, mentions)
    optimiser = torch.optim.AdamW(chooser.parameters(), lr=1e-2, weight_decay=0.0)
    target = torch.tensor([[c.operation == "count_at_least" and c.value == 2 for c in candidates] + [False]])
    for _ in range(5):
        logits = chooser(*inputs)
        loss = torch.logsumexp(logits, -1) - torch.logsumexp(logits.masked_fill(~target, float("-inf")), -1)
        optimiser.zero_grad()
        loss.sum().backward()
        optimiser.step()
    for hook in hooks:
        hook.remove()
    after = chooser.state_dict()
    changed_new = False
    for m in range(2):
        learnt = operation_slices(COUNT, len(OPERATIONS))
        for name in ChooserEnsemble(2).members[0].state_dict():
            key = f"members.{m}.{name}"
            if name not in learnt:
                assert torch.equal(after[key], before[key]), key
                continue
            dim, part = learnt[name]
            old_part = slice(0, part.start)
            keep = after[key].narrow(dim, 0, old_part.stop)
            assert torch.equal(keep, before[key].narrow(dim, 0, old_part.stop)), key
            changed_new |= not torch.equal(after[key], before[key])
    assert changed_new


def test_checkpoints_saved_before_counts_know_nine_operations_and_offer_no_counts():
    saved = BlockDiffusionConfig(chooses_values=True).to_dict()
    del saved["chooser_operations"]
    assert BlockDiffusionConfig.from_dict(saved).chooser_operations == COUNT
    assert BlockDiffusionConfig().chooser_operations == len(OPERATIONS)
    assert not offers_counts(value_chooser(2, COUNT)) and offers_counts(value_chooser(1))
    for operations, offered in ((COUNT, False), (len(OPERATIONS), True)):
        grounder = Grounder(ValueChooser(operations=operations))
        candidates, _ = grounder._candidates(grounder._read(REGISTER), COUNTED)
        assert any(c.operation == "count_at_least" for c in candidates) is offered
