"""Store fixtures: a migrated store on SQLite (a temporary file) and on PostgreSQL (a fresh database).

`tests/conftest.py` imports the fixtures (listed in `__all__`); tests import the builders.
PostgreSQL tests are skipped when the server is unreachable, except under CI (the `CI`
variable), where they fail.
"""

from __future__ import annotations

import os
import secrets

import pytest
import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from decision_engine.store.database import create_db_engine, session_factory
from decision_engine.store.migrate import upgrade
from decision_engine.types import Answer as WireAnswer
from decision_engine.types import AnswerSchema, DecisionRequest, DecisionResponse, Document, Evidence, Question, Rule

__all__ = ["postgres_database", "store_url", "bare_store_engine", "store_engine", "store_sessions", "store_session"]

# Override with TEST_POSTGRES_URL; otherwise the local server's `test` database as postgres or root.
POSTGRES_URLS = (
    [os.environ["TEST_POSTGRES_URL"]]
    if os.environ.get("TEST_POSTGRES_URL")
    else ["postgresql+psycopg://postgres@127.0.0.1:5432/test", "postgresql+psycopg://root@127.0.0.1:5432/test"]
)

QUESTIONS = [
    Question(
        id="q1",
        text="Does the agreement require confidentiality?",
        schema=AnswerSchema(type="string", enum=["Entailment", "Contradiction", "NotMentioned"]),
    ),
    Question(id="q2", text="Do the obligations survive termination?", schema=AnswerSchema(type="boolean")),
    Question(id="q3", text="How many days of notice?", schema=AnswerSchema(type="integer", minimum=0, maximum=365)),
    Question(
        id="q4",
        text="When does the agreement take effect?",
        schema=AnswerSchema(type="string", format="date", formatMinimum="2000-01-01", formatMaximum="2030-12-31"),
    ),
]
VALUES = {"q1": "Entailment", "q2": True, "q3": 30, "q4": "2024-01-31"}
TEXT = "The Recipient shall keep the Information confidential for 30 days after termination, from 31 January 2024."


def make_request(text: str = TEXT, questions: list[Question] = QUESTIONS, title: str | None = "NDA") -> DecisionRequest:
    """A request over `questions` with one rule, as a client would send it."""
    return DecisionRequest(
        document=Document(text=text, title=title),
        questions=list(questions),
        rules=[Rule(if_={"q1": ["Contradiction"]}, then={"q2": [False]})],
    )


def make_response(
    values: dict, *, model: str = "tiny", mode: str = "joint", steps: int = 3, fixed_by: dict | None = None
) -> DecisionResponse:
    """A response answering each question id in `values`; the first answer carries evidence. `fixed_by`
    names what settled an answer by question id (default: the model)."""
    answers = [
        WireAnswer(
            id=question_id,
            value=value,
            confidence=0.5 + 0.1 * i,
            step=i + 1,
            fixed_by=(fixed_by or {}).get(question_id, "model"),
            evidence=[Evidence(start=0, end=14, text="The Recipient ", score=1.5)] if i == 0 else None,
        )
        for i, (question_id, value) in enumerate(values.items())
    ]
    return DecisionResponse(answers=answers, mode=mode, steps=steps, passes=steps, model=model, timings_ms={"total": 12.5})


@pytest.fixture(scope="session")
def postgres_database():
    """An AUTOCOMMIT engine on a fresh database `de_test_<hex>`, dropped after the session."""
    problems = []
    for url in POSTGRES_URLS:
        admin = sa.create_engine(
            url, isolation_level="AUTOCOMMIT", poolclass=NullPool, connect_args={"connect_timeout": 3}
        )
        try:
            with admin.connect() as connection:
                name = f"de_test_{secrets.token_hex(6)}"
                connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
        except sa.exc.OperationalError as error:
            problems.append(f"{admin.url.render_as_string()}: {str(error.orig).strip().splitlines()[0]}")
            continue
        engine = sa.create_engine(admin.url.set(database=name), isolation_level="AUTOCOMMIT", poolclass=NullPool)
        try:
            yield engine
        finally:
            engine.dispose()
            with admin.connect() as connection:
                connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        return
    message = "PostgreSQL is unreachable: " + "; ".join(problems)
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    """The URL of an empty store: a temporary SQLite file, or on PostgreSQL an empty schema of the
    session's fresh database (a schema per test is much faster to create than a database)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.sqlite3'}"
        return
    database = request.getfixturevalue("postgres_database")
    schema = f"t_{secrets.token_hex(6)}"
    with database.connect() as connection:
        connection.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    try:
        url = database.url.update_query_dict({"options": f"-csearch_path={schema}"})
        yield url.render_as_string(hide_password=False)
    finally:
        with database.connect() as connection:
            connection.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))


@pytest.fixture
def bare_store_engine(store_url):
    """An engine on the empty database, not migrated."""
    engine = create_db_engine(store_url)
    yield engine
    engine.dispose()


@pytest.fixture
def store_engine(bare_store_engine):
    """An engine on a database migrated to head."""
    upgrade(bare_store_engine)
    return bare_store_engine


@pytest.fixture
def store_sessions(store_engine):
    """The session factory of the migrated store."""
    return session_factory(store_engine)


@pytest.fixture
def store_session(store_sessions):
    """One session on the migrated store."""
    with store_sessions() as session:
        yield session
