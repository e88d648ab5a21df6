from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.api_error import ApiError
from ...models.subscription import Subscription
from ...models.test_approve_body import TestApproveBody
from ...types import UNSET, Response, Unset


def _get_kwargs(
    subscription_id: str,
    *,
    body: TestApproveBody | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(idempotency_key, Unset):
        headers["Idempotency-Key"] = idempotency_key

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/test_helpers/subscriptions/{subscription_id}/approve".format(
            subscription_id=quote(str(subscription_id), safe=""),
        ),
    }

    if not isinstance(body, Unset):
        _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ApiError | Subscription | None:
    if response.status_code == 200:
        response_200 = Subscription.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = ApiError.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = ApiError.from_dict(response.json())

        return response_401

    if response.status_code == 402:
        response_402 = ApiError.from_dict(response.json())

        return response_402

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
) -> Response[ApiError | Subscription]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    subscription_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: TestApproveBody | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> Response[ApiError | Subscription]:
    """Test mode: approve one of your subscriptions as a test customer

     The same approval as the hosted page's: the subscription becomes `active`, its first interval is
    charged, and `subscription.activated` then `subscription.charged` are sent; no PIN. `TEST-0004`
    approves and declines every renewal; `TEST-0002` and `TEST-0003` are 402 `payment_declined` and
    change nothing. 409 `subscription_not_approvable` unless `paused` (and before its `end_date`); 409
    `test_clock_advancing` when an advance of its test clock began while it was being approved (nothing
    charged: approve again once the clock is `ready`).

    Args:
        subscription_id (str):
        idempotency_key (str | Unset):
        body (TestApproveBody | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ApiError | Subscription]
    """

    kwargs = _get_kwargs(
        subscription_id=subscription_id,
        body=body,
        idempotency_key=idempotency_key,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    subscription_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: TestApproveBody | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> ApiError | Subscription | None:
    """Test mode: approve one of your subscriptions as a test customer

     The same approval as the hosted page's: the subscription becomes `active`, its first interval is
    charged, and `subscription.activated` then `subscription.charged` are sent; no PIN. `TEST-0004`
    approves and declines every renewal; `TEST-0002` and `TEST-0003` are 402 `payment_declined` and
    change nothing. 409 `subscription_not_approvable` unless `paused` (and before its `end_date`); 409
    `test_clock_advancing` when an advance of its test clock began while it was being approved (nothing
    charged: approve again once the clock is `ready`).

    Args:
        subscription_id (str):
        idempotency_key (str | Unset):
        body (TestApproveBody | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ApiError | Subscription
    """

    return sync_detailed(
        subscription_id=subscription_id,
        client=client,
        body=body,
        idempotency_key=idempotency_key,
    ).parsed


async def asyncio_detailed(
    subscription_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: TestApproveBody | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> Response[ApiError | Subscription]:
    """Test mode: approve one of your subscriptions as a test customer

     The same approval as the hosted page's: the subscription becomes `active`, its first interval is
    charged, and `subscription.activated` then `subscription.charged` are sent; no PIN. `TEST-0004`
    approves and declines every renewal; `TEST-0002` and `TEST-0003` are 402 `payment_declined` and
    change nothing. 409 `subscription_not_approvable` unless `paused` (and before its `end_date`); 409
    `test_clock_advancing` when an advance of its test clock began while it was being approved (nothing
    charged: approve again once the clock is `ready`).

    Args:
        subscription_id (str):
        idempotency_key (str | Unset):
        body (TestApproveBody | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ApiError | Subscription]
    """

    kwargs = _get_kwargs(
        subscription_id=subscription_id,
        body=body,
        idempotency_key=idempotency_key,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    subscription_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: TestApproveBody | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> ApiError | Subscription | None:
    """Test mode: approve one of your subscriptions as a test customer

     The same approval as the hosted page's: the subscription becomes `active`, its first interval is
    charged, and `subscription.activated` then `subscription.charged` are sent; no PIN. `TEST-0004`
    approves and declines every renewal; `TEST-0002` and `TEST-0003` are 402 `payment_declined` and
    change nothing. 409 `subscription_not_approvable` unless `paused` (and before its `end_date`); 409
    `test_clock_advancing` when an advance of its test clock began while it was being approved (nothing
    charged: approve again once the clock is `ready`).

    Args:
        subscription_id (str):
        idempotency_key (str | Unset):
        body (TestApproveBody | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ApiError | Subscription
    """

    return (
        await asyncio_detailed(
            subscription_id=subscription_id,
            client=client,
            body=body,
            idempotency_key=idempotency_key,
        )
    ).parsed
