from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="TestClockCreate")


@_attrs_define
class TestClockCreate:
    """
    Attributes:
        frozen_time (datetime.datetime): The clock's time: subscriptions on it live by this time until advanced. An RFC
            3339 date-time with seconds and a time zone (`Z` or an offset), at most microsecond precision, e.g.
            2026-11-24T14:00:00Z.
        name (None | str | Unset): At most 255 characters. Not blank (whitespace only is blank); no control characters
            other than tab, newline and carriage return, and no invisible format characters (Unicode category Cf: zero-width
            and bidirectional controls such as U+200B, U+202E, U+2066).
    """

    frozen_time: datetime.datetime
    name: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        frozen_time = self.frozen_time.isoformat()

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "frozen_time": frozen_time,
            }
        )
        if name is not UNSET:
            field_dict["name"] = name

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        frozen_time = datetime.datetime.fromisoformat(d.pop("frozen_time"))

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        test_clock_create = cls(
            frozen_time=frozen_time,
            name=name,
        )

        return test_clock_create
