from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.subscription_create_currency import SubscriptionCreateCurrency
from ..models.subscription_create_interval import SubscriptionCreateInterval
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.metadata import Metadata


T = TypeVar("T", bound="SubscriptionCreate")


@_attrs_define
class SubscriptionCreate:
    """
    Attributes:
        amount_fgc (str): Decimal FGC amount as a string: digits with an optional fraction (leading and trailing zeros
            are fine), at most two significant decimal places, above 0 and at most 1000000.00; parsed exactly, never
            rounded. No sign, exponent, spaces or JSON number. Responses show exactly two decimals, e.g. "10.50".
        currency (SubscriptionCreateCurrency):
        interval (SubscriptionCreateInterval): How often amount_fgc is charged, from approval.
        description (str): 1 to 500 characters. Not blank (whitespace only is blank); no control characters other than
            tab, newline and carriage return, and no invisible format characters (Unicode category Cf: zero-width and
            bidirectional controls such as U+200B, U+202E, U+2066).
        merchant_customer_reference (str): 1 to 255 characters. Not blank (whitespace only is blank); no control
            characters other than tab, newline and carriage return, and no invisible format characters (Unicode category Cf:
            zero-width and bidirectional controls such as U+200B, U+202E, U+2066).
        success_url (str): Absolute http or https URL. After approval the customer is sent here with
            `subscription_id=<id>` added to the query. The host must be a DNS name (letters, digits, hyphens; IDNA 2008
            names accepted), a dotted-quad IPv4 or a bracketed IPv6 address; at most 2048 characters, no spaces.
        cancel_url (str): Absolute http or https URL. The host must be a DNS name (letters, digits, hyphens; IDNA 2008
            names accepted), a dotted-quad IPv4 or a bracketed IPv6 address; at most 2048 characters, no spaces.
        amount_minor (None | str | Unset): Deprecated: the amount per interval in minor units (1 FGC = 100), a string of
            digits from 1 to 100000000. If sent it must agree with amount_fgc; the response then carries `Deprecation:
            true`.
        customer_email (None | str | Unset): An address checked for syntax only, offline (never resolved): a dot-atom
            local part and a domain of at least two DNS labels. Reserved names such as `.test`, `.example` and `.localhost`
            are accepted.
        external_reference (None | str | Unset): At most 255 characters. Not blank (whitespace only is blank); no
            control characters other than tab, newline and carriage return, and no invisible format characters (Unicode
            category Cf: zero-width and bidirectional controls such as U+200B, U+202E, U+2066).
        max_total_amount_fgc (None | str | Unset):
        end_date (datetime.datetime | None | Unset): When the subscription ends, in the future: nothing is charged from
            then on. An RFC 3339 date-time with seconds and a time zone (`Z` or an offset), at most microsecond precision,
            e.g. 2026-11-24T14:00:00Z.
        test_clock (None | str | Unset): A test clock of yours: the subscription lives by its time (its approval,
            renewals, retries and ending).
        metadata (Metadata | None | Unset):
    """

    amount_fgc: str
    currency: SubscriptionCreateCurrency
    interval: SubscriptionCreateInterval
    description: str
    merchant_customer_reference: str
    success_url: str
    cancel_url: str
    amount_minor: None | str | Unset = UNSET
    customer_email: None | str | Unset = UNSET
    external_reference: None | str | Unset = UNSET
    max_total_amount_fgc: None | str | Unset = UNSET
    end_date: datetime.datetime | None | Unset = UNSET
    test_clock: None | str | Unset = UNSET
    metadata: Metadata | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.metadata import Metadata  # noqa: PLC0415

        amount_fgc = self.amount_fgc

        currency = self.currency.value

        interval = self.interval.value

        description = self.description

        merchant_customer_reference = self.merchant_customer_reference

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

        external_reference: None | str | Unset
        if isinstance(self.external_reference, Unset):
            external_reference = UNSET
        else:
            external_reference = self.external_reference

        max_total_amount_fgc: None | str | Unset
        if isinstance(self.max_total_amount_fgc, Unset):
            max_total_amount_fgc = UNSET
        else:
            max_total_amount_fgc = self.max_total_amount_fgc

        end_date: None | str | Unset
        if isinstance(self.end_date, Unset):
            end_date = UNSET
        elif isinstance(self.end_date, datetime.datetime):
            end_date = self.end_date.isoformat()
        else:
            end_date = self.end_date

        test_clock: None | str | Unset
        if isinstance(self.test_clock, Unset):
            test_clock = UNSET
        else:
            test_clock = self.test_clock

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
                "interval": interval,
                "description": description,
                "merchant_customer_reference": merchant_customer_reference,
                "success_url": success_url,
                "cancel_url": cancel_url,
            }
        )
        if amount_minor is not UNSET:
            field_dict["amount_minor"] = amount_minor
        if customer_email is not UNSET:
            field_dict["customer_email"] = customer_email
        if external_reference is not UNSET:
            field_dict["external_reference"] = external_reference
        if max_total_amount_fgc is not UNSET:
            field_dict["max_total_amount_fgc"] = max_total_amount_fgc
        if end_date is not UNSET:
            field_dict["end_date"] = end_date
        if test_clock is not UNSET:
            field_dict["test_clock"] = test_clock
        if metadata is not UNSET:
            field_dict["metadata"] = metadata

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.metadata import Metadata  # noqa: PLC0415

        d = dict(src_dict)
        amount_fgc = d.pop("amount_fgc")

        currency = SubscriptionCreateCurrency(d.pop("currency"))

        interval = SubscriptionCreateInterval(d.pop("interval"))

        description = d.pop("description")

        merchant_customer_reference = d.pop("merchant_customer_reference")

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

        def _parse_external_reference(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        external_reference = _parse_external_reference(d.pop("external_reference", UNSET))

        def _parse_max_total_amount_fgc(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        max_total_amount_fgc = _parse_max_total_amount_fgc(d.pop("max_total_amount_fgc", UNSET))

        def _parse_end_date(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                end_date_type_0 = datetime.datetime.fromisoformat(data)

                return end_date_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        end_date = _parse_end_date(d.pop("end_date", UNSET))

        def _parse_test_clock(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        test_clock = _parse_test_clock(d.pop("test_clock", UNSET))

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

        subscription_create = cls(
            amount_fgc=amount_fgc,
            currency=currency,
            interval=interval,
            description=description,
            merchant_customer_reference=merchant_customer_reference,
            success_url=success_url,
            cancel_url=cancel_url,
            amount_minor=amount_minor,
            customer_email=customer_email,
            external_reference=external_reference,
            max_total_amount_fgc=max_total_amount_fgc,
            end_date=end_date,
            test_clock=test_clock,
            metadata=metadata,
        )

        return subscription_create
