from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.api_error import ApiError
from ...models.test_clock import TestClock
from ...models.test_clock_advance import TestClockAdvance
from ...types import UNSET, Response, Unset


def _get_kwargs(
    clock_id: str,
    *,
    body: TestClockAdvance,
    idempotency_key: str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(idempotency_key, Unset):
        headers["Idempotency-Key"] = idempotency_key

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/test_clocks/{clock_id}/advance".format(
            clock_id=quote(str(clock_id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ApiError | TestClock | None:
    if response.status_code == 200:
        response_200 = TestClock.from_dict(response.json())

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
) -> Response[ApiError | TestClock]:
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
    body: TestClockAdvance,
    idempotency_key: str | Unset = UNSET,
) -> Response[ApiError | TestClock]:
    """Move a test clock forward; what falls due up to its new time runs in order

     Answers at once with the clock `advancing`; it reads `ready` once every renewal, retry and ending
    due up to `frozen_time` has run. Poll the clock to know. One advance may bill at most 1,000 periods
    of any one subscription and 10,000 charges in all (renewals and retries), and a clock's
    subscriptions at most 100,000 charges over its life (then delete it and make another): beyond any of
    these it is 400 `test_clock_advance_too_far`, nothing changes, and `details.max_frozen_time` is the
    furthest time an advance may reach now.

    Args:
        clock_id (str):
        idempotency_key (str | Unset):
        body (TestClockAdvance):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ApiError | TestClock]
    """

    kwargs = _get_kwargs(
        clock_id=clock_id,
        body=body,
        idempotency_key=idempotency_key,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    clock_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: TestClockAdvance,
    idempotency_key: str | Unset = UNSET,
) -> ApiError | TestClock | None:
    """Move a test clock forward; what falls due up to its new time runs in order

     Answers at once with the clock `advancing`; it reads `ready` once every renewal, retry and ending
    due up to `frozen_time` has run. Poll the clock to know. One advance may bill at most 1,000 periods
    of any one subscription and 10,000 charges in all (renewals and retries), and a clock's
    subscriptions at most 100,000 charges over its life (then delete it and make another): beyond any of
    these it is 400 `test_clock_advance_too_far`, nothing changes, and `details.max_frozen_time` is the
    furthest time an advance may reach now.

    Args:
        clock_id (str):
        idempotency_key (str | Unset):
        body (TestClockAdvance):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ApiError | TestClock
    """

    return sync_detailed(
        clock_id=clock_id,
        client=client,
        body=body,
        idempotency_key=idempotency_key,
    ).parsed


async def asyncio_detailed(
    clock_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: TestClockAdvance,
    idempotency_key: str | Unset = UNSET,
) -> Response[ApiError | TestClock]:
    """Move a test clock forward; what falls due up to its new time runs in order

     Answers at once with the clock `advancing`; it reads `ready` once every renewal, retry and ending
    due up to `frozen_time` has run. Poll the clock to know. One advance may bill at most 1,000 periods
    of any one subscription and 10,000 charges in all (renewals and retries), and a clock's
    subscriptions at most 100,000 charges over its life (then delete it and make another): beyond any of
    these it is 400 `test_clock_advance_too_far`, nothing changes, and `details.max_frozen_time` is the
    furthest time an advance may reach now.

    Args:
        clock_id (str):
        idempotency_key (str | Unset):
        body (TestClockAdvance):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ApiError | TestClock]
    """

    kwargs = _get_kwargs(
        clock_id=clock_id,
        body=body,
        idempotency_key=idempotency_key,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    clock_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: TestClockAdvance,
    idempotency_key: str | Unset = UNSET,
) -> ApiError | TestClock | None:
    """Move a test clock forward; what falls due up to its new time runs in order

     Answers at once with the clock `advancing`; it reads `ready` once every renewal, retry and ending
    due up to `frozen_time` has run. Poll the clock to know. One advance may bill at most 1,000 periods
    of any one subscription and 10,000 charges in all (renewals and retries), and a clock's
    subscriptions at most 100,000 charges over its life (then delete it and make another): beyond any of
    these it is 400 `test_clock_advance_too_far`, nothing changes, and `details.max_frozen_time` is the
    furthest time an advance may reach now.

    Args:
        clock_id (str):
        idempotency_key (str | Unset):
        body (TestClockAdvance):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ApiError | TestClock
    """

    return (
        await asyncio_detailed(
            clock_id=clock_id,
            client=client,
            body=body,
            idempotency_key=idempotency_key,
        )
    ).parsed
