from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.transaction_status import TransactionStatus
from ..models.transaction_type import TransactionType

T = TypeVar("T", bound="Transaction")


@_attrs_define
class Transaction:
    """
    Attributes:
        id (None | str): The ledger row's id; null only for a declined charge attempt (`subscription.payment_failed`),
            which is in no ledger.
        object_ (Literal['transaction']):
        mode (Literal['test']):
        type_ (TransactionType): `payment` (a checkout session paid), `subscription_charge` (a subscription's approval
            or renewal), `refund` (an approved refund, negative).
        status (TransactionStatus): `succeeded` for every ledger row; `declined` only for the declined attempt a
            `subscription.payment_failed` event carries (no money moved).
        amount_fgc (str): Normalized, two decimals; a refund's is negative: `-4.00`.
        currency (Literal['FGC']):
        checkout_session_id (None | str): The session a payment paid; else null.
        subscription_id (None | str): The subscription charged; else null.
        refund_id (None | str): A refund entry's refund (approved); else null.
        period (int | None): A subscription charge's period, counted from the approval's (0); else null.
        created_at (datetime.datetime): UTC, millisecond precision, e.g. 2026-11-22T14:07:24.621Z
    """

    id: None | str
    object_: Literal["transaction"]
    mode: Literal["test"]
    type_: TransactionType
    status: TransactionStatus
    amount_fgc: str
    currency: Literal["FGC"]
    checkout_session_id: None | str
    subscription_id: None | str
    refund_id: None | str
    period: int | None
    created_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id: None | str
        id = self.id

        object_ = self.object_

        mode = self.mode

        type_ = self.type_.value

        status = self.status.value

        amount_fgc = self.amount_fgc

        currency = self.currency

        checkout_session_id: None | str
        checkout_session_id = self.checkout_session_id

        subscription_id: None | str
        subscription_id = self.subscription_id

        refund_id: None | str
        refund_id = self.refund_id

        period: int | None
        period = self.period

        created_at = self.created_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "object": object_,
                "mode": mode,
                "type": type_,
                "status": status,
                "amount_fgc": amount_fgc,
                "currency": currency,
                "checkout_session_id": checkout_session_id,
                "subscription_id": subscription_id,
                "refund_id": refund_id,
                "period": period,
                "created_at": created_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        id = _parse_id(d.pop("id"))

        object_ = cast(Literal["transaction"], d.pop("object"))
        if object_ != "transaction":
            raise ValueError(f"object must match const 'transaction', got '{object_}'")

        mode = cast(Literal["test"], d.pop("mode"))
        if mode != "test":
            raise ValueError(f"mode must match const 'test', got '{mode}'")

        type_ = TransactionType(d.pop("type"))

        status = TransactionStatus(d.pop("status"))

        amount_fgc = d.pop("amount_fgc")

        currency = cast(Literal["FGC"], d.pop("currency"))
        if currency != "FGC":
            raise ValueError(f"currency must match const 'FGC', got '{currency}'")

        def _parse_checkout_session_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        checkout_session_id = _parse_checkout_session_id(d.pop("checkout_session_id"))

        def _parse_subscription_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        subscription_id = _parse_subscription_id(d.pop("subscription_id"))

        def _parse_refund_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        refund_id = _parse_refund_id(d.pop("refund_id"))

        def _parse_period(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        period = _parse_period(d.pop("period"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        transaction = cls(
            id=id,
            object_=object_,
            mode=mode,
            type_=type_,
            status=status,
            amount_fgc=amount_fgc,
            currency=currency,
            checkout_session_id=checkout_session_id,
            subscription_id=subscription_id,
            refund_id=refund_id,
            period=period,
            created_at=created_at,
        )

        transaction.additional_properties = d
        return transaction

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
