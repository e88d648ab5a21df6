"""One wording for one problem: every query-string error says the same sentence, and the
rate limit's retry hint agrees in number (issue 17, item 10)."""

from __future__ import annotations

import pytest
from fgcpay.domain.errors import RateLimited
from helpers import Server

QUERY_MESSAGE = "The query string has invalid parameters."
CURSOR_MESSAGE = "Must be a next_cursor from a previous page."
UNKNOWN_MESSAGE = "Unknown query parameter."

# (path and query, the field named, that field's message) on every list the API serves.
BAD_QUERIES = [
    ("/checkout/sessions?starting_after=cs_test_nope", "starting_after", CURSOR_MESSAGE),
    ("/checkout/sessions?starting_after=cs_test_" + "A" * 24, "starting_after", CURSOR_MESSAGE),
    ("/checkout/sessions?starting_after=", "starting_after", CURSOR_MESSAGE),
    ("/checkout/sessions?colour=red", "colour", UNKNOWN_MESSAGE),
    ("/checkout/sessions?limit=0", "limit", "Must be an integer from 1 to 100."),
    ("/webhook_endpoints?limit=5", "limit", UNKNOWN_MESSAGE),
    ("/webhook_endpoints?starting_after=we_nope", "starting_after", UNKNOWN_MESSAGE),
    ("/events?starting_after=evt_nope", "starting_after", CURSOR_MESSAGE),
    ("/events?colour=red", "colour", UNKNOWN_MESSAGE),
    ("/events?type=nope", "type", None),
    ("/webhook_deliveries?colour=red", "colour", UNKNOWN_MESSAGE),
    ("/webhook_deliveries?starting_after=nope", "starting_after", CURSOR_MESSAGE),
]


@pytest.mark.parametrize(("target", "field", "field_message"), BAD_QUERIES)
async def test_every_query_string_error_says_the_same_sentence(
    server: Server, target: str, field: str, field_message: str | None
) -> None:
    merchant = await server.merchant()
    answer = await merchant.get(target)
    assert answer.status_code == 400, answer.text
    body = answer.json()
    assert body["code"] == "validation_error"
    assert body["message"] == QUERY_MESSAGE
    assert [detail["field"] for detail in body["details"]] == [field]
    if field_message is not None:
        assert body["details"][0]["message"] == field_message


def test_retry_hint_is_singular_for_one_second() -> None:
    assert RateLimited(1).message == "Too many requests. Retry after 1 second."
    assert RateLimited(2).message == "Too many requests. Retry after 2 seconds."


def test_the_openapi_summary_claims_only_what_is_served() -> None:
    """`info` names no capability the document has no operation for."""
    from fgcpay.http.api import document as generated

    document = generated()
    claims = (document["info"]["summary"] + " " + document["info"]["description"]).lower()
    paths = " ".join(document["paths"]).lower()
    for capability, path_word in [
        ("subscription", "subscription"),
        ("refund", "refund"),
        ("settlement", "settlement"),
        ("webhook", "webhook"),
        ("checkout", "checkout"),
    ]:
        if capability in claims:
            assert path_word in paths, f"info claims {capability!r}, no path serves it"
    assert "checkout" in claims and "webhook" in claims
