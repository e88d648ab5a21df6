from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.api_error import ApiError
from ...models.no_body import NoBody
from ...models.redelivery import Redelivery
from ...types import UNSET, Response, Unset


def _get_kwargs(
    event_id: str,
    *,
    body: NoBody | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(idempotency_key, Unset):
        headers["Idempotency-Key"] = idempotency_key

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/events/{event_id}/redeliver".format(
            event_id=quote(str(event_id), safe=""),
        ),
    }

    if not isinstance(body, Unset):
        _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ApiError | Redelivery | None:
    if response.status_code == 202:
        response_202 = Redelivery.from_dict(response.json())

        return response_202

    if response.status_code == 400:
        response_400 = ApiError.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = ApiError.from_dict(response.json())

        return response_401

    if response.status_code == 404:
        response_404 = ApiError.from_dict(response.json())

        return response_404

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
) -> Response[ApiError | Redelivery]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    event_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: NoBody | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> Response[ApiError | Redelivery]:
    """Queue a new delivery of the event to each subscribed endpoint

    Args:
        event_id (str):
        idempotency_key (str | Unset):
        body (NoBody | Unset): This operation takes no body fields: send no body, or `{}`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ApiError | Redelivery]
    """

    kwargs = _get_kwargs(
        event_id=event_id,
        body=body,
        idempotency_key=idempotency_key,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    event_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: NoBody | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> ApiError | Redelivery | None:
    """Queue a new delivery of the event to each subscribed endpoint

    Args:
        event_id (str):
        idempotency_key (str | Unset):
        body (NoBody | Unset): This operation takes no body fields: send no body, or `{}`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ApiError | Redelivery
    """

    return sync_detailed(
        event_id=event_id,
        client=client,
        body=body,
        idempotency_key=idempotency_key,
    ).parsed


async def asyncio_detailed(
    event_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: NoBody | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> Response[ApiError | Redelivery]:
    """Queue a new delivery of the event to each subscribed endpoint

    Args:
        event_id (str):
        idempotency_key (str | Unset):
        body (NoBody | Unset): This operation takes no body fields: send no body, or `{}`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ApiError | Redelivery]
    """

    kwargs = _get_kwargs(
        event_id=event_id,
        body=body,
        idempotency_key=idempotency_key,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    event_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: NoBody | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> ApiError | Redelivery | None:
    """Queue a new delivery of the event to each subscribed endpoint

    Args:
        event_id (str):
        idempotency_key (str | Unset):
        body (NoBody | Unset): This operation takes no body fields: send no body, or `{}`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ApiError | Redelivery
    """

    return (
        await asyncio_detailed(
            event_id=event_id,
            client=client,
            body=body,
            idempotency_key=idempotency_key,
        )
    ).parsed
