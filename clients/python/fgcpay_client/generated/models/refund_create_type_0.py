from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="RefundCreateType0")


@_attrs_define
class RefundCreateType0:
    """
    Attributes:
        checkout_session_id (str):
        transaction_id (None | Unset):
    """

    checkout_session_id: str
    transaction_id: None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        checkout_session_id = self.checkout_session_id

        transaction_id = self.transaction_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "checkout_session_id": checkout_session_id,
            }
        )
        if transaction_id is not UNSET:
            field_dict["transaction_id"] = transaction_id

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        checkout_session_id = d.pop("checkout_session_id")

        transaction_id = d.pop("transaction_id", UNSET)

        refund_create_type_0 = cls(
            checkout_session_id=checkout_session_id,
            transaction_id=transaction_id,
        )

        refund_create_type_0.additional_properties = d
        return refund_create_type_0

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
