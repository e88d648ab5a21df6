from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.event_type import EventType

T = TypeVar("T", bound="StreamHello")


@_attrs_define
class StreamHello:
    """
    Attributes:
        object_ (Literal['stream']):
        request_id (str):
        after (None | str): Where the stream starts: the event it resumes after (yours, or, without `after`, your newest
            event now). Keep it as your resume point until an event comes. Null when it starts before every event
            (`after=start`, or you had no events yet): resume with `after=start` then.
        types (list[EventType] | None): The event types sent; null for all.
        ping_seconds (float): A ping frame comes at least this often.
    """

    object_: Literal["stream"]
    request_id: str
    after: None | str
    types: list[EventType] | None
    ping_seconds: float
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        object_ = self.object_

        request_id = self.request_id

        after: None | str
        after = self.after

        types: list[str] | None
        if isinstance(self.types, list):
            types = []
            for types_type_0_item_data in self.types:
                types_type_0_item = types_type_0_item_data.value
                types.append(types_type_0_item)

        else:
            types = self.types

        ping_seconds = self.ping_seconds

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "object": object_,
                "request_id": request_id,
                "after": after,
                "types": types,
                "ping_seconds": ping_seconds,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        object_ = cast(Literal["stream"], d.pop("object"))
        if object_ != "stream":
            raise ValueError(f"object must match const 'stream', got '{object_}'")

        request_id = d.pop("request_id")

        def _parse_after(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        after = _parse_after(d.pop("after"))

        def _parse_types(data: object) -> list[EventType] | None:
            if data is None:
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                types_type_0 = []
                _types_type_0 = data
                for types_type_0_item_data in _types_type_0:
                    types_type_0_item = EventType(types_type_0_item_data)

                    types_type_0.append(types_type_0_item)

                return types_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[EventType] | None, data)

        types = _parse_types(d.pop("types"))

        ping_seconds = d.pop("ping_seconds")

        stream_hello = cls(
            object_=object_,
            request_id=request_id,
            after=after,
            types=types,
            ping_seconds=ping_seconds,
        )

        stream_hello.additional_properties = d
        return stream_hello

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
