from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..models.event_type import EventType
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.webhook_endpoint_update_faults_type_0 import WebhookEndpointUpdateFaultsType0


T = TypeVar("T", bound="WebhookEndpointUpdate")


@_attrs_define
class WebhookEndpointUpdate:
    """
    Attributes:
        url (None | str | Unset): The new absolute http(s) URL, under the create's rules (private targets included). The
            host must be a DNS name (letters, digits, hyphens; IDNA 2008 names accepted), a dotted-quad IPv4 or a bracketed
            IPv6 address; at most 2048 characters, no spaces.
        enabled_events (list[EventType | Literal['*']] | None | Unset): The event types to receive from now on; ["*"]
            for all.
        faults (None | Unset | WebhookEndpointUpdateFaultsType0): Faults injected into the first attempt of each
            delivery to this endpoint (test mode); null for none. Omitted keys are 0. Retries are sent clean. See
            docs/webhooks.md, "Fault injection".
    """

    url: None | str | Unset = UNSET
    enabled_events: list[EventType | Literal["*"]] | None | Unset = UNSET
    faults: None | Unset | WebhookEndpointUpdateFaultsType0 = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.webhook_endpoint_update_faults_type_0 import WebhookEndpointUpdateFaultsType0  # noqa: PLC0415

        url: None | str | Unset
        if isinstance(self.url, Unset):
            url = UNSET
        else:
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
        elif isinstance(self.faults, WebhookEndpointUpdateFaultsType0):
            faults = self.faults.to_dict()
        else:
            faults = self.faults

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if url is not UNSET:
            field_dict["url"] = url
        if enabled_events is not UNSET:
            field_dict["enabled_events"] = enabled_events
        if faults is not UNSET:
            field_dict["faults"] = faults

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.webhook_endpoint_update_faults_type_0 import WebhookEndpointUpdateFaultsType0  # noqa: PLC0415

        d = dict(src_dict)

        def _parse_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        url = _parse_url(d.pop("url", UNSET))

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

        def _parse_faults(data: object) -> None | Unset | WebhookEndpointUpdateFaultsType0:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                faults_type_0 = WebhookEndpointUpdateFaultsType0.from_dict(data)

                return faults_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | WebhookEndpointUpdateFaultsType0, data)

        faults = _parse_faults(d.pop("faults", UNSET))

        webhook_endpoint_update = cls(
            url=url,
            enabled_events=enabled_events,
            faults=faults,
        )

        return webhook_endpoint_update
