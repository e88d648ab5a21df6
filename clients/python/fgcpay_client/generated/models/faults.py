from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Faults")


@_attrs_define
class Faults:
    """
    Attributes:
        duplicate (float):
        reorder (float):
        bad_signature (float):
        stale_timestamp (float):
        delay_ms (int):
        seed (int):
    """

    duplicate: float
    reorder: float
    bad_signature: float
    stale_timestamp: float
    delay_ms: int
    seed: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        duplicate = self.duplicate

        reorder = self.reorder

        bad_signature = self.bad_signature

        stale_timestamp = self.stale_timestamp

        delay_ms = self.delay_ms

        seed = self.seed

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "duplicate": duplicate,
                "reorder": reorder,
                "bad_signature": bad_signature,
                "stale_timestamp": stale_timestamp,
                "delay_ms": delay_ms,
                "seed": seed,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        duplicate = d.pop("duplicate")

        reorder = d.pop("reorder")

        bad_signature = d.pop("bad_signature")

        stale_timestamp = d.pop("stale_timestamp")

        delay_ms = d.pop("delay_ms")

        seed = d.pop("seed")

        faults = cls(
            duplicate=duplicate,
            reorder=reorder,
            bad_signature=bad_signature,
            stale_timestamp=stale_timestamp,
            delay_ms=delay_ms,
            seed=seed,
        )

        faults.additional_properties = d
        return faults

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
