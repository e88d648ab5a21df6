from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Balance")


@_attrs_define
class Balance:
    """
    Attributes:
        object_ (Literal['balance']):
        mode (Literal['test']):
        currency (Literal['FGC']):
        paid_total_fgc (str): Every payment and subscription charge. Normalized, two decimals.
        refunded_fgc (str): Approved refunds, positive. Normalized, two decimals.
        refunds_pending_fgc (str): Refunds waiting for review (not yet taken off). Normalized, two decimals.
        net_fgc (str): paid_total_fgc minus refunded_fgc. Normalized, two decimals.
        available_fgc (Literal['0.00']): Always 0.00: test mode settles nothing.
        live_payouts_enabled (bool): Live payouts are not enabled.
        transaction_count (int): Rows in the ledger (GET /transactions), refunds included.
        as_of (datetime.datetime): When the totals were read (now). UTC, millisecond precision.
    """

    object_: Literal["balance"]
    mode: Literal["test"]
    currency: Literal["FGC"]
    paid_total_fgc: str
    refunded_fgc: str
    refunds_pending_fgc: str
    net_fgc: str
    available_fgc: Literal["0.00"]
    live_payouts_enabled: bool
    transaction_count: int
    as_of: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        object_ = self.object_

        mode = self.mode

        currency = self.currency

        paid_total_fgc = self.paid_total_fgc

        refunded_fgc = self.refunded_fgc

        refunds_pending_fgc = self.refunds_pending_fgc

        net_fgc = self.net_fgc

        available_fgc = self.available_fgc

        live_payouts_enabled = self.live_payouts_enabled

        transaction_count = self.transaction_count

        as_of = self.as_of.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "object": object_,
                "mode": mode,
                "currency": currency,
                "paid_total_fgc": paid_total_fgc,
                "refunded_fgc": refunded_fgc,
                "refunds_pending_fgc": refunds_pending_fgc,
                "net_fgc": net_fgc,
                "available_fgc": available_fgc,
                "live_payouts_enabled": live_payouts_enabled,
                "transaction_count": transaction_count,
                "as_of": as_of,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        object_ = cast(Literal["balance"], d.pop("object"))
        if object_ != "balance":
            raise ValueError(f"object must match const 'balance', got '{object_}'")

        mode = cast(Literal["test"], d.pop("mode"))
        if mode != "test":
            raise ValueError(f"mode must match const 'test', got '{mode}'")

        currency = cast(Literal["FGC"], d.pop("currency"))
        if currency != "FGC":
            raise ValueError(f"currency must match const 'FGC', got '{currency}'")

        paid_total_fgc = d.pop("paid_total_fgc")

        refunded_fgc = d.pop("refunded_fgc")

        refunds_pending_fgc = d.pop("refunds_pending_fgc")

        net_fgc = d.pop("net_fgc")

        available_fgc = cast(Literal["0.00"], d.pop("available_fgc"))
        if available_fgc != "0.00":
            raise ValueError(f"available_fgc must match const '0.00', got '{available_fgc}'")

        live_payouts_enabled = d.pop("live_payouts_enabled")

        transaction_count = d.pop("transaction_count")

        as_of = datetime.datetime.fromisoformat(d.pop("as_of"))

        balance = cls(
            object_=object_,
            mode=mode,
            currency=currency,
            paid_total_fgc=paid_total_fgc,
            refunded_fgc=refunded_fgc,
            refunds_pending_fgc=refunds_pending_fgc,
            net_fgc=net_fgc,
            available_fgc=available_fgc,
            live_payouts_enabled=live_payouts_enabled,
            transaction_count=transaction_count,
            as_of=as_of,
        )

        balance.additional_properties = d
        return balance

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
