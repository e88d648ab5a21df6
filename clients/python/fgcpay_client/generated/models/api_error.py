from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..models.api_error_code import ApiErrorCode

T = TypeVar("T", bound="ApiError")


@_attrs_define
class ApiError:
    """
    Attributes:
        code (ApiErrorCode):
        message (str): For a person; may change. Never contains a key, secret or PIN.
        details (Any): For `validation_error`: a list of `{field, message}` (FieldError). For `rate_limited`:
            `{retry_after_seconds}`; for `too_many_streams`: `{retry_after_seconds, most_streams}`. Otherwise null or an
            object.
        request_id (str):
    """

    code: ApiErrorCode
    message: str
    details: Any
    request_id: str

    def to_dict(self) -> dict[str, Any]:
        code = self.code.value

        message = self.message

        details = self.details

        request_id = self.request_id

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "code": code,
                "message": message,
                "details": details,
                "request_id": request_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        code = ApiErrorCode(d.pop("code"))

        message = d.pop("message")

        details = d.pop("details")

        request_id = d.pop("request_id")

        api_error = cls(
            code=code,
            message=message,
            details=details,
            request_id=request_id,
        )

        return api_error
