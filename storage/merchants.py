"""SQL for merchants and API keys."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
from fgcpay.domain.merchants import ApiKey, Merchant

from ._database import LockKey, Row, Tx, batched, locks
from ._status import guarded_update

_KEY_COLUMNS = (
    "id, merchant_id, key_hash, prefix, last4, created_at, last_used_at, revoked_at, name"
)


def _merchant(row: Row) -> Merchant:
    return Merchant(
        id=row["id"],
        name=row["name"],
        email=row["email"],
        created_at=row["created_at"],
        password_hash=row["password_hash"],
    )


def _api_key(row: Row) -> ApiKey:
    return ApiKey(
        id=row["id"],
        merchant_id=row["merchant_id"],
        key_hash=row["key_hash"],
        prefix=row["prefix"],
        last4=row["last4"],
        created_at=row["created_at"],
        last_used_at=row["last_used_at"],
        revoked_at=row["revoked_at"],
        name=row["name"],
    )


def insert_merchant(tx: Tx, merchant: Merchant, key: ApiKey | None) -> bool:
    """Insert the merchant (and its first key); False when the email is taken."""
    inserted = tx.execute(
        "INSERT INTO merchants (id, name, email, password_hash, created_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (email) DO NOTHING",
        merchant.id,
        merchant.name,
        merchant.email,
        merchant.password_hash,
        merchant.created_at,
    )
    if not inserted:
        return False
    if key is not None:
        insert_api_key(tx, key)
    return True


def insert_api_key(tx: Tx, key: ApiKey, form_token_hash: str | None = None) -> bool:
    """Insert `key`; whether it was. `form_token_hash`: the SHA-256 of the one-use token of
    the dashboard form that made it (the operator's keys have none): a form that made a
    key already inserts nothing, the unique index deciding in this very statement."""
    return bool(
        tx.execute(
            f"INSERT INTO api_keys ({_KEY_COLUMNS}, form_token_hash)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (merchant_id, form_token_hash) DO NOTHING",
            key.id,
            key.merchant_id,
            key.key_hash,
            key.prefix,
            key.last4,
            key.created_at,
            key.last_used_at,
            key.revoked_at,
            key.name,
            form_token_hash,
        )
    )


def _keys_of_merchant(key: ApiKey) -> list[LockKey]:
    return [("api_keys", key.merchant_id)]


def active_api_keys(tx: Tx, merchant_id: str) -> int:
    """How many of the merchant's keys are not revoked (`domain.limits`)."""
    return int(
        tx.fetchval(
            "SELECT COUNT(*) FROM api_keys WHERE merchant_id = ? AND revoked_at IS NULL",
            merchant_id,
        )
    )


@locks(_keys_of_merchant)
def insert_api_key_within(tx: Tx, key: ApiKey, most: int) -> bool:
    """Insert `key` unless its merchant has `most` active keys already; whether it did.

    Two processes adding the merchant's last key must not both count a place free: on
    PostgreSQL the writer takes the merchant's key (declared with `locks`) before the
    group runs, so the second waits, then counts (as `event_stream.open_stream`)."""
    if active_api_keys(tx, key.merchant_id) >= most:
        return False
    insert_api_key(tx, key)
    return True


@locks(_keys_of_merchant)
def insert_api_key_once(tx: Tx, key: ApiKey, form_token_hash: str, most: int) -> ApiKey | None:
    """Insert `key`, made by the dashboard form whose one-use token hashes to
    `form_token_hash`, unless that form already made one: then nothing is inserted and
    the key it made is returned (`key` itself when inserted). None, and nothing inserted,
    when the form made none and the merchant has `most` active keys already. The
    merchant's lock (`locks`, taken before the group on PostgreSQL) makes the two sends
    of one form, and two forms at the bound, on any processes, wait for each other; the
    unique index would still decide between two sends of one form."""
    made = _made_by_form(tx, key.merchant_id, form_token_hash)
    if made is not None:
        return made
    if active_api_keys(tx, key.merchant_id) >= most:
        return None
    if insert_api_key(tx, key, form_token_hash):
        return key
    made = _made_by_form(tx, key.merchant_id, form_token_hash)
    assert made is not None, "the conflicting row is committed and never deleted"
    return made


def _made_by_form(tx: Tx, merchant_id: str, form_token_hash: str) -> ApiKey | None:
    row = tx.fetchrow(
        f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE merchant_id = ? AND form_token_hash = ?",
        merchant_id,
        form_token_hash,
    )
    return None if row is None else _api_key(row)


def merchant_by_id(tx: Tx, merchant_id: str) -> Merchant | None:
    row = tx.fetchrow("SELECT * FROM merchants WHERE id = ?", merchant_id)
    return None if row is None else _merchant(row)


def all_merchants(tx: Tx) -> list[Merchant]:
    """Every merchant account (`fgcpay merchant list`); sandboxes' own merchants are
    listed with their parent's sandboxes instead (`fgcpay sandbox list`)."""
    rows = tx.fetch("SELECT * FROM merchants WHERE sandbox_of IS NULL ORDER BY created_at, id")
    return [_merchant(row) for row in rows]


def merchant_by_email(tx: Tx, email: str) -> Merchant | None:
    row = tx.fetchrow("SELECT * FROM merchants WHERE email = ?", email)
    return None if row is None else _merchant(row)


_KEY_AND_MERCHANT = (
    "SELECT k.id, k.merchant_id, k.key_hash, k.prefix, k.last4, k.created_at,"
    " k.last_used_at, k.revoked_at, k.name, m.name AS merchant_name, m.email,"
    " m.password_hash, m.created_at AS merchant_created_at"
    " FROM api_keys k JOIN merchants m ON m.id = k.merchant_id WHERE k.key_hash"
)


def _key_and_merchant(row: Row) -> tuple[ApiKey, Merchant]:
    merchant = Merchant(
        id=row["merchant_id"],
        name=row["merchant_name"],
        email=row["email"],
        created_at=row["merchant_created_at"],
        password_hash=row["password_hash"],
    )
    return _api_key(row), merchant


def _api_keys_by_hash(
    tx: Tx, calls: Sequence[tuple[Any, ...]]
) -> list[tuple[ApiKey, Merchant] | None]:
    """The batched form of `api_key_by_hash`: every request's lookup in one statement
    (PostgreSQL's grouped reader runs the lookups queued together through it: under load,
    many requests carry the same few keys)."""
    wanted = list(dict.fromkeys(str(call[0]) for call in calls))
    if tx.dialect == "postgresql":
        rows = tx.fetch(f"{_KEY_AND_MERCHANT} = ANY(?::text[])", wanted)
    else:
        rows = tx.fetch(f"{_KEY_AND_MERCHANT} IN ({', '.join('?' * len(wanted))})", *wanted)
    found = {row["key_hash"]: _key_and_merchant(row) for row in rows}
    return [found.get(str(call[0])) for call in calls]


@batched(_api_keys_by_hash)
def api_key_by_hash(tx: Tx, key_hash: str) -> tuple[ApiKey, Merchant] | None:
    row = tx.fetchrow(f"{_KEY_AND_MERCHANT} = ?", key_hash)
    return None if row is None else _key_and_merchant(row)


def api_keys_of(tx: Tx, merchant_id: str) -> list[ApiKey]:
    """Every key of the merchant, revoked ones included (`fgcpay key list`)."""
    rows = tx.fetch(
        f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE merchant_id = ? ORDER BY created_at DESC, id DESC",
        merchant_id,
    )  # fmt: skip
    return [_api_key(row) for row in rows]


@attrs.frozen
class KeysShown:
    """The keys page's keys: every active one (bounded by `domain.limits`), the most
    recently revoked, and how many revoked ones are not shown."""

    active: list[ApiKey]
    revoked: list[ApiKey]
    revoked_not_shown: int


def api_keys_shown(tx: Tx, merchant_id: str, most_revoked: int) -> KeysShown:
    active = tx.fetch(
        f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE merchant_id = ? AND revoked_at IS NULL"
        " ORDER BY created_at DESC, id DESC",
        merchant_id,
    )
    revoked = tx.fetch(
        f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE merchant_id = ? AND revoked_at IS NOT NULL"
        " ORDER BY revoked_at DESC, id DESC LIMIT ?",
        merchant_id,
        most_revoked,
    )
    all_revoked = int(
        tx.fetchval(
            "SELECT COUNT(*) FROM api_keys WHERE merchant_id = ? AND revoked_at IS NOT NULL",
            merchant_id,
        )
    )
    return KeysShown(
        active=[_api_key(row) for row in active],
        revoked=[_api_key(row) for row in revoked],
        revoked_not_shown=all_revoked - len(revoked),
    )


def touch_api_key(tx: Tx, merchant_id: str, key_id: str, now_us: int) -> None:
    """Record the key's use at `now_us` (never moving it back), for the dashboard. Every
    process touches each key it serves once a minute, and a group may hold several keys'
    rows: on PostgreSQL a key another transaction is writing now is passed over rather
    than waited for (`guarded_update`'s `give_way`), so a touch never waits in a circle
    (storage/_database.py, "the lock order")."""
    guarded_update(
        tx, "api_keys", "last_used_at = ?", (now_us,), key_id,
        "(last_used_at IS NULL OR last_used_at < ?)", (now_us,), give_way=True,
        merchant_id=merchant_id,
    )  # fmt: skip


def revoke_api_key(tx: Tx, merchant_id: str, key_id: str, now_us: int) -> bool:
    changed = tx.execute(
        "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND merchant_id = ? AND revoked_at IS NULL",
        now_us,
        key_id,
        merchant_id,
    )
    return changed > 0


def set_password_hash(tx: Tx, merchant_id: str, password_hash: str, end_sessions: bool) -> bool:
    """Replace the merchant's dashboard password, and with `end_sessions` (a reset) end
    every dashboard session of the merchant; False for an unknown merchant."""
    changed = tx.execute(
        "UPDATE merchants SET password_hash = ? WHERE id = ?", password_hash, merchant_id
    )
    if changed and end_sessions:
        tx.execute("DELETE FROM dashboard_sessions WHERE merchant_id = ?", merchant_id)
    return changed > 0


def api_key_of(tx: Tx, merchant_id: str, key_id: str) -> ApiKey | None:
    """The merchant's key `key_id`; None for an unknown id or another merchant's key."""
    row = tx.fetchrow(
        f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE id = ? AND merchant_id = ?",
        key_id,
        merchant_id,
    )
    return None if row is None else _api_key(row)
