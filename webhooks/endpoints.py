"""Webhook endpoints and events as merchants manage them (API, dashboard, CLI)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import attrs
from fgcpay.core.clock import Clock
from fgcpay.domain import errors, ids, limits
from fgcpay.domain.deliveries import DeliveryAttempt
from fgcpay.domain.endpoint_requests import EndpointChange, EndpointRequest, parse_enabled_events
from fgcpay.domain.endpoints import WebhookEndpoint, to_json
from fgcpay.domain.events import EVENT_RETENTION_US, Event, test_event_body
from fgcpay.domain.secret_box import SecretBox
from fgcpay.domain.signing import ROTATION_OVERLAP_US, new_secret
from fgcpay.storage import Database
from fgcpay.storage import limits as limit_counts
from fgcpay.storage import webhooks as webhook_rows
from fgcpay.storage.owned import OwnedRows

from . import destinations

EVENTS = OwnedRows("evt_", "event", webhook_rows.event_of)
# Posts one signed body (url, event id, body, signing secrets) and says what came of it:
# the dispatcher's `send_once`.
Sender = Callable[[str, str, str, list[str]], Awaitable[DeliveryAttempt]]


@attrs.define
class WebhookEndpoints:
    db: Database
    clock: Clock
    box: SecretBox
    allow_private: bool
    ring: Callable[[], None] = lambda: None
    send: Sender | None = None

    async def create(
        self, merchant_id: str, request: EndpointRequest
    ) -> tuple[WebhookEndpoint, str]:
        """A new endpoint and its signing secret (the only time the secret is shown).

        Only the URL's form and literal addresses are checked here, without DNS (the name
        may not resolve yet); the name is resolved and checked at every delivery."""
        refused = destinations.registration_refusal(request.url, self.allow_private)
        if refused:
            raise errors.ValidationFailed([errors.FieldError("url", f"Not allowed: {refused}.")])
        most = limits.MAX_WEBHOOK_ENDPOINTS_PER_MERCHANT
        if await self.db.read(limit_counts.webhook_endpoints_of_merchant, merchant_id) >= most:
            raise errors.ValidationFailed(
                [
                    errors.FieldError(
                        "url",
                        f"You have {most} endpoints, the most one may have: delete one first.",
                    )
                ]  # fmt: skip
            )
        secret = new_secret()
        endpoint = WebhookEndpoint(
            id="we_" + ids.random_base62(24),
            merchant_id=merchant_id,
            url=request.url,
            enabled_events=request.enabled_events,
            secret_sealed=self.box.seal(secret),
            previous_secret_sealed=None,
            previous_secret_expires_at=None,
            created_at=self.clock.now_us(),
            faults=request.faults,
        )
        await self.db.write(webhook_rows.insert_endpoint, endpoint)
        return endpoint, secret

    async def all_of(self, merchant_id: str) -> list[WebhookEndpoint]:
        return await self.db.read(webhook_rows.endpoints_of, merchant_id)

    async def get(self, merchant_id: str, endpoint_id: str) -> WebhookEndpoint:
        found = await self.db.read(webhook_rows.endpoint_of, merchant_id, endpoint_id[:64])
        if found is None:
            raise errors.NotFound("No such webhook endpoint.")
        return found

    async def delete(self, merchant_id: str, endpoint_id: str) -> WebhookEndpoint:
        endpoint = await self.get(merchant_id, endpoint_id)
        now = self.clock.now_us()
        if not await self.db.write(webhook_rows.delete_endpoint, merchant_id, endpoint.id, now):
            raise errors.NotFound("No such webhook endpoint.")
        return attrs.evolve(endpoint, deleted_at=now)

    async def rotate_secret(
        self, merchant_id: str, endpoint_id: str
    ) -> tuple[WebhookEndpoint, str]:
        """A new secret; the old one keeps signing (a second `v1=`) for 24 hours."""
        secret = new_secret()
        rotated = await self.db.write(
            webhook_rows.rotate_secret,
            merchant_id,
            endpoint_id[:64],
            self.box.seal(secret),
            self.clock.now_us(),
            ROTATION_OVERLAP_US,
        )
        if rotated is None:
            raise errors.NotFound("No such webhook endpoint.")
        return rotated, secret

    async def set_events(
        self, merchant_id: str, endpoint_id: str, enabled_events: list[str]
    ) -> WebhookEndpoint:
        """The event types the endpoint receives from now on, checked as the create's."""
        chosen = parse_enabled_events(enabled_events)
        changed = await self.db.write(
            webhook_rows.set_enabled_events, merchant_id, endpoint_id[:64], chosen
        )
        if changed is None:
            raise errors.NotFound("No such webhook endpoint.")
        return changed

    async def update(
        self, merchant_id: str, endpoint_id: str, change: EndpointChange
    ) -> WebhookEndpoint:
        """The endpoint with the fields `change` gives changed, the URL under the create's
        rules (its form, and private targets only where the operator allows them); faults
        set (or cleared) apply to deliveries created from then on, their ordinals counted
        from 1 again."""
        if change.url is not None:
            refused = destinations.registration_refusal(change.url, self.allow_private)
            if refused:
                raise errors.ValidationFailed(
                    [errors.FieldError("url", f"Not allowed: {refused}.")]
                )
        changed = await self.db.write(
            webhook_rows.update_endpoint,
            merchant_id,
            endpoint_id[:64],
            change.url,
            change.enabled_events,
            (change.faults,) if change.faults_given else None,
        )
        if changed is None:
            raise errors.NotFound("No such webhook endpoint.")
        return changed

    def signing_secrets(self, endpoint: WebhookEndpoint) -> list[str]:
        """The secrets a delivery is signed with now: [old, new] during a rotation."""
        current = self.box.open(endpoint.secret_sealed)
        expires = endpoint.previous_secret_expires_at
        if (
            endpoint.previous_secret_sealed
            and expires is not None
            and expires > self.clock.now_us()
        ):
            return [self.box.open(endpoint.previous_secret_sealed), current]
        return [current]

    async def send_test(self, merchant_id: str, endpoint_id: str) -> DeliveryAttempt:
        """Send a test event about the endpoint to it, once, signed as every delivery is
        (stored nowhere, never retried), and what came of it."""
        endpoint = await self.get(merchant_id, endpoint_id)
        if self.send is None:
            raise errors.Unavailable("Webhook sending is not running here.")
        event_id = "evt_" + ids.random_base62(24)
        body = test_event_body(event_id, self.clock.now_us(), to_json(endpoint))
        return await self.send(endpoint.url, event_id, body, self.signing_secrets(endpoint))

    async def event(self, merchant_id: str, event_id: str) -> Event:
        return await EVENTS.get(self.db, merchant_id, event_id)

    async def events(
        self, merchant_id: str, event_type: str | None, starting_after: str | None, limit: int
    ) -> tuple[list[Event], bool]:
        since = self.clock.now_us() - EVENT_RETENTION_US
        return await EVENTS.page(
            self.db,
            merchant_id,
            starting_after,
            limit,
            lambda tx, after, n: webhook_rows.events_page(
                tx, merchant_id, event_type, after, since, n
            ),
        )

    async def redeliver(self, merchant_id: str, event_id: str) -> int:
        event = await self.event(merchant_id, event_id)
        queued = await self.db.write(
            webhook_rows.redeliver, merchant_id, event.id, self.clock.now_us()
        )
        self.ring()
        return queued or 0
