from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.event_type import EventType

if TYPE_CHECKING:
    from ..models.event_data import EventData


T = TypeVar("T", bound="Event")


@_attrs_define
class Event:
    """
    Attributes:
        id (str): Constant across retries and redeliveries: use it to drop duplicates.
        object_ (Literal['event']):
        type_ (EventType):
        mode (Literal['test']):
        created_at (datetime.datetime):
        sequence (int): Grows with every change of the resource: drop an event older than one already applied.
        data (EventData):
    """

    id: str
    object_: Literal["event"]
    type_: EventType
    mode: Literal["test"]
    created_at: datetime.datetime
    sequence: int
    data: EventData
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        object_ = self.object_

        type_ = self.type_.value

        mode = self.mode

        created_at = self.created_at.isoformat()

        sequence = self.sequence

        data = self.data.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "object": object_,
                "type": type_,
                "mode": mode,
                "created_at": created_at,
                "sequence": sequence,
                "data": data,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.event_data import EventData  # noqa: PLC0415

        d = dict(src_dict)
        id = d.pop("id")

        object_ = cast(Literal["event"], d.pop("object"))
        if object_ != "event":
            raise ValueError(f"object must match const 'event', got '{object_}'")

        type_ = EventType(d.pop("type"))

        mode = cast(Literal["test"], d.pop("mode"))
        if mode != "test":
            raise ValueError(f"mode must match const 'test', got '{mode}'")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        sequence = d.pop("sequence")

        data = EventData.from_dict(d.pop("data"))

        event = cls(
            id=id,
            object_=object_,
            type_=type_,
            mode=mode,
            created_at=created_at,
            sequence=sequence,
            data=data,
        )

        event.additional_properties = d
        return event

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
