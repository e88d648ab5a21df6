from http import HTTPStatus
from typing import Any, cast

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.api_error import ApiError
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    after: str | Unset = UNSET,
    types: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["after"] = after

    params["types"] = types

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/events/stream",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Any | ApiError | None:
    if response.status_code == 101:
        response_101 = cast(Any, None)
        return response_101

    if response.status_code == 400:
        response_400 = ApiError.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = ApiError.from_dict(response.json())

        return response_401

    if response.status_code == 413:
        response_413 = ApiError.from_dict(response.json())

        return response_413

    if response.status_code == 426:
        response_426 = ApiError.from_dict(response.json())

        return response_426

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
) -> Response[Any | ApiError]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    after: str | Unset = UNSET,
    types: str | Unset = UNSET,
) -> Response[Any | ApiError]:
    """Stream your events over a websocket, as they commit (resumable)

     A websocket (`GET` with `Upgrade: websocket`; `wss://` over TLS). Authenticate with the
    `Authorization: Bearer` header of the handshake, as every request (a key in the URL is not accepted:
    URLs end up in logs). Frames are text, one JSON object each: first a hello (StreamHello), then each
    event exactly as `GET /events/{event_id}` and its webhooks carry it (Event), as they commit, in an
    order that never changes behind you (an event is sent once every write that began before its own has
    ended), and a StreamPing at least every `ping_seconds`. To resume without missing anything,
    reconnect with `after` = the id of the last event you received (within 30 days). Close codes: 1001
    the server is shutting down, 1013 the database cannot answer now (reconnect with `after` in either
    case), 4401 the key was revoked. At most 5 streams per merchant at once (429 `too_many_streams`). A
    request without the upgrade is answered 426 `upgrade_required`.

    Args:
        after (str | Unset):
        types (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | ApiError]
    """

    kwargs = _get_kwargs(
        after=after,
        types=types,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    after: str | Unset = UNSET,
    types: str | Unset = UNSET,
) -> Any | ApiError | None:
    """Stream your events over a websocket, as they commit (resumable)

     A websocket (`GET` with `Upgrade: websocket`; `wss://` over TLS). Authenticate with the
    `Authorization: Bearer` header of the handshake, as every request (a key in the URL is not accepted:
    URLs end up in logs). Frames are text, one JSON object each: first a hello (StreamHello), then each
    event exactly as `GET /events/{event_id}` and its webhooks carry it (Event), as they commit, in an
    order that never changes behind you (an event is sent once every write that began before its own has
    ended), and a StreamPing at least every `ping_seconds`. To resume without missing anything,
    reconnect with `after` = the id of the last event you received (within 30 days). Close codes: 1001
    the server is shutting down, 1013 the database cannot answer now (reconnect with `after` in either
    case), 4401 the key was revoked. At most 5 streams per merchant at once (429 `too_many_streams`). A
    request without the upgrade is answered 426 `upgrade_required`.

    Args:
        after (str | Unset):
        types (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | ApiError
    """

    return sync_detailed(
        client=client,
        after=after,
        types=types,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    after: str | Unset = UNSET,
    types: str | Unset = UNSET,
) -> Response[Any | ApiError]:
    """Stream your events over a websocket, as they commit (resumable)

     A websocket (`GET` with `Upgrade: websocket`; `wss://` over TLS). Authenticate with the
    `Authorization: Bearer` header of the handshake, as every request (a key in the URL is not accepted:
    URLs end up in logs). Frames are text, one JSON object each: first a hello (StreamHello), then each
    event exactly as `GET /events/{event_id}` and its webhooks carry it (Event), as they commit, in an
    order that never changes behind you (an event is sent once every write that began before its own has
    ended), and a StreamPing at least every `ping_seconds`. To resume without missing anything,
    reconnect with `after` = the id of the last event you received (within 30 days). Close codes: 1001
    the server is shutting down, 1013 the database cannot answer now (reconnect with `after` in either
    case), 4401 the key was revoked. At most 5 streams per merchant at once (429 `too_many_streams`). A
    request without the upgrade is answered 426 `upgrade_required`.

    Args:
        after (str | Unset):
        types (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | ApiError]
    """

    kwargs = _get_kwargs(
        after=after,
        types=types,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    after: str | Unset = UNSET,
    types: str | Unset = UNSET,
) -> Any | ApiError | None:
    """Stream your events over a websocket, as they commit (resumable)

     A websocket (`GET` with `Upgrade: websocket`; `wss://` over TLS). Authenticate with the
    `Authorization: Bearer` header of the handshake, as every request (a key in the URL is not accepted:
    URLs end up in logs). Frames are text, one JSON object each: first a hello (StreamHello), then each
    event exactly as `GET /events/{event_id}` and its webhooks carry it (Event), as they commit, in an
    order that never changes behind you (an event is sent once every write that began before its own has
    ended), and a StreamPing at least every `ping_seconds`. To resume without missing anything,
    reconnect with `after` = the id of the last event you received (within 30 days). Close codes: 1001
    the server is shutting down, 1013 the database cannot answer now (reconnect with `after` in either
    case), 4401 the key was revoked. At most 5 streams per merchant at once (429 `too_many_streams`). A
    request without the upgrade is answered 426 `upgrade_required`.

    Args:
        after (str | Unset):
        types (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | ApiError
    """

    return (
        await asyncio_detailed(
            client=client,
            after=after,
            types=types,
        )
    ).parsed
