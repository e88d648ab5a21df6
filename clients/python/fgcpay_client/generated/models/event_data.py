from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.transaction import Transaction


T = TypeVar("T", bound="EventData")


@_attrs_define
class EventData:
    """
    Attributes:
        object_ (Any): The resource as the API returns it (e.g. a CheckoutSession).
        transaction (Transaction | Unset):
    """

    object_: Any
    transaction: Transaction | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        object_ = self.object_

        transaction: dict[str, Any] | Unset = UNSET
        if not isinstance(self.transaction, Unset):
            transaction = self.transaction.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "object": object_,
            }
        )
        if transaction is not UNSET:
            field_dict["transaction"] = transaction

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.transaction import Transaction  # noqa: PLC0415

        d = dict(src_dict)
        object_ = d.pop("object")

        _transaction = d.pop("transaction", UNSET)
        transaction: Transaction | Unset
        if isinstance(_transaction, Unset):
            transaction = UNSET
        else:
            transaction = Transaction.from_dict(_transaction)

        event_data = cls(
            object_=object_,
            transaction=transaction,
        )

        event_data.additional_properties = d
        return event_data

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
