"""Idempotency-Key, exactly per the contract, on both backends."""

from __future__ import annotations

import pytest
import trio
from fgcpay.domain.fields import canonical_json
from fgcpay.domain.idempotency import Scope, request_hash
from fgcpay.storage import idempotency
from helpers import Server, valid_body

PATH = "/checkout/sessions"


async def test_same_key_same_body_replays_byte_for_byte(server: Server) -> None:
    merchant = await server.merchant()
    headers = {"Idempotency-Key": "order-42"}
    first = await merchant.post(PATH, json=valid_body(), headers=headers)
    second = await merchant.post(PATH, json=valid_body(), headers=headers)
    assert first.status_code == second.status_code == 201
    assert second.content == first.content
    assert second.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert second.headers["Request-Id"] != first.headers["Request-Id"]
    assert len((await merchant.get(PATH)).json()["data"]) == 1


async def test_key_order_and_spacing_do_not_change_the_fingerprint(server: Server) -> None:
    merchant = await server.merchant()
    body = valid_body()
    reordered = dict(reversed(list(body.items())))
    headers = {"Idempotency-Key": "k", "Content-Type": "application/json"}
    first = await merchant.post(PATH, content=canonical_json(body), headers=headers)
    second = await merchant.post(
        PATH, content=canonical_json(reordered).replace(",", ", "), headers=headers
    )
    assert second.status_code == 201 and second.content == first.content


async def test_same_key_different_body_is_409(server: Server) -> None:
    merchant = await server.merchant()
    headers = {"Idempotency-Key": "k1"}
    await merchant.post(PATH, json=valid_body(), headers=headers)
    response = await merchant.post(PATH, json=valid_body(amount_fgc="13.00"), headers=headers)
    assert response.status_code == 409
    assert response.json()["code"] == "idempotency_key_conflict"
    assert len((await merchant.get(PATH)).json()["data"]) == 1


async def test_same_key_while_in_flight_is_409_in_use(server: Server) -> None:
    merchant = await server.merchant()
    body = valid_body()
    scope = Scope(merchant.id, "POST", "/api/v1" + PATH, "busy")
    now = server.running.service.clock.now_us()
    # Another request holds the key right now.
    claim = await server.db.write(
        idempotency.claim, scope, request_hash(canonical_json(body).encode()), "someone-else", now
    )
    assert claim.owned
    response = await merchant.post(PATH, json=body, headers={"Idempotency-Key": "busy"})
    assert response.status_code == 409
    assert response.json()["code"] == "idempotency_key_in_use"
    assert (await merchant.get(PATH)).json()["data"] == []


async def test_concurrent_requests_with_one_key_create_one_session(server: Server) -> None:
    merchant = await server.merchant()
    statuses: list[int] = []
    bodies: list[bytes] = []

    async def attempt() -> None:
        response = await merchant.post(PATH, json=valid_body(), headers={"Idempotency-Key": "race"})
        statuses.append(response.status_code)
        if response.status_code == 201:
            bodies.append(response.content)

    async with trio.open_nursery() as nursery:
        for _ in range(20):
            nursery.start_soon(attempt)
    assert set(statuses) <= {201, 409}
    assert statuses.count(201) >= 1
    assert len(set(bodies)) == 1
    assert len((await merchant.get(PATH)).json()["data"]) == 1
    # Once settled, every retry replays.
    again = await merchant.post(PATH, json=valid_body(), headers={"Idempotency-Key": "race"})
    assert again.status_code == 201 and again.content == bodies[0]


@pytest.mark.parametrize("key", ["", "k" * 181, ("ключ" * 46).encode()])
async def test_bad_keys_are_400(server: Server, key: str | bytes) -> None:
    merchant = await server.merchant()
    response = await merchant.post(PATH, json=valid_body(), headers={"Idempotency-Key": key})
    assert response.status_code == 400
    assert response.json()["details"][0]["field"] == "Idempotency-Key"
    assert (await merchant.get(PATH)).json()["data"] == []


async def test_180_characters_is_fine(server: Server) -> None:
    merchant = await server.merchant()
    response = await merchant.post(PATH, json=valid_body(), headers={"Idempotency-Key": "k" * 180})
    assert response.status_code == 201


async def test_validation_errors_are_replayed_too(server: Server) -> None:
    merchant = await server.merchant()
    headers = {"Idempotency-Key": "bad-body"}
    first = await merchant.post(PATH, json=valid_body(currency="EUR"), headers=headers)
    second = await merchant.post(PATH, json=valid_body(currency="EUR"), headers=headers)
    assert first.status_code == second.status_code == 400
    assert second.content == first.content
    assert second.headers["Idempotent-Replayed"] == "true"


async def test_scope_is_per_merchant(server: Server) -> None:
    alice, bob = await server.merchant("Alice"), await server.merchant("Bob")
    headers = {"Idempotency-Key": "shared"}
    a = await alice.post(PATH, json=valid_body(), headers=headers)
    b = await bob.post(PATH, json=valid_body(amount_fgc="99.00"), headers=headers)
    assert a.status_code == b.status_code == 201
    assert a.json()["id"] != b.json()["id"]


async def test_rate_limited_and_unauthenticated_answers_are_not_stored(server: Server) -> None:
    merchant = await server.merchant()
    headers = {"Idempotency-Key": "later", "Authorization": "Bearer fp_test_" + "x" * 32}
    rejected = await merchant.http.post(PATH, json=valid_body(), headers=headers)
    assert rejected.status_code == 401
    accepted = await merchant.post(PATH, json=valid_body(), headers={"Idempotency-Key": "later"})
    assert accepted.status_code == 201


async def test_a_lapsed_claim_is_taken_over(server: Server) -> None:
    merchant = await server.merchant()
    body = valid_body()
    scope = Scope(merchant.id, "POST", "/api/v1" + PATH, "crashed")
    long_ago = server.running.service.clock.now_us() - 3600 * 1_000_000
    fingerprint = request_hash(canonical_json(body).encode())
    await server.db.write(idempotency.claim, scope, fingerprint, "dead-process", long_ago)
    response = await merchant.post(PATH, json=body, headers={"Idempotency-Key": "crashed"})
    assert response.status_code == 201


async def test_records_are_kept_24_hours_then_purged(server: Server) -> None:
    merchant = await server.merchant()
    db = server.db
    first = await merchant.post(PATH, json=valid_body(), headers={"Idempotency-Key": "day"})
    assert first.status_code == 201
    now = server.running.service.clock.now_us()
    hour = 3600 * 1_000_000
    assert await db.write(idempotency.purge_expired, now + 23 * hour, 1000) == 0
    assert await db.write(idempotency.purge_expired, now + 25 * hour, 1000) == 1
    # After the purge the key is free again: a different body is a new request.
    second = await merchant.post(
        PATH, json=valid_body(amount_fgc="1.00"), headers={"Idempotency-Key": "day"}
    )
    assert second.status_code == 201 and second.json()["id"] != first.json()["id"]


async def test_expired_record_is_not_replayed_even_before_purge(server: Server) -> None:
    merchant = await server.merchant()
    body = valid_body()
    scope = Scope(merchant.id, "POST", "/api/v1" + PATH, "old")
    two_days_ago = server.running.service.clock.now_us() - 48 * 3600 * 1_000_000
    db = server.db
    claim = await db.write(idempotency.claim, scope, "other-hash", "gone", two_days_ago)
    assert claim.owned
    response = await merchant.post(PATH, json=body, headers={"Idempotency-Key": "old"})
    assert response.status_code == 201
