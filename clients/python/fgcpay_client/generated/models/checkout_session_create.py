from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.checkout_session_create_currency import CheckoutSessionCreateCurrency
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.metadata import Metadata


T = TypeVar("T", bound="CheckoutSessionCreate")


@_attrs_define
class CheckoutSessionCreate:
    """
    Attributes:
        amount_fgc (str): Decimal FGC amount as a string: digits with an optional fraction (leading and trailing zeros
            are fine), at most two significant decimal places, above 0 and at most 1000000.00; parsed exactly, never
            rounded. No sign, exponent, spaces or JSON number. Responses show exactly two decimals, e.g. "10.50".
        currency (CheckoutSessionCreateCurrency):
        description (str): 1 to 500 characters. Not blank (whitespace only is blank); no control characters other than
            tab, newline and carriage return, and no invisible format characters (Unicode category Cf: zero-width and
            bidirectional controls such as U+200B, U+202E, U+2066).
        success_url (str): Absolute http or https URL. After payment the customer is sent here with
            `checkout_session_id=<id>` added to the query. The host must be a DNS name (letters, digits, hyphens; IDNA 2008
            names accepted), a dotted-quad IPv4 or a bracketed IPv6 address; at most 2048 characters, no spaces.
        cancel_url (str): Absolute http or https URL. The host must be a DNS name (letters, digits, hyphens; IDNA 2008
            names accepted), a dotted-quad IPv4 or a bracketed IPv6 address; at most 2048 characters, no spaces.
        amount_minor (None | str | Unset): Deprecated: the amount in minor units (1 FGC = 100), a string of digits from
            1 to 100000000. If sent it must agree with amount_fgc; the response then carries `Deprecation: true`.
        customer_email (None | str | Unset): An address checked for syntax only, offline (never resolved): a dot-atom
            local part and a domain of at least two DNS labels. Reserved names such as `.test`, `.example` and `.localhost`
            are accepted.
        customer_reference (None | str | Unset): At most 255 characters. Not blank (whitespace only is blank); no
            control characters other than tab, newline and carriage return, and no invisible format characters (Unicode
            category Cf: zero-width and bidirectional controls such as U+200B, U+202E, U+2066).
        external_reference (None | str | Unset): At most 255 characters. Not blank (whitespace only is blank); no
            control characters other than tab, newline and carriage return, and no invisible format characters (Unicode
            category Cf: zero-width and bidirectional controls such as U+200B, U+202E, U+2066).
        metadata (Metadata | None | Unset):
    """

    amount_fgc: str
    currency: CheckoutSessionCreateCurrency
    description: str
    success_url: str
    cancel_url: str
    amount_minor: None | str | Unset = UNSET
    customer_email: None | str | Unset = UNSET
    customer_reference: None | str | Unset = UNSET
    external_reference: None | str | Unset = UNSET
    metadata: Metadata | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.metadata import Metadata  # noqa: PLC0415

        amount_fgc = self.amount_fgc

        currency = self.currency.value

        description = self.description

        success_url = self.success_url

        cancel_url = self.cancel_url

        amount_minor: None | str | Unset
        if isinstance(self.amount_minor, Unset):
            amount_minor = UNSET
        else:
            amount_minor = self.amount_minor

        customer_email: None | str | Unset
        if isinstance(self.customer_email, Unset):
            customer_email = UNSET
        else:
            customer_email = self.customer_email

        customer_reference: None | str | Unset
        if isinstance(self.customer_reference, Unset):
            customer_reference = UNSET
        else:
            customer_reference = self.customer_reference

        external_reference: None | str | Unset
        if isinstance(self.external_reference, Unset):
            external_reference = UNSET
        else:
            external_reference = self.external_reference

        metadata: dict[str, Any] | None | Unset
        if isinstance(self.metadata, Unset):
            metadata = UNSET
        elif isinstance(self.metadata, Metadata):
            metadata = self.metadata.to_dict()
        else:
            metadata = self.metadata

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "amount_fgc": amount_fgc,
                "currency": currency,
                "description": description,
                "success_url": success_url,
                "cancel_url": cancel_url,
            }
        )
        if amount_minor is not UNSET:
            field_dict["amount_minor"] = amount_minor
        if customer_email is not UNSET:
            field_dict["customer_email"] = customer_email
        if customer_reference is not UNSET:
            field_dict["customer_reference"] = customer_reference
        if external_reference is not UNSET:
            field_dict["external_reference"] = external_reference
        if metadata is not UNSET:
            field_dict["metadata"] = metadata

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.metadata import Metadata  # noqa: PLC0415

        d = dict(src_dict)
        amount_fgc = d.pop("amount_fgc")

        currency = CheckoutSessionCreateCurrency(d.pop("currency"))

        description = d.pop("description")

        success_url = d.pop("success_url")

        cancel_url = d.pop("cancel_url")

        def _parse_amount_minor(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        amount_minor = _parse_amount_minor(d.pop("amount_minor", UNSET))

        def _parse_customer_email(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        customer_email = _parse_customer_email(d.pop("customer_email", UNSET))

        def _parse_customer_reference(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        customer_reference = _parse_customer_reference(d.pop("customer_reference", UNSET))

        def _parse_external_reference(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        external_reference = _parse_external_reference(d.pop("external_reference", UNSET))

        def _parse_metadata(data: object) -> Metadata | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                metadata_type_0 = Metadata.from_dict(data)

                return metadata_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Metadata | None | Unset, data)

        metadata = _parse_metadata(d.pop("metadata", UNSET))

        checkout_session_create = cls(
            amount_fgc=amount_fgc,
            currency=currency,
            description=description,
            success_url=success_url,
            cancel_url=cancel_url,
            amount_minor=amount_minor,
            customer_email=customer_email,
            customer_reference=customer_reference,
            external_reference=external_reference,
            metadata=metadata,
        )

        return checkout_session_create
