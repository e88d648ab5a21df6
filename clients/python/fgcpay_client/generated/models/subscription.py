from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.subscription_ended_reason_type_1 import SubscriptionEndedReasonType1
from ..models.subscription_ended_reason_type_2_type_1 import SubscriptionEndedReasonType2Type1
from ..models.subscription_ended_reason_type_3_type_1 import SubscriptionEndedReasonType3Type1
from ..models.subscription_interval import SubscriptionInterval
from ..models.subscription_status import SubscriptionStatus

if TYPE_CHECKING:
    from ..models.subscription_metadata import SubscriptionMetadata


T = TypeVar("T", bound="Subscription")


@_attrs_define
class Subscription:
    """
    Attributes:
        id (str):
        object_ (Literal['subscription']):
        mode (Literal['test']):
        subscription_id (str):
        status (SubscriptionStatus): `paused` (waiting for the customer's approval) -> `active` (approved; the first
            interval charged) -> `past_due` (a renewal declined, retried 1 and 3 days after its due time) -> `active` again
            or `ended`; `cancelled` by the cancel operation from `paused`, `active` or `past_due`; `ended` when end_date
            passes, the next charge would pass max_total_amount_fgc, the retries are declined, or (on a test clock) the next
            period would end after 9999-12-31T23:59:59Z. `cancelled` and `ended` are final.
        interval (SubscriptionInterval):
        currency (Literal['FGC']):
        amount_fgc (str): Charged every interval. Normalized, two decimals.
        amount_minor (str): Integer minor units as a string.
        eur_cents (str): amount_fgc x FGCPAY_EUR_CENTS_PER_FGC (default 100), rounded half-up, as an integer string;
            fixed at creation.
        checkout_url (str): PUBLIC_URL + /checkout/<id>: the hosted page where the customer approves. Keep it between
            you and your customer.
        description (str):
        merchant_customer_reference (str):
        customer_email (None | str):
        success_url (str):
        cancel_url (str):
        external_reference (None | str):
        max_total_amount_fgc (None | str): The most charged in all; null for no limit. Normalized, two decimals.
        end_date (datetime.datetime | None): When the subscription ends; null for never. UTC, millisecond precision,
            e.g. 2026-11-22T14:07:24.621Z
        current_period_start (datetime.datetime | None): The start of the last period paid; null until approved. UTC,
            millisecond precision, e.g. 2026-11-22T14:07:24.621Z
        current_period_end (datetime.datetime | None): The end of the last period paid: when the next charge is due
            (null until approved). UTC, millisecond precision, e.g. 2026-11-22T14:07:24.621Z
        charged_total_fgc (str): Every charge so far. Normalized, two decimals.
        charge_count (int): Charges so far, the approval's first.
        approved_at (datetime.datetime | None): Null until approved. UTC, millisecond precision, e.g.
            2026-11-22T14:07:24.621Z
        cancelled_at (datetime.datetime | None): Null unless cancelled. UTC, millisecond precision, e.g.
            2026-11-22T14:07:24.621Z
        ended_at (datetime.datetime | None): Null unless ended. UTC, millisecond precision, e.g.
            2026-11-22T14:07:24.621Z
        ended_reason (None | SubscriptionEndedReasonType1 | SubscriptionEndedReasonType2Type1 |
            SubscriptionEndedReasonType3Type1):
        test_clock (None | str): The test clock the subscription lives by; null for real time.
        metadata (SubscriptionMetadata):
        created_at (datetime.datetime): UTC, millisecond precision, e.g. 2026-11-22T14:07:24.621Z
        updated_at (datetime.datetime): UTC, millisecond precision, e.g. 2026-11-22T14:07:24.621Z
    """

    id: str
    object_: Literal["subscription"]
    mode: Literal["test"]
    subscription_id: str
    status: SubscriptionStatus
    interval: SubscriptionInterval
    currency: Literal["FGC"]
    amount_fgc: str
    amount_minor: str
    eur_cents: str
    checkout_url: str
    description: str
    merchant_customer_reference: str
    customer_email: None | str
    success_url: str
    cancel_url: str
    external_reference: None | str
    max_total_amount_fgc: None | str
    end_date: datetime.datetime | None
    current_period_start: datetime.datetime | None
    current_period_end: datetime.datetime | None
    charged_total_fgc: str
    charge_count: int
    approved_at: datetime.datetime | None
    cancelled_at: datetime.datetime | None
    ended_at: datetime.datetime | None
    ended_reason: (
        None
        | SubscriptionEndedReasonType1
        | SubscriptionEndedReasonType2Type1
        | SubscriptionEndedReasonType3Type1
    )
    test_clock: None | str
    metadata: SubscriptionMetadata
    created_at: datetime.datetime
    updated_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        object_ = self.object_

        mode = self.mode

        subscription_id = self.subscription_id

        status = self.status.value

        interval = self.interval.value

        currency = self.currency

        amount_fgc = self.amount_fgc

        amount_minor = self.amount_minor

        eur_cents = self.eur_cents

        checkout_url = self.checkout_url

        description = self.description

        merchant_customer_reference = self.merchant_customer_reference

        customer_email: None | str
        customer_email = self.customer_email

        success_url = self.success_url

        cancel_url = self.cancel_url

        external_reference: None | str
        external_reference = self.external_reference

        max_total_amount_fgc: None | str
        max_total_amount_fgc = self.max_total_amount_fgc

        end_date: None | str
        if isinstance(self.end_date, datetime.datetime):
            end_date = self.end_date.isoformat()
        else:
            end_date = self.end_date

        current_period_start: None | str
        if isinstance(self.current_period_start, datetime.datetime):
            current_period_start = self.current_period_start.isoformat()
        else:
            current_period_start = self.current_period_start

        current_period_end: None | str
        if isinstance(self.current_period_end, datetime.datetime):
            current_period_end = self.current_period_end.isoformat()
        else:
            current_period_end = self.current_period_end

        charged_total_fgc = self.charged_total_fgc

        charge_count = self.charge_count

        approved_at: None | str
        if isinstance(self.approved_at, datetime.datetime):
            approved_at = self.approved_at.isoformat()
        else:
            approved_at = self.approved_at

        cancelled_at: None | str
        if isinstance(self.cancelled_at, datetime.datetime):
            cancelled_at = self.cancelled_at.isoformat()
        else:
            cancelled_at = self.cancelled_at

        ended_at: None | str
        if isinstance(self.ended_at, datetime.datetime):
            ended_at = self.ended_at.isoformat()
        else:
            ended_at = self.ended_at

        ended_reason: None | str
        if isinstance(self.ended_reason, SubscriptionEndedReasonType1):
            ended_reason = self.ended_reason.value
        elif isinstance(self.ended_reason, SubscriptionEndedReasonType2Type1):
            ended_reason = self.ended_reason.value
        elif isinstance(self.ended_reason, SubscriptionEndedReasonType3Type1):
            ended_reason = self.ended_reason.value
        else:
            ended_reason = self.ended_reason

        test_clock: None | str
        test_clock = self.test_clock

        metadata = self.metadata.to_dict()

        created_at = self.created_at.isoformat()

        updated_at = self.updated_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "object": object_,
                "mode": mode,
                "subscription_id": subscription_id,
                "status": status,
                "interval": interval,
                "currency": currency,
                "amount_fgc": amount_fgc,
                "amount_minor": amount_minor,
                "eur_cents": eur_cents,
                "checkout_url": checkout_url,
                "description": description,
                "merchant_customer_reference": merchant_customer_reference,
                "customer_email": customer_email,
                "success_url": success_url,
                "cancel_url": cancel_url,
                "external_reference": external_reference,
                "max_total_amount_fgc": max_total_amount_fgc,
                "end_date": end_date,
                "current_period_start": current_period_start,
                "current_period_end": current_period_end,
                "charged_total_fgc": charged_total_fgc,
                "charge_count": charge_count,
                "approved_at": approved_at,
                "cancelled_at": cancelled_at,
                "ended_at": ended_at,
                "ended_reason": ended_reason,
                "test_clock": test_clock,
                "metadata": metadata,
                "created_at": created_at,
                "updated_at": updated_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.subscription_metadata import SubscriptionMetadata  # noqa: PLC0415

        d = dict(src_dict)
        id = d.pop("id")

        object_ = cast(Literal["subscription"], d.pop("object"))
        if object_ != "subscription":
            raise ValueError(f"object must match const 'subscription', got '{object_}'")

        mode = cast(Literal["test"], d.pop("mode"))
        if mode != "test":
            raise ValueError(f"mode must match const 'test', got '{mode}'")

        subscription_id = d.pop("subscription_id")

        status = SubscriptionStatus(d.pop("status"))

        interval = SubscriptionInterval(d.pop("interval"))

        currency = cast(Literal["FGC"], d.pop("currency"))
        if currency != "FGC":
            raise ValueError(f"currency must match const 'FGC', got '{currency}'")

        amount_fgc = d.pop("amount_fgc")

        amount_minor = d.pop("amount_minor")

        eur_cents = d.pop("eur_cents")

        checkout_url = d.pop("checkout_url")

        description = d.pop("description")

        merchant_customer_reference = d.pop("merchant_customer_reference")

        def _parse_customer_email(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        customer_email = _parse_customer_email(d.pop("customer_email"))

        success_url = d.pop("success_url")

        cancel_url = d.pop("cancel_url")

        def _parse_external_reference(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        external_reference = _parse_external_reference(d.pop("external_reference"))

        def _parse_max_total_amount_fgc(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        max_total_amount_fgc = _parse_max_total_amount_fgc(d.pop("max_total_amount_fgc"))

        def _parse_end_date(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                end_date_type_0 = datetime.datetime.fromisoformat(data)

                return end_date_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        end_date = _parse_end_date(d.pop("end_date"))

        def _parse_current_period_start(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                current_period_start_type_0 = datetime.datetime.fromisoformat(data)

                return current_period_start_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        current_period_start = _parse_current_period_start(d.pop("current_period_start"))

        def _parse_current_period_end(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                current_period_end_type_0 = datetime.datetime.fromisoformat(data)

                return current_period_end_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        current_period_end = _parse_current_period_end(d.pop("current_period_end"))

        charged_total_fgc = d.pop("charged_total_fgc")

        charge_count = d.pop("charge_count")

        def _parse_approved_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                approved_at_type_0 = datetime.datetime.fromisoformat(data)

                return approved_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        approved_at = _parse_approved_at(d.pop("approved_at"))

        def _parse_cancelled_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                cancelled_at_type_0 = datetime.datetime.fromisoformat(data)

                return cancelled_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        cancelled_at = _parse_cancelled_at(d.pop("cancelled_at"))

        def _parse_ended_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                ended_at_type_0 = datetime.datetime.fromisoformat(data)

                return ended_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        ended_at = _parse_ended_at(d.pop("ended_at"))

        def _parse_ended_reason(
            data: object,
        ) -> (
            None
            | SubscriptionEndedReasonType1
            | SubscriptionEndedReasonType2Type1
            | SubscriptionEndedReasonType3Type1
        ):
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                ended_reason_type_1 = SubscriptionEndedReasonType1(data)

                return ended_reason_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, str):
                    raise TypeError()
                ended_reason_type_2_type_1 = SubscriptionEndedReasonType2Type1(data)

                return ended_reason_type_2_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, str):
                    raise TypeError()
                ended_reason_type_3_type_1 = SubscriptionEndedReasonType3Type1(data)

                return ended_reason_type_3_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(
                None
                | SubscriptionEndedReasonType1
                | SubscriptionEndedReasonType2Type1
                | SubscriptionEndedReasonType3Type1,
                data,
            )

        ended_reason = _parse_ended_reason(d.pop("ended_reason"))

        def _parse_test_clock(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        test_clock = _parse_test_clock(d.pop("test_clock"))

        metadata = SubscriptionMetadata.from_dict(d.pop("metadata"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        subscription = cls(
            id=id,
            object_=object_,
            mode=mode,
            subscription_id=subscription_id,
            status=status,
            interval=interval,
            currency=currency,
            amount_fgc=amount_fgc,
            amount_minor=amount_minor,
            eur_cents=eur_cents,
            checkout_url=checkout_url,
            description=description,
            merchant_customer_reference=merchant_customer_reference,
            customer_email=customer_email,
            success_url=success_url,
            cancel_url=cancel_url,
            external_reference=external_reference,
            max_total_amount_fgc=max_total_amount_fgc,
            end_date=end_date,
            current_period_start=current_period_start,
            current_period_end=current_period_end,
            charged_total_fgc=charged_total_fgc,
            charge_count=charge_count,
            approved_at=approved_at,
            cancelled_at=cancelled_at,
            ended_at=ended_at,
            ended_reason=ended_reason,
            test_clock=test_clock,
            metadata=metadata,
            created_at=created_at,
            updated_at=updated_at,
        )

        subscription.additional_properties = d
        return subscription

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
