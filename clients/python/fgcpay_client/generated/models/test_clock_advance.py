from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="TestClockAdvance")


@_attrs_define
class TestClockAdvance:
    """
    Attributes:
        frozen_time (datetime.datetime): The clock's new time, later than its current one: every renewal, retry and
            ending due up to it runs, in order. An RFC 3339 date-time with seconds and a time zone (`Z` or an offset), at
            most microsecond precision, e.g. 2026-11-24T14:00:00Z.
    """

    frozen_time: datetime.datetime

    def to_dict(self) -> dict[str, Any]:
        frozen_time = self.frozen_time.isoformat()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "frozen_time": frozen_time,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        frozen_time = datetime.datetime.fromisoformat(d.pop("frozen_time"))

        test_clock_advance = cls(
            frozen_time=frozen_time,
        )

        return test_clock_advance
