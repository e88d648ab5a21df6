from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Redelivery")


@_attrs_define
class Redelivery:
    """
    Attributes:
        object_ (Literal['redelivery']):
        event_id (str):
        deliveries_queued (int):
    """

    object_: Literal["redelivery"]
    event_id: str
    deliveries_queued: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        object_ = self.object_

        event_id = self.event_id

        deliveries_queued = self.deliveries_queued

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "object": object_,
                "event_id": event_id,
                "deliveries_queued": deliveries_queued,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        object_ = cast(Literal["redelivery"], d.pop("object"))
        if object_ != "redelivery":
            raise ValueError(f"object must match const 'redelivery', got '{object_}'")

        event_id = d.pop("event_id")

        deliveries_queued = d.pop("deliveries_queued")

        redelivery = cls(
            object_=object_,
            event_id=event_id,
            deliveries_queued=deliveries_queued,
        )

        redelivery.additional_properties = d
        return redelivery

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
