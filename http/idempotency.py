"""`Idempotency-Key` for POST endpoints, as one mechanism each endpoint reuses.

Scope is merchant + method + path + key, kept 24 hours. A request claims its key in
storage first; only one request at a time can hold a key. The final answer is stored
with the request's own write (one transaction) when the handler can do that, or right
after for answers that changed nothing (4xx). Same key and same body replays the stored
answer byte for byte with `Idempotent-Replayed: true`; a different body is 409
`idempotency_key_conflict`; the same key while the first is in flight is 409
`idempotency_key_in_use`.

A route whose answer carries a secret (a new endpoint's signing secret) uses
`idempotent_secret`: its stored answer is sealed with the server's SecretBox, so the
database never holds the secret in clear, and a replay opens it to the same bytes.
Other routes store their answer as is (no cost on the checkout-session path).
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable
from functools import wraps
from typing import Any, ParamSpec, TypeVar

import attrs
import trio
from fgcpay.core.logs import log_event
from fgcpay.domain import errors
from fgcpay.domain.idempotency import (
    Completion,
    IdempotencyLost,
    Scope,
    StoredResponse,
    key_problem,
)
from fgcpay.domain.idempotency import fingerprint as request_fingerprint
from fgcpay.domain.secret_box import SecretBox
from fgcpay.storage import Database
from fgcpay.storage import idempotency as idempotency_rows
from fgcpay.web.body import received
from fgcpay.web.errors import api_error_response
from fgcpay.web.plumbing import current_object, current_service, principal
from fgcpay.web.responses import JSON_TYPE, dump
from quart import Request, Response, g, request

P = ParamSpec("P")
R = TypeVar("R")
HEADER = "Idempotency-Key"
# Answers that changed nothing final; never stored: 401, 409-in-use, 429 and 5xx.
_NOT_STORED = {401, 429}
_KEPT_HEADERS = ("Content-Type", "Deprecation", "Location")
RELEASE_SECONDS = 5.0


@attrs.define
class Pending:
    """The claim the current request holds on its key."""

    scope: Scope
    owner: str
    recorded: bool = False
    box: SecretBox | None = None  # set when the answer carries a secret: stored sealed

    def completion(self, status: int, headers: dict[str, str], body: str) -> Completion:
        stored = body if self.box is None else self.box.seal(body)
        return Completion(self.scope, self.owner, StoredResponse(status, headers, stored))


def pending() -> Pending | None:
    """The current request's claim, for handlers that store their answer with their write."""
    found: Pending | None = getattr(g, "idempotency", None)
    return found


def _replay(stored: StoredResponse, box: SecretBox) -> Response:
    body = stored.body
    if SecretBox.is_sealed(body):
        try:
            body = box.open(body)
        except ValueError:  # stored under another FGCPAY_SECRET_KEY: it cannot be repeated
            raise errors.Conflict(
                "The answer stored for this Idempotency-Key can no longer be repeated"
                " (the server's secret key changed); use a new key.",
                code="idempotency_key_conflict",
            ) from None
    response = Response(body, status=stored.status, headers=stored.headers)
    response.headers["Idempotent-Replayed"] = "true"
    return response


def _is_final(response: Response) -> bool:
    return response.status_code not in _NOT_STORED and response.status_code < 500


def idempotent(
    handler: Callable[P, Awaitable[Response]],
) -> Callable[P, Awaitable[Response]]:
    """Idempotency-Key for a route whose answer holds no secret (stored as is)."""
    return _idempotent(handler, sealed=False)


def idempotent_secret(
    handler: Callable[P, Awaitable[Response]],
) -> Callable[P, Awaitable[Response]]:
    """Idempotency-Key for a route whose answer carries a secret (stored sealed)."""
    return _idempotent(handler, sealed=True)


def _idempotent(
    handler: Callable[P, Awaitable[Response]], *, sealed: bool
) -> Callable[P, Awaitable[Response]]:
    @wraps(handler)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> Response:
        here = current_object(g)
        asked: Request = current_object(request)
        here.idempotency = None
        key = asked.headers.get(HEADER)
        if key is None:
            return await handler(*args, **kwargs)
        problem = key_problem(key)
        if problem:
            raise errors.ValidationFailed([errors.FieldError(HEADER, problem)], problem)
        service = current_service()
        raw = await received()
        scope = Scope(principal().merchant.id, asked.method, asked.path, key)
        fingerprint = request_fingerprint(raw)
        owner = secrets.token_hex(12)
        # Shielded: a claim under way commits whether or not its caller waits, and a claim
        # nobody knows of would hold the key for LOCK_US (409 `idempotency_key_in_use`).
        # Once it answers, a cancellation (the client gone) lands inside the `try` below,
        # which releases it.
        with trio.CancelScope(shield=True):
            claim = await service.db.write(
                idempotency_rows.claim, scope, fingerprint, owner, service.clock.now_us()
            )
        if not claim.owned:
            if claim.request_hash != fingerprint:
                raise errors.Conflict(
                    "This Idempotency-Key was used with a different request body.",
                    code="idempotency_key_conflict",
                )
            if claim.response is None:
                raise errors.Conflict(
                    "A request with this Idempotency-Key is still in progress; retry shortly.",
                    code="idempotency_key_in_use",
                )
            return _replay(claim.response, service.webhook_endpoints.box)

        box = service.webhook_endpoints.box if sealed else None
        claimed = here.idempotency = Pending(scope, owner, box=box)
        try:
            await trio.lowlevel.checkpoint_if_cancelled()
            try:
                response = await handler(*args, **kwargs)
            except IdempotencyLost:
                claimed.recorded = True  # nothing of ours remains to release
                raise errors.Conflict(
                    "A request with this Idempotency-Key is still in progress; retry shortly.",
                    code="idempotency_key_in_use",
                ) from None
            except errors.ServiceError as error:
                response = api_error_response(error)
            if not claimed.recorded:
                if _is_final(response):
                    body = await response.get_data(as_text=True)
                    await service.db.write(
                        idempotency_rows.complete,
                        claimed.completion(
                            response.status_code, stored_headers(response.headers), str(body)
                        ),
                    )
                    claimed.recorded = True
            return response
        finally:
            if not claimed.recorded:
                await _release(service.db, scope, owner)

    return wrapper


async def _release(db: Database, scope: Scope, owner: str) -> None:
    """Give up the claim of a request that ended without a final answer (a crash, a
    cancellation, an answer not stored), so that a retry runs at once. Shielded, so that
    a cancelled request still releases it; bounded, so that a database that does not
    answer cannot hold the request's exit; and never raising over the error that brought
    the request here (unreleased, the claim lapses after LOCK_US)."""
    with trio.move_on_after(RELEASE_SECONDS, shield=True):
        try:
            await db.write(idempotency_rows.release, scope, owner)
        except Exception as error:
            log_event(
                "could not release an idempotency key; it lapses",
                logging.WARNING,
                error_type=type(error).__name__,
            )


def stored_headers(headers: Any) -> dict[str, str]:
    """The headers a replay repeats (a replay gets its own Request-Id and RateLimit)."""
    return {h: str(headers[h]) for h in _KEPT_HEADERS if h in headers}


async def created(
    body: Any, store: Callable[[Completion | None], Awaitable[None]], *, deprecated: bool = False
) -> Response:
    """The 201 of a create: `body` answered as JSON, after `store(completion)` wrote the new
    resource with this request's idempotent answer (None without `Idempotency-Key`) in the
    same transaction, so a replay repeats exactly this answer. `deprecated` adds
    `Deprecation: true` (the request used `amount_minor`)."""
    text = dump(body)
    headers = {"Content-Type": JSON_TYPE}
    if deprecated:
        headers["Deprecation"] = "true"
    claim = pending()
    await store(claim.completion(201, stored_headers(headers), text) if claim else None)
    if claim:
        claim.recorded = True
    return Response(text, status=201, headers=headers)


async def decided_by(
    status: int,
    make: Callable[[Callable[[R], Completion | None]], Awaitable[R]],
    to_body: Callable[[R], Any],
) -> Response:
    """The answer (`status`: 201 for a create, 200 for a change) of a POST whose resource is
    decided by the actor's write (a refund's amount, a subscription as cancelled):
    `make(answer)` writes the resource, storing `answer(it)` (this request's idempotent
    answer for that resource, None without `Idempotency-Key`) in the same transaction, and
    returns it; the answer's body is `to_body(it)`, the same bytes as stored. So a retry of
    a request answered 503 after its write committed replays this answer."""
    headers = {"Content-Type": JSON_TYPE}
    claim = pending()

    def answer(resource: R) -> Completion | None:
        if claim is None:
            return None
        return claim.completion(status, stored_headers(headers), dump(to_body(resource)))

    made = await make(answer)
    if claim:
        claim.recorded = True
    return Response(dump(to_body(made)), status=status, headers=headers)
