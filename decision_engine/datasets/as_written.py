"""Values asked as written: generated training documents asked for a date, amount or count they state.

The domain generators mostly ask for deadlines and totals, values one step from a mention, so a
value chooser fitted on them alone learns that "on what date did ..." wants a date plus a period.
Each domain's case also records a few questions whose answer is a value its document writes as it is
(when the tenant moved out, how much was claimed; `Case.ask_as_written`). A line here is a
generated training document with one to three of those questions whose value the document really
writes, in the samples format with labels, so `fit-chooser --as-written N` trains on them beside the
generated groups.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from typing import Any

from .domains.common import Wording
from .linked_groups import reworded_cases

MAX_ASKED = 3
LONG_DATES = Wording(0, long_dates=True, currency="")  # how the generator writes "4 March 2024"


def written_in(text: str, value: Any) -> bool:
    """Whether `text` writes `value` (an ISO date in either of the generator's date styles, or an integer
    with or without thousands separators) as a whole mention."""
    if isinstance(value, str):
        forms = (value, LONG_DATES.date(dt.date.fromisoformat(value)))
    else:
        forms = (f"{value:,}", str(value))
    return any(re.search(rf"(?<![\d,.]){re.escape(form)}(?!\d|[,.]\d)", text) for form in forms)


def as_written_line(seed: int, index: int) -> dict[str, Any] | None:
    """Generated training group `index` of draw `seed` asked up to three of its values as written, or
    None where its document writes none of them."""
    name, text, case, _ = reworded_cases("train", seed, index, ())
    asked = [(qid, *spec) for qid, spec in case.as_written.items() if written_in(text, spec[1])]
    if not asked:
        return None
    rng = random.Random(f"as-written:{seed}:{index}")
    chosen = rng.sample(asked, rng.randint(1, min(MAX_ASKED, len(asked))))
    request_id = f"as-written-{name}-{seed}-{index}"
    return {
        "id": request_id,
        "document": {"text": text, "id": f"doc-{request_id}"},
        "questions": [{"id": qid, "text": rng.choice(texts), "schema": dict(schema)} for qid, schema, _, texts in chosen],
        "mode": "joint",
        "labels": {qid: value for qid, _, value, _ in chosen},
        "domain": name,
    }


def as_written_groups(count: int, seed: int = 0) -> list[dict[str, Any]]:
    """Up to `count` lines (`as_written_line`) from the first `count` training groups of draw `seed`;
    the same arguments give the same lines."""
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    lines = (as_written_line(seed, i) for i in range(count))
    return [line for line in lines if line is not None]
