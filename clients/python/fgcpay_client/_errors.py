"""The exception an error answer raises: the service's ApiError body, as attributes."""

from __future__ import annotations

from typing import Any

import httpx


class ApiError(Exception):
    """An error answer of the API: `status` (the HTTP status) and the body's `code`,
    `message`, `details` and `request_id` (quote it when asking about a request)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: Any = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.request_id = request_id

    def __repr__(self) -> str:
        return (
            f"ApiError(status={self.status!r}, code={self.code!r}, message={self.message!r}, "
            f"details={self.details!r}, request_id={self.request_id!r})"
        )

    @classmethod
    def from_response(cls, response: httpx.Response) -> ApiError:
        """The error `response` carries; an answer that is not an ApiError body (a proxy's
        HTML page, say) still raises one, with code `unexpected_response`."""
        request_id = response.headers.get("Request-Id")
        try:
            body = response.json()
        except ValueError:
            body = None
        if isinstance(body, dict) and isinstance(body.get("code"), str):
            return cls(
                response.status_code,
                body["code"],
                str(body.get("message", "")),
                body.get("details"),
                body.get("request_id") or request_id,
            )
        text = response.text[:200]
        return cls(response.status_code, "unexpected_response", text, None, request_id)
