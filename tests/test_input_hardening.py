"""Inputs an attacker or a careless client sends: lone surrogates, non-finite and huge
numbers, amounts beyond decimal precision, URLs that would inject into headers, and
email addresses on reserved names. Each is a clear 400 naming the problem, never a 500,
and creates nothing; on both backends."""

from __future__ import annotations

import itertools
import json
from typing import Any

import httpx
import pytest
from fgcpay.admin import MerchantInputError, create_merchant
from fgcpay.domain import fields, money
from fgcpay.domain.checkout import CheckoutSessionCreate
from fgcpay.domain.errors import ValidationFailed
from fgcpay.web.page_security import page_headers
from helpers import MerchantClient, Server, valid_body

JSON = {"Content-Type": "application/json"}


async def post_raw(merchant: MerchantClient, path: str, text: str) -> httpx.Response:
    """Send `text` as the body exactly as written (json.dumps would refuse some of it)."""
    return await merchant.http.post(
        path, content=text.encode("utf-8"), headers=merchant.headers(JSON)
    )


def body_text(**raw_fields: str) -> str:
    """A valid creation body as JSON text, with some fields replaced by raw JSON text."""
    base = {k: json.dumps(v) for k, v in valid_body().items()}
    base.update(raw_fields)
    return "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in base.items()) + "}"


async def assert_nothing_created(merchant: MerchantClient) -> None:
    listed = await merchant.get("/checkout/sessions")
    assert listed.status_code == 200, listed.text
    assert listed.json()["data"] == []


# --- 3. lone surrogates -------------------------------------------------------------

SURROGATE_BODIES = [
    body_text(description='"\\ud800"'),
    body_text(description='"tail \\udfff"'),
    body_text(description='"\\udc00\\ud800"'),  # a pair in the wrong order
    body_text(metadata='{"\\ud800": "x"}'),
    body_text(metadata='{"k": "\\ud800"}'),
    body_text(metadata='{"k": [{"deep": ["\\udbff"]}]}'),
    body_text(customer_reference='"\\ud83d"'),
    body_text(success_url='"https://shop.example/\\ud800"'),
    body_text()[:-1] + ', "\\ud800": "an unknown field named by a lone surrogate"}',
]


@pytest.mark.parametrize("text", SURROGATE_BODIES)
async def test_lone_surrogates_anywhere_in_a_body_are_invalid_json(
    server: Server, text: str
) -> None:
    merchant = await server.merchant()
    response = await post_raw(merchant, "/checkout/sessions", text)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "invalid_json"
    assert "Unicode" in response.json()["message"]
    await assert_nothing_created(merchant)


async def test_lone_surrogate_in_a_webhook_url_is_invalid_json(server: Server) -> None:
    merchant = await server.merchant()
    response = await post_raw(
        merchant, "/webhook_endpoints", '{"url": "https://hooks.example/\\ud800"}'
    )
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "invalid_json"
    listed = await merchant.get("/webhook_endpoints")
    assert listed.json()["data"] == []


async def test_an_escaped_surrogate_pair_is_a_character(server: Server) -> None:
    merchant = await server.merchant()
    response = await post_raw(
        merchant, "/checkout/sessions", body_text(description='"Coffee \\ud83d\\ude00"')
    )
    assert response.status_code == 201, response.text
    assert response.json()["description"] == "Coffee \U0001f600"


@pytest.mark.parametrize(
    "path",
    [
        "/checkout/sessions/%ED%A0%80",
        "/checkout/sessions/cs_test_%ED%A0%80",
        "/checkout/sessions/%FF%FE",
        "/checkout/sessions/%",
        "/checkout/sessions/%E0%A4%A",
        "/events/%ED%A0%80",
        "/webhook_endpoints/%ED%A0%80/rotate_secret",
    ],
)
async def test_bad_percent_encoding_in_path_ids_is_not_found(server: Server, path: str) -> None:
    merchant = await server.merchant()
    method = "POST" if path.endswith("rotate_secret") else "GET"
    response = await merchant.http.request(method, path, headers=merchant.headers())
    assert response.status_code == 404, response.text
    assert response.headers["content-type"].startswith("application/json")


@pytest.mark.parametrize(
    "query",
    [
        "starting_after=%ED%A0%80", "status=%ED%A0%80", "limit=%ED%A0%80", "%ED%A0%80=1",
        "starting_after=%", "starting_after=%E0%A4%A", "type=%ED%A0%80",
    ],
)  # fmt: skip
async def test_bad_percent_encoding_in_query_strings_is_400(server: Server, query: str) -> None:
    merchant = await server.merchant()
    for path in ("/checkout/sessions", "/events"):
        response = await merchant.http.get(f"{path}?{query}", headers=merchant.headers())
        assert response.status_code == 400, (path, query, response.text)
        assert response.json()["code"] == "validation_error"


async def test_absurd_limits_are_400(server: Server) -> None:
    merchant = await server.merchant()
    for path in ("/checkout/sessions", "/events"):
        for limit in ("9" * 5000, "1" * 4301, "0" * 5000):
            response = await merchant.get(path, params={"limit": limit})
            assert response.status_code == 400, (path, limit[:10], response.text)
            assert [e["field"] for e in response.json()["details"]] == ["limit"]
        response = await merchant.get(path, params={"limit": "0" * 5000 + "5"})  # leading zeros
        assert response.status_code == 200, response.text


async def test_bad_percent_encoding_on_the_hosted_page_is_not_found(server: Server) -> None:
    async with httpx.AsyncClient(base_url=server.url) as client:
        for path in ("/checkout/%ED%A0%80", "/checkout/cs_test_%FF", "/checkout/%"):
            response = await client.get(path)
            assert response.status_code == 404, (path, response.text)


# --- 4. non-finite and absurd numbers ----------------------------------------------


@pytest.mark.parametrize(
    "metadata",
    ['{"x": 1e999999}', '{"x": -1e400}', '{"x": [1.5e309]}', '{"x": 1' + "0" * 5000 + "}"],
)
async def test_numbers_json_cannot_carry_are_invalid_json(server: Server, metadata: str) -> None:
    merchant = await server.merchant()
    response = await post_raw(merchant, "/checkout/sessions", body_text(metadata=metadata))
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "invalid_json"
    await assert_nothing_created(merchant)


async def test_large_finite_numbers_in_metadata_round_trip(server: Server) -> None:
    merchant = await server.merchant()
    metadata = (
        '{"big": 1.7976931348623157e308, "int": 123456789012345678901234567890, "tiny": 5e-324}'
    )
    response = await post_raw(merchant, "/checkout/sessions", body_text(metadata=metadata))
    assert response.status_code == 201, response.text
    got = await merchant.get(f"/checkout/sessions/{response.json()['id']}")
    assert "Infinity" not in got.text
    assert got.json()["metadata"] == json.loads(metadata)


# --- 5. exact amounts -----------------------------------------------------------------


@pytest.mark.parametrize(
    "amount",
    [
        "12.34999999999999999999999999999", "12.3450000000000000000000000000001",
        "0.00000000000000000000000000000001", "999999.999999999999999999999999999999",
        "1000000.000000000000000000000000000001", "10\n", "10.50\n", "1" * 40_000,
        "0" * 40_000, "0" * 40_000 + "1.001",
    ],
)  # fmt: skip
async def test_amounts_are_parsed_exactly(server: Server, amount: str) -> None:
    merchant = await server.merchant()
    response = await merchant.post("/checkout/sessions", json=valid_body(amount_fgc=amount))
    assert response.status_code == 400, response.text
    assert [e["field"] for e in response.json()["details"]] == ["amount_fgc"]
    await assert_nothing_created(merchant)


@pytest.mark.parametrize(
    "minor", ["1050\n", "1" * 5000, "1" * 40_000, "0" * 40_000, "100000001", "0" * 5000 + "0"]
)
async def test_amount_minor_is_parsed_exactly(server: Server, minor: str) -> None:
    merchant = await server.merchant()
    response = await merchant.post("/checkout/sessions", json=valid_body(amount_minor=minor))
    assert response.status_code == 400, response.text
    assert [e["field"] for e in response.json()["details"]] == ["amount_minor"]
    await assert_nothing_created(merchant)


async def test_long_but_exact_amounts_are_accepted(server: Server) -> None:
    merchant = await server.merchant()
    response = await merchant.post(
        "/checkout/sessions",
        json=valid_body(
            amount_fgc="0" * 1000 + "12.5" + "0" * 1000, amount_minor="0" * 100 + "1250"
        ),
    )
    assert response.status_code == 201, response.text
    assert (response.json()["amount_fgc"], response.json()["amount_minor"]) == ("12.50", "1250")
    assert response.headers["Deprecation"] == "true"


AMOUNT_CASES = {
    "10": 1000, "10.5": 1050, "10.50": 1050, "0.01": 1, "10.500": 1050, "010.5": 1050,
    "1000000": 100_000_000, "1000000.00": 100_000_000, "0.10": 10, "999999.99": 99_999_999,
    "0.001": None, "0": None, "0.00": None, "1000000.01": None, "10000000": None, ".5": None,
    "5.": None, "-1": None, "+1": None, "1e2": None, " 1": None, "1 ": None, "1,5": None,
    "NaN": None, "١٢": None, "１": None, "12.345": None, "": None,
}  # fmt: skip


def test_parse_fgc_table() -> None:
    for text, expected in AMOUNT_CASES.items():
        if expected is None:
            with pytest.raises(money.AmountError):
                money.parse_fgc(text)
        else:
            assert money.parse_fgc(text) == expected, text


def test_the_amount_patterns_match_exactly_what_parsing_accepts() -> None:
    """Every string of up to 9 characters over the interesting alphabet: the published
    pattern (also in the OpenAPI document) and the parser agree. The closing `$` means the
    end of the string, as in ECMA-262 (Python's `$` would also match before a newline)."""
    import re

    def ecma(pattern: str) -> re.Pattern[str]:
        assert pattern.endswith("$")
        return re.compile(pattern[:-1] + r"\Z")

    fgc = ecma(money.AMOUNT_FGC_PATTERN)
    minor = ecma(money.AMOUNT_MINOR_PATTERN)
    strings = list(AMOUNT_CASES) + ["1" + "0" * 6 + ".0", "00000000.01", "100000000", "099999999"]
    for length in range(1, 8):
        strings += ["".join(p) for p in itertools.product("019.", repeat=length)]
    strings += ["1000000" + ".0" + "0" * n for n in range(3)] + ["10\n", "1\n.5", "0.50\n"]
    for text in strings:
        for pattern, parse in ((fgc, money.parse_fgc), (minor, money.parse_minor)):
            try:
                parse(text)
                ok = True
            except money.AmountError:
                ok = False
            assert ok == bool(pattern.search(text)), (pattern.pattern, text)


# --- 7. URLs: hosts that are DNS names or IP literals, headers from the origin only ---

BAD_URLS = [
    "https://a.example;sandbox/", "https://a.example,b.example/", "https://a.example'x/",
    "https://a.example%20x/", "https://a..example/", "https://-a.example/", "https://a-.example/",
    "https://a_b.example/", "https://" + "a" * 64 + ".example/", "https://a.example./",
    "https://1.2.3/", "https://127.1/", "https://0x7f.0.0.1/", "https://[::1%25eth0]/",
    "https://[zz::1]/", "https://a.example\\@b.example/", "https://a\"b.example/",
    "https://a.example:99999/", "https:///path", "https://a.example;/", "javascript:alert(1)",
    "https://a.example*/", "https://*.example/", "https://é\u200b.example/",
    "https://" + ".".join(["a" * 63] * 4) + "/",
]  # fmt: skip

GOOD_URLS = [
    "https://shop.example/thanks?x=1;y=2", "http://127.0.0.1:8000/done", "https://[2001:db8::1]/a",
    "https://0.com/", "https://xn--bcher-kva.example/", "https://bücher.example/",
    "HTTPS://Shop.Example:8443/Path;params", "https://user:pw@shop.example/",
]  # fmt: skip


@pytest.mark.parametrize("url", BAD_URLS)
async def test_urls_whose_host_is_not_a_dns_name_or_ip_are_refused(
    server: Server, url: str
) -> None:
    merchant = await server.merchant()
    response = await merchant.post("/checkout/sessions", json=valid_body(success_url=url))
    assert response.status_code == 400, response.text
    assert [e["field"] for e in response.json()["details"]] == ["success_url"]
    await assert_nothing_created(merchant)
    hook = await merchant.post("/webhook_endpoints", json={"url": url})
    assert hook.status_code == 400, hook.text
    assert [e["field"] for e in hook.json()["details"]] == ["url"]


async def test_good_urls_are_accepted_as_given(server: Server) -> None:
    merchant = await server.merchant()
    for url in GOOD_URLS:
        response = await merchant.post(
            "/checkout/sessions", json=valid_body(success_url=url, cancel_url=url)
        )
        assert response.status_code == 201, (url, response.text)
        assert response.json()["success_url"] == url


def _form_action(headers: dict[str, str]) -> list[str]:
    directives = [d.strip() for d in headers["Content-Security-Policy"].split(";")]
    found = [d.split()[1:] for d in directives if d.startswith("form-action ")]
    assert len(found) == 1
    return found[0]


def test_page_headers_build_the_origin_from_the_parsed_url_only() -> None:
    baseline = page_headers()["Content-Security-Policy"]
    hostile = BAD_URLS + [
        "https://a.example sandbox/", "https://a.example\tx/", "https://a.example\r\nX-Evil: 1/",
        "https://a.example\x00/", "https://a.example\u2028/", "https://a.example\u00a0/", "",
        "https://[::1]]/", "https://a.example%3Bsandbox/", "https://%61.example/",
    ]  # fmt: skip
    for url in hostile:
        headers = page_headers(url)
        csp = headers["Content-Security-Policy"]
        assert csp.count(";") == baseline.count(";") and "," not in csp, url
        extra = [s for s in _form_action(headers) if s != "'self'"]
        for source in extra:
            assert source.isascii() and not any(c.isspace() or c in ";,'\"\\" for c in source), url
        assert all(v.isprintable() and "\n" not in v for v in headers.values()), url
    expected = {
        "https://shop.example/thanks?x=1;y=2": "https://shop.example",
        "HTTPS://Shop.Example:8443/Path;params": "https://shop.example:8443",
        "https://user:pw@shop.example/": "https://shop.example",
        "https://bücher.example/x": "https://xn--bcher-kva.example",
        "https://[2001:DB8:0::1]:9/": "https://[2001:db8::1]:9",
        "http://127.0.0.1/": "http://127.0.0.1",
        "https://a.example;sandbox/": None,
    }
    for url, origin in expected.items():
        assert _form_action(page_headers(url)) == ["'self'"] + ([origin] if origin else []), url


# --- 13. email syntax offline, reserved names accepted -------------------------------

GOOD_EMAILS = [
    "owner@acme.test",
    "ana@example.com",
    "a@shop.example",
    "x@0.com",
    "dev@app.localhost",
    "o'neil+tag@sub.example.org",
    "ü@bücher.example",
    "bob@foo.invalid",
]
BAD_EMAILS = [
    "plain", "a@", "@b.example", "a@b", "a@localhost", "a b@c.example", "a@b..example",
    "a@-b.example", "a@[127.0.0.1]", "a@b.123", "Ana <ana@example.com>", "a@b.example\n",
    "a" * 65 + "@b.example", "a@" + "b" * 64 + ".example",
]  # fmt: skip


def test_email_rule_is_offline_syntax_and_accepts_reserved_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import socket

    def no_dns(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("email validation must never resolve")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    monkeypatch.setattr(socket, "gethostbyname", no_dns)
    for email in GOOD_EMAILS:
        assert fields.email_address(email), email
    for email in BAD_EMAILS:
        with pytest.raises(ValueError):
            fields.email_address(email)


async def test_customer_email_on_reserved_names(server: Server) -> None:
    merchant = await server.merchant()
    for email in GOOD_EMAILS:
        response = await merchant.post("/checkout/sessions", json=valid_body(customer_email=email))
        assert response.status_code == 201, (email, response.text)
    for email in BAD_EMAILS:
        response = await merchant.post("/checkout/sessions", json=valid_body(customer_email=email))
        assert response.status_code == 400, (email, response.text)
        assert [e["field"] for e in response.json()["details"]] == ["customer_email"]


async def test_the_readme_quick_start_merchant_email_is_accepted(server: Server) -> None:
    created = await create_merchant(server.db, "Acme", "Owner@ACME.test")
    assert created.merchant.email == "owner@acme.test"
    for email in ("owner@acme", "not an email"):
        with pytest.raises(MerchantInputError, match="invalid email"):
            await create_merchant(server.db, "Acme", email)


def test_fields_email_reports_the_field() -> None:
    body = valid_body(customer_email="a@localhost")
    with pytest.raises(ValidationFailed) as failed:
        fields.validate(CheckoutSessionCreate, body)
    assert [error.field for error in failed.value.errors] == ["customer_email"]
