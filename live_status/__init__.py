"""Live status: the newest status of each resource, fanned out to local subscribers (the
hosted page's websockets), with the changes other processes commit heard and republished."""

from ._follow import follow_status_changes, publish_status, republish_statuses
from ._hub import StatusHub, Subscription

__all__ = [
    "StatusHub",
    "Subscription",
    "follow_status_changes",
    "publish_status",
    "republish_statuses",
]
