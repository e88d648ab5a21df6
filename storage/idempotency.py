"""SQL for idempotency records.

A request's key is claimed by one request at a time, but a client that retries on another
connection claims it again in another process while the first still holds it (in its
claim, or in the write that completes it with the resource it created), and a group may
hold several keys: each function that locks a key's row declares it (`scope_keys`,
`completion_keys`), so two processes' writers take them in one order
(storage/_database.py, "the lock order"). The purge takes only rows nobody holds.
"""

from __future__ import annotations

import json

from fgcpay.domain.idempotency import (
    LOCK_US,
    RETENTION_US,
    Claim,
    Completion,
    IdempotencyLost,
    Scope,
    StoredResponse,
)

from ._database import LockKey, Tx, locks, skip_locked

_KEY = "merchant_id = ? AND method = ? AND path = ? AND idempotency_key = ?"


def _key_args(scope: Scope) -> tuple[str, str, str, str]:
    return scope.merchant_id, scope.method, scope.path, scope.key


def scope_keys(scope: Scope) -> list[LockKey]:
    """The lock key of the record of `scope` (`_database.locks`)."""
    return [("idempotency", scope.merchant_id, scope.method, scope.path, scope.key)]


def completion_keys(completion: Completion | None) -> list[LockKey]:
    """The lock key of the record `completion` completes, if any: for `complete` and each
    write that completes a request with the resource it creates."""
    return [] if completion is None else scope_keys(completion.scope)


@locks(scope_keys)
def claim(tx: Tx, scope: Scope, request_hash: str, owner: str, now_us: int) -> Claim:
    """Take the key for this request, unless a live record holds it.

    A record past its 24 hours, or an in-flight claim whose holder is gone, is taken over.
    """
    taken = tx.execute(
        "INSERT INTO idempotency_keys (merchant_id, method, path, idempotency_key, request_hash,"
        " state, owner, locked_until, created_at, expires_at)"
        " VALUES (?, ?, ?, ?, ?, 'in_flight', ?, ?, ?, ?)"
        " ON CONFLICT (merchant_id, method, path, idempotency_key) DO UPDATE SET"
        " request_hash = excluded.request_hash, state = 'in_flight', owner = excluded.owner,"
        " locked_until = excluded.locked_until, response_status = NULL, response_headers = NULL,"
        " response_body = NULL, created_at = excluded.created_at, expires_at = excluded.expires_at"
        " WHERE idempotency_keys.expires_at <= ?"
        " OR (idempotency_keys.state = 'in_flight' AND idempotency_keys.locked_until <= ?)",
        *_key_args(scope),
        request_hash,
        owner,
        now_us + LOCK_US,
        now_us,
        now_us + RETENTION_US,
        now_us,
        now_us,
    )
    if taken:
        return Claim(owned=True)
    row = tx.fetchrow(
        "SELECT state, request_hash, response_status, response_headers, response_body"
        f" FROM idempotency_keys WHERE {_KEY}",
        *_key_args(scope),
    )
    if row is None:  # deleted between the two statements (SQLite never gets here)
        return Claim(owned=False, state="in_flight", request_hash=request_hash)
    response = None
    if row["state"] == "done":
        response = StoredResponse(
            status=int(row["response_status"]),
            headers=json.loads(row["response_headers"]),
            body=row["response_body"],
        )
    return Claim(
        owned=False, state=row["state"], request_hash=row["request_hash"], response=response
    )


@locks(completion_keys)
def complete(tx: Tx, completion: Completion) -> None:
    """Store the final answer; raises `IdempotencyLost` if the claim was taken over."""
    response = completion.response
    changed = tx.execute(
        "UPDATE idempotency_keys SET state = 'done', response_status = ?, response_headers = ?,"
        f" response_body = ? WHERE {_KEY} AND owner = ? AND state = 'in_flight'",
        response.status,
        json.dumps(response.headers),
        response.body,
        *_key_args(completion.scope),
        completion.owner,
    )
    if changed != 1:
        raise IdempotencyLost()


@locks(scope_keys)
def release(tx: Tx, scope: Scope, owner: str) -> None:
    """Give up a claim whose request ended without a final answer (so a retry may run)."""
    tx.execute(
        f"DELETE FROM idempotency_keys WHERE {_KEY} AND owner = ? AND state = 'in_flight'",
        *_key_args(scope),
        owner,
    )


def purge_expired(tx: Tx, now_us: int, limit: int) -> int:
    """Delete at most `limit` records past their 24 hours; how many. On PostgreSQL it
    passes over a record another transaction holds (a retry taking it over now): never
    waiting, it never waits in a circle (the next purge takes what is left)."""
    return tx.execute(
        "DELETE FROM idempotency_keys WHERE (merchant_id, method, path, idempotency_key) IN"
        " (SELECT merchant_id, method, path, idempotency_key FROM idempotency_keys"
        f"  WHERE expires_at <= ? LIMIT ?{skip_locked(tx)})",
        now_us,
        limit,
    )
