"""API keys: created once and shown once, stored only as a SHA-256 hash, each with one scope."""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from .moments import as_utc
from .schema import SCOPES, ApiKey, utcnow

KEY_PREFIX = "dek_"  # makes a leaked key recognisable in logs and secret scanners
PREFIX_CHARS = 8  # how much of a key is kept in clear, to tell keys apart
LAST_USED_EVERY = dt.timedelta(minutes=1)  # last use is recorded to the minute: one write a minute per key at most

__all__ = [
    "SCOPES", "KeyIdentity", "KeyInfo", "allows", "authenticate", "create_key", "list_keys", "revoke_key", "scope_of"
]


@dataclass(frozen=True)
class KeyIdentity:
    """Who a request authenticated as."""

    id: int
    scope: str


@dataclass(frozen=True)
class KeyInfo:
    """What `keys list` shows of a key: never the key itself."""

    id: int
    prefix: str
    scope: str
    created_at: dt.datetime
    last_used_at: dt.datetime | None
    expires_at: dt.datetime | None
    revoked_at: dt.datetime | None

    def state(self, now: dt.datetime) -> str:
        """active, expired or revoked."""
        if self.revoked_at is not None:
            return "revoked"
        return "expired" if self.expires_at is not None and self.expires_at <= now else "active"


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def create_key(session: Session, scope: str, expires_in: dt.timedelta | None = None) -> tuple[int, str]:
    """Create a key with `scope` (valid for `expires_in`, or until revoked) and commit; returns (id, key).
    The key itself is not stored."""
    if scope not in SCOPES:
        raise ValueError(f"unknown scope {scope!r}; use one of {', '.join(SCOPES)}")
    if expires_in is not None and expires_in <= dt.timedelta(0):
        raise ValueError("a key must be valid for some time: give a positive duration")
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    now = utcnow()
    row = ApiKey(
        prefix=key[:PREFIX_CHARS],
        key_hash=_hash(key),
        scope=scope,
        created_at=now,
        expires_at=None if expires_in is None else now + expires_in,
    )
    session.add(row)
    session.commit()
    return row.id, key


def authenticate(session: Session, key: str) -> KeyIdentity | None:
    """The identity of a valid key (unrevoked, unexpired), noting its use; None for any other string."""
    if not key or not key.startswith(KEY_PREFIX):
        return None
    row = session.execute(
        select(ApiKey.id, ApiKey.scope, ApiKey.expires_at, ApiKey.last_used_at).where(
            ApiKey.key_hash == _hash(key), ApiKey.revoked_at.is_(None)
        )
    ).one_or_none()
    now = utcnow()
    if row is None or (row.expires_at is not None and as_utc(row.expires_at) <= now):
        return None
    if row.last_used_at is None or now - as_utc(row.last_used_at) >= LAST_USED_EVERY:
        session.execute(update(ApiKey).where(ApiKey.id == row.id).values(last_used_at=now))
        session.commit()
    return KeyIdentity(id=row.id, scope=row.scope)


def list_keys(session: Session) -> list[KeyInfo]:
    """Every key ever created, oldest first, revoked and expired ones included."""
    rows = session.scalars(select(ApiKey).order_by(ApiKey.id))
    return [
        KeyInfo(
            id=row.id,
            prefix=row.prefix,
            scope=row.scope,
            created_at=as_utc(row.created_at),
            last_used_at=as_utc(row.last_used_at),
            expires_at=as_utc(row.expires_at),
            revoked_at=as_utc(row.revoked_at),
        )
        for row in rows
    ]


def scope_of(session: Session, key_id: int) -> str | None:
    """The scope of the valid key with this id; None when it is revoked, expired or unknown."""
    row = session.execute(
        select(ApiKey.scope, ApiKey.expires_at).where(ApiKey.id == key_id, ApiKey.revoked_at.is_(None))
    ).one_or_none()
    if row is None or (row.expires_at is not None and as_utc(row.expires_at) <= utcnow()):
        return None
    return row.scope


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

