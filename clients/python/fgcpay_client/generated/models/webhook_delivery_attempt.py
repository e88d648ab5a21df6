from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.webhook_delivery_attempt_injected_type_1 import WebhookDeliveryAttemptInjectedType1
from ..models.webhook_delivery_attempt_injected_type_2_type_1 import (
    WebhookDeliveryAttemptInjectedType2Type1,
)
from ..models.webhook_delivery_attempt_injected_type_3_type_1 import (
    WebhookDeliveryAttemptInjectedType3Type1,
)

T = TypeVar("T", bound="WebhookDeliveryAttempt")


@_attrs_define
class WebhookDeliveryAttempt:
    """
    Attributes:
        at (datetime.datetime):
        status_code (int | None): The receiver's HTTP status; null when no answer came.
        latency_ms (int):
        error (None | str): Why no answer came (connection refused, timeout, destination refused); null on an answer.
        response_body (None | str): The answer's first 2 KiB as text; null when no answer came.
        injected (None | WebhookDeliveryAttemptInjectedType1 | WebhookDeliveryAttemptInjectedType2Type1 |
            WebhookDeliveryAttemptInjectedType3Type1): The fault the endpoint's `faults` injected into this attempt; null
            for none. Only a delivery's first attempt (`reordered`, `delayed`, `bad_signature`, `stale_timestamp`: one, the
            first that applied in the order bad_signature, stale_timestamp, reordered, delayed) and the extra send of a
            `duplicate` (an attempt of its own, right after the first, which does not change the delivery's status or
            schedule) carry one.
    """

    at: datetime.datetime
    status_code: int | None
    latency_ms: int
    error: None | str
    response_body: None | str
    injected: (
        None
        | WebhookDeliveryAttemptInjectedType1
        | WebhookDeliveryAttemptInjectedType2Type1
        | WebhookDeliveryAttemptInjectedType3Type1
    )

    def to_dict(self) -> dict[str, Any]:
        at = self.at.isoformat()

        status_code: int | None
        status_code = self.status_code

        latency_ms = self.latency_ms

        error: None | str
        error = self.error

        response_body: None | str
        response_body = self.response_body

        injected: None | str
        if isinstance(self.injected, WebhookDeliveryAttemptInjectedType1):
            injected = self.injected.value
        elif isinstance(self.injected, WebhookDeliveryAttemptInjectedType2Type1):
            injected = self.injected.value
        elif isinstance(self.injected, WebhookDeliveryAttemptInjectedType3Type1):
            injected = self.injected.value
        else:
            injected = self.injected

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "at": at,
                "status_code": status_code,
                "latency_ms": latency_ms,
                "error": error,
                "response_body": response_body,
                "injected": injected,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        at = datetime.datetime.fromisoformat(d.pop("at"))

        def _parse_status_code(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        status_code = _parse_status_code(d.pop("status_code"))

        latency_ms = d.pop("latency_ms")

        def _parse_error(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        error = _parse_error(d.pop("error"))

        def _parse_response_body(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        response_body = _parse_response_body(d.pop("response_body"))

        def _parse_injected(
            data: object,
        ) -> (
            None
            | WebhookDeliveryAttemptInjectedType1
            | WebhookDeliveryAttemptInjectedType2Type1
            | WebhookDeliveryAttemptInjectedType3Type1
        ):
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                injected_type_1 = WebhookDeliveryAttemptInjectedType1(data)

                return injected_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, str):
                    raise TypeError()
                injected_type_2_type_1 = WebhookDeliveryAttemptInjectedType2Type1(data)

                return injected_type_2_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, str):
                    raise TypeError()
                injected_type_3_type_1 = WebhookDeliveryAttemptInjectedType3Type1(data)

                return injected_type_3_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(
                None
                | WebhookDeliveryAttemptInjectedType1
                | WebhookDeliveryAttemptInjectedType2Type1
                | WebhookDeliveryAttemptInjectedType3Type1,
                data,
            )

        injected = _parse_injected(d.pop("injected"))

        webhook_delivery_attempt = cls(
            at=at,
            status_code=status_code,
            latency_ms=latency_ms,
            error=error,
            response_body=response_body,
            injected=injected,
        )

        return webhook_delivery_attempt
