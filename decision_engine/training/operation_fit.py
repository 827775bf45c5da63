"""Teaching a model's value choosers an operation added since they were fitted, and nothing else.

A chooser holds forms per operation (`reader.value_chooser.operation_slices`). Grown to the newer
operations with zero forms, it scores every candidate it scored before as before; fitting only the
new forms (every other weight held, no weight decay) then leaves its answers wherever no candidate
of a new operation is on offer, and teaches it where one is.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import torch
from torch import nn

from ..grounding.candidates import OPERATIONS
from ..reader.chooser_ensemble import chooser_state_with_operations, value_chooser
from ..reader.value_chooser import ValueChooser, operation_slices
from .generated_fit import model_pointer


def grown_chooser(chooser: nn.Module, operations: int = len(OPERATIONS)) -> nn.Module:
    """A copy of a value chooser (or ensemble) with forms for `operations` operations, the new ones zero."""
    members = getattr(chooser, "members", None)
    grown = value_chooser(len(members) if members is not None else 1, operations)
    grown.load_state_dict(chooser_state_with_operations(chooser.state_dict(), operations))
    return grown


def learn_only_operations(chooser: nn.Module, start: int, stop: int) -> list:
    """Let only the forms of operations `start` to `stop` learn: every other weight of each chooser
    gets no gradient (train with no weight decay, or AdamW still shrinks them). Returns the hooks."""
    hooks = []
    members = getattr(chooser, "members", [chooser])
    for member in members:
        assert isinstance(member, ValueChooser)
        learnt = operation_slices(start, stop, member.rank)
        for name, parameter in member.named_parameters():
            if name not in learnt:
                parameter.requires_grad_(False)
                continue
            dim, part = learnt[name]
            mask = torch.zeros_like(parameter)
            mask.narrow(dim, part.start, part.stop - part.start).fill_(1.0)
            hooks.append(parameter.register_hook(functools.partial(torch.mul, other=mask)))
    return hooks


def add_operations(
    folder: Path,
    out: Path,
    groups: int,
    epochs: int,
    seed: int = 0,
    log: Callable[[str], None] = print,
    held_out: Sequence[dict] = (),
    question_variants: int = 0,
    reword_documents: bool = False,
    int8_parts: Sequence[str] = (),
) -> dict:
    """A copy of the checkpoint in `folder`, written to `out`, whose value choosers have forms for
    every operation of this version, only the ones they lacked fitted (on `groups` generated training
    groups, as `fit-chooser` fits); `int8_parts` are stored in int8 from now on, and rounded so before
    the fit. Returns the fit's summary."""
    from ..model.int8_storage import round_in_int8
    from ..model.loader import ModelLoadError, load_checkpoint, save_refitted, store_in_int8
    from .value_choice import fit_value_chooser, with_rewording

    model, meta = load_checkpoint(folder)
    if model.value_chooser is None:
        raise ModelLoadError(f"{folder} has no value chooser to teach new operations; fit one with fit-chooser")
    had = model.cfg.chooser_operations
    if had >= len(OPERATIONS):
        raise ModelLoadError(f"the value choosers of {folder} already have forms for every operation")
    store_in_int8(model, meta, folder, int8_parts)
    round_in_int8(model, int8_parts)
    model.value_chooser = grown_chooser(model.value_chooser)
    model.cfg = replace(model.cfg, chooser_operations=len(OPERATIONS))
    log(f"fitting the forms of {', '.join(OPERATIONS[had:])}; every other weight of the choosers is held")
    hooks = learn_only_operations(model.value_chooser, had, len(OPERATIONS))
    try:
        fitted = fit_value_chooser(
            model.value_chooser, groups, epochs, seed, log, held_out, model_pointer(model), question_variants,
            reword_documents, weight_decay=0.0,
        )
    finally:
        for hook in hooks:
            hook.remove()
    fitted = with_rewording({**fitted, "operations_fitted": list(OPERATIONS[had:])}, question_variants, reword_documents)
    previous = meta.get("training", {}).get("value_chooser")
    save_refitted(model, meta, out, folder, "value_chooser", {**(previous or {}), "new_operations": fitted})
    return fitted
