from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..models.check_result_expected import CheckResultExpected
from ..models.check_result_name import CheckResultName

T = TypeVar("T", bound="CheckResult")


@_attrs_define
class CheckResult:
    """
    Attributes:
        name (CheckResultName): The check; the eight come in this order.
        passed (bool):
        expected (CheckResultExpected): The class of answer that passes the check.
        observed (str): The receiver's HTTP status as text (`200`, `401`), or why no answer came (`timeout after 10 s`,
            a connection error, `destination refused: ...`).
    """

    name: CheckResultName
    passed: bool
    expected: CheckResultExpected
    observed: str

    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        passed = self.passed

        expected = self.expected.value

        observed = self.observed

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
                "passed": passed,
                "expected": expected,
                "observed": observed,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = CheckResultName(d.pop("name"))

        passed = d.pop("passed")

        expected = CheckResultExpected(d.pop("expected"))

        observed = d.pop("observed")

        check_result = cls(
            name=name,
            passed=passed,
            expected=expected,
            observed=observed,
        )

        return check_result
