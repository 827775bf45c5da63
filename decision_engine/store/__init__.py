"""The SQL store of decisions, labels and API keys (SQLite or PostgreSQL, schema by Alembic)."""
