from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..models.event_type import EventType
from ..models.webhook_delivery_status import WebhookDeliveryStatus

if TYPE_CHECKING:
    from ..models.webhook_delivery_attempt import WebhookDeliveryAttempt


T = TypeVar("T", bound="WebhookDelivery")


@_attrs_define
class WebhookDelivery:
    """
    Attributes:
        id (str):
        object_ (Literal['webhook_delivery']):
        event_id (str):
        event_type (EventType):
        endpoint_id (str):
        status (WebhookDeliveryStatus): `pending` until an attempt gets a 2xx (`succeeded`) or the retries run out or
            the endpoint is deleted (`failed`).
        attempt_count (int):
        next_attempt_at (datetime.datetime | None): When the next attempt is due; null once the delivery is final.
        created_at (datetime.datetime):
        attempts (list[WebhookDeliveryAttempt]): Oldest first.
    """

    id: str
    object_: Literal["webhook_delivery"]
    event_id: str
    event_type: EventType
    endpoint_id: str
    status: WebhookDeliveryStatus
    attempt_count: int
    next_attempt_at: datetime.datetime | None
    created_at: datetime.datetime
    attempts: list[WebhookDeliveryAttempt]

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        object_ = self.object_

        event_id = self.event_id

        event_type = self.event_type.value

        endpoint_id = self.endpoint_id

        status = self.status.value

        attempt_count = self.attempt_count

        next_attempt_at: None | str
        if isinstance(self.next_attempt_at, datetime.datetime):
            next_attempt_at = self.next_attempt_at.isoformat()
        else:
            next_attempt_at = self.next_attempt_at

        created_at = self.created_at.isoformat()

        attempts = []
        for attempts_item_data in self.attempts:
            attempts_item = attempts_item_data.to_dict()
            attempts.append(attempts_item)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "id": id,
                "object": object_,
                "event_id": event_id,
                "event_type": event_type,
                "endpoint_id": endpoint_id,
                "status": status,
                "attempt_count": attempt_count,
                "next_attempt_at": next_attempt_at,
                "created_at": created_at,
                "attempts": attempts,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.webhook_delivery_attempt import WebhookDeliveryAttempt  # noqa: PLC0415

        d = dict(src_dict)
        id = d.pop("id")

        object_ = cast(Literal["webhook_delivery"], d.pop("object"))
        if object_ != "webhook_delivery":
            raise ValueError(f"object must match const 'webhook_delivery', got '{object_}'")

        event_id = d.pop("event_id")

        event_type = EventType(d.pop("event_type"))

        endpoint_id = d.pop("endpoint_id")

        status = WebhookDeliveryStatus(d.pop("status"))

        attempt_count = d.pop("attempt_count")

        def _parse_next_attempt_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                next_attempt_at_type_0 = datetime.datetime.fromisoformat(data)

                return next_attempt_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        next_attempt_at = _parse_next_attempt_at(d.pop("next_attempt_at"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        attempts = []
        _attempts = d.pop("attempts")
        for attempts_item_data in _attempts:
            attempts_item = WebhookDeliveryAttempt.from_dict(attempts_item_data)

            attempts.append(attempts_item)

        webhook_delivery = cls(
            id=id,
            object_=object_,
            event_id=event_id,
            event_type=event_type,
            endpoint_id=endpoint_id,
            status=status,
            attempt_count=attempt_count,
            next_attempt_at=next_attempt_at,
            created_at=created_at,
            attempts=attempts,
        )

        return webhook_delivery
