from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.api_error import ApiError
from ...models.list_webhook_deliveries_status import ListWebhookDeliveriesStatus
from ...models.webhook_delivery_list import WebhookDeliveryList
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    limit: int | Unset = 20,
    starting_after: str | Unset = UNSET,
    status: ListWebhookDeliveriesStatus | Unset = UNSET,
    endpoint_id: str | Unset = UNSET,
    event_id: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["limit"] = limit

    params["starting_after"] = starting_after

    json_status: str | Unset = UNSET
    if not isinstance(status, Unset):
        json_status = status.value

    params["status"] = json_status

    params["endpoint_id"] = endpoint_id

    params["event_id"] = event_id

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/webhook_deliveries",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ApiError | WebhookDeliveryList | None:
    if response.status_code == 200:
        response_200 = WebhookDeliveryList.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = ApiError.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = ApiError.from_dict(response.json())

        return response_401

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
) -> Response[ApiError | WebhookDeliveryList]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    limit: int | Unset = 20,
    starting_after: str | Unset = UNSET,
    status: ListWebhookDeliveriesStatus | Unset = UNSET,
    endpoint_id: str | Unset = UNSET,
    event_id: str | Unset = UNSET,
) -> Response[ApiError | WebhookDeliveryList]:
    """List webhook deliveries, each with its attempts, newest first

     The delivery log: every delivery of an event to an endpoint (a redelivery is a new delivery), with
    every attempt (time, status code, latency, error, first 2 KiB of the answer). Filters combine.

    Args:
        limit (int | Unset):  Default: 20.
        starting_after (str | Unset):
        status (ListWebhookDeliveriesStatus | Unset):
        endpoint_id (str | Unset):
        event_id (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ApiError | WebhookDeliveryList]
    """

    kwargs = _get_kwargs(
        limit=limit,
        starting_after=starting_after,
        status=status,
        endpoint_id=endpoint_id,
        event_id=event_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    limit: int | Unset = 20,
    starting_after: str | Unset = UNSET,
    status: ListWebhookDeliveriesStatus | Unset = UNSET,
    endpoint_id: str | Unset = UNSET,
    event_id: str | Unset = UNSET,
) -> ApiError | WebhookDeliveryList | None:
    """List webhook deliveries, each with its attempts, newest first

     The delivery log: every delivery of an event to an endpoint (a redelivery is a new delivery), with
    every attempt (time, status code, latency, error, first 2 KiB of the answer). Filters combine.

    Args:
        limit (int | Unset):  Default: 20.
        starting_after (str | Unset):
        status (ListWebhookDeliveriesStatus | Unset):
        endpoint_id (str | Unset):
        event_id (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ApiError | WebhookDeliveryList
    """

    return sync_detailed(
        client=client,
        limit=limit,
        starting_after=starting_after,
        status=status,
        endpoint_id=endpoint_id,
        event_id=event_id,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    limit: int | Unset = 20,
    starting_after: str | Unset = UNSET,
    status: ListWebhookDeliveriesStatus | Unset = UNSET,
    endpoint_id: str | Unset = UNSET,
    event_id: str | Unset = UNSET,
) -> Response[ApiError | WebhookDeliveryList]:
    """List webhook deliveries, each with its attempts, newest first

     The delivery log: every delivery of an event to an endpoint (a redelivery is a new delivery), with
    every attempt (time, status code, latency, error, first 2 KiB of the answer). Filters combine.

    Args:
        limit (int | Unset):  Default: 20.
        starting_after (str | Unset):
        status (ListWebhookDeliveriesStatus | Unset):
        endpoint_id (str | Unset):
        event_id (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ApiError | WebhookDeliveryList]
    """

    kwargs = _get_kwargs(
        limit=limit,
        starting_after=starting_after,
        status=status,
        endpoint_id=endpoint_id,
        event_id=event_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    limit: int | Unset = 20,
    starting_after: str | Unset = UNSET,
    status: ListWebhookDeliveriesStatus | Unset = UNSET,
    endpoint_id: str | Unset = UNSET,
    event_id: str | Unset = UNSET,
) -> ApiError | WebhookDeliveryList | None:
    """List webhook deliveries, each with its attempts, newest first

     The delivery log: every delivery of an event to an endpoint (a redelivery is a new delivery), with
    every attempt (time, status code, latency, error, first 2 KiB of the answer). Filters combine.

    Args:
        limit (int | Unset):  Default: 20.
        starting_after (str | Unset):
        status (ListWebhookDeliveriesStatus | Unset):
        endpoint_id (str | Unset):
        event_id (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ApiError | WebhookDeliveryList
    """

    return (
        await asyncio_detailed(
            client=client,
            limit=limit,
            starting_after=starting_after,
            status=status,
            endpoint_id=endpoint_id,
            event_id=event_id,
        )
    ).parsed
