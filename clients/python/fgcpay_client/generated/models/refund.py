from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.refund_reason_type_1 import RefundReasonType1
from ..models.refund_reason_type_2_type_1 import RefundReasonType2Type1
from ..models.refund_reason_type_3_type_1 import RefundReasonType3Type1
from ..models.refund_status import RefundStatus

if TYPE_CHECKING:
    from ..models.refund_metadata import RefundMetadata


T = TypeVar("T", bound="Refund")


@_attrs_define
class Refund:
    """
    Attributes:
        id (str):
        object_ (Literal['refund']):
        mode (Literal['test']):
        status (RefundStatus): `pending_review` (created) -> `approved` (a negative entry joins the ledger) or
            `rejected` (its amount is refundable again). `approved` and `rejected` are final.
        amount_fgc (str): Normalized, two decimals; positive.
        currency (Literal['FGC']):
        checkout_session_id (None | str): The session whose payment is refunded; null for a charge.
        transaction_id (str): The payment or subscription charge refunded.
        reason (None | RefundReasonType1 | RefundReasonType2Type1 | RefundReasonType3Type1):
        metadata (RefundMetadata):
        created_at (datetime.datetime): UTC, millisecond precision, e.g. 2026-11-22T14:07:24.621Z
        reviewed_at (datetime.datetime | None): When it was approved or rejected; null while pending review.
        updated_at (datetime.datetime): UTC, millisecond precision, e.g. 2026-11-22T14:07:24.621Z
    """

    id: str
    object_: Literal["refund"]
    mode: Literal["test"]
    status: RefundStatus
    amount_fgc: str
    currency: Literal["FGC"]
    checkout_session_id: None | str
    transaction_id: str
    reason: None | RefundReasonType1 | RefundReasonType2Type1 | RefundReasonType3Type1
    metadata: RefundMetadata
    created_at: datetime.datetime
    reviewed_at: datetime.datetime | None
    updated_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        object_ = self.object_

        mode = self.mode

        status = self.status.value

        amount_fgc = self.amount_fgc

        currency = self.currency

        checkout_session_id: None | str
        checkout_session_id = self.checkout_session_id

        transaction_id = self.transaction_id

        reason: None | str
        if isinstance(self.reason, RefundReasonType1):
            reason = self.reason.value
        elif isinstance(self.reason, RefundReasonType2Type1):
            reason = self.reason.value
        elif isinstance(self.reason, RefundReasonType3Type1):
            reason = self.reason.value
        else:
            reason = self.reason

        metadata = self.metadata.to_dict()

        created_at = self.created_at.isoformat()

        reviewed_at: None | str
        if isinstance(self.reviewed_at, datetime.datetime):
            reviewed_at = self.reviewed_at.isoformat()
        else:
            reviewed_at = self.reviewed_at

        updated_at = self.updated_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "object": object_,
                "mode": mode,
                "status": status,
                "amount_fgc": amount_fgc,
                "currency": currency,
                "checkout_session_id": checkout_session_id,
                "transaction_id": transaction_id,
                "reason": reason,
                "metadata": metadata,
                "created_at": created_at,
                "reviewed_at": reviewed_at,
                "updated_at": updated_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.refund_metadata import RefundMetadata  # noqa: PLC0415

        d = dict(src_dict)
        id = d.pop("id")

        object_ = cast(Literal["refund"], d.pop("object"))
        if object_ != "refund":
            raise ValueError(f"object must match const 'refund', got '{object_}'")

        mode = cast(Literal["test"], d.pop("mode"))
        if mode != "test":
            raise ValueError(f"mode must match const 'test', got '{mode}'")

        status = RefundStatus(d.pop("status"))

        amount_fgc = d.pop("amount_fgc")

        currency = cast(Literal["FGC"], d.pop("currency"))
        if currency != "FGC":
            raise ValueError(f"currency must match const 'FGC', got '{currency}'")

        def _parse_checkout_session_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        checkout_session_id = _parse_checkout_session_id(d.pop("checkout_session_id"))

        transaction_id = d.pop("transaction_id")

        def _parse_reason(
            data: object,
        ) -> None | RefundReasonType1 | RefundReasonType2Type1 | RefundReasonType3Type1:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                reason_type_1 = RefundReasonType1(data)

                return reason_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, str):
                    raise TypeError()
                reason_type_2_type_1 = RefundReasonType2Type1(data)

                return reason_type_2_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, str):
                    raise TypeError()
                reason_type_3_type_1 = RefundReasonType3Type1(data)

                return reason_type_3_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(
                None | RefundReasonType1 | RefundReasonType2Type1 | RefundReasonType3Type1, data
            )

        reason = _parse_reason(d.pop("reason"))

        metadata = RefundMetadata.from_dict(d.pop("metadata"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        def _parse_reviewed_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                reviewed_at_type_0 = datetime.datetime.fromisoformat(data)

                return reviewed_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        reviewed_at = _parse_reviewed_at(d.pop("reviewed_at"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        refund = cls(
            id=id,
            object_=object_,
            mode=mode,
            status=status,
            amount_fgc=amount_fgc,
            currency=currency,
            checkout_session_id=checkout_session_id,
            transaction_id=transaction_id,
            reason=reason,
            metadata=metadata,
            created_at=created_at,
            reviewed_at=reviewed_at,
            updated_at=updated_at,
        )

        refund.additional_properties = d
        return refund

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
