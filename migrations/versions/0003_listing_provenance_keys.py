"""What settled each answer, the client's document id, and API key expiry and last use.

`answers.fixed_by` says whether the model, a rule or the schema alone settled an answer. Answers stored
before this revision did not record it: those fixed before any forward pass (step 0) become "schema" when
their question's schema admits one value and "rule" otherwise; every other one becomes "model" (a rule
could also force an answer mid-run, which the old rows cannot tell).

`decision_groups.document_ref` keeps the request's `document.id`, indexed for the decision list's filter.
`api_keys` gains `expires_at` (None: never) and `last_used_at`.

decision_groups and api_keys are only added to and dropped from, never rebuilt: on SQLite, dropping a
parent table to rebuild it would cascade its children away or fail on their foreign keys.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-08
"""

import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("api_keys", sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("api_keys", sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("decision_groups", sa.Column("document_ref", sa.String(length=200), nullable=True))
    op.create_index(op.f("ix_decision_groups_document_ref"), "decision_groups", ["document_ref"])
    with op.batch_alter_table("answers") as batch:
        batch.add_column(sa.Column("fixed_by", sa.String(length=8), nullable=True))
    op.execute(sa.text("UPDATE answers SET fixed_by = CASE WHEN step = 0 THEN 'rule' ELSE 'model' END"))
    _mark_single_valued()
    with op.batch_alter_table("answers") as batch:
        batch.alter_column("fixed_by", existing_type=sa.String(length=8), nullable=False)
        batch.create_check_constraint(op.f("ck_answers_fixed_by"), "fixed_by IN ('model', 'rule', 'schema')")


def _single_valued(schema: dict) -> bool:
    """Whether an answer schema of the store admits exactly one value (as the kinds counted it then)."""
    if schema.get("enum") is not None:
        return len(schema["enum"]) == 1
    if schema.get("type") == "integer":
        return schema.get("minimum") is not None and schema.get("minimum") == schema.get("maximum")
    if schema.get("format") == "date":
        low, high = schema.get("formatMinimum"), schema.get("formatMaximum")
        return low is not None and low == high
    return False


def _mark_single_valued() -> None:
    connection = op.get_bind()
    rows = connection.execute(
        sa.text("SELECT a.id, q.schema FROM answers a JOIN questions q ON q.id = a.question_pk WHERE a.step = 0")
    ).all()
    ids = [answer_id for answer_id, schema in rows if _single_valued(json.loads(schema))]
    for start in range(0, len(ids), 500):
        connection.execute(
            sa.text("UPDATE answers SET fixed_by = 'schema' WHERE id IN :ids").bindparams(
                sa.bindparam("ids", expanding=True)
            ),
            {"ids": ids[start : start + 500]},
        )


def downgrade() -> None:
    with op.batch_alter_table("answers") as batch:
        batch.drop_constraint(op.f("ck_answers_fixed_by"), type_="check")
        batch.drop_column("fixed_by")
    op.drop_index(op.f("ix_decision_groups_document_ref"), table_name="decision_groups")
    op.drop_column("decision_groups", "document_ref")  # SQLite 3.35+: a plain DROP COLUMN, no rebuild
    op.drop_column("api_keys", "last_used_at")
    op.drop_column("api_keys", "expires_at")
