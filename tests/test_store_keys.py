"""API keys: shown once, stored as a hash, scoped, revocable."""

from __future__ import annotations

import hashlib

import pytest
from sqlalchemy import select

from decision_engine.store.keys import SCOPES, KeyIdentity, allows, authenticate, create_key, revoke_key
from decision_engine.store.schema import ApiKey


def test_created_key_authenticates_with_its_scope(store_session):
    key_id, key = create_key(store_session, "label")
    assert key.startswith("dek_") and len(key) > 40
    assert authenticate(store_session, key) == KeyIdentity(id=key_id, scope="label")
    other_id, other = create_key(store_session, "read")
    assert other != key and authenticate(store_session, other) == KeyIdentity(id=other_id, scope="read")


def test_only_a_hash_and_a_short_prefix_are_stored(store_session):
    key_id, key = create_key(store_session, "decide")
    row = store_session.execute(select(ApiKey.prefix, ApiKey.key_hash).where(ApiKey.id == key_id)).one()
    assert row.prefix == key[:8]
    assert row.key_hash == hashlib.sha256(key.encode()).hexdigest()


def test_wrong_keys_are_refused(store_session):
    _, key = create_key(store_session, "admin")
    for wrong in ["", "dek_", "dek_not-a-key", "Bearer " + key, key[:-1], key + "x", key.upper()]:
        assert authenticate(store_session, wrong) is None, wrong


def test_revoked_key_is_refused(store_session):
    key_id, key = create_key(store_session, "decide")
    assert revoke_key(store_session, key_id) is True
    assert authenticate(store_session, key) is None
    assert revoke_key(store_session, key_id) is False
    assert revoke_key(store_session, 9999) is False


def test_unknown_scope_is_refused(store_session):
    with pytest.raises(ValueError, match="decide, label, read, admin"):
        create_key(store_session, "root")
    assert store_session.scalars(select(ApiKey)).all() == []


def test_scopes():
    assert SCOPES == ("decide", "label", "read", "admin")
    for needed in SCOPES:
        assert allows("admin", needed)
        for held in SCOPES:
            if held != "admin":
                assert allows(held, needed) == (held == needed)


def test_a_key_expires_and_its_last_use_is_kept_to_the_minute(store_session):
    import datetime as dt

    from sqlalchemy import update

    from decision_engine.store.keys import list_keys, scope_of
    from decision_engine.store.schema import utcnow

    key_id, key = create_key(store_session, "read", dt.timedelta(days=1))
    forever_id, _ = create_key(store_session, "admin")
    with pytest.raises(ValueError):
        create_key(store_session, "read", dt.timedelta(0))
    before = {k.id: k for k in list_keys(store_session)}
    assert before[key_id].last_used_at is None and before[key_id].state(utcnow()) == "active"
    assert dt.timedelta(hours=23) < before[key_id].expires_at - before[key_id].created_at <= dt.timedelta(days=1)
    assert before[forever_id].expires_at is None

    assert authenticate(store_session, key) == KeyIdentity(id=key_id, scope="read")
    first_use = {k.id: k for k in list_keys(store_session)}[key_id].last_used_at
    assert first_use is not None
    assert authenticate(store_session, key) is not None  # within the minute: not written again
    assert {k.id: k for k in list_keys(store_session)}[key_id].last_used_at == first_use

    store_session.execute(update(ApiKey).where(ApiKey.id == key_id).values(expires_at=utcnow() - dt.timedelta(seconds=1)))
    store_session.commit()
    assert authenticate(store_session, key) is None and scope_of(store_session, key_id) is None
    revoke_key(store_session, forever_id)
    states = {k.id: k.state(utcnow()) for k in list_keys(store_session)}
    assert states == {key_id: "expired", forever_id: "revoked"}
