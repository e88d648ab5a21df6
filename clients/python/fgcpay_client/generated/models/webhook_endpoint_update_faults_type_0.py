from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="WebhookEndpointUpdateFaultsType0")


@_attrs_define
class WebhookEndpointUpdateFaultsType0:
    """Faults injected into the first attempt of each delivery to this endpoint (test mode); null for none. Omitted keys
    are 0. Retries are sent clean. See docs/webhooks.md, "Fault injection".

        Attributes:
            duplicate (float | Unset): The probability that a delivery's first attempt gets `duplicate`.
            reorder (float | Unset): The probability that a delivery's first attempt gets `reorder`.
            bad_signature (float | Unset): The probability that a delivery's first attempt gets `bad_signature`.
            stale_timestamp (float | Unset): The probability that a delivery's first attempt gets `stale_timestamp`.
            delay_ms (int | Unset): Every first attempt waits this long before it is sent.
            seed (int | Unset): With the delivery's ordinal at the endpoint, decides which deliveries get which faults.
    """

    duplicate: float | Unset = UNSET
    reorder: float | Unset = UNSET
    bad_signature: float | Unset = UNSET
    stale_timestamp: float | Unset = UNSET
    delay_ms: int | Unset = UNSET
    seed: int | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        duplicate = self.duplicate

        reorder = self.reorder

        bad_signature = self.bad_signature

        stale_timestamp = self.stale_timestamp

        delay_ms = self.delay_ms

        seed = self.seed

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if duplicate is not UNSET:
            field_dict["duplicate"] = duplicate
        if reorder is not UNSET:
            field_dict["reorder"] = reorder
        if bad_signature is not UNSET:
            field_dict["bad_signature"] = bad_signature
        if stale_timestamp is not UNSET:
            field_dict["stale_timestamp"] = stale_timestamp
        if delay_ms is not UNSET:
            field_dict["delay_ms"] = delay_ms
        if seed is not UNSET:
            field_dict["seed"] = seed

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        duplicate = d.pop("duplicate", UNSET)

        reorder = d.pop("reorder", UNSET)

        bad_signature = d.pop("bad_signature", UNSET)

        stale_timestamp = d.pop("stale_timestamp", UNSET)

        delay_ms = d.pop("delay_ms", UNSET)

        seed = d.pop("seed", UNSET)

        webhook_endpoint_update_faults_type_0 = cls(
            duplicate=duplicate,
            reorder=reorder,
            bad_signature=bad_signature,
            stale_timestamp=stale_timestamp,
            delay_ms=delay_ms,
            seed=seed,
        )

        return webhook_endpoint_update_faults_type_0
