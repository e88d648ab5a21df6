"""Live status: the newest status of each resource, fanned out to local subscribers (the
hosted page's websockets); the doorbells of the event streams; and the changes other
processes commit, heard through the database."""

from ._bells import Bell, EventBells
from ._follow import follow_changes, publish_status, republish_statuses
from ._hub import HubFull, StatusHub, Subscription

__all__ = [
    "Bell",
    "EventBells",
    "HubFull",
    "StatusHub",
    "Subscription",
    "follow_changes",
    "publish_status",
    "republish_statuses",
]
