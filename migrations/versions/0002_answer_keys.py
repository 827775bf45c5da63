"""Answer keys: answers and labels keep their kind's comparison key, so SQL compares like the engine.

Every value stored before this revision belongs to a built-in kind (enum, boolean, integer,
date), whose key is the value's canonical JSON, which is what `value_json` already holds;
the backfill copies it.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("answers", "labels")


def upgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("value_key", sa.Text(), nullable=True))
        op.execute(sa.text(f"UPDATE {table} SET value_key = value_json"))
        with op.batch_alter_table(table) as batch:
            batch.alter_column("value_key", existing_type=sa.Text(), nullable=False)


def downgrade() -> None:
    for table in reversed(TABLES):
        with op.batch_alter_table(table) as batch:
            batch.drop_column("value_key")
