"""The storage contract, run against SQLite and PostgreSQL alike."""

from __future__ import annotations

import trio
from fgcpay.admin import create_merchant
from fgcpay.domain import ids, money
from fgcpay.domain.checkout import CheckoutSession
from fgcpay.domain.idempotency import Completion, IdempotencyLost, Scope, StoredResponse
from fgcpay.domain.merchants import new_api_key
from fgcpay.storage import Database, checkout_sessions, idempotency, merchants, open_database


async def test_merchant_and_key_round_trip(db: Database) -> None:
    created = await create_merchant(db, "Acme", "Owner@Example.com", "correct horse battery")
    found = await db.read(merchants.api_key_by_hash, ids.api_key_hash(created.api_key))
    assert found is not None
    key, merchant = found
    assert merchant.id == created.merchant.id
    assert merchant.email == "owner@example.com"
    assert key.revoked_at is None
    assert key.display.startswith("fp_test_") and key.display.endswith(created.api_key[-4:])


async def test_raw_key_is_not_stored(db: Database) -> None:
    created = await create_merchant(db, "Acme", "a@example.com")
    (key,) = await db.read(merchants.api_keys_of, created.merchant.id)
    assert created.api_key not in repr(key)
    assert key.key_hash == ids.api_key_hash(created.api_key)


async def test_duplicate_email_is_refused(db: Database) -> None:
    await create_merchant(db, "Acme", "dup@example.com")
    try:
        await create_merchant(db, "Other", "DUP@example.com")
    except Exception as error:
        assert "already exists" in str(error)
    else:
        raise AssertionError("a second merchant with the same email was created")


async def test_revoked_key_reads_revoked(db: Database) -> None:
    created = await create_merchant(db, "Acme", "r@example.com")
    (key,) = await db.read(merchants.api_keys_of, created.merchant.id)
    assert await db.write(merchants.revoke_api_key, created.merchant.id, key.id, 123)
    assert not await db.write(merchants.revoke_api_key, created.merchant.id, key.id, 456)
    found = await db.read(merchants.api_key_by_hash, key.key_hash)
    assert found is not None and found[0].revoked_at == 123


async def test_keys_looked_up_together_each_get_their_own_answer(db: Database) -> None:
    # Many requests' lookups at once: on PostgreSQL one grouped read answers them in one
    # statement, and each caller must still get its own key, revoked or not, or nothing.
    created = await create_merchant(db, "Acme", "many@example.com")
    keys = [new_api_key(created.merchant.id, n).record for n in range(40)]
    for key in keys:
        await db.write(merchants.insert_api_key, key)
    revoked = keys[::3]
    for key in revoked:
        assert await db.write(merchants.revoke_api_key, created.merchant.id, key.id, 7)
    asked = [key.key_hash for key in keys] * 2 + [ids.api_key_hash("fp_test_" + "Q" * 32)]
    answers: dict[int, object] = {}

    async def look_up(n: int) -> None:
        answers[n] = await db.read(merchants.api_key_by_hash, asked[n])

    async with trio.open_nursery() as nursery:
        for n in range(len(asked)):
            nursery.start_soon(look_up, n)
    for n, key_hash in enumerate(asked[:-1]):
        found = answers[n]
        assert isinstance(found, tuple), n
        assert found[0].key_hash == key_hash and found[1].id == created.merchant.id
        assert (found[0].revoked_at is not None) == (keys[n % len(keys)] in revoked)
    assert answers[len(asked) - 1] is None


async def test_another_merchant_cannot_revoke_a_key(db: Database) -> None:
    owner = await create_merchant(db, "Acme", "o@example.com")
    other = await create_merchant(db, "Other", "x@example.com")
    (key,) = await db.read(merchants.api_keys_of, owner.merchant.id)
    assert not await db.write(merchants.revoke_api_key, other.merchant.id, key.id, 1)


async def test_concurrent_writes_all_commit(db: Database) -> None:
    created = await create_merchant(db, "Acme", "c@example.com")
    keys = [new_api_key(created.merchant.id, n).record for n in range(200)]
    async with trio.open_nursery() as nursery:
        for key in keys:
            nursery.start_soon(db.write, merchants.insert_api_key, key)
    stored = await db.read(merchants.api_keys_of, created.merchant.id)
    assert len(stored) == 201


async def test_a_failing_write_does_not_undo_its_neighbours(db: Database) -> None:
    created = await create_merchant(db, "Acme", "f@example.com")
    good = new_api_key(created.merchant.id, 1).record
    clash = new_api_key(created.merchant.id, 2).record
    await db.write(merchants.insert_api_key, clash)
    failures = []

    async def add(key: object) -> None:
        try:
            await db.write(merchants.insert_api_key, key)  # type: ignore[arg-type]
        except Exception as error:
            failures.append(error)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(add, clash)  # same id and hash again: a constraint violation
        nursery.start_soon(add, good)
    assert len(failures) == 1
    ids_stored = {key.id for key in await db.read(merchants.api_keys_of, created.merchant.id)}
    assert good.id in ids_stored


async def test_migrations_are_idempotent(empty_database_url: str) -> None:
    async with open_database(empty_database_url, 3) as first:
        created = await create_merchant(first, "Acme", "m@example.com")
    async with open_database(empty_database_url, 3) as second:
        assert await second.read(merchants.merchant_by_id, created.merchant.id) is not None


async def test_ping(db: Database) -> None:
    await db.ping()


async def test_sessions_created_together_are_each_stored_and_one_lost_claim_fails_alone(
    db: Database,
) -> None:
    # A burst of creates: on PostgreSQL the writer inserts a group's sessions in one
    # statement. Each is stored as built (the columns that may be empty too), each answer
    # with its own session; a create whose idempotency claim was taken over fails alone.
    created = await create_merchant(db, "Acme", "burst@example.com")
    merchant_id = created.merchant.id
    now = 1_800_000_000_000_000
    sessions = [
        CheckoutSession(
            id=ids.checkout_session_id(),
            merchant_id=merchant_id,
            status="created",
            version=1,
            amount_minor=100 + n,
            currency=money.CURRENCY,
            eur_cents=100 + n,
            description=f"order {n}",
            success_url="https://shop.example/ok",
            cancel_url="https://shop.example/cancel",
            customer_email=None if n % 2 else f"c{n}@example.com",
            customer_reference=None,
            external_reference=f"ref-{n}" if n % 3 else None,
            metadata_json="{}",
            created_at=now,
            updated_at=now,
            expires_at=now + 3_600_000_000,
        )
        for n in range(30)
    ]

    def scope(n: int) -> Scope:
        return Scope(merchant_id, "POST", "/api/v1/checkout/sessions", f"order-{n}")

    for n in (3, 4):
        claimed = await db.write(idempotency.claim, scope(n), "hash", f"owner-{n}", now)
        assert claimed.owned
    answer = StoredResponse(201, {"Content-Type": "application/json"}, '{"id": "x"}')
    completions: list[Completion | None] = [None] * len(sessions)
    completions[3] = Completion(scope(3), "owner-3", answer)
    completions[7] = Completion(scope(7), "nobody", answer)  # no claim: lost
    outcomes: dict[int, str] = {}

    async def insert(n: int) -> None:
        try:
            await db.write(checkout_sessions.insert, sessions[n], completions[n])
            outcomes[n] = "stored"
        except IdempotencyLost:
            outcomes[n] = "lost"

    async with trio.open_nursery() as nursery:
        for n in range(len(sessions)):
            nursery.start_soon(insert, n)
    assert outcomes == {n: "lost" if n == 7 else "stored" for n in range(len(sessions))}
    for n, session in enumerate(sessions):
        found = await db.read(checkout_sessions.by_id, session.id)
        assert found == (None if n == 7 else session), n
    replayed = await db.write(idempotency.claim, scope(3), "hash", "again", now + 1)
    assert not replayed.owned and replayed.response == answer
    still = await db.write(idempotency.claim, scope(4), "hash", "again", now + 1)
    assert not still.owned and still.response is None  # its claim, untouched
