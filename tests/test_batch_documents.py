"""`decision-engine batch --documents DIR --checklist FILE`: one checklist asked of every document in a folder."""

from __future__ import annotations

import json
from pathlib import Path

from decision_engine.batch.inputs import document_paths
from decision_engine.cli import main
from decision_engine.store.database import create_db_engine, session_factory
from decision_engine.store.recording import find_idempotent, load_decision

from batch_helpers import read_jsonl, stored_ids

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
CHECKLIST = SAMPLES / "checklists" / "nda_checklist.json"
TEXT = "The Recipient shall keep the Information confidential for three years. English law governs this agreement."


def _folder(root: Path) -> Path:
    docs = root / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / ".git").mkdir()
    (docs / "a.txt").write_text(TEXT)
    (docs / "sub" / "b.md").write_text("# NDA\n\n" + TEXT)
    (docs / "c.json").write_text(json.dumps({"text": TEXT + " Letter C.", "title": "Letter C"}))
    (docs / "bad.txt").write_bytes(b"caf\xe9 au lait")  # Latin-1, not UTF-8
    (docs / "empty.md").write_text("  \n")
    (docs / "d.json").write_text('["no text key"]')
    (docs / ".hidden.txt").write_text(TEXT)  # hidden: not read
    (docs / ".git" / "x.txt").write_text(TEXT)
    (docs / "scan.pdf").write_bytes(b"%PDF-1.4")  # not a .txt/.md/.json: not read
    return docs


def _batch(docs, out, url, checklist=CHECKLIST):
    return main(["batch", "--documents", str(docs), "--checklist", str(checklist), "--out", str(out),
                 "--run", "docs", "--db", url, "--model", "tiny-random"])


def test_every_readable_document_is_decided_and_the_others_listed(tmp_path, capsys):
    docs, out, url = _folder(tmp_path), tmp_path / "out.jsonl", f"sqlite:///{tmp_path / 'store.sqlite3'}"
    assert [p.relative_to(docs).as_posix() for p in document_paths(docs)] == [
        "a.txt", "bad.txt", "c.json", "d.json", "empty.md", "sub/b.md"
    ]
    assert _batch(docs, out, url) == 2

    lines = read_jsonl(out)
    assert [line["id"] for line in lines] == ["a.txt", "c.json", "sub/b.md"]  # sorted path order
    questions = [q["id"] for q in json.loads(CHECKLIST.read_text())["questions"]]
    for line in lines:
        assert [a["id"] for a in line["answers"]] == questions and "labels" not in line
    errors = {error["path"]: error for error in read_jsonl(tmp_path / "out.errors.jsonl")}
    assert set(errors) == {"bad.txt", "d.json", "empty.md"}
    assert errors["bad.txt"]["id"] == "bad.txt" and "not valid UTF-8 (byte 3)" in errors["bad.txt"]["reason"]
    assert "must not be empty" in errors["empty.md"]["reason"]
    assert "document.text" in errors["d.json"]["reason"]

    assert stored_ids(url, "docs") == {"a.txt": 1, "c.json": 1, "sub/b.md": 1}
    engine = create_db_engine(url)
    try:
        with session_factory(engine)() as session:
            stored = load_decision(session, find_idempotent(session, "batch:docs:c.json", None))
            assert stored.document.text == TEXT + " Letter C." and stored.document.title == "Letter C"
            assert [q.id for q in stored.questions] == questions and len(stored.rules) == 2
    finally:
        engine.dispose()

    assert _batch(docs, out, url) == 2  # a rerun decides nothing and lists nothing twice
    assert "decided 0, skipped 3 (already done), errors 3" in capsys.readouterr().out
    assert len(read_jsonl(out)) == 3 and len(read_jsonl(tmp_path / "out.errors.jsonl")) == 3


def test_the_shipped_checklist_and_documents_decide_cleanly(tmp_path):
    out = tmp_path / "out.jsonl"
    assert _batch(SAMPLES / "documents", out, f"sqlite:///{tmp_path / 's.sqlite3'}") == 0
    names = sorted(p.name for p in (SAMPLES / "documents").iterdir())
    assert [line["id"] for line in read_jsonl(out)] == names and len(names) >= 2
    for line in read_jsonl(out):
        values = {a["id"]: a["value"] for a in line["answers"]}
        if values["third_party_disclosure"] is False:  # the checklist's rule holds
            assert values["disclosure_permitted"] == "no disclosure"


def test_an_invalid_checklist_is_fatal_and_named(tmp_path, capsys):
    checklist = json.loads(CHECKLIST.read_text())
    checklist["rules"].append({"if": {"no_such_question": [True]}, "then": {"mutual": [True]}})
    bad = tmp_path / "bad_checklist.json"
    bad.write_text(json.dumps(checklist))
    assert _batch(_folder(tmp_path), tmp_path / "out.jsonl", f"sqlite:///{tmp_path / 's.sqlite3'}", bad) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad_checklist.json: rules[2]" in err[0]
    assert not (tmp_path / "out.jsonl").exists()
