from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.checkout_session_status import CheckoutSessionStatus

if TYPE_CHECKING:
    from ..models.checkout_session_metadata import CheckoutSessionMetadata


T = TypeVar("T", bound="CheckoutSession")


@_attrs_define
class CheckoutSession:
    """
    Attributes:
        id (str):
        object_ (Literal['checkout_session']):
        mode (Literal['test']):
        status (CheckoutSessionStatus): `created` -> `paid` (the customer authorized on the hosted page) or `expired`
            (at expires_at). `paid` and `expired` are final.
        currency (Literal['FGC']):
        amount_minor (str): Integer minor units as a string.
        amount_fgc (str): Normalized, two decimals.
        eur_cents (str): amount_fgc x FGCPAY_EUR_CENTS_PER_FGC (default 100), rounded half-up, as an integer string;
            fixed at creation.
        checkout_session_id (str):
        checkout_url (str): PUBLIC_URL + /checkout/<id>: the hosted page. Knowing it lets a customer pay: keep it
            between you and your customer.
        customer_email (None | str):
        customer_reference (None | str):
        description (str):
        success_url (str):
        cancel_url (str):
        external_reference (None | str):
        metadata (CheckoutSessionMetadata):
        expires_at (datetime.datetime): UTC, millisecond precision, e.g. 2026-11-22T14:07:24.621Z
        created_at (datetime.datetime): UTC, millisecond precision, e.g. 2026-11-22T14:07:24.621Z
        updated_at (datetime.datetime): UTC, millisecond precision, e.g. 2026-11-22T14:07:24.621Z
        paid_at (datetime.datetime | None): UTC, millisecond precision, e.g. 2026-11-22T14:07:24.621Z
    """

    id: str
    object_: Literal["checkout_session"]
    mode: Literal["test"]
    status: CheckoutSessionStatus
    currency: Literal["FGC"]
    amount_minor: str
    amount_fgc: str
    eur_cents: str
    checkout_session_id: str
    checkout_url: str
    customer_email: None | str
    customer_reference: None | str
    description: str
    success_url: str
    cancel_url: str
    external_reference: None | str
    metadata: CheckoutSessionMetadata
    expires_at: datetime.datetime
    created_at: datetime.datetime
    updated_at: datetime.datetime
    paid_at: datetime.datetime | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        object_ = self.object_

        mode = self.mode

        status = self.status.value

        currency = self.currency

        amount_minor = self.amount_minor

        amount_fgc = self.amount_fgc

        eur_cents = self.eur_cents

        checkout_session_id = self.checkout_session_id

        checkout_url = self.checkout_url

        customer_email: None | str
        customer_email = self.customer_email

        customer_reference: None | str
        customer_reference = self.customer_reference

        description = self.description

        success_url = self.success_url

        cancel_url = self.cancel_url

        external_reference: None | str
        external_reference = self.external_reference

        metadata = self.metadata.to_dict()

        expires_at = self.expires_at.isoformat()

        created_at = self.created_at.isoformat()

        updated_at = self.updated_at.isoformat()

        paid_at: None | str
        if isinstance(self.paid_at, datetime.datetime):
            paid_at = self.paid_at.isoformat()
        else:
            paid_at = self.paid_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "object": object_,
                "mode": mode,
                "status": status,
                "currency": currency,
                "amount_minor": amount_minor,
                "amount_fgc": amount_fgc,
                "eur_cents": eur_cents,
                "checkout_session_id": checkout_session_id,
                "checkout_url": checkout_url,
                "customer_email": customer_email,
                "customer_reference": customer_reference,
                "description": description,
                "success_url": success_url,
                "cancel_url": cancel_url,
                "external_reference": external_reference,
                "metadata": metadata,
                "expires_at": expires_at,
                "created_at": created_at,
                "updated_at": updated_at,
                "paid_at": paid_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.checkout_session_metadata import CheckoutSessionMetadata  # noqa: PLC0415

        d = dict(src_dict)
        id = d.pop("id")

        object_ = cast(Literal["checkout_session"], d.pop("object"))
        if object_ != "checkout_session":
            raise ValueError(f"object must match const 'checkout_session', got '{object_}'")

        mode = cast(Literal["test"], d.pop("mode"))
        if mode != "test":
            raise ValueError(f"mode must match const 'test', got '{mode}'")

        status = CheckoutSessionStatus(d.pop("status"))

        currency = cast(Literal["FGC"], d.pop("currency"))
        if currency != "FGC":
            raise ValueError(f"currency must match const 'FGC', got '{currency}'")

        amount_minor = d.pop("amount_minor")

        amount_fgc = d.pop("amount_fgc")

        eur_cents = d.pop("eur_cents")

        checkout_session_id = d.pop("checkout_session_id")

        checkout_url = d.pop("checkout_url")

        def _parse_customer_email(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        customer_email = _parse_customer_email(d.pop("customer_email"))

        def _parse_customer_reference(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        customer_reference = _parse_customer_reference(d.pop("customer_reference"))

        description = d.pop("description")

        success_url = d.pop("success_url")

        cancel_url = d.pop("cancel_url")

        def _parse_external_reference(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        external_reference = _parse_external_reference(d.pop("external_reference"))

        metadata = CheckoutSessionMetadata.from_dict(d.pop("metadata"))

        expires_at = datetime.datetime.fromisoformat(d.pop("expires_at"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        def _parse_paid_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                paid_at_type_0 = datetime.datetime.fromisoformat(data)

                return paid_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        paid_at = _parse_paid_at(d.pop("paid_at"))

        checkout_session = cls(
            id=id,
            object_=object_,
            mode=mode,
            status=status,
            currency=currency,
            amount_minor=amount_minor,
            amount_fgc=amount_fgc,
            eur_cents=eur_cents,
            checkout_session_id=checkout_session_id,
            checkout_url=checkout_url,
            customer_email=customer_email,
            customer_reference=customer_reference,
            description=description,
            success_url=success_url,
            cancel_url=cancel_url,
            external_reference=external_reference,
            metadata=metadata,
            expires_at=expires_at,
            created_at=created_at,
            updated_at=updated_at,
            paid_at=paid_at,
        )

        checkout_session.additional_properties = d
        return checkout_session

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
