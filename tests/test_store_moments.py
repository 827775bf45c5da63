"""Stored times come back timezone-aware in UTC, whatever the database returned."""

from __future__ import annotations

import datetime as dt

from decision_engine.store.moments import as_utc


def test_naive_times_are_taken_as_utc():
    assert as_utc(dt.datetime(2025, 1, 31, 12, 0)) == dt.datetime(2025, 1, 31, 12, 0, tzinfo=dt.UTC)
    assert as_utc(dt.datetime(2025, 1, 31, 12, 0)).tzinfo is dt.UTC


def test_aware_times_are_converted_to_utc():
    paris = dt.timezone(dt.timedelta(hours=1))
    moment = as_utc(dt.datetime(2025, 1, 31, 13, 0, tzinfo=paris))
    assert moment.tzinfo is dt.UTC and moment.hour == 12


def test_no_time_stays_none():
    assert as_utc(None) is None
