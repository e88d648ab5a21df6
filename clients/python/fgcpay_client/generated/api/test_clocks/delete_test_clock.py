from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.api_error import ApiError
from ...models.deleted_test_clock import DeletedTestClock
from ...types import Response


def _get_kwargs(
    clock_id: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "delete",
        "url": "/test_clocks/{clock_id}".format(
            clock_id=quote(str(clock_id), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ApiError | DeletedTestClock | None:
    if response.status_code == 200:
        response_200 = DeletedTestClock.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = ApiError.from_dict(response.json())

        return response_401

    if response.status_code == 404:
        response_404 = ApiError.from_dict(response.json())

        return response_404

    if response.status_code == 413:
        response_413 = ApiError.from_dict(response.json())

        return response_413

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
) -> Response[ApiError | DeletedTestClock]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    clock_id: str,
    *,
    client: AuthenticatedClient | Client,
) -> Response[ApiError | DeletedTestClock]:
    """Delete a test clock and the subscriptions on it

    Args:
        clock_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ApiError | DeletedTestClock]
    """

    kwargs = _get_kwargs(
        clock_id=clock_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    clock_id: str,
    *,
    client: AuthenticatedClient | Client,
) -> ApiError | DeletedTestClock | None:
    """Delete a test clock and the subscriptions on it

    Args:
        clock_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ApiError | DeletedTestClock
    """

    return sync_detailed(
        clock_id=clock_id,
        client=client,
    ).parsed


async def asyncio_detailed(
    clock_id: str,
    *,
    client: AuthenticatedClient | Client,
) -> Response[ApiError | DeletedTestClock]:
    """Delete a test clock and the subscriptions on it

    Args:
        clock_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ApiError | DeletedTestClock]
    """

    kwargs = _get_kwargs(
        clock_id=clock_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    clock_id: str,
    *,
    client: AuthenticatedClient | Client,
) -> ApiError | DeletedTestClock | None:
    """Delete a test clock and the subscriptions on it

    Args:
        clock_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ApiError | DeletedTestClock
    """

    return (
        await asyncio_detailed(
            clock_id=clock_id,
            client=client,
        )
    ).parsed
