"""The figures eval reports beside accuracy: calibration error, first-evidence overlap, grounding reach, intervals."""

from __future__ import annotations

import pytest

from decision_engine.metrics import (
    ece_bootstrap_interval,
    expected_calibration_error,
    group_bootstrap_interval,
    grounding_reachable,
    overlaps,
)
from decision_engine.types import AnswerSchema


def test_calibration_error_of_honest_confidence_is_zero():
    # 10 answers at 0.9 with 9 right, 10 at 0.55 with 5.5 right on average (here 11 of 20)
    confidences = [0.9] * 10 + [0.55] * 20
    right = [True] * 9 + [False] + [True] * 11 + [False] * 9
    assert expected_calibration_error(confidences, right) == pytest.approx(0.0, abs=1e-9)


def test_calibration_error_of_overconfidence():
    # always 0.95 sure, right half the time: off by 0.45
    assert expected_calibration_error([0.95] * 4, [True, False, True, False]) == pytest.approx(0.45)


def test_calibration_bins_are_weighted_by_their_share():
    # bin 0.9-1.0: 3 answers at 1.0, all right (error 0); bin 0.0-0.1: 1 answer at 0.05, right (error 0.95)
    assert expected_calibration_error([1.0, 1.0, 1.0, 0.05], [True] * 4) == pytest.approx(0.95 / 4)


def test_calibration_needs_matching_lengths():
    with pytest.raises(ValueError):
        expected_calibration_error([0.5], [])
    assert expected_calibration_error([], []) == 0.0


@pytest.mark.parametrize(
    ("span", "golds", "expected"),
    [((10, 20), [(19, 30)], True), ((10, 20), [(20, 30)], False), ((10, 20), [(0, 5), (12, 13)], True), ((5, 6), [], False)],
)
def test_overlap_needs_a_shared_character(span, golds, expected):
    assert overlaps(span, golds) is expected


DOCUMENT = "Notice was received on 8 March 2024; the lease requires thirty (30) days of notice. Rent is $1,450 and the fee $200."


def test_grounding_reach_of_integers_and_dates():
    integer = AnswerSchema(type="integer", minimum=0, maximum=100_000)
    date = AnswerSchema(type="string", format="date")
    assert grounding_reachable(DOCUMENT, integer, 30) is True  # copied
    assert grounding_reachable(DOCUMENT, integer, 1450) is True  # copied
    assert grounding_reachable(DOCUMENT, integer, 1650) is True  # 1,450 + 200
    assert grounding_reachable(DOCUMENT, integer, 7) is False
    assert grounding_reachable(DOCUMENT, integer, True) is False  # a boolean is not an integer answer
    assert grounding_reachable(DOCUMENT, date, "2024-04-07") is True  # 8 March 2024 + 30 days
    assert grounding_reachable(DOCUMENT, date, "2024-05-01") is False
    assert grounding_reachable(DOCUMENT, AnswerSchema(type="boolean"), True) is None


def test_group_interval_holds_the_estimate_and_is_repeatable():
    per_group = [(3, 4), (4, 4), (1, 5), (6, 8), (2, 4), (5, 5)] * 10
    low, high = group_bootstrap_interval(per_group)
    estimate = sum(r for r, _ in per_group) / sum(a for _, a in per_group)
    assert low < estimate < high
    assert (low, high) == group_bootstrap_interval(per_group)


def test_group_interval_narrows_with_more_groups():
    few = [(3, 4), (1, 4), (4, 4), (2, 4)] * 5
    many = few * 20
    low_few, high_few = group_bootstrap_interval(few)
    low_many, high_many = group_bootstrap_interval(many)
    assert high_many - low_many < (high_few - low_few) / 2


def test_group_interval_resamples_groups_not_answers():
    """Groups all right or all wrong are one draw each: wider than the same answers as single questions."""
    clustered = [(8, 8)] * 10 + [(0, 8)] * 10
    loose = [(1, 1)] * 80 + [(0, 1)] * 80
    assert group_bootstrap_interval(clustered)[1] - group_bootstrap_interval(clustered)[0] > 1.5 * (
        group_bootstrap_interval(loose)[1] - group_bootstrap_interval(loose)[0]
    )


def test_group_interval_edges():
    assert group_bootstrap_interval([]) == (0.0, 0.0)
    assert group_bootstrap_interval([(4, 4), (2, 2)]) == (1.0, 1.0)
    with pytest.raises(ValueError, match="level"):
        group_bootstrap_interval([(1, 2)], level=1.5)


def test_ece_interval_resamples_whole_groups_and_is_repeatable():
    """Groups of answers at 0.9 that are all right or all wrong: their ece swings with the draw."""
    sure = [[(0.9, True)] * 4] * 15 + [[(0.9, False)] * 4] * 5  # 75% right at 0.9: ece 0.15
    low, high = ece_bootstrap_interval(sure)
    assert expected_calibration_error([0.9] * 80, [True] * 60 + [False] * 20) == pytest.approx(0.15)
    assert 0.0 <= low < 0.15 < high <= 0.9
    assert (low, high) == ece_bootstrap_interval(sure)
    many_low, many_high = ece_bootstrap_interval(sure * 20)
    assert many_high - many_low < (high - low) / 2


def test_ece_interval_edges():
    assert ece_bootstrap_interval([]) == (0.0, 0.0)
    assert ece_bootstrap_interval([[], []]) == (0.0, 0.0)  # groups whose answers rules fixed
    assert ece_bootstrap_interval([[(1.0, True)], [(1.0, True), (1.0, True)]]) == (0.0, 0.0)
    with pytest.raises(ValueError, match="level"):
        ece_bootstrap_interval([[(0.5, True)]], level=0.0)
