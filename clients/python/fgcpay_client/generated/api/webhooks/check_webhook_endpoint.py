from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.api_error import ApiError
from ...models.no_body import NoBody
from ...models.webhook_check import WebhookCheck
from ...types import UNSET, Response, Unset


def _get_kwargs(
    endpoint_id: str,
    *,
    body: NoBody | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/webhook_endpoints/{endpoint_id}/check".format(
            endpoint_id=quote(str(endpoint_id), safe=""),
        ),
    }

    if not isinstance(body, Unset):
        _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ApiError | WebhookCheck | None:
    if response.status_code == 200:
        response_200 = WebhookCheck.from_dict(response.json())

        return response_200

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
) -> Response[ApiError | WebhookCheck]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    endpoint_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: NoBody | Unset = UNSET,
) -> Response[ApiError | WebhookCheck]:
    """Check the endpoint's receiver: eight deliveries it must accept or refuse

     Sends the endpoint, one after another, eight deliveries of an event of type `webhook_endpoint.check`
    (not an event: in no list and no delivery log): `signed`, `redelivery` and `rotated_secrets` must be
    answered 2xx, `bad_signature`, `tampered_body`, `stale_timestamp`, `future_timestamp` and
    `missing_signature` 4xx. Each delivery waits at most 10 s for its answer and the whole check at most
    25 s. A URL the private-network rule refuses is 400 `validation_error` on `url`, nothing sent; a
    check of the same endpoint already running is 429 `rate_limited`.

    Args:
        endpoint_id (str):
        body (NoBody | Unset): This operation takes no body fields: send no body, or `{}`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ApiError | WebhookCheck]
    """

    kwargs = _get_kwargs(
        endpoint_id=endpoint_id,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    endpoint_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: NoBody | Unset = UNSET,
) -> ApiError | WebhookCheck | None:
    """Check the endpoint's receiver: eight deliveries it must accept or refuse

     Sends the endpoint, one after another, eight deliveries of an event of type `webhook_endpoint.check`
    (not an event: in no list and no delivery log): `signed`, `redelivery` and `rotated_secrets` must be
    answered 2xx, `bad_signature`, `tampered_body`, `stale_timestamp`, `future_timestamp` and
    `missing_signature` 4xx. Each delivery waits at most 10 s for its answer and the whole check at most
    25 s. A URL the private-network rule refuses is 400 `validation_error` on `url`, nothing sent; a
    check of the same endpoint already running is 429 `rate_limited`.

    Args:
        endpoint_id (str):
        body (NoBody | Unset): This operation takes no body fields: send no body, or `{}`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ApiError | WebhookCheck
    """

    return sync_detailed(
        endpoint_id=endpoint_id,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    endpoint_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: NoBody | Unset = UNSET,
) -> Response[ApiError | WebhookCheck]:
    """Check the endpoint's receiver: eight deliveries it must accept or refuse

     Sends the endpoint, one after another, eight deliveries of an event of type `webhook_endpoint.check`
    (not an event: in no list and no delivery log): `signed`, `redelivery` and `rotated_secrets` must be
    answered 2xx, `bad_signature`, `tampered_body`, `stale_timestamp`, `future_timestamp` and
    `missing_signature` 4xx. Each delivery waits at most 10 s for its answer and the whole check at most
    25 s. A URL the private-network rule refuses is 400 `validation_error` on `url`, nothing sent; a
    check of the same endpoint already running is 429 `rate_limited`.

    Args:
        endpoint_id (str):
        body (NoBody | Unset): This operation takes no body fields: send no body, or `{}`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ApiError | WebhookCheck]
    """

    kwargs = _get_kwargs(
        endpoint_id=endpoint_id,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    endpoint_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: NoBody | Unset = UNSET,
) -> ApiError | WebhookCheck | None:
    """Check the endpoint's receiver: eight deliveries it must accept or refuse

     Sends the endpoint, one after another, eight deliveries of an event of type `webhook_endpoint.check`
    (not an event: in no list and no delivery log): `signed`, `redelivery` and `rotated_secrets` must be
    answered 2xx, `bad_signature`, `tampered_body`, `stale_timestamp`, `future_timestamp` and
    `missing_signature` 4xx. Each delivery waits at most 10 s for its answer and the whole check at most
    25 s. A URL the private-network rule refuses is 400 `validation_error` on `url`, nothing sent; a
    check of the same endpoint already running is 429 `rate_limited`.

    Args:
        endpoint_id (str):
        body (NoBody | Unset): This operation takes no body fields: send no body, or `{}`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ApiError | WebhookCheck
    """

    return (
        await asyncio_detailed(
            endpoint_id=endpoint_id,
            client=client,
            body=body,
        )
    ).parsed
