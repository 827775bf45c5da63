"""Value mentions: dates, numbers, percentages and durations read from written forms, with offsets."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from decision_engine.grounding.mentions import Mention, find_mentions

D = dt.date

# (text, [(kind, value, exact text of the mention)]) for the whole text.
FORMS = [
    ("on 2024-03-08.", [("date", D(2024, 3, 8), "2024-03-08")]),
    ("on 8 March 2024", [("date", D(2024, 3, 8), "8 March 2024")]),
    ("on March 8, 2024", [("date", D(2024, 3, 8), "March 8, 2024")]),
    ("the 8th of March, 2024", [("date", D(2024, 3, 8), "8th of March, 2024")]),
    ("this 8th day of March, 2024", [("date", D(2024, 3, 8), "8th day of March, 2024")]),
    ("on Mar. 8, 2024", [("date", D(2024, 3, 8), "Mar. 8, 2024")]),
    ("on Sept 30th 2025", [("date", D(2025, 9, 30), "Sept 30th 2025")]),
    ("13/08/2024", [("date", D(2024, 8, 13), "13/08/2024")]),
    ("08/13/2024", [("date", D(2024, 8, 13), "08/13/2024")]),
    ("05.05.2024", [("date", D(2024, 5, 5), "05.05.2024")]),
    ("fifteen (15)", [("number", 15, "fifteen (15)")]),
    ("15 (fifteen)", [("number", 15, "15 (fifteen)")]),
    ("thirty-one", [("number", 31, "thirty-one")]),
    ("one hundred and twenty", [("number", 120, "one hundred and twenty")]),
    ("fifteen hundred", [("number", 1500, "fifteen hundred")]),
    ("one million two hundred thousand and five", [("number", 1_200_005, "one million two hundred thousand and five")]),
    ("one, two and three", [("number", 1, "one"), ("number", 2, "two"), ("number", 3, "three")]),
    ("1,450 units", [("number", 1450, "1,450")]),
    ("a fee of $16,000.", [("number", 16000, "$16,000")]),
    ("USD 2,500", [("number", 2500, "USD 2,500")]),
    ("2,500.00", [("number", 2500, "2,500.00")]),
    ("$1.5 million", [("number", 1_500_000, "$1.5 million")]),
    ("Fifteen Thousand Dollars ($15,000)", [("number", 15000, "Fifteen Thousand Dollars ($15,000)")]),
    ("12.5 and EUR 1.450", []),  # fractions are not mentions; dots as thousands separators are out of scope
    ("Section 3.2 applies", []),
    ("at 10:30", []),
    ("5%", [("number", 5, "5%")]),
    ("5 percent", [("number", 5, "5 percent")]),
    ("five per cent", [("number", 5, "five per cent")]),
    ("five percent (5%)", [("number", 5, "five percent (5%)")]),
    ("30 days", [("duration", 30, "30 days")]),
    ("thirty (30) days", [("duration", 30, "thirty (30) days")]),
    ("30 (thirty) calendar days", [("duration", 30, "30 (thirty) calendar days")]),
    ("two weeks", [("duration", 2, "two weeks")]),
    ("3 months", [("duration", 3, "3 months")]),
    ("one year", [("duration", 1, "one year")]),
    ("14 business days", [("duration", 14, "14 business days")]),
    ("a 30-day period", [("duration", 30, "30-day")]),
    ("a twelve-month term", [("duration", 12, "twelve-month")]),
    ("fifteen (16)", [("number", 15, "fifteen"), ("number", 16, "16")]),  # not a twin: both stay
    ("expires on the second anniversary of", [("duration", 2, "second anniversary")]),
    ("on the 3rd anniversary", [("duration", 3, "3rd anniversary")]),
    ("its tenth-anniversary party", [("duration", 10, "tenth-anniversary")]),
    ("the anniversary of the Effective Date", []),
    ("the 2nd day of March", []),  # an ordinal alone is no value
]


def _triples(mentions: list[Mention]) -> list[tuple[str, object, str]]:
    return [(m.kind, m.value, m.text) for m in mentions]


@pytest.mark.parametrize(("text", "expected"), FORMS, ids=[text for text, _ in FORMS])
def test_written_forms(text, expected):
    mentions = find_mentions(text)
    assert _triples(mentions) == expected
    assert all(text[m.start : m.end] == m.text for m in mentions)
    assert not any(m.ambiguous for m in mentions)


def test_flags_for_currency_percent_and_durations():
    (fee,) = find_mentions("$16,000")
    (rate,) = find_mentions("five per cent")
    (notice,) = find_mentions("14 business days")
    (term,) = find_mentions("two weeks")
    (pounds,) = find_mentions("£300")
    assert (fee.currency, fee.unit) == ("USD", None)
    assert (rate.unit, rate.currency) == ("percent", None)
    assert (notice.unit, notice.business) == ("days", True)
    assert (term.unit, term.business) == ("weeks", False)
    assert pounds.currency == "GBP"


def test_a_mixed_sentence():
    text = (
        "Effective 8 March 2024, the Supplier shall pay fifteen (15) instalments of $1,450 "
        "within thirty (30) days, plus 5% interest, with 10 business days' notice, until 03/31/2025."
    )
    assert _triples(find_mentions(text)) == [
        ("date", D(2024, 3, 8), "8 March 2024"),
        ("number", 15, "fifteen (15)"),
        ("number", 1450, "$1,450"),
        ("duration", 30, "thirty (30) days"),
        ("number", 5, "5%"),
        ("duration", 10, "10 business days"),
        ("date", D(2025, 3, 31), "03/31/2025"),
    ]


# Numbers that name rather than count are not mentions; the quantity beside them still is.
LABELS = [
    ("review ref. IA-2024-113, within 72 hours", [("number", 72, "72")]),
    ("encrypted with AES-256 and a 256-bit key", []),
    ("ticket SEC-8841 and case RTM-24-0417", []),
    ("Section 4 applies; see clause 3 and Part 1", []),
    ("company no. 08817342, Suite 12, version 7, page 1", []),
    ("of 400 Fifth Avenue and Kanaalweg 118", []),
    ("call +44 20 7946 0018 or (020) 7946 0018", []),
    ("1. Rent\n(2) Term\n3) Deposit of 2,100", [("number", 2100, "2,100")]),
    ("a ONE-WAY agreement and a one-time fee of $50", [("number", 50, "$50")]),
    ("Regulation 2016/679 and 24/7 support", []),
    ("two thirds of 30 days", [("number", 2, "two"), ("duration", 30, "30 days")]),  # no hyphen: a count
    ("a 30-day notice and between 10-15 items", [("duration", 30, "30-day"), ("number", 10, "10"), ("number", 15, "15")]),
    ("1 March 2024 and 12 units", [("date", D(2024, 3, 1), "1 March 2024"), ("number", 12, "12")]),
    ("the 72-hour period", [("number", 72, "72")]),
]


@pytest.mark.parametrize(("text", "expected"), LABELS, ids=[text for text, _ in LABELS])
def test_labels_are_not_quantities(text, expected):
    assert _triples(find_mentions(text)) == expected


# Day/month order of numeric dates.


def _dates(text: str, day_first: bool | None = None) -> list[tuple[dt.date, bool]]:
    return [(m.value, m.ambiguous) for m in find_mentions(text, day_first=day_first) if m.kind == "date"]


def test_unsettled_order_gives_both_readings_flagged():
    mentions = find_mentions("Signed 08/03/2024.")
    assert [(m.value, m.ambiguous, m.text) for m in mentions] == [
        (D(2024, 3, 8), True, "08/03/2024"),
        (D(2024, 8, 3), True, "08/03/2024"),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Dates are written DD/MM/YYYY. Signed 08/03/2024.", D(2024, 3, 8)),
        ("All dates (day/month/year): 08/03/2024", D(2024, 3, 8)),
        ("Format: MM/DD/YYYY. Signed 08/03/2024.", D(2024, 8, 3)),
        ("Signed 08/03/2024, paid 25/03/2024.", D(2024, 3, 8)),  # a sibling with day 25
        ("Signed 08/03/2024, paid 03/25/2024.", D(2024, 8, 3)),  # a sibling with day 25 second
    ],
    ids=["stated-DD/MM", "stated-day/month", "stated-MM/DD", "sibling-day-first", "sibling-month-first"],
)
def test_the_document_settles_the_order(text, expected):
    assert _dates(text)[0] == (expected, False)


def test_conflicting_siblings_leave_it_ambiguous():
    dates = _dates("Signed 08/03/2024; 25/03/2024; 03/25/2024.")
    assert dates[:2] == [(D(2024, 3, 8), True), (D(2024, 8, 3), True)]


def test_caller_order_beats_the_document():
    assert _dates("Format: MM/DD/YYYY. Signed 08/03/2024.", day_first=True) == [(D(2024, 3, 8), False)]
    assert _dates("Signed 08/03/2024.", day_first=False) == [(D(2024, 8, 3), False)]


def test_a_date_valid_one_way_is_read_that_way():
    assert _dates("paid 03/25/2024", day_first=True) == [(D(2024, 3, 25), False)]
    assert _dates("paid 25/03/2024", day_first=False) == [(D(2024, 3, 25), False)]


@pytest.mark.parametrize(
    "text",
    ["31/02/2024", "2024-13-01", "00/00/0000", "30 February 2024", "February 30, 2023", "08/03/24"],
)
def test_bad_dates_are_not_mentions_nor_numbers(text):
    assert find_mentions(f"due {text} at the latest") == []


def test_numbers_in_a_date_are_not_numbers():
    kinds = [m.kind for m in find_mentions("March 8, 2024 and 8 March 2024 and 2024-03-08 and 08/13/2024")]
    assert kinds == ["date", "date", "date", "date"]


# Properties.

_FRAGMENTS = st.sampled_from(
    [
        "fifteen (15)", " days", "2024-03-08", "08/03/2024", "$16,000", "5%", "thirty-one", " and ",
        "(", ")", " ", ",", ".", "/", "-", "1", "12", "March", " 8, ", "2024", "percent", "one",
        "hundred", "weeks", "USD", "business", "31/02/2024", "\n", "x",
    ]
)  # fmt: skip


@given(st.lists(_FRAGMENTS, max_size=30).map("".join) | st.text(max_size=80))
def test_offsets_slice_to_the_mention(text):
    mentions = find_mentions(text)
    assert all(text[m.start : m.end] == m.text and m.start < m.end for m in mentions)
    for before, after in zip(mentions, mentions[1:]):
        same_date = (before.start, before.end) == (after.start, after.end) and before.ambiguous
        assert same_date or before.end <= after.start


_SMALL = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen \
sixteen seventeen eighteen nineteen".split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()


def _in_words(n: int) -> str:
    """A test-side speller for 1..999,999,999 ("one hundred and twenty"), independent of the parser."""
    parts = []
    for scale, name in ((10**6, " million"), (10**3, " thousand"), (1, "")):
        group, n = divmod(n, scale)
        if group:
            hundreds, rest = divmod(group, 100)
            words = [f"{_SMALL[hundreds]} hundred"] if hundreds else []
            if rest >= 20:
                words.append(_TENS[rest // 10 - 2] + (f"-{_SMALL[rest % 10]}" if rest % 10 else ""))
            elif rest:
                words.append(_SMALL[rest])
            parts.append(" and ".join(words) + name)
    return " ".join(parts)


@given(st.integers(1, 999_999_999))
def test_numbers_in_words_and_digits_read_back(n):
    assert _triples(find_mentions(f"pay {_in_words(n)} now")) == [("number", n, _in_words(n))]
    assert _triples(find_mentions(f"pay ${n:,} now")) == [("number", n, f"${n:,}")]


_FORMATS = [
    lambda d: d.isoformat(),
    lambda d: f"{d.day} {d.strftime('%B')} {d.year}",
    lambda d: f"{d.strftime('%B')} {d.day}, {d.year}",
    lambda d: f"{d.strftime('%b')}. {d.day}, {d.year}",
]


@given(st.dates(D(1900, 1, 1), D(2199, 12, 31)), st.sampled_from(range(len(_FORMATS))))
def test_dates_read_back(day, form):
    written = _FORMATS[form](day)
    assert _triples(find_mentions(f"dated {written}.")) == [("date", day, written)]
