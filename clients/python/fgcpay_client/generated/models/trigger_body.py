from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.trigger_body_event_type import TriggerBodyEventType
from ..types import UNSET, Unset

T = TypeVar("T", bound="TriggerBody")


@_attrs_define
class TriggerBody:
    """
    Attributes:
        event_type (TriggerBodyEventType): The event to make.
        object_ (None | str | Unset): One of your checkout sessions, subscriptions or refunds to make the event on (it
            must be able to make it, else 409); without it the trigger makes its own objects.
    """

    event_type: TriggerBodyEventType
    object_: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        event_type = self.event_type.value

        object_: None | str | Unset
        if isinstance(self.object_, Unset):
            object_ = UNSET
        else:
            object_ = self.object_

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "event_type": event_type,
            }
        )
        if object_ is not UNSET:
            field_dict["object"] = object_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        event_type = TriggerBodyEventType(d.pop("event_type"))

        def _parse_object_(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        object_ = _parse_object_(d.pop("object", UNSET))

        trigger_body = cls(
            event_type=event_type,
            object_=object_,
        )

        return trigger_body
