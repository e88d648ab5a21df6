from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..models.event_type import EventType
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.webhook_endpoint_create_faults_type_0 import WebhookEndpointCreateFaultsType0


T = TypeVar("T", bound="WebhookEndpointCreate")


@_attrs_define
class WebhookEndpointCreate:
    """
    Attributes:
        url (str): Absolute http(s) URL. Private, loopback and link-local targets are refused unless the operator sets
            FGCPAY_WEBHOOK_ALLOW_PRIVATE=1; checked on save and again before every delivery, after DNS resolution. The host
            must be a DNS name (letters, digits, hyphens; IDNA 2008 names accepted), a dotted-quad IPv4 or a bracketed IPv6
            address; at most 2048 characters, no spaces.
        enabled_events (list[EventType | Literal['*']] | None | Unset): Event types to receive; omitted or ["*"] for
            all.
        faults (None | Unset | WebhookEndpointCreateFaultsType0): Faults injected into the first attempt of each
            delivery to this endpoint (test mode); null for none. Omitted keys are 0. Retries are sent clean. See
            docs/webhooks.md, "Fault injection".
    """

    url: str
    enabled_events: list[EventType | Literal["*"]] | None | Unset = UNSET
    faults: None | Unset | WebhookEndpointCreateFaultsType0 = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.webhook_endpoint_create_faults_type_0 import WebhookEndpointCreateFaultsType0  # noqa: PLC0415

        url = self.url

        enabled_events: list[Literal["*"] | str] | None | Unset
        if isinstance(self.enabled_events, Unset):
            enabled_events = UNSET
        elif isinstance(self.enabled_events, list):
            enabled_events = []
            for enabled_events_type_0_item_data in self.enabled_events:
                enabled_events_type_0_item: Literal["*"] | str
                if isinstance(enabled_events_type_0_item_data, EventType):
                    enabled_events_type_0_item = enabled_events_type_0_item_data.value
                else:
                    enabled_events_type_0_item = enabled_events_type_0_item_data
                enabled_events.append(enabled_events_type_0_item)

        else:
            enabled_events = self.enabled_events

        faults: dict[str, Any] | None | Unset
        if isinstance(self.faults, Unset):
            faults = UNSET
        elif isinstance(self.faults, WebhookEndpointCreateFaultsType0):
            faults = self.faults.to_dict()
        else:
            faults = self.faults

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "url": url,
            }
        )
        if enabled_events is not UNSET:
            field_dict["enabled_events"] = enabled_events
        if faults is not UNSET:
            field_dict["faults"] = faults

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.webhook_endpoint_create_faults_type_0 import WebhookEndpointCreateFaultsType0  # noqa: PLC0415

        d = dict(src_dict)
        url = d.pop("url")

        def _parse_enabled_events(data: object) -> list[EventType | Literal["*"]] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                enabled_events_type_0 = []
                _enabled_events_type_0 = data
                for enabled_events_type_0_item_data in _enabled_events_type_0:

                    def _parse_enabled_events_type_0_item(data: object) -> EventType | Literal["*"]:
                        try:
                            if not isinstance(data, str):
                                raise TypeError()
                            enabled_events_type_0_item_type_0 = EventType(data)

                            return enabled_events_type_0_item_type_0
                        except (TypeError, ValueError, AttributeError, KeyError):
                            pass
                        enabled_events_type_0_item_type_1 = cast(Literal["*"], data)
                        if enabled_events_type_0_item_type_1 != "*":
                            raise ValueError(
                                f"enabled_events_type_0_item_type_1 must match const '*', got '{enabled_events_type_0_item_type_1}'"
                            )
                        return enabled_events_type_0_item_type_1

                    enabled_events_type_0_item = _parse_enabled_events_type_0_item(
                        enabled_events_type_0_item_data
                    )

                    enabled_events_type_0.append(enabled_events_type_0_item)

                return enabled_events_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[EventType | Literal["*"]] | None | Unset, data)

        enabled_events = _parse_enabled_events(d.pop("enabled_events", UNSET))

        def _parse_faults(data: object) -> None | Unset | WebhookEndpointCreateFaultsType0:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                faults_type_0 = WebhookEndpointCreateFaultsType0.from_dict(data)

                return faults_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | WebhookEndpointCreateFaultsType0, data)

        faults = _parse_faults(d.pop("faults", UNSET))

        webhook_endpoint_create = cls(
            url=url,
            enabled_events=enabled_events,
            faults=faults,
        )

        return webhook_endpoint_create
