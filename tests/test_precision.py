"""Which number format forward passes compute in, and that autocast is confined to the engine's passes."""

from __future__ import annotations

import pytest
import torch

from decision_engine.options import EngineOptions
from decision_engine.precision import compute_dtype, computing_in, cpu_has_native_bfloat16


def test_float32_and_bfloat16_are_taken_as_asked():
    assert compute_dtype("float32", "cpu", bundled_family=True) == torch.float32
    assert compute_dtype("bfloat16", "cpu", bundled_family=False) == torch.bfloat16


def test_auto_takes_bfloat16_only_for_the_bundled_family_on_a_cpu_that_has_it():
    native = cpu_has_native_bfloat16()
    assert compute_dtype("auto", "cpu", bundled_family=True) == (torch.bfloat16 if native else torch.float32)
    assert compute_dtype("auto", "cpu", bundled_family=False) == torch.float32
    assert compute_dtype("auto", "cuda", bundled_family=True) == torch.float32


def test_an_unknown_precision_is_refused_by_name():
    with pytest.raises(ValueError, match="precision must be one of auto, float32, bfloat16, not 'half'"):
        EngineOptions(precision="half")
    with pytest.raises(ValueError, match="precision must be one of"):
        compute_dtype("half", "cpu", bundled_family=True)


def test_bfloat16_runs_matrix_products_in_bfloat16_and_leaves_nothing_behind():
    a, b = torch.randn(4, 8), torch.randn(8, 3)
    with computing_in(torch.bfloat16, torch.device("cpu")):
        assert (a @ b).dtype == torch.bfloat16
    assert (a @ b).dtype == torch.float32
    with computing_in(torch.float32, torch.device("cpu")):
        assert (a @ b).dtype == torch.float32
