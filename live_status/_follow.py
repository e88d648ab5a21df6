"""Changes committed by other processes: statuses republished into this process's hub,
and the event streams' bells rung."""

from __future__ import annotations

import logging

import trio
from fgcpay.core.logs import log_event
from fgcpay.domain.subscriptions import SUBSCRIPTION_PREFIX
from fgcpay.storage import Database, StorageError, checkout_sessions, event_stream, subscriptions

from ._bells import EventBells
from ._hub import StatusHub


def publish_status(hub: StatusHub, resource_id: str, status: str) -> None:
    """What a subscriber receives: the resource and its newest status."""
    hub.publish(resource_id, {"id": resource_id, "status": status})


async def follow_changes(
    db: Database,
    hub: StatusHub,
    bells: EventBells,
    nursery: trio.Nursery,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Publish into `hub` every status change any process commits
    (`checkout_sessions.STATUS_CHANNEL`), and ring the merchant's bells for every commit
    of its events (`event_stream.EVENTS_CHANNEL`), through the database's `listen` (one
    connection on PostgreSQL). Each time the listener is back after losing its
    connection, the followed resources are read again in `nursery` and every bell is
    rung: what was notified meanwhile was not heard."""

    def status_changed(payload: str) -> None:
        resource_id, _, status = payload.partition(":")
        if resource_id and status:
            publish_status(hub, resource_id, status)

    def reconnected() -> None:
        nursery.start_soon(republish_statuses, db, hub)
        bells.ring_all()

    await db.listen(
        {
            checkout_sessions.STATUS_CHANNEL: status_changed,
            event_stream.EVENTS_CHANNEL: bells.ring,
        },
        reconnected,
        task_status=task_status,
    )


async def republish_statuses(db: Database, hub: StatusHub) -> None:
    """Publish the stored status of every followed resource again: after the status
    listener lost its connection, a change another process made meanwhile was not heard.
    A subscriber passes on only what differs from what it last sent."""
    for resource_id in hub.resource_ids():
        # A subscription is approved on the same page as a session; the id says which.
        by_id = (
            subscriptions.by_id
            if resource_id.startswith(SUBSCRIPTION_PREFIX)
            else checkout_sessions.by_id
        )
        try:
            found = await db.read(by_id, resource_id)
        except StorageError as error:  # the listener will call again when it is back
            log_event(
                "could not re-read live statuses", logging.WARNING, error=type(error).__name__
            )
            return
        if found is not None:
            publish_status(hub, resource_id, found.status)
