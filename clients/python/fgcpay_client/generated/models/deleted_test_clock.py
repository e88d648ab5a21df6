from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.deleted_test_clock_status import DeletedTestClockStatus

T = TypeVar("T", bound="DeletedTestClock")


@_attrs_define
class DeletedTestClock:
    """
    Attributes:
        id (str):
        object_ (Literal['test_clock']):
        frozen_time (datetime.datetime): The clock's time. UTC, millisecond precision, e.g. 2026-11-22T14:07:24.621Z
        status (DeletedTestClockStatus): `advancing` while what is due up to the new frozen_time runs, then `ready`.
        name (None | str):
        created_at (datetime.datetime): UTC, millisecond precision, e.g. 2026-11-22T14:07:24.621Z
        updated_at (datetime.datetime): UTC, millisecond precision, e.g. 2026-11-22T14:07:24.621Z
        deleted (bool): Always true: the clock and its subscriptions are gone.
    """

    id: str
    object_: Literal["test_clock"]
    frozen_time: datetime.datetime
    status: DeletedTestClockStatus
    name: None | str
    created_at: datetime.datetime
    updated_at: datetime.datetime
    deleted: bool
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        object_ = self.object_

        frozen_time = self.frozen_time.isoformat()

        status = self.status.value

        name: None | str
        name = self.name

        created_at = self.created_at.isoformat()

        updated_at = self.updated_at.isoformat()

        deleted = self.deleted

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "object": object_,
                "frozen_time": frozen_time,
                "status": status,
                "name": name,
                "created_at": created_at,
                "updated_at": updated_at,
                "deleted": deleted,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        object_ = cast(Literal["test_clock"], d.pop("object"))
        if object_ != "test_clock":
            raise ValueError(f"object must match const 'test_clock', got '{object_}'")

        frozen_time = datetime.datetime.fromisoformat(d.pop("frozen_time"))

        status = DeletedTestClockStatus(d.pop("status"))

        def _parse_name(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        name = _parse_name(d.pop("name"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        deleted = d.pop("deleted")

        deleted_test_clock = cls(
            id=id,
            object_=object_,
            frozen_time=frozen_time,
            status=status,
            name=name,
            created_at=created_at,
            updated_at=updated_at,
            deleted=deleted,
        )

        deleted_test_clock.additional_properties = d
        return deleted_test_clock

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
