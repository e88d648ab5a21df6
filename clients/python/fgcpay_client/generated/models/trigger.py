from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.trigger_event_type import TriggerEventType

T = TypeVar("T", bound="Trigger")


@_attrs_define
class Trigger:
    """
    Attributes:
        object_ (Literal['trigger']):
        event_type (TriggerEventType):
        object_id (str): The id of the events' `data.object` (made or given).
        events (list[str]): Every event id the trigger caused, oldest first.
    """

    object_: Literal["trigger"]
    event_type: TriggerEventType
    object_id: str
    events: list[str]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        object_ = self.object_

        event_type = self.event_type.value

        object_id = self.object_id

        events = self.events

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "object": object_,
                "event_type": event_type,
                "object_id": object_id,
                "events": events,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        object_ = cast(Literal["trigger"], d.pop("object"))
        if object_ != "trigger":
            raise ValueError(f"object must match const 'trigger', got '{object_}'")

        event_type = TriggerEventType(d.pop("event_type"))

        object_id = d.pop("object_id")

        events = cast(list[str], d.pop("events"))

        trigger = cls(
            object_=object_,
            event_type=event_type,
            object_id=object_id,
            events=events,
        )

        trigger.additional_properties = d
        return trigger

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
