from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.api_error import ApiError
from ...models.created_sandbox import CreatedSandbox
from ...models.sandbox_create import SandboxCreate
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    body: SandboxCreate | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(idempotency_key, Unset):
        headers["Idempotency-Key"] = idempotency_key

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/sandboxes",
    }

    if not isinstance(body, Unset):
        _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ApiError | CreatedSandbox | None:
    if response.status_code == 201:
        response_201 = CreatedSandbox.from_dict(response.json())

        return response_201

    if response.status_code == 400:
        response_400 = ApiError.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = ApiError.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = ApiError.from_dict(response.json())

        return response_403

    if response.status_code == 408:
        response_408 = ApiError.from_dict(response.json())

        return response_408

    if response.status_code == 409:
        response_409 = ApiError.from_dict(response.json())

        return response_409

    if response.status_code == 413:
        response_413 = ApiError.from_dict(response.json())

        return response_413

    if response.status_code == 415:
        response_415 = ApiError.from_dict(response.json())

        return response_415

    if response.status_code == 429:
        response_429 = ApiError.from_dict(response.json())

        return response_429

    if response.status_code == 500:
        response_500 = ApiError.from_dict(response.json())

        return response_500

    if response.status_code == 503:
        response_503 = ApiError.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[ApiError | CreatedSandbox]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: SandboxCreate | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> Response[ApiError | CreatedSandbox]:
    """Create a sandbox: an isolated merchant of your own, with its API key

     A sandbox is a merchant of its own: everything made with its key is its alone, and neither your key
    nor its key sees the other's objects (404). `ttl_seconds` deletes it with all its data within a
    minute of `expires_at`. At most 1,000 live sandboxes per merchant (409 `sandbox_limit_reached`); a
    sandbox's key cannot make sandboxes (403 `sandboxes_not_allowed`).

    Args:
        idempotency_key (str | Unset):
        body (SandboxCreate | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ApiError | CreatedSandbox]
    """

    kwargs = _get_kwargs(
        body=body,
        idempotency_key=idempotency_key,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    body: SandboxCreate | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> ApiError | CreatedSandbox | None:
    """Create a sandbox: an isolated merchant of your own, with its API key

     A sandbox is a merchant of its own: everything made with its key is its alone, and neither your key
    nor its key sees the other's objects (404). `ttl_seconds` deletes it with all its data within a
    minute of `expires_at`. At most 1,000 live sandboxes per merchant (409 `sandbox_limit_reached`); a
    sandbox's key cannot make sandboxes (403 `sandboxes_not_allowed`).

    Args:
        idempotency_key (str | Unset):
        body (SandboxCreate | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ApiError | CreatedSandbox
    """

    return sync_detailed(
        client=client,
        body=body,
        idempotency_key=idempotency_key,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: SandboxCreate | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> Response[ApiError | CreatedSandbox]:
    """Create a sandbox: an isolated merchant of your own, with its API key

     A sandbox is a merchant of its own: everything made with its key is its alone, and neither your key
    nor its key sees the other's objects (404). `ttl_seconds` deletes it with all its data within a
    minute of `expires_at`. At most 1,000 live sandboxes per merchant (409 `sandbox_limit_reached`); a
    sandbox's key cannot make sandboxes (403 `sandboxes_not_allowed`).

    Args:
        idempotency_key (str | Unset):
        body (SandboxCreate | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ApiError | CreatedSandbox]
    """

    kwargs = _get_kwargs(
        body=body,
        idempotency_key=idempotency_key,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    body: SandboxCreate | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> ApiError | CreatedSandbox | None:
    """Create a sandbox: an isolated merchant of your own, with its API key

     A sandbox is a merchant of its own: everything made with its key is its alone, and neither your key
    nor its key sees the other's objects (404). `ttl_seconds` deletes it with all its data within a
    minute of `expires_at`. At most 1,000 live sandboxes per merchant (409 `sandbox_limit_reached`); a
    sandbox's key cannot make sandboxes (403 `sandboxes_not_allowed`).

    Args:
        idempotency_key (str | Unset):
        body (SandboxCreate | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ApiError | CreatedSandbox
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
            idempotency_key=idempotency_key,
        )
    ).parsed
