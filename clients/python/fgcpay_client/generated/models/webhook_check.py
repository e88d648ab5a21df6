from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.check_result import CheckResult


T = TypeVar("T", bound="WebhookCheck")


@_attrs_define
class WebhookCheck:
    """
    Attributes:
        object_ (Literal['webhook_check']):
        endpoint_id (str):
        url (str):
        passed (bool): true when every check passed.
        checks (list[CheckResult]):
    """

    object_: Literal["webhook_check"]
    endpoint_id: str
    url: str
    passed: bool
    checks: list[CheckResult]

    def to_dict(self) -> dict[str, Any]:
        object_ = self.object_

        endpoint_id = self.endpoint_id

        url = self.url

        passed = self.passed

        checks = []
        for checks_item_data in self.checks:
            checks_item = checks_item_data.to_dict()
            checks.append(checks_item)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "object": object_,
                "endpoint_id": endpoint_id,
                "url": url,
                "passed": passed,
                "checks": checks,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.check_result import CheckResult  # noqa: PLC0415

        d = dict(src_dict)
        object_ = cast(Literal["webhook_check"], d.pop("object"))
        if object_ != "webhook_check":
            raise ValueError(f"object must match const 'webhook_check', got '{object_}'")

        endpoint_id = d.pop("endpoint_id")

        url = d.pop("url")

        passed = d.pop("passed")

        checks = []
        _checks = d.pop("checks")
        for checks_item_data in _checks:
            checks_item = CheckResult.from_dict(checks_item_data)

            checks.append(checks_item)

        webhook_check = cls(
            object_=object_,
            endpoint_id=endpoint_id,
            url=url,
            passed=passed,
            checks=checks,
        )

        return webhook_check
