"""Joined documents: training documents filed with others about other matters, labels kept true."""

from __future__ import annotations

import pytest

from decision_engine.cli import main
from decision_engine.datasets.joined_documents import SEPARATOR, joined_documents
from decision_engine.datasets.linked_groups import generate_groups


def _line(domain: str, ident: str, text: str, questions=("q",), evidence=None) -> dict:
    line = {
        "id": ident, "domain": domain, "document": {"text": text},
        "questions": [{"id": q, "text": f"{q}?", "schema": {"type": "boolean"}} for q in questions],
        "labels": {q: True for q in questions},
    }
    if evidence is not None:
        line["evidence"] = evidence
    return line


def test_no_share_leaves_every_line_as_it_was():
    lines = generate_groups("train", 6, seed=3)
    assert joined_documents(lines, 0.0) == lines


def test_a_joined_document_keeps_its_own_text_questions_and_labels():
    lines = generate_groups("train", 12, seed=3)
    joined = joined_documents(lines, 1.0, seed=1)
    changed = 0
    for before, after in zip(lines, joined):
        assert after["questions"] == before["questions"] and after["labels"] == before["labels"]
        assert after.get("rules") == before.get("rules")
        assert before["document"]["text"] in after["document"]["text"]
        if after is not before:
            changed += 1
            assert len(after["document"]["text"]) > len(before["document"]["text"])
    assert changed >= 10  # only a line with no unrelated partner among those drawn stays alone


def test_documents_of_the_same_matter_are_never_joined():
    a = _line("lease", "a", "LEASE ONE")
    b = _line("lease", "b", "LEASE TWO")
    c = _line("nda", "c", "NDA ONE", questions=("q",))  # another domain but the same question id
    assert joined_documents([a, b, c], 1.0, seed=0) == [a, b, c]


def test_gold_evidence_moves_with_the_document_text():
    own = _line("lease", "own", "0123456789", evidence={"q": [[2, 5]]})
    others = [_line(f"d{i}", f"o{i}", f"OTHER{i}", questions=(f"x{i}",)) for i in range(4)]
    for seed in range(10):
        joined = joined_documents([own, *others], 1.0, seed=seed)[0]
        text = joined["document"]["text"]
        start = text.index("0123456789")
        assert joined["evidence"] == {"q": [[start + 2, start + 5]]}
        assert text[start + 2 : start + 5] == "234"
        assert all(part for part in text.split(SEPARATOR))


@pytest.mark.parametrize("share", [-0.1, 1.5])
def test_a_share_outside_zero_to_one_is_refused(share):
    with pytest.raises(ValueError, match="between 0 and 1"):
        joined_documents([], share)


def test_fit_chooser_refuses_a_bad_share_before_loading_anything(capsys, tmp_path):
    assert main(["fit-chooser", "--out", str(tmp_path / "c"), "--join-documents", "2"]) == 2
    assert "--join-documents must be between 0 and 1" in capsys.readouterr().err
