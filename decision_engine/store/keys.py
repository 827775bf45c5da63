"""API keys: created once and shown once, stored only as a SHA-256 hash, each with one scope."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from .schema import SCOPES, ApiKey, utcnow

KEY_PREFIX = "dek_"  # makes a leaked key recognisable in logs and secret scanners
PREFIX_CHARS = 8  # how much of a key is kept in clear, to tell keys apart

__all__ = ["SCOPES", "KeyIdentity", "allows", "authenticate", "create_key", "revoke_key", "scope_of"]


@dataclass(frozen=True)
class KeyIdentity:
    """Who a request authenticated as."""

    id: int
    scope: str


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def create_key(session: Session, scope: str) -> tuple[int, str]:
    """Create a key with `scope` and commit; returns (id, key). The key itself is not stored."""
    if scope not in SCOPES:
        raise ValueError(f"unknown scope {scope!r}; use one of {', '.join(SCOPES)}")
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    row = ApiKey(prefix=key[:PREFIX_CHARS], key_hash=_hash(key), scope=scope, created_at=utcnow())
    session.add(row)
    session.commit()
    return row.id, key


def authenticate(session: Session, key: str) -> KeyIdentity | None:
    """The identity of a valid, unrevoked key; None for any other string."""
    if not key or not key.startswith(KEY_PREFIX):
        return None
    row = session.execute(
        select(ApiKey.id, ApiKey.scope).where(ApiKey.key_hash == _hash(key), ApiKey.revoked_at.is_(None))
    ).one_or_none()
    return None if row is None else KeyIdentity(id=row.id, scope=row.scope)


def scope_of(session: Session, key_id: int) -> str | None:
    """The scope of the unrevoked key with this id; None when it is revoked or unknown."""
    return session.scalar(select(ApiKey.scope).where(ApiKey.id == key_id, ApiKey.revoked_at.is_(None)))


def revoke_key(session: Session, key_id: int) -> bool:
    """Revoke a key by id and commit; False if no unrevoked key has this id."""
    result = session.execute(
        update(ApiKey).where(ApiKey.id == key_id, ApiKey.revoked_at.is_(None)).values(revoked_at=utcnow())
    )
    session.commit()
    return result.rowcount == 1


def allows(held: str, needed: str) -> bool:
    """Whether a key of scope `held` may do what needs scope `needed`; admin may do anything."""
    return held == "admin" or held == needed

