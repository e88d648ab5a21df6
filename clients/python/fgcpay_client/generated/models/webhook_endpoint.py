from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.webhook_endpoint_status import WebhookEndpointStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.faults import Faults


T = TypeVar("T", bound="WebhookEndpoint")


@_attrs_define
class WebhookEndpoint:
    """
    Attributes:
        id (str):
        object_ (Literal['webhook_endpoint']):
        url (str):
        enabled_events (list[str]):
        status (WebhookEndpointStatus):
        created_at (datetime.datetime):
        faults (Faults | None): Faults injected into the first attempt of each delivery (test mode); null for none. See
            docs/webhooks.md, "Fault injection".
        secret (str | Unset): The signing secret: `whsec_` + base64 of 32 random bytes. Only in the answers of create
            and rotate_secret.
        previous_secret_expires_at (datetime.datetime | Unset): Only in the answer of rotate_secret: until then (24
            hours) every delivery is signed with the previous secret too (a second `v1=`).
        deleted (bool | Unset): true in the answer of DELETE.
    """

    id: str
    object_: Literal["webhook_endpoint"]
    url: str
    enabled_events: list[str]
    status: WebhookEndpointStatus
    created_at: datetime.datetime
    faults: Faults | None
    secret: str | Unset = UNSET
    previous_secret_expires_at: datetime.datetime | Unset = UNSET
    deleted: bool | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.faults import Faults  # noqa: PLC0415

        id = self.id

        object_ = self.object_

        url = self.url

        enabled_events = self.enabled_events

        status = self.status.value

        created_at = self.created_at.isoformat()

        faults: dict[str, Any] | None
        if isinstance(self.faults, Faults):
            faults = self.faults.to_dict()
        else:
            faults = self.faults

        secret = self.secret

        previous_secret_expires_at: str | Unset = UNSET
        if not isinstance(self.previous_secret_expires_at, Unset):
            previous_secret_expires_at = self.previous_secret_expires_at.isoformat()

        deleted = self.deleted

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "object": object_,
                "url": url,
                "enabled_events": enabled_events,
                "status": status,
                "created_at": created_at,
                "faults": faults,
            }
        )
        if secret is not UNSET:
            field_dict["secret"] = secret
        if previous_secret_expires_at is not UNSET:
            field_dict["previous_secret_expires_at"] = previous_secret_expires_at
        if deleted is not UNSET:
            field_dict["deleted"] = deleted

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.faults import Faults  # noqa: PLC0415

        d = dict(src_dict)
        id = d.pop("id")

        object_ = cast(Literal["webhook_endpoint"], d.pop("object"))
        if object_ != "webhook_endpoint":
            raise ValueError(f"object must match const 'webhook_endpoint', got '{object_}'")

        url = d.pop("url")

        enabled_events = cast(list[str], d.pop("enabled_events"))

        status = WebhookEndpointStatus(d.pop("status"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        def _parse_faults(data: object) -> Faults | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                faults_type_0 = Faults.from_dict(data)

                return faults_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Faults | None, data)

        faults = _parse_faults(d.pop("faults"))

        secret = d.pop("secret", UNSET)

        _previous_secret_expires_at = d.pop("previous_secret_expires_at", UNSET)
        previous_secret_expires_at: datetime.datetime | Unset
        if isinstance(_previous_secret_expires_at, Unset):
            previous_secret_expires_at = UNSET
        else:
            previous_secret_expires_at = datetime.datetime.fromisoformat(
                _previous_secret_expires_at
            )

        deleted = d.pop("deleted", UNSET)

        webhook_endpoint = cls(
            id=id,
            object_=object_,
            url=url,
            enabled_events=enabled_events,
            status=status,
            created_at=created_at,
            faults=faults,
            secret=secret,
            previous_secret_expires_at=previous_secret_expires_at,
            deleted=deleted,
        )

        webhook_endpoint.additional_properties = d
        return webhook_endpoint

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
