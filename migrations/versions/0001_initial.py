"""Initial schema: API keys, runs, documents, decision groups, questions, answers and labels.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "api_keys",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("prefix", sa.String(length=8), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("scope", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("scope IN ('decide', 'label', 'read', 'admin')", name=op.f("ck_api_keys_scope")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
        sa.UniqueConstraint("key_hash", name=op.f("uq_api_keys_key_hash")),
    )
    op.create_table(
        "documents",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("chars", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_documents")),
        sa.UniqueConstraint("sha256", name=op.f("uq_documents_sha256")),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("model_version", sa.String(length=200), nullable=False),
        sa.Column("mode", sa.String(length=16), nullable=False),
        sa.Column("dataset", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runs")),
        sa.UniqueConstraint(
            "name", "model", "model_version", "mode", "dataset",
            name=op.f("uq_runs_name_model_model_version_mode_dataset"),
        ),
    )
    op.create_table(
        "decision_groups",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("document_id", sa.Integer(), nullable=False),
        sa.Column("external_id", sa.String(length=200), nullable=True),
        sa.Column("idempotency_scope", sa.String(length=320), nullable=True),
        sa.Column("request_sha256", sa.String(length=64), nullable=False),
        sa.Column("api_key_id", sa.Integer(), nullable=True),
        sa.Column("steps", sa.Integer(), nullable=False),
        sa.Column("rules", sa.Text(), nullable=False),
        sa.Column("options", sa.Text(), nullable=False),
        sa.Column("timings", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["api_key_id"], ["api_keys.id"], name=op.f("fk_decision_groups_api_key_id_api_keys")),
        sa.ForeignKeyConstraint(
            ["document_id"], ["documents.id"], name=op.f("fk_decision_groups_document_id_documents")
        ),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name=op.f("fk_decision_groups_run_id_runs")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_decision_groups")),
        sa.UniqueConstraint("idempotency_scope", name=op.f("uq_decision_groups_idempotency_scope")),
    )
    op.create_index(op.f("ix_decision_groups_created_at"), "decision_groups", ["created_at"])
    op.create_index(op.f("ix_decision_groups_document_id"), "decision_groups", ["document_id"])
    op.create_index(op.f("ix_decision_groups_run_id"), "decision_groups", ["run_id"])
    op.create_table(
        "questions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("group_id", sa.String(length=32), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("question_id", sa.String(length=64), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("schema", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.CheckConstraint("kind IN ('enum', 'boolean', 'integer', 'date')", name=op.f("ck_questions_kind")),
        sa.ForeignKeyConstraint(
            ["group_id"], ["decision_groups.id"],
            name=op.f("fk_questions_group_id_decision_groups"), ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_questions")),
        sa.UniqueConstraint("group_id", "position", name=op.f("uq_questions_group_id_position")),
    )
    op.create_table(
        "answers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("question_pk", sa.Integer(), nullable=False),
        sa.Column("value_json", sa.Text(), nullable=False),
        sa.Column("confidence", sa.Float(), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("evidence", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["question_pk"], ["questions.id"], name=op.f("fk_answers_question_pk_questions"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_answers")),
        sa.UniqueConstraint("question_pk", name=op.f("uq_answers_question_pk")),
    )
    op.create_table(
        "label_history",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("question_pk", sa.Integer(), nullable=False),
        sa.Column("value_json", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("api_key_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["api_key_id"], ["api_keys.id"], name=op.f("fk_label_history_api_key_id_api_keys")),
        sa.ForeignKeyConstraint(
            ["question_pk"], ["questions.id"], name=op.f("fk_label_history_question_pk_questions"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_label_history")),
    )
    op.create_index(op.f("ix_label_history_question_pk"), "label_history", ["question_pk"])
    op.create_table(
        "labels",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("question_pk", sa.Integer(), nullable=False),
        sa.Column("value_json", sa.Text(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["question_pk"], ["questions.id"], name=op.f("fk_labels_question_pk_questions"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_labels")),
        sa.UniqueConstraint("question_pk", name=op.f("uq_labels_question_pk")),
    )


def downgrade() -> None:
    # Children before parents, so every foreign key's target still exists when its table goes.
    op.drop_table("labels")
    op.drop_index(op.f("ix_label_history_question_pk"), table_name="label_history")
    op.drop_table("label_history")
    op.drop_table("answers")
    op.drop_table("questions")
    op.drop_index(op.f("ix_decision_groups_run_id"), table_name="decision_groups")
    op.drop_index(op.f("ix_decision_groups_document_id"), table_name="decision_groups")
    op.drop_index(op.f("ix_decision_groups_created_at"), table_name="decision_groups")
    op.drop_table("decision_groups")
    op.drop_table("runs")
    op.drop_table("documents")
    op.drop_table("api_keys")
